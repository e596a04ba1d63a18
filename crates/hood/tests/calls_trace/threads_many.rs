//! Many threads (issue 25): 200 at once, and 6,000 started 4 at a time ("4 threads per
//! request"), all measured, with the default limits. The workload is tests/c/threads_churn.c:
//! every thread calls work() 100 times, work() calls leaf(): exact counts by construction.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;
use common::{instrumented, runtime_release_dir, text};

fn hood() -> Command {
    let mut c = common::hood();
    c.env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"));
    c
}

/// `hood trace record -- threads_churn T R`, then its report's analysis.
fn trace(dir: &Path, t: u32, r: u32) -> Value {
    let exe = instrumented("threads_churn", dir, &["-pthread"], &[]);
    let data = dir.join(format!("t{t}x{r}.data"));
    let out = hood()
        .args(["trace", "record", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&exe)
        .args([t.to_string(), r.to_string()])
        .env("HOOD_SHM_DIR", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let err = text(&out);
    assert!(err.contains("events lost: 0"), "{err}");
    assert!(!err.contains("not traced"), "{err}");
    let rep = hood()
        .args(["trace", "report", "--format", "json"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", text(&rep));
    serde_json::from_slice::<Value>(&rep.stdout).unwrap()["analysis"].clone()
}

fn trace_calls(a: &Value, name: &str) -> u64 {
    a["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .map_or(0, |f| f["calls"].as_u64().unwrap())
}

fn check_trace(a: &Value, threads: u64) {
    assert_eq!(trace_calls(a, "worker"), threads, "{a}");
    assert_eq!(trace_calls(a, "work"), threads * 100, "{a}");
    assert_eq!(trace_calls(a, "leaf"), threads * 100, "{a}");
    assert_eq!(
        a["threads"].as_array().unwrap().len() as u64,
        threads + 1,
        "every thread and main"
    );
}

#[test]
fn trace_measures_200_threads() {
    // One test at a time: thousands of threads on a machine of 2 CPUs.
    // (`common::exclusive()`: the one lock of every test of this binary that must run alone.)
    let _s = common::exclusive();
    let d = tempfile::tempdir().unwrap();
    check_trace(&trace(d.path(), 200, 1), 200);
}

/// 6,000 threads, more than the 2,048 slots: the slots of exited threads are given back.
#[test]
fn trace_measures_thread_churn_by_reusing_slots() {
    let _s = common::exclusive();
    let d = tempfile::tempdir().unwrap();
    check_trace(&trace(d.path(), 4, 1500), 6000);
}

/// `hood calls run -- threads_churn T R`: every call of every thread counted.
fn calls_run(t: u32, r: u32) {
    let _s = common::exclusive();
    let d = tempfile::tempdir().unwrap();
    let exe = instrumented("threads_churn", d.path(), &["-pthread"], &[]);
    let data = d.path().join("calls.data");
    let out = hood()
        .args(["calls", "run", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&exe)
        .args([t.to_string(), r.to_string()])
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("not measured"), "{}", text(&out));
    let rep = hood()
        .args(["calls", "report", "--format", "json", "-f"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", text(&rep));
    let doc: Value = serde_json::from_slice(&rep.stdout).unwrap();
    let rows = doc["processes"][0]["rows"].as_array().unwrap();
    let calls = |name: &str| {
        rows.iter()
            .find(|r| r["path"].as_array().unwrap().last().unwrap() == name)
            .map_or(0, |r| r["calls"].as_u64().unwrap())
    };
    let threads = (t * r) as u64;
    assert_eq!(calls("worker"), threads, "{doc}");
    assert_eq!(calls("work"), threads * 100, "{doc}");
    assert_eq!(calls("leaf"), threads * 100, "{doc}");
}

#[test]
fn calls_measures_200_threads() {
    calls_run(200, 1);
}

/// 6,000 threads, more than the 2,048 slots: `calls run` takes the tables of exited threads
/// and gives their slots back.
#[test]
fn calls_measures_thread_churn_by_reusing_slots() {
    calls_run(4, 1500);
}
