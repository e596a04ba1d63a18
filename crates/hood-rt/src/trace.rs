//! Trace mode (issue 5, McRae's event tags in software): each hook appends one 8-byte [`TraceEvent`] word
//! (timestamp, function/tag index, kind) to the calling thread's buffer. Like the calls hooks: no allocation, locks, syscalls or panics on
//! the hook path; one timestamp read per event; only the owner thread writes its buffer.

use core::sync::atomic::{compiler_fence, Ordering};

use hood_abi::{
    encode_event, SegmentHeader, TagEntry, ThreadHeader, TraceEvent, FLAG_TAG_OVERRUN,
    FLAG_TRACE_FULL, FLAG_TRACE_WRAPPED, INDEX_UNKNOWN, MAX_TAGS, TAG_LABEL_LEN,
    THREAD_HEADER_SIZE, TRACE_FULL_STOP, TRACE_FULL_STREAM,
};

use crate::clock;
use crate::hook::Slot;

/// Signal handlers and the hooks. A hook reads the clock, then stores its event at the
/// thread's position and advances it: a signal handler that ran in between would write its own
/// events at that position first (with later times), and the interrupted hook would then put
/// an earlier time after them, or over them. So a hook marks its thread busy (the calls
/// mode's re-entrancy flag, only ever touched by the owner thread: a compiler fence orders it,
/// as the handler runs on the same thread) and the hooks of a handler that interrupts one in
/// that window of a few instructions are not recorded, its entries and exits alike (its time
/// counts to the interrupted function, as in calls mode) but counted in `lost_calls`. Events
/// keep their place and time never runs backwards in a thread's buffer.
///
/// # Safety
/// `t` is the calling thread's initialised slot in a live segment.
#[inline(always)]
unsafe fn enter_busy(t: *mut ThreadHeader) -> bool {
    // SAFETY: `t` is this thread's header; `busy` is only ever touched by this thread.
    unsafe {
        if (*t).busy != 0 {
            nested(t);
            return false;
        }
        (*t).busy = 1;
    }
    compiler_fence(Ordering::SeqCst);
    true
}

/// A hook inside a hook (a signal handler's): counted, not recorded.
///
/// # Safety
/// As for [`enter_busy`].
#[cold]
#[inline(never)]
unsafe fn nested(t: *mut ThreadHeader) {
    // SAFETY: `t` is this thread's header.
    let n = unsafe { &(*t).lost_calls };
    n.store(n.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// Leave the hook [`enter_busy`] entered.
///
/// # Safety
/// As for [`enter_busy`].
#[inline(always)]
unsafe fn leave_busy(t: *mut ThreadHeader) {
    compiler_fence(Ordering::SeqCst);
    // SAFETY: `t` is this thread's header; `busy` is only ever touched by this thread.
    unsafe { (*t).busy = 0 };
}

/// Append one event (`index`: function, tag or control index).
///
/// # Safety
/// `s` is this thread's initialised slot in the live trace-mode segment: the thread header
/// followed by `trace_capacity` event words, which only this thread writes.
#[inline(always)]
pub unsafe fn event(s: &Slot, index: u64, kind: u64) {
    // SAFETY: `s.t` is this thread's header (the caller's promise).
    if !unsafe { enter_busy(s.t) } {
        return;
    }
    // SAFETY: the caller's promise; this thread is now inside a hook.
    unsafe { event_unguarded(s, index, kind) };
    // SAFETY: as for `enter_busy`.
    unsafe { leave_busy(s.t) };
}

/// [`event`] inside the busy mark.
///
/// # Safety
/// As for [`event`].
#[inline(always)]
unsafe fn event_unguarded(s: &Slot, index: u64, kind: u64) {
    let now = clock::now();
    // SAFETY: `h` is the live segment header and `t` this thread's header.
    let (h, t) = unsafe { (&*s.h, &*s.t) };
    let mut pos = t.trace_pos.load(Ordering::Relaxed);
    if pos >= t.trace_stop.load(Ordering::Relaxed) {
        match h.trace_full {
            // SAFETY: the caller's promise, which is `room`'s.
            TRACE_FULL_STREAM => match unsafe { room(s, pos) } {
                Some(p) => pos = p,
                // SAFETY: the caller's promise, which is `full`'s.
                None => return unsafe { full(s) },
            },
            // SAFETY: as above.
            TRACE_FULL_STOP => return unsafe { full(s) },
            _ => {
                // SAFETY: the caller's promise, which is `wrapped`'s.
                unsafe { wrapped(s, now) };
                pos = 0;
            }
        }
    }
    // SAFETY: `pos < trace_stop <= trace_capacity` (this thread keeps `trace_stop` within the
    // buffer; `room` and the wrap above give an index inside it).
    unsafe { put(s.t, pos, encode_event(now, index, kind)) };
}

/// Write event `word` at ring index `pos` and publish it: the next index, and one more event
/// written for the recorder.
///
/// # Safety
/// `t` is this thread's initialised header in the live trace-mode segment and `pos <
/// trace_stop <= trace_capacity`: an event word of the slot, which only this thread writes.
#[inline(always)]
unsafe fn put(t: *mut ThreadHeader, pos: u64, word: u64) {
    // SAFETY: the caller's promise: the event word `pos` lies after the header, inside the
    // slot.
    unsafe {
        let ev = (t as *mut u8)
            .add(THREAD_HEADER_SIZE)
            .cast::<TraceEvent>()
            .add(pos as usize);
        (*ev).word = word;
    }
    // SAFETY: `t` is this thread's header.
    let th = unsafe { &*t };
    th.trace_pos.store(pos.wrapping_add(1), Ordering::Relaxed);
    // Release: the recorder loads `trace_written` (acquire) before it copies the event words.
    th.trace_written.store(
        th.trace_written.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Release,
    );
}

/// Stream mode, at the cached stop index: the ring index to write the next event at, with
/// `trace_stop` moved to the end of the room the recorder has freed since; `None` when the
/// ring holds `capacity` events the recorder has not taken (the event is then dropped).
///
/// # Safety
/// As for [`event`].
#[cold]
#[inline(never)]
unsafe fn room(s: &Slot, pos: u64) -> Option<u64> {
    // SAFETY: `h` is the live segment header and `t` this thread's header.
    let (cap, t) = unsafe { ((*s.h).trace_capacity, &*s.t) };
    let pos = if pos >= cap { 0 } else { pos };
    t.trace_pos.store(pos, Ordering::Relaxed);
    let written = t.trace_written.load(Ordering::Relaxed);
    // Acquire: pairs with the recorder's release store after it copied the events out, so
    // the slots it freed are not overwritten before its copy read them.
    let read = t.trace_read.load(Ordering::Acquire);
    let unread = written.wrapping_sub(read);
    if unread >= cap {
        // Full: the next event comes back here (the index may just have wrapped to 0).
        t.trace_stop.store(pos, Ordering::Relaxed);
        return None;
    }
    let free = cap - unread;
    t.trace_stop
        .store(pos + free.min(cap - pos), Ordering::Relaxed);
    Some(pos)
}

/// The common case of [`event`] on the TSC clock: false (nothing written) when the buffer is
/// full or the hook is a signal handler's inside another hook, which the caller then hands to
/// the general path ([`event`] counts the latter, see [`enter_busy`]). Makes no call, so the
/// hook that inlines it needs no stack frame.
///
/// # Safety
/// `t` is this thread's initialised slot in the live trace-mode segment (as for [`event`]).
#[inline(always)]
pub unsafe fn event_fast(t: *mut ThreadHeader, index: u64, kind: u64) -> bool {
    // SAFETY: `t` is this thread's header; `busy` is only ever touched by this thread.
    unsafe {
        if (*t).busy != 0 {
            return false;
        }
        (*t).busy = 1;
    }
    compiler_fence(Ordering::SeqCst);
    let now = clock::tsc();
    // SAFETY: `t` is this thread's header.
    let th = unsafe { &*t };
    let pos = th.trace_pos.load(Ordering::Relaxed);
    if pos >= th.trace_stop.load(Ordering::Relaxed) {
        // SAFETY: as for `enter_busy`.
        unsafe { leave_busy(t) };
        return false;
    }
    // SAFETY: `t` is this thread's header and `pos < trace_stop <= trace_capacity`.
    unsafe { put(t, pos, encode_event(now, index, kind)) };
    // SAFETY: as for `enter_busy`.
    unsafe { leave_busy(t) };
    true
}

/// Count an event dropped because the buffer is full (and flag the first).
///
/// # Safety
/// As for [`event`].
#[cold]
#[inline(never)]
unsafe fn full(s: &Slot) {
    // SAFETY: `t` is this thread's header, whose plain fields only this thread writes.
    let t = unsafe { &mut *s.t };
    t.trace_dropped.store(
        t.trace_dropped.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
    if t.flags & FLAG_TRACE_FULL == 0 {
        t.flags |= FLAG_TRACE_FULL;
        // SAFETY: `h` is the live segment header.
        unsafe { (*s.h).flags.fetch_or(FLAG_TRACE_FULL, Ordering::Relaxed) };
    }
}

/// Wrap mode: note the lap (the buffer is about to be written from index 0 again).
///
/// # Safety
/// As for [`event`].
#[cold]
#[inline(never)]
unsafe fn wrapped(s: &Slot, now: u64) {
    // SAFETY: `t` is this thread's header, whose plain fields only this thread writes.
    let t = unsafe { &mut *s.t };
    // The event about to be written at index 0 has this full timestamp: readers restore the
    // older events' timestamps backwards from it.
    t.lap_ticks.store(now, Ordering::Relaxed);
    if t.flags & FLAG_TRACE_WRAPPED == 0 {
        t.flags |= FLAG_TRACE_WRAPPED;
        // SAFETY: `h` is the live segment header.
        unsafe { (*s.h).flags.fetch_or(FLAG_TRACE_WRAPPED, Ordering::Relaxed) };
    }
}

/// Index of the inline tag for the label at `label` (registering it on first use), or
/// [`INDEX_UNKNOWN`] when the table is full. Lock-free: entries are claimed by CAS on the key.
///
/// # Safety
/// `h` is the live trace-mode segment (its tag table holds `MAX_TAGS` entries at
/// `tags_offset`), and `label` is null or a NUL-terminated string.
pub unsafe fn tag_index(h: *mut SegmentHeader, label: *const u8) -> u64 {
    let key = label as u64;
    if key == 0 {
        return INDEX_UNKNOWN;
    }
    // SAFETY: a trace-mode segment has its tag table at `tags_offset`, inside the mapping.
    let tags = unsafe {
        (h as *mut u8)
            .add((*h).tags_offset as usize)
            .cast::<TagEntry>()
    };
    let mut i = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32) % MAX_TAGS;
    for _ in 0..MAX_TAGS {
        // SAFETY: `i < MAX_TAGS` (reduced modulo it): an entry of the table. Its label is
        // written only by the thread whose CAS claims the key, below.
        let e = unsafe { &mut *tags.add(i as usize) };
        let k = e.key.load(Ordering::Acquire);
        if k == key {
            return i as u64;
        }
        if k == 0
            && e.key
                .compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            let mut n = 0;
            // SAFETY: `label` is a NUL-terminated string: bytes up to its NUL are readable,
            // and the loop stops at the NUL.
            while n < TAG_LABEL_LEN && unsafe { *label.add(n) } != 0 {
                // SAFETY: as above.
                e.label[n] = unsafe { *label.add(n) };
                n += 1;
            }
            e.len.store(n.max(1) as u32, Ordering::Release);
            // SAFETY: `h` is the live segment header.
            unsafe { (*h).tags_used.fetch_add(1, Ordering::Relaxed) };
            return i as u64;
        }
        if e.key.load(Ordering::Acquire) == key {
            return i as u64;
        }
        i = (i + 1) % MAX_TAGS;
    }
    // SAFETY: `h` is the live segment header.
    unsafe { (*h).flags.fetch_or(FLAG_TAG_OVERRUN, Ordering::Relaxed) };
    INDEX_UNKNOWN
}
