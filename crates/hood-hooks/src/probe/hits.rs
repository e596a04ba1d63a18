//! Probe hits out of the kernel's rings, and their time order across CPUs with the side-band
//! records of the followed processes.

use std::collections::{BTreeMap, HashMap};

use hood_perf::UprobeRecorder;
use hood_raw::frames::for_each_frame;

use super::follow::{Follower, NewPoint, Told, Track};
use super::outputs::Consumer;
use crate::HooksError;

/// One probe hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// CLOCK_MONOTONIC ns.
    pub time: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Index of the function in the selection.
    pub point: u32,
    /// A return, else an entry.
    pub ret: bool,
}

/// The hits and losses in one CPU's raw ring bytes (records of [`hood_perf::UPROBE_SAMPLE_TYPE`]);
/// `ids` maps event ids to (function, return). Malformed bytes end the decoding, counted.
pub fn decode_hits(
    b: &[u8],
    ids: &HashMap<u64, (u32, bool)>,
    hits: &mut Vec<Hit>,
    lost: &mut BTreeMap<u32, u64>,
) -> bool {
    let u32_at = |r: &[u8], o: usize| {
        r.get(o..o + 4)
            .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
    };
    let u64_at = |r: &[u8], o: usize| {
        r.get(o..o + 8)
            .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
    };
    for_each_frame(b, |f| {
        let r = f.bytes;
        match f.ty {
            // PERF_RECORD_SAMPLE: id, pid, tid, time, cpu, res.
            9 if r.len() >= 40 => {
                if let Some(&(point, ret)) = ids.get(&u64_at(r, 8)) {
                    hits.push(Hit {
                        time: u64_at(r, 24),
                        pid: u32_at(r, 16),
                        tid: u32_at(r, 20),
                        point,
                        ret,
                    });
                }
            }
            // PERF_RECORD_LOST: id, lost, then the sample id of the thread that lost them
            // (pid, tid, time, cpu, res, identifier).
            2 if r.len() >= 24 => {
                let tid = if r.len() >= 56 { u32_at(r, 28) } else { 0 };
                *lost.entry(tid).or_default() += u64_at(r, 16);
            }
            _ => {}
        }
    })
    .is_ok()
}

/// A hit or a side-band record (an exec, a mapping, a fork, an exit).
pub(super) enum Item {
    Hit(Hit),
    Track(u64, Track),
}

impl Item {
    fn time(&self) -> u64 {
        match self {
            Item::Hit(h) => h.time,
            Item::Track(t, _) => *t,
        }
    }
}

/// Time order across CPUs: hits and side-band records wait until every ring has been drained
/// past their time.
pub(super) struct Orderer {
    pub(super) pending: Vec<Item>,
    pub(super) ready: Vec<Item>,
    pub(super) hits: Vec<Hit>,
    pub(super) new: Vec<NewPoint>,
}

impl Orderer {
    /// Hand on the hits and records older than `settled` (all of them with `None`), in time
    /// order: hits to `out`, records to `follow` (which places the probes they call for in
    /// `rec`), and what they change to `out`.
    pub(super) fn release(
        &mut self,
        settled: Option<u64>,
        out: &mut dyn Consumer,
        follow: &mut Follower,
        rec: &mut UprobeRecorder,
    ) -> Result<(), HooksError> {
        self.pending.sort_by_key(Item::time);
        let n = match settled {
            Some(t) => self.pending.partition_point(|i| i.time() <= t),
            None => self.pending.len(),
        };
        self.ready.clear();
        self.ready.extend(self.pending.drain(..n));
        self.hits.clear();
        for item in self.ready.drain(..) {
            match item {
                Item::Hit(h) => self.hits.push(h),
                Item::Track(time, t) => {
                    if !self.hits.is_empty() {
                        out.hits(&self.hits)?;
                        self.hits.clear();
                    }
                    self.new.clear();
                    let told = follow.handle(time, t, rec, &mut self.new);
                    if !self.new.is_empty() {
                        out.more_points(&self.new);
                    }
                    match told {
                        Some(Told::Exec { pid }) => out.exec(pid, time)?,
                        Some(Told::Exe { pid, path }) => out.image_exe(pid, &path),
                        None => {}
                    }
                }
            }
        }
        if !self.hits.is_empty() {
            out.hits(&self.hits)?;
        }
        Ok(())
    }
}
