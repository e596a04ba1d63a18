//! Errors inside a run of `trace record`, `calls run` and the probe session: a fault injected
//! at the run's seam (no timing: the n-th round that moved events or took hits, the n-th look
//! at a command whose segment exists) ends the run with its error; the command is killed and reaped, the file is finished
//! and put in place and reads back with names, and the segment directory is gone. They run the
//! real recorders on an instrumented C program (gcc) with the release runtime, built as
//! hood's own tests build it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use super::seam::{self, Point};
use crate::calls::{self, Message, RunConfig};
use crate::trace::record::{self, Full, RecordConfig};

/// One run at a time: they start commands on a machine of few CPUs, and `calls run` sets
/// `HOOD_RT_LIB` for the whole test process.
static ONE: Mutex<()> = Mutex::new(());

/// The target directory this test binary was built in (…/target/debug/deps/hood_hooks-…).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    exe.ancestors().nth(3).expect("target dir").to_path_buf()
}

/// libhood_rt.so, built in release into this build's target directory.
fn runtime() -> &'static Path {
    static RT: OnceLock<PathBuf> = OnceLock::new();
    RT.get_or_init(|| {
        let target = target_dir();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "--release", "-p", "hood-rt", "--target-dir"])
            .arg(&target)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .status()
            .expect("run cargo");
        assert!(st.success(), "building hood-rt failed");
        target.join("release/libhood_rt.so")
    })
}

/// tests/c/trace_stream.c built with `-finstrument-functions` into `dir`.
fn trace_stream(dir: &Path) -> PathBuf {
    let out = dir.join("trace_stream");
    let st = Command::new("gcc")
        .args(["-O2", "-g", "-finstrument-functions", "-o"])
        .arg(&out)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/c/trace_stream.c"
        ))
        .status()
        .expect("gcc");
    assert!(st.success(), "gcc failed");
    out
}

/// A command that would run for hours: steps with a 2 ms pause every 1,000 (only a kill
/// ends it).
fn endless(prog: &Path) -> Vec<String> {
    vec![
        prog.display().to_string(),
        "1000000000000".into(),
        "0".into(),
        "1000".into(),
    ]
}

/// The private segment directories of this process of `kind` left in the segment base.
fn dirs_left(kind: &str) -> Vec<PathBuf> {
    let prefix = format!("hood-{kind}-{}-", std::process::id());
    std::fs::read_dir(crate::segments::shm_dir())
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// The trace `out` is in place and finished: its command's process, its functions named
/// (`step`), and the note of the early stop.
fn finished_early_with_names(out: &Path) {
    let head = hood_tracemodel::trace::scan(out).expect("a readable trace");
    assert!(head.warnings.is_empty(), "{:?}", head.warnings);
    let p = head.processes.first().expect("the command's process");
    assert!(p.symbols.values().any(|n| n == "step"), "{:?}", p.symbols);
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("recording stopped early")),
        "{:?}",
        p.notes
    );
}

#[test]
fn a_round_that_fails_kills_the_command_and_finishes_the_trace_with_names() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let prog = trace_stream(dir.path());
    let out = dir.path().join("t.trace");
    let cfg = RecordConfig {
        output: out.clone(),
        buffer: 1 << 16,
        full: Full::Stream,
        filters: Vec::new(),
        excludes: Vec::new(),
        // No kernel rings: the test needs no privilege.
        sched: false,
        irqs: false,
        wakeups: false,
        prefault: true,
        start_off: false,
        keep: false,
        max_size: None,
        argv: endless(&prog),
        runtime: runtime().to_path_buf(),
    };
    // The third round that moved events fails (a full disk's ENOSPC).
    seam::fail(Point::TraceRound, 2);
    let mut lines = Vec::new();
    let o = record::record(&cfg, &mut hood_proc::steer::NoSteer, &mut |l| {
        lines.push(l.to_string())
    })
    .expect("an error inside the run is an outcome, not an error");
    let error = o.error.clone().unwrap_or_default();
    assert!(error.contains("fault injected"), "{o:?} {lines:?}");
    // Killed (SIGKILL: 128 + 9) and reaped, not waited for.
    assert_eq!(o.status, 137, "{lines:?}");
    assert!(o.traced, "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("killing the traced command")),
        "{lines:?}"
    );
    let said = lines
        .iter()
        .find(|l| l.starts_with("recording stopped early"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(said.contains("hood trace report -i"), "{said}");
    // The file is in place and finished: its processes, named, with the note of the stop.
    finished_early_with_names(&out);
    assert!(dirs_left("trace").is_empty(), "{:?}", dirs_left("trace"));
}

#[test]
fn a_watch_that_fails_kills_the_command_and_writes_its_tables() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let prog = trace_stream(dir.path());
    let out = dir.path().join("c.data");
    let cfg = RunConfig {
        output: out.clone(),
        keep: false,
        argv: endless(&prog),
    };
    std::env::set_var("HOOD_RT_LIB", runtime());
    // The third look at the command once its segment exists fails.
    seam::fail(Point::CallsWatch, 2);
    let mut said = Vec::new();
    let ran = calls::run(&cfg, &mut hood_proc::steer::NoSteer, &mut |m| said.push(m))
        .expect("the tables are written");
    let error = ran.error.clone().unwrap_or_default();
    assert!(error.contains("fault injected"), "{error:?} {said:?}");
    assert_eq!(ran.exit.shell_code(), 137, "{said:?}");
    assert!(
        said.iter()
            .any(|m| matches!(m, Message::Note(n) if n.starts_with("killing the command"))),
        "{said:?}"
    );
    assert!(
        said.iter().any(|m| matches!(m, Message::Warning(w)
            if w.starts_with("recording stopped early") && w.contains("hood calls report -i"))),
        "{said:?}"
    );
    let (procs, warnings) = calls::file::written(&out);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(procs.len(), 1);
    assert!(procs[0].exe.ends_with("trace_stream"), "{}", procs[0].exe);
    assert!(
        dirs_left("calls-run").is_empty(),
        "{:?}",
        dirs_left("calls-run")
    );
}

/// The probe session (`--probe`, uprobes: root only) ends on a round that fails as the other
/// recorders do: the command is killed, the trace is finished with what was recorded and the
/// note of the stop, and the outcome says why.
#[test]
fn a_probe_round_that_fails_kills_the_command_and_finishes_the_trace() {
    if !hood_proc::usage::running_as_root() {
        eprintln!("skipped: uprobes need root");
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let prog = trace_stream(dir.path());
    let out = dir.path().join("p.trace");
    let cfg = crate::probe::ProbeConfig {
        specs: vec!["step".into()],
        yes: false,
        run: crate::probe::ProbeRun::Command(endless(&prog)),
        duration: None,
        sched: false,
        output: crate::probe::ProbeOutput::Trace(out.clone()),
    };
    // The third round that took hits fails.
    seam::fail(Point::ProbeRound, 2);
    let mut lines = Vec::new();
    let o = crate::probe::record(&cfg, &mut hood_proc::steer::NoSteer, &mut |l| {
        lines.push(l.to_string())
    })
    .expect("an error inside the run is an outcome, not an error");
    let error = o.error.clone().unwrap_or_default();
    assert!(error.contains("fault injected"), "{error:?} {lines:?}");
    // Killed (SIGKILL: 128 + 9) and reaped, not waited for.
    assert_eq!(o.status, 137, "{lines:?}");
    assert!(o.events > 0, "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("killing the probed command")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("recording stopped early") && l.contains("hood trace report -i")),
        "{lines:?}"
    );
    finished_early_with_names(&out);
}
