//! The hook path: entry and exit on the calling thread's own slot. No allocation, locks,
//! syscalls or panics: only raw loads and stores into the thread's slot and one timestamp read
//! per hook. All arithmetic wraps.

use core::sync::atomic::{compiler_fence, Ordering};

use hood_abi::{
    path_hash, Frame, PathNode, SegmentHeader, ThreadHeader, FLAG_MISMATCH, FLAG_PATH_OVERRUN,
    FLAG_STACK_OVERRUN, FLAG_TABLE_OVERRUN, FRAME_FOLDED, FRAME_SLOW, LOST_NODE, NO_PARENT,
    THREAD_HEADER_SIZE,
};

use crate::clock;

/// Frames whose saved stack pointer is below the current one by less than this are stale
/// (unwound by longjmp or an exception); a bigger gap means another stack (sigaltstack).
/// Strictly below: a function inlined into an instrumented one still calls both hooks, from
/// its caller's frame, so a nested call can come at the very stack pointer of the open frame
/// (bzip2 at -O2: taking it for a sibling repaired 670 "unmatched" exits and put mainQSort3's
/// time in mainSort). A sibling left by a longjmp with the same frame size looks the same and
/// is nested under the frame it replaces until that frame's caller returns.
const STALE_WINDOW: u64 = 1 << 20;

/// Pointers for one hook invocation.
///
/// The slot invariant, which every `unsafe fn` here taking a `Slot` requires of its caller:
/// `h` points at the header of a live, mapped segment and `t` at the calling thread's slot in
/// it, initialised by `runtime::init_slot`. The slot is `h.thread_slot_size` bytes laid out as
/// hood-abi's `SlotLayout` says: the thread header, `max_depth` frames, `max_paths` path
/// nodes, `hash_size` u32 hash buckets. Only this thread writes its frames, nodes, buckets and
/// the header fields the hooks write (the recorder reads them), and the limits in `h` do not
/// change while the segment is mapped. Node indices this thread stored (in frames, in
/// `last_child`, `next_sibling` and the hash chains) are below `max_paths`, and `depth` is at
/// most `max_depth`.
pub struct Slot {
    /// Segment header.
    pub h: *mut SegmentHeader,
    /// Thread header at the start of the slot.
    pub t: *mut ThreadHeader,
}

impl Slot {
    /// Frame `i` of the thread's stack.
    ///
    /// # Safety
    /// The slot invariant holds and `i < max_depth`.
    #[inline(always)]
    unsafe fn frame(&self, i: u32) -> *mut Frame {
        // SAFETY: the frames follow the THREAD_HEADER_SIZE-byte thread header and there are
        // `max_depth` of them, and `i < max_depth`: both offsets stay inside the slot.
        unsafe {
            (self.t as *mut u8)
                .add(THREAD_HEADER_SIZE)
                .cast::<Frame>()
                .add(i as usize)
        }
    }
    /// Node 0 of the thread's path table.
    ///
    /// # Safety
    /// The slot invariant holds.
    #[inline(always)]
    unsafe fn nodes(&self) -> *mut PathNode {
        // SAFETY: `h` points at the live segment header.
        let depth = unsafe { (*self.h).max_depth } as usize;
        // SAFETY: the path nodes follow the header and the `max_depth` frames inside the slot
        // (its size was computed from these limits without overflow).
        unsafe {
            (self.t as *mut u8)
                .add(THREAD_HEADER_SIZE + depth * core::mem::size_of::<Frame>())
                .cast::<PathNode>()
        }
    }
    /// Bucket 0 of the thread's hash index.
    ///
    /// # Safety
    /// The slot invariant holds.
    #[inline(always)]
    unsafe fn hash(&self) -> *mut u32 {
        // SAFETY: the `hash_size` buckets follow the `max_paths` nodes inside the slot, and
        // `h` points at the live segment header.
        unsafe { self.nodes().add((*self.h).max_paths as usize).cast::<u32>() }
    }
}

/// Find or insert the path node (parent, func); LOST_NODE when the table is full. The flag is
/// FRAME_SLOW when the last-child cache missed.
///
/// # Safety
/// The slot invariant holds, and `parent` is [`NO_PARENT`] or a node index of this table.
#[inline(always)]
unsafe fn lookup(s: &Slot, parent: u32, func: u64) -> (u32, u32) {
    // SAFETY: the slot invariant.
    let nodes = unsafe { s.nodes() };
    let mut last = 0;
    if parent != NO_PARENT {
        // SAFETY: `parent` and the `last_child` this thread stored in it are node indices
        // below `max_paths`, so both nodes are inside the table.
        unsafe {
            last = (*nodes.add(parent as usize)).last_child;
            if last != 0 && (*nodes.add(last as usize)).func == func {
                return (last, 0);
            }
        }
        if parent == LOST_NODE {
            return (LOST_NODE, 0);
        }
    }
    // SAFETY: the slot invariant; `parent` as required above.
    let found = unsafe { lookup_slow(s, parent, func) };
    if parent != NO_PARENT && found != LOST_NODE {
        // SAFETY: `parent`, `found` (returned by `lookup_slow`) and `last` are node indices
        // below `max_paths`, and the nodes are this thread's to write.
        unsafe {
            (*nodes.add(parent as usize)).last_child = found;
            // The next call after `last` was `found`: a parent that calls several functions
            // in turn finds the next one through this link (see `enter_fast`).
            if last != 0 {
                (*nodes.add(last as usize)).next_sibling = found;
            }
        }
    }
    (found, FRAME_SLOW)
}

/// The hash lookup of [`lookup`], inserting the node when it is not there.
///
/// # Safety
/// As for [`lookup`].
#[inline(never)]
unsafe fn lookup_slow(s: &Slot, parent: u32, func: u64) -> u32 {
    // SAFETY: the slot invariant: `h` is the live header and `t` this thread's header, whose
    // plain fields only this thread writes (frames, nodes and buckets lie after it).
    let (h, t) = unsafe { (&*s.h, &mut *s.t) };
    // SAFETY: the slot invariant.
    let nodes = unsafe { s.nodes() };
    // SAFETY: `path_hash` masks with `hash_size - 1` (a power of two), so the bucket is one
    // of the slot's `hash_size` buckets.
    let bucket = unsafe {
        s.hash()
            .add(path_hash(parent, func, h.hash_size.wrapping_sub(1)) as usize)
    };
    // SAFETY: `bucket` is inside the slot (above) and only this thread writes it.
    let mut i = unsafe { *bucket };
    while i != 0 && i < h.max_paths {
        // SAFETY: `i < max_paths`, checked just above: a node of the table.
        let n = unsafe { &*nodes.add(i as usize) };
        if n.func == func && n.parent == parent {
            return i;
        }
        i = n.next;
    }
    let used = t.paths_used.load(Ordering::Relaxed);
    if used >= h.max_paths {
        t.flags |= FLAG_TABLE_OVERRUN;
        h.flags.fetch_or(FLAG_TABLE_OVERRUN, Ordering::Relaxed);
        return LOST_NODE;
    }
    let depth = if parent == NO_PARENT {
        1
    } else {
        // SAFETY: `parent` is a node index of this table (the caller's promise).
        unsafe { (*nodes.add(parent as usize)).depth.wrapping_add(1) }
    };
    // SAFETY: `used < max_paths`, checked above: the first free node, which no reader of
    // this thread's table looks at until `paths_used` (released below) covers it.
    let n = unsafe { &mut *nodes.add(used as usize) };
    n.func = func;
    n.parent = parent;
    // SAFETY: `bucket` is inside the slot and only this thread writes it.
    n.next = unsafe { *bucket };
    n.calls = 0;
    n.own_ticks = 0;
    n.last_child = 0;
    n.next_sibling = 0;
    n.depth = depth;
    // SAFETY: as above.
    unsafe { *bucket = used };
    t.paths_used.store(used.wrapping_add(1), Ordering::Release);
    used
}

/// The common entry: the thread is set up and not inside a hook, no reset is pending, the
/// call is neither top-level nor past `max_path_len` or `max_depth`, no frame was left by a
/// longjmp, and the parent's last-child cache names `func`. Then the call is counted on that
/// node and pushed, with one timestamp, and true returned; otherwise nothing is changed and
/// false returned, for [`enter`]. No hashing, calls, atomics or stores outside this thread's
/// slot.
///
/// # Safety
/// `h` is the live calls-mode segment, `t` this thread's initialised slot in it (the slot
/// invariant of [`Slot`]), and the TSC is the clock.
#[inline(always)]
pub unsafe fn enter_fast(
    h: *const SegmentHeader,
    t: *mut ThreadHeader,
    func: u64,
    sp: u64,
) -> bool {
    // SAFETY: the slot invariant: `h` is the live header and `t` this thread's header, which
    // no other reference in this call aliases (frames and nodes lie after it).
    let (hd, th) = unsafe { (&*h, &mut *t) };
    if !enter_busy(th) {
        return true;
    }
    let s = Slot {
        h: h as *mut SegmentHeader,
        t,
    };
    let d = th.depth.load(Ordering::Relaxed);
    if d == 0
        || d >= hd.max_path_len
        || d >= hd.max_depth
        || hd.reset_gen.load(Ordering::Relaxed) != th.seen_gen.load(Ordering::Relaxed)
    {
        leave_busy(th);
        return false;
    }
    // SAFETY: `0 < d <= max_depth` (the slot invariant): the top open frame.
    let top = unsafe { &*s.frame(d - 1) };
    // SAFETY: the slot invariant.
    let nodes = unsafe { s.nodes() };
    // SAFETY: the open frame's node is one this thread stored: below `max_paths`.
    let parent = unsafe { &mut *nodes.add(top.node as usize) };
    let mut c = parent.last_child;
    if (top.sp < sp && sp.wrapping_sub(top.sp) < STALE_WINDOW) || c == 0 {
        leave_busy(th);
        return false;
    }
    // SAFETY: `c`, the parent's `last_child`, and its `next_sibling` are node indices this
    // thread stored: below `max_paths`. A child is never its own parent, so the node read
    // here is not the one `parent` borrows.
    unsafe {
        if (*nodes.add(c as usize)).func != func {
            // A parent that calls several functions in turn: the one called after the last.
            c = (*nodes.add(c as usize)).next_sibling;
            if c == 0 || (*nodes.add(c as usize)).func != func {
                leave_busy(th);
                return false;
            }
            parent.last_child = c;
        }
    }
    // SAFETY: as above: a node below `max_paths`, not `parent`'s (whose borrow ended).
    let n = unsafe { &mut *nodes.add(c as usize) };
    n.calls = n.calls.wrapping_add(1);
    // SAFETY: `d < max_depth`, checked above: the frame pushed, above `top`.
    let f = unsafe { &mut *s.frame(d) };
    f.node = c;
    f.flags = 0;
    f.func = func;
    f.deeper_ticks = 0;
    f.sp = sp;
    entry_stamped(th, f, d, true);
    true
}

/// An entry hook from its timestamp on: read the clock, open the call at depth `d`, leave the
/// hook. This code runs inside the call it opens, so the call profile charges it (and a
/// preemption in it) to the called function, while the entry hook's code before it is the
/// caller's. `hood diff --reconcile` tells the two apart by this function's name in the
/// stacks of the hooks' samples (hood-reconcile's `ENTRY_STAMPED`): every entry timestamp is
/// read here, and the name must stay. `tsc` (a constant where it is inlined): the TSC is the
/// clock, else [`clock::now`].
#[inline(always)]
fn entry_stamped(t: &mut ThreadHeader, f: &mut Frame, d: u32, tsc: bool) {
    let now = if tsc { clock::tsc() } else { clock::now() };
    f.entry_ticks = now;
    t.last_ticks.store(now, Ordering::Relaxed);
    t.depth.store(d + 1, Ordering::Release);
    leave_busy(t);
}

/// The common exit: the thread is not inside a hook, no reset is pending, no call is open past
/// `max_depth`, and `func` is the top frame's. Then the frame is closed as [`exit`] closes it,
/// with one timestamp, and true returned; otherwise nothing is changed and false returned.
///
/// # Safety
/// As for [`enter_fast`].
#[inline(always)]
pub unsafe fn exit_fast(h: *const SegmentHeader, t: *mut ThreadHeader, func: u64) -> bool {
    // SAFETY: the caller's promise, which is `exit_stamped`'s.
    unsafe { exit_stamped(h, t, func) }
}

/// [`exit_fast`] from its timestamp on, which is all of it: the exit hook's code before the
/// timestamp runs inside the call it closes (the call profile charges it to the called
/// function), this code after it, in the caller. `hood diff --reconcile` tells the two apart
/// by the names `exit_stamped` and `exit_stamped_slow` in the stacks of the hooks' samples
/// (hood-reconcile's `EXIT_STAMPED`): every exit timestamp is read in one of them, and the
/// names must stay.
///
/// # Safety
/// As for [`enter_fast`].
#[inline(always)]
unsafe fn exit_stamped(h: *const SegmentHeader, t: *mut ThreadHeader, func: u64) -> bool {
    let now = clock::tsc();
    // SAFETY: the slot invariant: `h` is the live header and `t` this thread's header, which
    // no other reference in this call aliases (frames and nodes lie after it).
    let (hd, th) = unsafe { (&*h, &mut *t) };
    if !enter_busy(th) {
        return true;
    }
    let d = th.depth.load(Ordering::Relaxed);
    let s = Slot {
        h: h as *mut SegmentHeader,
        t,
    };
    if d == 0
        || th.overflow_depth != 0
        || hd.reset_gen.load(Ordering::Relaxed) != th.seen_gen.load(Ordering::Relaxed)
        // SAFETY: `0 < d <= max_depth` (the slot invariant): the top frame is in the stack.
        || unsafe { (*s.frame(d - 1)).func } != func
    {
        leave_busy(th);
        return false;
    }
    // SAFETY: as above.
    let elapsed = now.wrapping_sub(unsafe { (*s.frame(d - 1)).entry_ticks });
    // SAFETY: the slot invariant, and `d - 1 < depth`.
    unsafe { close(&s, d - 1, elapsed) };
    th.depth.store(d - 1, Ordering::Release);
    th.last_ticks.store(now, Ordering::Relaxed);
    leave_busy(th);
    true
}

/// Mark the thread inside a hook; false (nothing to do) when it already is: the hooks of a
/// signal handler that interrupted a hook are not measured, and its time counts to the
/// interrupted function. The flag is only ever touched by the owner thread, and a handler
/// runs on the same thread, so a compiler fence orders it.
#[inline(always)]
fn enter_busy(t: &mut ThreadHeader) -> bool {
    if t.busy != 0 {
        return false;
    }
    t.busy = 1;
    compiler_fence(Ordering::SeqCst);
    true
}

/// Leave the hook [`enter_busy`] entered.
#[inline(always)]
fn leave_busy(t: &mut ThreadHeader) {
    compiler_fence(Ordering::SeqCst);
    t.busy = 0;
}

/// The start of the general hook bodies ([`enter`], [`exit`]): mark the thread inside a hook
/// (false, nothing to do, when it already is: see [`enter_busy`]; no fence, as these bodies
/// always had none), and clear its table first when the recorder asked for a reset since.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`; `h` and `t` are its headers.
#[inline(always)]
unsafe fn begin(s: &Slot, h: &SegmentHeader, t: &mut ThreadHeader) -> bool {
    if t.busy != 0 {
        return false;
    }
    t.busy = 1;
    if h.reset_gen.load(Ordering::Relaxed) != t.seen_gen.load(Ordering::Relaxed) {
        // SAFETY: the slot invariant.
        unsafe { reset(s) };
    }
    true
}

/// Entry hook body, with the stack pointer of the hook's caller.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`.
#[inline(always)]
pub unsafe fn enter(s: &Slot, func: u64, sp: u64) {
    // SAFETY: the slot invariant: `h` is the live header and `t` this thread's header, whose
    // plain fields only this thread writes (frames and nodes lie after it; the functions called below
    // take `s` and reach the header through the same pointer while this borrow is not in use).
    let (h, t) = unsafe { (&*s.h, &mut *s.t) };
    // SAFETY: the slot invariant.
    if !unsafe { begin(s, h, t) } {
        return;
    }
    let mut d = t.depth.load(Ordering::Relaxed);
    if d >= h.max_depth {
        t.overflow_depth = t.overflow_depth.wrapping_add(1);
        t.flags |= FLAG_STACK_OVERRUN;
        h.flags.fetch_or(FLAG_STACK_OVERRUN, Ordering::Relaxed);
        t.lost_calls.store(
            t.lost_calls.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        t.busy = 0;
        return;
    }
    // Frames below the current stack pointer were unwound without exit hooks (longjmp).
    let mut keep = d;
    while keep > 0 {
        // SAFETY: `keep - 1 < d < max_depth`: an open frame.
        let top = unsafe { &*s.frame(keep - 1) };
        if top.sp < sp && sp.wrapping_sub(top.sp) < STALE_WINDOW {
            keep -= 1;
        } else {
            break;
        }
    }
    if keep < d {
        // SAFETY: the slot invariant, and `keep < d <= depth`.
        unsafe { close_unwound(s, keep, d) };
        d = keep;
    }
    let (node, flags) = if d == 0 {
        // SAFETY: the slot invariant; a top-level call has no parent.
        unsafe { lookup(s, NO_PARENT, func) }
    } else if d >= h.max_path_len {
        // SAFETY: the slot invariant, and `max_path_len <= d < max_depth`.
        unsafe { fold(s, d, func) }
    } else {
        // SAFETY: the slot invariant; frame `d - 1` is open and its node is one this thread
        // stored.
        unsafe { lookup(s, (*s.frame(d - 1)).node, func) }
    };
    // SAFETY: `lookup` returns a node below `max_paths` (or LOST_NODE, node 0).
    let n = unsafe { &mut *s.nodes().add(node as usize) };
    n.calls = n.calls.wrapping_add(1);
    // SAFETY: `d < max_depth` (checked above, and `d` only decreased since): the frame pushed.
    let f = unsafe { &mut *s.frame(d) };
    f.node = node;
    f.flags = flags;
    f.func = func;
    f.deeper_ticks = 0;
    f.sp = sp;
    entry_stamped(t, f, d, false);
}

/// Exit hook body.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`.
#[inline(always)]
pub unsafe fn exit(s: &Slot, func: u64) {
    // SAFETY: the caller's promise, which is `exit_stamped_slow`'s.
    unsafe { exit_stamped_slow(s, func) }
}

/// [`exit`] from its timestamp on, which is all of it (see [`exit_stamped`]).
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`.
#[inline(always)]
unsafe fn exit_stamped_slow(s: &Slot, func: u64) {
    let now = clock::now();
    // SAFETY: as in `enter`.
    let (h, t) = unsafe { (&*s.h, &mut *s.t) };
    // SAFETY: the slot invariant.
    if !unsafe { begin(s, h, t) } {
        return;
    }
    if t.overflow_depth > 0 {
        t.overflow_depth -= 1;
        t.busy = 0;
        return;
    }
    let mut d = t.depth.load(Ordering::Relaxed);
    if d == 0 {
        // SAFETY: the slot invariant.
        unsafe { mismatch(s, 1) };
        t.busy = 0;
        return;
    }
    // SAFETY: `0 < d <= max_depth` (the slot invariant): the top frame is in the stack.
    if unsafe { (*s.frame(d - 1)).func } != func {
        // Exits were skipped (longjmp, exception): find the nearest open call of `func`.
        let mut k = d - 1;
        // SAFETY: `k - 1 < d`: an open frame.
        while k > 0 && unsafe { (*s.frame(k - 1)).func } != func {
            k -= 1;
        }
        if k == 0 {
            // SAFETY: the slot invariant.
            unsafe { mismatch(s, 1) };
            t.busy = 0;
            return;
        }
        // SAFETY: the slot invariant, and `k < d <= depth`.
        unsafe { close_unwound(s, k, d) };
        d = k;
    }
    // SAFETY: `0 < d <= depth`: the frame being closed.
    let elapsed = now.wrapping_sub(unsafe { (*s.frame(d - 1)).entry_ticks });
    // SAFETY: the slot invariant, and `d - 1 < depth`.
    unsafe { close(s, d - 1, elapsed) };
    t.depth.store(d - 1, Ordering::Release);
    t.last_ticks.store(now, Ordering::Relaxed);
    t.busy = 0;
}

/// The node of a call at depth `d` >= `max_path_len`: its path is folded to the first
/// `max_path_len - 1` functions of its path followed by `func`, so the call is counted (and
/// per-function totals stay exact); the folding is counted.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`, and `max_path_len <= d <= depth`.
#[cold]
#[inline(never)]
unsafe fn fold(s: &Slot, d: u32, func: u64) -> (u32, u32) {
    // SAFETY: as in `enter`.
    let (h, t) = unsafe { (&*s.h, &mut *s.t) };
    t.flags |= FLAG_PATH_OVERRUN;
    h.flags.fetch_or(FLAG_PATH_OVERRUN, Ordering::Relaxed);
    if d == h.max_path_len {
        t.folded_paths.store(
            t.folded_paths.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }
    t.folded_calls.store(
        t.folded_calls.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
    // SAFETY: the slot invariant; `folded_parent` needs `max_path_len <= depth`, and the
    // node it gives is one this thread stored.
    let (node, flags) = unsafe { lookup(s, folded_parent(s), func) };
    (node, flags | FRAME_FOLDED)
}

/// Parent node of folded calls: that of the frame at depth `max_path_len - 1`.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`, and `max_path_len <= depth` (a folded call
/// is open or being opened), so frame `max_path_len - 2` is open.
#[inline(always)]
unsafe fn folded_parent(s: &Slot) -> u32 {
    // SAFETY: `h` is the live header.
    let l = unsafe { (*s.h).max_path_len };
    if l >= 2 {
        // SAFETY: `l - 2 < max_path_len <= depth <= max_depth`: an open frame.
        unsafe { (*s.frame(l - 2)).node }
    } else {
        NO_PARENT
    }
}

/// Close the frames `keep..d`, left without running their exit hooks (longjmp, or an
/// exception through code without cleanups), as if each had returned when the program left
/// them: at the thread's latest `longjmp` when the runtime saw one after the last hook (see
/// `interpose`), else at the last hook, the latest moment the program surely still ran in
/// them. Each gets its own time and is added to its parent's child time as [`exit`] does, so
/// the frame that survives (`keep - 1`, e.g. the one that called setjmp) is charged only for
/// the time after that moment, when the program ran on in it. (Before, it was charged for the
/// whole unwound subtree, whose completed calls had already been counted: own times summed to
/// more than the run.) Counted as mismatched exits.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`, and `keep <= d <= depth`.
#[cold]
#[inline(never)]
unsafe fn close_unwound(s: &Slot, keep: u32, d: u32) {
    // SAFETY: `t` is this thread's header.
    let t = unsafe { &*s.t };
    let last = t.last_ticks.load(Ordering::Relaxed);
    let jump = t.jump_ticks.load(Ordering::Relaxed);
    let at = if jump > last { jump } else { last };
    let mut i = d;
    while i > keep {
        i -= 1;
        // A frame entered after `at` cannot exist (every hook stores its time there), but a
        // reset re-times open frames to the reset: such a frame is closed with no time.
        // SAFETY: the slot invariant, and `i < d <= depth`: an open frame.
        unsafe { close(s, i, at.saturating_sub((*s.frame(i)).entry_ticks)) };
    }
    // SAFETY: the slot invariant.
    unsafe { mismatch(s, u64::from(d - keep)) };
}

/// Close frame `i`, which ran for `elapsed` ticks: its own time (less the deeper calls' and
/// the hooks' own cost) goes to its path node, and `elapsed` (plus the hooks' cost the caller
/// saw) to its parent's deeper time.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`, and `i < depth`.
#[inline(always)]
unsafe fn close(s: &Slot, i: u32, elapsed: u64) {
    // SAFETY: `h` is the live header; `i < depth <= max_depth`: an open frame.
    let (h, f) = unsafe { (&*s.h, &*s.frame(i)) };
    let own = elapsed
        .wrapping_sub(f.deeper_ticks)
        .wrapping_sub(h.comp_self_ticks);
    // SAFETY: the frame's node is one this thread stored: below `max_paths`.
    let n = unsafe { &mut *s.nodes().add(f.node as usize) };
    n.own_ticks = n.own_ticks.wrapping_add(own);
    if i > 0 {
        // SAFETY: `i - 1 < i`: the open parent frame, not the one `f` borrows.
        let p = unsafe { &mut *s.frame(i - 1) };
        let comp = if f.flags & FRAME_SLOW != 0 {
            h.comp_child_slow_ticks
        } else {
            h.comp_child_ticks
        };
        p.deeper_ticks = p.deeper_ticks.wrapping_add(elapsed).wrapping_add(comp);
    }
}

/// Count `n` exits that did not match the open calls.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`.
#[cold]
unsafe fn mismatch(s: &Slot, n: u64) {
    // SAFETY: the slot invariant: `h` is the live header and `t` this thread's header, which
    // no other reference in this call aliases.
    let (h, t) = unsafe { (&*s.h, &mut *s.t) };
    t.mismatched.store(
        t.mismatched.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
    t.flags |= FLAG_MISMATCH;
    h.flags.fetch_or(FLAG_MISMATCH, Ordering::Relaxed);
}

/// Clear this thread's table and re-insert the open calls with zero counts, so that running
/// functions are measured from the reset on (the stack outlives resets).
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`, except that the frames' nodes may be stale
/// (they are rebuilt here).
#[cold]
#[inline(never)]
pub unsafe fn reset(s: &Slot) {
    // SAFETY: the slot invariant: `h` is the live header and `t` this thread's header (the
    // lookups below reach it through the same pointer, while this borrow is not in use).
    let (h, t) = unsafe { (&*s.h, &mut *s.t) };
    t.seen_gen
        .store(h.reset_gen.load(Ordering::Relaxed), Ordering::Relaxed);
    // SAFETY: the slot invariant.
    unsafe { clear_table(s) };
    let now = clock::now();
    let d = t.depth.load(Ordering::Relaxed);
    let mut parent = NO_PARENT;
    for i in 0..d {
        // SAFETY: `i < depth <= max_depth`: an open frame.
        let f = unsafe { &mut *s.frame(i) };
        f.node = if i >= h.max_path_len {
            // SAFETY: the slot invariant; `max_path_len <= i < depth`, and the frames below
            // `i` hold nodes of the rebuilt table.
            unsafe { lookup(s, folded_parent(s), f.func).0 }
        } else {
            // SAFETY: `parent` is NO_PARENT or the node just found for frame `i - 1`.
            parent = unsafe { lookup(s, parent, f.func).0 };
            parent
        };
        f.entry_ticks = now;
        f.deeper_ticks = 0;
    }
    t.mismatched.store(0, Ordering::Relaxed);
    t.lost_calls.store(0, Ordering::Relaxed);
    t.folded_calls.store(0, Ordering::Relaxed);
    t.folded_paths.store(0, Ordering::Relaxed);
    t.flags = 0;
    t.reset_ticks.store(now, Ordering::Relaxed);
}

/// Empty the path table: node 0 (lost) only, hash index zeroed.
///
/// # Safety
/// The slot invariant of [`Slot`] holds for `s`, except that the nodes need not be
/// initialised.
pub unsafe fn clear_table(s: &Slot) {
    // SAFETY: the slot invariant: `h` is the live header and `t` this thread's header.
    let (h, t) = unsafe { (&*s.h, &*s.t) };
    let used = t.paths_used.load(Ordering::Relaxed).min(h.max_paths) as usize;
    // SAFETY: `used.max(1) <= max_paths` nodes (`max_paths >= 1`: `Config` clamps it to at
    // least 2) and `hash_size` buckets are inside the slot, which only this thread writes.
    unsafe {
        core::ptr::write_bytes(s.nodes(), 0, used.max(1));
        core::ptr::write_bytes(s.hash(), 0, h.hash_size as usize);
    }
    // SAFETY: node 0 is inside the table, and no other reference to it is live.
    let lost = unsafe { &mut *s.nodes() };
    lost.parent = NO_PARENT;
    lost.depth = 1;
    t.paths_used.store(1, Ordering::Release);
}
