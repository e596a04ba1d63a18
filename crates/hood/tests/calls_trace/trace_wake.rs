//! Who ended each wait in `hood trace` (issue 22, item 4): tests/c/trace_wake.c, where thread
//! `reader-a` blocks reading a pipe in `wait_for_token` that thread `writer-b` writes in
//! `send_token` after a 30 ms nap, then sleeps 20 ms in `doze`. The code-path trace's
//! `context switch in` lines of the reader name the writer (comm, pid, tid, function) after
//! the pipe waits and an interrupt after the sleeps, and split each wait into blocked and
//! runnable time. Wake-ups need root (whole-CPU tracepoints); otherwise SKIPPED, or a panic
//! under HOOD_REQUIRE_PRIVILEGED=1.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::common;
use common::{hood, text};

/// Record the program; returns (pid, reader tid, writer tid).
fn record(dir: &Path, data: &Path) -> (u32, u32, u32) {
    // Wake-ups of every CPU, and waits timed to the millisecond: not beside the other
    // recordings of this binary.
    let _one = common::exclusive();
    let prog = common::instrumented("trace_wake", dir, &[], &["-lpthread"]);
    let out = hood()
        .args(["trace", "record", "-o"])
        .arg(data)
        .arg("--")
        .arg(&prog)
        .env(
            "HOOD_RT_LIB",
            common::runtime_release_dir().join("libhood_rt.so"),
        )
        .env("HOOD_SHM_DIR", dir)
        .stdin(Stdio::null())
        .output()
        .expect("hood trace record");
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("wake-ups: ") && !err.contains("wake-ups not recorded"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let tid = |who: &str| -> u32 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(who)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {who} line in {stdout}"))
    };
    let report = hood()
        .args(["trace", "report", "--format", "json"])
        .arg(data)
        .output()
        .expect("hood trace report");
    let v: Value = serde_json::from_slice(&report.stdout).expect("json");
    let pid = v["analysis"]["threads"][0]["pid"].as_u64().expect("a pid") as u32;
    (pid, tid("reader"), tid("writer"))
}

fn report(data: &Path, args: &[&str]) -> String {
    let out = hood()
        .args(["trace", "report"])
        .args(args)
        .arg(data)
        .output()
        .expect("hood trace report");
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The reader's `context switch in` lines, each with the function that was called last
/// before it (where the thread waited).
fn switch_ins(paths: &str) -> Vec<(String, String)> {
    let mut last = String::new();
    let mut out = Vec::new();
    for l in paths.lines() {
        if let Some(i) = l.find("-> ") {
            last = l[i + 3..].split(' ').next().unwrap_or("").to_string();
        } else if l.contains("---- context switch in") {
            out.push((last.clone(), l.to_string()));
        }
    }
    out
}

#[test]
fn context_switch_in_lines_name_the_waker() {
    if !common::root("context_switch_in_lines_name_the_waker") {
        return;
    }
    common::ensure_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("wake.data");
    let (pid, reader, writer) = record(dir.path(), &data);
    let paths = report(&data, &["--paths", "--tid", &reader.to_string()]);
    let ins = switch_ins(&paths);
    // The pipe waits: every one woken by the writer in send_token (one write per round; a
    // round may find the token already there on a loaded machine, and not block).
    let by_writer = format!("woken by writer-b pid {pid} tid {writer} in send_token");
    let pipe: Vec<&String> = ins
        .iter()
        .filter(|(f, _)| f == "wait_for_token")
        .map(|(_, l)| l)
        .collect();
    let named = pipe.iter().filter(|l| l.contains(&by_writer)).count();
    assert!(
        named >= 3,
        "{named} of 5 pipe waits name {by_writer}:\n{paths}"
    );
    for l in &pipe {
        assert!(
            l.contains(": preempted, runnable") || l.contains(&by_writer),
            "a pipe wait with another waker: {l}\n{paths}"
        );
    }
    // The sleeps (nanosleep in sleep_ms, called by doze): a timer interrupt ends each.
    let sleeps: Vec<&String> = ins
        .iter()
        .filter(|(f, _)| f == "sleep_ms" || f == "doze")
        .map(|(_, l)| l)
        .collect();
    let by_irq = sleeps
        .iter()
        .filter(|l| {
            l.contains("woken by a hardware interrupt")
                || l.contains("woken by a soft interrupt")
                || l.contains("woken by an interrupt on an idle CPU")
        })
        .count();
    assert!(
        by_irq >= 3,
        "{by_irq} of 5 sleeps woken by an interrupt:\n{paths}"
    );

    // JSON lines: blocked + runnable = off-CPU, the waker's fields as the text says.
    let out = report(
        &data,
        &["--paths", "--format", "json", "--tid", &reader.to_string()],
    );
    let v: Value = serde_json::from_str(&out).expect("json");
    let lines = v["analysis"]["threads"][0]["lines"]
        .as_array()
        .expect("lines");
    let mut writers = 0;
    for l in lines.iter().filter(|l| l["type"] == "switch_in") {
        let (Some(b), Some(r)) = (l["blocked_ns"].as_u64(), l["runnable_ns"].as_u64()) else {
            continue;
        };
        assert_eq!(b + r, l["off_ns"].as_u64().unwrap(), "{l}");
        let w = &l["waker"];
        if w["kind"] == "thread" && w["tid"] == writer {
            assert_eq!(
                (w["pid"].as_u64(), w["comm"].as_str()),
                (Some(pid as u64), Some("writer-b")),
                "{l}"
            );
            // Besides the pipe waits, the writer may release stdout's lock in `writer` (both
            // threads print their tids at the start) while the reader waits for it.
            match w["function"].as_str() {
                Some("send_token") => writers += 1,
                Some("writer") => {}
                f => panic!("the writer woke the reader in {f:?}: {l}"),
            }
        }
    }
    assert_eq!(writers, named, "{out}");
    // The summary splits the off-CPU time.
    let summary = report(&data, &[]);
    assert!(summary.contains("of which blocked"), "{summary}");
    // Chrome: the off-CPU slices carry the waker.
    let chrome = report(&data, &["--format", "chrome"]);
    assert!(chrome.contains("\"woken_by\""), "{chrome}");
}

/// Without wake-ups (`HOOD_TRACE_WAKE=0`) the lines are as before and the summary says why.
#[test]
fn without_wakeups_the_lines_say_only_the_off_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    let prog = common::instrumented("trace_wake", dir.path(), &[], &["-lpthread"]);
    let data = dir.path().join("nowake.data");
    let out = hood()
        .args(["trace", "record", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&prog)
        .env(
            "HOOD_RT_LIB",
            common::runtime_release_dir().join("libhood_rt.so"),
        )
        .env("HOOD_SHM_DIR", dir.path())
        .env("HOOD_TRACE_WAKE", "0")
        .stdin(Stdio::null())
        .output()
        .expect("hood trace record");
    assert!(out.status.success(), "{}", text(&out));
    let paths = report(&data, &["--paths"]);
    let ins: Vec<&str> = paths
        .lines()
        .filter(|l| l.contains("context switch in"))
        .collect();
    assert!(!ins.is_empty(), "{paths}");
    assert!(
        ins.iter().all(|l| l.ends_with("us off-CPU) ----")),
        "{paths}"
    );
    let summary = report(&data, &[]);
    assert!(summary.contains("wake-ups not recorded"), "{summary}");
}
