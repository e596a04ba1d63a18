//! Every stop of `hood trace record` is a clean stop: Ctrl-C (SIGINT to the process group),
//! SIGINT, SIGTERM and SIGHUP sent to hood alone, `timeout`, a command that ignores the signal,
//! a file that reaches `--max-size`. Each time the signal reaches the command, the file is
//! finished with its names, the summary is printed, nothing is left in the segment directory,
//! and hood exits with the command's status.
//!
//! The workload is tests/c/calls_phases.c: one() 10 times, then "ready" on stdout and a wait
//! for a line on stdin; after it, two() 20 times. Known answers by construction.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use common::{instrumented, runtime_release_dir, text};

fn hood() -> Command {
    let mut c = common::hood();
    c.env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"));
    c
}

/// One test at a time: they start, signal and time programs on a machine of 2 CPUs.
/// (`common::exclusive()`: the one lock of every test of this binary that must run alone.)
fn serial() -> common::Exclusive {
    common::exclusive()
}

/// `PREFIX hood trace record -o DATA -- PROGRAM` in its own process group with SIGINT at its
/// default (a test harness may run with it ignored, and ignored signals stay ignored across
/// exec), segments under `base`; returns once the program has said "ready".
fn start(base: &Path, data: &Path, prefix: &[&str], program: &[&str]) -> (Child, ChildStdin) {
    let mut c = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = common::command(first);
            c.args(rest).arg(env!("CARGO_BIN_EXE_hood"));
            c.env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"));
            c
        }
        None => hood(),
    };
    c.args(["trace", "record", "-o"])
        .arg(data)
        .arg("--")
        .args(program)
        .env("HOOD_SHM_DIR", base)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: signal() is async-signal-safe; it only resets this child's disposition.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = c.spawn().expect("spawn hood trace record");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("read ready");
    assert_eq!(line.trim(), "ready");
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

/// Wait at most 30 s for `child` (hood, the leader of its process group); a hood still running
/// then is killed with its group so the test fails instead of hanging. Its stderr too.
fn finish(mut child: Child) -> (Option<ExitStatus>, String) {
    let pgid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > Duration::from_secs(30) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: the process group hood led; what is left of it is ours to end.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    (status, err)
}

fn report(data: &Path) -> Value {
    let out = hood()
        .args(["trace", "report", "--format", "json"])
        .arg(data)
        .output()
        .expect("hood trace report");
    assert!(out.status.success(), "report failed: {}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    v["analysis"].clone()
}

/// Calls of the function `name` (0 when absent).
fn calls(a: &Value, name: &str) -> u64 {
    a["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .map_or(0, |f| f["calls"].as_u64().unwrap())
}

/// What `hood trace record` left in the segment directory `base` (besides the test's files).
fn leftovers(base: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hood-")
        })
        .collect()
}

/// The trace of phase one only: every function named, one() exactly 10 times, two() never.
fn check_phase_one(data: &Path, err: &str) {
    let a = report(data);
    assert_eq!(calls(&a, "one"), 10, "{err}\n{a}");
    assert_eq!(calls(&a, "two"), 0, "{err}\n{a}");
    let unnamed: Vec<&Value> = a["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"].as_str().unwrap().starts_with("0x"))
        .collect();
    assert!(unnamed.is_empty(), "functions without names: {unnamed:?}");
}

/// Stop `hood trace record` mid-run with `sig` (to its whole process group with `group`, as
/// Ctrl-C does, or to hood alone), then check the status, the file and the directory.
fn stopped_by(sig: libc::c_int, group: bool) {
    let _s = serial();
    let d = tempfile::tempdir().unwrap();
    let exe = instrumented("calls_phases", d.path(), &[], &[]);
    let data = d.path().join("stopped.data");
    let (child, _stdin) = start(d.path(), &data, &[], &[exe.to_str().unwrap()]);
    let pid = child.id() as libc::pid_t;
    // SAFETY: signalling our own child (or its process group, which it leads).
    assert_eq!(
        unsafe { libc::kill(if group { -pid } else { pid }, sig) },
        0
    );
    let (status, err) = finish(child);
    let status = status.unwrap_or_else(|| panic!("hood still ran 30 s after the signal: {err}"));
    assert_eq!(
        status.code(),
        Some(128 + sig),
        "hood passes on the program's death by the signal ({status}): {err}"
    );
    assert!(
        err.contains("received") && err.contains("writing the trace"),
        "hood says what happened: {err}"
    );
    assert!(err.contains("hood: wrote"), "the summary: {err}");
    check_phase_one(&data, &err);
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new());
}

#[test]
fn ctrl_c_to_the_process_group_finishes_the_trace() {
    stopped_by(libc::SIGINT, true);
}

#[test]
fn sigint_to_hood_alone_reaches_the_program() {
    stopped_by(libc::SIGINT, false);
}

#[test]
fn sigterm_to_hood_finishes_the_trace() {
    stopped_by(libc::SIGTERM, false);
}

#[test]
fn sighup_to_hood_finishes_the_trace() {
    stopped_by(libc::SIGHUP, false);
}

/// `timeout 2 hood trace record -- prog`: timeout sends SIGTERM to hood and to its group.
#[test]
fn timeout_finishes_the_trace() {
    let _s = serial();
    let d = tempfile::tempdir().unwrap();
    let exe = instrumented("calls_phases", d.path(), &[], &[]);
    let data = d.path().join("timeout.data");
    let (child, _stdin) = start(d.path(), &data, &["timeout", "2"], &[exe.to_str().unwrap()]);
    let (status, err) = finish(child);
    let status = status.unwrap_or_else(|| panic!("timeout still ran after 30 s: {err}"));
    // timeout's own status when it had to stop its command.
    assert_eq!(status.code(), Some(124), "{status}: {err}");
    assert!(err.contains("SIGTERM received"), "{err}");
    assert!(err.contains("hood: wrote"), "the summary: {err}");
    check_phase_one(&data, &err);
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new());
}

/// A program that ignores the signal: hood records on for the grace time only, finishes the
/// file, then waits for the program without recording and exits with its status.
#[test]
fn a_program_that_ignores_the_signal_is_not_recorded_past_the_grace_time() {
    let _s = serial();
    let d = tempfile::tempdir().unwrap();
    let exe = instrumented("calls_phases", d.path(), &[], &[]);
    let data = d.path().join("ignored.data");
    // `trap '' INT` leaves SIGINT ignored across the exec.
    let script = format!("trap '' INT; exec {}", exe.display());
    let (mut child, mut stdin) = start(d.path(), &data, &[], &["sh", "-c", &script]);
    let pid = child.id() as libc::pid_t;
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    // The trace is finished while the program still runs.
    let t = Instant::now();
    let mut stderr = child.stderr.take().unwrap();
    let mut err = String::new();
    let mut buf = [0u8; 4096];
    while !err.contains("runs on unrecorded") {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no end of recording: {err}"
        );
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "hood ended: {err}");
        err.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(err.contains("still runs 2 s after SIGINT"), "{err}");
    check_phase_one(&data, &err);
    // Phase two runs unrecorded; hood exits with the program's status.
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    child.stderr = Some(stderr);
    let (status, more) = finish(child);
    let err = err + &more;
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{err}");
    check_phase_one(&data, &err);
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new());
}

/// `--max-size`: the file stops growing near the limit, with a message; the program runs to
/// its end and hood exits with its status; the trace is finished with names.
#[test]
fn max_size_stops_recording_with_a_message() {
    let _s = serial();
    let d = tempfile::tempdir().unwrap();
    let exe = instrumented("trace_stream", d.path(), &[], &[]);
    let data = d.path().join("big.data");
    // 60 M events (~0.5 GB of event words) unless stopped; paused every 2000 steps so the
    // recorder keeps up.
    let out = hood()
        .args(["trace", "record", "--max-size", "2M", "-o"])
        .arg(&data)
        .args(["--", exe.to_str().unwrap(), "10000000", "0", "2000"])
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    let err = text(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("reached") && err.contains("--max-size 2.0 MiB"),
        "{err}"
    );
    let size = std::fs::metadata(&data).unwrap().len();
    // One round's chunks past the limit, and the names at the end.
    assert!(size < 16 << 20, "{size} bytes: {err}");
    let a = report(&data);
    assert!(calls(&a, "step") > 1000, "{a}");
    assert!(calls(&a, "step") < 10_000_000, "{a}");
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new());
}

/// The command's status, also when it was not instrumented (nothing traced); 1 when it
/// succeeded but left no trace, as docs/cli.md says.
#[test]
fn the_command_status_is_hoods_status() {
    let _s = serial();
    let d = tempfile::tempdir().unwrap();
    for (cmd, code) in [
        (vec!["true"], 1),
        (vec!["false"], 1),
        (vec!["sh", "-c", "exit 3"], 3),
    ] {
        let out = hood()
            .args(["trace", "record", "-o"])
            .arg(d.path().join("t.data"))
            .arg("--")
            .args(&cmd)
            .env("HOOD_SHM_DIR", d.path())
            .output()
            .unwrap();
        let err = text(&out);
        assert_eq!(out.status.code(), Some(code), "{cmd:?}: {err}");
        assert!(err.contains("produced no trace"), "{err}");
    }
}
