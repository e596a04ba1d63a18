//! The hooks' bookkeeping run on a segment in ordinary memory: a header, a tag table and one
//! thread slot laid out as hood-abi says, so each test drives `hook` and `trace` directly
//! and reads back what a recorder would. Timestamps are real (whichever clock the process
//! uses), so the tests assert counts, paths, positions and flags, never times.

use core::sync::atomic::Ordering;

use hood_abi::{
    event_index, event_kind, Frame, PathNode, SegmentHeader, SlotLayout, TagEntry, ThreadHeader,
    FLAG_MISMATCH, FLAG_PATH_OVERRUN, FLAG_STACK_OVERRUN, FLAG_TABLE_OVERRUN, FLAG_TRACE_FULL,
    FLAG_TRACE_WRAPPED, FRAME_FOLDED, HEADER_AREA_SIZE, INDEX_UNKNOWN, KIND_ENTRY, KIND_EXIT,
    KIND_MARK, LOST_NODE, NO_PARENT, TAGS_AREA_SIZE, TRACE_FULL_STOP, TRACE_FULL_STREAM,
    TRACE_FULL_WRAP,
};

use crate::hook::{self, Slot};
use crate::trace;

const A: u64 = 0x1000;
const B: u64 = 0x2000;
const C: u64 = 0x3000;
const D: u64 = 0x4000;
const E: u64 = 0x5000;

/// A segment with one thread slot, in a `Vec` that is never resized (so `base` stays valid).
struct Seg {
    _mem: Vec<u64>,
    base: *mut u8,
    slot: usize,
    nodes: usize,
}

impl Seg {
    fn new(slot_size: u64, init: impl FnOnce(&mut SegmentHeader)) -> Seg {
        let slot = (HEADER_AREA_SIZE + TAGS_AREA_SIZE) as usize;
        let mut mem = vec![0u64; (slot + slot_size as usize) / 8];
        let base = mem.as_mut_ptr().cast::<u8>();
        // SAFETY: the header area starts the zeroed, 8-aligned buffer; all-zero bytes are a
        // valid header (integers, atomics and a byte array).
        let h = unsafe { &mut *base.cast::<SegmentHeader>() };
        h.tags_offset = HEADER_AREA_SIZE;
        h.thread_slot_size = slot_size;
        init(h);
        let nodes =
            slot + hood_abi::THREAD_HEADER_SIZE + h.max_depth as usize * hood_abi::FRAME_SIZE;
        Seg {
            _mem: mem,
            base,
            slot,
            nodes,
        }
    }

    /// A calls-mode segment with these limits, its thread slot set up as the runtime does.
    fn calls(max_depth: u32, max_paths: u32, max_path_len: u32) -> Seg {
        let hash_size = (max_paths * 2).next_power_of_two();
        let layout = SlotLayout::new(max_depth, max_paths, hash_size).unwrap();
        let seg = Seg::new(layout.slot_size, |h| {
            h.mode = hood_abi::MODE_CALLS;
            h.max_depth = max_depth;
            h.max_paths = max_paths;
            h.max_path_len = max_path_len;
            h.hash_size = hash_size;
        });
        // SAFETY: this thread's slot in the segment, laid out from the header's limits.
        unsafe { hook::clear_table(&seg.slot()) };
        seg
    }

    /// A trace-mode segment whose thread buffer holds `capacity` events.
    fn trace(capacity: u64, full: u32) -> Seg {
        let size = hood_abi::trace_slot_size(capacity).unwrap();
        let seg = Seg::new(size, |h| {
            h.mode = hood_abi::MODE_TRACE;
            h.trace_capacity = capacity;
            h.trace_full = full;
        });
        // As `runtime::init_slot`: stream mode finds its room through the general path.
        let stop = if full == TRACE_FULL_STREAM {
            0
        } else {
            capacity
        };
        seg.thread().trace_stop.store(stop, Ordering::Relaxed);
        seg
    }

    fn slot(&self) -> Slot {
        Slot {
            h: self.base.cast(),
            // SAFETY: the slot lies inside the buffer.
            t: unsafe { self.base.add(self.slot) }.cast(),
        }
    }

    fn header(&self) -> &SegmentHeader {
        // SAFETY: the header starts the buffer.
        unsafe { &*self.base.cast::<SegmentHeader>() }
    }

    fn thread(&self) -> &ThreadHeader {
        // SAFETY: the thread header starts the slot.
        unsafe { &*self.base.add(self.slot).cast::<ThreadHeader>() }
    }

    fn depth(&self) -> u32 {
        self.thread().depth.load(Ordering::Relaxed)
    }

    fn frame(&self, i: u32) -> &Frame {
        assert!(i < self.header().max_depth);
        // SAFETY: frame `i < max_depth` of the slot.
        unsafe {
            &*self
                .base
                .add(self.slot + hood_abi::THREAD_HEADER_SIZE)
                .cast::<Frame>()
                .add(i as usize)
        }
    }

    fn node(&self, i: u32) -> &PathNode {
        assert!(i < self.header().max_paths);
        // SAFETY: node `i < max_paths` of the slot's table.
        unsafe { &*self.base.add(self.nodes).cast::<PathNode>().add(i as usize) }
    }

    /// The node of the call path `path` (outermost first), if the table has it.
    fn path(&self, path: &[u64]) -> Option<&PathNode> {
        let used = self.thread().paths_used.load(Ordering::Relaxed);
        let mut parent = NO_PARENT;
        let mut found = None;
        for &f in path {
            let i = (1..used).find(|&i| self.node(i).func == f && self.node(i).parent == parent)?;
            parent = i;
            found = Some(self.node(i));
        }
        found
    }

    fn calls_of(&self, path: &[u64]) -> u64 {
        self.path(path).map_or(0, |n| n.calls)
    }

    fn mismatched(&self) -> u64 {
        self.thread().mismatched.load(Ordering::Relaxed)
    }

    fn flags(&self) -> u32 {
        self.header().flags.load(Ordering::Relaxed)
    }

    fn enter(&self, func: u64, sp: u64) {
        // SAFETY: the slot invariant: this thread's slot in a segment laid out as its header
        // says, set up by `clear_table`.
        unsafe { hook::enter(&self.slot(), func, sp) }
    }

    fn exit(&self, func: u64) {
        // SAFETY: as in `enter`.
        unsafe { hook::exit(&self.slot(), func) }
    }

    /// The event words written so far (stop mode: from index 0).
    fn events(&self) -> Vec<(u64, u64)> {
        let n = self.thread().trace_pos.load(Ordering::Relaxed);
        (0..n)
            .map(|i| {
                // SAFETY: `i < trace_pos <= capacity`: an event word of the slot.
                let w = unsafe {
                    *self
                        .base
                        .add(self.slot + hood_abi::THREAD_HEADER_SIZE)
                        .cast::<u64>()
                        .add(i as usize)
                };
                (event_index(w), event_kind(w))
            })
            .collect()
    }

    fn event(&self, index: u64, kind: u64) {
        // SAFETY: this thread's trace slot, its buffer `trace_capacity` words.
        unsafe { trace::event(&self.slot(), index, kind) }
    }
}

/// Stack pointers of nested calls: each deeper call's is lower.
fn sp(depth: u64) -> u64 {
    0x7fff_0000 - depth * 0x100
}

#[test]
fn calls_are_counted_on_their_paths_and_the_stack_empties() {
    let seg = Seg::calls(64, 64, 32);
    seg.enter(A, sp(0));
    for _ in 0..3 {
        seg.enter(B, sp(1));
        seg.enter(C, sp(2));
        seg.exit(C);
        seg.exit(B);
    }
    seg.enter(C, sp(1));
    seg.exit(C);
    seg.exit(A);
    assert_eq!(seg.calls_of(&[A]), 1);
    assert_eq!(seg.calls_of(&[A, B]), 3);
    assert_eq!(seg.calls_of(&[A, B, C]), 3);
    // The same function called from another path is another node.
    assert_eq!(seg.calls_of(&[A, C]), 1);
    assert_eq!(seg.path(&[A, B]).unwrap().depth, 2);
    // Node 0 (lost) and the four paths.
    assert_eq!(seg.thread().paths_used.load(Ordering::Relaxed), 5);
    assert_eq!((seg.depth(), seg.mismatched(), seg.flags()), (0, 0, 0));
    assert_eq!(seg.thread().busy, 0);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_fast_paths_take_only_a_cached_child_and_the_top_frames_exit() {
    let seg = Seg::calls(64, 64, 32);
    let (h, t) = (seg.slot().h, seg.slot().t);
    // SAFETY: `h` and `t` are the live calls-mode segment and this thread's slot in it;
    // `enter_fast` and `exit_fast` read the TSC, which every x86-64 CPU has (the tests
    // assert no times).
    let enter = |f: u64| unsafe { hook::enter_fast(h, t, f, sp(1)) };
    // SAFETY: as above.
    let exit = |f: u64| unsafe { hook::exit_fast(h, t, f) };
    seg.enter(A, sp(0));
    // A first call of B: not in A's last-child cache, left to the general path.
    assert!(!enter(B));
    assert_eq!((seg.depth(), seg.calls_of(&[A, B])), (1, 0));
    seg.enter(B, sp(1));
    // B is not the top frame's function after it is closed: the general path.
    assert!(exit(B));
    assert!(!exit(B));
    assert_eq!(seg.depth(), 1);
    // Now cached: the fast entry counts it.
    assert!(enter(B));
    assert!(exit(B));
    // A then calls C (the general path: a new node), then B again: C's sibling link does
    // not name B yet, so that is the general path too, which links C to B.
    seg.enter(C, sp(1));
    seg.exit(C);
    assert!(enter(C));
    assert!(exit(C));
    assert!(!enter(B));
    seg.enter(B, sp(1));
    seg.exit(B);
    // From then on, B and C in turn take the fast path through the sibling links.
    for _ in 0..3 {
        for f in [C, B] {
            assert!(enter(f));
            assert!(exit(f));
        }
    }
    seg.exit(A);
    assert_eq!(seg.calls_of(&[A, B]), 6);
    assert_eq!(seg.calls_of(&[A, C]), 5);
    assert_eq!((seg.depth(), seg.mismatched(), seg.flags()), (0, 0, 0));
}

#[test]
fn frames_a_longjmp_left_are_closed_at_the_next_entry() {
    let seg = Seg::calls(64, 64, 32);
    seg.enter(A, sp(0));
    seg.enter(B, sp(1));
    seg.enter(C, sp(2));
    // A longjmp back into A: the next function A calls (with a smaller frame than B's) has
    // a stack pointer above the frames of B and C, which ran no exit hook.
    seg.enter(D, sp(1) + 0x40);
    assert_eq!(seg.depth(), 2);
    assert_eq!(seg.frame(1).func, D);
    assert_eq!(seg.mismatched(), 2);
    assert_ne!(seg.flags() & FLAG_MISMATCH, 0);
    seg.exit(D);
    seg.exit(A);
    assert_eq!(seg.depth(), 0);
    assert_eq!(seg.calls_of(&[A, D]), 1);
    assert_eq!(seg.calls_of(&[A, B, C]), 1);
    // A function inlined into B calls its hooks from B's frame: at B's stack pointer, nested.
    seg.enter(A, sp(0));
    seg.enter(B, sp(1));
    seg.enter(C, sp(1));
    assert_eq!(seg.depth(), 3);
    seg.exit(C);
    seg.exit(B);
    seg.exit(A);
    assert_eq!(seg.calls_of(&[A, B, C]), 2);
    assert_eq!(seg.mismatched(), 2, "no exit repaired for the inlined call");
    // A signal handler on another stack (more than 1 MiB above) is not taken for a longjmp.
    seg.enter(A, sp(0));
    seg.enter(B, sp(1));
    seg.enter(E, sp(0) + (4 << 20));
    assert_eq!(seg.depth(), 3);
}

#[test]
fn an_exit_below_the_top_closes_the_skipped_calls_and_an_unknown_exit_is_counted() {
    let seg = Seg::calls(64, 64, 32);
    seg.exit(A);
    assert_eq!((seg.depth(), seg.mismatched()), (0, 1));
    seg.enter(A, sp(0));
    seg.enter(B, sp(1));
    seg.enter(C, sp(2));
    // An exception through B and C without cleanups: A's exit closes all three.
    seg.exit(A);
    assert_eq!((seg.depth(), seg.mismatched()), (0, 3));
    // An exit of a function not on the stack changes nothing else.
    seg.enter(A, sp(0));
    seg.exit(E);
    assert_eq!((seg.depth(), seg.mismatched()), (1, 4));
}

#[test]
fn calls_deeper_than_the_longest_path_are_folded_onto_it() {
    let seg = Seg::calls(64, 64, 3);
    for (d, f) in [A, B, C, D, E].into_iter().enumerate() {
        seg.enter(f, sp(d as u64));
    }
    // Depths 4 and 5: the path is the first two functions, then the call's own.
    assert_eq!(seg.calls_of(&[A, B, C]), 1);
    assert_eq!(seg.calls_of(&[A, B, D]), 1);
    assert_eq!(seg.calls_of(&[A, B, E]), 1);
    assert_ne!(seg.frame(3).flags & FRAME_FOLDED, 0);
    let t = seg.thread();
    assert_eq!(t.folded_paths.load(Ordering::Relaxed), 1);
    assert_eq!(t.folded_calls.load(Ordering::Relaxed), 2);
    assert_ne!(seg.flags() & FLAG_PATH_OVERRUN, 0);
    for f in [E, D, C, B, A] {
        seg.exit(f);
    }
    assert_eq!((seg.depth(), seg.mismatched()), (0, 0));
}

#[test]
fn calls_past_the_stack_or_the_table_are_counted_as_lost() {
    let seg = Seg::calls(2, 3, 32);
    seg.enter(A, sp(0));
    seg.enter(B, sp(1));
    // The stack holds two frames: C is not recorded, and its exit is absorbed.
    seg.enter(C, sp(2));
    assert_eq!(seg.depth(), 2);
    assert_eq!(seg.thread().overflow_depth, 1);
    assert_eq!(seg.thread().lost_calls.load(Ordering::Relaxed), 1);
    assert_ne!(seg.flags() & FLAG_STACK_OVERRUN, 0);
    seg.exit(C);
    seg.exit(B);
    // The table holds node 0 and two paths (A, A→B): A→D goes to the lost node.
    seg.enter(D, sp(1));
    assert_eq!(seg.frame(1).node, LOST_NODE);
    assert_eq!(seg.node(LOST_NODE).calls, 1);
    assert_ne!(seg.flags() & FLAG_TABLE_OVERRUN, 0);
    seg.exit(D);
    seg.exit(A);
    assert_eq!((seg.depth(), seg.mismatched()), (0, 0));
}

#[test]
fn a_reset_keeps_the_open_calls_with_zero_counts() {
    let seg = Seg::calls(64, 64, 32);
    seg.enter(A, sp(0));
    seg.enter(B, sp(1));
    seg.enter(C, sp(2));
    seg.exit(C);
    seg.exit(A);
    assert_eq!(seg.mismatched(), 1);
    seg.enter(A, sp(0));
    seg.enter(B, sp(1));
    // `hood calls reset`: the next hook empties the table and re-inserts A and A→B.
    seg.header().reset_gen.store(1, Ordering::Relaxed);
    seg.enter(D, sp(2));
    assert_eq!(seg.calls_of(&[A]), 0);
    assert_eq!(seg.calls_of(&[A, B]), 0);
    assert_eq!(seg.calls_of(&[A, B, D]), 1);
    assert!(seg.path(&[A, B, C]).is_none());
    assert_eq!(seg.mismatched(), 0);
    assert_eq!(seg.thread().seen_gen.load(Ordering::Relaxed), 1);
    seg.exit(D);
    seg.exit(B);
    seg.exit(A);
    assert_eq!((seg.depth(), seg.mismatched()), (0, 0));
}

#[test]
fn a_hook_inside_a_hook_records_nothing() {
    let seg = Seg::calls(64, 64, 32);
    // SAFETY: this thread's slot; the test plays a signal handler's hook inside a hook.
    unsafe { (*seg.slot().t).busy = 1 };
    seg.enter(A, sp(0));
    assert_eq!((seg.depth(), seg.calls_of(&[A])), (0, 0));
    let tseg = Seg::trace(16, TRACE_FULL_STOP);
    // SAFETY: as above.
    unsafe { (*tseg.slot().t).busy = 1 };
    tseg.event(7, KIND_ENTRY);
    assert!(tseg.events().is_empty());
    assert_eq!(tseg.thread().lost_calls.load(Ordering::Relaxed), 1);
}

#[test]
fn a_full_trace_buffer_stops_or_wraps() {
    let seg = Seg::trace(16, TRACE_FULL_STOP);
    for i in 0..20 {
        seg.event(i, if i % 2 == 0 { KIND_ENTRY } else { KIND_EXIT });
    }
    let events = seg.events();
    assert_eq!(events.len(), 16);
    assert_eq!(events[0], (0, KIND_ENTRY));
    assert_eq!(events[15], (15, KIND_EXIT));
    let t = seg.thread();
    assert_eq!(t.trace_written.load(Ordering::Relaxed), 16);
    assert_eq!(t.trace_dropped.load(Ordering::Relaxed), 4);
    assert_ne!(seg.flags() & FLAG_TRACE_FULL, 0);

    let seg = Seg::trace(16, TRACE_FULL_WRAP);
    for i in 0..20 {
        seg.event(i, KIND_ENTRY);
    }
    // The newest 16: 16..20 over the first four words.
    let t = seg.thread();
    assert_eq!(t.trace_pos.load(Ordering::Relaxed), 4);
    assert_eq!(t.trace_written.load(Ordering::Relaxed), 20);
    assert_ne!(t.lap_ticks.load(Ordering::Relaxed), 0);
    assert_ne!(seg.flags() & FLAG_TRACE_WRAPPED, 0);
    assert_eq!(seg.events(), [16, 17, 18, 19].map(|i| (i, KIND_ENTRY)));
}

#[test]
fn a_streamed_ring_writes_into_the_room_the_recorder_freed() {
    let seg = Seg::trace(16, TRACE_FULL_STREAM);
    for i in 0..18 {
        seg.event(i, KIND_ENTRY);
    }
    let t = seg.thread();
    assert_eq!(t.trace_written.load(Ordering::Relaxed), 16);
    assert_eq!(t.trace_dropped.load(Ordering::Relaxed), 2);
    // The recorder took the first 8: the ring goes on at index 0, up to 8 more.
    t.trace_read.store(8, Ordering::Release);
    for i in 100..110 {
        seg.event(i, KIND_ENTRY);
    }
    assert_eq!(t.trace_written.load(Ordering::Relaxed), 24);
    assert_eq!(t.trace_dropped.load(Ordering::Relaxed), 4);
    assert_eq!(t.trace_pos.load(Ordering::Relaxed), 8);
    assert_eq!(seg.events()[..2], [(100, KIND_ENTRY), (101, KIND_ENTRY)]);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn the_fast_trace_path_leaves_a_full_buffer_to_the_general_one() {
    let seg = Seg::trace(16, TRACE_FULL_STOP);
    let t = seg.slot().t;
    for i in 0..16 {
        // SAFETY: this thread's trace slot; the TSC is read and not asserted.
        assert!(unsafe { trace::event_fast(t, i, KIND_EXIT) });
    }
    // SAFETY: as above.
    assert!(!unsafe { trace::event_fast(t, 16, KIND_EXIT) });
    assert_eq!(seg.events().len(), 16);
    assert_eq!(seg.events()[9], (9, KIND_EXIT));
    assert_eq!(seg.thread().trace_dropped.load(Ordering::Relaxed), 0);
}

#[test]
fn a_mark_label_is_registered_once_and_truncated() {
    let seg = Seg::trace(16, TRACE_FULL_STOP);
    let h = seg.slot().h;
    let short = c"phase one";
    let long = [b'x'; 80].iter().chain(b"\0").copied().collect::<Vec<u8>>();
    // SAFETY: the live trace segment's tag table; the labels are NUL-terminated strings.
    let (i, j, k) = unsafe {
        (
            trace::tag_index(h, short.as_ptr().cast()),
            trace::tag_index(h, short.as_ptr().cast()),
            trace::tag_index(h, long.as_ptr()),
        )
    };
    assert_eq!(i, j);
    assert_ne!(i, k);
    // SAFETY: as above.
    assert_eq!(
        unsafe { trace::tag_index(h, core::ptr::null()) },
        INDEX_UNKNOWN
    );
    assert_eq!(seg.header().tags_used.load(Ordering::Relaxed), 2);
    let tag = |i: u64| {
        // SAFETY: `i < MAX_TAGS`: an entry of the tag table at `tags_offset`.
        let e = unsafe {
            &*seg
                .base
                .add(HEADER_AREA_SIZE as usize)
                .cast::<TagEntry>()
                .add(i as usize)
        };
        e.label[..e.len.load(Ordering::Acquire) as usize].to_vec()
    };
    assert_eq!(tag(i), b"phase one");
    assert_eq!(tag(k), [b'x'; hood_abi::TAG_LABEL_LEN]);
    seg.event(i, KIND_MARK);
    assert_eq!(seg.events(), [(i, KIND_MARK)]);
}

#[test]
fn a_path_buffer_appends_text_and_numbers() {
    let mut p = crate::segment::PathBuf::new();
    p.push(b"/dev/shm/hood-");
    p.push_u64(0);
    p.push(b"-");
    p.push_u64(u64::MAX);
    // SAFETY: `as_ptr` gives a NUL-terminated string inside `p`.
    let s = unsafe { core::ffi::CStr::from_ptr(p.as_ptr()) };
    assert_eq!(s.to_bytes(), b"/dev/shm/hood-0-18446744073709551615");
    // Past its capacity it truncates, still NUL-terminated.
    let mut p = crate::segment::PathBuf::new();
    for _ in 0..300 {
        p.push(b"abcd");
    }
    // SAFETY: as above.
    let s = unsafe { core::ffi::CStr::from_ptr(p.as_ptr()) };
    assert_eq!(s.to_bytes().len(), 1099);
}
