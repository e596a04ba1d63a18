//! Root's terminal must not be taken over (issue 29, R3): a process whose name and command
//! line hold escape sequences and a newline, running a function whose symbol holds them too,
//! is recorded and reported (`report`, `annotate`, `calls report`, `trace report`), and listed
//! by `hood ps`, `hood top -b` and `hood info`. No
//! control character reaches standard output raw (it would set the window title, clear the
//! screen or, as a newline, forge a row); each shows escaped, so the name is still there.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// What the planted names hold: an OSC title sequence, a screen clear, a carriage return and
/// a newline followed by text that would pass for a row.
const COMM: &str = "x\u{1b}]0;T\u{7}\n9 f"; // 15 bytes at most: the kernel's comm
const ARG: &str = "\u{1b}[2J\r\n 99.9%  FORGED-ARG";
const SYMBOL: &str = "evil\u{1b}]0;pwned\u{7}\u{9b}31m\nFORGED-FN";

/// Spins in `spin` for the seconds given as argv[1], under the name set with PR_SET_NAME;
/// `spin` is renamed to SYMBOL after the build (objcopy).
const SRC: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
static double now(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9;
}
__attribute__((noinline)) unsigned long spin(double secs) {
    volatile unsigned long x = 0;
    double end = now() + secs;
    while (now() < end) for (int i = 0; i < 100000; i++) x += i;
    return x;
}
int main(int argc, char **argv) {
    prctl(PR_SET_NAME, (unsigned long)getenv("EVIL_COMM"), 0, 0, 0);
    return (int)(spin(argc > 1 ? atof(argv[1]) : 0.5) & 1);
}
"#;

/// The workload in `dir`, `spin` renamed to SYMBOL; `flags` added to gcc's.
fn build_with(dir: &Path, flags: &[&str]) -> PathBuf {
    let src = dir.join("evil.c");
    std::fs::write(&src, SRC).unwrap();
    let plain = dir.join("evil.o0");
    let st = common::command("gcc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer"])
        .args(flags)
        .arg("-o")
        .arg(&plain)
        .arg(&src)
        .status()
        .expect("gcc must be installed to build the test workload");
    assert!(st.success(), "gcc failed");
    let prog = dir.join("evil");
    let st = common::command("objcopy")
        .arg(format!("--redefine-sym=spin={SYMBOL}"))
        .arg(&plain)
        .arg(&prog)
        .status()
        .expect("objcopy (binutils) must be installed");
    assert!(st.success(), "objcopy failed");
    prog
}

fn build(dir: &Path) -> PathBuf {
    build_with(dir, &[])
}

/// The first control character (C0 other than the line ends of rows, DEL, C1) in `out`,
/// or a byte that is not UTF-8.
fn raw_control(out: &[u8]) -> Option<String> {
    let s = match std::str::from_utf8(out) {
        Ok(s) => s,
        Err(e) => return Some(format!("invalid UTF-8 at byte {}", e.valid_up_to())),
    };
    s.char_indices()
        .find(|&(_, c)| (c.is_control() && c != '\n') || ('\u{80}'..='\u{9f}').contains(&c))
        .map(|(i, c)| format!("{c:?} at byte {i}: {:?}", &s[i.saturating_sub(40)..i]))
}

/// Output is safe: no raw control character, and no line that a planted newline began.
fn assert_safe(what: &str, out: &[u8]) {
    if let Some(bad) = raw_control(out) {
        panic!(
            "{what}: raw control character {bad}\n{}",
            String::from_utf8_lossy(out)
        );
    }
    let s = String::from_utf8_lossy(out);
    for line in s.lines() {
        let t = line.trim_start();
        assert!(
            !t.starts_with("FORGED") && !t.starts_with("99.9%") && !t.starts_with("9 f"),
            "{what}: a planted newline began a row: {line:?}\n{s}"
        );
    }
}

fn run_ok(what: &str, cmd: &mut Command) -> Vec<u8> {
    let out = run(cmd);
    assert!(out.status.success(), "{what} failed:\n{}", text(&out));
    assert_safe(&format!("{what} (stderr)"), &out.stderr);
    out.stdout
}

#[test]
fn planted_names_reach_the_profile_reports_escaped() {
    if !privileged("planted_names_reach_the_profile_reports_escaped") {
        return;
    }
    let _g = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path());
    let data = dir.path().join("evil.hood");
    let out = run(hood()
        .arg("record")
        .arg("-o")
        .arg(&data)
        .arg("--")
        .arg(&prog)
        .arg("0.6")
        .arg(ARG)
        .env("EVIL_COMM", COMM));
    assert!(out.status.success(), "record failed:\n{}", text(&out));
    assert_safe("hood record (stderr)", &out.stderr);

    let report = |args: &[&str]| {
        let what = format!("hood report {}", args.join(" "));
        let stdout = run_ok(&what, hood().arg("report").arg("-i").arg(&data).args(args));
        assert_safe(&what, &stdout);
        String::from_utf8(stdout).unwrap()
    };
    let text = report(&[]);
    // The names are all still there, escaped.
    assert!(
        text.contains("evil\\x1b]0;pwned\\x07\\u{9b}31m\\nFORGED-FN"),
        "the function is not shown escaped:\n{text}"
    );
    assert!(
        text.contains("x\\x1b]0;T\\x07\\n9 f"),
        "the process is not shown escaped:\n{text}"
    );
    assert!(
        text.contains("\\x1b[2J\\r\\n 99.9%  FORGED-ARG"),
        "the command line is not shown escaped:\n{text}"
    );
    for args in [
        &["--by", "process"][..],
        &["--by", "thread"],
        &["--by", "comm"],
        &["--by", "dso"],
        &["--by", "line"],
        &["--call-graph", "caller"],
        &["--call-graph", "callee"],
        &["--comm", COMM],
    ] {
        report(args);
    }
    let stdout = run_ok(
        "hood annotate",
        hood().arg("annotate").arg(SYMBOL).arg("-i").arg(&data),
    );
    assert_safe("hood annotate", &stdout);
    assert!(String::from_utf8_lossy(&stdout).contains("FORGED-FN"));
}

/// The workload, alive with its planted name, until dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(prog: &Path) -> Running {
    let child = common::command(prog)
        .arg("30")
        .arg(ARG)
        .env("EVIL_COMM", COMM)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let r = Running(child);
    let comm = format!("/proc/{pid}/comm");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&comm).unwrap_or_default() != format!("{COMM}\n") {
        assert!(Instant::now() < deadline, "the workload never set its name");
        std::thread::sleep(Duration::from_millis(10));
    }
    r
}

#[test]
fn planted_names_reach_the_monitor_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path());
    let w = start(&prog);
    let pid = w.0.id().to_string();
    let name = "x\\x1b]0;T\\x07\\n9 f";
    let cmdline = "\\x1b[2J\\r\\n 99.9%  FORGED-ARG";
    let info = format!("system.tasks.{pid}");
    for (args, shown) in [
        (&["ps"][..], name),
        (&["ps", "-f"], cmdline),
        (&["ps", "-a"], name),
        (&["ps", "-t", &pid], name),
        (&["top", "-b", "-n", "1"], name),
        (&["top", "-b", "-n", "1", "-H"], name),
        (&["info", &info], name),
        (&["info", &info], cmdline),
    ] {
        let what = format!("hood {}", args.join(" "));
        let stdout = run_ok(&what, hood().args(args));
        assert_safe(&what, &stdout);
        assert!(
            String::from_utf8_lossy(&stdout).contains(shown),
            "{what} does not show {shown:?}:\n{}",
            String::from_utf8_lossy(&stdout)
        );
    }
    // JSON keeps the name whole, escaped by JSON itself.
    let stdout = run_ok("hood ps --json", hood().args(["ps", "--json"]));
    assert!(raw_control(&stdout).is_none());
    let v: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let names: Vec<&str> = v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&COMM), "{names:?}");
}

#[test]
fn planted_names_reach_the_call_path_and_trace_reports_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = build_with(d, &["-finstrument-functions"]);
    let lib = runtime_release_dir().join("libhood_rt.so");
    let fn_escaped = "evil\\x1b]0;pwned\\x07\\u{9b}31m\\nFORGED-FN";

    let out = run(hood()
        .args(["calls", "run", "-o", "calls.data", "--"])
        .arg(&prog)
        .args(["0.2", ARG])
        .env("EVIL_COMM", COMM)
        .env("HOOD_RT_LIB", &lib)
        .env("HOOD_SHM_DIR", d)
        .current_dir(d));
    assert!(out.status.success(), "calls run failed:\n{}", text(&out));
    assert_safe("hood calls run (stderr)", &out.stderr);
    for args in [&[][..], &["--functions"], &["--threads", "--full-paths"]] {
        let what = format!("hood calls report {}", args.join(" "));
        let stdout = run_ok(
            &what,
            hood()
                .args(["calls", "report", "calls.data"])
                .args(args)
                .current_dir(d),
        );
        assert_safe(&what, &stdout);
        assert!(
            String::from_utf8_lossy(&stdout).contains(fn_escaped),
            "{what} does not show the function escaped:\n{}",
            String::from_utf8_lossy(&stdout)
        );
    }

    let out = run(hood()
        .args(["trace", "record", "-o", "trace.data", "--"])
        .arg(&prog)
        .args(["0.05", ARG])
        .env("EVIL_COMM", COMM)
        .env("HOOD_RT_LIB", &lib)
        .current_dir(d));
    assert!(out.status.success(), "trace record failed:\n{}", text(&out));
    assert_safe("hood trace record (stderr)", &out.stderr);
    for args in [&[][..], &["--paths"]] {
        let what = format!("hood trace report {}", args.join(" "));
        let stdout = run_ok(
            &what,
            hood()
                .args(["trace", "report", "trace.data"])
                .args(args)
                .current_dir(d),
        );
        assert_safe(&what, &stdout);
        assert!(
            String::from_utf8_lossy(&stdout).contains(fn_escaped),
            "{what} does not show the function escaped:\n{}",
            String::from_utf8_lossy(&stdout)
        );
    }
}
