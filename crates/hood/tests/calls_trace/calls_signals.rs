//! `hood calls run` stopped by Ctrl-C (SIGINT to its process group), SIGTERM or SIGHUP: the
//! file is still written with the calls made so far and no segment directory is left; a
//! program that ignores the signal is recorded for the grace time only; and `hood calls get
//! -p` / `reset -p` reach the process that `hood calls run` started.
//!
//! The workload is tests/c/calls_phases.c: one() 10 times, then "ready" on stdout and a wait
//! for a line on stdin; after it, two() 20 times (tests/c/calls_stubborn.c: the same, with
//! SIGHUP and SIGTERM ignored). Known answers by construction.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use common::{instrumented, runtime_release_dir, text};

fn hood() -> Command {
    let mut c = common::hood();
    c.env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"));
    c
}

/// `hood calls run -o DATA -- calls_phases` in its own process group with SIGINT at its
/// default (a test harness may run with it ignored, and ignored signals stay ignored across
/// exec), segments under `base`; returns once the program has said "ready".
fn start(base: &Path, data: &Path) -> (Child, ChildStdin) {
    start_program(base, data, "calls_phases")
}

/// [`start`] with the program of tests/c/`program`.c.
fn start_program(base: &Path, data: &Path, program: &str) -> (Child, ChildStdin) {
    let exe = instrumented(program, base, &[], &[]);
    let mut c = hood();
    c.args(["calls", "run", "-o"])
        .arg(data)
        .arg("--")
        .arg(&exe)
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
    let mut child = c.spawn().expect("spawn hood calls run");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("read ready");
    assert_eq!(line.trim(), "ready");
    let stdin = child.stdin.take().unwrap();
    (child, stdin)
}

fn report(data: &Path) -> Value {
    let out = hood()
        .args(["calls", "report", "--format", "json", "--sort", "name"])
        .arg(data)
        .output()
        .expect("hood calls report");
    assert!(out.status.success(), "report failed: {}", text(&out));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Calls of the row whose path (names joined by spaces) is `path`, in the only process.
fn calls(doc: &Value, path: &str) -> Option<u64> {
    let procs = doc["processes"].as_array().expect("processes");
    assert_eq!(procs.len(), 1, "one process: {doc}");
    procs[0]["rows"].as_array().unwrap().iter().find_map(|r| {
        let p: Vec<&str> = r["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        (p.join(" ") == path).then(|| r["calls"].as_u64().unwrap())
    })
}

/// What `hood calls run` left in the segment directory `base` (besides the test's files).
fn leftovers(base: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(base)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("hood-")
        })
        .collect()
}

/// Stop `hood calls run` mid-run with `sig` (to its whole process group with `group`, as
/// Ctrl-C does, or to hood alone), then check the file and the segment directory.
fn stopped_by(sig: libc::c_int, group: bool) {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("stopped.data");
    let (mut child, _stdin) = start(d.path(), &data);
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().unwrap();
    // SAFETY: signalling our own child (or its process group, which it leads).
    assert_eq!(
        unsafe { libc::kill(if group { -pid } else { pid }, sig) },
        0
    );
    let status = child.wait().expect("wait hood");
    // A hood that died of the signal leaves the program waiting on our stdin, holding the
    // pipes: end it so the failure is reported instead of a hang.
    // SAFETY: the process group hood led; the program is its only other member.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    assert_eq!(
        status.code(),
        Some(128 + sig),
        "hood passes on the program's death by the signal ({status}): {err}"
    );
    assert!(
        err.contains("received") && err.contains("collecting its tables"),
        "hood says what happened: {err}"
    );
    // The calls made before the signal, exactly; the ones after it never happened.
    let doc = report(&data);
    assert_eq!(calls(&doc, "main phase one"), Some(10), "{doc}");
    assert_eq!(calls(&doc, "main phase"), Some(1), "{doc}");
    assert_eq!(calls(&doc, "main phase two"), None, "{doc}");
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new());
}

#[test]
fn ctrl_c_to_the_process_group_writes_the_file() {
    stopped_by(libc::SIGINT, true);
}

#[test]
fn sigterm_to_hood_writes_the_file() {
    stopped_by(libc::SIGTERM, false);
}

#[test]
fn sighup_to_hood_writes_the_file() {
    stopped_by(libc::SIGHUP, false);
}

/// A program that ignores SIGTERM: hood records on for the grace time only, then writes the
/// file with the calls made so far, waits for the program without recording and exits with
/// its status.
#[test]
fn a_program_that_ignores_sigterm_is_not_recorded_past_the_grace_time() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("ignored.data");
    let (mut child, mut stdin) = start_program(d.path(), &data, "calls_stubborn");
    let pid = child.id() as libc::pid_t;
    // Read on a thread of its own, so a hood that says nothing cannot block the test.
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = stderr.read(&mut buf) {
            if tx
                .send(String::from_utf8_lossy(&buf[..n]).into_owned())
                .is_err()
            {
                break;
            }
        }
    });
    // SAFETY: signalling our own child, hood alone (it leads a process group of its own).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    // The file is written while the program still runs; at most 30 s, so a hood that waits
    // without limit fails the test instead of hanging it.
    let t = Instant::now();
    let mut err = String::new();
    while !err.contains("runs on unrecorded") {
        let left = Duration::from_secs(30).saturating_sub(t.elapsed());
        match rx.recv_timeout(left) {
            Ok(more) => err.push_str(&more),
            Err(e) => {
                // SAFETY: the process group hood led; what is left of it is ours to end.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = child.wait();
                panic!("no end of recording 30 s after SIGTERM ({e}): {err}");
            }
        }
    }
    assert!(err.contains("still runs 2 s after SIGTERM"), "{err}");
    let doc = report(&data);
    assert_eq!(calls(&doc, "main phase one"), Some(10), "{doc}");
    assert_eq!(calls(&doc, "main phase two"), None, "{doc}");
    // Phase two runs unrecorded; hood exits with the program's status.
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let status = child.wait().expect("wait hood");
    reader.join().unwrap();
    let err = err + &rx.try_iter().collect::<String>();
    assert_eq!(status.code(), Some(0), "{err}");
    let doc = report(&data);
    assert_eq!(calls(&doc, "main phase one"), Some(10), "{doc}");
    assert_eq!(calls(&doc, "main phase two"), None, "{doc}");
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new());
}

/// The pid of the program `hood calls run` (pid `hood`) started.
fn program_pid(hood: u32) -> String {
    let kids = std::fs::read_to_string(format!("/proc/{hood}/task/{hood}/children")).unwrap();
    let kids: Vec<&str> = kids.split_whitespace().collect();
    assert_eq!(kids.len(), 1, "hood calls run has one child: {kids:?}");
    kids[0].to_string()
}

#[test]
fn get_and_reset_reach_a_program_that_calls_run_started() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("run.data");
    let (child, mut stdin) = start(d.path(), &data);
    let pid = program_pid(child.id());
    // While the program waits: phase one is done, main is running.
    let mid = d.path().join("mid.data");
    let out = hood()
        .args(["calls", "get", "-p", &pid, "-o"])
        .arg(&mid)
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "get -p {pid}: {}", text(&out));
    let doc = report(&mid);
    assert_eq!(calls(&doc, "main phase one"), Some(10), "{doc}");
    assert_eq!(doc["processes"][0]["state"], "running", "{doc}");
    let out = hood()
        .args(["calls", "reset", "-p", &pid])
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "reset -p {pid}: {}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("1 process will reset at its next function entry or exit"),
        "{}",
        text(&out)
    );
    // Phase two after the reset: the file `calls run` writes holds only it.
    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let doc = report(&data);
    assert_eq!(calls(&doc, "main phase one"), None, "reset honoured: {doc}");
    assert_eq!(calls(&doc, "main phase two"), Some(20), "{doc}");
    // get did not take the segment away from calls run, and calls run cleaned up.
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new());
}

#[test]
fn get_says_why_a_process_without_the_runtime_has_no_tables() {
    let d = tempfile::tempdir().unwrap();
    let mut sleeper = common::command("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let out = hood()
        .args(["calls", "get", "-p", &pid, "-o"])
        .arg(d.path().join("x.data"))
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("pid {pid} (sleep) does not run hood-rt"))
            && err.contains("hood calls run"),
        "{err}"
    );
    let out = hood()
        .args(["calls", "reset", "-p", "999999999"])
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no process with pid 999999999"),
        "{}",
        text(&out)
    );
}
