//! `hood trace record` as a library: run a command with the hood-rt runtime preloaded in trace
//! mode and its context switches (and, as root, irqs) recorded, move every thread's events into
//! the trace file while it runs, and finish the file when it ends.
//!
//! The recorder moves raw bytes only: each round it appends the switch and irq rings' records
//! and every thread's new event words as they are (see [`super::stream`]); names, counts and
//! the fixed buffers of `--full stop|wrap` are collected once the command has ended. What the
//! trace means is derived by `hood trace report`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hood_format::{tags, FileKind, OutputFile, Writer};
use hood_perf::{IrqRecorder, SwitchRecorder, WakeupRecorder, WAKE_SAMPLE_TYPE};
use hood_proc::child::{Child, Exit};
use hood_proc::signal;
use hood_proc::steer::{Steer, Steering, StopRequest, STOP_GRACE};
use hood_proc::usage::{cpu_seconds, running_as_root, Whose};
use hood_raw::irq::{IrqDecode, IrqDecoder};
use hood_tracemodel::trace::{
    decode_switches, encode_raw, ProcessTrace, TaskName, TraceMeta, WakeDecoder, WakeMeta,
    MAX_EVENTS_PER_CHUNK, PAYLOAD_VERSION,
};

use super::{collect, filter, prefault, stream};
use crate::run::{Command, End, SegmentDir};
use crate::{segments, HooksError};

/// How the threads' buffers are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Rings the recorder drains while the program runs.
    Stream,
    /// Fixed buffers; a full one stops its thread's recording.
    Stop,
    /// Fixed buffers keeping the newest events.
    Wrap,
}

impl Full {
    /// The `HOOD_TRACE_FULL` value and the name in the file.
    pub fn name(self) -> &'static str {
        match self {
            Full::Stream => "stream",
            Full::Stop => "stop",
            Full::Wrap => "wrap",
        }
    }
}

/// What to record, and how.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// The trace file.
    pub output: PathBuf,
    /// Events per thread buffer (16 to 2^30).
    pub buffer: u64,
    /// Streamed rings or fixed buffers.
    pub full: Full,
    /// `--filter` globs.
    pub filters: Vec<String>,
    /// `--exclude` globs.
    pub excludes: Vec<String>,
    /// Record context switches (and, with the privilege and [`RecordConfig::irqs`], irqs).
    pub sched: bool,
    /// Record irq entries/exits in the traced threads' context (root or CAP_PERFMON).
    pub irqs: bool,
    /// Record the wake-ups of the traced threads (with [`RecordConfig::sched`]; root or
    /// CAP_PERFMON): who ended each wait, and when.
    pub wakeups: bool,
    /// Pre-fault the threads' buffers from the recorder ([`prefault`]).
    pub prefault: bool,
    /// Start with tracing off until the program calls `hood_trace_on()`.
    pub start_off: bool,
    /// Leave the runtime's segments in their directory.
    pub keep: bool,
    /// Stop recording when the file reaches this many bytes (`--max-size`); recording also
    /// stops, whatever this says, when the file system keeps less than [`free_margin`] free.
    pub max_size: Option<u64>,
    /// The command.
    pub argv: Vec<String>,
    /// The runtime library preloaded into the command (`libhood_rt.so`).
    pub runtime: PathBuf,
}

/// How a recording ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The command's exit status as a shell reports it (128 + signal when killed).
    pub status: i32,
    /// A trace was written: false when no process of the command ran the runtime (the
    /// file is then removed and the reason logged).
    pub traced: bool,
    /// The error that ended the recording early (a write that failed on a full disk, a
    /// ring that could not be read): the command was killed, and the file holds what was
    /// written before (logged).
    pub error: Option<String>,
}

/// Milliseconds between rounds while the program records...
const ACTIVE_MS: u64 = 2;
/// ...and after a second without events (5 once a stop signal came, to end promptly).
const IDLE_MS: u64 = 20;

/// The room recording leaves free on the output's file system, whatever `--max-size` says: 5 %
/// of it, at most 1 GiB.
pub fn free_margin(total: u64) -> u64 {
    (total / 20).min(1 << 30)
}

/// How often the free space is looked at.
const SPACE_EVERY: Duration = Duration::from_millis(250);

/// Record `cfg.argv` into `cfg.output`, steered by `steer`. With
/// [`hood_proc::signal::Signals::forwarding`], a stop signal (SIGINT, SIGTERM, SIGHUP) is
/// passed on to the command (unless the kernel sent it to the whole process group: Ctrl-C, a
/// hangup); after any stop request the recorder records on while the command finishes, at
/// most [`STOP_GRACE`], then finishes the file. When the command runs on past that, or the
/// file reaches its size limit, the recorder finishes the file, then waits for the command without recording (so it is not
/// killed with its recorder) and returns its status. Messages for the user (notes, warnings,
/// the summary) go to `log`, one line each.
///
/// One skeleton, as `hood record`'s: open (the segment directory, the command held before its
/// exec, the kernel rings, the file and its META) → start → rounds until a stop → finish. An
/// error before the start is returned and leaves no file; an error inside the run (a write
/// that fails on a full disk, a ring that cannot be read) ends it: the command is killed, the
/// file is finished as far as it can be written (cut at its last whole chunk otherwise) and put
/// in place, and [`Outcome::error`] says why. The command is killed and reaped, and the
/// segment directory removed, on every way out, a panic included.
pub fn record(
    cfg: &RecordConfig,
    steer: &mut dyn Steer,
    log: &mut dyn FnMut(&str),
) -> Result<Outcome, HooksError> {
    let tsc = hood_proc::clock::TscRate::start();
    let dir = SegmentDir::new(
        segments::private_dir(&segments::shm_dir(), "trace", &mut |m| log(&m))?,
        cfg.keep,
    );
    let result = open(cfg, tsc, dir.path(), Steering::new(steer), log).and_then(|mut run| {
        run.start()?;
        let end = run.until_stop();
        run.finish(end, log)
    });
    dir.close(&mut |m| log(&m));
    result
}

/// Why recording stopped before the command ended, if it did: the file's size limit, the
/// file system's free space, or a command that ran on after a stop signal.
struct Limits<'a> {
    cfg: &'a RecordConfig,
    /// The directory whose file system the output is on.
    fs: PathBuf,
    next_space: Instant,
    started: Instant,
}

impl Limits<'_> {
    /// Whether recording must stop now, and why (one line for the user, with the fix).
    fn check(&mut self, written: u64, stop: Option<StopRequest>, pid: i32) -> Option<String> {
        let prog = &self.cfg.argv[0];
        let at = self.started.elapsed().as_secs_f64();
        let file = self.cfg.output.display();
        if let Some(max) = self.cfg.max_size.filter(|&m| written >= m) {
            return Some(format!(
                "{file} reached {} (--max-size {}): recording stopped {at:.1} s into the run; the trace holds the events up to there (raise --max-size, or use --filter to record fewer functions)",
                hood_format::size_words(written),
                hood_format::size_words(max)
            ));
        }
        if Instant::now() >= self.next_space {
            self.next_space = Instant::now() + SPACE_EVERY;
            if let Some(sp) = hood_proc::space::of(&self.fs) {
                let margin = free_margin(sp.total);
                if sp.available < margin {
                    return Some(format!(
                        "the file system of {file} has {} left, less than the {} recording keeps free: recording stopped {at:.1} s into the run, the file holds {} of events up to there (free space, write elsewhere with -o, or set a smaller --max-size)",
                        hood_format::size_words(sp.available),
                        hood_format::size_words(margin),
                        hood_format::size_words(written)
                    ));
                }
            }
        }
        if let Some(s) = stop.filter(|s| s.at.elapsed() >= STOP_GRACE) {
            return Some(format!(
                "{}: recording stopped there; the trace holds the events up to then",
                crate::run::still_runs(prog, pid, &s)
            ));
        }
        None
    }
}

/// A trace run between its open and its finish.
struct Run<'a, 's> {
    cfg: &'a RecordConfig,
    dir: &'a Path,
    warnings: Vec<String>,
    steering: Steering<'s>,
    command: Command,
    rounds: Rounds,
    /// Irqs are recorded (their counts are summed up at the end).
    irqs: bool,
    writer: Writer<OutputFile>,
    prefaulter: Option<prefault::Prefaulter>,
}

/// Open everything a run holds: the command (forked, held before its exec), the kernel rings,
/// the file with its META. The command is killed on every error from here.
fn open<'a, 's>(
    cfg: &'a RecordConfig,
    tsc: Option<hood_proc::clock::TscRate>,
    dir: &'a Path,
    mut steering: Steering<'s>,
    log: &mut dyn FnMut(&str),
) -> Result<Run<'a, 's>, HooksError> {
    let prog = cfg
        .argv
        .first()
        .ok_or_else(|| HooksError::Config("no command given".into()))?;
    let mut warnings = Vec::new();
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |k: &str, v: OsString| env.push((k.into(), v));
    if !cfg.filters.is_empty() || !cfg.excludes.is_empty() {
        let exe = filter::which(prog)
            .ok_or_else(|| HooksError::Config(format!("command not found: {prog}")))?;
        let rules = filter::Rules {
            filters: cfg.filters.clone(),
            excludes: cfg.excludes.clone(),
        };
        let mut said = Vec::new();
        let table = filter::build(&rules, &exe, &mut said);
        // Now, not after the run: a filter that matches nothing makes the run pointless.
        for w in &said {
            log(&format!("warning: {w}"));
        }
        let p = dir.join("filter.bin");
        std::fs::write(&p, table).map_err(|source| HooksError::Io {
            what: format!("writing {}", p.display()),
            source,
        })?;
        set("HOOD_TRACE_FILTER", p.into());
    }
    set("LD_PRELOAD", crate::runtime::preload(&cfg.runtime));
    set("HOOD_SHM_DIR", dir.into());
    set("HOOD_MODE", "trace".into());
    set("HOOD_TRACE_BUFFER", cfg.buffer.to_string().into());
    set("HOOD_TRACE_FULL", cfg.full.name().into());
    if cfg.start_off {
        set("HOOD_TRACE_START", "off".into());
    }
    env.extend(crate::runtime::tsc_setting(tsc));
    crate::run::not_stopped_yet(&mut steering)?;
    let command = Command(Child::spawn_held(&cfg.argv, &env)?);
    let mut switches = None;
    if cfg.sched {
        match SwitchRecorder::open_child(command.pid(), 256) {
            Ok(s) => switches = Some(s),
            Err(e) => warnings.push(format!("context switches not recorded: {e}")),
        }
    }
    // Irq entries/exits in the traced threads' context: root (or CAP_PERFMON) only; without
    // the privilege a note, never an error.
    let mut irqs = None;
    if cfg.sched && cfg.irqs {
        match IrqRecorder::open_child(command.pid(), 256) {
            Ok(r) => irqs = Some(r),
            Err(e) if !running_as_root() => log(&format!(
                "note: irq entries/exits not recorded: they need root or CAP_PERFMON ({e})"
            )),
            Err(e) => log(&format!("note: irq entries/exits not recorded: {e}")),
        }
    }
    // Wake-ups of the traced threads, by anyone (whole-CPU events): root or CAP_PERFMON
    // only, as the irqs.
    let mut wakeups = None;
    if cfg.sched && cfg.wakeups {
        match WakeupRecorder::open(256) {
            Ok(r) => wakeups = Some(r),
            Err(e) if !running_as_root() => log(&format!(
                "note: wake-ups not recorded (context-switch lines will not say who woke a thread): they need root or CAP_PERFMON ({e})"
            )),
            Err(e) => log(&format!("note: wake-ups not recorded: {e}")),
        }
    }
    let wake_meta = wakeups.as_ref().map(|r: &WakeupRecorder| WakeMeta {
        sample_type: WAKE_SAMPLE_TYPE,
        formats: r.tracepoints().formats.clone(),
    });
    let irq_meta = irqs.as_ref().map(IrqRecorder::meta);
    // The file and its META chunk come first: from here on the file reads, up to the last
    // round of events written, whenever the recorder stops.
    // It grows beside the output and replaces it only when the trace is complete.
    let mut writer = Writer::create(&cfg.output, FileKind::Trace)?;
    for s in writer.stale() {
        log(&s.to_string());
    }
    let meta = TraceMeta {
        version: PAYLOAD_VERSION,
        argv: cfg.argv.clone(),
        buffer: cfg.buffer,
        full: cfg.full.name().into(),
        filters: cfg.filters.clone(),
        excludes: cfg.excludes.clone(),
        sched: switches.is_some(),
        irq: irq_meta.clone(),
        wake: wake_meta.clone(),
        collected_realtime_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    };
    writer.write_chunk(tags::trace::META, &serde_json::to_vec(&meta)?, false)?;
    writer.flush()?;
    let rounds = Rounds {
        switches,
        irqs,
        streamer: (cfg.full == Full::Stream).then(|| stream::Streamer::new(dir)),
        irq_dec: irq_meta.as_ref().map(IrqDecoder::new),
        irq_counts: IrqCounts::default(),
        per_cpu: BTreeMap::new(),
        wake: wakeups.zip(wake_meta.as_ref()).map(|(r, m)| Wakes {
            dec: WakeDecoder::new(m),
            rec: Some(r),
            per_cpu: BTreeMap::new(),
            traced: Default::default(),
            named: Default::default(),
            kept: 0,
            lost: 0,
        }),
    };
    Ok(Run {
        cfg,
        dir,
        warnings,
        steering,
        command,
        rounds,
        irqs: irq_meta.is_some(),
        writer,
        prefaulter: None,
    })
}

impl Run<'_, '_> {
    /// Let the command exec (an error if it could not: nothing was recorded), and start
    /// pre-faulting its buffers.
    fn start(&mut self) -> Result<(), HooksError> {
        self.command.release()?;
        self.prefaulter = self
            .cfg
            .prefault
            .then(|| prefault::Prefaulter::start(self.dir));
        Ok(())
    }

    /// Rounds until the command ends, a limit or a stop signal's grace cuts the recording, or
    /// an error ends the run.
    fn until_stop(&mut self) -> End {
        let Run {
            cfg,
            steering,
            command,
            rounds,
            writer,
            ..
        } = self;
        let mut active = Instant::now();
        let mut limits = Limits {
            cfg,
            fs: match cfg.output.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            },
            next_space: Instant::now(),
            started: Instant::now(),
        };
        let pid = command.pid();
        let (mut cut, mut error) = (None, None);
        let watched = steering.watch(command, &mut |stop| {
            let moved = match rounds.round(writer) {
                Ok(n) => n,
                Err(e) => {
                    error = Some(e.to_string());
                    return Ok::<_, HooksError>(ControlFlow::Break(()));
                }
            };
            if moved > 0 {
                active = Instant::now();
            }
            if let Some(why) = limits.check(writer.bytes_written(), stop, pid) {
                cut = Some(why);
                return Ok(ControlFlow::Break(()));
            }
            let ms = if rounds.streamer.is_some() && active.elapsed() < Duration::from_secs(1) {
                ACTIVE_MS
            } else if stop.is_some() {
                5
            } else {
                IDLE_MS
            };
            Ok(ControlFlow::Continue(Duration::from_millis(ms)))
        });
        let ended = match watched {
            Ok(e) => e,
            Err(e) => {
                error.get_or_insert(e.to_string());
                None
            }
        };
        End { ended, cut, error }
    }

    /// The last round, the names and the end of the file, the file put in place, the summary;
    /// then the command's status (waited for when it runs on). Every way out of the run
    /// comes here.
    fn finish(self, end: End, log: &mut dyn FnMut(&str)) -> Result<Outcome, HooksError> {
        let Run {
            cfg,
            dir,
            mut warnings,
            mut steering,
            mut command,
            mut rounds,
            irqs,
            mut writer,
            prefaulter,
        } = self;
        let End {
            mut ended,
            cut,
            mut error,
        } = end;
        let prog = &cfg.argv[0];
        let prefaulted = prefaulter.map(|p| p.stop()).unwrap_or_default();
        // Let the last switch records of exiting grandchildren land, then drain once more.
        if error.is_none() {
            if let Err(e) = rounds.round(&mut writer) {
                error = Some(e.to_string());
            }
        }
        rounds.irqs = None;
        rounds.switches = None;
        if let Some(wk) = rounds.wake.as_mut() {
            wk.rec = None;
        }
        if let (Some(sig), Some(exit)) = (steering.stop().and_then(|s| s.signal), ended) {
            log(&format!(
                "{} received; {prog} {}; writing the trace",
                signal::name(sig),
                match exit {
                    Exit::Signal(s) => format!("was ended by {}", signal::name(s)),
                    Exit::Code(c) => format!("exited with status {c}"),
                }
            ));
        }
        // A run ended by an error records nothing more: its command is not left running
        // untraced while the recorder waits for it (as `hood record` does).
        if let (Some(_), None) = (&error, ended) {
            if command.try_wait().ok().flatten().is_none() {
                log(&format!(
                    "killing the traced command (pid {}): the recording stopped on an error",
                    command.pid()
                ));
            }
            command.kill();
            ended = command.try_wait().ok().flatten();
        }
        let (mut procs, events) = collect::collect(dir, &mut warnings);
        let streamed = rounds.streamer.take().map(|s| {
            // Names found while the processes ran (through their live mappings) for what the
            // segments' copies of the mappings do not cover (a library loaded, then unloaded).
            for p in procs.iter_mut() {
                for (&a, n) in s.names(p.pid, p.start_mono_ns).into_iter().flatten() {
                    p.symbols.entry(a).or_insert_with(|| n.clone());
                }
                // Threads whose slots were given to later threads: their slots no longer say.
                let (retired, nested) = s.retired(p.pid, p.start_mono_ns);
                p.threads.extend(retired.iter().cloned());
                if nested > 0 {
                    p.notes.push(collect::nested_note(nested));
                }
            }
            warnings.extend(s.warnings.iter().cloned());
            (s.events, s.skipped)
        });
        // Said by the recorder now, and by every report of the file.
        let stopped = error
            .as_ref()
            .map(|e| format!("recording stopped early: {e}"));
        for why in cut.iter().chain(&stopped) {
            warnings.push(why.clone());
            for p in procs.iter_mut() {
                p.notes.push(why.clone());
            }
        }
        for m in &warnings {
            if Some(m) != stopped.as_ref() {
                log(&format!("warning: {m}"));
            }
        }
        // A command that runs on after the trace is finished is waited for without recording
        // (it dies with its recorder otherwise); stop signals still reach it.
        let pid = command.pid();
        let mut status = |command: &mut Command, log: &mut dyn FnMut(&str)| match ended {
            Some(e) => Ok::<_, HooksError>(e.shell_code()),
            None => {
                log(&format!(
                    "{prog} (pid {pid}) runs on unrecorded; waiting for it to end (Ctrl-C or `kill {pid}` ends it)"
                ));
                Ok(steering.wait(command)?.shell_code())
            }
        };
        if procs.is_empty() && error.is_none() {
            // Nothing to replace the previous file with: it stays (the new one is dropped).
            let in_place = writer.in_place_output();
            drop(writer);
            log(&format!(
                "{prog} produced no trace: was it built with -finstrument-functions \
                 (gcc/clang) and dynamically linked? See docs/trace.md{}",
                if in_place {
                    String::new()
                } else {
                    format!("; {} is left as it was", cfg.output.display())
                }
            ));
            return Ok(Outcome {
                status: status(&mut command, log)?,
                traced: false,
                error: None,
            });
        }
        // The end of the file; after an error, as much of it as can be written, and the file
        // put in place as far as it was written (a failed write leaves it cut at its last
        // whole chunk), as a killed recorder's would be kept.
        let ended_file = write_end(&mut writer, &procs, &events, &warnings);
        let at = match (ended_file, &error) {
            (Ok(()), None) => writer.commit().map(|_| cfg.output.clone())?,
            (ended_file, _) => {
                if let Err(e) = ended_file {
                    error.get_or_insert(e.to_string());
                }
                let placed = writer.put_in_place();
                if let Some(e) = placed.error {
                    error.get_or_insert(e.to_string());
                }
                placed.at
            }
        };
        let (n_streamed, skipped) = streamed.unwrap_or((0, 0));
        let recorded = events.iter().map(|t| t.words.len() as u64).sum::<u64>() + n_streamed;
        // After an error, the events the file holds, as a report reads them (a write cut
        // short holds fewer than were taken out of the rings).
        let held = match &error {
            Some(_) => events_in_file(&at).unwrap_or(recorded),
            None => recorded,
        };
        summary(
            cfg,
            &at,
            &procs,
            held,
            skipped,
            prefaulted,
            (ended.is_some(), error.is_some()),
            log,
        );
        if irqs {
            rounds.irq_counts.print(log);
        }
        if let Some(wk) = &rounds.wake {
            log(&format!(
                "wake-ups: {} of the traced threads recorded{}",
                wk.kept,
                if wk.lost > 0 {
                    format!(
                        ", {} wake-up records LOST by the kernel (ring full): some waits show no waker",
                        wk.lost
                    )
                } else {
                    ", none lost".to_string()
                }
            ));
        }
        if let Some(e) = &error {
            log(&crate::run::stopped_early(e, &at, "hood trace report"));
        }
        Ok(Outcome {
            status: status(&mut command, log)?,
            traced: true,
            error,
        })
    }
}

/// The events a trace file holds, as a report reads them (its EVENTS chunks, up to the first
/// damaged one); `None` when it cannot be opened.
fn events_in_file(path: &Path) -> Option<u64> {
    let mut r = hood_format::Reader::open(path).ok()?;
    let mut data = Vec::new();
    let mut n = 0u64;
    while let Ok(Some(c)) = r.next_chunk_into(&mut data) {
        if c.tag == tags::trace::EVENTS {
            n += (data
                .len()
                .saturating_sub(hood_tracemodel::trace::EVENTS_HEADER)
                / 8) as u64;
        }
    }
    Some(n)
}

/// The rings drained each round.
struct Rounds {
    switches: Option<SwitchRecorder>,
    irqs: Option<IrqRecorder>,
    streamer: Option<stream::Streamer>,
    irq_dec: Option<IrqDecoder>,
    irq_counts: IrqCounts,
    /// A round's ring bytes per CPU.
    per_cpu: BTreeMap<u32, Vec<u8>>,
    wake: Option<Wakes>,
}

/// The wake-up rings and what the recorder keeps of them: the records whose wakee is a
/// thread of the command (the whole-CPU event sees every wake-up of the machine).
struct Wakes {
    rec: Option<WakeupRecorder>,
    dec: WakeDecoder,
    per_cpu: BTreeMap<u32, Vec<u8>>,
    /// Threads of the command: every thread that a switch record named. A thread is switched
    /// in before it can block, and the switch rings are drained after the wake-up rings, so
    /// a wake-up of a traced thread always finds it here.
    traced: std::collections::HashSet<u32>,
    /// Wakers already named.
    named: std::collections::HashSet<u32>,
    kept: u64,
    lost: u64,
}

impl Wakes {
    /// This round's wake-up records of traced threads, per CPU, into the file, with the names
    /// of wakers not seen before.
    fn write<W: Write>(&mut self, w: &mut Writer<W>) -> Result<(), HooksError> {
        let mut names = Vec::new();
        for (&cpu, b) in &self.per_cpu {
            let mut keep = Vec::new();
            let _ = hood_raw::frames::for_each_frame(b, |f| {
                const SAMPLE: u32 = 9;
                const LOST: u32 = 2;
                match f.ty {
                    SAMPLE => {
                        let d = self.dec.decode(cpu, f.bytes);
                        let Some(wk) = d.wakeups.first() else {
                            return;
                        };
                        if !self.traced.contains(&wk.wakee) {
                            return;
                        }
                        keep.extend_from_slice(f.bytes);
                        self.kept += 1;
                        if wk.tid != 0 && self.named.insert(wk.tid) {
                            if let Some(comm) = hood_procfs::process::thread_comm(wk.pid, wk.tid) {
                                names.push(TaskName {
                                    pid: wk.pid,
                                    tid: wk.tid,
                                    comm,
                                });
                            }
                        }
                    }
                    LOST => {
                        self.lost += self.dec.decode(cpu, f.bytes).lost;
                        keep.extend_from_slice(f.bytes);
                    }
                    _ => {}
                }
            });
            if !keep.is_empty() {
                write_cpu_chunk(w, tags::trace::WAKEUPS, cpu, &keep)?;
            }
        }
        if !names.is_empty() {
            let v = serde_json::json!({"version": PAYLOAD_VERSION, "tasks": names});
            w.write_chunk(tags::trace::TASKS, &serde_json::to_vec(&v)?, false)?;
        }
        Ok(())
    }
}

impl Rounds {
    /// One round: the switch and irq rings' records and the threads' new events, into the
    /// file. Returns the events taken.
    fn round<W: Write>(&mut self, w: &mut Writer<W>) -> Result<u64, HooksError> {
        // A ring's records come in up to two pieces per round (where the ring wraps): a round's
        // pieces are joined per CPU before they become a chunk, so every chunk holds whole
        // records (the kernel publishes whole records only).
        // Wake-up rings before the switch rings: see `Wakes::traced`.
        if let Some(wk) = self.wake.as_mut() {
            if let Some(r) = wk.rec.as_mut() {
                drain_per_cpu(&mut wk.per_cpu, |sink| r.drain(sink))?;
            } else {
                wk.per_cpu.clear();
            }
        }
        if let Some(s) = self.switches.as_mut() {
            drain_per_cpu(&mut self.per_cpu, |sink| s.drain(sink))?;
            for (&cpu, b) in &self.per_cpu {
                if let Some(wk) = self.wake.as_mut() {
                    wk.traced
                        .extend(decode_switches(cpu, b).switches.iter().map(|s| s.tid));
                }
                write_cpu_chunk(w, tags::trace::SWITCHES, cpu, b)?;
            }
        }
        if let Some(wk) = self.wake.as_mut() {
            wk.write(w)?;
        }
        if let Some(r) = self.irqs.as_mut() {
            drain_per_cpu(&mut self.per_cpu, |sink| r.drain(sink))?;
            for (&cpu, b) in &self.per_cpu {
                if let Some(d) = &self.irq_dec {
                    self.irq_counts.add(&d.decode(cpu, b));
                }
                write_cpu_chunk(w, tags::trace::IRQS, cpu, b)?;
            }
        }
        let moved = match self.streamer.as_mut() {
            Some(st) => st.drain(w)?,
            None => 0,
        };
        // A test's fault: the n-th round that moved events fails.
        #[cfg(test)]
        if moved > 0 {
            crate::run::seam::fails(crate::run::seam::Point::TraceRound)?;
        }
        w.flush()?;
        Ok(moved)
    }
}

/// Empty `per_cpu` and fill it from one drain of a perf ring set.
fn drain_per_cpu(
    per_cpu: &mut BTreeMap<u32, Vec<u8>>,
    drain: impl FnOnce(
        &mut dyn FnMut(u32, &[u8]) -> std::io::Result<()>,
    ) -> Result<usize, hood_perf::PerfError>,
) -> Result<(), HooksError> {
    per_cpu.clear();
    drain(&mut |cpu, b| {
        per_cpu.entry(cpu).or_default().extend_from_slice(b);
        Ok(())
    })?;
    Ok(())
}

/// One CPU's raw ring bytes as a chunk: u32 CPU, then the records.
fn write_cpu_chunk<W: Write>(
    w: &mut Writer<W>,
    tag: u32,
    cpu: u32,
    bytes: &[u8],
) -> Result<(), hood_format::FormatError> {
    let mut b = Vec::with_capacity(4 + bytes.len());
    b.extend_from_slice(&cpu.to_le_bytes());
    b.extend_from_slice(bytes);
    w.write_chunk(tag, &b, true)
}

/// What the irq rings held, and what they lost.
#[derive(Default)]
struct IrqCounts {
    hard: u64,
    soft: u64,
    lost: u64,
}

impl IrqCounts {
    fn add(&mut self, d: &IrqDecode) {
        self.lost += d.lost;
        for i in &d.irqs {
            if i.kind.is_entry() {
                if i.kind.is_soft() {
                    self.soft += 1;
                } else {
                    self.hard += 1;
                }
            }
        }
    }

    fn print(&self, log: &mut dyn FnMut(&str)) {
        log(&format!(
            "irqs: {} hard irq and {} softirq entries in the traced threads' context{}",
            self.hard,
            self.soft,
            if self.lost > 0 {
                format!(", {} irq records LOST by the kernel (ring full)", self.lost)
            } else {
                ", none lost".to_string()
            }
        ));
    }
}

/// The end of the file: every process (names, threads, counts; replacing the provisional
/// chunks of streamed ones), the events of fixed-buffer segments, the notes, flushed (the
/// caller puts the file in place).
fn write_end(
    w: &mut Writer<OutputFile>,
    procs: &[ProcessTrace],
    events: &[collect::SegEvents],
    warnings: &[String],
) -> Result<(), HooksError> {
    for p in procs {
        let v = serde_json::json!({"version": PAYLOAD_VERSION, "process": p});
        w.write_chunk(tags::trace::PROCESS, &serde_json::to_vec(&v)?, true)?;
    }
    for t in events.iter().filter(|t| !t.words.is_empty()) {
        // Split long threads so a report decodes a bounded number of events at a time (and
        // no chunk exceeds the container's payload limit); each part carries the full
        // timestamp of the event before it as its anchor.
        let mut anchor = t.anchor_ticks;
        for part in t.words.chunks(MAX_EVENTS_PER_CHUNK) {
            let (payload, last) = encode_raw(t.pid, t.tid, t.start_mono_ns, anchor, part);
            w.write_chunk(tags::trace::EVENTS, &payload, false)?;
            anchor = last;
        }
    }
    if !warnings.is_empty() {
        w.write_chunk(tags::common::NOTES, &serde_json::to_vec(warnings)?, false)?;
    }
    w.flush()?;
    Ok(())
}

/// The lines `record` prints at the end. `events`: the events the file holds; `skipped`:
/// streamed events skipped; `ended`: the command has ended (its CPU time is known);
/// `stopped`: an error stopped the recording (the command ran on until it was killed).
#[allow(clippy::too_many_arguments)]
fn summary(
    cfg: &RecordConfig,
    at: &Path,
    procs: &[ProcessTrace],
    n: u64,
    skipped: u64,
    prefaulted: prefault::Stats,
    (ended, stopped): (bool, bool),
    log: &mut dyn FnMut(&str),
) {
    let threads: Vec<_> = procs.iter().flat_map(|p| &p.threads).collect();
    let dropped: u64 = threads.iter().map(|t| t.dropped).sum();
    let over: u64 = threads.iter().map(|t| t.overwritten).sum();
    // The file is in place: its size is what was written (not following a link).
    let size = std::fs::symlink_metadata(at).map_or(0, |m| m.len());
    log(&hood_format::wrote_line(
        at,
        size,
        hood_format::FileKind::Trace,
        &format!(
            "{} process{}, {} thread{}, {n} events",
            procs.len(),
            if procs.len() == 1 { "" } else { "es" },
            threads.len(),
            if threads.len() == 1 { "" } else { "s" },
        ),
    ));
    // The program's own CPU and the recorder's (pre-faulting, copying, writing, naming), so
    // the cost moved off the program is visible.
    log(&format!(
        "CPU: program {}, recorder {:.3} s ({} buffer pages pre-faulted, {} pre-allocated)",
        if ended {
            format!("{:.3} s", cpu_seconds(Whose::Children))
        } else {
            "still running".to_string()
        },
        cpu_seconds(Whose::SelfProcess),
        prefaulted.pages,
        prefaulted.allocated
    ));
    match cfg.full {
        Full::Stream => {
            let lost = dropped + skipped;
            if lost > 0 && stopped {
                log(&format!(
                    "warning: {lost} events LOST, among them those the program wrote after the recording stopped (until it was killed)"
                ));
            } else if lost > 0 {
                log(&format!(
                    "warning: {lost} events LOST: the program outran the recorder and filled a thread's {}-event ring; raise --buffer, use --filter, or give the recorder a CPU",
                    cfg.buffer
                ));
            } else {
                log("events lost: 0 (streamed while the program ran)");
            }
        }
        Full::Stop if dropped > 0 => log(&format!(
            "warning: buffers full: {dropped} events dropped (--full stop); raise --buffer, use --filter, or leave out --full to stream"
        )),
        _ => {}
    }
    if over > 0 {
        log(&format!(
            "{over} older events overwritten (--full wrap keeps the newest {} per thread)",
            cfg.buffer
        ));
    }
}
