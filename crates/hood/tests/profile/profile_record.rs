//! `hood record` + `hood report` on known-answer workloads, run for real.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::*;

#[test]
fn split_60_30_10_is_reported_within_5_points() {
    if !privileged("split_60_30_10") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("split.data");
    let prog = c_program("split");
    let out = record(&file, &["-F", "999", "--", prog.to_str().unwrap(), "1500"]);
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &[]);
    let leaves = leaf_counts(&stacks, "split");
    let get = |f: &str| *leaves.get(f).unwrap_or(&0) as f64;
    let total = get("work60") + get("work30") + get("work10");
    assert!(
        total > 200.0,
        "too few samples in the work functions: {leaves:?}"
    );
    for (f, want) in [("work60", 60.0), ("work30", 30.0), ("work10", 10.0)] {
        let got = 100.0 * get(f) / total;
        assert!(
            (got - want).abs() <= 5.0,
            "{f}: {got:.1}% (want {want}%) in {leaves:?}"
        );
    }
    // Call chains: the work functions are called from main.
    assert!(
        stacks
            .iter()
            .any(|(fr, _)| fr.ends_with(&["main".into(), "work60".into()])),
        "{stacks:?}"
    );
}

#[test]
fn collapsed_counts_add_up_to_the_recorded_samples() {
    if !privileged("collapsed_totals") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.data");
    let prog = c_program("spinner");
    let out = record(&file, &["--", prog.to_str().unwrap(), "400"]);
    assert!(out.status.success(), "{}", text(&out));
    let n = recorded_samples(&out.stderr);
    let sum: u64 = collapsed(&file, &["--min-percent", "0"])
        .iter()
        .map(|(_, c)| c)
        .sum();
    assert_eq!(sum, n);
    assert!(n > 50, "{n} samples");
}

#[test]
fn forked_child_is_followed_and_reported_as_its_own_process() {
    if !privileged("forked_child") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fork.data");
    let prog = c_program("forker");
    let out = record(&file, &["--", prog.to_str().unwrap(), "700"]);
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &[]);
    let kid = leaf_counts(&stacks, "hood_kid");
    let parent = leaf_counts(&stacks, "forker");
    assert!(*kid.get("child_work").unwrap_or(&0) > 50, "child: {kid:?}");
    assert!(
        *parent.get("parent_work").unwrap_or(&0) > 50,
        "parent: {parent:?}"
    );
    assert_eq!(kid.get("parent_work"), None);
}

#[test]
fn exit_status_of_the_command_is_returned() {
    if !privileged("exit_status") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let out = record(&dir.path().join("x.data"), &["--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
}

#[test]
fn command_not_found_is_a_clear_error() {
    if !privileged("command_not_found") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let out = record(
        &dir.path().join("x.data"),
        &["--", "no-such-command-hood-test"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("command not found: no-such-command-hood-test"));
}

#[test]
fn attach_to_a_running_pid() {
    if !privileged("attach_pid") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.data");
    let prog = c_program("spinner");
    let mut child = common::command(&prog).arg("3000").spawn().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let pid = child.id().to_string();
    let out = record(&file, &["-p", &pid, "-d", "1"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &[]);
    let leaves = leaf_counts(&stacks, "spinner");
    assert!(*leaves.get("spin_here").unwrap_or(&0) > 100, "{leaves:?}");
    assert!(
        stacks.iter().all(|(f, _)| f[0] == "spinner"),
        "only the attached process: {stacks:?}"
    );
}

#[test]
fn attach_to_a_missing_pid_fails_clearly() {
    if !privileged("attach_missing") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let out = record(&dir.path().join("x.data"), &["-p", "999999", "-d", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("999999"),
        "{}",
        text(&out)
    );
}

#[test]
fn system_wide_sees_a_workload_started_after_recording_began() {
    if !privileged("system_wide_late_start") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.data");
    // Built before the 2 s window opens: gcc on a loaded machine could outlast it.
    let prog = c_program("spinner");
    let rec = hood()
        .args(["record", "-a", "-d", "2", "-o"])
        .arg(&file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let st = common::command(&prog).arg("800").status().unwrap();
    assert!(st.success());
    let out = rec.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &[]);
    let leaves = leaf_counts(&stacks, "spinner");
    assert!(*leaves.get("spin_here").unwrap_or(&0) > 100, "{leaves:?}");
    // System-wide includes kernel frames (and the idle task when a CPU had nothing to do).
    assert!(
        stacks
            .iter()
            .any(|(f, _)| f.iter().any(|x| x.ends_with("_[k]"))),
        "no kernel frames in a system-wide recording"
    );
}

#[test]
fn read_heavy_workload_shows_kernel_read_path() {
    if !privileged("read_heavy_kernel") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.data");
    let prog = c_program("reader");
    let out = record(&file, &["--", prog.to_str().unwrap(), "1000"]);
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &[]);
    let total: u64 = stacks.iter().map(|(_, n)| n).sum();
    let kernel: u64 = stacks
        .iter()
        .filter(|(f, _)| f.last().is_some_and(|l| l.ends_with("_[k]")))
        .map(|(_, n)| n)
        .sum();
    assert!(kernel * 100 > total * 50, "kernel share {kernel}/{total}");
    let through_read = stacks
        .iter()
        .filter(|(f, _)| f.iter().any(|x| x.contains("read") && x.ends_with("_[k]")))
        .map(|(_, n)| n)
        .sum::<u64>();
    assert!(
        through_read * 100 > total * 50,
        "read path {through_read}/{total}: {stacks:?}"
    );
    let kernel_only = collapsed(&file, &["--kernel"]);
    assert!(kernel_only
        .iter()
        .all(|(f, _)| f.last().unwrap().ends_with("_[k]")));
}
