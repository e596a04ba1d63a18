//! The recording loop: open the events, write what a report needs besides samples, stream the
//! rings into the file until told to stop, finalize.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hood_format::{tags, FileKind, OutputFile, Writer};
use hood_model::profile::meta::OffCpuMeta;
use hood_model::profile::{ProcSnapshotChunk, RecordMeta, RecordMode, RecordStats};
use hood_perf::{Readiness, Session, Target};
use hood_proc::child::{Child, Exit};
use hood_proc::steer::{Request, Steer};

use crate::collect::Collector;
use crate::config::{call_graph_name, RecordConfig, Who};
use crate::{labels, snapshot, RecordError};

/// What a finished recording reports (also written for `hood stop`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// The file written.
    pub output: String,
    /// Samples recorded.
    pub samples: u64,
    /// Samples lost.
    pub lost: u64,
    /// Seconds recorded.
    pub seconds: f64,
    /// Bytes written.
    pub bytes: u64,
    /// Lost samples per CPU.
    pub lost_per_cpu: BTreeMap<u32, u64>,
    /// Error that ended the recording early.
    pub error: Option<String>,
    /// Samples recorded that the file does not hold (a write failed: a full disk).
    #[serde(default)]
    pub samples_not_written: u64,
    /// Context switches and wake-ups recorded (`--off-cpu`).
    #[serde(default)]
    pub switches_and_wakeups: u64,
    /// Of those, the ones of waits shorter than `--off-cpu-min`, stored without user stacks.
    #[serde(default)]
    pub short_waits: u64,
    /// `--off-cpu-min` in nanoseconds.
    #[serde(default)]
    pub off_cpu_min_ns: u64,
    /// Whether the kernel copied off-CPU user stacks only for waits at least that long
    /// (deferred stacks, BPF).
    #[serde(default)]
    pub deferred_stacks: bool,
    /// Long waits stored with a deferred user stack.
    #[serde(default)]
    pub deferred_joined: u64,
    /// Long waits stored without one: in neither a system call nor a page fault, or the
    /// copy was lost.
    #[serde(default)]
    pub deferred_missing: u64,
    /// Long waits stored with the kernel stack taken when their thread came back.
    #[serde(default)]
    pub kernel_stacks_joined: u64,
    /// Long waits whose kernel stack never came (those the rate bound left untaken too).
    #[serde(default)]
    pub kernel_stacks_missing: u64,
    /// `--off-cpu-rate` with deferred stacks (0: no bound).
    #[serde(default)]
    pub off_cpu_rate: u32,
    /// Long waits whose stacks the rate bound left untaken.
    #[serde(default)]
    pub rate_skipped_waits: u64,
    /// Preempted threads' copies the rate bound left untaken.
    #[serde(default)]
    pub rate_skipped_copies: u64,
    /// CPUs sampled.
    #[serde(default)]
    pub cpus: usize,
    /// The event sampled (`cpu-clock`).
    #[serde(default)]
    pub event: String,
    /// The user stack copy asked for at the start, bytes (0: none).
    #[serde(default)]
    pub stack_copy: u32,
    /// Each time the copy grew while stacks were cut by it.
    #[serde(default)]
    pub stack_copy_steps: Vec<CopyStep>,
}

/// One growth of the user stack copy.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CopyStep {
    /// Seconds into the recording.
    pub at: f64,
    /// The new copy, bytes.
    pub bytes: u32,
    /// The process whose stacks were cut most by the old copy, its name, and how many.
    pub pid: u32,
    /// Its name (`/proc/PID/comm`), empty if it had ended.
    pub comm: String,
    /// Its stacks cut by the old copy since the last step.
    pub cuts: u32,
    /// A step back: samples the kernel dropped with the bigger copy (0 for a growth).
    #[serde(default)]
    pub lost: u64,
}

/// The user stack copy, grown while stacks are cut by it ([`RecordConfig::max_stack_copy`]).
struct Growth {
    /// The copy the sampling events ask for now, bytes (0: no copies).
    bytes: u32,
    /// The copy asked for at the start.
    first: u32,
    /// The most it may grow to (the configuration, and what the ring holds).
    max: u32,
    /// Stacks cut by the present copy per pid, since the last step.
    cuts: BTreeMap<u32, u32>,
    steps: Vec<CopyStep>,
    /// Samples lost before the last step.
    lost_before: u64,
}

/// Stacks of one process cut by the copy before it grows: one could be a stray frame; a
/// process whose stacks are deeper than the copy shows it at once.
const CUTS_TO_GROW: u32 = 3;

impl Outcome {
    /// The lines a finished recording is summed up in, by `hood record` and `hood stop`
    /// alike: the file, its size and samples, then losses and an early stop.
    pub fn lines(&self) -> Vec<String> {
        outcome_lines(self)
    }
}

/// A recording that ended (normally or by an error it wrote down).
#[derive(Debug, Clone)]
pub struct Finished {
    /// What it recorded.
    pub outcome: Outcome,
    /// The exit status of the recorded command (128 + N for signal N), when one was started.
    pub exit_status: Option<i32>,
}

/// Why a run ended, written to the file's STATS chunk as `stop_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The recorded command ended.
    CommandExited,
    /// Every process of `-p` ended.
    AttachedExited,
    /// `--duration` passed.
    Duration,
    /// The caller's [`Steer`] asked (a key, a signal, `hood stop`, a server's stop flag).
    User,
    /// Reading the rings failed.
    Drain,
    /// Writing the file failed (a full disk).
    Write,
    /// Reading or switching the labels events failed.
    Labels,
    /// Waiting for the rings failed (`poll`).
    Poll,
    /// Pausing or resuming the events failed (`ioctl`).
    Pause,
}

impl Stop {
    /// The words stored in the file (`RecordStats::stop_reason`) and shown by the report.
    fn words(self) -> &'static str {
        match self {
            Stop::CommandExited => "command exited",
            Stop::AttachedExited => "all attached processes exited",
            Stop::Duration => "duration reached",
            Stop::User => "stopped by user",
            Stop::Drain => "error",
            Stop::Write => "write error",
            Stop::Labels => "labels error",
            Stop::Poll => "poll error",
            Stop::Pause => "pause error",
        }
    }
}

/// An error inside the run: it ends the run with its reason, and the file is still finalized.
struct Fault {
    stop: Stop,
    error: String,
}

/// Turns an error inside the run into the [`Fault`] that ends it with `stop`.
fn fault<E: std::fmt::Display>(stop: Stop) -> impl FnOnce(E) -> Fault {
    move |e| Fault {
        stop,
        error: e.to_string(),
    }
}

/// The recorded command: killed and reaped on every way out that did not wait for it (a run
/// that could not start, a panic); a no-op for a command already reaped.
struct Command(Option<Child>);

impl Drop for Command {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            c.kill();
        }
    }
}

/// What a run holds from its open to its finish. Dropped on every way out: the command is
/// killed unless reaped, the labels instance removed, the recorder's priority put back, and a
/// file never placed removed.
struct Held {
    writer: Writer<OutputFile>,
    command: Command,
    _priority: hood_proc::usage::RaisedPriority,
    session: Session,
    labels: Option<labels::LabelsRecorder>,
}

/// The kernel's symbols read before the events were opened (`--off-cpu`), and its wait entry
/// code found in them (deferred stacks).
struct Early {
    kallsyms: Option<String>,
    entry_code: Vec<(u64, u64)>,
    /// The interrupt code a task session's BPF-written wake-ups are told apart by (empty:
    /// its wake-ups are sampled with the tracepoint).
    irq_code: Vec<(u64, u64, u8)>,
}

/// A run between its start and its finish.
struct Run<'a> {
    cfg: &'a RecordConfig,
    held: Held,
    meta: RecordMeta,
    stored_attr: Vec<u8>,
    collector: Collector,
    /// The processes at the start (`-a`, `-p`), to find the ones started while it was taken.
    snap: Option<ProcSnapshotChunk>,
    /// What the run may still read of /proc/PID/maps, over all its processes.
    maps_budget: hood_procfs::process::MapsBudget,
    start_mono: u64,
    started: Instant,
    paused_at: Option<Instant>,
    paused: Duration,
    exit_status: Option<i32>,
    growth: Growth,
}

/// How a run ended.
struct End {
    stop: Stop,
    error: Option<String>,
}

/// Record according to `cfg`, steered by `steer`; every message for the user (notes,
/// pauses, the summary at the end) goes to `log`, one line each, without a prefix.
///
/// One skeleton: open (the file, the command held before its exec, the events) → describe
/// (what a report needs besides samples) → run until a stop → finish. An error before the run
/// starts is returned and leaves no file; an error inside the run ends it with a stop reason
/// naming the error, and the file is finalized and the outcome returned all the same.
///
/// A command to profile is started from the calling thread, and Linux kills it (SIGKILL) when
/// that thread ends: the call returns only once the command has ended (killed by the
/// recorder when the run ended by an error).
pub fn record(
    cfg: &RecordConfig,
    steer: &mut dyn Steer,
    log: &mut dyn FnMut(&str),
) -> Result<Finished, RecordError> {
    let (held, early) = open(cfg, log)?;
    let mut run = describe(cfg, held, early, log)?;
    run.start()?;
    let end = run.until_stop(steer, log);
    Ok(run.finish(end, log))
}

/// Open the output, the command (held before its exec), the events and the labels instance.
/// Also returns the kernel symbols read early (`--off-cpu`) and the kernel's wait entry code
/// for deferred stacks.
fn open(cfg: &RecordConfig, log: &mut dyn FnMut(&str)) -> Result<(Held, Early), RecordError> {
    // The output first: a path that cannot be written (another hood writing it, a planted
    // pipe) is refused before anything starts. The recording grows beside the path and
    // replaces it only at the end; a run that cannot start leaves the path as it was.
    let mut writer = Writer::create(&cfg.output, FileKind::Profile)?;
    for s in writer.stale() {
        log(&s.to_string());
    }
    let command = Command(match &cfg.who {
        Who::Command(argv) => Some(Child::spawn_held(argv, &[])?),
        _ => None,
    });
    // The recorder's thread before the programs it samples (the command is forked already
    // and keeps its own priority); put back when the recording ends.
    let priority = hood_proc::usage::raise_recorder_priority();
    let target = match &cfg.who {
        Who::System => Target::System,
        Who::Pids(p) => Target::Tasks(p.clone()),
        Who::Command(_) => Target::Child(command.0.as_ref().map_or(0, Child::pid)),
    };
    // Unless `HOOD_OFF_CPU_BPF=0`, an off-CPU recording lets BPF programs take stacks only for
    // long waits, when it can tell a wait inside a system call or a page fault by its kernel
    // stack (kernel symbols readable).
    let early_kallsyms = match cfg.sampling.off_cpu {
        true => hood_procfs::host::kallsyms(),
        false => None,
    };
    let entry_code = early_kallsyms
        .as_deref()
        .filter(|_| defer_off_cpu_stacks())
        .map(snapshot::wait_entry_ranges)
        .unwrap_or_default();
    let irq_code = match (&cfg.who, bpf_wakeups()) {
        (Who::System, _) | (_, false) => Vec::new(),
        _ => early_kallsyms
            .as_deref()
            .filter(|_| !entry_code.is_empty())
            .map(snapshot::interrupt_ranges)
            .unwrap_or_default(),
    };
    let session = open_session(
        cfg,
        &target,
        !entry_code.is_empty(),
        !irq_code.is_empty(),
        log,
    )?;
    for n in session.notes() {
        log(n);
    }
    // The labels instance exists before sampling starts and is removed on every way out.
    let labels = match cfg.labels {
        false => None,
        true => Some(labels::LabelsRecorder::start(
            session.cpus(),
            cfg.labels_budget,
            &mut writer,
            log,
        )?),
    };
    let held = Held {
        writer,
        command,
        _priority: priority,
        session,
        labels,
    };
    let early = Early {
        kallsyms: early_kallsyms,
        entry_code,
        irq_code,
    };
    Ok((held, early))
}

/// Write what a report needs besides samples (the run's description, the attribute, the
/// processes, kernel symbols, the vDSO) and set up the collector, before sampling starts: a
/// recorder killed at any moment from then on leaves a readable recording.
fn describe<'a>(
    cfg: &'a RecordConfig,
    mut held: Held,
    early: Early,
    log: &mut dyn FnMut(&str),
) -> Result<Run<'a>, RecordError> {
    let (session, writer) = (&held.session, &mut held.writer);
    let (hostname, kernel_release) = snapshot::uname();
    let start_mono = hood_proc::clock::monotonic_ns();
    let meta = RecordMeta {
        hood_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: match cfg.who {
            Who::System => RecordMode::System,
            Who::Pids(_) => RecordMode::Pids,
            Who::Command(_) => RecordMode::Command,
        },
        command: match &cfg.who {
            Who::Command(a) => a.clone(),
            _ => Vec::new(),
        },
        pids: match &cfg.who {
            Who::Pids(p) => p.iter().map(|&p| p as u32).collect(),
            _ => Vec::new(),
        },
        event: session.event().to_string(),
        requested_event: cfg.requested_event.clone(),
        freq_hz: cfg.sampling.freq_hz,
        callchain: cfg.sampling.callchain,
        call_graph: if cfg.sampling.callchain {
            call_graph_name(cfg.sampling.user_stack)
        } else {
            String::new()
        },
        hostname,
        kernel_release,
        kernel_build_id: hood_symbols::kernel_build_id(),
        cpus: session.cpus().to_vec(),
        start_monotonic_ns: start_mono,
        start_unix_ns: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        notes: session.notes().to_vec(),
        kallsyms_used_at_end: true,
        off_cpu: session.off_cpu().map(|tp| OffCpuMeta {
            formats: tp.formats.clone(),
            min_ns: cfg.off_cpu_min.as_nanos().min(u128::from(u64::MAX)) as u64,
            all_wakeups: true,
            stack_rate: match session.deferred_stack_ids() {
                Some(_) => cfg.off_cpu_rate,
                None => 0,
            },
        }),
        perf_event_max_stack: hood_perf::limits::max_stack(),
    };
    writer.write_chunk(tags::profile::META, &serde_json::to_vec(&meta)?, false)?;
    // Every read of /proc/PID/maps of this run (the snapshot, processes found later, the
    // unwinder's re-reads) is charged to one budget.
    let maps_budget = hood_procfs::process::MapsBudget::default();
    // Stack copies are unwound as they are drained; the file stores the chains, described by
    // the attribute without the copy's fields.
    let mut rewriter = hood_unwind::Rewriter::new(
        &session.attr_bytes(),
        hood_unwind::Options {
            live: true,
            read_maps: Some({
                let budget = maps_budget.clone();
                hood_unwind::MapsReader::new(move |pid, each_line| {
                    budget.for_each_line(pid, each_line)
                })
            }),
            ..Default::default()
        },
    );
    if let (Some(rw), Some(ids)) = (rewriter.as_mut(), session.deferred_stack_ids()) {
        rw.set_deferred(ids, early.entry_code);
        rw.set_wake_outputs(session.wake_output_ids(), early.irq_code);
    }
    if let Some(rw) = rewriter.as_mut() {
        rw.set_layouts(session.layouts());
    }
    if let (Some(rw), Some(max)) = (rewriter.as_mut(), hood_perf::limits::max_stack()) {
        rw.set_kernel_max_stack(max);
    }
    let stored_attr = rewriter
        .as_ref()
        .map_or_else(|| session.attr_bytes(), |r| r.stored_attr().to_vec());
    writer.write_chunk(tags::profile::PERF_ATTR, &stored_attr, false)?;
    // From here on the file reads as a recording (of no samples yet) if the recorder is
    // killed; the slower snapshot, kernel symbols and vDSO follow.
    writer.flush()?;
    let snap = match &cfg.who {
        Who::System => Some(snapshot::processes(None, &maps_budget)),
        Who::Pids(p) => Some(snapshot::processes(Some(p), &maps_budget)),
        Who::Command(_) => None,
    };
    if let (Some(rw), Some(snap)) = (rewriter.as_mut(), snap.as_ref()) {
        for p in &snap.processes {
            rw.unwinder().load_proc_maps(p.pid, &p.maps);
        }
    }
    for note in snap
        .iter()
        .flat_map(|s| snapshot::dropped_maps_notes(s, &maps_budget))
        .chain(maps_budget.take_note())
    {
        log(&note);
    }
    if let Some(snap) = &snap {
        writer.write_chunk(tags::profile::PROC_SNAPSHOT, &snap.to_json()?, true)?;
    }
    // Kernel symbols are needed only when kernel code is sampled (a user-space-only
    // recording has no kernel frames), and stored only once a sample is (a recording without
    // samples stays small).
    let kallsyms = if session.samples_kernel() {
        let k = early.kallsyms.or_else(hood_procfs::host::kallsyms);
        if k.is_none() {
            log(&format!(
                "kernel addresses are hidden from hood, so kernel frames will be \
                 unresolved: {}",
                hood_perf::kallsyms_hidden_reason()
            ));
        }
        k
    } else {
        None
    };
    if let Some(v) = snapshot::vdso() {
        if let Some(rw) = rewriter.as_mut() {
            rw.unwinder().set_vdso(&v);
        }
        writer.write_chunk(tags::profile::VDSO, &v, true)?;
    }
    // Everything a report needs besides samples is in the file before sampling starts, so a
    // recorder killed at any moment from here on leaves a readable recording.
    writer.flush()?;
    let mut collector = Collector::new(session.cpus(), &stored_attr);
    if let Some(o) = &meta.off_cpu {
        collector.set_sched(&o.formats);
    }
    if let Some(k) = &kallsyms {
        collector.write_before_samples(tags::profile::KALLSYMS, k.clone().into_bytes());
    }
    collector.kallsyms = kallsyms;
    if let Some(rw) = rewriter.take() {
        let min = meta.off_cpu.as_ref().map_or(0, |o| o.min_ns);
        collector.set_rewriter(rw, min);
        if meta.off_cpu.is_none() {
            let ring_bytes = cfg.sampling.ring_pages.saturating_mul(4096);
            collector.set_raw_fallback(&session.attr_bytes(), ring_bytes, keep_stack_copies());
        }
    }
    let first = match cfg.sampling.user_stack {
        hood_perf::UserStack::Copy { bytes, .. } if collector.rewriter().is_some() => bytes,
        _ => 0,
    };
    let max = match cfg.sampling.off_cpu || first == 0 {
        true => first,
        false => crate::config::stack_copy_cap(
            cfg.max_stack_copy,
            cfg.sampling.ring_pages,
            cfg.sampling.freq_hz,
        )
        .max(first),
    };
    Ok(Run {
        cfg,
        held,
        meta,
        stored_attr,
        collector,
        snap,
        maps_budget,
        start_mono,
        started: Instant::now(),
        paused_at: None,
        paused: Duration::ZERO,
        exit_status: None,
        growth: Growth {
            bytes: first,
            first,
            max,
            cuts: BTreeMap::new(),
            steps: Vec::new(),
            lost_before: 0,
        },
    })
}

impl Run<'_> {
    /// Switch tracing and sampling on (a command's events switch on at its exec). An error
    /// here is returned: nothing was recorded, and the command is killed.
    fn start(&mut self) -> Result<(), RecordError> {
        if let Some(l) = self.held.labels.as_mut() {
            l.begin()?;
        }
        match self.held.command.0.as_mut() {
            Some(c) => c.release()?,
            None => self.held.session.enable()?,
        }
        self.started = Instant::now();
        Ok(())
    }

    /// Drain the rings into the file until a stop: the caller's request, the end of the
    /// processes, the duration, or an error (which becomes the stop's reason).
    fn until_stop(&mut self, steer: &mut dyn Steer, log: &mut dyn FnMut(&str)) -> End {
        let ended = self.late_processes(log).and_then(|()| loop {
            match self.turn(steer, log) {
                Ok(None) => {}
                Ok(Some(stop)) => break Ok(stop),
                Err(f) => break Err(f),
            }
        });
        match ended {
            Ok(stop) => End { stop, error: None },
            Err(f) => End {
                stop: f.stop,
                error: Some(f.error),
            },
        }
    }

    /// Processes started while the first snapshot was taken (under load that takes a while)
    /// forked and exec'ed before the events were on: take them now, or they go unnamed.
    fn late_processes(&mut self, log: &mut dyn FnMut(&str)) -> Result<(), Fault> {
        let (Who::System, Some(snap)) = (&self.cfg.who, &self.snap) else {
            return Ok(());
        };
        let late = snapshot::processes_since(snap, &self.maps_budget);
        if late.processes.is_empty() {
            return Ok(());
        }
        for note in snapshot::dropped_maps_notes(&late, &self.maps_budget)
            .into_iter()
            .chain(self.maps_budget.take_note())
        {
            log(&note);
        }
        self.collector.load_proc_maps(&late.processes);
        let json = late.to_json().map_err(fault(Stop::Write))?;
        self.held
            .writer
            .write_chunk(tags::profile::PROC_SNAPSHOT, &json, true)
            .map_err(fault(Stop::Write))
    }

    /// One turn: wait for the rings, drain them into the file, then look at what may stop
    /// the run.
    fn turn(
        &mut self,
        steer: &mut dyn Steer,
        log: &mut dyn FnMut(&str),
    ) -> Result<Option<Stop>, Fault> {
        // Tracepoint rings fill much faster than sample rings under a packet flood; drain
        // them more often when they are on.
        let tick = Duration::from_millis(if self.held.labels.is_some() { 40 } else { 200 });
        let held = &mut self.held;
        let ready = wait(&held.session, tick).map_err(fault(Stop::Poll))?;
        if !self.cfg.drain_delay.is_zero() {
            std::thread::sleep(self.cfg.drain_delay);
        }
        drain(&mut held.session, &mut self.collector, log).map_err(fault(Stop::Drain))?;
        self.collector
            .flush(&mut held.writer, false)
            .map_err(fault(Stop::Write))?;
        self.grow(log);
        let held = &mut self.held;
        if let Some(l) = held.labels.as_mut() {
            l.drain(&mut held.writer, false)
                .map_err(fault(Stop::Labels))?;
        }
        if let Some(c) = held.command.0.as_mut() {
            if let Some(st) = c.try_wait().ok().flatten().map(Exit::shell_code) {
                self.exit_status = Some(st);
                return Ok(Some(Stop::CommandExited));
            }
        }
        if ready == Readiness::Hangup && held.command.0.is_none() {
            return Ok(Some(Stop::AttachedExited));
        }
        if self
            .cfg
            .duration
            .is_some_and(|d| self.started.elapsed() >= d)
        {
            return Ok(Some(Stop::Duration));
        }
        let mut stop = None;
        for req in steer.poll(held.command.0.as_ref()) {
            match req {
                Request::Stop(_) => stop = Some(Stop::User),
                Request::TogglePause => match self.paused_at.take() {
                    Some(t) => {
                        self.paused += t.elapsed();
                        switch(&held.session, true).map_err(fault(Stop::Pause))?;
                        log("resumed");
                    }
                    None => {
                        switch(&held.session, false).map_err(fault(Stop::Pause))?;
                        self.paused_at = Some(Instant::now());
                        log("paused (a or SIGUSR1 resumes)");
                    }
                },
                Request::PrintTop => match self.collector.flush(&mut held.writer, true) {
                    Ok(()) => steer.print_top(held.writer.file_path()),
                    Err(e) => log(&format!("cannot flush: {e}")),
                },
            }
        }
        Ok(stop)
    }

    /// Grow the user stack copy one step (doubling, up to the growth's most) when a process
    /// has had stacks cut by the present copy. A failure is said once and the copy stays.
    fn grow(&mut self, log: &mut dyn FnMut(&str)) {
        let Some(rw) = self.collector.rewriter_mut() else {
            return;
        };
        let cuts = rw.take_copy_cuts();
        let g = &mut self.growth;
        let lost = self.collector.lost();
        let losing = lost > g.lost_before;
        g.lost_before = lost;
        if losing && g.bytes > g.first && g.max > 0 {
            // The rings lost samples with the bigger copy (each sample reserves its whole
            // size in the ring, and deeper stacks take the recorder longer to unwind): back
            // one step, for good. No sample is lost to complete another's stack.
            let grown: Vec<u32> = g
                .steps
                .iter()
                .filter(|s| s.lost == 0)
                .map(|s| s.bytes)
                .collect();
            let back = grown.iter().rev().nth(1).copied().unwrap_or(g.first);
            if self
                .held
                .session
                .grow_stack_copy(back, self.paused_at.is_none())
                .is_ok()
            {
                g.steps.push(CopyStep {
                    at: self.started.elapsed().as_secs_f64(),
                    bytes: back,
                    pid: 0,
                    comm: String::new(),
                    cuts: 0,
                    lost,
                });
                g.bytes = back;
            }
            // Never grown again.
            g.max = 0;
            return;
        }
        if losing {
            return;
        }
        if g.bytes >= g.max {
            return;
        }
        for (pid, size, n) in cuts {
            if size >= u64::from(g.bytes) {
                *g.cuts.entry(pid).or_default() += n;
            }
        }
        let Some((&pid, &n)) = g.cuts.iter().max_by_key(|(_, &n)| n) else {
            return;
        };
        if n < CUTS_TO_GROW {
            return;
        }
        let next = g.bytes.saturating_mul(2).min(g.max) / 8 * 8;
        let session = &mut self.held.session;
        match session.grow_stack_copy(next, self.paused_at.is_none()) {
            Ok(_) => {
                g.steps.push(CopyStep {
                    at: self.started.elapsed().as_secs_f64(),
                    bytes: next,
                    pid,
                    comm: comm_of(pid),
                    cuts: n,
                    lost: 0,
                });
                g.bytes = next;
                g.cuts.clear();
            }
            Err(e) => {
                log(&format!(
                    "the user stack copy stays at {} bytes: {e}; stacks deeper than it are \
                     marked [truncated: stack copy too small] (a fixed bigger copy: \
                     --call-graph auto,{next})",
                    g.bytes
                ));
                g.max = g.bytes;
            }
        }
    }

    /// Stop sampling, write what is left and the file's end, put the file in place, handle
    /// the command, and sum up. Every way out of the run comes here.
    fn finish(self, end: End, log: &mut dyn FnMut(&str)) -> Finished {
        let Run {
            held,
            meta,
            stored_attr,
            mut collector,
            start_mono,
            paused_at,
            mut paused,
            mut exit_status,
            growth,
            maps_budget,
            ..
        } = self;
        // Said once a run: here when the unwinder's re-reads were the first to run out.
        if let Some(note) = maps_budget.take_note() {
            log(&note);
        }
        let Held {
            mut writer,
            mut command,
            _priority,
            mut session,
            labels,
        } = held;
        let End { stop, mut error } = end;
        let _ = session.disable();
        if error.is_none() {
            if let Err(e) = drain(&mut session, &mut collector, log) {
                error = Some(e.to_string());
            }
        }
        if let Some(t) = paused_at {
            paused += t.elapsed();
        }
        // A run ended by an error records nothing more: its command is not left running
        // unprofiled while the recorder waits for it.
        if let (Some(c), Some(_), None) = (command.0.as_mut(), &error, exit_status) {
            if c.try_wait().ok().flatten().is_none() {
                log(&format!(
                    "killing the recorded command (pid {}): the recording stopped on an error",
                    c.pid()
                ));
            }
            c.kill();
            exit_status = c.try_wait().ok().flatten().map(Exit::shell_code);
        }
        if let Some(l) = labels {
            if let Err(e) = l.finish(&mut writer) {
                error.get_or_insert(e.to_string());
            }
        }
        let skipped = session.deferred_skipped().unwrap_or((0, 0));
        let end_mono = hood_proc::clock::monotonic_ns();
        let raw_stacks = collector.kept_raw();
        let finish = finalize(
            &mut writer,
            &mut collector,
            RecordStats {
                end_monotonic_ns: end_mono,
                paused_ns: paused.as_nanos() as u64,
                stop_reason: stop.words().to_string(),
                exit_status,
                error: error.clone(),
                stack_copy_grown_to: match growth.bytes > growth.first {
                    true => growth.bytes,
                    false => 0,
                },
                raw_stacks,
                raw_stacks_asked: raw_stacks > 0 && keep_stack_copies(),
                ..RecordStats::default()
            },
        );
        match (&finish, &error) {
            // Warnings about JIT maps not recorded (or not whole).
            (Ok(warnings), _) => warnings.iter().for_each(|w| log(w)),
            (Err(e), None) => error = Some(e.to_string()),
            (Err(_), Some(_)) => {}
        }
        let bytes = writer.bytes_written();
        // The recording replaces the old file now, also one cut short by a failed write.
        let placed = writer.put_in_place();
        if let (Some(e), None) = (&placed.error, &error) {
            error = Some(e.to_string());
        }
        let mut outcome = Outcome {
            output: placed.at.display().to_string(),
            samples: collector.samples(),
            lost: collector.lost(),
            seconds: (end_mono - start_mono) as f64 / 1e9,
            bytes,
            lost_per_cpu: collector.counts.iter().map(|(&c, n)| (c, n.lost)).collect(),
            error: error.clone(),
            samples_not_written: 0,
            switches_and_wakeups: collector.sched_events(),
            short_waits: collector.short_waits(),
            off_cpu_min_ns: meta.off_cpu.as_ref().map_or(0, |o| o.min_ns),
            deferred_stacks: session.deferred_stack_ids().is_some(),
            deferred_joined: collector.rewrite_stats().map_or(0, |s| s.deferred_joined),
            deferred_missing: collector.rewrite_stats().map_or(0, |s| s.deferred_missing),
            kernel_stacks_joined: collector
                .rewrite_stats()
                .map_or(0, |s| s.kernel_stacks_joined),
            kernel_stacks_missing: collector
                .rewrite_stats()
                .map_or(0, |s| s.kernel_stacks_missing),
            off_cpu_rate: meta.off_cpu.as_ref().map_or(0, |o| o.stack_rate),
            rate_skipped_waits: skipped.0,
            rate_skipped_copies: skipped.1,
            cpus: session.cpus().len(),
            event: session.event().to_string(),
            stack_copy: growth.first,
            stack_copy_steps: growth.steps,
        };
        if error.is_some() {
            // A write may have failed part-way (a full disk): state what the file holds, as
            // a reader finds it, not what was recorded.
            match std::fs::metadata(&placed.at) {
                Ok(md) if md.is_file() => {
                    outcome.bytes = md.len();
                    let formats = meta.off_cpu.as_ref().map_or(&[][..], |o| &o.formats[..]);
                    match Collector::counted_in_file(&placed.at, &stored_attr, formats) {
                        Ok((samples, lost)) => {
                            outcome.samples_not_written = outcome.samples.saturating_sub(samples);
                            outcome.samples = samples;
                            outcome.lost = lost;
                        }
                        Err(e) => log(&format!("cannot read back {}: {e}", placed.at.display())),
                    }
                }
                _ => {}
            }
        }
        for line in outcome.lines() {
            log(&line);
        }
        if let Some(line) = collector.rewriter().and_then(unwinding_line) {
            log(&line);
        }
        if let Some(c) = command.0.as_mut() {
            if exit_status.is_none() {
                exit_status = c.wait().ok().map(Exit::shell_code);
            }
        }
        Finished {
            outcome,
            exit_status,
        }
    }
}

/// Wait for the rings (`poll`).
fn wait(session: &Session, tick: Duration) -> Result<Readiness, hood_perf::PerfError> {
    #[cfg(test)]
    seam::fails(seam::Point::Wait, "poll")?;
    session.wait(tick)
}

/// Resume (`on`) or pause sampling (`ioctl`).
fn switch(session: &Session, on: bool) -> Result<(), hood_perf::PerfError> {
    #[cfg(test)]
    seam::fails(seam::Point::Switch, "ioctl(PERF_EVENT_IOC_ENABLE)")?;
    match on {
        true => session.enable(),
        false => session.disable(),
    }
}

/// Faults a unit test injects into the run's calls into the kernel (not in a build of the
/// library for use).
#[cfg(test)]
pub(crate) mod seam {
    use std::cell::Cell;

    /// Where a fault is injected.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Point {
        /// Waiting for the rings.
        Wait,
        /// Pausing or resuming sampling.
        Switch,
    }

    thread_local! {
        /// The point that fails, and how many calls there succeed first.
        static FAIL: Cell<Option<(Point, u32)>> = const { Cell::new(None) };
    }

    /// Make the call at `point` fail after `after` calls there succeeded (this thread only).
    pub fn fail(point: Point, after: u32) {
        FAIL.with(|f| f.set(Some((point, after))));
    }

    /// An error when a fault is due at `point`.
    pub fn fails(point: Point, call: &'static str) -> Result<(), hood_perf::PerfError> {
        FAIL.with(|f| match f.get() {
            Some((p, 0)) if p == point => {
                f.set(None);
                Err(hood_perf::PerfError::Sys {
                    call,
                    what: "perf event fds (a fault injected by a test)".into(),
                    source: std::io::Error::from_raw_os_error(5),
                })
            }
            Some((p, n)) if p == point => {
                f.set(Some((p, n - 1)));
                Ok(())
            }
            _ => Ok(()),
        })
    }
}

/// Whether an off-CPU recording lets BPF programs take stacks only for the waits a report
/// shows (the default; `HOOD_OFF_CPU_BPF=0` takes every switch's and wake-up's stack, which
/// costs a context-switch storm about three times as much, docs/ARCHITECTURE.md).
fn defer_off_cpu_stacks() -> bool {
    std::env::var_os("HOOD_OFF_CPU_BPF").is_none_or(|v| v != "0")
}

/// Whether a task session's wake-ups are written by the BPF program for its own threads
/// only (the default), or sampled for every thread of the machine with the tracepoint
/// (`HOOD_OFF_CPU_WAKEUPS=all`, the way of a kernel whose interrupt code hood cannot find;
/// kept to compare the two).
fn bpf_wakeups() -> bool {
    std::env::var_os("HOOD_OFF_CPU_WAKEUPS").is_none_or(|v| v != "all")
}

/// Whether the BPF programs keep their per-thread state in hash tables from the start
/// (`HOOD_OFF_CPU_BPF=hash`), as on a kernel that refuses task-local storage: that path,
/// tested on kernels that take task storage.
fn off_cpu_hash_tables() -> bool {
    std::env::var_os("HOOD_OFF_CPU_BPF").is_some_and(|v| v == "hash")
}

/// Open the events; an unprivileged user who may not sample the kernel (perf_event_paranoid 2)
/// still gets a user-space profile of their own processes, with a note, as perf does.
fn open_session(
    cfg: &RecordConfig,
    target: &Target,
    defer_stacks: bool,
    bpf_wakeups: bool,
    log: &mut dyn FnMut(&str),
) -> Result<Session, hood_perf::PerfError> {
    let mut sampling = cfg.sampling.clone();
    if sampling.off_cpu && defer_stacks {
        sampling.off_cpu_min_ns = cfg.off_cpu_min.as_nanos().min(u128::from(u64::MAX)) as u64;
        sampling.off_cpu_stack_gap_ns = stack_gap_ns(cfg.off_cpu_rate);
        sampling.off_cpu_hash_tables = off_cpu_hash_tables();
        sampling.off_cpu_bpf_wakeups = bpf_wakeups;
    }
    match Session::open(&sampling, target) {
        Err(hood_perf::PerfError::Permission { paranoid, .. })
            if cfg.sampling.include_kernel && paranoid == Some(2) && *target != Target::System =>
        {
            log(
                "kernel samples need kernel.perf_event_paranoid <= 1 (it is 2); recording user space only. \
                 Fix: `sudo sysctl kernel.perf_event_paranoid=1`, or run as root / with CAP_PERFMON",
            );
            let mut user_only = sampling.clone();
            user_only.include_kernel = false;
            Session::open(&user_only, target)
        }
        other => other,
    }
}

/// One round: every ring's unread bytes into the collector (unwound in place when samples
/// carry stack copies).
fn drain(
    session: &mut Session,
    collector: &mut Collector,
    log: &mut dyn FnMut(&str),
) -> Result<usize, hood_perf::PerfError> {
    if collector.rewriter().is_some() {
        session.drain_in_place(&mut |views| {
            collector.rewrite_round(views, log);
            Ok(())
        })
    } else {
        session.drain(&mut |cpu, bytes| collector.push(cpu, bytes))
    }
}

/// The least time between two takings of one thread's off-CPU stacks for `--off-cpu-rate`
/// `rate` (0: no bound).
fn stack_gap_ns(rate: u32) -> u64 {
    match rate {
        0 => 0,
        r => 1_000_000_000 / u64::from(r),
    }
}

#[cfg(test)]
#[path = "recorder_tests.rs"]
mod tests;

fn finalize<W: std::io::Write>(
    writer: &mut Writer<W>,
    collector: &mut Collector,
    mut stats: RecordStats,
) -> Result<Vec<String>, hood_format::FormatError> {
    collector.release_held();
    collector.flush(writer, true)?;
    let ids = snapshot::build_ids(collector.files_without_build_id.iter().map(String::as_str));
    if !ids.is_empty() {
        writer.write_chunk(
            tags::profile::BUILD_IDS,
            &serde_json::to_vec(&ids).unwrap_or_default(),
            true,
        )?;
    }
    if let (Some(k), true) = (&collector.kallsyms, collector.wrote_before_samples()) {
        // The lines that name this recording's kernel addresses (all of them if too many
        // distinct addresses were seen to keep track of).
        let used = match collector.kernel_addrs() {
            Some(addrs) => hood_symbols::text::kallsyms_subset(k, addrs.iter().copied()),
            None => k.to_string(),
        };
        writer.write_chunk(tags::profile::KALLSYMS_USED, used.as_bytes(), true)?;
    }
    let (maps, warnings) = hood_procfs::host::perf_maps(&collector.pids);
    for (pid, text) in maps {
        let mut payload = pid.to_le_bytes().to_vec();
        payload.extend_from_slice(text.as_bytes());
        writer.write_chunk(tags::profile::PERF_MAP, &payload, true)?;
    }
    // The counts per CPU, the rest as the run ended.
    stats.per_cpu = collector.counts.clone();
    writer.write_chunk(
        tags::profile::STATS,
        &serde_json::to_vec(&stats).unwrap_or_default(),
        false,
    )?;
    writer.flush()?;
    Ok(warnings)
}

/// The summary of a recording: the file, its samples and losses, and an early stop.
fn outcome_lines(o: &Outcome) -> Vec<String> {
    let mut out = vec![hood_format::wrote_line(
        std::path::Path::new(&o.output),
        o.bytes,
        hood_format::FileKind::Profile,
        &format!(
            "{} samples on {} CPUs in {:.1} s ({}), {} lost",
            o.samples, o.cpus, o.seconds, o.event, o.lost
        ),
    )];
    if o.deferred_stacks {
        let mut line = format!(
            "off-CPU: {} context switches and wake-ups recorded; the kernel took stacks only \
             for waits of at least {} (BPF): {} kernel and {} user stacks joined to their waits",
            o.switches_and_wakeups,
            hood_model::profile::offcpu_min_words(o.off_cpu_min_ns),
            o.kernel_stacks_joined,
            o.deferred_joined
        );
        let skipped = o.rate_skipped_waits + o.rate_skipped_copies;
        if skipped > 0 {
            line.push_str(&format!(
                "; {} waits left without stacks of their own by the rate bound (at most {} \
                 a second per thread, --off-cpu-rate): the report charges them to their \
                 thread's previous stacks",
                skipped, o.off_cpu_rate
            ));
        }
        let missing = o.kernel_stacks_missing.saturating_sub(o.rate_skipped_waits);
        if missing > 0 {
            line.push_str(&format!(
                "; {} long waits without a kernel stack (lost with their ring's records, or \
                 just under the minimum by the kernel's clock)",
                missing
            ));
        }
        let missing = o.deferred_missing.saturating_sub(o.rate_skipped_waits);
        if missing > 0 {
            line.push_str(&format!(
                "; {} long waits without a user stack (in neither a system call nor a \
                 page fault, or the copy was lost; with `HOOD_OFF_CPU_BPF=0` every switch \
                 copies its stack)",
                missing
            ));
        }
        out.push(line);
    } else if o.switches_and_wakeups > 0 && o.short_waits > 0 {
        out.push(format!(
            "off-CPU: {} context switches and wake-ups recorded with their stacks; the {} \
             of waits shorter than {} without user stacks (--off-cpu-min)",
            o.switches_and_wakeups,
            o.short_waits,
            hood_model::profile::offcpu_min_words(o.off_cpu_min_ns)
        ));
    } else if o.switches_and_wakeups > 0 {
        out.push(format!(
            "off-CPU: {} context switches and wake-ups recorded with their stacks",
            o.switches_and_wakeups
        ));
    }
    if let Some(last) = o.stack_copy_steps.last() {
        let steps: Vec<String> = o
            .stack_copy_steps
            .iter()
            .map(|s| {
                let name = match s.comm.is_empty() {
                    true => String::new(),
                    false => format!(" ({})", s.comm),
                };
                match s.lost {
                    0 => format!(
                        "{} bytes at {:.1} s after {} stacks of pid {}{name}",
                        s.bytes, s.at, s.cuts, s.pid
                    ),
                    n => format!(
                        "back to {} bytes at {:.1} s, when {n} samples had been lost",
                        s.bytes, s.at
                    ),
                }
            })
            .collect();
        out.push(format!(
            "user stack copy grown from {} bytes while stacks were cut by it: {}; {} bytes at \
             the end (the kernel copies only the stack in use, up to that size)",
            o.stack_copy,
            steps.join(", "),
            last.bytes,
        ));
    }
    if o.lost > 0 {
        let per: Vec<String> = o
            .lost_per_cpu
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(c, n)| format!("cpu{c}: {n}"))
            .collect();
        out.push(format!(
            "lost samples per CPU: {} (try a lower -F or a bigger --ring-kb)",
            per.join(", ")
        ));
    }
    if let Some(e) = &o.error {
        out.push(format!(
            "recording stopped early: {e}; what was written is readable with `hood report -i {}`",
            o.output
        ));
    }
    if o.samples_not_written > 0 {
        out.push(format!(
            "{} more samples were recorded but could not be written; the file holds the {} above",
            o.samples_not_written, o.samples
        ));
    }
    out
}

/// Whether every sample keeps its raw stack copy for the report to unwind
/// (`HOOD_KEEP_STACK_COPIES=1`: the fallback of a lagging unwinder, forced for tests).
fn keep_stack_copies() -> bool {
    std::env::var_os("HOOD_KEEP_STACK_COPIES").is_some_and(|v| v == "1")
}

/// One line on how complete the unwound user stacks are, and why the others stopped.
fn unwinding_line(rw: &hood_unwind::Rewriter) -> Option<String> {
    let st = rw.stats();
    let kept = match st.kept_raw {
        0 => String::new(),
        n => format!(
            "{n} samples stored with their raw stack copy, to be unwound by the report ({})",
            if keep_stack_copies() {
                "HOOD_KEEP_STACK_COPIES=1"
            } else {
                "the recorder's unwinding fell behind the rings"
            }
        ),
    };
    if st.unwound == 0 {
        return (!kept.is_empty()).then(|| format!("user stacks: {kept}"));
    }
    let kept = match kept.is_empty() {
        true => kept,
        false => format!("; {kept}"),
    };
    let pct = |n: u64| 100.0 * n as f64 / st.unwound as f64;
    let mut why: Vec<String> = hood_unwind::Truncation::ALL
        .iter()
        .filter(|t| st.truncated[t.code() as usize] > 0)
        .map(|t| {
            let n = st.truncated[t.code() as usize];
            format!("{} {:.1}%", truncation_words(*t), pct(n))
        })
        .collect();
    if why.is_empty() {
        why.push("none".into());
    }
    Some(format!(
        "user stacks: {} unwound ({:.1} KiB of stack copied per sample), {:.1}% complete{}; \
         truncated: {}{kept}",
        st.unwound,
        st.stack_bytes as f64 / st.unwound as f64 / 1024.0,
        pct(st.complete),
        if st.spliced > 0 {
            format!(
                " ({} continued by frame pointers past the stack copy)",
                st.spliced
            )
        } else {
            String::new()
        },
        why.join(", ")
    ))
}

/// A process's name for the summary (`/proc/PID/comm`, control characters left out); empty
/// when it has ended.
fn comm_of(pid: u32) -> String {
    hood_procfs::process::comm(pid)
        .map(|s| s.chars().filter(|c| !c.is_control()).take(64).collect())
        .unwrap_or_default()
}

fn truncation_words(t: hood_unwind::Truncation) -> &'static str {
    use hood_unwind::Truncation as T;
    match t {
        T::StackCopyTooSmall => "stack copy too small",
        T::NoUnwindInfo => "no unwind info",
        T::NotMapped => "outside known mappings",
        T::Failed => "unwinding failed",
        T::TooDeep => "too deep",
    }
}
