//! The per-process index of a monitor store: a `SERIES` chunk after every key period holds the
//! period's processes one by one, so a day of one process reads a few kilobytes per period
//! instead of every interval's whole snapshot (docs/monitor.md, "The store").
//!
//! Payload: the first interval's wall-clock time (i64 ms, LE), a u32 (LE) length and a zstd
//! frame of the directory, then the zstd frames of the processes' records. The directory is
//! the JSON array `[intervals, frames, pids]`: `intervals` each `[wall_ms, snapshot]` with the
//! snapshot's lists emptied (tasks, threads, CPUs, interrupts, cgroups, disks, networks, ended
//! tasks; it keeps what a process's figures are derived with: clocks, memory total, page size);
//! `frames` each `[offset, stored, raw]` (offset after the directory); `pids` each
//! `[pid, frame, start, len]`, a byte range of that frame's decompressed text holding
//! `[tasks, ended]`: `tasks` each `[interval, fields]`, the process's first record whole and
//! the next ones only the fields that changed; `ended` each `[interval, ExitRaw]`, the
//! process's tasks that ended (by thread group).
//!
//! Every number in it is checked before use (an interval index against the intervals, a frame
//! range against the payload, a byte range against the frame); decompression stops at
//! [`MAX_SNAPSHOT`](super::MAX_SNAPSHOT) bytes and nothing is allocated by a claimed size. A
//! series that does not check out is a warning, and its intervals are read whole instead.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;

use hood_monitor::{ExitRaw, ExitsRaw, Snapshot, TaskRaw};
use serde_json::{Map, Value};

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

/// `s` with only the processes `pids` (and their ended tasks), the rest of its lists emptied.
pub(super) fn only_pids(s: &Snapshot, pids: &[u32]) -> Snapshot {
    let mut out = context_of(s);
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

#[derive(Default)]
struct PidSeries {
    /// The process's last record, to write only what changed.
    last: Option<Map<String, Value>>,
    /// `[interval,fields]` items, comma-separated.
    tasks: Vec<u8>,
    /// `[interval,ExitRaw]` items, comma-separated.
    ended: Vec<u8>,
}

/// The recorder's pending series: the intervals appended since the last `SERIES` chunk.
#[derive(Default)]
pub(super) struct Builder {
    intervals: Vec<(i64, Snapshot)>,
    pids: BTreeMap<u32, PidSeries>,
    bytes: usize,
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
        self.intervals.push((wall_ms, context_of(snap)));
        for t in &snap.tasks {
            let Ok(Value::Object(m)) = serde_json::to_value(t) else {
                continue;
            };
            let ps = self.pids.entry(t.pid).or_default();
            let before = ps.tasks.len();
            match &ps.last {
                Some(last) => {
                    let diff: Map<String, Value> = m
                        .iter()
                        .filter(|(k, v)| last.get(*k) != Some(*v))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    push_item(&mut ps.tasks, i, &diff);
                }
                None => {
                    push_item(&mut ps.tasks, i, &m);
                }
            }
            self.bytes += ps.tasks.len() - before;
            ps.last = Some(m);
        }
        if let Some(ex) = &snap.exits {
            for e in &ex.tasks {
                let ps = self.pids.entry(e.tgid).or_default();
                let before = ps.ended.len();
                push_item(&mut ps.ended, i, e);
                self.bytes += ps.ended.len() - before;
            }
        }
    }

    /// The `SERIES` payload of what is pending (and the text's length), or `None` when
    /// nothing is. The builder is emptied either way.
    pub(super) fn take(&mut self, level: i32) -> std::io::Result<Option<(Vec<u8>, u64)>> {
        let b = std::mem::take(self);
        let Some(first) = b.intervals.first().map(|i| i.0) else {
            return Ok(None);
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
            let z = zstd::bulk::compress(text, level)?;
            frames.push((packed.len() as u64, z.len() as u64, text.len() as u64));
            raw_total += text.len() as u64;
            packed.extend_from_slice(&z);
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
        let dir = serde_json::to_vec(&(&b.intervals, &frames, &dir_pids))?;
        let zdir = zstd::bulk::compress(&dir, level)?;
        let mut payload = Vec::with_capacity(12 + zdir.len() + packed.len());
        payload.extend_from_slice(&first.to_le_bytes());
        payload.extend_from_slice(&(zdir.len() as u32).to_le_bytes());
        payload.extend_from_slice(&zdir);
        payload.extend_from_slice(&packed);
        Ok(Some((payload, raw_total + dir.len() as u64)))
    }
}

/// Decompress `frame`, at most [`MAX_SNAPSHOT`] bytes; `want` is the size the directory
/// claims (checked, never allocated up front).
fn unpack(frame: &[u8], want: Option<u64>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let limit = want.unwrap_or(MAX_SNAPSHOT).min(MAX_SNAPSHOT);
    zstd::stream::read::Decoder::with_buffer(frame)
        .and_then(|d| d.take(limit + 1).read_to_end(&mut out))
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

/// Intervals of a series: each one's wall-clock time (ms) and snapshot.
pub(super) type Intervals = Vec<(i64, Snapshot)>;

type Dir = (Intervals, Vec<(u64, u64, u64)>, Vec<(u32, u32, u64, u64)>);
type Body = (Vec<(u64, Map<String, Value>)>, Vec<(u64, ExitRaw)>);

/// The intervals of a `SERIES` payload with only the processes `pids`: each interval's time and
/// its snapshot holding those processes and their ended tasks. `Err` says what is damaged.
pub(super) fn read(payload: &[u8], pids: &[u32]) -> Result<Intervals, String> {
    if payload.len() < 12 {
        return Err("shorter than its header".into());
    }
    let mut lb = [0u8; 4];
    lb.copy_from_slice(&payload[8..12]);
    let dir_len = u32::from_le_bytes(lb) as usize;
    let rest = &payload[12..];
    if dir_len > rest.len() {
        return Err(format!(
            "a directory of {dir_len} bytes in {} left",
            rest.len()
        ));
    }
    let (zdir, packed) = rest.split_at(dir_len);
    let dir = unpack(zdir, None)?;
    let (mut intervals, frames, dir_pids): Dir =
        serde_json::from_slice(&dir).map_err(|e| format!("a directory that is not one: {e}"))?;
    let mut frame_text: Option<(u32, Vec<u8>)> = None;
    let mut seen = HashSet::new();
    for &(pid, f, start, len) in &dir_pids {
        if !pids.contains(&pid) || !seen.insert(pid) {
            continue;
        }
        if frame_text.as_ref().is_none_or(|(g, _)| *g != f) {
            let &(off, stored, raw) = frames
                .get(f as usize)
                .ok_or_else(|| format!("pid {pid} in frame {f} of {}", frames.len()))?;
            let end = off
                .checked_add(stored)
                .filter(|e| *e <= packed.len() as u64)
                .ok_or_else(|| format!("frame {f} beyond the chunk"))?;
            frame_text = Some((f, unpack(&packed[off as usize..end as usize], Some(raw))?));
        }
        let text = &frame_text.as_ref().expect("unpacked above").1;
        let end = start
            .checked_add(len)
            .filter(|e| *e <= text.len() as u64)
            .ok_or_else(|| format!("pid {pid}'s records beyond frame {f}"))?;
        let (tasks, ended): Body = serde_json::from_slice(&text[start as usize..end as usize])
            .map_err(|e| format!("pid {pid}'s records are not records: {e}"))?;
        let slot = |i: u64, n: usize| {
            usize::try_from(i)
                .ok()
                .filter(|i| *i < n)
                .ok_or_else(|| format!("pid {pid}'s record for interval {i} of {n}"))
        };
        let n = intervals.len();
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
                .map_err(|e| format!("pid {pid}'s record {i} is not a process: {e}"))?;
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
    Ok(intervals)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (payload, _) = b.take(3).unwrap().unwrap();
        assert_eq!(b.len(), 0);
        for pids in [vec![7u32], vec![1, 299], vec![9000], vec![12345]] {
            let got = read(&payload, &pids).unwrap();
            assert_eq!(got.len(), snaps.len());
            for ((ms, g), s) in got.iter().zip(&snaps) {
                assert_eq!(*ms, 1000 + s.taken_ns as i64 / 1_000_000_000);
                assert_eq!(*g, only_pids(s, &pids), "{pids:?} at {ms}");
            }
        }
        // A cut before the last process's frame ends is an error, never a panic; only the
        // frames of the processes asked for are read.
        for cut in [0, 11, 20, payload.len() / 2, payload.len() - 1] {
            assert!(read(&payload[..cut], &[299]).is_err(), "cut at {cut}");
        }
        assert!(read(&payload[..payload.len() - 1], &[1]).is_ok());
        let mut bad = payload.clone();
        let n = bad.len();
        bad[n - 10] ^= 0xff;
        let _ = read(&bad, &[299]);
    }
}
