//! Reports that read right without the docs (issue 15, item 7): a recording without samples
//! is small and says why it is empty; the sample rate of a command is per running thread, so
//! a single-threaded target does not read like lost samples.

use std::process::Stdio;

use crate::common;
use common::{hood, run, text};

#[test]
fn a_recording_without_samples_is_small_and_says_why() {
    // As root kernel code is sampled, and the kernel's symbols (about 1 MB compressed) were
    // stored whether or not a sample came.
    let dir = tempfile::tempdir().unwrap();
    let mut sleeper = common::command("sleep")
        .arg("30")
        .stdout(Stdio::null())
        .spawn()
        .expect("sleep");
    let pid = sleeper.id().to_string();
    let file = dir.path().join("empty.data");
    let _lock = common::exclusive();
    let out = run(hood()
        .args(["record", "-p", &pid, "-d", "0.3", "-o"])
        .arg(&file));
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hood: no samples:"), "{err}");
    let size = std::fs::metadata(&file).expect("written").len();
    assert!(
        size <= 100 * 1024,
        "a recording without samples is {size} bytes"
    );
    // It still reads.
    let rep = run(hood().arg("report").arg("-i").arg(&file));
    let shown = String::from_utf8_lossy(&rep.stdout).into_owned();
    assert!(
        shown
            .lines()
            .any(|l| l.trim() == "Total samples:          0"),
        "{shown}"
    );
}

#[test]
fn a_single_threaded_command_gets_its_rate_per_running_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.data");
    let prog = common::c_program("split");
    let _lock = common::exclusive();
    let out = common::record(&file, &["--", prog.to_str().unwrap(), "300"]);
    assert!(out.status.success(), "{}", text(&out));
    let rep = run(hood().args(["report", "--format", "json", "-i"]).arg(&file));
    let v: serde_json::Value = serde_json::from_slice(&rep.stdout).expect("json");
    let (per_cpu, per_thread, cpus) = (
        v["achieved_hz_per_cpu"].as_f64().expect("per cpu"),
        v["achieved_hz_per_thread"].as_f64().expect("per thread"),
        v["cpus"].as_f64().expect("cpus"),
    );
    let idle = v["totals"]["idle"].as_u64().expect("idle");
    if idle == 0 {
        // One thread ran at a time: its rate is the per-CPU rate times the CPUs.
        assert!(
            (per_thread - per_cpu * cpus).abs() < 0.01 * per_thread.max(1.0),
            "per thread {per_thread}, per CPU {per_cpu} x {cpus}"
        );
    }
    let txt = run(hood().arg("report").arg("-i").arg(&file));
    let s = String::from_utf8_lossy(&txt.stdout);
    let line = s
        .lines()
        .find(|l| l.starts_with("Sample rate:"))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(
        line.contains("Hz per running thread (asked 999 Hz)") && line.ends_with(" / 1 thread"),
        "{line}"
    );
    assert!(!line.contains("per CPU"), "{line}");
}
