//! A closed standard error or standard output (`hood calls run -- prog 2>&1 | true`) never stops
//! a recorder: its lines are dropped, the program still runs, the file is written and the exit
//! status is the program's. The message that crashed it (`removed DIR, left behind by a killed
//! recorder`) is provoked with a planted leftover directory.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common;
use common::{instrumented, runtime_release_dir, text};

fn hood() -> Command {
    let mut c = common::hood();
    c.env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"));
    c
}

/// The write end of a pipe whose reader has gone: every write to it fails (EPIPE).
fn broken_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    writer.into()
}

/// A directory a killed `hood calls run` left in `base` (its recorder and its process gone).
fn plant_leftover(base: &Path) -> std::path::PathBuf {
    let stale = base.join("hood-calls-run-4194305-77");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("hood-rt-4194306-1"), b"x").unwrap();
    stale
}

/// `hood ARGS -- trace_stream 1000 0` with standard output and error broken pipes.
fn run_with_closed_streams(base: &Path, args: &[&str]) -> Output {
    let exe = instrumented("trace_stream", base, &[], &[]);
    hood()
        .args(args)
        .arg("--")
        .arg(&exe)
        .args(["1000", "0"])
        .env("HOOD_SHM_DIR", base)
        .stdin(Stdio::null())
        .stdout(broken_pipe())
        .stderr(broken_pipe())
        .output()
        .expect("run hood")
}

fn json(args: &[&str], data: &Path) -> Value {
    let out = hood().args(args).arg(data).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn calls_run_with_closed_stdout_and_stderr_writes_its_file() {
    let d = tempfile::tempdir().unwrap();
    let stale = plant_leftover(d.path());
    let data = d.path().join("calls.data");
    let out = run_with_closed_streams(d.path(), &["calls", "run", "-o", data.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!stale.exists(), "the leftover directory is still there");
    let doc = json(&["calls", "report", "--format", "json", "-f"], &data);
    let rows = doc["processes"][0]["rows"].as_array().unwrap();
    let step = rows
        .iter()
        .find(|r| r["path"].as_array().unwrap().last().unwrap() == "step")
        .unwrap_or_else(|| panic!("no step: {doc}"));
    assert_eq!(step["calls"], 1000, "{doc}");
}

#[test]
fn trace_record_with_closed_stdout_and_stderr_writes_its_file() {
    let d = tempfile::tempdir().unwrap();
    let stale = plant_leftover(d.path());
    let data = d.path().join("trace.data");
    let out = run_with_closed_streams(d.path(), &["trace", "record", "-o", data.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!stale.exists(), "the leftover directory is still there");
    let a = json(&["trace", "report", "--format", "json"], &data);
    let step = a["analysis"]["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "step")
        .unwrap_or_else(|| panic!("no step: {a}"));
    assert_eq!(step["calls"], 1000, "{a}");
}
