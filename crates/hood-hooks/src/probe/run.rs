//! A probe session: select, measure the cost, place the probes, rounds of hits until a stop,
//! and the output finished.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use hood_format::{tags, FileKind, Writer};
use hood_perf::{SwitchRecorder, UprobePoint, UprobeRecorder, UprobeTarget};
use hood_proc::child::{Child, Exit};
use hood_proc::clock::monotonic_ns;
use hood_proc::signal;
use hood_proc::steer::{Steer, Steering, STOP_GRACE};
use hood_symbols::probe::{self as spec, ProbeSpec};
use hood_tracemodel::trace::{ProbeCost, ProbeCosts, TraceMeta, PAYLOAD_VERSION};

use super::calibrate::{calibrate, stepped_points, us};
use super::follow::{self, Follower, Track};
use super::hits::{decode_hits, Hit, Item, Orderer};
use super::outputs::{CallsOut, Consumer, Finish, Procs, TraceOut};
use super::select::{attached_needed, keys, probes_what, select};
use super::{
    ProbeConfig, ProbeOutcome, ProbeOutput, ProbeRun, COST_PER_CALL_NS, RING_PAGES, SETTLE_NS,
};
use crate::HooksError;

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

/// Hits a round may leave to the next one on one CPU: an eighth of its ring.
pub(super) const HEADROOM_HITS: f64 = (RING_PAGES * 4096 / 40 / 8) as f64;

/// Sleep between rounds: long enough that the recorder does not wake hundreds of times a second
/// in a server probed at a few thousand hits a second (each wake-up takes a CPU from it), short
/// enough that at the rate of the last round no ring fills: at most an eighth of one ring's
/// hits, between 2 ms and 20 ms (20 ms when idle; 2 ms while a mapping or exec waits to be
/// handled: the functions it brings are probed that much sooner).
pub(super) fn pause(got: u64, since: Duration, waiting: bool) -> Duration {
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

pub(super) fn realtime_ns() -> u64 {
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
