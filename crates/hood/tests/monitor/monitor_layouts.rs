//! Snapshot tests of the monitor's text layouts on a fixture /proc tree
//! (tests/fixtures/proc-small). Run with HOOD_BLESS=1 to rewrite the expected files after an
//! intended layout change, then review the diff.

use crate::common;

use common::*;

fn check(name: &str, args: &[&str]) {
    let root = repo().join("tests/fixtures/proc-small");
    let out = run(hood().args(args).arg("--proc-root").arg(&root));
    assert!(out.status.success(), "{}", text(&out));
    let mut got = String::from_utf8_lossy(&out.stdout).into_owned();
    if args[0] == "uptime" {
        // The wall clock is the only thing that is not from the fixture.
        got = got
            .trim_start()
            .split_once(' ')
            .map(|(_, rest)| rest.to_string())
            .unwrap_or(got);
    }
    let path = repo()
        .join("tests/fixtures/proc-small.expected")
        .join(format!("{name}.txt"));
    if std::env::var_os("HOOD_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        got,
        want,
        "layout of `hood {}` changed (HOOD_BLESS=1 rewrites {})",
        args.join(" "),
        path.display()
    );
}

#[test]
fn ps_layout() {
    check("ps", &["ps"]);
}

#[test]
fn ps_threads_of_one_task() {
    check("ps-t-42", &["ps", "-t", "42"]);
}

#[test]
fn ps_all_threads() {
    check("ps-a", &["ps", "-a"]);
}

/// `--interval` measured CPU use: the %CPU, %USR and %SYS columns show it.
#[test]
fn ps_with_interval_shows_what_it_measured() {
    check("ps-interval", &["ps", "--interval", "0.01"]);
}

#[test]
fn ps_load_and_cpus() {
    check("ps-l-c", &["ps", "-l", "-c"]);
}

#[test]
fn uptime_line() {
    check("uptime", &["uptime"]);
}

#[test]
fn info_nodes() {
    check("info-load", &["info", "system.load"]);
    check("info-task-42", &["info", "system.tasks.42"]);
    // Memory in binary units; `--json` keeps the raw byte counts.
    check("info-physmem", &["info", "system.physmem"]);
}

#[test]
fn info_json_keeps_raw_bytes_in_the_tree_order() {
    let root = repo().join("tests/fixtures/proc-small");
    let out = run(hood()
        .args(["info", "system.load", "--json", "--proc-root"])
        .arg(&root));
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    let keys: Vec<&str> = ["\"one\"", "\"five\"", "\"fifteen\""]
        .iter()
        .map(|k| s.find(k).map(|_| *k).unwrap_or("missing"))
        .collect();
    assert_eq!(keys, ["\"one\"", "\"five\"", "\"fifteen\""], "{s}");
    let pos = |k: &str| s.find(k).unwrap();
    assert!(
        pos("\"one\"") < pos("\"five\"") && pos("\"five\"") < pos("\"fifteen\""),
        "{s}"
    );
    let out = run(hood()
        .args(["info", "system.physmem", "--json", "--proc-root"])
        .arg(&root));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["schema_version"], 1, "{v}");
    assert_eq!(v["path"], "system.physmem", "{v}");
    assert_eq!(v["value"]["total"], 1_024_000_000u64, "{v}");
}
