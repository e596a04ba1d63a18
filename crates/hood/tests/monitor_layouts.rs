//! Snapshot tests of the monitor's text layouts on a fixture /proc tree
//! (tests/fixtures/proc-small). Run with HOOD_BLESS=1 to rewrite the expected files after an
//! intended layout change, then review the diff.

mod common;

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
}
