//! `hood report --by comm` (perf's `--sort comm`) on a real recording: two processes of one
//! name are one row with their count, `--by process` keeps them apart, and the top table under
//! `--comm` says whose functions it lists.

use crate::common;
use common::{hood, run, text};

#[test]
fn by_comm_joins_the_processes_of_one_name() {
    if !common::privileged("by_comm_joins_the_processes_of_one_name") {
        return;
    }
    let _lock = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("two.data");
    let spinner = common::c_program("spinner");
    let s = spinner.display();
    let out = common::record(
        &data,
        &[
            "-F",
            "999",
            "--",
            "sh",
            "-c",
            &format!("{s} 300 & {s} 300 & wait"),
        ],
    );
    assert!(out.status.success(), "record:\n{}", text(&out));
    let report = |args: &[&str]| {
        let out = run(hood().arg("report").arg("-i").arg(&data).args(args));
        assert!(out.status.success(), "report {args:?}:\n{}", text(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };

    let by_comm = report(&["--by", "comm", "--min-percent", "0"]);
    let rows: Vec<&str> = by_comm
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("spinner"))
        .collect();
    assert_eq!(rows.len(), 1, "one spinner row:\n{by_comm}");
    assert!(rows[0].ends_with("2 processes"), "{}", rows[0]);

    let by_process = report(&["--by", "process", "--min-percent", "0"]);
    let rows = by_process
        .lines()
        .filter(|l| l.contains(" spinner ("))
        .count();
    assert_eq!(rows, 2, "two spinner processes:\n{by_process}");

    let named = report(&["--comm", "spinner"]);
    assert!(
        named.contains("Highest-scoring functions, processes named spinner"),
        "{named}"
    );
    assert!(!named.contains("all processes"), "{named}");
}

/// `--by comm` is the process name (one row for the process, whatever its threads are
/// called); `--by thread-name` groups as perf's `--sort comm` does, by each thread's name.
#[test]
fn by_comm_is_the_process_name_and_by_thread_name_the_threads() {
    if !common::privileged("by_thread_name") {
        return;
    }
    let _lock = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("named.data");
    let prog = common::c_program("named_threads");
    let out = common::record(&data, &["--", prog.to_str().unwrap(), "800"]);
    assert!(out.status.success(), "record:\n{}", text(&out));
    let report = |args: &[&str]| {
        let out = run(hood().arg("report").arg("-i").arg(&data).args(args));
        assert!(out.status.success(), "report {args:?}:\n{}", text(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let rows = |t: &str, name: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.split_whitespace().nth(2) == Some(name))
            .map(str::to_string)
            .collect()
    };
    let by_comm = report(&["--by", "comm", "--min-percent", "0"]);
    let named = rows(&by_comm, "named_threads");
    assert_eq!(named.len(), 1, "{by_comm}");
    assert!(named[0].ends_with("  1 process"), "{}", named[0]);
    assert!(rows(&by_comm, "worker").is_empty(), "{by_comm}");

    let by_thread_name = report(&["--by", "thread-name", "--min-percent", "0"]);
    assert!(
        by_thread_name.contains("Samples by thread name"),
        "{by_thread_name}"
    );
    let workers = rows(&by_thread_name, "worker");
    assert_eq!(workers.len(), 1, "{by_thread_name}");
    assert!(
        workers[0].ends_with("  2 threads, 1 process"),
        "{}",
        workers[0]
    );
    let main = rows(&by_thread_name, "named_threads");
    assert_eq!(main.len(), 1, "{by_thread_name}");
    assert!(main[0].ends_with("  1 thread"), "{}", main[0]);
}

/// A shell loop running one program 20 times (a build's pattern, short processes): the
/// default report's top row is that program's function over all 20 processes, with their
/// number, not twenty rows of 5 %; `--by process` still splits them.
#[test]
fn the_default_profile_joins_many_short_processes_of_one_program() {
    if !common::privileged("default_joins_short_processes") {
        return;
    }
    let _lock = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("loop.data");
    let spinner = common::c_program("spinner");
    let s = spinner.display();
    let out = common::record(
        &data,
        &[
            "--",
            "sh",
            "-c",
            &format!(
                "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do {s} 40; done"
            ),
        ],
    );
    assert!(out.status.success(), "record:\n{}", text(&out));
    let report = |args: &[&str]| {
        let out = run(hood()
            .args(["report", "--width", "0", "-i"])
            .arg(&data)
            .args(args));
        assert!(out.status.success(), "report {args:?}:\n{}", text(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let def = report(&[]);
    let top = def
        .lines()
        .skip_while(|l| !l.starts_with("Highest-scoring functions, all processes"))
        .nth(2)
        .unwrap_or_else(|| panic!("no top table:\n{def}"));
    let pct: f64 = top
        .split_whitespace()
        .next()
        .and_then(|p| p.trim_end_matches('%').parse().ok())
        .unwrap_or(0.0);
    assert!(
        top.contains("spin_here") && top.ends_with("spinner (20 processes)") && pct >= 70.0,
        "top row: {top:?}\n{def}"
    );
    let by_process = report(&["--by", "process", "--min-percent", "0"]);
    assert_eq!(
        by_process
            .lines()
            .filter(|l| l.contains(" spinner ("))
            .count(),
        20,
        "{by_process}"
    );
}
