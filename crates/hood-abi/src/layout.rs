//! The layouts themselves, with compile-time size and offset checks.

use core::mem::{offset_of, size_of};
use core::sync::atomic::{AtomicU32, AtomicU64};

/// First 8 bytes of every segment: `b"HOODSEG\0"` read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"HOODSEG\0");
/// Bumped whenever any layout in this crate changes; readers skip other versions.
pub const LAYOUT_VERSION: u32 = 5;
/// File-name prefix of segments in the segment directory.
pub const SEGMENT_PREFIX: &str = "hood-rt-";
/// Default segment directory; the runtime and the readers honour `HOOD_SHM_DIR`.
pub const DEFAULT_SHM_DIR: &str = "/dev/shm";

/// Segment mode: call-path tables (issue 4).
pub const MODE_CALLS: u32 = 1;
/// Segment mode: per-thread event trace buffers (`hood trace`).
pub const MODE_TRACE: u32 = 2;

/// Process state: the process is (as far as its runtime knows) running.
pub const STATE_RUNNING: u32 = 1;
/// Process state: the runtime's exit handler ran; `exit_tsc` is valid.
pub const STATE_EXITED: u32 = 2;

/// Clock: timestamps are TSC ticks, `ticks_per_sec` calibrated against CLOCK_MONOTONIC.
pub const CLOCK_TSC: u32 = 1;
/// Clock: timestamps are CLOCK_MONOTONIC nanoseconds (no invariant TSC).
pub const CLOCK_MONOTONIC_NS: u32 = 2;

/// Flag: a call path was longer than `max_path_len`; deeper calls were folded into it.
pub const FLAG_PATH_OVERRUN: u32 = 0x1;
/// Flag: the call stack was deeper than `max_depth`; deeper calls were not measured.
pub const FLAG_STACK_OVERRUN: u32 = 0x2;
/// Flag: a thread's path table was full; new paths were charged to the lost node.
pub const FLAG_TABLE_OVERRUN: u32 = 0x4;
/// Flag: more threads than `max_threads`; extra threads were not measured.
pub const FLAG_THREAD_OVERRUN: u32 = 0x8;
/// Flag: exits that did not match the stack were seen (longjmp, exceptions); see `mismatched`.
pub const FLAG_MISMATCH: u32 = 0x10;
/// Flag (trace): a thread's buffer filled in `stop` mode; later events were dropped (counted).
pub const FLAG_TRACE_FULL: u32 = 0x20;
/// Flag (trace): a thread's buffer wrapped in `wrap` mode; the oldest events were overwritten.
pub const FLAG_TRACE_WRAPPED: u32 = 0x40;
/// Flag (trace): the inline tag table was full; later labels are recorded as unknown.
pub const FLAG_TAG_OVERRUN: u32 = 0x80;
/// Flag (trace): the function table was full; later functions are recorded as unknown.
pub const FLAG_FUNC_OVERRUN: u32 = 0x100;

/// Trace mode: stop recording a thread when its buffer is full (the hardware's behaviour).
pub const TRACE_FULL_STOP: u32 = 0;
/// Trace mode: keep the most recent events (flight recorder).
pub const TRACE_FULL_WRAP: u32 = 1;
/// Trace mode: the buffer is a ring that a recorder drains while the program runs (`hood
/// trace record`'s default). The owner thread appends at `trace_written`; the recorder copies
/// the events between its `trace_read` and `trace_written` out and then stores the new
/// `trace_read` (release); the owner reloads `trace_read` (acquire) only when its cached stop
/// index `trace_stop` is reached, and drops (counts in `trace_dropped`) an event only when the
/// ring holds `capacity` events the recorder has not taken yet. The ring index of event number
/// `n` is `n % capacity`.
pub const TRACE_FULL_STREAM: u32 = 2;
/// Trace event kind: function entry (index = the function's entry in the function table).
pub const KIND_ENTRY: u64 = 0;
/// Trace event kind: function exit (index as for entry).
pub const KIND_EXIT: u64 = 1;
/// Trace event kind: inline mark (index = entry in the tag table, or [`INDEX_UNKNOWN`]).
pub const KIND_MARK: u64 = 2;
/// Trace event kind: recording switched off (index [`CONTROL_OFF`]) or on ([`CONTROL_ON`]).
pub const KIND_CONTROL: u64 = 3;
/// Index of a control event: `hood_trace_off()`.
pub const CONTROL_OFF: u64 = 0;
/// Index of a control event: `hood_trace_on()`.
pub const CONTROL_ON: u64 = 1;
/// Mark tag meaning "unknown label" in decoded events (the tag table was full).
pub const TAG_UNKNOWN: u64 = u64::MAX;
/// Bits of an event word holding the kind (the lowest).
pub const EVENT_KIND_BITS: u32 = 2;
/// Bits of an event word holding the function, tag or control index (above the kind).
pub const EVENT_INDEX_BITS: u32 = 16;
/// Shift of the timestamp in an event word; it keeps the low [`EVENT_TICKS_BITS`] bits.
pub const EVENT_TICKS_SHIFT: u32 = EVENT_KIND_BITS + EVENT_INDEX_BITS;
/// Timestamp bits kept per event; readers restore the rest from the previous event.
pub const EVENT_TICKS_BITS: u32 = 64 - EVENT_TICKS_SHIFT;
/// Index meaning "unknown": the function table (or tag table) was full.
pub const INDEX_UNKNOWN: u64 = (1 << EVENT_INDEX_BITS) - 1;
/// Entries in a trace segment's function table (index [`INDEX_UNKNOWN`] is never assigned).
pub const MAX_FUNCS: u32 = INDEX_UNKNOWN as u32;
/// Size of the function table area (between the tag table and the slots).
pub const FUNCS_AREA_SIZE: u64 = (INDEX_UNKNOWN + 1) * 8;
/// Entries in a trace segment's inline tag table.
pub const MAX_TAGS: u32 = 1024;
/// Bytes of label kept per inline tag.
pub const TAG_LABEL_LEN: usize = 52;
/// Size of the tag table area of a trace segment (between the maps area and the slots).
pub const TAGS_AREA_SIZE: u64 = MAX_TAGS as u64 * 64;

/// Offset, in the header area, of the free-slot bytes: byte `i` (for slots `i <`
/// [`REUSABLE_SLOTS`]) is [`SLOT_FREE`] when slot `i`'s thread has exited and a recorder has
/// taken everything from the slot; a new thread of the process may then claim it (compare and
/// swap to 0) instead of a fresh slot. Only the recorder that retired the slot (it streamed
/// or collected it) sets the byte, after it cleared the slot's `tid` and `state`.
pub const FREE_SLOTS_OFFSET: u64 = 2048;
/// Thread slots that can be reused (one free-slot byte each in the header area).
pub const REUSABLE_SLOTS: u32 = (HEADER_AREA_SIZE - FREE_SLOTS_OFFSET) as u32;
/// Free-slot byte: the slot may be claimed by a new thread.
pub const SLOT_FREE: u8 = 1;

/// Thread slot state: slot claimed, thread alive.
pub const THREAD_LIVE: u32 = 1;
/// Thread slot state: the thread exited (`exit_tsc` valid).
pub const THREAD_EXITED: u32 = 2;

/// Node index meaning "no parent" (a top-level call).
pub const NO_PARENT: u32 = u32::MAX;
/// Node 0 of every table: calls whose path could not be inserted (table overrun).
pub const LOST_NODE: u32 = 0;
/// Frame flag: the frame is deeper than `max_path_len`: its call is counted on a folded path
/// (the first `max_path_len - 1` functions of its path, then its own function).
pub const FRAME_FOLDED: u32 = 0x1;
/// Frame flag: the entry's path lookup missed the last-child cache (costlier entry hook).
pub const FRAME_SLOW: u32 = 0x2;

/// Size of the header area (one page).
pub const HEADER_AREA_SIZE: u64 = 4096;
/// Size of the maps area following the header.
pub const MAPS_AREA_SIZE: u64 = 64 * 1024;
/// Byte length of the executable path field.
pub const EXE_PATH_LEN: usize = 1024;

/// The segment header. Fields that change while the process runs are atomics; the rest are
/// written once before `magic` is stored (the runtime stores `magic` last).
#[repr(C)]
pub struct SegmentHeader {
    /// [`MAGIC`].
    pub magic: AtomicU64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// [`MODE_CALLS`] or [`MODE_TRACE`].
    pub mode: u32,
    /// Process id of the process that owns the segment.
    pub pid: u32,
    /// Its parent at segment creation.
    pub ppid: u32,
    /// [`STATE_RUNNING`] or [`STATE_EXITED`].
    pub state: AtomicU32,
    /// [`CLOCK_TSC`] or [`CLOCK_MONOTONIC_NS`].
    pub clock: u32,
    /// Timestamp ticks per second (refined at exit when the run was long enough).
    pub ticks_per_sec: AtomicU64,
    /// Timestamp at segment creation.
    pub start_ticks: u64,
    /// CLOCK_MONOTONIC ns at segment creation (same instant as `start_ticks`).
    pub start_mono_ns: u64,
    /// CLOCK_REALTIME ns at segment creation.
    pub start_realtime_ns: u64,
    /// Timestamp when the exit handler ran (valid when `state` is exited).
    pub exit_ticks: AtomicU64,
    /// OR of `FLAG_*` values.
    pub flags: AtomicU32,
    /// Reset generation: readers increment it to ask for a reset; each thread honours it at
    /// its next hook and stores it in its `seen_gen`.
    pub reset_gen: AtomicU32,
    /// 1 when overhead compensation is on (`HOOD_COMPENSATE=0` turns it off).
    pub compensate: u32,
    /// Maximum number of thread slots.
    pub max_threads: u32,
    /// Ticks charged per call to the callee's own time by the hooks themselves (subtracted).
    pub comp_self_ticks: u64,
    /// Ticks of hook cost per child call not covered by the child's timestamps (added to the
    /// caller's deeper time).
    pub comp_child_ticks: u64,
    /// Stack frames per thread.
    pub max_depth: u32,
    /// Path nodes per thread (node 0 is the lost node).
    pub max_paths: u32,
    /// Longest call path kept; deeper calls are folded.
    pub max_path_len: u32,
    /// Hash index entries per thread (a power of two).
    pub hash_size: u32,
    /// Fresh thread slots claimed so far, counting the threads that found none left (may
    /// exceed `max_threads`: the excess is the number of threads not measured; clamp). Slots
    /// reused through the free-slot bytes are not counted again.
    pub threads_used: AtomicU32,
    /// Length of the executable path in `exe_path`.
    pub exe_path_len: u32,
    /// Offset of the maps area from the segment start.
    pub maps_offset: u64,
    /// Bytes of text currently in the maps area.
    pub maps_len: AtomicU64,
    /// Offset of thread slot 0.
    pub threads_offset: u64,
    /// Size of one thread slot.
    pub thread_slot_size: u64,
    /// Total segment size.
    pub total_size: u64,
    /// Executable path (`/proc/self/exe`), not NUL terminated.
    pub exe_path: [u8; EXE_PATH_LEN],
    /// Like `comp_child_ticks`, for calls whose path lookup missed the last-child cache (a
    /// caller alternating between callees): that lookup costs more, before the entry timestamp.
    pub comp_child_slow_ticks: u64,
    /// Trace mode: [`TraceEvent`]s per thread buffer (0 in calls mode).
    pub trace_capacity: u64,
    /// Trace mode: [`TRACE_FULL_STOP`] or [`TRACE_FULL_WRAP`].
    pub trace_full: u32,
    /// Trace mode: inline tags registered so far (clamp to [`MAX_TAGS`]).
    pub tags_used: AtomicU32,
    /// Trace mode: offset of the [`TagEntry`] table (0 in calls mode).
    pub tags_offset: u64,
    /// Trace mode: offset of the function table, `max_funcs` u64 function addresses indexed
    /// by the events' index field (0 = claimed, address not yet stored).
    pub funcs_offset: u64,
    /// Trace mode: function table entries claimed so far (may exceed `max_funcs`; clamp).
    pub funcs_used: AtomicU32,
    /// Trace mode: function table entries ([`MAX_FUNCS`]).
    pub max_funcs: u32,
}

/// Per-thread header at the start of each thread slot (192 bytes). Written only by the owner
/// thread, except `state`/`exit_ticks` written by the thread-exit destructor of that thread
/// and `trace_read` written by the recorder (stream mode).
#[repr(C)]
pub struct ThreadHeader {
    /// Kernel thread id.
    pub tid: u32,
    /// [`THREAD_LIVE`] or [`THREAD_EXITED`].
    pub state: AtomicU32,
    /// Current stack depth (frames 0..depth are valid).
    pub depth: AtomicU32,
    /// Calls deeper than `max_depth` currently open (not on the stack).
    pub overflow_depth: u32,
    /// Reset generation this thread last honoured.
    pub seen_gen: AtomicU32,
    /// Re-entrancy guard (owner thread only).
    pub busy: u32,
    /// Nodes used in the path table, including the lost node 0.
    pub paths_used: AtomicU32,
    /// OR of `FLAG_*` values seen by this thread.
    pub flags: u32,
    /// Timestamp of this thread's latest hook.
    pub last_ticks: AtomicU64,
    /// Timestamp when the thread exited (valid when `state` is exited).
    pub exit_ticks: AtomicU64,
    /// Exits that did not match the top of the stack and were repaired.
    pub mismatched: AtomicU64,
    /// Calls mode: calls not measured because of stack or thread overruns. Trace mode: hook
    /// events of signal handlers that interrupted a hook of this thread, not recorded.
    pub lost_calls: AtomicU64,
    /// Timestamp when the table was last reset (or the slot claimed).
    pub reset_ticks: AtomicU64,
    /// Trace mode: events appended so far, including overwritten ones (not dropped ones).
    pub trace_written: AtomicU64,
    /// Trace mode: index of the next event in the buffer.
    pub trace_pos: AtomicU64,
    /// Trace mode: events not stored because the buffer was full (`stop` mode).
    pub trace_dropped: AtomicU64,
    /// Trace mode, wrap: full timestamp of the event that last restarted the ring at index 0
    /// (readers restore the older events' timestamps backwards from it).
    pub lap_ticks: AtomicU64,
    /// Calls deeper than `max_path_len` frames, counted on a folded path (the first
    /// `max_path_len - 1` functions and the called one).
    pub folded_calls: AtomicU64,
    /// Times a call path grew past `max_path_len` (each such excursion is one folded path).
    pub folded_paths: AtomicU64,
    /// Trace mode: the ring index at which the owner's fast path stops and takes the general
    /// path (the capacity in `stop`/`wrap` mode; in `stream` mode the end of the room the
    /// recorder has freed, as last seen). Owner thread only.
    pub trace_stop: AtomicU64,
    /// Trace mode, stream: events the recorder has copied out (written only by the recorder,
    /// on its own cache line).
    pub trace_read: AtomicU64,
    /// Reserved.
    pub _reserved: [u64; 6],
    /// Timestamp of the thread's latest `longjmp` (seen by the runtime's wrappers of the
    /// longjmp family; 0: none seen). The frames that jump leaves are closed at this time, so
    /// the time until the program's next hook is the surviving frame's. Owner thread only.
    pub jump_ticks: AtomicU64,
}

/// One open call on a thread's stack (32 bytes).
#[repr(C)]
pub struct Frame {
    /// Path node of this call.
    pub node: u32,
    /// `FRAME_*` flags.
    pub flags: u32,
    /// Function address (`this_fn`).
    pub func: u64,
    /// Timestamp at the end of the entry hook.
    pub entry_ticks: u64,
    /// Ticks spent in completed deeper calls, including their hook cost.
    pub deeper_ticks: u64,
    /// Stack pointer inside the entry hook (detects frames unwound by longjmp).
    pub sp: u64,
}

/// One unique call path: the function at its end plus its parent path (48 bytes).
#[repr(C)]
pub struct PathNode {
    /// Function address at the end of the path.
    pub func: u64,
    /// Parent node index, or [`NO_PARENT`].
    pub parent: u32,
    /// Next node in the same hash chain (0 = end; node 0 is never chained).
    pub next: u32,
    /// Completed calls of this path.
    pub calls: u64,
    /// Own-body ticks, summed with wrapping arithmetic; read as i64 (compensation may drive
    /// near-empty functions slightly negative).
    pub own_ticks: u64,
    /// Most recent child node (lookup cache).
    pub last_child: u32,
    /// Path length (1 for a top-level call).
    pub depth: u32,
    /// The child of the same parent called after this one, the last time (the runtime's
    /// lookup cache for a parent that calls several functions in turn; 0 = none).
    pub next_sibling: u32,
    /// Reserved.
    pub _reserved: u32,
}

/// One trace event (8 bytes), appended by the trace-mode hooks to the thread's buffer:
/// `ticks << 18 | index << 2 | kind` (see [`encode_event`]). The timestamp keeps its low
/// [`EVENT_TICKS_BITS`] bits; readers restore the high bits from the thread's previous event
/// (or the slot's `reset_ticks` / `lap_ticks`) with [`restore_ticks`].
#[repr(C)]
pub struct TraceEvent {
    /// The event word.
    pub word: u64,
}

/// The event word for a timestamp, an index (function, tag or control) and a kind.
#[inline(always)]
pub const fn encode_event(ticks: u64, index: u64, kind: u64) -> u64 {
    (ticks << EVENT_TICKS_SHIFT) | ((index & INDEX_UNKNOWN) << EVENT_KIND_BITS) | (kind & 3)
}

/// The kind of an event word.
#[inline]
pub const fn event_kind(word: u64) -> u64 {
    word & 3
}

/// The index field of an event word.
#[inline]
pub const fn event_index(word: u64) -> u64 {
    (word >> EVENT_KIND_BITS) & INDEX_UNKNOWN
}

/// The full timestamp of an event word, given the full timestamp `prev` of an event of the
/// same thread at most 2^45 ticks before or after it (the previous event, or an anchor).
#[inline]
pub const fn restore_ticks(prev: u64, word: u64) -> u64 {
    let low = word >> EVENT_TICKS_SHIFT;
    let delta = low.wrapping_sub(prev) << EVENT_TICKS_SHIFT;
    prev.wrapping_add(((delta as i64) >> EVENT_TICKS_SHIFT) as u64)
}

/// One inline tag of a trace segment (64 bytes): the label of a `hood_mark` call site.
#[repr(C)]
pub struct TagEntry {
    /// Address of the label string in the process (the key; 0 = free entry).
    pub key: AtomicU64,
    /// Bytes of `label` that are valid, stored after them (0 = not yet published).
    pub len: AtomicU32,
    /// The label, truncated to [`TAG_LABEL_LEN`] bytes.
    pub label: [u8; TAG_LABEL_LEN],
}

/// Size of one thread slot of a trace segment holding `capacity` events, rounded to 4096;
/// `None` on overflow.
pub fn trace_slot_size(capacity: u64) -> Option<u64> {
    let end = (THREAD_HEADER_SIZE as u64).checked_add(capacity.checked_mul(TRACE_EVENT_SIZE)?)?;
    Some(end.checked_add(4095)? & !4095)
}

/// Size of one [`TraceEvent`] in bytes.
pub const TRACE_EVENT_SIZE: u64 = size_of::<TraceEvent>() as u64;
/// Size of [`SegmentHeader`].
pub const SEGMENT_HEADER_SIZE: usize = size_of::<SegmentHeader>();
/// Size of [`ThreadHeader`].
pub const THREAD_HEADER_SIZE: usize = size_of::<ThreadHeader>();
/// Size of [`Frame`].
pub const FRAME_SIZE: usize = size_of::<Frame>();
/// Size of [`PathNode`].
pub const PATH_NODE_SIZE: usize = size_of::<PathNode>();

const _: () = {
    assert!(SEGMENT_HEADER_SIZE == 168 + EXE_PATH_LEN + 48);
    assert!(offset_of!(SegmentHeader, funcs_offset) == 200 + EXE_PATH_LEN);
    assert!(offset_of!(SegmentHeader, funcs_used) == 208 + EXE_PATH_LEN);
    assert!(offset_of!(ThreadHeader, lap_ticks) == 96);
    assert!(offset_of!(SegmentHeader, trace_capacity) == 176 + EXE_PATH_LEN);
    assert!(offset_of!(SegmentHeader, tags_offset) == 192 + EXE_PATH_LEN);
    assert!(size_of::<TagEntry>() == 64);
    assert!(offset_of!(ThreadHeader, trace_written) == 72);
    assert!(offset_of!(SegmentHeader, comp_child_slow_ticks) == 168 + EXE_PATH_LEN);
    assert!(SEGMENT_HEADER_SIZE as u64 <= FREE_SLOTS_OFFSET);
    assert!(offset_of!(SegmentHeader, version) == 8);
    assert!(offset_of!(SegmentHeader, pid) == 16);
    assert!(offset_of!(SegmentHeader, state) == 24);
    assert!(offset_of!(SegmentHeader, ticks_per_sec) == 32);
    assert!(offset_of!(SegmentHeader, start_ticks) == 40);
    assert!(offset_of!(SegmentHeader, exit_ticks) == 64);
    assert!(offset_of!(SegmentHeader, flags) == 72);
    assert!(offset_of!(SegmentHeader, reset_gen) == 76);
    assert!(offset_of!(SegmentHeader, comp_self_ticks) == 88);
    assert!(offset_of!(SegmentHeader, max_depth) == 104);
    assert!(offset_of!(SegmentHeader, threads_used) == 120);
    assert!(offset_of!(SegmentHeader, maps_offset) == 128);
    assert!(offset_of!(SegmentHeader, total_size) == 160);
    assert!(offset_of!(SegmentHeader, exe_path) == 168);
    assert!(THREAD_HEADER_SIZE == 192);
    assert!(offset_of!(ThreadHeader, trace_stop) == 120);
    assert!(offset_of!(ThreadHeader, trace_read) == 128);
    assert!(offset_of!(ThreadHeader, last_ticks) == 32);
    assert!(offset_of!(ThreadHeader, mismatched) == 48);
    assert!(offset_of!(ThreadHeader, reset_ticks) == 64);
    assert!(offset_of!(ThreadHeader, jump_ticks) == 184);
    assert!(FRAME_SIZE == 40);
    assert!(offset_of!(Frame, entry_ticks) == 16);
    assert!(offset_of!(Frame, sp) == 32);
    assert!(PATH_NODE_SIZE == 48);
    assert!(offset_of!(PathNode, calls) == 16);
    assert!(offset_of!(PathNode, own_ticks) == 24);
    assert!(offset_of!(PathNode, last_child) == 32);
    assert!(size_of::<TraceEvent>() == 8);
    assert!(EVENT_TICKS_BITS == 46);
};

/// Sizes of the parts of one thread slot, derived from the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotLayout {
    /// Offset of `Frame[0]` within the slot.
    pub frames_offset: u64,
    /// Offset of `PathNode[0]` within the slot.
    pub nodes_offset: u64,
    /// Offset of the u32 hash index within the slot.
    pub hash_offset: u64,
    /// Total slot size, rounded up to 4096.
    pub slot_size: u64,
}

impl SlotLayout {
    /// Compute the slot layout for the given limits; `None` on arithmetic overflow.
    pub fn new(max_depth: u32, max_paths: u32, hash_size: u32) -> Option<Self> {
        let frames_offset = THREAD_HEADER_SIZE as u64;
        let nodes_offset =
            frames_offset.checked_add((max_depth as u64).checked_mul(FRAME_SIZE as u64)?)?;
        let hash_offset =
            nodes_offset.checked_add((max_paths as u64).checked_mul(PATH_NODE_SIZE as u64)?)?;
        let end = hash_offset.checked_add((hash_size as u64).checked_mul(4)?)?;
        let slot_size = end.checked_add(4095)? & !4095;
        Some(SlotLayout {
            frames_offset,
            nodes_offset,
            hash_offset,
            slot_size,
        })
    }
}

/// Hash index entry for (parent node, function); `mask` is `hash_size - 1`.
#[inline(always)]
pub fn path_hash(parent: u32, func: u64, mask: u32) -> u32 {
    let x = (func ^ (parent as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_mul(0xD6E8_FEB8_6659_FD93);
    ((x >> 32) as u32) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_words_round_trip_and_timestamps_are_restored() {
        let t = 0x0123_4567_89ab_cdefu64;
        let w = encode_event(t, 0x1234, KIND_EXIT);
        assert_eq!((event_kind(w), event_index(w)), (KIND_EXIT, 0x1234));
        // From an anchor before or after it (up to 2^45 ticks either way), across a wrap of
        // the kept low bits.
        for d in [0u64, 1, 1000, (1 << 45) - 1] {
            assert_eq!(restore_ticks(t - d, w), t);
            assert_eq!(restore_ticks(t + d, w), t);
        }
        let wrap = (1u64 << 46) * 7 - 3;
        let w2 = encode_event(wrap + 10, 5, KIND_ENTRY);
        assert_eq!(restore_ticks(wrap, w2), wrap + 10);
        assert_eq!(event_index(encode_event(1, 1 << 20, KIND_MARK)), 0);
    }
}
