//! The per-process index of a monitor store: a `SERIES` chunk after every key period holds the
//! period's processes one by one, so a day of one process reads a few kilobytes per period
//! instead of every interval's whole snapshot (docs/monitor.md, "The store").
//!
//! Payload, layout 2 (the chunk has the `FLAG_DICT` flag): the first interval's wall-clock time
//! (i64 ms, LE), the file offset of the key chunk its frames are compressed against (u64, LE),
//! a u32 (LE) length and a zstd frame of the directory, then the zstd frames of the processes'
//! records and of the intervals' system figures. Every frame is compressed with that key's
//! JSON as the zstd dictionary (the key interval is the series' first, and each process's
//! first record repeats the key's record of it, so it costs a few bytes). Values that follow
//! one another are written as their [`delta`]: a counter as its increase, an object as its
//! changed members. The directory is the JSON array `[intervals, frames, pids, system]`:
//! `intervals` each `[wall_ms, change]`, the change of the interval's context (the snapshot
//! with its lists emptied: it keeps what a process's figures are derived with: clocks, memory
//! total, page size) from the one before, the first whole; `frames` each
//! `[offset, stored, raw]` (offset after the directory); `pids` each
//! `[pid, frame, start, len]`, a byte range of that frame's decompressed text holding
//! `[tasks, ended]`: `tasks` each `[interval, record]`, the process's first record whole and
//! the next ones as their change; `ended` the intervals in which tasks of the process ended
//! (the ended tasks themselves are read from those intervals' snapshots: they are unique to
//! one interval, and a copy here would be a third of the index); `system` the
//! `[offset, stored, raw]` of the frame holding, for each interval in order, its snapshot
//! without processes but with every system figure and the counts over all processes
//! ([`Snapshot::whole`]), each as its change from the one before, so a dump of a few
//! processes shows the machine as the whole snapshot does.
//!
//! Layout 1 (no `FLAG_DICT`, written by hoods before layout 2) has no key offset, frames
//! compressed alone, whole contexts, changed fields written whole, the ended tasks themselves
//! (`[interval, ExitRaw]`) and no `system`: it serves the processes' rows (CSV), and the dumps
//! that show the machine read its intervals whole.
//!
//! Every number in it is checked before use (an interval index against the intervals, a frame
//! range against the payload, a byte range against the frame, the key offset against the
//! key the reader found); decompression stops at [`MAX_SNAPSHOT`](super::MAX_SNAPSHOT) bytes
//! and nothing is allocated by a claimed size. A series that does not check out is a warning,
//! and its intervals are read whole instead.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;

use hood_monitor::{whole_counts, ExitRaw, ExitsRaw, Snapshot, TaskRaw};
use serde::Deserialize;
use serde_json::{Map, Value};
use zstd::dict::DecoderDictionary;

use super::MAX_SNAPSHOT;

/// A frame of processes' records is closed past this many bytes of text (reading one process
/// decompresses one frame).
const FRAME_BYTES: usize = 64 << 10;
/// A series is written early past this many bytes of text (a machine starting thousands of
/// processes per interval), which bounds the recorder's memory.
pub(super) const MAX_PENDING: usize = 32 << 20;

/// A snapshot with its lists emptied: what a process's figures are derived with.
pub(super) fn context_of(s: &Snapshot) -> Snapshot {
    Snapshot {
        taken_ns: s.taken_ns,
        wall_time_s: s.wall_time_s,
        utc_offset_s: s.utc_offset_s,
        uptime_s: s.uptime_s,
        clk_tck: s.clk_tck,
        page_size: s.page_size,
        load: s.load,
        cpu_total: s.cpu_total,
        ctxt: s.ctxt,
        forks: s.forks,
        mem: s.mem,
        exits: s.exits.as_ref().map(|e| ExitsRaw {
            tasks: Vec::new(),
            overruns: e.overruns,
            dropped: e.dropped,
            unavailable: e.unavailable.clone(),
        }),
        ..Default::default()
    }
}

/// `s` with only the processes `pids` (and their ended tasks), the rest of its lists emptied
/// ([`context_of`]) or, with `system`, kept ([`system_of`]).
pub(super) fn only_pids(s: &Snapshot, pids: &[u32], system: bool) -> Snapshot {
    let mut out = if system { system_of(s) } else { context_of(s) };
    out.tasks = s
        .tasks
        .iter()
        .filter(|t| pids.contains(&t.pid))
        .cloned()
        .collect();
    if let (Some(o), Some(e)) = (out.exits.as_mut(), s.exits.as_ref()) {
        o.tasks = e
            .tasks
            .iter()
            .filter(|x| pids.contains(&x.tgid))
            .cloned()
            .collect();
    }
    out
}

/// `s` without its processes (and their ended tasks) but with every system figure, and the
/// counts over all its processes in [`Snapshot::whole`].
pub(super) fn system_of(s: &Snapshot) -> Snapshot {
    Snapshot {
        cpus: s.cpus.clone(),
        interrupts: s.interrupts.clone(),
        softirqs: s.softirqs.clone(),
        irq_time: s.irq_time.clone(),
        pressure: s.pressure,
        disks: s.disks.clone(),
        nets: s.nets.clone(),
        cgroups: s.cgroups.clone(),
        whole: Some(whole_counts(s)),
        ..context_of(s)
    }
}

#[derive(Default)]
struct PidSeries {
    /// The process's last record, to write only what changed.
    last: Option<Value>,
    /// `[interval,fields]` items, comma-separated.
    tasks: Vec<u8>,
    /// Layout 1: `[interval,ExitRaw]` items; layout 2: the intervals in which some of its
    /// tasks ended; comma-separated.
    ended: Vec<u8>,
    /// The last interval in `ended` (layout 2).
    ended_at: Option<usize>,
}

/// The change from `last` to `new` in layout 2, `None` when there is none: where both are
/// integers, the difference (a counter's increase is a short number); where `last` is an
/// object (or an array and `new` one of the same length), an object of the members that
/// changed, each as its change (an array's by index); anything else as `["=", new]`.
fn delta(last: &Value, new: &Value) -> Option<Value> {
    if last == new {
        return None;
    }
    let replace = || Some(Value::Array(vec![Value::from("="), new.clone()]));
    match (last, new) {
        (Value::Number(a), Value::Number(b)) => match (int(a), int(b)) {
            (Some(a), Some(b)) => number(b - a).or_else(replace),
            _ => replace(),
        },
        (Value::Object(a), Value::Object(b)) if a.keys().all(|k| b.contains_key(k)) => {
            Some(Value::Object(
                b.iter()
                    .filter_map(|(k, v)| {
                        let d = match a.get(k) {
                            Some(l) => delta(l, v)?,
                            None => Value::Array(vec![Value::from("="), v.clone()]),
                        };
                        Some((k.clone(), d))
                    })
                    .collect(),
            ))
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => Some(Value::Object(
            a.iter()
                .zip(b)
                .enumerate()
                .filter_map(|(i, (l, v))| Some((i.to_string(), delta(l, v)?)))
                .collect(),
        )),
        _ => replace(),
    }
}

/// An integer JSON number's value.
fn int(n: &serde_json::Number) -> Option<i128> {
    n.as_u64()
        .map(i128::from)
        .or_else(|| n.as_i64().map(i128::from))
}

/// `n` as a JSON number, if it fits one.
fn number(n: i128) -> Option<Value> {
    u64::try_from(n)
        .map(Value::from)
        .ok()
        .or_else(|| i64::try_from(n).ok().map(Value::from))
}

/// Apply the change `d` ([`delta`]) to `last`; `Err` when it does not fit `last`.
fn apply(last: &mut Value, d: Value) -> Result<(), String> {
    match d {
        Value::Number(n) => {
            let (Value::Number(a), Some(d)) = (&*last, int(&n)) else {
                return Err("a number's change where there is no integer".into());
            };
            let a = int(a).ok_or("a number's change where there is no integer")?;
            *last = number(a + d).ok_or("a number out of range")?;
            Ok(())
        }
        Value::Object(members) => {
            for (k, dv) in members {
                let slot = match last {
                    Value::Object(m) => {
                        if !m.contains_key(&k) {
                            let v = replacement(dv).ok_or("a new member without its value")?;
                            m.insert(k, v);
                            continue;
                        }
                        m.get_mut(&k)
                    }
                    Value::Array(a) => k.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
                    _ => None,
                };
                apply(slot.ok_or("a change of a member that is not there")?, dv)?;
            }
            Ok(())
        }
        d => {
            *last = replacement(d).ok_or("a change that is none")?;
            Ok(())
        }
    }
}

/// The value of a `["=", value]` change.
fn replacement(d: Value) -> Option<Value> {
    match d {
        Value::Array(mut a) if a.len() == 2 && a[0] == "=" => a.pop(),
        _ => None,
    }
}

/// The recorder's pending series: the intervals appended since the last `SERIES` chunk.
#[derive(Default)]
pub(super) struct Builder {
    intervals: Vec<(i64, Snapshot)>,
    /// Layout 2: the intervals' [`context_of`] snapshots, the first whole, the next ones as
    /// their [`delta`] from the one before.
    contexts: Vec<(i64, Value)>,
    /// The last interval's [`context_of`] snapshot.
    last_context: Option<Value>,
    /// The intervals' [`system_of`] snapshots as JSON, comma-separated: the first whole, the
    /// next ones as their [`delta`] from the one before.
    system: Vec<u8>,
    /// The last interval's [`system_of`] snapshot.
    last_system: Option<Value>,
    /// Write layout 1 (as hoods before layout 2 did; tests of old stores).
    pub(super) layout1: bool,
    pids: BTreeMap<u32, PidSeries>,
    bytes: usize,
    /// An interval did not encode: the series is not written (its intervals read whole).
    broken: bool,
}

fn push_item(buf: &mut Vec<u8>, i: usize, v: &impl serde::Serialize) -> bool {
    let at = buf.len();
    if !buf.is_empty() {
        buf.push(b',');
    }
    buf.extend_from_slice(format!("[{i},").as_bytes());
    if serde_json::to_writer(&mut *buf, v).is_err() {
        buf.truncate(at);
        return false;
    }
    buf.push(b']');
    true
}

impl Builder {
    /// An empty series, in layout 1 when `layout1`.
    pub(super) fn new(layout1: bool) -> Self {
        Builder {
            layout1,
            ..Default::default()
        }
    }

    /// Intervals pending.
    pub(super) fn len(&self) -> usize {
        self.intervals.len()
    }

    /// Bytes of text pending.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Add the interval `snap`, written at `wall_ms`.
    pub(super) fn add(&mut self, snap: &Snapshot, wall_ms: i64) {
        let i = self.intervals.len();
        let ctx = context_of(snap);
        if !self.layout1 {
            match serde_json::to_value(&ctx) {
                Ok(v) => {
                    let d = match &self.last_context {
                        Some(last) => delta(last, &v).unwrap_or_else(|| Value::Object(Map::new())),
                        None => v.clone(),
                    };
                    self.contexts.push((wall_ms, d));
                    self.last_context = Some(v);
                }
                Err(_) => self.broken = true,
            }
        }
        self.intervals.push((wall_ms, ctx));
        if !self.layout1 {
            let before = self.system.len();
            if !self.system.is_empty() {
                self.system.push(b',');
            }
            let sys = serde_json::to_value(system_of(snap));
            let written = match (&sys, &self.last_system) {
                (Ok(v), Some(last)) => serde_json::to_writer(
                    &mut self.system,
                    &delta(last, v).unwrap_or_else(|| Value::Object(Map::new())),
                ),
                (Ok(v), None) => serde_json::to_writer(&mut self.system, v),
                (Err(_), _) => Err(serde::ser::Error::custom("unencodable")),
            };
            match (written, sys) {
                (Ok(()), Ok(v)) => self.last_system = Some(v),
                // A series must hold every interval: this one is not written.
                _ => self.broken = true,
            }
            self.bytes += self.system.len() - before;
        }
        for t in &snap.tasks {
            let Ok(m) = serde_json::to_value(t) else {
                continue;
            };
            let ps = self.pids.entry(t.pid).or_default();
            let before = ps.tasks.len();
            match &ps.last {
                Some(last) if self.layout1 => {
                    let (Value::Object(last), Value::Object(m)) = (last, &m) else {
                        continue;
                    };
                    let diff: Map<String, Value> = m
                        .iter()
                        .filter(|(k, v)| last.get(*k) != Some(*v))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    push_item(&mut ps.tasks, i, &diff);
                }
                Some(last) => {
                    let d = delta(last, &m).unwrap_or_else(|| Value::Object(Map::new()));
                    push_item(&mut ps.tasks, i, &d);
                }
                // The task itself, in the field order of the key's JSON (the dictionary).
                None => {
                    push_item(&mut ps.tasks, i, t);
                }
            }
            self.bytes += ps.tasks.len() - before;
            ps.last = Some(m);
        }
        if let Some(ex) = &snap.exits {
            for e in &ex.tasks {
                let ps = self.pids.entry(e.tgid).or_default();
                let before = ps.ended.len();
                if !self.layout1 {
                    // Layout 2 names the interval; its snapshot holds the ended task.
                    if ps.ended_at != Some(i) {
                        if !ps.ended.is_empty() {
                            ps.ended.push(b',');
                        }
                        ps.ended.extend_from_slice(i.to_string().as_bytes());
                        ps.ended_at = Some(i);
                    }
                } else {
                    push_item(&mut ps.ended, i, e);
                }
                self.bytes += ps.ended.len() - before;
            }
        }
    }

    /// The `SERIES` payload of what is pending (and the text's length), or `None` when
    /// nothing is. `key` is the file offset and the JSON of the key interval the pending
    /// intervals are read with: layout 2, compressed against it; without it, layout 1. The
    /// builder is emptied either way.
    pub(super) fn take(
        &mut self,
        level: i32,
        key: Option<(u64, &[u8])>,
    ) -> std::io::Result<Option<(Vec<u8>, u64)>> {
        let b = std::mem::replace(
            self,
            Builder {
                layout1: self.layout1,
                ..Default::default()
            },
        );
        let Some(first) = b.intervals.first().map(|i| i.0).filter(|_| !b.broken) else {
            return Ok(None);
        };
        let mut z = match key {
            Some((_, dict)) => zstd::bulk::Compressor::with_dictionary(level, dict)?,
            None => zstd::bulk::Compressor::new(level)?,
        };
        let mut frames: Vec<(u64, u64, u64)> = Vec::new();
        let mut packed: Vec<u8> = Vec::new();
        let mut dir_pids: Vec<(u32, u32, u64, u64)> = Vec::with_capacity(b.pids.len());
        let mut text: Vec<u8> = Vec::new();
        let mut raw_total = 0u64;
        let mut close = |text: &mut Vec<u8>, frames: &mut Vec<(u64, u64, u64)>| {
            if text.is_empty() {
                return Ok::<(), std::io::Error>(());
            }
            let c = z.compress(text)?;
            frames.push((packed.len() as u64, c.len() as u64, text.len() as u64));
            raw_total += text.len() as u64;
            packed.extend_from_slice(&c);
            text.clear();
            Ok(())
        };
        for (pid, ps) in &b.pids {
            let start = text.len();
            text.extend_from_slice(b"[[");
            text.extend_from_slice(&ps.tasks);
            text.extend_from_slice(b"],[");
            text.extend_from_slice(&ps.ended);
            text.extend_from_slice(b"]]");
            dir_pids.push((
                *pid,
                frames.len() as u32,
                start as u64,
                (text.len() - start) as u64,
            ));
            if text.len() >= FRAME_BYTES {
                close(&mut text, &mut frames)?;
            }
        }
        close(&mut text, &mut frames)?;
        let Some((key_off, _)) = key else {
            let dir = serde_json::to_vec(&(&b.intervals, &frames, &dir_pids))?;
            let zdir = z.compress(&dir)?;
            let mut payload = Vec::with_capacity(12 + zdir.len() + packed.len());
            payload.extend_from_slice(&first.to_le_bytes());
            payload.extend_from_slice(&(zdir.len() as u32).to_le_bytes());
            payload.extend_from_slice(&zdir);
            payload.extend_from_slice(&packed);
            return Ok(Some((payload, raw_total + dir.len() as u64)));
        };
        text.push(b'[');
        text.extend_from_slice(&b.system);
        text.push(b']');
        let system = frames.len();
        close(&mut text, &mut frames)?;
        let dir = serde_json::to_vec(&(&b.contexts, &frames[..system], &dir_pids, frames[system]))?;
        let zdir = z.compress(&dir)?;
        let mut payload = Vec::with_capacity(20 + zdir.len() + packed.len());
        payload.extend_from_slice(&first.to_le_bytes());
        payload.extend_from_slice(&key_off.to_le_bytes());
        payload.extend_from_slice(&(zdir.len() as u32).to_le_bytes());
        payload.extend_from_slice(&zdir);
        payload.extend_from_slice(&packed);
        Ok(Some((payload, raw_total + dir.len() as u64)))
    }
}

/// Decompress `frame` (against `dict` when given), at most [`MAX_SNAPSHOT`] bytes; `want` is
/// the size the directory claims (checked, never allocated up front).
fn unpack(
    frame: &[u8],
    want: Option<u64>,
    dict: Option<&DecoderDictionary<'_>>,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let limit = want.unwrap_or(MAX_SNAPSHOT).min(MAX_SNAPSHOT);
    match dict {
        Some(d) => zstd::stream::read::Decoder::with_prepared_dictionary(frame, d)
            .and_then(|d| d.take(limit + 1).read_to_end(&mut out)),
        None => zstd::stream::read::Decoder::with_buffer(frame)
            .and_then(|d| d.take(limit + 1).read_to_end(&mut out)),
    }
    .map_err(|e| format!("does not decompress: {e}"))?;
    if out.len() as u64 > limit || want.is_some_and(|w| w != out.len() as u64) {
        return Err(format!(
            "{} bytes decompressed where the directory says {}",
            out.len(),
            want.map_or_else(|| "at most 256 MiB".into(), |w| w.to_string())
        ));
    }
    Ok(out)
}

/// Intervals of a series: each one's wall-clock time (ms), snapshot, and whether tasks of the
/// processes asked for ended in it (layout 2 keeps those in the interval's own snapshot).
pub(super) type Intervals = Vec<(i64, Snapshot, bool)>;

type Dir = (
    Vec<(i64, Snapshot)>,
    Vec<(u64, u64, u64)>,
    Vec<(u32, u32, u64, u64)>,
);
type Dir2 = (
    Vec<(i64, Value)>,
    Vec<(u64, u64, u64)>,
    Vec<(u32, u32, u64, u64)>,
    (u64, u64, u64),
);
type Body = (Vec<(u64, Map<String, Value>)>, Vec<(u64, ExitRaw)>);
type Body2 = (Vec<(u64, Value)>, Vec<u64>);

/// The frame `(off, stored, raw)` of `packed`, decompressed; `what` names it for errors.
fn frame_of(
    packed: &[u8],
    (off, stored, raw): (u64, u64, u64),
    dict: Option<&DecoderDictionary<'_>>,
    what: &str,
) -> Result<Vec<u8>, String> {
    let end = off
        .checked_add(stored)
        .filter(|e| *e <= packed.len() as u64)
        .ok_or_else(|| format!("{what} beyond the chunk"))?;
    unpack(&packed[off as usize..end as usize], Some(raw), dict).map_err(|e| format!("{what} {e}"))
}

/// The intervals of a `SERIES` payload with only the processes `pids`: each interval's time and
/// its snapshot holding those processes and their ended tasks. `key` is, for layout 2, the
/// file offset and JSON of the key the series was compressed against (`None`: layout 1);
/// `system` asks for each interval's system figures ([`system_of`], layout 2 only) rather than
/// the context alone. `Err` says what is damaged.
pub(super) fn read(
    payload: &[u8],
    pids: &[u32],
    key: Option<(u64, &[u8])>,
    system: bool,
) -> Result<Intervals, String> {
    let head = if key.is_some() { 20 } else { 12 };
    if payload.len() < head {
        return Err("shorter than its header".into());
    }
    let dict = match key {
        Some((off, json)) => {
            let mut ob = [0u8; 8];
            ob.copy_from_slice(&payload[8..16]);
            let said = u64::from_le_bytes(ob);
            if said != off {
                return Err(format!(
                    "compressed against the key at offset {said}, but its intervals' key is at                      offset {off}"
                ));
            }
            Some(DecoderDictionary::copy(json))
        }
        None => None,
    };
    let mut lb = [0u8; 4];
    lb.copy_from_slice(&payload[head - 4..head]);
    let dir_len = u32::from_le_bytes(lb) as usize;
    let rest = &payload[head..];
    if dir_len > rest.len() {
        return Err(format!(
            "a directory of {dir_len} bytes in {} left",
            rest.len()
        ));
    }
    let (zdir, packed) = rest.split_at(dir_len);
    let dir = unpack(zdir, None, dict.as_ref())?;
    let bad_dir = |e: serde_json::Error| format!("a directory that is not one: {e}");
    let (mut intervals, frames, dir_pids) = if dict.is_some() {
        let (contexts, frames, pids, sys): Dir2 = serde_json::from_slice(&dir).map_err(bad_dir)?;
        let mut intervals = Vec::new();
        let mut cur: Option<Value> = None;
        for (n, (ms, d)) in contexts.into_iter().enumerate() {
            let v = match cur.as_mut() {
                Some(v) => {
                    apply(v, d).map_err(|e| format!("interval {n}: {e}"))?;
                    v
                }
                None => cur.insert(d),
            };
            let s = Snapshot::deserialize(&*v)
                .map_err(|e| format!("interval {n} is not a snapshot: {e}"))?;
            intervals.push((ms, s, false));
        }
        if system {
            let text = frame_of(packed, sys, dict.as_ref(), "the system figures' frame")?;
            let changes: Vec<Value> = serde_json::from_slice(&text)
                .map_err(|e| format!("the system figures are not a list: {e}"))?;
            if changes.len() != intervals.len() {
                return Err(format!(
                    "system figures of {} intervals for {}",
                    changes.len(),
                    intervals.len()
                ));
            }
            let mut cur: Option<Value> = None;
            for (n, (i, d)) in intervals.iter_mut().zip(changes).enumerate() {
                let i = &mut i.1;
                let v = match cur.as_mut() {
                    Some(v) => {
                        apply(v, d).map_err(|e| format!("system figures {n}: {e}"))?;
                        v
                    }
                    None => cur.insert(d),
                };
                *i = Snapshot::deserialize(&*v)
                    .map_err(|e| format!("system figures {n} are not a snapshot: {e}"))?;
            }
        }
        (intervals, frames, pids)
    } else {
        let (intervals, frames, pids): Dir = serde_json::from_slice(&dir).map_err(bad_dir)?;
        let intervals = intervals
            .into_iter()
            .map(|(ms, s)| (ms, s, false))
            .collect();
        (intervals, frames, pids)
    };
    let mut frame_text: Option<(u32, Vec<u8>)> = None;
    let mut seen = HashSet::new();
    for &(pid, f, start, len) in &dir_pids {
        if !pids.contains(&pid) || !seen.insert(pid) {
            continue;
        }
        if frame_text.as_ref().is_none_or(|(g, _)| *g != f) {
            let at = *frames
                .get(f as usize)
                .ok_or_else(|| format!("pid {pid} in frame {f} of {}", frames.len()))?;
            frame_text = Some((
                f,
                frame_of(packed, at, dict.as_ref(), &format!("frame {f}"))?,
            ));
        }
        let text = &frame_text.as_ref().expect("unpacked above").1;
        let end = start
            .checked_add(len)
            .filter(|e| *e <= text.len() as u64)
            .ok_or_else(|| format!("pid {pid}'s records beyond frame {f}"))?;
        let bytes = &text[start as usize..end as usize];
        let not_records =
            |e: serde_json::Error| format!("pid {pid}'s records are not records: {e}");
        let slot = |i: u64, n: usize| {
            usize::try_from(i)
                .ok()
                .filter(|i| *i < n)
                .ok_or_else(|| format!("pid {pid}'s record for interval {i} of {n}"))
        };
        let n = intervals.len();
        let not_process = |i: usize, e: serde_json::Error| {
            format!("pid {pid}'s record {i} is not a process: {e}")
        };
        if dict.is_some() {
            let (tasks, ended): Body2 = serde_json::from_slice(bytes).map_err(not_records)?;
            let mut cur: Option<Value> = None;
            for (i, d) in tasks {
                let i = slot(i, n)?;
                let v = match cur.as_mut() {
                    Some(v) => {
                        apply(v, d).map_err(|e| format!("pid {pid}'s record {i}: {e}"))?;
                        v
                    }
                    None => cur.insert(d),
                };
                let t = TaskRaw::deserialize(&*v).map_err(|e| not_process(i, e))?;
                intervals[i].1.tasks.push(t);
            }
            for i in ended {
                let i = slot(i, n)?;
                intervals[i].2 = true;
            }
        } else {
            let (tasks, ended): Body = serde_json::from_slice(bytes).map_err(not_records)?;
            let mut cur: Option<Map<String, Value>> = None;
            for (i, fields) in tasks {
                let i = slot(i, n)?;
                let m = match cur.take() {
                    Some(mut m) => {
                        m.extend(fields);
                        m
                    }
                    None => fields,
                };
                let t: TaskRaw = serde_json::from_value(Value::Object(m.clone()))
                    .map_err(|e| not_process(i, e))?;
                intervals[i].1.tasks.push(t);
                cur = Some(m);
            }
            for (i, e) in ended {
                let i = slot(i, n)?;
                if let Some(ex) = intervals[i].1.exits.as_mut() {
                    ex.tasks.push(e);
                }
            }
        }
    }
    Ok(intervals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_applied_to_the_last_value_gives_the_new_one() {
        let vals = [
            serde_json::json!({"a": 5, "b": {"c": [1, 2, 3], "d": "x"}, "e": null}),
            serde_json::json!({"a": 3, "b": {"c": [1, 9, 3], "d": "x"}, "e": 7}),
            serde_json::json!({"a": u64::MAX, "b": {"c": [1, 9], "d": "y"}, "e": -7, "f": 1.5}),
            serde_json::json!({"a": i64::MIN, "b": {"c": [], "d": ["="]}, "e": "s", "f": 2.5}),
            serde_json::json!({"b": [{"c": 1}], "e": {"x": 1}}),
            serde_json::json!([1, {"a": 2}, [3]]),
            serde_json::json!([0, {"a": 1, "b": 2}, [3]]),
            serde_json::json!("text"),
            serde_json::json!(4),
        ];
        for last in &vals {
            for new in &vals {
                let mut v = last.clone();
                if let Some(d) = delta(last, new) {
                    // Stored as text and read back, as the index does.
                    let d: Value = serde_json::from_str(&d.to_string()).unwrap();
                    apply(&mut v, d).unwrap();
                }
                assert_eq!(&v, new, "{last} -> {new}");
            }
        }
        // A counter's increase is written as the increase.
        let d = delta(
            &serde_json::json!({"t": 123456789}),
            &serde_json::json!({"t": 123456791}),
        );
        assert_eq!(d.unwrap().to_string(), r#"{"t":2}"#);
        // A change that does not fit the value is an error, never a panic.
        for (last, d) in [
            (serde_json::json!("s"), serde_json::json!(3)),
            (serde_json::json!(u64::MAX), serde_json::json!(1)),
            (serde_json::json!([1]), serde_json::json!({"5": 1})),
            (serde_json::json!({"a": 1}), serde_json::json!({"b": 1})),
            (serde_json::json!(1), serde_json::json!(["x", 1])),
        ] {
            assert!(apply(&mut last.clone(), d.clone()).is_err(), "{last} {d}");
        }
    }

    #[test]
    fn a_series_reads_back_each_process_as_written() {
        let mut b = Builder::default();
        let mut snaps = Vec::new();
        for i in 0..7u64 {
            let mut s = Snapshot {
                taken_ns: i * 1_000_000_000,
                clk_tck: 100,
                exits: Some(ExitsRaw::default()),
                ..Default::default()
            };
            for pid in 1..=300u32 {
                if pid == 7 && i == 3 {
                    continue; // gone for one interval
                }
                s.tasks.push(TaskRaw {
                    pid,
                    tgid: pid,
                    name: format!("p{pid}"),
                    utime: i * pid as u64,
                    cmdline: Some(vec!["x".repeat(pid as usize)]),
                    ..Default::default()
                });
            }
            if i == 5 {
                s.exits.as_mut().unwrap().tasks.push(ExitRaw {
                    pid: 9001,
                    tgid: 9000,
                    name: "ended".into(),
                    ..Default::default()
                });
            }
            b.add(&s, 1000 + i as i64);
            snaps.push(s);
        }
        // Layout 2 against the first interval's JSON (the key), and layout 1.
        let key = serde_json::to_vec(&snaps[0]).unwrap();
        let mut again = Builder::new(true);
        for (i, s) in snaps.iter().enumerate() {
            again.add(s, 1000 + i as i64);
        }
        let (payload2, _) = b.take(3, Some((4242, &key))).unwrap().unwrap();
        let (payload1, _) = again.take(3, None).unwrap().unwrap();
        assert_eq!(b.len(), 0);
        let k = Some((4242, &key[..]));
        for pids in [vec![7u32], vec![1, 299], vec![9000], vec![12345]] {
            for (payload, key, system) in [
                (&payload2, k, false),
                (&payload2, k, true),
                (&payload1, None, false),
            ] {
                let got = read(payload, &pids, key, system).unwrap();
                assert_eq!(got.len(), snaps.len());
                for ((ms, g, ended), s) in got.iter().zip(&snaps) {
                    assert_eq!(*ms, 1000 + s.taken_ns as i64 / 1_000_000_000);
                    let mut want = only_pids(s, &pids, system);
                    // Layout 2 names the intervals with ended tasks; the reader takes them
                    // from the interval's snapshot.
                    let ex = want.exits.as_mut().unwrap();
                    assert_eq!(
                        *ended,
                        key.is_some() && !ex.tasks.is_empty(),
                        "{pids:?} at {ms}"
                    );
                    if *ended {
                        ex.tasks.clear();
                    }
                    assert_eq!(*g, want, "{pids:?} at {ms}");
                }
            }
        }
        // Read against another key, or a key at another offset: an error, never a panic.
        let other = serde_json::to_vec(&snaps[3]).unwrap();
        let _ = read(&payload2, &[7], Some((4242, &other)), true);
        assert!(read(&payload2, &[7], Some((4243, &key)), false).is_err());
        // A cut before the last frame read ends (layout 2: the system figures; layout 1: the
        // last process's) is an error, never a panic; only the frames asked for are read.
        for (payload, key, system) in [(&payload2, k, true), (&payload1, None, false)] {
            for cut in [0, 11, 20, payload.len() / 2, payload.len() - 1] {
                assert!(
                    read(&payload[..cut], &[299], key, system).is_err(),
                    "cut at {cut}"
                );
            }
            let mut bad = payload.clone();
            let n = bad.len();
            bad[n - 10] ^= 0xff;
            let _ = read(&bad, &[299], key, true);
        }
        assert!(read(&payload1[..payload1.len() - 1], &[1], None, false).is_ok());
    }
}
