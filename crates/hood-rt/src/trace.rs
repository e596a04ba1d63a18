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
#[inline(always)]
unsafe fn enter_busy(t: *mut ThreadHeader) -> bool {
    if (*t).busy != 0 {
        nested(t);
        return false;
    }
    (*t).busy = 1;
    compiler_fence(Ordering::SeqCst);
    true
}

/// A hook inside a hook (a signal handler's): counted, not recorded.
#[cold]
#[inline(never)]
unsafe fn nested(t: *mut ThreadHeader) {
    let n = &(*t).lost_calls;
    n.store(n.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

#[inline(always)]
unsafe fn leave_busy(t: *mut ThreadHeader) {
    compiler_fence(Ordering::SeqCst);
    (*t).busy = 0;
}

/// Append one event (`index`: function, tag or control index). Caller guarantees `s` is this
/// thread's initialised trace slot.
#[inline(always)]
pub unsafe fn event(s: &Slot, index: u64, kind: u64) {
    if !enter_busy(s.t) {
        return;
    }
    event_unguarded(s, index, kind);
    leave_busy(s.t);
}

#[inline(always)]
unsafe fn event_unguarded(s: &Slot, index: u64, kind: u64) {
    let now = clock::now();
    let h = &*s.h;
    let t = &*s.t;
    let mut pos = t.trace_pos.load(Ordering::Relaxed);
    if pos >= t.trace_stop.load(Ordering::Relaxed) {
        match h.trace_full {
            TRACE_FULL_STREAM => match room(s, pos) {
                Some(p) => pos = p,
                None => return full(s),
            },
            TRACE_FULL_STOP => return full(s),
            _ => {
                wrapped(s, now);
                pos = 0;
            }
        }
    }
    let ev = (s.t as *mut u8)
        .add(THREAD_HEADER_SIZE)
        .cast::<TraceEvent>()
        .add(pos as usize);
    (*ev).word = encode_event(now, index, kind);
    t.trace_pos.store(pos.wrapping_add(1), Ordering::Relaxed);
    // Release: the recorder loads `trace_written` (acquire) before it copies the event words.
    t.trace_written.store(
        t.trace_written.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Release,
    );
}

/// Stream mode, at the cached stop index: the ring index to write the next event at, with
/// `trace_stop` moved to the end of the room the recorder has freed since; `None` when the
/// ring holds `capacity` events the recorder has not taken (the event is then dropped).
#[cold]
#[inline(never)]
unsafe fn room(s: &Slot, pos: u64) -> Option<u64> {
    let cap = (*s.h).trace_capacity;
    let t = &*s.t;
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
/// the general path ([`event`] counts the latter, see [`enter_busy`]). Caller guarantees `t`
/// is this thread's initialised slot in the live trace-mode segment. Makes no call, so the
/// hook that inlines it needs no stack frame.
#[inline(always)]
pub unsafe fn event_fast(t: *mut ThreadHeader, index: u64, kind: u64) -> bool {
    if (*t).busy != 0 {
        return false;
    }
    (*t).busy = 1;
    compiler_fence(Ordering::SeqCst);
    let now = clock::tsc();
    let th = &*t;
    let pos = th.trace_pos.load(Ordering::Relaxed);
    if pos >= th.trace_stop.load(Ordering::Relaxed) {
        leave_busy(t);
        return false;
    }
    let ev = (t as *mut u8)
        .add(THREAD_HEADER_SIZE)
        .cast::<TraceEvent>()
        .add(pos as usize);
    (*ev).word = encode_event(now, index, kind);
    th.trace_pos.store(pos.wrapping_add(1), Ordering::Relaxed);
    th.trace_written.store(
        th.trace_written.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Release,
    );
    leave_busy(t);
    true
}

#[cold]
#[inline(never)]
unsafe fn full(s: &Slot) {
    let t = &mut *s.t;
    t.trace_dropped.store(
        t.trace_dropped.load(Ordering::Relaxed).wrapping_add(1),
        Ordering::Relaxed,
    );
    if t.flags & FLAG_TRACE_FULL == 0 {
        t.flags |= FLAG_TRACE_FULL;
        (*s.h).flags.fetch_or(FLAG_TRACE_FULL, Ordering::Relaxed);
    }
}

#[cold]
#[inline(never)]
unsafe fn wrapped(s: &Slot, now: u64) {
    let t = &mut *s.t;
    // The event about to be written at index 0 has this full timestamp: readers restore the
    // older events' timestamps backwards from it.
    t.lap_ticks.store(now, Ordering::Relaxed);
    if t.flags & FLAG_TRACE_WRAPPED == 0 {
        t.flags |= FLAG_TRACE_WRAPPED;
        (*s.h).flags.fetch_or(FLAG_TRACE_WRAPPED, Ordering::Relaxed);
    }
}

/// Index of the inline tag for the label at `label` (registering it on first use), or
/// [`INDEX_UNKNOWN`] when the table is full. Lock-free: entries are claimed by CAS on the key.
pub unsafe fn tag_index(h: *mut SegmentHeader, label: *const u8) -> u64 {
    let key = label as u64;
    if key == 0 {
        return INDEX_UNKNOWN;
    }
    let tags = (h as *mut u8)
        .add((*h).tags_offset as usize)
        .cast::<TagEntry>();
    let mut i = ((key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32) % MAX_TAGS;
    for _ in 0..MAX_TAGS {
        let e = &mut *tags.add(i as usize);
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
            while n < TAG_LABEL_LEN && *label.add(n) != 0 {
                e.label[n] = *label.add(n);
                n += 1;
            }
            e.len.store(n.max(1) as u32, Ordering::Release);
            (*h).tags_used.fetch_add(1, Ordering::Relaxed);
            return i as u64;
        }
        if e.key.load(Ordering::Acquire) == key {
            return i as u64;
        }
        i = (i + 1) % MAX_TAGS;
    }
    (*h).flags.fetch_or(FLAG_TAG_OVERRUN, Ordering::Relaxed);
    INDEX_UNKNOWN
}
