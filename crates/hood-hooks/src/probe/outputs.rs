//! What the hits become: a trace file ([`TraceOut`]) or call-path tables ([`CallsOut`]),
//! behind one [`Consumer`], with the per-process facts both need ([`Procs`]).

use std::collections::{BTreeMap, HashMap};

use hood_format::{tags, OutputFile, Writer};
use hood_tracemodel::calls::{Limits, ProcessCalls, ThreadBuilder};
use hood_tracemodel::trace::{encode_raw, ProbeCosts, ProcessTrace, ThreadInfo, PAYLOAD_VERSION};

use super::follow::NewPoint;
use super::hits::Hit;
use super::{ProbeConfig, ProbeOutput, ProbeRun};
use crate::HooksError;

/// What the end of a recording knows.
pub(super) struct Finish<'a> {
    pub(super) cfg: &'a ProbeConfig,
    pub(super) argv: &'a [String],
    pub(super) start_mono_ns: u64,
    pub(super) end_mono_ns: u64,
    /// Hits lost per thread id (0: unknown thread).
    pub(super) lost: &'a BTreeMap<u32, u64>,
    pub(super) lost_note: Option<String>,
    /// Key → function name.
    pub(super) symbols: BTreeMap<u64, String>,
    /// What was probed and what it costs, for the notes.
    pub(super) describe: String,
    /// What the selection said (entry-only functions, inlined copies, libraries skipped),
    /// then (from `notes_at_start` on) what was probed late (an exec, a dlopen).
    pub(super) notes: &'a [String],
    pub(super) notes_at_start: usize,
    /// The command ended (else it, or the attached processes, run on).
    pub(super) ended: bool,
}

/// Where hits go, in time order per thread.
pub(super) trait Consumer {
    fn hits(&mut self, hits: &[Hit]) -> Result<(), HooksError>;
    /// One round's context-switch records, per CPU.
    fn switches(&mut self, _per_cpu: &BTreeMap<u32, Vec<u8>>) -> Result<(), HooksError> {
        Ok(())
    }
    /// `pid` exec'd at `time`: its hits from then on are a new image's.
    fn exec(&mut self, pid: u32, time: u64) -> Result<(), HooksError>;
    /// The executable of `pid`'s current image.
    fn image_exe(&mut self, pid: u32, path: &str) {
        let _ = (pid, path);
    }
    /// Functions probed late (their hits follow).
    fn more_points(&mut self, new: &[NewPoint]);
    /// Write the end of the output and put it in place.
    fn finish(self: Box<Self>, f: &Finish) -> Result<(), HooksError>;
}

/// An image of a process: its pid and when it started (the recording's start, or its exec).
pub(super) type Image = (u32, u64);

/// The per-process facts both outputs need.
pub(super) struct Procs {
    /// Executable per image that had hits.
    pub(super) exe_of: BTreeMap<Image, String>,
    /// The executable probed, for a process gone before its first hit was read.
    pub(super) exe_default: String,
    pub(super) start_mono_ns: u64,
    /// The current image of a process that exec'd while recorded.
    pub(super) current: HashMap<u32, u64>,
    /// The executable of a process's current image, from its mapping.
    pub(super) exe_hint: HashMap<u32, String>,
    /// Images left by an exec.
    pub(super) replaced: std::collections::HashSet<Image>,
    /// First and last hit, and hits, per (image, tid).
    pub(super) threads: BTreeMap<(u32, u64, u32), (u64, u64, u64)>,
}

impl Procs {
    pub(super) fn new(exe_default: String, start_mono_ns: u64) -> Procs {
        Procs {
            exe_of: BTreeMap::new(),
            exe_default,
            start_mono_ns,
            current: HashMap::new(),
            exe_hint: HashMap::new(),
            replaced: Default::default(),
            threads: BTreeMap::new(),
        }
    }

    /// The image a hit of `pid` belongs to now.
    fn image(&self, pid: u32) -> Image {
        (
            pid,
            self.current
                .get(&pid)
                .copied()
                .unwrap_or(self.start_mono_ns),
        )
    }

    /// Count `h`; its image, and whether it is the image's first hit.
    fn see(&mut self, h: &Hit) -> (Image, bool) {
        let img = self.image(h.pid);
        let e = self
            .threads
            .entry((img.0, img.1, h.tid))
            .or_insert((h.time, h.time, 0));
        e.1 = h.time;
        e.2 += 1;
        if self.exe_of.contains_key(&img) {
            return (img, false);
        }
        let exe = self
            .exe_hint
            .get(&h.pid)
            .cloned()
            .or_else(|| hood_procfs::process::exe(h.pid).map(|p| p.to_string_lossy().into_owned()))
            .unwrap_or_else(|| self.exe_default.clone());
        self.exe_of.insert(img, exe);
        (img, true)
    }

    /// `pid` exec'd at `time`: the image it leaves, if it had hits.
    fn exec(&mut self, pid: u32, time: u64) -> Option<Image> {
        let old = self.image(pid);
        self.current.insert(pid, time);
        self.exe_hint.remove(&pid);
        self.exe_of.contains_key(&old).then(|| {
            self.replaced.insert(old);
            old
        })
    }

    /// An image's state at the end.
    fn state(&self, img: &Image, ended: bool) -> hood_tracemodel::ProcessState {
        if self.replaced.contains(img) {
            hood_tracemodel::ProcessState::Exec
        } else if ended {
            hood_tracemodel::ProcessState::Exited
        } else {
            hood_tracemodel::ProcessState::Running
        }
    }
}

pub(super) struct TraceOut {
    pub(super) w: Writer<OutputFile>,
    pub(super) procs: Procs,
    pub(super) start_mono_ns: u64,
    pub(super) funcs: Vec<u64>,
    pub(super) symbols: BTreeMap<u64, String>,
    pub(super) notes: Vec<String>,
    pub(super) words: BTreeMap<(u32, u64, u32), (u64, Vec<u64>)>,
    /// Functions were probed late: the process chunks written so far lack them.
    pub(super) grown: bool,
    /// The cost per call taken out of the times (None: left in).
    pub(super) cost: Option<ProbeCosts>,
    /// Per point: an entry probe only (its calls are written as entries and returns at once).
    pub(super) entry_only: Vec<bool>,
}

impl TraceOut {
    fn process(
        &self,
        img: Image,
        lost: &BTreeMap<u32, u64>,
        state: hood_tracemodel::ProcessState,
    ) -> ProcessTrace {
        let (pid, start) = img;
        let threads = self
            .procs
            .threads
            .iter()
            .filter(|((p, s, _), _)| (*p, *s) == img)
            .map(|(&(_, _, tid), &(_, _, n))| ThreadInfo {
                tid,
                exit_ticks: None,
                written: n,
                dropped: lost.get(&tid).copied().unwrap_or(0),
                overwritten: 0,
            })
            .collect();
        ProcessTrace {
            pid,
            ppid: 0,
            exe: self.procs.exe_of.get(&img).cloned().unwrap_or_default(),
            clock: hood_tracemodel::Clock::Monotonic,
            ticks_per_sec: 1_000_000_000,
            start_ticks: start,
            start_mono_ns: start,
            state,
            flags: 0,
            capacity: 0,
            full: "stream".into(),
            threads,
            symbols: self.symbols.clone(),
            tags: BTreeMap::new(),
            funcs: self.funcs.clone(),
            notes: self.notes.clone(),
            probe_cost: self.cost.as_ref().map(|c| c.emulated),
            probe_cost_stepped: self.cost.as_ref().and_then(|c| c.stepped),
            probe_stepped: self
                .cost
                .as_ref()
                .map(|c| c.stepped_funcs.clone())
                .unwrap_or_default(),
        }
    }

    fn write_process(&mut self, p: &ProcessTrace) -> Result<(), HooksError> {
        let v = serde_json::json!({"version": PAYLOAD_VERSION, "process": p});
        self.w
            .write_chunk(tags::trace::PROCESS, &serde_json::to_vec(&v)?, true)?;
        Ok(())
    }
}

impl Consumer for TraceOut {
    fn hits(&mut self, hits: &[Hit]) -> Result<(), HooksError> {
        if std::mem::take(&mut self.grown) {
            let imgs: Vec<Image> = self.procs.exe_of.keys().copied().collect();
            for img in imgs {
                let p = self.process(img, &BTreeMap::new(), self.procs.state(&img, false));
                self.write_process(&p)?;
            }
        }
        for h in hits {
            let (img, first) = self.procs.see(h);
            if first {
                // A provisional process chunk, so a killed recorder's file reads.
                let p = self.process(
                    img,
                    &BTreeMap::new(),
                    hood_tracemodel::ProcessState::Running,
                );
                self.write_process(&p)?;
            }
            let kind = if h.ret {
                hood_abi::KIND_EXIT
            } else {
                hood_abi::KIND_ENTRY
            };
            let e = self
                .words
                .entry((img.0, img.1, h.tid))
                .or_insert_with(|| (h.time, Vec::new()));
            if e.1.is_empty() {
                e.0 = h.time;
            }
            e.1.push(hood_abi::encode_event(h.time, u64::from(h.point), kind));
            if !h.ret && self.entry_only.get(h.point as usize) == Some(&true) {
                // Counted, with no time: it returns as it enters.
                e.1.push(hood_abi::encode_event(
                    h.time,
                    u64::from(h.point),
                    hood_abi::KIND_EXIT,
                ));
            }
        }
        for (&(pid, start, tid), (anchor, words)) in self.words.iter_mut() {
            for part in words.chunks(hood_tracemodel::trace::MAX_EVENTS_PER_CHUNK) {
                let (payload, last) = encode_raw(pid, tid, start, *anchor, part);
                self.w.write_chunk(tags::trace::EVENTS, &payload, true)?;
                *anchor = last;
            }
            words.clear();
        }
        self.w.flush()?;
        Ok(())
    }

    fn exec(&mut self, pid: u32, time: u64) -> Result<(), HooksError> {
        if let Some(old) = self.procs.exec(pid, time) {
            let p = self.process(old, &BTreeMap::new(), hood_tracemodel::ProcessState::Exec);
            self.write_process(&p)?;
        }
        Ok(())
    }

    fn image_exe(&mut self, pid: u32, path: &str) {
        self.procs.exe_hint.insert(pid, path.to_string());
    }

    fn more_points(&mut self, new: &[NewPoint]) {
        for n in new {
            note_point(n, &mut self.funcs, &mut self.entry_only, &mut self.cost);
            self.symbols.insert(n.key, n.name.clone());
        }
        self.grown = true;
    }

    fn switches(&mut self, per_cpu: &BTreeMap<u32, Vec<u8>>) -> Result<(), HooksError> {
        for (&cpu, b) in per_cpu {
            if b.is_empty() {
                continue;
            }
            let mut c = Vec::with_capacity(4 + b.len());
            c.extend_from_slice(&cpu.to_le_bytes());
            c.extend_from_slice(b);
            self.w.write_chunk(tags::trace::SWITCHES, &c, true)?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, f: &Finish) -> Result<(), HooksError> {
        self.notes
            .extend(f.notes.iter().skip(f.notes_at_start).cloned());
        if let Some(n) = &f.lost_note {
            self.notes.push(n.clone());
        }
        let imgs: Vec<Image> = self.procs.exe_of.keys().copied().collect();
        let state = if f.ended {
            hood_tracemodel::ProcessState::Exited
        } else {
            hood_tracemodel::ProcessState::Running
        };
        for img in imgs {
            let p = self.process(img, f.lost, self.procs.state(&img, f.ended));
            self.write_process(&p)?;
        }
        if self.procs.exe_of.is_empty() {
            // No hit at all: the file still says what was probed.
            let mut p = self.process((0, self.start_mono_ns), f.lost, state);
            p.exe = f.argv.first().cloned().unwrap_or_default();
            p.notes
                .push("no probed function was called while hood recorded".to_string());
            self.write_process(&p)?;
        }
        if let Some(n) = &f.lost_note {
            self.w
                .write_chunk(tags::common::NOTES, &serde_json::to_vec(&[n])?, false)?;
        }
        self.w.commit()?;
        Ok(())
    }
}

/// A point probed late, in an output's per-point tables: its key and whether it is entry
/// only, and its kind of first instruction in the costs. True when it is of the
/// single-stepped kind and the times are compensated.
pub(super) fn note_point(
    n: &NewPoint,
    keys: &mut Vec<u64>,
    entry_only: &mut Vec<bool>,
    cost: &mut Option<ProbeCosts>,
) -> bool {
    let i = n.index as usize;
    if keys.len() <= i {
        keys.resize(i + 1, 0);
        entry_only.resize(i + 1, false);
    }
    keys[i] = n.key;
    entry_only[i] = n.entry_only;
    match (cost.as_mut(), n.stepped) {
        (Some(c), true) => {
            c.mark_stepped(n.key);
            true
        }
        _ => false,
    }
}

pub(super) struct CallsOut {
    pub(super) procs: Procs,
    pub(super) builders: BTreeMap<(u32, u64, u32), ThreadBuilder>,
    pub(super) keys: Vec<u64>,
    pub(super) cost: Option<ProbeCosts>,
    /// Per point: an entry probe only (its calls are counted, with no time).
    pub(super) entry_only: Vec<bool>,
}

impl Consumer for CallsOut {
    fn hits(&mut self, hits: &[Hit]) -> Result<(), HooksError> {
        for h in hits {
            let (img, _) = self.procs.see(h);
            let b = self
                .builders
                .entry((img.0, img.1, h.tid))
                .or_insert_with(|| {
                    ThreadBuilder::compensated(h.tid, self.cost.clone().unwrap_or_default())
                });
            let f = self.keys.get(h.point as usize).copied().unwrap_or(0);
            if self.entry_only.get(h.point as usize) == Some(&true) {
                if !h.ret {
                    b.counted(f);
                }
            } else if h.ret {
                b.exit(f, h.time);
            } else {
                b.entry(f, h.time);
            }
        }
        Ok(())
    }

    fn exec(&mut self, pid: u32, time: u64) -> Result<(), HooksError> {
        self.procs.exec(pid, time);
        Ok(())
    }

    fn image_exe(&mut self, pid: u32, path: &str) {
        self.procs.exe_hint.insert(pid, path.to_string());
    }

    fn more_points(&mut self, new: &[NewPoint]) {
        for n in new {
            if note_point(n, &mut self.keys, &mut self.entry_only, &mut self.cost) {
                for b in self.builders.values_mut() {
                    b.mark_stepped(n.key);
                }
            }
        }
    }

    fn finish(self: Box<Self>, f: &Finish) -> Result<(), HooksError> {
        let CallsOut {
            procs,
            builders,
            keys: _,
            cost,
            entry_only: _,
        } = *self;
        let mut out: BTreeMap<Image, ProcessCalls> = BTreeMap::new();
        for ((pid, start, _tid), b) in builders {
            let unmatched = b.unmatched_exits;
            let img = (pid, start);
            let p = out.entry(img).or_insert_with(|| ProcessCalls {
                pid,
                ppid: 0,
                exe: procs.exe_of.get(&img).cloned().unwrap_or_default(),
                ticks_per_sec: 1_000_000_000,
                clock: hood_tracemodel::Clock::Monotonic,
                compensate: cost.is_some(),
                comp_self_ticks: cost.as_ref().map_or(0, |c| c.emulated.self_ns),
                comp_child_ticks: cost.as_ref().map_or(0, |c| c.emulated.child_ns),
                flags: 0,
                limits: Limits::default(),
                state: procs.state(&img, f.ended),
                span_ns: f.end_mono_ns.saturating_sub(f.start_mono_ns),
                threads: Vec::new(),
                symbols: f.symbols.clone(),
                notes: std::iter::once(f.describe.clone())
                    .chain(f.notes.iter().cloned())
                    .collect(),
            });
            let t = b.finish(f.end_mono_ns, f.ended);
            p.flags |= t.flags;
            p.threads.push(t);
            if unmatched > 0 {
                p.notes.push(format!(
                    "thread {}: {unmatched} returns of calls made before the probes came, not counted",
                    p.threads.last().map_or(0, |t| t.tid)
                ));
            }
        }
        let mut procs: Vec<ProcessCalls> = out.into_values().collect();
        if let Some(n) = &f.lost_note {
            for p in procs.iter_mut() {
                p.notes.push(n.clone());
            }
        }
        let ProbeOutput::Calls(path) = &f.cfg.output else {
            return Ok(());
        };
        let command = match f.cfg.run {
            ProbeRun::Command(_) => "run",
            ProbeRun::Pids(_) => "record",
        };
        crate::calls::write(path, command, f.argv, &procs)?;
        Ok(())
    }
}
