//! Which frames of a sample's stack belong to the charged work.
//!
//! Synchronous samples keep their whole stack (user frames and the kernel frames above the
//! syscall or fault entry). Samples of irq or softirq work keep only the handler's frames, up
//! to the outermost softirq or irq dispatcher: the frames below it belong to whichever task
//! was interrupted, not to the work charged.

use hood_model::labels::Charge;
use hood_model::profile::{FuncId, Profile, Sample};

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
    match c {
        Charge::Sync(_) | Charge::Idle => stack,
        Charge::Async(..) | Charge::Other(_) | Charge::Kernel => {
            let root = stack.iter().rposition(|&f| {
                prof.funcs
                    .get(f as usize)
                    .is_some_and(|f| f.kernel && HANDLER_ROOTS.contains(&f.name.as_str()))
            });
            match root {
                Some(i) => &stack[..=i],
                None => stack,
            }
        }
    }
}
