//! Which frames of a sample's stack belong to the charged work.
//!
//! Synchronous samples keep their whole stack (user frames and the kernel frames above the
//! syscall or fault entry). Samples of irq or softirq work keep only the handler's frames, up
//! to the outermost softirq or irq dispatcher: the frames below it belong to whichever task
//! was interrupted, not to the work charged.

use hood_model::labels::Charge;
use hood_model::profile::{FuncId, LocId, Profile, Sample};

/// Dispatcher frames where an irq or softirq run starts.
const HANDLER_ROOTS: &[&str] = &[
    "handle_softirqs",
    "__do_softirq",
    "run_ksoftirqd",
    "__handle_irq_event_percpu",
    "handle_irq_event",
    "handle_edge_irq",
    "handle_fasteoi_irq",
];

/// The frames of `s` (leaf first) that belong to the work it is charged with.
pub fn charged_frames<'p>(prof: &'p Profile, s: &Sample, c: Charge) -> &'p [FuncId] {
    let stack = prof
        .stacks
        .get(s.stack as usize)
        .map_or(&[][..], Vec::as_slice);
    &stack[..charged_len(c, stack.len(), |i| is_root(prof, stack[i]))]
}

/// The code locations of `s` (leaf first, inlined functions being lines of their location)
/// that belong to the work it is charged with: the same cut as [`charged_frames`]. Empty
/// when the profile keeps no location stack for `s`.
pub fn charged_locs<'p>(prof: &'p Profile, s: &Sample, c: Charge) -> &'p [LocId] {
    let stack = prof
        .loc_stacks
        .get(s.locs as usize)
        .map_or(&[][..], Vec::as_slice);
    let root = |i: usize| {
        prof.locations
            .get(stack[i] as usize)
            .is_some_and(|l| is_root(prof, l.func))
    };
    &stack[..charged_len(c, stack.len(), root)]
}

/// How many of a stack's `n` frames (leaf first) the charge `c` keeps: all for synchronous
/// work, else up to the outermost dispatcher frame (all if there is none).
fn charged_len(c: Charge, n: usize, is_root: impl Fn(usize) -> bool) -> usize {
    match c {
        Charge::Sync(_) | Charge::Idle => n,
        Charge::Async(..) | Charge::Other(_) | Charge::Kernel => {
            (0..n).rposition(is_root).map_or(n, |i| i + 1)
        }
    }
}

/// Whether `f` is a kernel dispatcher where irq or softirq work starts.
fn is_root(prof: &Profile, f: FuncId) -> bool {
    prof.funcs
        .get(f as usize)
        .is_some_and(|f| f.kernel && HANDLER_ROOTS.contains(&f.name.as_str()))
}
