//! File encoding of traces: EVENTS chunks (raw runtime records), SWITCHES chunks (raw perf
//! ring records) and the JSON chunks, and loading a whole trace file.

use std::path::Path;

use hood_format::{tags, FileKind, Reader};

use super::{
    IrqDecoder, ProcessTrace, RawEvent, Switch, ThreadEvents, ThreadKey, Trace, TraceMeta,
    PAYLOAD_VERSION,
};
use crate::TraceModelError;
use hood_raw::frames::{for_each_frame, FrameError};
use hood_raw::RawError;

/// PERF_RECORD_LOST.
const RECORD_LOST: u32 = 2;
/// PERF_RECORD_SWITCH.
const RECORD_SWITCH: u32 = 14;
/// PERF_RECORD_MISC_SWITCH_OUT.
const MISC_SWITCH_OUT: u16 = 0x2000;
/// PERF_RECORD_MISC_SWITCH_OUT_PREEMPT.
const MISC_SWITCH_PREEMPT: u16 = 0x4000;

/// Bytes before the events of a version-2 or version-3 EVENTS payload.
pub const EVENTS_HEADER: usize = 24;
/// Low bits of a version-2 event value holding the runtime word's index and kind.
const INDEX_KIND_BITS: u32 = hood_abi::EVENT_TICKS_SHIFT;

/// The header of a version-3 EVENTS payload: u32 pid, u32 tid, u64 CLOCK_MONOTONIC start of the
/// process's segment (with the pid, names the PROCESS whose function table the indices refer
/// to), u64 anchor ticks (a full timestamp within 2^45 ticks of the first event). The runtime's
/// 8-byte event words follow as they lie in its buffer (little-endian, oldest first): a
/// recorder copies whole blocks of a ring after this header and does nothing per event; the
/// report restores each word's full timestamp from the one before.
pub fn events_header(pid: u32, tid: u32, start_mono_ns: u64, anchor: u64) -> [u8; EVENTS_HEADER] {
    let mut b = [0u8; EVENTS_HEADER];
    b[..4].copy_from_slice(&pid.to_le_bytes());
    b[4..8].copy_from_slice(&tid.to_le_bytes());
    b[8..16].copy_from_slice(&start_mono_ns.to_le_bytes());
    b[16..].copy_from_slice(&anchor.to_le_bytes());
    b
}

/// A version-3 EVENTS payload of `words` (a header, then the words' bytes); the full timestamp
/// of the last event (the next part's anchor) is returned with it.
pub fn encode_raw(
    pid: u32,
    tid: u32,
    start_mono_ns: u64,
    anchor: u64,
    words: &[u64],
) -> (Vec<u8>, u64) {
    let mut b = Vec::with_capacity(EVENTS_HEADER + words.len() * 8);
    b.extend_from_slice(&events_header(pid, tid, start_mono_ns, anchor));
    for w in words {
        b.extend_from_slice(&w.to_le_bytes());
    }
    let last = last_ticks(anchor, &b[EVENTS_HEADER..]);
    (b, last)
}

/// The full timestamp of the last of the event words in `bytes` (whole 8-byte words; `anchor`
/// within 2^45 ticks of the first), restored event by event; `anchor` when there are none.
pub fn last_ticks(anchor: u64, bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .fold(anchor, |t, c| hood_abi::restore_ticks(t, u64_at(c, 0)))
}

/// The address (function), tag number (mark) or code (control) an event's index stands for.
fn event_addr(p: &ProcessTrace, kind: u64, i: u64) -> u64 {
    match kind {
        hood_abi::KIND_ENTRY | hood_abi::KIND_EXIT => p.funcs.get(i as usize).copied().unwrap_or(0),
        hood_abi::KIND_MARK if i == hood_abi::INDEX_UNKNOWN => hood_abi::TAG_UNKNOWN,
        _ => i,
    }
}

/// The process an EVENTS payload of version 2 or 3 belongs to, with its pid and tid.
fn events_owner<'a>(
    b: &[u8],
    offset: u64,
    processes: &'a [ProcessTrace],
) -> Result<(&'a ProcessTrace, u32, u32, u64), TraceModelError> {
    if b.len() < EVENTS_HEADER {
        return Err(RawError::Malformed(format!(
            "event chunk at offset {offset} has {} bytes, less than its {EVENTS_HEADER}-byte header",
            b.len()
        )).into());
    }
    let (pid, tid, start) = (u32_at(b, 0), u32_at(b, 4), u64_at(b, 8));
    let p = processes
        .iter()
        .find(|p| p.pid == pid && p.start_mono_ns == start)
        .ok_or_else(|| {
            RawError::Malformed(format!(
                "event chunk at offset {offset} belongs to pid {pid}, whose process chunk is missing"
            ))
        })?;
    Ok((p, pid, tid, start))
}

/// Decode a version-3 EVENTS payload ([`events_header`], then raw event words) against the
/// processes read so far (`offset` names the chunk in errors). Function indices become
/// addresses (0 when unknown), mark indices tag numbers ([`hood_abi::TAG_UNKNOWN`] when the tag
/// table was full), timestamps full ticks.
pub fn decode_raw(
    b: &[u8],
    offset: u64,
    processes: &[ProcessTrace],
) -> Result<ThreadEvents, TraceModelError> {
    let (p, pid, tid, start_mono_ns) = events_owner(b, offset, processes)?;
    let body = &b[EVENTS_HEADER..];
    if !body.len().is_multiple_of(8) {
        return Err(RawError::Malformed(format!(
            "event chunk at offset {offset}: {} bytes of events, not whole 8-byte events",
            body.len()
        ))
        .into());
    }
    let mut ticks = u64_at(b, 16);
    let events = body
        .chunks_exact(8)
        .map(|c| {
            let w = u64_at(c, 0);
            ticks = hood_abi::restore_ticks(ticks, w);
            let kind = hood_abi::event_kind(w);
            RawEvent {
                addr: event_addr(p, kind, hood_abi::event_index(w)),
                ticks_kind: (ticks << 2) | kind,
            }
        })
        .collect();
    Ok(ThreadEvents {
        pid,
        tid,
        start_mono_ns,
        events,
    })
}

/// Decode a version-2 EVENTS payload (files of earlier hood versions: after the header of
/// [`events_header`], per event one LEB128 varint of `zigzag(ticks - previous ticks) << 18 |
/// index << 2 | kind`) against the processes read so far, as [`decode_raw`] does.
pub fn decode_words(
    b: &[u8],
    offset: u64,
    processes: &[ProcessTrace],
) -> Result<ThreadEvents, TraceModelError> {
    let (p, pid, tid, start_mono_ns) = events_owner(b, offset, processes)?;
    let mut ticks = u64_at(b, 16);
    let mut events = Vec::with_capacity((b.len() - EVENTS_HEADER) / 4);
    let mut v = 0u64;
    let mut shift = 0u32;
    for (k, &byte) in b[EVENTS_HEADER..].iter().enumerate() {
        if shift > 63 {
            return Err(RawError::Malformed(format!(
                "event chunk at offset {offset}: overlong event at byte {}",
                EVENTS_HEADER + k
            ))
            .into());
        }
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 != 0 {
            shift += 7;
            continue;
        }
        let zz = v >> INDEX_KIND_BITS;
        let d = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
        ticks = ticks.wrapping_add(d as u64);
        let kind = hood_abi::event_kind(v);
        events.push(RawEvent {
            addr: event_addr(p, kind, hood_abi::event_index(v)),
            ticks_kind: (ticks << 2) | kind,
        });
        v = 0;
        shift = 0;
    }
    if shift != 0 {
        return Err(RawError::Malformed(format!(
            "event chunk at offset {offset}: its last event is cut off"
        ))
        .into());
    }
    Ok(ThreadEvents {
        pid,
        tid,
        start_mono_ns,
        events,
    })
}

/// EVENTS payload, version 1 (files of earlier hood versions): u32 pid, u32 tid, then 16-byte
/// (address, ticks << 2 | kind) records.
pub fn encode_events(pid: u32, tid: u32, events: &[(u64, u64)]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + events.len() * 16);
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&tid.to_le_bytes());
    for &(a, t) in events {
        b.extend_from_slice(&a.to_le_bytes());
        b.extend_from_slice(&t.to_le_bytes());
    }
    b
}

/// The little-endian u32 at `o`, or 0 past the end of `b` (callers check lengths first; a
/// payload shorter than they assumed reads as zeros, never panics).
fn u32_at(b: &[u8], o: usize) -> u32 {
    b.get(o..o.saturating_add(4))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}
/// The little-endian u64 at `o`, or 0 past the end of `b`.
fn u64_at(b: &[u8], o: usize) -> u64 {
    b.get(o..o.saturating_add(8))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Decode an EVENTS payload (`offset` names the chunk in errors).
pub fn decode_events(b: &[u8], offset: u64) -> Result<ThreadEvents, TraceModelError> {
    if b.len() < 8 || !(b.len() - 8).is_multiple_of(16) {
        return Err(RawError::Malformed(format!(
            "event chunk at offset {offset} has {} bytes, not 8 + 16 per event",
            b.len()
        ))
        .into());
    }
    let events = b[8..]
        .chunks_exact(16)
        .map(|c| RawEvent {
            addr: u64_at(c, 0),
            ticks_kind: u64_at(c, 8),
        })
        .collect();
    Ok(ThreadEvents {
        pid: u32_at(b, 0),
        tid: u32_at(b, 4),
        start_mono_ns: 0,
        events,
    })
}

/// Switches decoded from one CPU's raw ring bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchDecode {
    /// Switch records.
    pub switches: Vec<Switch>,
    /// Records the kernel reported lost.
    pub lost: u64,
    /// Why decoding stopped early, if it did.
    pub malformed: Option<String>,
}

/// Decode the raw records of the switch event of CPU `cpu` (sample id: pid, tid, time).
pub fn decode_switches(cpu: u32, b: &[u8]) -> SwitchDecode {
    let mut out = SwitchDecode::default();
    let framed = for_each_frame(b, |f| {
        let (rec, size) = (f.bytes, f.bytes.len());
        match f.ty {
            RECORD_SWITCH if size >= 24 => out.switches.push(Switch {
                pid: u32_at(rec, size - 16),
                tid: u32_at(rec, size - 12),
                time_ns: u64_at(rec, size - 8),
                out: f.misc & MISC_SWITCH_OUT != 0,
                preempt: f.misc & MISC_SWITCH_PREEMPT != 0,
                cpu,
            }),
            RECORD_LOST if size >= 24 => out.lost = out.lost.saturating_add(u64_at(rec, 16)),
            _ => {}
        }
    });
    out.malformed = framed.err().map(|e| match e {
        FrameError::BadSize { .. } => format!("CPU {cpu}: switch {e}"),
        FrameError::Trailing(_) => format!("CPU {cpu}: {e}"),
    });
    out
}

fn json<T: serde::de::DeserializeOwned>(
    b: &[u8],
    what: &str,
    offset: u64,
) -> Result<T, TraceModelError> {
    let v: serde_json::Value = serde_json::from_slice(b)
        .map_err(|e| RawError::Malformed(format!("{what} chunk at offset {offset}: {e}")))?;
    let ver = v.get("version").and_then(|x| x.as_u64()).unwrap_or(0);
    if ver > PAYLOAD_VERSION as u64 {
        return Err(RawError::Malformed(format!(
            "{what} chunk at offset {offset} has payload version {ver}; this hood reads {PAYLOAD_VERSION}: upgrade hood"
        )).into());
    }
    serde_json::from_value(v)
        .map_err(|e| RawError::Malformed(format!("{what} chunk at offset {offset}: {e}")).into())
}

#[derive(serde::Deserialize)]
struct ProcessPayload {
    process: ProcessTrace,
}

/// One thread of a trace file, as pass 1 ([`scan`]) finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadIndex {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Full timestamp (ticks) of its first event, if its first chunk holds one.
    pub first_ticks: Option<u64>,
    /// Start (CLOCK_MONOTONIC ns) of the process segment of its chunks (0 in files of payload
    /// version 1): a thread that exec'd is one index per image.
    pub start_mono_ns: u64,
}

impl ThreadIndex {
    /// The thread of one program image it indexes.
    pub fn key(&self) -> ThreadKey {
        ThreadKey {
            pid: self.pid,
            start_mono_ns: self.start_mono_ns,
            tid: self.tid,
        }
    }
}

/// Everything in a trace file but its events, read in one pass that decodes only the first
/// event of each thread; the events are then read chunk by chunk with [`for_each_events`].
#[derive(Debug, Clone, Default)]
pub struct TraceHead {
    /// META, if present.
    pub meta: Option<TraceMeta>,
    /// Processes (the last PROCESS chunk of a process wins: a streamed recording writes a
    /// provisional one when the process appears and the final one at the end).
    pub processes: Vec<ProcessTrace>,
    /// Threads in the order their first events appear.
    pub threads: Vec<ThreadIndex>,
    /// Context switches, in no particular order.
    pub switches: Vec<Switch>,
    /// Switch records the kernel reported lost.
    pub lost_switches: u64,
    /// Irq entries/exits, in no particular order.
    pub irqs: Vec<super::Irq>,
    /// Irq records the kernel reported lost.
    pub lost_irqs: u64,
    /// Wake-ups of traced threads, in no particular order.
    pub wakeups: Vec<super::Wakeup>,
    /// Wake-up records the kernel reported lost.
    pub lost_wakeups: u64,
    /// Names of the threads that woke traced threads, by thread id.
    pub tasks: std::collections::BTreeMap<u32, super::TaskName>,
    /// Reader warnings.
    pub warnings: Vec<String>,
}

fn open_trace(path: &Path) -> Result<Reader, TraceModelError> {
    let r = Reader::open(path)?;
    hood_format::expect_kind(&r, FileKind::Trace, "hood trace report")?;
    Ok(r)
}

/// How a file's EVENTS payloads are encoded, by its META version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    /// Version 1: 16-byte (address, ticks << 2 | kind) records after the pid and tid.
    Records,
    /// Version 2: varint steps ([`decode_words`]).
    Varint,
    /// Version 3: raw runtime words ([`decode_raw`]).
    Raw,
}

impl Encoding {
    fn of(meta: Option<&TraceMeta>) -> Encoding {
        match meta.map_or(1, |m| m.version) {
            0 | 1 => Encoding::Records,
            2 => Encoding::Varint,
            _ => Encoding::Raw,
        }
    }

    fn decode(
        self,
        b: &[u8],
        offset: u64,
        processes: &[ProcessTrace],
    ) -> Result<ThreadEvents, TraceModelError> {
        match self {
            Encoding::Records => decode_events(b, offset),
            Encoding::Varint => decode_words(b, offset, processes),
            Encoding::Raw => decode_raw(b, offset, processes),
        }
    }
}

/// The segment start an EVENTS payload names (0 in version 1, which names none).
fn chunk_start(b: &[u8], enc: Encoding) -> u64 {
    if enc == Encoding::Records {
        0
    } else {
        u64_at(b, 8)
    }
}

/// Full timestamp of the first event of an EVENTS payload, without decoding the rest.
fn first_ticks(b: &[u8], enc: Encoding) -> Option<u64> {
    if enc == Encoding::Records {
        return (b.len() >= 24).then(|| u64_at(b, 16) >> 2);
    }
    let anchor = u64_at(b.get(..EVENTS_HEADER)?, 16);
    if enc == Encoding::Raw {
        let w = u64_at(b.get(EVENTS_HEADER..EVENTS_HEADER + 8)?, 0);
        return Some(hood_abi::restore_ticks(anchor, w));
    }
    let (mut v, mut shift) = (0u64, 0u32);
    for &byte in b.get(EVENTS_HEADER..)? {
        if shift > 63 {
            return None;
        }
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            let zz = v >> INDEX_KIND_BITS;
            let d = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            return Some(anchor.wrapping_add(d as u64));
        }
        shift += 7;
    }
    None
}

/// In a file of payload version 1, whose events do not say which program image they belong
/// to, the processes that exec'd: their images' calls are read together under the last image.
/// One line saying so, or `None` when no process exec'd.
fn merged_images(processes: &[ProcessTrace]) -> Option<String> {
    let mut images: std::collections::BTreeMap<u32, Vec<&str>> = Default::default();
    for p in processes {
        images.entry(p.pid).or_default().push(&p.exe);
    }
    let execd: Vec<String> = images
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(pid, v)| format!("pid {pid} ({})", v.join(" -> ")))
        .collect();
    if execd.is_empty() {
        return None;
    }
    Some(format!(
        "this trace was written by an earlier hood (event payload version 1), whose events do \
         not say which program image they belong to: the calls of {} are shown together under \
         its last program; record again to see each image on its own",
        execd.join(", ")
    ))
}

/// Pass 1 over a trace file: META, processes, switches, irqs, and each thread's first event.
/// Truncation after whole chunks is a warning; damaged chunks and malformed payloads are
/// errors naming their offset.
pub fn scan(path: &Path) -> Result<TraceHead, TraceModelError> {
    scan_reader(open_trace(path)?)
}

/// [`scan`] from an opened reader (a file, or bytes in memory: tests and fuzzing).
pub fn scan_reader(mut r: Reader) -> Result<TraceHead, TraceModelError> {
    hood_format::expect_kind(&r, FileKind::Trace, "hood trace report")?;
    let mut t = TraceHead::default();
    let mut irq_decoder: Option<IrqDecoder> = None;
    let mut wake_decoder: Option<super::wake::WakeDecoder> = None;
    let mut data = Vec::new();
    let mut seen: std::collections::HashSet<ThreadKey> = Default::default();
    while let Some(c) = r.next_chunk_into(&mut data)? {
        let (tag, offset) = (c.tag, c.offset);
        match tag {
            tags::trace::META => t.meta = Some(json::<TraceMeta>(&data, "META", offset)?),
            tags::trace::PROCESS => {
                let p = json::<ProcessPayload>(&data, "PROCESS", offset)?.process;
                match t
                    .processes
                    .iter_mut()
                    .find(|x| x.pid == p.pid && x.start_mono_ns == p.start_mono_ns)
                {
                    Some(x) => *x = p,
                    None => t.processes.push(p),
                }
            }
            tags::trace::EVENTS => {
                let enc = Encoding::of(t.meta.as_ref());
                if data.len() < 8 {
                    return Err(RawError::Malformed(format!(
                        "event chunk at offset {offset} has {} bytes, less than its header",
                        data.len()
                    ))
                    .into());
                }
                let index = ThreadIndex {
                    pid: u32_at(&data, 0),
                    tid: u32_at(&data, 4),
                    first_ticks: None,
                    start_mono_ns: chunk_start(&data, enc),
                };
                if seen.insert(index.key()) {
                    t.threads.push(ThreadIndex {
                        first_ticks: first_ticks(&data, enc),
                        ..index
                    });
                }
            }
            tags::trace::SWITCHES => {
                let (cpu, body) = cpu_chunk(&data, "switch", offset)?;
                let d = decode_switches(cpu, body);
                t.switches.extend(d.switches);
                t.lost_switches += d.lost;
                if let Some(m) = d.malformed {
                    t.warnings.push(format!("chunk at offset {offset}: {m}"));
                }
            }
            tags::trace::IRQS => {
                let (cpu, body) = cpu_chunk(&data, "irq", offset)?;
                let meta = formats(t.meta.as_ref().and_then(|m| m.irq.as_ref()), "irq", offset)?;
                let dec = irq_decoder.get_or_insert_with(|| IrqDecoder::new(meta));
                let d = dec.decode(cpu, body);
                t.irqs.extend(d.irqs);
                t.lost_irqs += d.lost;
                t.warnings
                    .extend(skipped_note(offset, d.skipped, "irq samples"));
                if let Some(m) = d.malformed {
                    t.warnings.push(format!("chunk at offset {offset}: {m}"));
                }
            }
            tags::trace::WAKEUPS => {
                let (cpu, body) = cpu_chunk(&data, "wake-up", offset)?;
                let meta = formats(
                    t.meta.as_ref().and_then(|m| m.wake.as_ref()),
                    "wake-up",
                    offset,
                )?;
                let dec = wake_decoder.get_or_insert_with(|| super::wake::WakeDecoder::new(meta));
                let d = dec.decode(cpu, body);
                t.wakeups.extend(d.wakeups);
                t.lost_wakeups += d.lost;
                t.warnings
                    .extend(skipped_note(offset, d.skipped, "wake-up records"));
            }
            tags::trace::TASKS => {
                #[derive(serde::Deserialize)]
                struct Tasks {
                    tasks: Vec<super::TaskName>,
                }
                let v = json::<Tasks>(&data, "TASKS", offset)?;
                super::wake::merge_tasks(&mut t.tasks, v.tasks);
            }
            _ => {}
        }
    }
    t.warnings.extend(r.warnings().iter().cloned());
    if Encoding::of(t.meta.as_ref()) == Encoding::Records {
        if let Some(w) = merged_images(&t.processes) {
            t.warnings.push(w);
        }
    }
    if t.meta.is_none() && t.processes.is_empty() {
        return Err(RawError::Malformed(format!(
            "{}: no trace data in this file",
            r.path().display()
        ))
        .into());
    }
    Ok(t)
}

/// The warning for the `n` records (`what`: "irq samples") of a layout the decoder does not
/// know that the chunk at `offset` held, if any.
fn skipped_note(offset: u64, n: u64, what: &str) -> Option<String> {
    (n > 0).then(|| format!("chunk at offset {offset}: {n} {what} of unknown layout skipped"))
}

/// A per-CPU chunk (switches, irqs, wake-ups): its CPU number and the records after it; a
/// chunk shorter than the number is an error naming `what` and its offset.
fn cpu_chunk<'a>(
    data: &'a [u8],
    what: &str,
    offset: u64,
) -> Result<(u32, &'a [u8]), TraceModelError> {
    if data.len() < 4 {
        return Err(RawError::Malformed(format!(
            "{what} chunk at offset {offset} is {} bytes",
            data.len()
        ))
        .into());
    }
    Ok((u32_at(data, 0), &data[4..]))
}

/// The tracepoint formats META gave for a chunk of raw records; without them the chunk cannot
/// be read, an error naming `what` and its offset.
fn formats<'a, M>(meta: Option<&'a M>, what: &str, offset: u64) -> Result<&'a M, TraceModelError> {
    meta.ok_or_else(|| {
        RawError::Malformed(format!(
            "{what} chunk at offset {offset} comes without the tracepoint formats in META"
        ))
        .into()
    })
}

/// A trace to report: its head (pass 1) and its events for as many more passes as a report
/// needs, every EVENTS chunk in order, decoded against the head. hood-load's trace file is
/// one; a renderer takes this, never a path.
pub trait Events {
    /// What pass 1 read: processes, threads, switches, irqs, warnings.
    fn head(&self) -> &TraceHead;
    /// Every EVENTS chunk of the threads `want` picks, in file order, to `f`.
    fn for_each_events(
        &self,
        want: &dyn Fn(ThreadKey) -> bool,
        f: &mut dyn FnMut(ThreadEvents) -> Result<(), TraceModelError>,
    ) -> Result<(), TraceModelError>;
}

/// Pass 2: every EVENTS chunk of the file in order, decoded against `head`'s processes (one
/// chunk in memory at a time). `want` picks the threads to decode.
pub fn for_each_events(
    path: &Path,
    head: &TraceHead,
    want: &dyn Fn(ThreadKey) -> bool,
    f: &mut dyn FnMut(ThreadEvents) -> Result<(), TraceModelError>,
) -> Result<(), TraceModelError> {
    for_each_events_in(open_trace(path)?, head, want, f)
}

/// [`for_each_events`] from an opened reader (a file, or bytes in memory: tests and fuzzing).
pub fn for_each_events_in(
    mut r: Reader,
    head: &TraceHead,
    want: &dyn Fn(ThreadKey) -> bool,
    f: &mut dyn FnMut(ThreadEvents) -> Result<(), TraceModelError>,
) -> Result<(), TraceModelError> {
    hood_format::expect_kind(&r, FileKind::Trace, "hood trace report")?;
    let enc = Encoding::of(head.meta.as_ref());
    let mut data = Vec::new();
    while let Some(c) = r.next_chunk_into(&mut data)? {
        if c.tag != tags::trace::EVENTS
            || data.len() < 8
            || !want(ThreadKey {
                pid: u32_at(&data, 0),
                start_mono_ns: chunk_start(&data, enc),
                tid: u32_at(&data, 4),
            })
        {
            continue;
        }
        f(enc.decode(&data, c.offset, &head.processes)?)?;
    }
    Ok(())
}

/// Read a whole trace file into memory (small traces and tests; `hood trace report` streams
/// with [`scan`] and [`for_each_events`]).
pub fn load(path: &Path) -> Result<Trace, TraceModelError> {
    load_readers(open_trace(path)?, open_trace(path)?)
}

/// [`load`] from two readers of the same file (the file is read twice: everything but the
/// events, then the events), e.g. bytes in memory for tests and fuzzing.
pub fn load_readers(first: Reader, second: Reader) -> Result<Trace, TraceModelError> {
    let head = scan_reader(first)?;
    let mut events: Vec<ThreadEvents> = Vec::new();
    for_each_events_in(second, &head, &|_| true, &mut |e| {
        // A long thread is split over several chunks: join its parts in order.
        match events.iter_mut().find(|x| x.key() == e.key()) {
            Some(x) => x.events.extend(e.events),
            None => events.push(e),
        }
        Ok(())
    })?;
    Ok(Trace {
        meta: head.meta,
        processes: head.processes,
        events,
        switches: head.switches,
        lost_switches: head.lost_switches,
        irqs: head.irqs,
        lost_irqs: head.lost_irqs,
        warnings: head.warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// EVENTS payload, version 2 (written by earlier hood versions, kept to test their reading): u32 pid, u32 tid, u64 CLOCK_MONOTONIC start of the process's
    /// segment (with the pid, names the PROCESS whose function table the indices refer to), u64
    /// anchor ticks (a full timestamp within 2^45 ticks of the first event), then per event one
    /// LEB128 varint of `zigzag(ticks - previous ticks) << 18 | index << 2 | kind`: the runtime's
    /// word with its truncated timestamp replaced by the (small) step from the event before, which
    /// takes ~4 bytes and compresses several times faster and smaller than the raw words.
    /// Returns the payload and the full timestamp of the last event (the next part's anchor).
    fn encode_words(
        pid: u32,
        tid: u32,
        start_mono_ns: u64,
        anchor: u64,
        words: &[u64],
    ) -> (Vec<u8>, u64) {
        let mut b = Vec::new();
        let last = encode_words_into(&mut b, pid, tid, start_mono_ns, anchor, words);
        (b, last)
    }

    /// [`encode_words`] into `b` (replacing its contents), so a recorder that encodes every event
    /// it streams reuses one buffer. Returns the full timestamp of the last event.
    fn encode_words_into(
        b: &mut Vec<u8>,
        pid: u32,
        tid: u32,
        start_mono_ns: u64,
        anchor: u64,
        words: &[u64],
    ) -> u64 {
        // Capacity for 10 bytes per event reserved once; each event is built in a register-sized
        // stack buffer and appended in one copy (the recorder encodes every event it streams).
        b.clear();
        b.reserve(EVENTS_HEADER + words.len() * 10);
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&start_mono_ns.to_le_bytes());
        b.extend_from_slice(&anchor.to_le_bytes());
        let mut prev = anchor;
        for &w in words {
            let t = hood_abi::restore_ticks(prev, w);
            let d = t.wrapping_sub(prev) as i64; // within ±2^45 by construction
            prev = t;
            let zz = ((d << 1) ^ (d >> 63)) as u64;
            let mut v = (zz << INDEX_KIND_BITS) | (w & ((1 << INDEX_KIND_BITS) - 1));
            let mut out = [0u8; 10];
            let mut k = 0;
            while v >= 0x80 {
                out[k] = (v as u8) | 0x80;
                v >>= 7;
                k += 1;
            }
            out[k] = v as u8;
            b.extend_from_slice(&out[..k + 1]);
        }
        prev
    }

    /// A version-1 file (events that name no program image) of a process that exec'd: both
    /// images are read, and one warning says their calls are shown together; a file of one
    /// image per pid says nothing.
    #[test]
    fn a_version_1_trace_of_an_exec_says_its_images_are_merged() {
        let file = |exes: &[&str]| {
            let mut w =
                hood_format::Writer::new(Vec::new(), Path::new("v1.trace"), FileKind::Trace)
                    .unwrap();
            let meta = serde_json::json!({"version": 1, "argv": ["old"], "buffer": 16,
                "full": "stop", "filters": [], "excludes": [], "sched": false,
                "collected_realtime_ns": 0});
            w.write_chunk(
                tags::trace::META,
                &serde_json::to_vec(&meta).unwrap(),
                false,
            )
            .unwrap();
            for (i, exe) in exes.iter().enumerate() {
                let p = ProcessTrace {
                    pid: 7,
                    ppid: 1,
                    exe: exe.to_string(),
                    clock: crate::Clock::Tsc,
                    ticks_per_sec: 1_000_000_000,
                    start_ticks: 0,
                    start_mono_ns: 100 * (i as u64 + 1),
                    state: crate::ProcessState::Exited,
                    flags: 0,
                    capacity: 16,
                    full: "stop".into(),
                    threads: Vec::new(),
                    symbols: Default::default(),
                    tags: Default::default(),
                    funcs: Vec::new(),
                    notes: Vec::new(),
                    probe_cost: None,
                    probe_cost_stepped: None,
                    probe_stepped: Vec::new(),
                };
                let v = serde_json::json!({"version": 1, "process": p});
                w.write_chunk(tags::trace::PROCESS, &serde_json::to_vec(&v).unwrap(), true)
                    .unwrap();
            }
            let ev = encode_events(7, 7, &[(0x1000, 5 << 2), (0x1000, (9 << 2) | 1)]);
            w.write_chunk(tags::trace::EVENTS, &ev, false).unwrap();
            let bytes = w.finish().unwrap();
            scan_reader(Reader::from_bytes(bytes, "v1.trace").unwrap()).unwrap()
        };
        let h = file(&["/bin/old", "/bin/new"]);
        assert_eq!(h.processes.len(), 2);
        let said: Vec<_> = h
            .warnings
            .iter()
            .filter(|w| w.contains("version 1"))
            .collect();
        assert_eq!(said.len(), 1, "{:?}", h.warnings);
        assert!(
            said[0].contains("pid 7 (/bin/old -> /bin/new)"),
            "{}",
            said[0]
        );
        let h = file(&["/bin/old"]);
        assert!(h.warnings.is_empty(), "{:?}", h.warnings);
    }

    #[test]
    fn events_round_trip_and_bad_sizes_are_errors() {
        let b = encode_events(7, 8, &[(0x1000, 5 << 2), (0x1000, (9 << 2) | 1)]);
        let e = decode_events(&b, 0).unwrap();
        assert_eq!((e.pid, e.tid, e.events.len()), (7, 8, 2));
        assert_eq!(e.events[1].ticks(), 9);
        assert!(decode_events(&b[..b.len() - 1], 40).is_err());
        assert!(decode_events(&b[..3], 40).is_err());
    }

    #[test]
    fn words_restore_addresses_tags_and_wrapped_timestamps() {
        use hood_abi::{encode_event, KIND_ENTRY, KIND_EXIT, KIND_MARK};
        let p = ProcessTrace {
            pid: 7,
            ppid: 1,
            exe: String::new(),
            clock: crate::Clock::Tsc,
            ticks_per_sec: 1_000_000_000,
            start_ticks: 0,
            start_mono_ns: 99,
            state: crate::ProcessState::Exited,
            flags: 0,
            capacity: 16,
            full: "stop".into(),
            threads: Vec::new(),
            symbols: Default::default(),
            tags: Default::default(),
            funcs: vec![0x1000, 0x2000],
            notes: Vec::new(),
            probe_cost: None,
            probe_cost_stepped: None,
            probe_stepped: Vec::new(),
        };
        // Timestamps crossing a wrap of the 46 kept bits are restored from the anchor.
        let t0 = (1u64 << 46) - 5;
        let words = [
            encode_event(t0, 1, KIND_ENTRY),
            encode_event(t0 + 10, 0xFFFF, KIND_MARK),
            encode_event(t0 + 20, 9, KIND_EXIT),
        ];
        let want = vec![(0x2000, t0), (hood_abi::TAG_UNKNOWN, t0 + 10), (0, t0 + 20)];
        let ps = std::slice::from_ref(&p);
        // Version 3 (raw words, what recorders write) and version 2 (varint steps, files of
        // earlier hood versions) decode to the same events.
        type Decode = fn(&[u8], u64, &[ProcessTrace]) -> Result<ThreadEvents, TraceModelError>;
        let (raw, last) = encode_raw(7, 8, 99, t0 - 100, &words);
        assert_eq!(last, t0 + 20);
        assert_eq!(
            raw.len(),
            EVENTS_HEADER + 3 * 8,
            "one 8-byte word per event"
        );
        let (varint, last) = encode_words(7, 8, 99, t0 - 100, &words);
        assert_eq!(last, t0 + 20);
        for (b, decode, enc) in [
            (raw, decode_raw as Decode, Encoding::Raw),
            (varint, decode_words as Decode, Encoding::Varint),
        ] {
            let e = decode(&b, 0, ps).unwrap();
            assert_eq!((e.pid, e.tid), (7, 8));
            let got: Vec<(u64, u64)> = e.events.iter().map(|x| (x.addr, x.ticks())).collect();
            assert_eq!(got, want, "{enc:?}");
            assert_eq!(first_ticks(&b, enc), Some(t0), "{enc:?}");
            assert!(decode(&b[..b.len() - 1], 0, ps).is_err(), "{enc:?}");
            // Pid 7 with another segment start: no process chunk.
            let mut other = b.clone();
            other[8..16].copy_from_slice(&98u64.to_le_bytes());
            assert!(decode(&other, 0, ps).is_err(), "{enc:?}");
        }
    }

    #[test]
    fn switch_records_decode_and_garbage_never_panics() {
        let mut b = Vec::new();
        b.extend_from_slice(&14u32.to_le_bytes());
        b.extend_from_slice(&0x2000u16.to_le_bytes());
        b.extend_from_slice(&24u16.to_le_bytes());
        b.extend_from_slice(&5u32.to_le_bytes());
        b.extend_from_slice(&6u32.to_le_bytes());
        b.extend_from_slice(&123u64.to_le_bytes());
        let d = decode_switches(1, &b);
        assert_eq!(d.switches.len(), 1);
        assert!(d.switches[0].out && d.switches[0].tid == 6 && d.switches[0].time_ns == 123);
        assert!(d.malformed.is_none());
        let mut x = 0x1234_5678_9abc_def1u64;
        for n in 0..500 {
            let g: Vec<u8> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = decode_switches(0, &g);
            let _ = decode_events(&g, 0);
            let _ = decode_words(&g, 0, &[]);
            let _ = decode_raw(&g, 0, &[]);
        }
    }
}
