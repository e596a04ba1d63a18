//! `hood report --by comm` (perf's `--sort comm`) on a real recording: two processes of one
//! name are one row with their count, `--by process` keeps them apart, and the top table under
//! `--comm` says whose functions it lists.

mod common;
use common::{hood, run, text};

#[test]
fn by_comm_joins_the_processes_of_one_name() {
    if !common::privileged("by_comm_joins_the_processes_of_one_name") {
        return;
    }
    let _lock = common::perf_lock();
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
