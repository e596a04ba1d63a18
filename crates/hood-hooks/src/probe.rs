//! Probed functions (`--probe`): entry and return events of functions in programs nobody
//! rebuilt, from the kernel's uprobes (hood-perf's [`UprobeRecorder`], which says why they are
//! tracefs uprobe events), for a command hood
//! starts or for processes already running. The events become what an instrumented program's
//! runtime would have written: a trace file `hood trace report` reads unchanged (the runtime's
//! 8-byte event words, one EVENTS chunk per thread and round, on a 1 GHz CLOCK_MONOTONIC
//! clock), or call-path tables `hood calls report` reads unchanged.
//!
//! Each CPU's ring is drained every few milliseconds; hits of all CPUs are put in time order
//! (a thread moves between CPUs) and handed on once no CPU can still deliver an older one. The
//! probes are placed in a program only while hood's events are open: however hood ends, the
//! kernel takes them out of the program, and an attached process runs on unchanged (the
//! inert definitions a SIGKILLed hood leaves in tracefs are removed by the next one).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hood_format::{tags, FileKind, OutputFile, Writer};
use hood_perf::{SwitchRecorder, UprobePoint, UprobeRecorder, UprobeTarget};
use hood_proc::child::{Child, Exit};
use hood_proc::clock::monotonic_ns;
use hood_proc::signal;
use hood_proc::steer::{Steer, Steering, STOP_GRACE};
use hood_raw::frames::for_each_frame;
use hood_symbols::probe::{self as spec, ProbeSpec, Scope, Selection, CONFIRM_ABOVE};
use hood_symbols::SymbolError;
use hood_tracemodel::calls::{Limits, ProcessCalls, ThreadBuilder};
use hood_tracemodel::trace::{
    encode_raw, ProbeCost, ProbeCosts, ProcessTrace, ThreadInfo, TraceMeta, PAYLOAD_VERSION,
};

use crate::HooksError;

mod follow;

use follow::{Follower, NewPoint, Told, Track};

/// What one probe hit costs the probed program, measured on the machine the docs were written
/// on (bench/probe: an entry and a return, each a breakpoint trap into the kernel and a perf
/// sample): the first estimate of a selection's cost, said before it is paid.
pub const COST_PER_CALL_NS: u64 = 10_000;

/// A function that does next to nothing, probed by [`calibrate`] where hood-perf has no
/// functions of known first instructions (other than x86-64).
#[cfg(not(target_arch = "x86_64"))]
#[inline(never)]
fn calibration_target(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(3)
}

/// Calls of each calibration function probed to measure the cost.
const CALIBRATION_CALLS: u64 = 2000;

/// What a probed call costs here and now, for each way the kernel runs a probed function's
/// first instruction (hood_perf::uprobe_cost): emulated, and single-stepped out of line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calibration {
    /// A function whose first instruction the kernel emulates (a push, a nop, a jump).
    pub emulated: ProbeCost,
    /// A function whose first instruction the kernel single-steps (most others).
    pub stepped: ProbeCost,
}

/// A function [`calibrate`] probes: its address, and a way to call it.
type Target = (u64, fn(u64) -> u64);

/// The functions [`calibrate`] probes, emulated kind first.
fn calibration_targets() -> [Target; 2] {
    #[cfg(target_arch = "x86_64")]
    {
        use hood_perf::uprobe_cost as c;
        [
            (c::emulated_target_addr(), c::call_emulated_target),
            (c::stepped_target_addr(), c::call_stepped_target),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let f: fn(u64) -> u64 = std::hint::black_box(calibration_target);
        [(f as usize as u64, f), (f as usize as u64, f)]
    }
}

/// Measure what one probed call costs here and now: an entry and a return probe are put on
/// two functions of hood's own that do next to nothing, one whose first instruction the
/// kernel emulates and one whose first instruction it single-steps (a second trap), in the
/// calling thread, which calls each 2000 times. For each, the median time from an entry event
/// to its return event is the part of the cost a probed call's own span holds (`self_ns`);
/// the median time from one entry event to the next, less that, the part its caller's holds
/// (`child_ns`). Medians, so a preemption or two under load does not move them. Root, as
/// every probe.
pub fn calibrate() -> Result<Calibration, HooksError> {
    let targets = calibration_targets();
    // The executable mapping holding `addr`: its range (for map_files) and the file offset.
    let mapping_of = |addr: u64| -> Result<Option<(String, u64)>, HooksError> {
        let mut found = None;
        hood_procfs::process::for_each_own_maps_line(|l| {
            found = hood_raw::maps::parse_maps_line(l)
                .filter(|m| m.is_exec() && (m.start..m.end).contains(&addr))
                .map(|m| {
                    (
                        format!("{:x}-{:x}", m.start, m.end),
                        addr - m.start + m.offset,
                    )
                });
            found.is_none()
        })
        .map_err(|source| HooksError::Io {
            what: "reading /proc/self/maps".into(),
            source,
        })?;
        Ok(found)
    };
    // The very files mapped, whatever their paths hold now.
    let mut files = Vec::new();
    let mut points = Vec::new();
    for (addr, _) in targets {
        let (range, offset) = mapping_of(addr)?.ok_or_else(|| {
            HooksError::Config(format!(
                "hood's own code at {addr:#x} is in no executable mapping of /proc/self/maps"
            ))
        })?;
        let at = format!("/proc/self/map_files/{range}");
        let file = std::fs::File::open(&at).map_err(|source| HooksError::Io {
            what: format!("opening {at}"),
            source,
        })?;
        points.push(UprobePoint {
            path: format!("/proc/self/fd/{}", file.as_raw_fd()),
            offset,
            returns: true,
        });
        files.push(file);
    }
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    let mut rec = UprobeRecorder::open(&points, &UprobeTarget::Threads(vec![tid]), 64, false)?;
    let ids: HashMap<u64, (u32, bool)> =
        rec.ids().iter().map(|i| (i.id, (i.point, i.ret))).collect();
    rec.enable()?;
    for (_, call) in targets {
        for i in 0..CALIBRATION_CALLS {
            std::hint::black_box(call(std::hint::black_box(i)));
        }
    }
    rec.disable();
    let (mut hits, mut lost) = (Vec::new(), BTreeMap::new());
    rec.drain(&mut |_, b| {
        decode_hits(b, &ids, &mut hits, &mut lost);
        Ok(())
    })?;
    drop(rec);
    drop(files);
    hits.sort_by_key(|h| h.time);
    let cost_of = |point: u32| -> Result<ProbeCost, HooksError> {
        let hits: Vec<&Hit> = hits.iter().filter(|h| h.point == point).collect();
        let mut spans = Vec::new();
        let mut periods = Vec::new();
        for w in hits.windows(2) {
            if !w[0].ret && w[1].ret {
                spans.push(w[1].time.saturating_sub(w[0].time));
            }
        }
        let mut last_entry: Option<u64> = None;
        for h in hits.iter().filter(|h| !h.ret) {
            if let Some(t) = last_entry {
                periods.push(h.time.saturating_sub(t));
            }
            last_entry = Some(h.time);
        }
        if (spans.len() as u64) < CALIBRATION_CALLS / 2
            || (periods.len() as u64) < CALIBRATION_CALLS / 2
        {
            return Err(HooksError::Config(format!(
                "measuring the cost of a probe: {} calls made, {} seen entering and returning",
                CALIBRATION_CALLS,
                spans.len()
            )));
        }
        let median = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        let self_ns = median(&mut spans);
        let per_call = median(&mut periods);
        Ok(ProbeCost {
            self_ns,
            child_ns: per_call.saturating_sub(self_ns),
        })
    };
    Ok(Calibration {
        emulated: cost_of(0)?,
        stepped: cost_of(1)?,
    })
}

/// ns as µs.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Per point of `sel`: whether the kernel single-steps the first instruction the probe
/// replaces (read from the file at the probe's offset; an unreadable one counts as
/// single-stepped, the higher figure).
fn stepped_points(sel: &Selection) -> Vec<bool> {
    sel.points
        .iter()
        .map(|p| {
            sel.objects
                .get(p.object)
                .is_none_or(|o| stepped_at(&o.file, p.offset))
        })
        .collect()
}

/// Whether the kernel single-steps the instruction at `offset` of `file` (an unreadable one
/// counts as single-stepped, the higher figure).
fn stepped_at(file: &std::fs::File, offset: u64) -> bool {
    use std::os::unix::fs::FileExt as _;
    let mut b = [0u8; 8];
    let n = file.read_at(&mut b, offset).unwrap_or(0);
    !hood_perf::uprobe_cost::kernel_emulates(&b[..n])
}

/// Whose calls are probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeRun {
    /// A command hood starts (`-- CMD`): probed from its exec, with its children.
    Command(Vec<String>),
    /// Running processes (`-p`), with the threads and children they start.
    Pids(Vec<u32>),
}

/// What the events become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutput {
    /// A trace file (`hood trace record --probe`).
    Trace(PathBuf),
    /// A Calls file (`hood calls run|record --probe`).
    Calls(PathBuf),
}

/// A probe recording.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// `--probe` specs.
    pub specs: Vec<String>,
    /// Go ahead with more than [`CONFIRM_ABOVE`] functions (`--yes`).
    pub yes: bool,
    /// Whose calls.
    pub run: ProbeRun,
    /// Stop after this long (attached processes run on).
    pub duration: Option<Duration>,
    /// Record context switches (traces).
    pub sched: bool,
    /// Where to.
    pub output: ProbeOutput,
}

/// How a probe recording ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOutcome {
    /// The command's exit status as a shell reports it (0 for attached processes).
    pub status: i32,
    /// Probe hits recorded (entries and returns).
    pub events: u64,
    /// Hits the kernel lost (rings full).
    pub lost: u64,
    /// The error that ended the recording early (a ring that could not be read, a write
    /// that failed): a command started was killed, and the file holds what was recorded
    /// before (logged).
    pub error: Option<String>,
}

/// Ring pages per CPU: 1 MiB, 26,000 hits, drained every few milliseconds.
const RING_PAGES: usize = 256;
/// A hit is handed on once every ring has been drained past its time by this much.
const SETTLE_NS: u64 = 1_000_000;

/// The functions `cfg` selects, each file opened and checked; an error when a spec selects
/// nothing, or selects more than [`CONFIRM_ABOVE`] functions without
/// `--yes` (saying what they would cost).
pub fn select(cfg: &ProbeConfig) -> Result<Selection, HooksError> {
    let specs: Vec<ProbeSpec> = cfg
        .specs
        .iter()
        .map(|s| spec::parse_spec(s))
        .collect::<Result<_, _>>()?;
    let sel = match &cfg.run {
        ProbeRun::Command(argv) => {
            let prog = argv.first().ok_or(HooksError::NoCommand)?;
            let exe = crate::trace::filter::which(prog)
                .ok_or_else(|| HooksError::Config(format!("command not found: {prog}")))?;
            let scope = Scope {
                exe,
                exe_name: prog.clone(),
                mapped: Vec::new(),
            };
            // A library not among those the program needs may be loaded later (dlopen):
            // its spec waits for it, said in a note.
            let mut specs = specs;
            let mut waiting = Vec::new();
            loop {
                match spec::select(&specs, &scope) {
                    Ok(mut sel) => {
                        sel.notes.splice(0..0, waiting);
                        break sel;
                    }
                    Err(SymbolError::ProbeLibraryAbsent { spec: text, reason }) => {
                        specs.retain(|s| s.text != text);
                        waiting.push(waiting_note(&text, &reason));
                        if specs.is_empty() {
                            break Selection {
                                notes: waiting,
                                ..Selection::default()
                            };
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        ProbeRun::Pids(pids) => select_in_processes(&specs, pids)?,
    };
    if sel.points.len() > CONFIRM_ABOVE && !cfg.yes {
        return Err(HooksError::Config(format!(
            "--probe {} selects {} functions: each call of one costs the program about {:.1} µs \
             (two kernel traps), so a program making a million such calls a second runs several \
             times slower; narrow the selection, or add --yes to go ahead",
            cfg.specs.join(" --probe "),
            sel.points.len(),
            COST_PER_CALL_NS as f64 / 1000.0
        )));
    }
    Ok(sel)
}

/// Each spec resolved in each process's own executable and libraries (processes may run
/// different programs, or other versions of a library), the functions of all put together. A
/// spec that selects nothing in some of the processes is said in a note; one that selects
/// nothing in any of them is an error (the first process's), as with one process.
fn select_in_processes(specs: &[ProbeSpec], pids: &[u32]) -> Result<Selection, HooksError> {
    if pids.is_empty() {
        return Err(HooksError::Config("no process given".into()));
    }
    let scopes: Vec<(u32, Scope)> = pids
        .iter()
        .map(|&pid| Ok((pid, attached_scope(pid)?)))
        .collect::<Result<_, HooksError>>()?;
    let mut all = Selection::default();
    for spec in specs {
        let mut first_error = None;
        let mut misses = Vec::new();
        let mut hit = false;
        for (pid, scope) in &scopes {
            match spec::select(std::slice::from_ref(spec), scope) {
                Ok(sel) => {
                    hit = true;
                    all.merge(sel);
                }
                Err(e) => {
                    misses.push(format!("pid {pid}: {e}"));
                    first_error.get_or_insert(e);
                }
            }
        }
        match (hit, first_error) {
            (false, Some(SymbolError::ProbeLibraryAbsent { spec: text, reason })) => {
                all.notes.push(waiting_note(&text, &reason));
            }
            (false, Some(e)) => return Err(e.into()),
            (true, Some(_)) => all.notes.extend(misses.into_iter().map(|m| {
                format!(
                    "{m}; --probe {} is probed in the other processes",
                    spec.text
                )
            })),
            _ => {}
        }
    }
    Ok(all)
}

/// What a spec whose library is not there yet says: it waits for a `dlopen`.
fn waiting_note(text: &str, reason: &str) -> String {
    let reason = reason.split("; name the library").next().unwrap_or(reason);
    format!(
        "--probe {text}: {reason}; waiting: probed if a process loads such a library (dlopen) while hood records"
    )
}

/// The file names a running process's image needs or has mapped: libraries it maps later
/// but its executable does not need are ones it loads itself (dlopen).
fn attached_needed(pid: u32) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let Ok(scope) = attached_scope(pid) else {
        return out;
    };
    for (_, shown) in &scope.mapped {
        out.insert(shown.rsplit('/').next().unwrap_or(shown).to_string());
    }
    if let Ok(f) = hood_format::untrusted::open(&scope.exe, hood_format::untrusted::Policy::NAMED) {
        if let Ok(d) = spec::dependencies(&f, &scope.exe) {
            out.extend(d);
        }
    }
    out
}

/// The executable and mapped libraries of a running process, opened through
/// `/proc/PID/exe` and `/proc/PID/map_files` (the very files mapped, whatever their paths
/// hold now).
fn attached_scope(pid: u32) -> Result<Scope, HooksError> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let exe_link = proc_dir.join("exe");
    let shown = std::fs::read_link(&exe_link).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            HooksError::Perf(hood_perf::PerfError::NoSuchProcess(pid as i32))
        } else {
            HooksError::Io {
                what: format!(
                    "reading {} (is pid {pid} a kernel thread?)",
                    exe_link.display()
                ),
                source: e,
            }
        }
    })?;
    let mut mapped: Vec<(PathBuf, String)> = Vec::new();
    hood_procfs::process::for_each_maps_line(pid, |line| {
        let Some(m) = hood_raw::maps::parse_maps_line(line) else {
            return true;
        };
        let path = m.path.trim_end();
        if !m.is_exec()
            || !path.starts_with('/')
            || path.ends_with(" (deleted)")
            || mapped.iter().any(|(_, p)| p == path)
        {
            return true;
        }
        // map_files names a mapping by its range in hex (leading zeros optional).
        let range = format!("{:x}-{:x}", m.start, m.end);
        mapped.push((proc_dir.join("map_files").join(range), path.to_string()));
        true
    })
    .map_err(|source| HooksError::Io {
        what: format!("reading {}", proc_dir.join("maps").display()),
        source,
    })?;
    Ok(Scope {
        exe: exe_link,
        exe_name: shown.to_string_lossy().into_owned(),
        mapped,
    })
}

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

/// What the end of a recording knows.
struct Finish<'a> {
    cfg: &'a ProbeConfig,
    argv: &'a [String],
    start_mono_ns: u64,
    end_mono_ns: u64,
    /// Hits lost per thread id (0: unknown thread).
    lost: &'a BTreeMap<u32, u64>,
    lost_note: Option<String>,
    /// Key → function name.
    symbols: BTreeMap<u64, String>,
    /// What was probed and what it costs, for the notes.
    describe: String,
    /// What the selection said (entry-only functions, inlined copies, libraries skipped),
    /// then (from `notes_at_start` on) what was probed late (an exec, a dlopen).
    notes: &'a [String],
    notes_at_start: usize,
    /// The command ended (else it, or the attached processes, run on).
    ended: bool,
}

/// Where hits go, in time order per thread.
trait Consumer {
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
type Image = (u32, u64);

/// The per-process facts both outputs need.
struct Procs {
    /// Executable per image that had hits.
    exe_of: BTreeMap<Image, String>,
    /// The executable probed, for a process gone before its first hit was read.
    exe_default: String,
    start_mono_ns: u64,
    /// The current image of a process that exec'd while recorded.
    current: HashMap<u32, u64>,
    /// The executable of a process's current image, from its mapping.
    exe_hint: HashMap<u32, String>,
    /// Images left by an exec.
    replaced: std::collections::HashSet<Image>,
    /// First and last hit, and hits, per (image, tid).
    threads: BTreeMap<(u32, u64, u32), (u64, u64, u64)>,
}

impl Procs {
    fn new(exe_default: String, start_mono_ns: u64) -> Procs {
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

struct TraceOut {
    w: Writer<OutputFile>,
    procs: Procs,
    start_mono_ns: u64,
    funcs: Vec<u64>,
    symbols: BTreeMap<u64, String>,
    notes: Vec<String>,
    words: BTreeMap<(u32, u64, u32), (u64, Vec<u64>)>,
    /// Functions were probed late: the process chunks written so far lack them.
    grown: bool,
    /// The cost per call taken out of the times (None: left in).
    cost: Option<ProbeCosts>,
    /// Per point: an entry probe only (its calls are written as entries and returns at once).
    entry_only: Vec<bool>,
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
fn note_point(
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

struct CallsOut {
    procs: Procs,
    builders: BTreeMap<(u32, u64, u32), ThreadBuilder>,
    keys: Vec<u64>,
    cost: Option<ProbeCosts>,
    /// Per point: an entry probe only (its calls are counted, with no time).
    entry_only: Vec<bool>,
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

/// A hit or a side-band record (an exec, a mapping, a fork, an exit).
enum Item {
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
struct Orderer {
    pending: Vec<Item>,
    ready: Vec<Item>,
    hits: Vec<Hit>,
    new: Vec<NewPoint>,
}

impl Orderer {
    /// Hand on the hits and records older than `settled` (all of them with `None`), in time
    /// order: hits to `out`, records to `follow` (which places the probes they call for in
    /// `rec`), and what they change to `out`.
    fn release(
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

/// The key (address) each function is known by in the output: its address in its file, with
/// the file's index above bit 48 when two functions of different files have the same address.
/// The inlined copies of one function share one key (they are one row), the first copy's
/// address with bit 47 set (it lies inside another function, whose key its address is).
fn keys(sel: &Selection) -> Vec<u64> {
    let mut first: HashMap<(usize, &str), u64> = HashMap::new();
    let base: Vec<u64> = sel
        .points
        .iter()
        .map(|p| {
            let inlined = p.entry_only == Some(spec::EntryOnly::Inlined);
            *first
                .entry((p.object, p.name.as_str()))
                .or_insert(p.addr | (u64::from(inlined) << 47))
        })
        .collect();
    let mut owners: HashMap<u64, Vec<usize>> = HashMap::new();
    for (p, &k) in sel.points.iter().zip(&base) {
        let o = owners.entry(k).or_default();
        if !o.contains(&p.object) {
            o.push(p.object);
        }
    }
    sel.points
        .iter()
        .zip(&base)
        .map(|(p, &k)| {
            if owners[&k].len() > 1 {
                k | ((p.object as u64 + 1) << 48)
            } else {
                k
            }
        })
        .collect()
}

/// Record `cfg`, steered by `steer` (a [`hood_proc::signal::Forwarder`]: stop signals are
/// passed on to a command started). A stop request ends a recording of attached processes at
/// once; a command started gets [`STOP_GRACE`] to end, and is then waited for unprobed.
/// Messages for the user go to `log`, one line each.
pub fn record(
    cfg: &ProbeConfig,
    steer: &mut dyn Steer,
    log: &mut dyn FnMut(&str),
) -> Result<ProbeOutcome, HooksError> {
    let sel = select(cfg)?;
    for n in &sel.notes {
        log(&format!("note: {n}"));
    }
    let points: Vec<UprobePoint> = sel
        .points
        .iter()
        .map(|p| UprobePoint {
            path: format!("/proc/self/fd/{}", sel.objects[p.object].file.as_raw_fd()),
            offset: p.offset,
            returns: p.entry_only.is_none(),
        })
        .collect();
    let entry_only: Vec<bool> = sel.points.iter().map(|p| p.entry_only.is_some()).collect();
    let keys = keys(&sel);
    let n_objects = {
        let mut o: Vec<usize> = sel.points.iter().map(|p| p.object).collect();
        o.dedup();
        o.sort_unstable();
        o.dedup();
        o.len()
    };
    for g in hood_perf::remove_stale_probes() {
        log(&format!(
            "removed the uprobe definitions {g}/* left by a hood that was killed (they were inert: no program was probed through them)"
        ));
    }
    // What a probed call costs, measured now; taken out of the times unless
    // HOOD_COMPENSATE=0 (as for `hood calls`' hooks).
    let compensate = std::env::var_os("HOOD_COMPENSATE").as_deref() != Some("0".as_ref());
    let measured = match calibrate() {
        Ok(c) => Some(c),
        Err(e) => {
            log(&format!(
                "warning: the cost of a probed call could not be measured ({e}); the times include it (about {:.1} µs per call)",
                COST_PER_CALL_NS as f64 / 1000.0
            ));
            None
        }
    };
    // Per function (event key): whether the kernel single-steps its first instruction (a
    // key shared by several points takes its first point's).
    let stepped_keys: Vec<u64> = {
        let mut first: HashMap<u64, bool> = HashMap::new();
        for (&k, st) in keys.iter().zip(stepped_points(&sel)) {
            first.entry(k).or_insert(st);
        }
        let mut v: Vec<u64> = first
            .into_iter()
            .filter(|&(_, st)| st)
            .map(|(k, _)| k)
            .collect();
        v.sort_unstable();
        v
    };
    let n_funcs = {
        let mut k = keys.clone();
        k.sort_unstable();
        k.dedup();
        k.len()
    };
    let n_stepped = stepped_keys.len();
    let cost = measured.filter(|_| compensate).map(|m| ProbeCosts {
        emulated: m.emulated,
        stepped: Some(m.stepped),
        stepped_funcs: stepped_keys.clone(),
    });
    let plural = |n: usize| if n == 1 { "function" } else { "functions" };
    let what = probes_what(&sel);
    let figure = match measured {
        None => format!("{:.1} µs per call expected", COST_PER_CALL_NS as f64 / 1000.0),
        Some(m) if n_stepped == 0 => {
            format!("{:.1} µs per call, measured", us(m.emulated.per_call_ns()))
        }
        Some(m) if n_stepped == n_funcs => {
            format!("{:.1} µs per call, measured", us(m.stepped.per_call_ns()))
        }
        Some(m) => format!(
            "{:.1} µs per call for the {} {} whose first instruction the kernel emulates and {:.1} µs for the {} it single-steps, measured",
            us(m.emulated.per_call_ns()),
            n_funcs - n_stepped,
            plural(n_funcs - n_stepped),
            us(m.stepped.per_call_ns()),
            n_stepped
        ),
    };
    log(&format!(
        "probing {}: {figure} (an entry and a return trap{}){}",
        if n_objects == 0 {
            "no function yet (the specs wait for libraries loaded later)".to_string()
        } else {
            format!(
                "{what} in {n_objects} file{}",
                if n_objects == 1 { "" } else { "s" }
            )
        },
        if sel.points.iter().any(|p| p.entry_only.is_some()) {
            "; an entry-only probe is one trap"
        } else {
            ""
        },
        match (measured, &cost) {
            (_, Some(_)) => ", taken out of the times",
            (Some(_), None) => ", left in the times (HOOD_COMPENSATE=0)",
            _ => "",
        }
    ));
    let describe = match (measured, &cost) {
        (Some(m), c) => {
            let kind = |c: ProbeCost, how: &str, n: usize| {
                format!(
                    "{:.1} µs where the kernel {how} the function's first instruction ({:.1} µs inside the call, {:.1} µs in its caller; {n} {})",
                    us(c.per_call_ns()),
                    us(c.self_ns),
                    us(c.child_ns),
                    plural(n)
                )
            };
            format!(
                "functions probed with uprobes (--probe {}): {what}; every call cost the program two kernel traps, as measured at the start on two empty functions: {}, {}; {}",
                cfg.specs.join(" --probe "),
                kind(m.emulated, "emulates", n_funcs - n_stepped),
                kind(m.stepped, "single-steps", n_stepped),
                if c.is_some() {
                    "taken out of the times shown"
                } else {
                    "included in the times shown (HOOD_COMPENSATE=0)"
                }
            )
        }
        (None, _) => format!(
            "functions probed with uprobes (--probe {}): {what}; every call costs the program two kernel traps (about {:.1} µs on the machine hood was measured on, bench/probe; not measured here), included in the times shown",
            cfg.specs.join(" --probe "),
            COST_PER_CALL_NS as f64 / 1000.0
        ),
    };
    // What the attached processes' programs need or have mapped, read before their probes
    // are enabled: a library mapped from then on is the program's doing.
    let attached: Vec<(u32, std::collections::HashSet<String>)> = match &cfg.run {
        ProbeRun::Pids(p) => p.iter().map(|&p| (p, attached_needed(p))).collect(),
        ProbeRun::Command(_) => Vec::new(),
    };
    let mut steering = Steering::new(steer);
    crate::run::not_stopped_yet(&mut steering)?;
    let mut child = None;
    let (mut uprobes, mut switches) = match &cfg.run {
        ProbeRun::Command(argv) => {
            let c = Child::spawn_held(argv, &[] as &[(std::ffi::OsString, std::ffi::OsString)])?;
            let u = UprobeRecorder::open(&points, &UprobeTarget::Child(c.pid()), RING_PAGES, true)?;
            let s = if cfg.sched && matches!(cfg.output, ProbeOutput::Trace(_)) {
                match SwitchRecorder::open_child(c.pid(), 64) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        log(&format!("warning: context switches not recorded: {e}"));
                        None
                    }
                }
            } else {
                None
            };
            child = Some(c);
            (u, s)
        }
        ProbeRun::Pids(pids) => {
            let mut tids = Vec::new();
            for &pid in pids {
                tids.extend(hood_perf::threads_of(pid as i32)?);
            }
            let u = UprobeRecorder::open(
                &points,
                &UprobeTarget::Threads(tids.clone()),
                RING_PAGES,
                true,
            )?;
            let s = if cfg.sched && matches!(cfg.output, ProbeOutput::Trace(_)) {
                match SwitchRecorder::open_threads(&tids, 64) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        log(&format!("warning: context switches not recorded: {e}"));
                        None
                    }
                }
            } else {
                None
            };
            u.enable()?;
            log(&format!(
                "attached to {} ({} thread{}); Ctrl-C or SIGTERM detaches and leaves {} running",
                pids.iter()
                    .map(|p| format!("pid {p}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                tids.len(),
                if tids.len() == 1 { "" } else { "s" },
                if pids.len() == 1 { "it" } else { "them" }
            ));
            (u, s)
        }
    };
    let mut ids: HashMap<u64, (u32, bool)> = uprobes
        .ids()
        .iter()
        .map(|i| (i.id, (i.point, i.ret)))
        .collect();
    let mut ids_known = uprobes.ids().len();
    let start_mono_ns = monotonic_ns();
    let specs: Vec<ProbeSpec> = cfg
        .specs
        .iter()
        .filter_map(|s| spec::parse_spec(s).ok())
        .collect();
    let mut follower = Follower::new(
        specs,
        cfg.yes,
        start_mono_ns,
        &sel,
        &keys,
        child.as_ref().map(|c| c.pid() as u32),
        attached,
    );
    // Every function's name, the late ones' as they come.
    let mut names: Vec<(u64, String)> = sel
        .points
        .iter()
        .zip(&keys)
        .map(|(p, &k)| (k, p.name.clone()))
        .collect();
    let argv = match &cfg.run {
        ProbeRun::Command(a) => a.clone(),
        ProbeRun::Pids(p) => vec![format!(
            "-p {}",
            p.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        )],
    };
    let procs = Procs::new(
        sel.objects
            .first()
            .map(|o| o.path.display().to_string())
            .unwrap_or_default(),
        start_mono_ns,
    );
    let mut consumer: Box<dyn Consumer> = match &cfg.output {
        ProbeOutput::Trace(path) => {
            let mut w = Writer::create(path, FileKind::Trace)?;
            for s in w.stale() {
                log(&s.to_string());
            }
            let meta = TraceMeta {
                version: PAYLOAD_VERSION,
                argv: argv.clone(),
                buffer: 0,
                full: "stream".into(),
                filters: Vec::new(),
                excludes: Vec::new(),
                sched: switches.is_some(),
                irq: None,
                wake: None,
                collected_realtime_ns: realtime_ns(),
            };
            w.write_chunk(tags::trace::META, &serde_json::to_vec(&meta)?, false)?;
            w.flush()?;
            let funcs = keys.clone();
            let symbols = sel
                .points
                .iter()
                .zip(&keys)
                .map(|(p, &k)| (k, p.name.clone()))
                .collect();
            Box::new(TraceOut {
                w,
                procs,
                start_mono_ns,
                funcs,
                symbols,
                notes: std::iter::once(describe.clone())
                    .chain(sel.notes.iter().cloned())
                    .collect(),
                words: BTreeMap::new(),
                grown: false,
                cost,
                entry_only: entry_only.clone(),
            })
        }
        ProbeOutput::Calls(_) => Box::new(CallsOut {
            procs,
            builders: BTreeMap::new(),
            keys: keys.clone(),
            cost,
            entry_only: entry_only.clone(),
        }),
    };
    if let Some(c) = child.as_mut() {
        c.release()?;
    }
    let mut order = Orderer {
        pending: Vec::new(),
        ready: Vec::new(),
        hits: Vec::new(),
        new: Vec::new(),
    };
    let mut hits_buf: Vec<Hit> = Vec::new();
    let mut tracks: Vec<(u64, Track)> = Vec::new();
    let mut lost: BTreeMap<u32, u64> = BTreeMap::new();
    let mut events = 0u64;
    let mut malformed = false;
    let mut per_cpu: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut last_round = Instant::now();
    let started = Instant::now();
    let mut late_said = 0;
    let mut round = |uprobes: &mut UprobeRecorder,
                     switches: &mut Option<SwitchRecorder>,
                     consumer: &mut dyn Consumer,
                     last: bool|
     -> Result<(u64, bool), HooksError> {
        let before = monotonic_ns();
        per_cpu.clear();
        uprobes.drain(&mut |cpu, b| {
            per_cpu.entry(cpu).or_default().extend_from_slice(b);
            Ok(())
        })?;
        hits_buf.clear();
        tracks.clear();
        for (&cpu, b) in &per_cpu {
            malformed |= !decode_hits(b, &ids, &mut hits_buf, &mut lost);
            malformed |= !follow::decode_tracking(b, cpu, &mut tracks);
        }
        let got = hits_buf.len() as u64;
        events += got;
        // A test's fault: the n-th round that took hits fails.
        #[cfg(test)]
        if got > 0 {
            crate::run::seam::fails(crate::run::seam::Point::ProbeRound)?;
        }
        order.pending.extend(hits_buf.drain(..).map(Item::Hit));
        order
            .pending
            .extend(tracks.drain(..).map(|(t, r)| Item::Track(t, r)));
        if let Some(s) = switches.as_mut() {
            per_cpu.clear();
            s.drain(&mut |cpu, b| {
                per_cpu.entry(cpu).or_default().extend_from_slice(b);
                Ok(())
            })?;
            consumer.switches(&per_cpu)?;
        }
        order.release(
            (!last).then(|| before.saturating_sub(SETTLE_NS)),
            consumer,
            &mut follower,
            uprobes,
        )?;
        if uprobes.ids().len() > ids_known {
            for i in &uprobes.ids()[ids_known..] {
                ids.insert(i.id, (i.point, i.ret));
            }
            ids_known = uprobes.ids().len();
        }
        names.append(&mut follower.named);
        // Said as it happens: from now on its calls are seen.
        for l in &follower.late[late_said..] {
            log(&format!("probed late: {l}"));
        }
        late_said = follower.late.len();
        // A mapping or exec waiting to settle: the next round comes soon, for its probes.
        let waiting = order.pending.iter().any(|i| matches!(i, Item::Track(..)));
        Ok((got, waiting))
    };
    let mut stop_why: Option<String> = None;
    // An error inside the run ends it as a stop does: the file is finished all the same.
    let mut error: Option<String> = None;
    // The command killed because of it (said once the rounds are over).
    let mut killed = None;
    let status = match child.as_mut() {
        Some(c) => {
            let (prog, pid) = (&argv[0], c.pid());
            let mut cut = None;
            let watched = steering.watch(c, &mut |stop| {
                let (got, waiting) =
                    match round(&mut uprobes, &mut switches, consumer.as_mut(), false) {
                        Ok(r) => r,
                        Err(e) => {
                            error = Some(e.to_string());
                            return Ok(ControlFlow::Break(()));
                        }
                    };
                let since = std::mem::replace(&mut last_round, Instant::now()).elapsed();
                if cfg.duration.is_some_and(|d| started.elapsed() >= d) {
                    return Ok::<_, HooksError>(ControlFlow::Break(()));
                }
                // A command that ignores the stop signal is not probed past the grace.
                if let Some(s) = stop.filter(|s| s.at.elapsed() >= STOP_GRACE) {
                    cut = Some(crate::run::still_runs(prog, pid, &s));
                    return Ok(ControlFlow::Break(()));
                }
                Ok(ControlFlow::Continue(pause(got, since, waiting)))
            });
            let ended = watched.unwrap_or_else(|e: HooksError| {
                error.get_or_insert(e.to_string());
                None
            });
            match ended {
                Some(e) => Some(e),
                // A run ended by an error probes nothing more: its command is not left
                // running unprobed while the recorder waits for it.
                None if error.is_some() => {
                    killed = Some(pid);
                    c.kill();
                    c.try_wait().ok().flatten()
                }
                None => {
                    stop_why = Some(cut.unwrap_or_else(|| "the duration ended".into()));
                    None
                }
            }
        }
        None => {
            let pids = match &cfg.run {
                ProbeRun::Pids(p) => p.clone(),
                ProbeRun::Command(_) => Vec::new(),
            };
            loop {
                let (got, waiting) =
                    match round(&mut uprobes, &mut switches, consumer.as_mut(), false) {
                        Ok(r) => r,
                        Err(e) => {
                            error = Some(e.to_string());
                            break;
                        }
                    };
                let since = std::mem::replace(&mut last_round, Instant::now()).elapsed();
                steering.look(None);
                if let Some(s) = steering.stop() {
                    stop_why = Some(format!("{} received", s.words()));
                    break;
                }
                if cfg.duration.is_some_and(|d| started.elapsed() >= d) {
                    stop_why = Some(format!(
                        "{:.1} s passed",
                        cfg.duration.unwrap_or_default().as_secs_f64()
                    ));
                    break;
                }
                if pids
                    .iter()
                    .all(|p| !Path::new(&format!("/proc/{p}")).exists())
                {
                    stop_why = Some("every attached process ended".into());
                    break;
                }
                std::thread::sleep(pause(got, since, waiting));
            }
            None
        }
    };
    uprobes.disable();
    if error.is_none() {
        if let Err(e) = round(&mut uprobes, &mut switches, consumer.as_mut(), true) {
            error = Some(e.to_string());
        }
    }
    let end_mono_ns = monotonic_ns();
    // The probes go with their descriptors, now: an attached process runs on unprobed.
    drop(uprobes);
    drop(switches);
    if let Some(why) = &stop_why {
        log(&format!("{why}: probes removed, recording finished"));
    }
    if let Some(pid) = killed {
        log(&format!(
            "killing the probed command (pid {pid}): the recording stopped on an error"
        ));
    }
    if malformed {
        log("warning: a ring held malformed records; the hits after them in that round were skipped");
    }
    let lost_total: u64 = lost.values().sum();
    let outcome = ProbeOutcome {
        status: match status {
            Some(e) => e.shell_code(),
            None => 0,
        },
        events,
        lost: lost_total,
        error: error.clone(),
    };
    let lost_note = (lost_total > 0).then(|| {
        format!(
            "{lost_total} probe hits LOST: the kernel's rings filled faster than hood emptied them; calls around the gaps show as repaired or without their entry (probe fewer functions, or give hood a CPU)"
        )
    });
    for n in &follower.notes {
        log(&format!("note: {n}"));
    }
    // Said by the recorder at the end, and by every report of the file.
    let stopped = error
        .as_ref()
        .map(|e| format!("recording stopped early: {e}"));
    let notes: Vec<String> = sel
        .notes
        .iter()
        .chain(&follower.notes)
        .chain(&follower.late)
        .chain(&stopped)
        .cloned()
        .collect();
    consumer.finish(&Finish {
        cfg,
        argv: &argv,
        start_mono_ns,
        end_mono_ns,
        lost: &lost,
        lost_note: lost_note.clone(),
        symbols: names.into_iter().collect(),
        describe: describe.clone(),
        notes: &notes,
        notes_at_start: sel.notes.len(),
        ended: status.is_some(),
    })?;
    let hits = format!(
        "{events} probe hits, {lost_total} lost{}",
        if lost_total > 0 {
            " (see the notes)"
        } else {
            ""
        }
    );
    match &cfg.output {
        // The one summary line of every recorder; a call-path file's is the caller's, which
        // counts its processes and paths.
        ProbeOutput::Trace(p) => log(&hood_format::wrote_line(
            p,
            std::fs::symlink_metadata(p).map_or(0, |m| m.len()),
            hood_format::FileKind::Trace,
            &hits,
        )),
        ProbeOutput::Calls(_) => log(&format!("{hits} recorded")),
    }
    if events == 0 {
        log("no probed function was called while hood recorded");
    }
    if let Some(Exit::Signal(s)) = status {
        log(&format!("{} was ended by {}", argv[0], signal::name(s)));
    }
    if let Some(e) = &error {
        let (file, report) = match &cfg.output {
            ProbeOutput::Trace(p) => (p, "hood trace report"),
            ProbeOutput::Calls(p) => (p, "hood calls report"),
        };
        log(&crate::run::stopped_early(e, file, report));
    }
    // A command still running (-d ended the recording) is waited for, unprobed: it would die
    // with hood otherwise.
    let mut outcome = outcome;
    if let (Some(c), None) = (child.as_mut(), status) {
        log(&format!(
            "{} (pid {}) runs on unprobed; waiting for it to end (Ctrl-C or `kill {}` ends it)",
            argv[0],
            c.pid(),
            c.pid()
        ));
        outcome.status = steering.wait(c)?.shell_code();
    }
    Ok(outcome)
}

/// What a selection probes, in words: `3 functions`, `2 functions with entry and return
/// probes, 4 inlined copies at entry only (counted, no time)`.
fn probes_what(sel: &Selection) -> String {
    let count =
        |k: Option<spec::EntryOnly>| sel.points.iter().filter(|p| p.entry_only == k).count();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let (timed, go, inlined) = (
        count(None),
        count(Some(spec::EntryOnly::Go)),
        count(Some(spec::EntryOnly::Inlined)),
    );
    if go == 0 && inlined == 0 {
        return plural(timed, "function", "functions");
    }
    let mut parts = Vec::new();
    if timed > 0 {
        parts.push(format!(
            "{} with entry and return probes",
            plural(timed, "function", "functions")
        ));
    }
    if go > 0 {
        parts.push(format!(
            "{} at entry only (counted, no time)",
            plural(go, "Go function", "Go functions")
        ));
    }
    if inlined > 0 {
        parts.push(format!(
            "{} at entry only (counted, no time)",
            plural(inlined, "inlined copy", "inlined copies")
        ));
    }
    parts.join(", ")
}

/// Hits a round may leave to the next one on one CPU: an eighth of its ring.
const HEADROOM_HITS: f64 = (RING_PAGES * 4096 / 40 / 8) as f64;

/// Sleep between rounds: long enough that the recorder does not wake hundreds of times a second
/// in a server probed at a few thousand hits a second (each wake-up takes a CPU from it), short
/// enough that at the rate of the last round no ring fills: at most an eighth of one ring's
/// hits, between 2 ms and 20 ms (20 ms when idle; 2 ms while a mapping or exec waits to be
/// handled: the functions it brings are probed that much sooner).
fn pause(got: u64, since: Duration, waiting: bool) -> Duration {
    let (min, max) = (Duration::from_millis(2), Duration::from_millis(20));
    if waiting {
        return min;
    }
    if got == 0 {
        return max;
    }
    let rate = got as f64 / since.as_secs_f64().max(1e-4);
    Duration::from_secs_f64(HEADROOM_HITS / rate).clamp(min, max)
}

fn realtime_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_paced_by_the_hit_rate() {
        let ms = Duration::from_millis;
        // Idle, and a server at a few thousand hits a second: 20 ms.
        assert_eq!(pause(0, ms(20), false), ms(20));
        assert_eq!(pause(60, ms(20), false), ms(20));
        // A mapping to handle: soon.
        assert_eq!(pause(0, ms(20), true), ms(2));
        // A tight loop at a million hits a second: an eighth of a ring (3,276 hits) in 3.3 ms.
        let p = pause(20_000, ms(20), false);
        assert!(p > ms(3) && p < ms(4), "{p:?}");
        // Faster still: never below 2 ms.
        assert_eq!(pause(1_000_000, ms(2), false), ms(2));
    }
}
