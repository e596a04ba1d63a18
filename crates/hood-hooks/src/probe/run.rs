//! A probe session: select, measure the cost, place the probes, rounds of hits until a stop,
//! and the output finished.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use hood_format::{tags, FileKind, OutputFile, Writer};
use hood_perf::{SwitchRecorder, UprobePoint, UprobeRecorder, UprobeTarget};
use hood_proc::child::{Child, Exit};
use hood_proc::clock::monotonic_ns;
use hood_proc::signal;
use hood_proc::steer::{Steer, Steering, STOP_GRACE};
use hood_symbols::probe::{self as spec, ProbeSpec, Selection};
use hood_tracemodel::trace::{ProbeCost, ProbeCosts, TraceMeta, PAYLOAD_VERSION};

use super::calibrate::{calibrate, stepped_points, us};
use super::follow::{self, Follower, Track};
use super::hits::{decode_hits, Hit, Item, Orderer};
use super::outputs::{CallsOut, Consumer, Finish, Procs, TraceOut};
use super::select::{attached_needed, keys, probes_what, select};
use super::{
    ProbeConfig, ProbeOutcome, ProbeOutput, ProbeRun, COST_PER_CALL_NS, RING_PAGES, SETTLE_NS,
};
use crate::run::{Command, End};
use crate::HooksError;

/// Record `cfg`, steered by `steer` ([`hood_proc::signal::Signals::forwarding`]: stop signals
/// are passed on to a command started). A stop request ends a recording of attached processes at
/// once; a command started gets [`STOP_GRACE`] to end, and is then waited for unprobed.
/// Messages for the user go to `log`, one line each.
///
/// The skeleton of `trace record`: open (the selection and its cost, the command held before
/// its exec or the processes attached, the probes and rings, the output) → start → rounds
/// until a stop → finish. An error before the start is returned and leaves no file; an error
/// inside the run ends it as a stop does: a command started is killed, the output is finished
/// with what was recorded and the note of the stop, and [`ProbeOutcome::error`] says why. A
/// command started is killed and reaped on every way out that did not wait for it, a panic
/// included.
pub fn record(
    cfg: &ProbeConfig,
    steer: &mut dyn Steer,
    log: &mut dyn FnMut(&str),
) -> Result<ProbeOutcome, HooksError> {
    let mut run = open(cfg, Steering::new(steer), log)?;
    run.start()?;
    let end = run.until_stop(log);
    run.finish(end, log)
}

/// What is probed, and what it costs: the selection, its uprobe points, the key each point's
/// function is known by, the cost taken out of the times, and the note that says it all.
struct Plan {
    sel: Selection,
    points: Vec<UprobePoint>,
    /// Per point: an entry probe only.
    entry_only: Vec<bool>,
    keys: Vec<u64>,
    cost: Option<ProbeCosts>,
    /// What was probed and what it costs, for the notes.
    describe: String,
}

/// Select the functions, say the selection's notes, remove the probes a killed hood left,
/// and measure and say what a probed call costs.
fn plan(cfg: &ProbeConfig, log: &mut dyn FnMut(&str)) -> Result<Plan, HooksError> {
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
    for g in hood_perf::remove_stale_probes() {
        log(&format!(
            "removed the uprobe definitions {g}/* left by a hood that was killed (they were inert: no program was probed through them)"
        ));
    }
    let (cost, describe) = costs(cfg, &sel, &keys, log);
    Ok(Plan {
        sel,
        points,
        entry_only,
        keys,
        cost,
        describe,
    })
}

/// What a probed call costs, measured now, and said: the cost taken out of the times (unless
/// HOOD_COMPENSATE=0, as for `hood calls`' hooks, or it could not be measured) and the note
/// that describes the probing for the output.
fn costs(
    cfg: &ProbeConfig,
    sel: &Selection,
    keys: &[u64],
    log: &mut dyn FnMut(&str),
) -> (Option<ProbeCosts>, String) {
    let n_objects = {
        let mut o: Vec<usize> = sel.points.iter().map(|p| p.object).collect();
        o.dedup();
        o.sort_unstable();
        o.dedup();
        o.len()
    };
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
        for (&k, st) in keys.iter().zip(stepped_points(sel)) {
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
        let mut k = keys.to_vec();
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
    let what = probes_what(sel);
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
    (cost, describe)
}

/// A probe session between its open and its finish.
struct Session<'a, 's> {
    cfg: &'a ProbeConfig,
    /// The selection (its files stay open while the probes are placed).
    sel: Selection,
    describe: String,
    /// The command line the output names (`-p PID,…` for attached processes).
    argv: Vec<String>,
    start_mono_ns: u64,
    steering: Steering<'s>,
    /// The command started, if one was.
    command: Option<Command>,
    rounds: Rounds,
    consumer: Box<dyn Consumer>,
}

/// Open everything a session holds: the selection and its cost (said), the command (forked,
/// held before its exec) or the processes attached (their probes enabled), the probe and
/// context-switch rings, the output (a trace file with its META, or the tables' builder). A
/// command started is killed on every error from here.
fn open<'a, 's>(
    cfg: &'a ProbeConfig,
    mut steering: Steering<'s>,
    log: &mut dyn FnMut(&str),
) -> Result<Session<'a, 's>, HooksError> {
    let Plan {
        sel,
        points,
        entry_only,
        keys,
        cost,
        describe,
    } = plan(cfg, log)?;
    // What the attached processes' programs need or have mapped, read before their probes
    // are enabled: a library mapped from then on is the program's doing.
    let attached: Vec<(u32, std::collections::HashSet<String>)> = match &cfg.run {
        ProbeRun::Pids(p) => p.iter().map(|&p| (p, attached_needed(p))).collect(),
        ProbeRun::Command(_) => Vec::new(),
    };
    crate::run::not_stopped_yet(&mut steering)?;
    let (command, uprobes, switches) = open_rings(cfg, &points, log)?;
    let ids: HashMap<u64, (u32, bool)> = uprobes
        .ids()
        .iter()
        .map(|i| (i.id, (i.point, i.ret)))
        .collect();
    let ids_known = uprobes.ids().len();
    let start_mono_ns = monotonic_ns();
    let specs: Vec<ProbeSpec> = cfg
        .specs
        .iter()
        .filter_map(|s| spec::parse_spec(s).ok())
        .collect();
    let follower = Follower::new(
        specs,
        cfg.yes,
        start_mono_ns,
        &sel,
        &keys,
        command.as_ref().map(|c| c.pid() as u32),
        attached,
    );
    // Every function's name, the late ones' as they come.
    let names: Vec<(u64, String)> = sel
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
    let consumer: Box<dyn Consumer> = match &cfg.output {
        ProbeOutput::Trace(path) => Box::new(TraceOut {
            w: trace_file(path, &argv, switches.is_some(), log)?,
            procs,
            start_mono_ns,
            funcs: keys.clone(),
            symbols: names.iter().cloned().collect(),
            notes: std::iter::once(describe.clone())
                .chain(sel.notes.iter().cloned())
                .collect(),
            words: BTreeMap::new(),
            grown: false,
            cost,
            entry_only,
        }),
        ProbeOutput::Calls(_) => Box::new(CallsOut {
            procs,
            builders: BTreeMap::new(),
            keys,
            cost,
            entry_only,
        }),
    };
    Ok(Session {
        cfg,
        sel,
        describe,
        argv,
        start_mono_ns,
        steering,
        command,
        rounds: Rounds {
            uprobes,
            switches,
            order: Orderer {
                pending: Vec::new(),
                ready: Vec::new(),
                hits: Vec::new(),
                new: Vec::new(),
            },
            follower,
            ids,
            ids_known,
            names,
            late_said: 0,
            per_cpu: BTreeMap::new(),
            hits_buf: Vec::new(),
            tracks: Vec::new(),
            lost: BTreeMap::new(),
            events: 0,
            malformed: false,
        },
        consumer,
    })
}

/// A new trace file beside `path` with its META chunk, flushed: from here on it reads, up to
/// the last round written, whenever the recorder stops.
fn trace_file(
    path: &Path,
    argv: &[String],
    sched: bool,
    log: &mut dyn FnMut(&str),
) -> Result<Writer<OutputFile>, HooksError> {
    let mut w = Writer::create(path, FileKind::Trace)?;
    for s in w.stale() {
        log(&s.to_string());
    }
    let meta = TraceMeta {
        version: PAYLOAD_VERSION,
        argv: argv.to_vec(),
        buffer: 0,
        full: "stream".into(),
        filters: Vec::new(),
        excludes: Vec::new(),
        sched,
        irq: None,
        wake: None,
        collected_realtime_ns: realtime_ns(),
    };
    w.write_chunk(tags::trace::META, &serde_json::to_vec(&meta)?, false)?;
    w.flush()?;
    Ok(w)
}

/// The command (started, held before its exec) or the threads of the attached processes, with
/// their probe ring (the attached ones' probes enabled now: the command's are enabled at its
/// exec) and, for a trace with `sched`, their context-switch ring.
fn open_rings(
    cfg: &ProbeConfig,
    points: &[UprobePoint],
    log: &mut dyn FnMut(&str),
) -> Result<(Option<Command>, UprobeRecorder, Option<SwitchRecorder>), HooksError> {
    let sched = cfg.sched && matches!(cfg.output, ProbeOutput::Trace(_));
    let switches = |opened: Result<SwitchRecorder, hood_perf::PerfError>,
                    log: &mut dyn FnMut(&str)| match opened {
        Ok(s) => Some(s),
        Err(e) => {
            log(&format!("warning: context switches not recorded: {e}"));
            None
        }
    };
    match &cfg.run {
        ProbeRun::Command(argv) => {
            let c = Command(Child::spawn_held(
                argv,
                &[] as &[(std::ffi::OsString, std::ffi::OsString)],
            )?);
            let u = UprobeRecorder::open(points, &UprobeTarget::Child(c.pid()), RING_PAGES, true)?;
            let s = match sched {
                true => switches(SwitchRecorder::open_child(c.pid(), 64), log),
                false => None,
            };
            Ok((Some(c), u, s))
        }
        ProbeRun::Pids(pids) => {
            let mut tids = Vec::new();
            for &pid in pids {
                tids.extend(hood_perf::threads_of(pid as i32)?);
            }
            let u = UprobeRecorder::open(
                points,
                &UprobeTarget::Threads(tids.clone()),
                RING_PAGES,
                true,
            )?;
            let s = match sched {
                true => switches(SwitchRecorder::open_threads(&tids, 64), log),
                false => None,
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
            Ok((None, u, s))
        }
    }
}

/// The rings drained each round, and what the rounds keep.
struct Rounds {
    uprobes: UprobeRecorder,
    switches: Option<SwitchRecorder>,
    order: Orderer,
    follower: Follower,
    /// Event id → (point, return), the late points' added as they are placed.
    ids: HashMap<u64, (u32, bool)>,
    ids_known: usize,
    /// Every function's name, the late ones' as they come.
    names: Vec<(u64, String)>,
    /// The late placements said so far.
    late_said: usize,
    /// A round's ring bytes per CPU.
    per_cpu: BTreeMap<u32, Vec<u8>>,
    hits_buf: Vec<Hit>,
    tracks: Vec<(u64, Track)>,
    /// Hits lost per thread id (0: unknown thread).
    lost: BTreeMap<u32, u64>,
    /// Hits recorded.
    events: u64,
    /// A ring held malformed records.
    malformed: bool,
}

impl Rounds {
    /// One round: the rings drained, the hits and side-band records put in time order, those
    /// settled handed to `out` (all of them when `last`), the probes placed late said. Returns
    /// the hits taken, and whether a mapping or exec waits to settle (the next round comes
    /// soon then, for its probes).
    fn round(
        &mut self,
        out: &mut dyn Consumer,
        last: bool,
        log: &mut dyn FnMut(&str),
    ) -> Result<(u64, bool), HooksError> {
        let before = monotonic_ns();
        let per_cpu = &mut self.per_cpu;
        per_cpu.clear();
        self.uprobes.drain(&mut |cpu, b| {
            per_cpu.entry(cpu).or_default().extend_from_slice(b);
            Ok(())
        })?;
        self.hits_buf.clear();
        self.tracks.clear();
        for (&cpu, b) in &self.per_cpu {
            self.malformed |= !decode_hits(b, &self.ids, &mut self.hits_buf, &mut self.lost);
            self.malformed |= !follow::decode_tracking(b, cpu, &mut self.tracks);
        }
        let got = self.hits_buf.len() as u64;
        self.events += got;
        // A test's fault: the n-th round that took hits fails.
        #[cfg(test)]
        if got > 0 {
            crate::run::seam::fails(crate::run::seam::Point::ProbeRound)?;
        }
        let order = &mut self.order;
        order.pending.extend(self.hits_buf.drain(..).map(Item::Hit));
        order
            .pending
            .extend(self.tracks.drain(..).map(|(t, r)| Item::Track(t, r)));
        if let Some(s) = self.switches.as_mut() {
            let per_cpu = &mut self.per_cpu;
            per_cpu.clear();
            s.drain(&mut |cpu, b| {
                per_cpu.entry(cpu).or_default().extend_from_slice(b);
                Ok(())
            })?;
            out.switches(&self.per_cpu)?;
        }
        order.release(
            (!last).then(|| before.saturating_sub(SETTLE_NS)),
            out,
            &mut self.follower,
            &mut self.uprobes,
        )?;
        if self.uprobes.ids().len() > self.ids_known {
            for i in &self.uprobes.ids()[self.ids_known..] {
                self.ids.insert(i.id, (i.point, i.ret));
            }
            self.ids_known = self.uprobes.ids().len();
        }
        self.names.append(&mut self.follower.named);
        // Said as it happens: from now on its calls are seen.
        for l in &self.follower.late[self.late_said..] {
            log(&format!("probed late: {l}"));
        }
        self.late_said = self.follower.late.len();
        // A mapping or exec waiting to settle: the next round comes soon, for its probes.
        let waiting = order.pending.iter().any(|i| matches!(i, Item::Track(..)));
        Ok((got, waiting))
    }
}

impl Session<'_, '_> {
    /// Let the command exec (an error if it could not: nothing was recorded); its probes are
    /// enabled by the exec.
    fn start(&mut self) -> Result<(), HooksError> {
        if let Some(c) = self.command.as_mut() {
            c.release()?;
        }
        Ok(())
    }

    /// Rounds until the command ends, `-d` or a stop signal's grace cuts the recording, or an
    /// error ends the run; for attached processes, until a stop request, `-d`, or the end of
    /// every one of them.
    fn until_stop(&mut self, log: &mut dyn FnMut(&str)) -> End {
        let Session {
            cfg,
            argv,
            steering,
            command,
            rounds,
            consumer,
            ..
        } = self;
        let mut last_round = Instant::now();
        let started = Instant::now();
        let mut error: Option<String> = None;
        let Some(c) = command.as_mut() else {
            let pids = match &cfg.run {
                ProbeRun::Pids(p) => p.clone(),
                ProbeRun::Command(_) => Vec::new(),
            };
            let cut = loop {
                let (got, waiting) = match rounds.round(consumer.as_mut(), false, log) {
                    Ok(r) => r,
                    Err(e) => {
                        error = Some(e.to_string());
                        break None;
                    }
                };
                let since = std::mem::replace(&mut last_round, Instant::now()).elapsed();
                steering.look(None);
                if let Some(s) = steering.stop() {
                    break Some(format!("{} received", s.words()));
                }
                if cfg.duration.is_some_and(|d| started.elapsed() >= d) {
                    break Some(format!(
                        "{:.1} s passed",
                        cfg.duration.unwrap_or_default().as_secs_f64()
                    ));
                }
                if pids
                    .iter()
                    .all(|p| !Path::new(&format!("/proc/{p}")).exists())
                {
                    break Some("every attached process ended".into());
                }
                std::thread::sleep(pause(got, since, waiting));
            };
            return End {
                ended: None,
                cut,
                error,
            };
        };
        let (prog, pid) = (&argv[0], c.pid());
        let mut cut = None;
        let watched = steering.watch(c, &mut |stop| {
            let (got, waiting) = match rounds.round(consumer.as_mut(), false, log) {
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
        let cut = match (ended, &error) {
            (None, None) => Some(cut.unwrap_or_else(|| "the duration ended".into())),
            _ => None,
        };
        End { ended, cut, error }
    }

    /// A command still running after an error killed, the last round, the probes removed, the
    /// output finished with the notes, the summary; then the command's status (waited for,
    /// unprobed, when it runs on). Every way out of the run comes here.
    fn finish(self, end: End, log: &mut dyn FnMut(&str)) -> Result<ProbeOutcome, HooksError> {
        let Session {
            cfg,
            sel,
            describe,
            argv,
            start_mono_ns,
            mut steering,
            mut command,
            mut rounds,
            mut consumer,
        } = self;
        let End {
            mut ended,
            cut,
            mut error,
        } = end;
        // A run ended by an error probes nothing more: its command is not left running
        // unprobed while the recorder waits for it.
        let mut killed = None;
        if let (Some(c), Some(_), None) = (command.as_mut(), &error, ended) {
            killed = Some(c.pid());
            c.kill();
            ended = c.try_wait().ok().flatten();
        }
        rounds.uprobes.disable();
        if error.is_none() {
            if let Err(e) = rounds.round(consumer.as_mut(), true, log) {
                error = Some(e.to_string());
            }
        }
        let end_mono_ns = monotonic_ns();
        let Rounds {
            uprobes,
            switches,
            follower,
            names,
            lost,
            events,
            malformed,
            ..
        } = rounds;
        // The probes go with their descriptors, now: an attached process runs on unprobed.
        drop(uprobes);
        drop(switches);
        if let Some(why) = &cut {
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
            lost_note,
            symbols: names.into_iter().collect(),
            describe,
            notes: &notes,
            notes_at_start: sel.notes.len(),
            ended: ended.is_some(),
        })?;
        summary(cfg, &argv, events, lost_total, ended, error.as_deref(), log);
        let mut outcome = ProbeOutcome {
            status: ended.map_or(0, |e| e.shell_code()),
            events,
            lost: lost_total,
            error,
        };
        // A command still running (-d ended the recording) is waited for, unprobed: it would
        // die with hood otherwise.
        if let (Some(c), None) = (command.as_mut(), ended) {
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
}

/// The lines a session prints once its output is written: what it holds, how the command
/// ended, and how to read what was written after an error.
fn summary(
    cfg: &ProbeConfig,
    argv: &[String],
    events: u64,
    lost_total: u64,
    ended: Option<Exit>,
    error: Option<&str>,
    log: &mut dyn FnMut(&str),
) {
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
    if let Some(Exit::Signal(s)) = ended {
        log(&format!("{} was ended by {}", argv[0], signal::name(s)));
    }
    if let Some(e) = error {
        let (file, report) = match &cfg.output {
            ProbeOutput::Trace(p) => (p, "hood trace report"),
            ProbeOutput::Calls(p) => (p, "hood calls report"),
        };
        log(&crate::run::stopped_early(e, file, report));
    }
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
