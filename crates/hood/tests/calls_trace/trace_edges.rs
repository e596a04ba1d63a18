//! `hood trace` at the edges of a run (issue 25): exec, calls that never return, irqs outside
//! the traced spans, a window inside one call. Real C programs built with gcc
//! -finstrument-functions, recorded with `hood trace record`, and the reports checked against
//! what the programs do by construction.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;

fn hood() -> Command {
    common::command(env!("CARGO_BIN_EXE_hood"))
}

/// Record `cmd` into `dir/t.data` (segments under `dir`); the recorder must succeed.
fn record(dir: &Path, cmd: &[&str]) -> (PathBuf, String) {
    // Not beside the timing tests of this binary: trace_irq_edges floods loopback UDP, which
    // takes a CPU in softirqs.
    let _one = common::exclusive();
    let (data, out) = common::trace_record(dir, "t.data", &[], cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "hood trace record failed: {stderr}");
    (data, stderr)
}

fn report_text(data: &Path, extra: &[&str]) -> String {
    let out = common::run(hood().args(["trace", "report"]).args(extra).arg(data));
    assert!(
        out.status.success(),
        "report failed:\n{}",
        common::text(&out)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

fn report_json(data: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    let v: Value = serde_json::from_str(&report_text(data, &args)).expect("json");
    v
}

fn func<'a>(a: &'a Value, name: &str) -> Option<&'a Value> {
    a["analysis"]["functions"]
        .as_array()?
        .iter()
        .find(|f| f["name"] == name)
}

fn calls(a: &Value, name: &str) -> u64 {
    func(a, name).map_or(0, |f| f["calls"].as_u64().unwrap())
}

/// The code-path text of each thread section: (heading, lines).
fn sections(paths: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for l in paths.lines() {
        if l.starts_with("====") {
            out.push((l.to_string(), Vec::new()));
        } else if let Some(s) = out.last_mut() {
            s.1.push(l.to_string());
        }
    }
    out
}

/// Depth of a call line (`0:000 123 -> f ...`: four spaces a level), if it is one.
fn call_depth(line: &str, func: &str) -> Option<usize> {
    let rest = line.get(10..)?;
    let arrow = rest.find(&format!("-> {func} "))?;
    rest[..arrow].chars().all(|c| c == ' ').then_some(arrow / 4)
}

/// Issue 25: a program that execs another instrumented program. Each image is named from its
/// own symbols (both are PIE, loaded at different addresses), the new image's main starts a
/// new root instead of nesting inside the old main (which never returned), and each image's
/// thread is labelled with its own executable.
#[test]
fn exec_names_and_nests_each_image_on_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prog = common::instrumented("trace_exec", dir.path(), &[], &[]);
    let target = dir.path().join("exec_target");
    std::fs::copy(&prog, &target).expect("copy");
    let (data, _) = record(
        dir.path(),
        &[prog.to_str().unwrap(), target.to_str().unwrap()],
    );

    let a = report_json(&data, &[]);
    assert_eq!(calls(&a, "before_exec"), 3, "{a}");
    assert_eq!(calls(&a, "after_exec"), 5, "{a}");
    assert_eq!(
        calls(&a, "main"),
        1,
        "the new main returned, the old one never did"
    );
    // The old main, running at the end, is in main's net time but not a call: the mean per
    // call is the new main's one call, so max = avg = min.
    let main = func(&a, "main").unwrap();
    let running = main["running_net_ns"].as_u64().unwrap();
    assert!(running > 0, "{main}");
    assert_eq!(
        main["net_ns"].as_u64().unwrap() - running,
        main["max_ns"].as_u64().unwrap(),
        "{main}"
    );
    let summary = report_text(&data, &[]);
    let row = summary
        .lines()
        .find(|l| l.ends_with("  main"))
        .unwrap_or_else(|| panic!("{summary}"));
    let mam = row
        .split('(')
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap();
    let v: Vec<&str> = mam.split('/').collect();
    assert!(v.len() == 3 && v[0] == v[1] && v[1] == v[2], "{row}");
    let unnamed: Vec<&Value> = a["analysis"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"].as_str().unwrap().starts_with("0x"))
        .collect();
    assert!(unnamed.is_empty(), "unnamed functions: {unnamed:?}");
    let threads = a["analysis"]["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "one thread per image: {threads:?}");
    assert_eq!(threads[0]["pid"], threads[1]["pid"]);
    assert_eq!(threads[0]["tid"], threads[1]["tid"]);
    assert!(
        threads[0]["exe"].as_str().unwrap().ends_with("/trace_exec"),
        "{threads:?}"
    );
    assert!(
        threads[1]["exe"]
            .as_str()
            .unwrap()
            .ends_with("/exec_target"),
        "{threads:?}"
    );
    assert!(threads[0]["end_ns"].as_u64() <= threads[1]["start_ns"].as_u64());
    for th in threads {
        assert_eq!(th["unmatched_exits"], 0, "{th}");
        assert_eq!(th["mismatched"], 0, "{th}");
    }

    let paths = report_text(&data, &["--paths"]);
    let s = sections(&paths);
    assert_eq!(s.len(), 2, "{paths}");
    assert!(s[0].0.contains("/trace_exec)"), "{paths}");
    assert!(s[1].0.contains("/exec_target)"), "{paths}");
    let depths = |lines: &[String], f: &str| -> Vec<usize> {
        lines.iter().filter_map(|l| call_depth(l, f)).collect()
    };
    assert_eq!(depths(&s[0].1, "main"), vec![0], "{paths}");
    assert_eq!(depths(&s[0].1, "before_exec"), vec![1; 3], "{paths}");
    assert!(depths(&s[0].1, "after_exec").is_empty(), "{paths}");
    assert!(
        s[0].1.iter().any(|l| l.contains("running at end")),
        "the old main never returned: {paths}"
    );
    assert_eq!(depths(&s[1].1, "main"), vec![0], "a new root: {paths}");
    assert_eq!(depths(&s[1].1, "after_exec"), vec![1; 5], "{paths}");
    assert!(depths(&s[1].1, "before_exec").is_empty(), "{paths}");
}

/// The recorder's "irqs: H hard irq and S softirq entries" line.
fn recorded_irqs(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("hood trace: irqs: "))
        .unwrap_or_else(|| panic!("no irq line: {stderr}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1])
}

/// Issue 25: `record` counts every irq entry in the traced threads' context, the report times
/// those inside the threads' traced spans; the ones outside (here ~500 NET_RX softirqs of
/// loopback sends in a constructor that runs before main's first event) were missing from the
/// report without a word. Now they are counted apart, and the two add up to the recorder's
/// count.
#[test]
fn irqs_outside_the_traced_spans_add_up_to_the_recorders_count() {
    if !common::privileged("irqs_outside_the_traced_spans_add_up_to_the_recorders_count") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let prog = common::instrumented("trace_irq_edges", dir.path(), &[], &[]);
    let (data, stderr) = record(dir.path(), &[prog.to_str().unwrap()]);
    let (hard, soft) = recorded_irqs(&stderr);
    let a = &report_json(&data, &[])["analysis"];
    let n = |k: &str| a[k].as_u64().unwrap_or_else(|| panic!("{k}: {a}"));
    assert_eq!(
        n("hard_irqs") + n("hard_irqs_outside"),
        hard,
        "{stderr}\n{a}"
    );
    assert_eq!(n("softirqs") + n("softirqs_outside"), soft, "{stderr}\n{a}");
    assert!(
        n("softirqs_outside") > 0,
        "the constructor's sends come before main: {a}"
    );
    assert!(n("softirqs") > 0, "send_some's sends are inside main: {a}");
    let text = report_text(&data, &[]);
    assert!(
        text.contains(
            "softirqs outside them (before a thread's first traced event or after its end)"
        ),
        "{text}"
    );
}

/// Issue 25: `--paths --from/--to` with a window inside one long call printed only the
/// thread's heading. trace_known's outer() burns 8 ms of CPU before it calls inner(), so from
/// 2 ms to 3 ms after the start the thread is inside main and outer and nothing else (CPU time
/// never runs ahead of wall time): those two calls are shown, marked, with their results.
#[test]
fn a_window_inside_one_call_shows_the_calls_it_is_inside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prog = common::instrumented("trace_known", dir.path(), &[], &[]);
    let (data, _) = record(dir.path(), &[prog.to_str().unwrap(), "1"]);
    let paths = report_text(&data, &["--paths", "--from", "2ms", "--to", "3ms"]);
    let s = sections(&paths);
    assert_eq!(s.len(), 1, "{paths}");
    let calls: Vec<&String> = s[0].1.iter().filter(|l| l.contains("-> ")).collect();
    assert_eq!(calls.len(), 2, "{paths}");
    assert_eq!(call_depth(calls[0], "main"), Some(0), "{paths}");
    assert_eq!(call_depth(calls[1], "outer"), Some(1), "{paths}");
    assert!(
        calls
            .iter()
            .all(|l| l.ends_with(" total, entered before the window)")),
        "{paths}"
    );
    // The JSON lines say the same.
    let j = report_json(&data, &["--paths", "--from", "2ms", "--to", "3ms"]);
    let lines = j["analysis"]["threads"][0]["lines"].as_array().unwrap();
    let calls: Vec<(&str, bool)> = lines
        .iter()
        .filter(|l| l["type"] == "call")
        .map(|l| (l["name"].as_str().unwrap(), l["before_window"] == true))
        .collect();
    assert_eq!(calls, vec![("main", true), ("outer", true)], "{j}");
    // outer's result is its whole call: 12 ms of CPU and a 15 ms sleep.
    let outer = lines.iter().find(|l| l["name"] == "outer").unwrap();
    assert!(outer["total_ns"].as_u64().unwrap() > 27_000_000, "{outer}");
}
