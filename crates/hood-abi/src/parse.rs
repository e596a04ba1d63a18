//! Safe decoding of segment bytes copied by a reader. Every size and offset read from the
//! segment is validated against the bytes actually present; nothing is trusted.

use core::fmt;
use core::mem::offset_of;

use crate::layout::*;

/// Why a segment's bytes were rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Fewer bytes than the structure needs.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        need: u64,
        /// Bytes present.
        have: u64,
    },
    /// The first 8 bytes are not [`MAGIC`].
    BadMagic(u64),
    /// A layout version this reader does not know.
    BadVersion(u32),
    /// A header field is outside sane bounds.
    BadField(&'static str, u64),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated { what, need, have } => {
                write!(f, "truncated {what}: need {need} bytes, have {have}")
            }
            ParseError::BadMagic(m) => write!(f, "bad magic {m:#018x} (not a hood-rt segment)"),
            ParseError::BadVersion(v) => {
                write!(
                    f,
                    "layout version {v}, this hood reads version {LAYOUT_VERSION}"
                )
            }
            ParseError::BadField(name, v) => write!(f, "implausible header field {name} = {v}"),
        }
    }
}

impl std::error::Error for ParseError {}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(off..off + 4) {
        a.copy_from_slice(s);
    }
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(off..off + 8) {
        a.copy_from_slice(s);
    }
    u64::from_le_bytes(a)
}

fn need(b: &[u8], n: u64, what: &'static str) -> Result<(), ParseError> {
    if (b.len() as u64) < n {
        return Err(ParseError::Truncated {
            what,
            need: n,
            have: b.len() as u64,
        });
    }
    Ok(())
}

/// A decoded, validated segment header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderView {
    /// `MODE_*`.
    pub mode: u32,
    /// Owner pid.
    pub pid: u32,
    /// Parent pid at creation.
    pub ppid: u32,
    /// `STATE_*`.
    pub state: u32,
    /// `CLOCK_*`.
    pub clock: u32,
    /// Ticks per second.
    pub ticks_per_sec: u64,
    /// Timestamp at creation.
    pub start_ticks: u64,
    /// CLOCK_MONOTONIC ns at creation.
    pub start_mono_ns: u64,
    /// CLOCK_REALTIME ns at creation.
    pub start_realtime_ns: u64,
    /// Timestamp at exit (when `state` is exited).
    pub exit_ticks: u64,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// Reset generation requested.
    pub reset_gen: u32,
    /// Compensation on.
    pub compensate: bool,
    /// Thread slot limit.
    pub max_threads: u32,
    /// Per-call self compensation in ticks.
    pub comp_self_ticks: u64,
    /// Per-child compensation in ticks.
    pub comp_child_ticks: u64,
    /// Per-child compensation in ticks after a last-child cache miss.
    pub comp_child_slow_ticks: u64,
    /// Stack depth limit.
    pub max_depth: u32,
    /// Path table size.
    pub max_paths: u32,
    /// Path length limit.
    pub max_path_len: u32,
    /// Hash index size.
    pub hash_size: u32,
    /// Thread slots in use (clamped to `max_threads`).
    pub threads_used: u32,
    /// Threads that found no slot left and were not measured (the claims past
    /// `max_threads`).
    pub threads_unmeasured: u32,
    /// Maps area offset.
    pub maps_offset: u64,
    /// Maps text length.
    pub maps_len: u64,
    /// Thread slot 0 offset.
    pub threads_offset: u64,
    /// Thread slot size.
    pub thread_slot_size: u64,
    /// Segment size.
    pub total_size: u64,
    /// Executable path.
    pub exe_path: String,
    /// Derived slot layout (calls mode; in trace mode only `slot_size` is meaningful).
    pub slot: SlotLayout,
    /// Trace mode: events per thread buffer.
    pub trace_capacity: u64,
    /// Trace mode: `TRACE_FULL_*`.
    pub trace_full: u32,
    /// Trace mode: inline tags registered (clamped to [`MAX_TAGS`]).
    pub tags_used: u32,
    /// Trace mode: tag table offset.
    pub tags_offset: u64,
    /// Trace mode: function table offset.
    pub funcs_offset: u64,
    /// Trace mode: function table entries claimed (clamped to `max_funcs`).
    pub funcs_used: u32,
    /// Trace mode: function table size.
    pub max_funcs: u32,
}

/// Byte offset of the `reset_gen` field (readers bump it in place to request a reset).
pub const RESET_GEN_OFFSET: usize = offset_of!(SegmentHeader, reset_gen);
/// Byte offset of the segment `state` field.
pub const STATE_OFFSET: usize = offset_of!(SegmentHeader, state);
/// Byte offset of the `threads_used` field.
pub const THREADS_USED_OFFSET: usize = offset_of!(SegmentHeader, threads_used);
/// Byte offset of the `flags` field.
pub const FLAGS_OFFSET: usize = offset_of!(SegmentHeader, flags);
/// Byte offset of `funcs_used` (trace mode; readers poll it while the process runs).
pub const FUNCS_USED_OFFSET: usize = offset_of!(SegmentHeader, funcs_used);

impl HeaderView {
    /// Decode and validate the header at the start of `b` (at least the header area).
    pub fn parse(b: &[u8]) -> Result<Self, ParseError> {
        need(b, SEGMENT_HEADER_SIZE as u64, "segment header")?;
        let magic = u64_at(b, 0);
        if magic != MAGIC {
            return Err(ParseError::BadMagic(magic));
        }
        let version = u32_at(b, offset_of!(SegmentHeader, version));
        if version != LAYOUT_VERSION {
            return Err(ParseError::BadVersion(version));
        }
        let g32 = |o: usize| u32_at(b, o);
        let g64 = |o: usize| u64_at(b, o);
        let exe_len = (g32(offset_of!(SegmentHeader, exe_path_len)) as usize).min(EXE_PATH_LEN);
        let exe_off = offset_of!(SegmentHeader, exe_path);
        let exe_path = String::from_utf8_lossy(&b[exe_off..exe_off + exe_len]).into_owned();
        let max_threads = g32(offset_of!(SegmentHeader, max_threads));
        let mut v = HeaderView {
            mode: g32(offset_of!(SegmentHeader, mode)),
            pid: g32(offset_of!(SegmentHeader, pid)),
            ppid: g32(offset_of!(SegmentHeader, ppid)),
            state: g32(offset_of!(SegmentHeader, state)),
            clock: g32(offset_of!(SegmentHeader, clock)),
            ticks_per_sec: g64(offset_of!(SegmentHeader, ticks_per_sec)),
            start_ticks: g64(offset_of!(SegmentHeader, start_ticks)),
            start_mono_ns: g64(offset_of!(SegmentHeader, start_mono_ns)),
            start_realtime_ns: g64(offset_of!(SegmentHeader, start_realtime_ns)),
            exit_ticks: g64(offset_of!(SegmentHeader, exit_ticks)),
            flags: g32(FLAGS_OFFSET),
            reset_gen: g32(RESET_GEN_OFFSET),
            compensate: g32(offset_of!(SegmentHeader, compensate)) != 0,
            max_threads,
            comp_self_ticks: g64(offset_of!(SegmentHeader, comp_self_ticks)),
            comp_child_ticks: g64(offset_of!(SegmentHeader, comp_child_ticks)),
            comp_child_slow_ticks: g64(offset_of!(SegmentHeader, comp_child_slow_ticks)),
            max_depth: g32(offset_of!(SegmentHeader, max_depth)),
            max_paths: g32(offset_of!(SegmentHeader, max_paths)),
            max_path_len: g32(offset_of!(SegmentHeader, max_path_len)),
            hash_size: g32(offset_of!(SegmentHeader, hash_size)),
            threads_used: g32(offset_of!(SegmentHeader, threads_used)).min(max_threads),
            threads_unmeasured: g32(offset_of!(SegmentHeader, threads_used))
                .saturating_sub(max_threads),
            maps_offset: g64(offset_of!(SegmentHeader, maps_offset)),
            maps_len: g64(offset_of!(SegmentHeader, maps_len)),
            threads_offset: g64(offset_of!(SegmentHeader, threads_offset)),
            thread_slot_size: g64(offset_of!(SegmentHeader, thread_slot_size)),
            total_size: g64(offset_of!(SegmentHeader, total_size)),
            exe_path,
            slot: SlotLayout {
                frames_offset: 0,
                nodes_offset: 0,
                hash_offset: 0,
                slot_size: 0,
            },
            trace_capacity: g64(offset_of!(SegmentHeader, trace_capacity)),
            trace_full: g32(offset_of!(SegmentHeader, trace_full)),
            tags_used: g32(offset_of!(SegmentHeader, tags_used)).min(MAX_TAGS),
            tags_offset: g64(offset_of!(SegmentHeader, tags_offset)),
            funcs_offset: g64(offset_of!(SegmentHeader, funcs_offset)),
            funcs_used: g32(offset_of!(SegmentHeader, funcs_used)),
            max_funcs: g32(offset_of!(SegmentHeader, max_funcs)),
        };
        if v.mode != MODE_CALLS && v.mode != MODE_TRACE {
            return Err(ParseError::BadField("mode", v.mode as u64));
        }
        if v.ticks_per_sec == 0 {
            return Err(ParseError::BadField("ticks_per_sec", 0));
        }
        if v.mode == MODE_TRACE {
            v.validate_trace()?;
            return Ok(v);
        }
        if !v.hash_size.is_power_of_two() {
            return Err(ParseError::BadField("hash_size", v.hash_size as u64));
        }
        if v.max_paths == 0 || v.max_depth == 0 {
            return Err(ParseError::BadField("max_paths", v.max_paths as u64));
        }
        v.slot = SlotLayout::new(v.max_depth, v.max_paths, v.hash_size)
            .ok_or(ParseError::BadField("max_paths", v.max_paths as u64))?;
        if v.slot.slot_size != v.thread_slot_size {
            return Err(ParseError::BadField("thread_slot_size", v.thread_slot_size));
        }
        let slots_end = (v.max_threads as u64)
            .checked_mul(v.thread_slot_size)
            .and_then(|s| s.checked_add(v.threads_offset));
        if slots_end != Some(v.total_size) || v.threads_offset < HEADER_AREA_SIZE {
            return Err(ParseError::BadField("total_size", v.total_size));
        }
        if v.maps_offset.checked_add(MAPS_AREA_SIZE) != Some(v.threads_offset) {
            return Err(ParseError::BadField("maps_offset", v.maps_offset));
        }
        v.maps_len = v.maps_len.min(MAPS_AREA_SIZE);
        Ok(v)
    }

    fn validate_trace(&mut self) -> Result<(), ParseError> {
        if self.trace_capacity == 0 || self.trace_full > TRACE_FULL_STREAM {
            return Err(ParseError::BadField("trace_capacity", self.trace_capacity));
        }
        let slot = trace_slot_size(self.trace_capacity)
            .ok_or(ParseError::BadField("trace_capacity", self.trace_capacity))?;
        if slot != self.thread_slot_size {
            return Err(ParseError::BadField(
                "thread_slot_size",
                self.thread_slot_size,
            ));
        }
        self.slot = SlotLayout {
            frames_offset: THREAD_HEADER_SIZE as u64,
            nodes_offset: THREAD_HEADER_SIZE as u64,
            hash_offset: THREAD_HEADER_SIZE as u64,
            slot_size: slot,
        };
        let slots_end = (self.max_threads as u64)
            .checked_mul(slot)
            .and_then(|s| s.checked_add(self.threads_offset));
        if slots_end != Some(self.total_size) || self.threads_offset < HEADER_AREA_SIZE {
            return Err(ParseError::BadField("total_size", self.total_size));
        }
        if self.maps_offset.checked_add(MAPS_AREA_SIZE) != Some(self.tags_offset)
            || self.tags_offset.checked_add(TAGS_AREA_SIZE) != Some(self.funcs_offset)
        {
            return Err(ParseError::BadField("tags_offset", self.tags_offset));
        }
        if self.funcs_offset.checked_add(FUNCS_AREA_SIZE) != Some(self.threads_offset)
            || self.max_funcs > MAX_FUNCS
        {
            return Err(ParseError::BadField("funcs_offset", self.funcs_offset));
        }
        self.funcs_used = self.funcs_used.min(self.max_funcs);
        self.maps_len = self.maps_len.min(MAPS_AREA_SIZE);
        Ok(())
    }

    /// Byte offset of thread slot `i` in the segment.
    pub fn slot_offset(&self, i: u32) -> u64 {
        self.threads_offset + i as u64 * self.thread_slot_size
    }

    /// Bytes of a thread slot a reader needs: header, frames and the used nodes.
    pub fn slot_read_len(&self, paths_used: u32) -> u64 {
        self.slot.nodes_offset + paths_used.min(self.max_paths) as u64 * PATH_NODE_SIZE as u64
    }
}

/// Events of a trace thread slot a reader needs to copy: `(bytes from the slot start)` for a
/// slot whose header bytes are `th` (at least [`THREAD_HEADER_SIZE`]).
pub fn trace_slot_read_len(h: &HeaderView, th: &[u8]) -> u64 {
    if h.trace_full == TRACE_FULL_STREAM {
        // The recorder copied the events out as they came (see [`stream_span`]).
        return THREAD_HEADER_SIZE as u64;
    }
    let written = u64_at(th, offset_of!(ThreadHeader, trace_written));
    THREAD_HEADER_SIZE as u64 + written.min(h.trace_capacity) * TRACE_EVENT_SIZE
}

/// Stream mode: which events of a thread's ring a recorder that has taken `taken` of them
/// copies next, given the slot's header bytes `th`. Returns `(first, count, skipped)`: copy
/// `count` events starting at event number `first` (ring index `first % capacity`, possibly
/// wrapping to index 0); `skipped` events were overwritten before they could be taken (never,
/// unless the ring's owner broke the protocol). `count` is at most the capacity.
pub fn stream_span(h: &HeaderView, th: &[u8], taken: u64) -> (u64, u64, u64) {
    let written = u64_at(th, offset_of!(ThreadHeader, trace_written));
    let cap = h.trace_capacity;
    let new = written.saturating_sub(taken);
    if new > cap {
        (written - cap, cap, new - cap)
    } else {
        (taken, new, 0)
    }
}

/// Decode the function table (`b` = the first `8 * funcs_used` bytes at `funcs_offset`):
/// the function address per index; 0 where an index was claimed but its address not yet
/// stored (a process killed at that instant).
pub fn parse_funcs(h: &HeaderView, b: &[u8]) -> Vec<u64> {
    (0..h.funcs_used as usize)
        .map(|i| u64_at(b, i * 8))
        .collect()
}

/// A decoded trace thread slot: its events in recording order (oldest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceThreadView {
    /// Kernel thread id.
    pub tid: u32,
    /// `THREAD_*` state.
    pub state: u32,
    /// Exit timestamp (valid when exited).
    pub exit_ticks: u64,
    /// Events appended, including overwritten ones.
    pub written: u64,
    /// Events dropped because the buffer was full (stop mode), or because the recorder had
    /// not yet taken the ring's events (stream mode).
    pub dropped: u64,
    /// Events overwritten by newer ones (wrap mode).
    pub overwritten: u64,
    /// Hook events of signal handlers that interrupted one of this thread's hooks: not
    /// recorded (their time counts to the interrupted function).
    pub nested: u64,
    /// Event words ([`encode_event`]), oldest first (none in stream mode: the recorder took
    /// them while the program ran).
    pub events: Vec<u64>,
    /// A full timestamp within 2^45 ticks of the first event, to restore the events' full
    /// timestamps from with [`restore_ticks`] (each from the one before).
    pub anchor_ticks: u64,
}

impl TraceThreadView {
    /// Decode a trace slot copied from `slot_offset(i)`; `b` needs [`trace_slot_read_len`]
    /// bytes. A write position outside the buffer is rejected.
    pub fn parse(h: &HeaderView, b: &[u8]) -> Result<Self, ParseError> {
        need(b, THREAD_HEADER_SIZE as u64, "thread header")?;
        let written = u64_at(b, offset_of!(ThreadHeader, trace_written));
        let pos = u64_at(b, offset_of!(ThreadHeader, trace_pos));
        let cap = h.trace_capacity;
        if h.trace_full == TRACE_FULL_STREAM {
            return Ok(TraceThreadView {
                tid: u32_at(b, offset_of!(ThreadHeader, tid)),
                state: u32_at(b, offset_of!(ThreadHeader, state)),
                exit_ticks: u64_at(b, offset_of!(ThreadHeader, exit_ticks)),
                written,
                dropped: u64_at(b, offset_of!(ThreadHeader, trace_dropped)),
                overwritten: 0,
                nested: u64_at(b, offset_of!(ThreadHeader, lost_calls)),
                events: Vec::new(),
                anchor_ticks: u64_at(b, offset_of!(ThreadHeader, reset_ticks)),
            });
        }
        let stored = written.min(cap);
        need(
            b,
            THREAD_HEADER_SIZE as u64 + stored * TRACE_EVENT_SIZE,
            "trace buffer",
        )?;
        // A process killed between the two stores may leave pos one ahead of written: written
        // alone decides until the buffer wrapped.
        if pos > cap {
            return Err(ParseError::BadField("trace_pos", pos));
        }
        let ev = |i: u64| {
            u64_at(
                b,
                THREAD_HEADER_SIZE + i as usize * TRACE_EVENT_SIZE as usize,
            )
        };
        let reset = u64_at(b, offset_of!(ThreadHeader, reset_ticks));
        let (events, anchor_ticks): (Vec<u64>, u64) = if written <= cap {
            ((0..written).map(ev).collect(), reset)
        } else {
            // Wrapped: the oldest event was written before the latest lap started.
            let start = if pos == cap { 0 } else { pos };
            let lap = u64_at(b, offset_of!(ThreadHeader, lap_ticks));
            let anchor = if start < cap {
                restore_ticks(lap, ev(start))
            } else {
                lap
            };
            ((start..cap).chain(0..start).map(ev).collect(), anchor)
        };
        Ok(TraceThreadView {
            tid: u32_at(b, offset_of!(ThreadHeader, tid)),
            state: u32_at(b, offset_of!(ThreadHeader, state)),
            exit_ticks: u64_at(b, offset_of!(ThreadHeader, exit_ticks)),
            written,
            dropped: u64_at(b, offset_of!(ThreadHeader, trace_dropped)),
            overwritten: written.saturating_sub(cap),
            nested: u64_at(b, offset_of!(ThreadHeader, lost_calls)),
            events,
            anchor_ticks,
        })
    }
}

/// Decode the inline tag table (`b` = [`TAGS_AREA_SIZE`] bytes at `tags_offset`): label per
/// tag index; entries not yet published are `None`.
pub fn parse_tags(h: &HeaderView, b: &[u8]) -> Vec<Option<String>> {
    (0..MAX_TAGS as usize)
        .map(|i| {
            let o = i * 64;
            let key = u64_at(b, o);
            let len = (u32_at(b, o + 8) as usize).min(TAG_LABEL_LEN);
            let label = b.get(o + 12..o + 12 + len)?;
            (key != 0 && len > 0).then(|| String::from_utf8_lossy(label).into_owned())
        })
        .take(if h.tags_used == 0 {
            0
        } else {
            MAX_TAGS as usize
        })
        .collect()
}

/// A decoded stack frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameView {
    /// Path node.
    pub node: u32,
    /// `FRAME_*` flags.
    pub flags: u32,
    /// Function address.
    pub func: u64,
    /// Entry timestamp.
    pub entry_ticks: u64,
    /// Completed deeper time.
    pub deeper_ticks: u64,
}

/// A decoded path node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeView {
    /// Function address.
    pub func: u64,
    /// Parent node or [`NO_PARENT`].
    pub parent: u32,
    /// Completed calls.
    pub calls: u64,
    /// Own ticks (signed).
    pub own_ticks: i64,
}

/// A decoded thread slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadView {
    /// Kernel thread id.
    pub tid: u32,
    /// `THREAD_*` state.
    pub state: u32,
    /// Reset generation honoured.
    pub seen_gen: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// Latest hook timestamp.
    pub last_ticks: u64,
    /// Exit timestamp.
    pub exit_ticks: u64,
    /// Repaired mismatched exits.
    pub mismatched: u64,
    /// Calls not measured.
    pub lost_calls: u64,
    /// Calls counted on folded paths (deeper than the path length limit).
    pub folded_calls: u64,
    /// Paths that grew past the limit.
    pub folded_paths: u64,
    /// Last reset timestamp.
    pub reset_ticks: u64,
    /// Open calls, outermost first.
    pub frames: Vec<FrameView>,
    /// Path table (index = node id).
    pub nodes: Vec<NodeView>,
}

/// `paths_used` of the thread slot whose first bytes are `b` (to size the full read).
pub fn slot_paths_used(b: &[u8]) -> u32 {
    u32_at(b, offset_of!(ThreadHeader, paths_used))
}

/// The parts of a calls thread slot a reader needs, as `(offset from the slot start, length)`:
/// the thread header, the open frames and the used path nodes, for the slot whose header bytes
/// are `th` (at least [`THREAD_HEADER_SIZE`]). The rest of the slot (deeper frames, unused
/// nodes, the hash index) is never read, so a reader copies only what the runtime wrote.
pub fn slot_parts(h: &HeaderView, th: &[u8]) -> [(u64, u64); 3] {
    let depth = u32_at(th, offset_of!(ThreadHeader, depth)).min(h.max_depth) as u64;
    let paths_used = slot_paths_used(th).min(h.max_paths) as u64;
    [
        (0, THREAD_HEADER_SIZE as u64),
        (h.slot.frames_offset, depth * FRAME_SIZE as u64),
        (h.slot.nodes_offset, paths_used * PATH_NODE_SIZE as u64),
    ]
}

impl ThreadView {
    /// Decode a thread slot copied from offset `slot_offset(i)`; `b` may stop after the used
    /// nodes. Frames and nodes referring outside the table are dropped, never followed.
    pub fn parse(h: &HeaderView, b: &[u8]) -> Result<Self, ParseError> {
        need(b, THREAD_HEADER_SIZE as u64, "thread header")?;
        let paths_used = slot_paths_used(b).min(h.max_paths);
        need(b, h.slot_read_len(paths_used), "thread path table")?;
        let [_, (fo, fl), (no, nl)] = slot_parts(h, b);
        ThreadView::parse_parts(
            h,
            b,
            &b[fo as usize..(fo + fl) as usize],
            &b[no as usize..(no + nl) as usize],
        )
    }

    /// Decode a thread slot from its [`slot_parts`]: the thread header `b`, the open frames
    /// and the used path nodes (shorter parts drop the frames or nodes they lack).
    pub fn parse_parts(
        h: &HeaderView,
        b: &[u8],
        frames_b: &[u8],
        nodes_b: &[u8],
    ) -> Result<Self, ParseError> {
        need(b, THREAD_HEADER_SIZE as u64, "thread header")?;
        let depth = (u32_at(b, offset_of!(ThreadHeader, depth)).min(h.max_depth) as usize)
            .min(frames_b.len() / FRAME_SIZE);
        let paths_used =
            (slot_paths_used(b).min(h.max_paths) as usize).min(nodes_b.len() / PATH_NODE_SIZE);
        let mut nodes = Vec::with_capacity(paths_used);
        for i in 0..paths_used {
            let o = i * PATH_NODE_SIZE;
            let parent = u32_at(nodes_b, o + offset_of!(PathNode, parent));
            let parent = if parent != NO_PARENT && parent as usize >= i {
                NO_PARENT
            } else {
                parent
            };
            nodes.push(NodeView {
                func: u64_at(nodes_b, o),
                parent,
                calls: u64_at(nodes_b, o + offset_of!(PathNode, calls)),
                own_ticks: u64_at(nodes_b, o + offset_of!(PathNode, own_ticks)) as i64,
            });
        }
        let mut frames = Vec::with_capacity(depth);
        for i in 0..depth {
            let o = i * FRAME_SIZE;
            let f = FrameView {
                node: u32_at(frames_b, o),
                flags: u32_at(frames_b, o + offset_of!(Frame, flags)),
                func: u64_at(frames_b, o + offset_of!(Frame, func)),
                entry_ticks: u64_at(frames_b, o + offset_of!(Frame, entry_ticks)),
                deeper_ticks: u64_at(frames_b, o + offset_of!(Frame, deeper_ticks)),
            };
            if (f.node as usize) < nodes.len() {
                frames.push(f);
            }
        }
        let g64 = |f: usize| u64_at(b, f);
        Ok(ThreadView {
            tid: u32_at(b, offset_of!(ThreadHeader, tid)),
            state: u32_at(b, offset_of!(ThreadHeader, state)),
            seen_gen: u32_at(b, offset_of!(ThreadHeader, seen_gen)),
            flags: u32_at(b, offset_of!(ThreadHeader, flags)),
            last_ticks: g64(offset_of!(ThreadHeader, last_ticks)),
            exit_ticks: g64(offset_of!(ThreadHeader, exit_ticks)),
            mismatched: g64(offset_of!(ThreadHeader, mismatched)),
            lost_calls: g64(offset_of!(ThreadHeader, lost_calls)),
            folded_calls: g64(offset_of!(ThreadHeader, folded_calls)),
            folded_paths: g64(offset_of!(ThreadHeader, folded_paths)),
            reset_ticks: g64(offset_of!(ThreadHeader, reset_ticks)),
            frames,
            nodes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid_header() -> Vec<u8> {
        let mut b = vec![0u8; HEADER_AREA_SIZE as usize];
        let put32 =
            |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        let put64 =
            |b: &mut Vec<u8>, o: usize, v: u64| b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        let slot = SlotLayout::new(4, 8, 16).unwrap();
        put64(&mut b, 0, MAGIC);
        put32(&mut b, offset_of!(SegmentHeader, version), LAYOUT_VERSION);
        put32(&mut b, offset_of!(SegmentHeader, mode), MODE_CALLS);
        put32(&mut b, offset_of!(SegmentHeader, pid), 42);
        put64(
            &mut b,
            offset_of!(SegmentHeader, ticks_per_sec),
            1_000_000_000,
        );
        put32(&mut b, offset_of!(SegmentHeader, max_threads), 2);
        put32(&mut b, offset_of!(SegmentHeader, max_depth), 4);
        put32(&mut b, offset_of!(SegmentHeader, max_paths), 8);
        put32(&mut b, offset_of!(SegmentHeader, hash_size), 16);
        put32(&mut b, offset_of!(SegmentHeader, threads_used), 9);
        put64(
            &mut b,
            offset_of!(SegmentHeader, maps_offset),
            HEADER_AREA_SIZE,
        );
        put64(
            &mut b,
            offset_of!(SegmentHeader, threads_offset),
            HEADER_AREA_SIZE + MAPS_AREA_SIZE,
        );
        put64(
            &mut b,
            offset_of!(SegmentHeader, thread_slot_size),
            slot.slot_size,
        );
        put64(
            &mut b,
            offset_of!(SegmentHeader, total_size),
            HEADER_AREA_SIZE + MAPS_AREA_SIZE + 2 * slot.slot_size,
        );
        b
    }

    #[test]
    fn valid_header_parses_and_clamps_threads() {
        let h = HeaderView::parse(&valid_header()).expect("valid");
        assert_eq!(h.pid, 42);
        assert_eq!(h.threads_used, 2, "threads_used is clamped to max_threads");
    }

    #[test]
    fn bad_magic_version_and_sizes_are_rejected() {
        let mut b = valid_header();
        b[0] ^= 1;
        assert!(matches!(
            HeaderView::parse(&b),
            Err(ParseError::BadMagic(_))
        ));
        let mut b = valid_header();
        b[8] = 99;
        assert_eq!(HeaderView::parse(&b), Err(ParseError::BadVersion(99)));
        let mut b = valid_header();
        b[offset_of!(SegmentHeader, total_size)] ^= 0x10;
        assert!(matches!(
            HeaderView::parse(&b),
            Err(ParseError::BadField("total_size", _))
        ));
        assert!(matches!(
            HeaderView::parse(&b[..100]),
            Err(ParseError::Truncated { .. })
        ));
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let h = HeaderView::parse(&valid_header()).unwrap();
        for round in 0..2000 {
            let mut b = valid_header();
            let mut slot = vec![0u8; h.slot_read_len(8) as usize];
            for _ in 0..(round % 64 + 1) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x % b.len() as u64) as usize;
                b[i] = (x >> 32) as u8;
                let j = ((x >> 8) % slot.len() as u64) as usize;
                slot[j] = (x >> 40) as u8;
            }
            if let Ok(hv) = HeaderView::parse(&b) {
                let _ = ThreadView::parse(&hv, &slot);
            }
            let t = ThreadView::parse(&h, &slot[..(x as usize % slot.len())]);
            if let Ok(t) = t {
                assert!(t
                    .nodes
                    .iter()
                    .enumerate()
                    .all(|(i, n)| n.parent == NO_PARENT || (n.parent as usize) < i));
            }
        }
    }
}
