//! Recorders killed with SIGKILL at 0.3 s, 1.5 s and 3 s: each leaves a file its report reads,
//! holding what was recorded up to about a second before the kill, beside its output (which
//! it has not touched); the command it started dies with it; and the next hood command that
//! uses the same shared state (tracefs, /dev/shm, the output path) removes or keeps what the
//! killed one left, and says so.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// When the recorders are killed, after their start.
const KILL_AT: [f64; 3] = [0.3, 1.5, 3.0];
/// `hood record`'s default frequency.
const HZ: f64 = 999.0;

/// The only child of `pid` (the command a recorder started), once it exists.
fn child_of(pid: u32) -> u32 {
    let path = format!("/proc/{pid}/task/{pid}/children");
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if let Some(c) = text.split_whitespace().next() {
            return c.parse().expect("pid");
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no child of {pid}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// CPU seconds `pid` has used (utime + stime).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks as f64 / hz
}

/// Whether `pid` is gone (or a zombie no one reaps: it runs no more), waiting up to 10 s.
fn ends(pid: u32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s) if s[s.rfind(')').unwrap() + 2..].starts_with('Z') => return true,
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

/// The recording a recorder (pid `pid`) killed while writing `out` left beside it. `out`
/// itself was not touched: these tests start without one, so there is none.
fn left_beside(out: &Path, pid: u32) -> PathBuf {
    assert!(
        !out.exists(),
        "{}: a killed recorder put its unfinished file in place",
        out.display()
    );
    let left = hood_format::left_by_killed_writers(out);
    assert_eq!(left.len(), 1, "{}: {left:?}", out.display());
    let name = left[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.contains(&format!(".{pid}-")), "{name}");
    left.into_iter().next().unwrap()
}

/// The next writer of `out` (which printed `err`) kept the killed recorder's file `left` as
/// `out.killed-PID`, said so, and left nothing else beside `out`.
fn kept_by_next_writer(err: &str, out: &Path, left: &Path, pid: u32) {
    let kept = out.with_file_name(format!(
        "{}.killed-{pid}",
        out.file_name().unwrap().to_string_lossy()
    ));
    assert!(
        err.contains(&format!("kept {} as {}", left.display(), kept.display())),
        "{err}"
    );
    assert!(kept.exists() && !left.exists(), "{err}");
    assert!(hood_format::left_by_killed_writers(out).is_empty());
}

/// SIGKILL `child` `at` seconds after `started`; reaped.
fn kill_at(child: &mut Child, started: Instant, at: f64) {
    let wait = Duration::from_secs_f64(at).saturating_sub(started.elapsed());
    std::thread::sleep(wait);
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
}

#[test]
fn killed_record_leaves_a_readable_file_and_no_command_behind() {
    if !privileged("killed_record_leaves_a_readable_file_and_no_command_behind") {
        return;
    }
    let _l = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let spinner_exe = c_program("spinner");
    for at in KILL_AT {
        let file = dir.path().join(format!("killed-{at}.hood"));
        let started = Instant::now();
        let mut rec = hood()
            .args(["record", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&spinner_exe)
            .arg("60000")
            .stderr(Stdio::null())
            .spawn()
            .expect("hood record");
        let spinner = child_of(rec.id());
        let wait = Duration::from_secs_f64(at).saturating_sub(started.elapsed());
        std::thread::sleep(wait);
        let cpu = cpu_seconds(spinner);
        let pid = rec.id();
        rec.kill().expect("SIGKILL");
        rec.wait().unwrap();
        assert!(
            ends(spinner),
            "at {at} s: the command outlived its recorder"
        );
        let left = left_beside(&file, pid);
        let out = run(hood()
            .args(["report", "--format", "collapsed", "-i"])
            .arg(&left));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not finalized"), "at {at} s: {err}");
        let samples: u64 = folded(&out.stdout).iter().map(|(_, n)| n).sum();
        if samples == 0 {
            assert!(
                err.contains("holds no samples") && out.status.code() == Some(1),
                "at {at} s: {err}"
            );
        } else {
            assert!(out.status.success(), "at {at} s: {err}");
        }
        // The spinner was busy on CPU for `cpu` seconds: at most one sample per 1/999 s of
        // it, and all but the last second or so of it stored.
        let most = (cpu * HZ * 1.2) as u64 + 50;
        let least = ((cpu - 1.3) * HZ * 0.7).max(0.0) as u64;
        println!(
            "killed at {at} s: {samples} samples for {cpu:.2} s of CPU (expected {least}..={most})"
        );
        assert!(
            (least..=most).contains(&samples),
            "killed at {at} s after {cpu:.2} s of CPU: {samples} samples, expected {least}..={most}"
        );
        // A report of the output path points to it; the next recording keeps it.
        let report = run(hood().args(["report", "-i"]).arg(&file));
        assert!(
            String::from_utf8_lossy(&report.stderr).contains(&format!(
                "note: {} is the recording of a hood killed while writing",
                left.display()
            )),
            "{}",
            text(&report)
        );
        let next = run(hood()
            .args(["record", "-o"])
            .arg(&file)
            .args(["--", "true"]));
        assert!(next.status.success(), "{}", text(&next));
        kept_by_next_writer(&String::from_utf8_lossy(&next.stderr), &file, &left, pid);
    }
}

fn calls_hood() -> Command {
    let mut c = hood();
    c.env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"));
    c
}

/// Private segment directories of `hood calls run` under `base`.
fn private_dirs(base: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(base)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("hood-calls-run-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `hood SUBCOMMAND -o out -- exe` (tests/c/calls_phases.c: one() 10 times, "ready", then
/// it waits on stdin) with segments under `base`, once the program said "ready": the
/// recorder, the program's pid, and its stdin (the program ends when it is closed).
fn start_phases(
    subcommand: &[&str],
    out: &Path,
    exe: &Path,
    base: &Path,
) -> (Child, u32, Option<std::process::ChildStdin>) {
    let mut rec = calls_hood()
        .args(subcommand)
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(exe)
        .env("HOOD_SHM_DIR", base)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("hood");
    let program = child_of(rec.id());
    let mut line = String::new();
    BufReader::new(rec.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let stdin = rec.stdin.take();
    (rec, program, stdin)
}

#[test]
fn killed_calls_run_leaves_its_last_snapshot_and_no_segments() {
    // Killed at set times and expected to have written by then: not beside the busy tests
    // of this binary (the spinner of killed_record, the commands of docs_commands).
    let _l = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let exe = instrumented("calls_phases", dir.path(), &[], &[]);
    for at in KILL_AT {
        let base = dir.path().join(format!("shm-{at}"));
        std::fs::create_dir(&base).unwrap();
        let data = dir.path().join(format!("calls-{at}.hood"));
        let started = Instant::now();
        let (mut runner, program, _stdin) = start_phases(&["calls", "run"], &data, &exe, &base);
        let pid = runner.id();
        kill_at(&mut runner, started, at);
        assert!(
            ends(program),
            "at {at} s: the command outlived hood calls run"
        );
        // The file is complete: empty before the first snapshot, then the calls made.
        let left = left_beside(&data, pid);
        let out = run(calls_hood()
            .args(["calls", "report", "--format", "json"])
            .arg(&left));
        let one_calls = if out.status.success() {
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            doc["processes"]
                .as_array()
                .expect("processes")
                .iter()
                .flat_map(|p| p["rows"].as_array().unwrap())
                .filter(|r| r["path"].as_array().unwrap().last() == Some(&"one".into()))
                .map(|r| r["calls"].as_u64().unwrap())
                .sum::<u64>()
        } else {
            let err = text(&out);
            assert!(err.contains("no processes in"), "at {at} s: {err}");
            0
        };
        println!("killed at {at} s: one() seen {one_calls} times");
        assert!(
            one_calls == 10 || (one_calls == 0 && at < 1.5),
            "killed at {at} s: one() {one_calls} times (it made 10 calls before `ready`)"
        );
        // The segments stay until the next calls command, which removes them and says so.
        assert_eq!(private_dirs(&base).len(), 1, "at {at} s");
        let get = run(calls_hood()
            .args(["calls", "get", "-o"])
            .arg(dir.path().join("get.hood"))
            .env("HOOD_SHM_DIR", &base));
        let err = String::from_utf8_lossy(&get.stderr);
        assert!(
            err.contains("removed") && err.contains("killed recorder"),
            "at {at} s: {err}"
        );
        assert!(private_dirs(&base).is_empty(), "at {at} s: {err}");
        // The next run writing the same file keeps the killed one's.
        let next = run(calls_hood()
            .args(["calls", "run", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&exe)
            .env("HOOD_SHM_DIR", &base)
            .stdin(Stdio::null())
            .stdout(Stdio::null()));
        kept_by_next_writer(&String::from_utf8_lossy(&next.stderr), &data, &left, pid);
    }
}

#[test]
fn killed_labels_recorder_leaves_a_readable_file_and_the_next_tracefs_user_cleans_up() {
    if !privileged(
        "killed_labels_recorder_leaves_a_readable_file_and_the_next_tracefs_user_cleans_up",
    ) {
        return;
    }
    let _l = exclusive();
    ensure_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let instances = Path::new(TRACEFS).join("instances");
    for (i, at) in KILL_AT.into_iter().enumerate() {
        let file = dir.path().join(format!("labels-{at}.hood"));
        let started = Instant::now();
        let mut rec = hood()
            .args(["record", "--labels", "-a", "-d", "30", "-o"])
            .arg(&file)
            .stderr(Stdio::null())
            .spawn()
            .expect("hood record --labels");
        let name = format!("hood-labels-{}", rec.id());
        // When its tracing (and sampling) started, if it did before the kill.
        let on = instances.join(&name).join("tracing_on");
        let deadline = started + Duration::from_secs_f64(at);
        // (A new instance starts with tracing on until the recorder switches it off, a moment
        // later: only a "1" read twice in a row counts.)
        let mut sampling_since = None;
        let mut seen_on: Option<Instant> = None;
        while Instant::now() < deadline {
            let now_on = std::fs::read_to_string(&on).is_ok_and(|t| t.trim() == "1");
            match (now_on, seen_on) {
                (true, Some(first)) if sampling_since.is_none() => sampling_since = Some(first),
                (true, None) => seen_on = Some(Instant::now()),
                (false, _) => seen_on = None,
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let pid = rec.id();
        rec.kill().expect("SIGKILL");
        rec.wait().unwrap();
        let sampled = sampling_since.map_or(0.0, |t| (deadline - t).as_secs_f64());
        // Once created, the instance stays (tracing) until the next hood command that uses
        // tracefs.
        let left = instances.join(&name).exists();
        if sampling_since.is_some() {
            assert!(left, "at {at} s: {name} gone without a cleanup");
            let on = std::fs::read_to_string(&on).unwrap_or_default();
            assert_eq!(
                on.trim(),
                "1",
                "at {at} s: the killed run's instance is tracing"
            );
        }
        // Readable whenever it was killed: a recording of no samples yet, or of those up to
        // about a second before the kill (samples are written at least every second; 2 s
        // leaves room for a loaded machine).
        let out = run(hood().args(["report", "-i"]).arg(left_beside(&file, pid)));
        let err = String::from_utf8_lossy(&out.stderr);
        println!("killed at {at} s, {sampled:.2} s after sampling started: {err}");
        if out.status.success() {
            assert!(text(&out).contains("not finalized"), "at {at} s: {err}");
        } else {
            assert!(
                err.contains("holds no samples") && sampled < 2.0,
                "at {at} s, {sampled:.2} s after sampling started: {}",
                text(&out)
            );
        }
        // The next user of tracefs: alternately another --labels recording and `top --irq-time`.
        let next = if i % 2 == 0 {
            run(hood()
                .args(["record", "--labels", "-a", "-d", "0.3", "-o"])
                .arg(dir.path().join("next.hood")))
        } else {
            run(hood().args(["top", "-b", "-n", "1", "-d", "0.1", "--irq-time"]))
        };
        let err = String::from_utf8_lossy(&next.stderr);
        assert!(next.status.success(), "at {at} s: {}", text(&next));
        assert!(!instances.join(&name).exists(), "at {at} s: {name} left");
        if left {
            assert!(
                err.contains(&format!("removed tracefs instance {name}")),
                "at {at} s: no word of the removal: {err}"
            );
        }
    }
}

#[test]
fn killed_trace_record_takes_its_command_along_and_the_next_run_frees_its_segments() {
    // Killed at set times and expected to have written by then: not beside the busy tests
    // of this binary (the spinner of killed_record, the commands of docs_commands).
    let _l = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let exe = instrumented("calls_phases", dir.path(), &[], &[]);
    let base = dir.path().join("shm");
    std::fs::create_dir(&base).unwrap();
    let started = Instant::now();
    let out = dir.path().join("trace.hood");
    let (mut rec, program, _stdin) = start_phases(&["trace", "record"], &out, &exe, &base);
    kill_at(&mut rec, started, 1.5);
    assert!(ends(program), "the command outlived hood trace record");
    let left = || {
        std::fs::read_dir(&base)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("hood-trace-"))
            .count()
    };
    assert_eq!(
        left(),
        1,
        "the killed run's segments stay until the next run"
    );
    let next = run(calls_hood()
        .args(["trace", "record", "-o"])
        .arg(dir.path().join("next.hood"))
        .args(["--", "true"])
        .env("HOOD_SHM_DIR", &base));
    let err = String::from_utf8_lossy(&next.stderr);
    assert!(
        err.contains("removed") && err.contains("killed recorder"),
        "{err}"
    );
    assert_eq!(left(), 0, "{err}");
}
