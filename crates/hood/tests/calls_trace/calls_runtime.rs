//! Known-answer tests of hood-rt and `hood calls`: real C programs built with gcc
//! -finstrument-functions, run under `hood calls run` (LD_PRELOAD) or linked statically, and
//! the reported call counts and times checked against what the programs do by construction.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::common;
use common::instrumented;

fn hood() -> &'static str {
    env!("CARGO_BIN_EXE_hood")
}

struct Tmp(tempfile::TempDir, #[allow(dead_code)] common::Exclusive);

impl Tmp {
    fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Tests run one at a time: the accuracy test measures wall-clock own times, which parallel
/// tests on a 2-CPU machine would disturb. Each test holds this while it runs.
/// (`common::exclusive()`: the one lock of every test of this binary that must run alone.)
fn tmp() -> Tmp {
    let guard = common::exclusive();
    Tmp(tempfile::tempdir().expect("tempdir"), guard)
}

/// `hood calls run` in a private segment directory; returns the data file.
fn calls_run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let data = dir.join(format!(
        "calls-{}.data",
        args.len() + dir.read_dir().map(|d| d.count()).unwrap_or(0)
    ));
    let mut c = common::command(hood());
    c.args(["calls", "run", "-o"])
        .arg(&data)
        .arg("--")
        .args(args);
    c.env(
        "HOOD_RT_LIB",
        common::runtime_release_dir().join("libhood_rt.so"),
    )
    .env("HOOD_SHM_DIR", dir);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.stdout(Stdio::null()).output().expect("hood calls run");
    assert!(
        out.status.success(),
        "hood calls run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    data
}

fn report_json(data: &Path, extra: &[&str]) -> Value {
    let out = common::command(hood())
        .args(["calls", "report", "--format", "json", "--sort", "name"])
        .args(extra)
        .arg(data)
        .output()
        .expect("hood calls report");
    assert!(
        out.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// (path joined by spaces, tid) → (calls, msecs) of one process.
fn rows(p: &Value) -> Vec<(String, Option<u64>, u64, f64)> {
    p["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let path: Vec<&str> = r["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            (
                path.join(" "),
                r["tid"].as_u64(),
                r["calls"].as_u64().unwrap(),
                r["msecs"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn calls_of(p: &Value, path: &str) -> Option<u64> {
    rows(p).into_iter().find(|r| r.0 == path).map(|r| r.2)
}

fn process_by_exe<'a>(doc: &'a Value, exe_suffix: &str) -> Vec<&'a Value> {
    doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["exe"].as_str().unwrap().ends_with(exe_suffix))
        .collect()
}

#[test]
fn exact_call_counts_with_recursion() {
    let d = tmp();
    let exe = build_c("calls_known", d.path(), &[]);
    let data = calls_run(d.path(), &[exe.to_str().unwrap()], &[]);
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    let expect = [
        ("main", 1),
        ("main leaf", 3),
        ("main twice", 2),
        ("main twice leaf", 4),
        ("main fact", 1),
        ("main fact fact", 1),
        ("main fact fact fact fact fact", 1),
    ];
    for (path, n) in expect {
        assert_eq!(calls_of(p, path), Some(n), "path {path:?} in {:?}", rows(p));
    }
    assert_eq!(rows(p).len(), 9, "unexpected paths: {:?}", rows(p));
    assert_eq!(calls_of(p, "main fact fact fact fact fact fact"), None);
    // Per function: leaf is called 7 times in all, fact 5.
    let f = report_json(&data, &["-f"]);
    assert_eq!(calls_of(&f["processes"][0], "leaf"), Some(7));
    assert_eq!(calls_of(&f["processes"][0], "fact"), Some(5));
}

/// Median over many short runs of each path's own time. Own time is wall-clock time, so a
/// run preempted by another process (the CI machine is shared) inflates whichever path was
/// running; short runs keep that rare and the median ignores it.
fn abcd_medians(dir: &Path, exe: &Path, env: &[(&str, &str)]) -> [f64; 4] {
    let paths = ["main a", "main a b", "main a b d", "main a c"];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); 4];
    // 61 short runs spread over a few seconds: a burst of noise from the host (steal time on a
    // shared VM) then cannot cover half of them and move the median.
    for _ in 0..61 {
        let data = calls_run(dir, &[exe.to_str().unwrap(), "1000", "500"], env);
        let doc = report_json(&data, &[]);
        let r = rows(&doc["processes"][0]);
        for (i, p) in paths.iter().enumerate() {
            let row = r
                .iter()
                .find(|x| x.0 == *p)
                .unwrap_or_else(|| panic!("no path {p}: {r:?}"));
            assert_eq!(row.2, 500, "calls of {p}");
            samples[i].push(row.3);
        }
        std::fs::remove_file(data).ok();
    }
    let mut out = [0.0; 4];
    for (i, s) in samples.iter_mut().enumerate() {
        s.sort_by(f64::total_cmp);
        out[i] = s[s.len() / 2];
    }
    out
}

#[test]
fn abcd_identical_bodies_get_equal_own_times() {
    let d = tmp();
    let exe = build_c("calls_abcd", d.path(), &[]);
    let on = abcd_medians(d.path(), &exe, &[]);
    let off = abcd_medians(d.path(), &exe, &[("HOOD_COMPENSATE", "0")]);
    let mean = on.iter().sum::<f64>() / 4.0;
    eprintln!("a/b/d/c own ms, compensated:   {on:?}");
    eprintln!("a/b/d/c own ms, uncompensated: {off:?}");
    for (i, v) in on.iter().enumerate() {
        let dev = (v - mean) / mean;
        assert!(
            dev.abs() <= 0.05,
            "path {i} deviates {:.1}% from the mean: {on:?}",
            dev * 100.0
        );
    }
}

#[test]
fn threads_have_their_own_tables_and_merge() {
    let d = tmp();
    let exe = build_c("calls_threads", d.path(), &["-lpthread"]);
    let data = calls_run(d.path(), &[exe.to_str().unwrap(), "1000"], &[]);
    let merged = report_json(&data, &[]);
    let p = &merged["processes"][0];
    assert_eq!(p["threads"].as_array().unwrap().len(), 5);
    assert_eq!(calls_of(p, "thread_main"), Some(4));
    assert_eq!(calls_of(p, "thread_main work"), Some(4000));
    assert_eq!(calls_of(p, "thread_main work leaf"), Some(8000));
    let per = report_json(&data, &["--threads"]);
    let r = rows(&per["processes"][0]);
    let work: Vec<_> = r.iter().filter(|x| x.0 == "thread_main work").collect();
    assert_eq!(work.len(), 4, "{r:?}");
    assert!(work.iter().all(|x| x.2 == 1000 && x.1.is_some()));
}

#[test]
fn fork_gives_the_child_its_own_table_and_exec_starts_fresh() {
    let d = tmp();
    let exe = build_c("calls_fork", d.path(), &[]);
    let data = calls_run(d.path(), &[exe.to_str().unwrap()], &[]);
    let doc = report_json(&data, &[]);
    let procs = process_by_exe(&doc, "calls_fork");
    assert_eq!(procs.len(), 2, "{doc}");
    let parent = procs
        .iter()
        .find(|p| calls_of(p, "main parent_work").is_some())
        .expect("parent");
    let child = procs
        .iter()
        .find(|p| calls_of(p, "main child_work").is_some())
        .expect("child");
    assert_eq!(child["ppid"], parent["pid"]);
    assert_eq!(calls_of(parent, "main parent_work"), Some(5));
    assert_eq!(calls_of(parent, "main before"), Some(1));
    assert_eq!(calls_of(parent, "main child_work"), None);
    assert_eq!(calls_of(child, "main child_work"), Some(7));
    assert_eq!(
        calls_of(child, "main before"),
        None,
        "the child starts counting at fork"
    );

    let known = build_c("calls_known", d.path(), &[]);
    let data = calls_run(
        d.path(),
        &[exe.to_str().unwrap(), known.to_str().unwrap()],
        &[],
    );
    let doc = report_json(&data, &[]);
    let k = process_by_exe(&doc, "calls_known");
    assert_eq!(k.len(), 1, "{doc}");
    assert_eq!(calls_of(k[0], "main twice leaf"), Some(4));
    assert_eq!(calls_of(k[0], "main"), Some(1));
}

#[test]
fn longjmp_out_of_nested_calls_is_repaired() {
    let d = tmp();
    let exe = build_c("calls_longjmp", d.path(), &[]);
    let data = calls_run(d.path(), &[exe.to_str().unwrap()], &[]);
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    assert_eq!(calls_of(p, "main outer"), Some(10));
    assert_eq!(
        calls_of(p, "main outer after"),
        Some(10),
        "after() must nest under outer: {:?}",
        rows(p)
    );
    assert_eq!(calls_of(p, "main outer inner inner inner"), Some(10));
    assert_eq!(calls_of(p, "main outer inner inner inner after"), None);
    let w = p["warnings"].to_string();
    assert!(w.contains("30 exits did not match"), "{w}");
}

/// Own milliseconds per function (the last element of each path), summed over its paths.
fn own_ms_of(p: &Value, func: &str) -> f64 {
    rows(p)
        .iter()
        .filter(|r| r.0.rsplit(' ').next() == Some(func))
        .map(|r| r.3)
        .sum()
}

#[test]
fn frames_left_by_longjmp_keep_their_own_time() {
    // catcher() setjmps, dive() recurses 65 calls deep, burn() spins 40 ms at the bottom and
    // longjmps back to catcher(); then shallow() spins 40 ms. Five rounds.
    // Built plain (longjmp) and with _FORTIFY_SOURCE (__longjmp_chk), as distributions build.
    let d = tmp();
    let plain = build_c("calls_longjmp_time", d.path(), &[]);
    let fortified = d.path().join("fortified");
    std::fs::create_dir(&fortified).unwrap();
    let fortified = instrumented(
        "calls_longjmp_time",
        &fortified,
        &["-D_FORTIFY_SOURCE=2"],
        &[],
    );
    for exe in [plain, fortified] {
        longjmp_own_times_add_up(d.path(), &exe);
    }
}

fn longjmp_own_times_add_up(dir: &Path, exe: &Path) {
    let data = calls_run(dir, &[exe.to_str().unwrap(), "40", "5"], &[]);
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    let calls = |f: &str| -> u64 {
        rows(p)
            .iter()
            .filter(|r| r.0.rsplit(' ').next() == Some(f))
            .map(|r| r.2)
            .sum()
    };
    assert_eq!(
        (
            calls("catcher"),
            calls("dive"),
            calls("burn"),
            calls("shallow")
        ),
        (5, 325, 5, 5),
        "{:?}",
        rows(p)
    );
    let w = p["warnings"].to_string();
    assert!(w.contains("330 exits did not match"), "{w}");
    let (burn, shallow, catcher) = (
        own_ms_of(p, "burn"),
        own_ms_of(p, "shallow"),
        own_ms_of(p, "catcher"),
    );
    let total: f64 = rows(p).iter().map(|r| r.3).sum();
    eprintln!("own ms: burn {burn:.1} shallow {shallow:.1} catcher {catcher:.1} all {total:.1}");
    // burn's spin is burn's own time, not the setjmp frame's; the two spins are equal.
    assert!(
        catcher < 0.2 * burn,
        "the setjmp frame was charged for the unwound frames: catcher {catcher} ms, burn {burn} ms"
    );
    assert!(
        (0.5..2.0).contains(&(burn / shallow)),
        "burn {burn} vs shallow {shallow}"
    );
    // Nothing is counted twice: own times add up to the two spins and a little more.
    assert!(
        total < 1.25 * (burn + shallow),
        "own times sum to {total} ms for {} ms of spinning",
        burn + shallow
    );
}

#[test]
fn tiny_limits_set_overrun_flags_and_program_keeps_running() {
    let d = tmp();
    let exe = build_c("calls_known", d.path(), &[]);
    let data = calls_run(
        d.path(),
        &[exe.to_str().unwrap()],
        &[("HOOD_MAX_PATHS", "4")],
    );
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    let flags = p["flags"].as_u64().unwrap();
    assert!(flags & 0x4 != 0, "table overrun flag: {p}");
    let w = p["warnings"].to_string();
    assert!(w.contains("path table full"), "{w}");
    // Calls that found no room are charged to <lost paths>, not dropped.
    let total: u64 = rows(p).iter().map(|r| r.2).sum();
    assert_eq!(total, 15, "{:?}", rows(p));
    assert_eq!(
        calls_of(p, "<lost paths>"),
        Some(9),
        "main twice leaf x4 + fact x5"
    );

    let data = calls_run(
        d.path(),
        &[exe.to_str().unwrap()],
        &[("HOOD_MAX_PATH_LEN", "3")],
    );
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    assert!(
        p["flags"].as_u64().unwrap() & 0x1 != 0,
        "path overrun flag: {p}"
    );
    // fact(5) from main: fact at depths 2..6; the three beyond 3 are folded onto
    // "main fact fact" with their calls kept.
    assert_eq!(calls_of(p, "main fact fact"), Some(4));
    assert_eq!(
        calls_of(p, "main fact fact fact"),
        None,
        "deeper calls are folded"
    );
    let w = p["warnings"].to_string();
    assert!(
        w.contains("1 call paths grew longer than 3 functions"),
        "{w}"
    );
    assert!(w.contains("their 3 deeper calls"), "{w}");

    let data = calls_run(
        d.path(),
        &[exe.to_str().unwrap()],
        &[("HOOD_MAX_DEPTH", "3")],
    );
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    assert!(
        p["flags"].as_u64().unwrap() & 0x2 != 0,
        "stack overrun flag: {p}"
    );
    assert_eq!(calls_of(p, "main fact fact"), Some(1));
    assert_eq!(calls_of(p, "main fact fact fact"), None);
    assert_eq!(calls_of(p, "main twice leaf"), Some(4));
}

/// Issue 13: a path longer than HOOD_MAX_PATH_LEN is folded with its calls kept. rec() 300
/// deep, 4 times, under a limit of 50: every one of the 1,200 calls of rec is counted, no path
/// is longer than 50, and the note says 4 paths were folded with 4 x 251 deeper calls.
#[test]
fn long_paths_are_folded_with_their_calls_kept() {
    let d = tmp();
    let exe = build_c("calls_deep", d.path(), &[]);
    let data = calls_run(
        d.path(),
        &[exe.to_str().unwrap(), "300", "4"],
        &[("HOOD_MAX_PATH_LEN", "50")],
    );
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    let rows = rows(p);
    let rec: u64 = rows
        .iter()
        .filter(|r| r.0.ends_with("rec"))
        .map(|r| r.2)
        .sum();
    assert_eq!(rec, 1200, "{rows:?}");
    assert_eq!(calls_of(p, "main"), Some(1));
    let longest = rows.iter().map(|r| r.0.split(' ').count()).max().unwrap();
    assert_eq!(longest, 50, "{rows:?}");
    // The path of 50 functions holds its own 4 calls and the 4 x 251 folded ones.
    let cut = format!("main{}", " rec".repeat(49));
    assert_eq!(calls_of(p, &cut), Some(4 + 1004), "{rows:?}");
    let w = p["warnings"].to_string();
    assert!(
        w.contains("4 call paths grew longer than 50 functions")
            && w.contains("their 1004 deeper calls"),
        "{w}"
    );
    // The text report states it too.
    let out = common::command(hood())
        .args(["calls", "report"])
        .arg(&data)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("4 call paths grew longer than 50 functions"),
        "{text}"
    );
}

/// Issue 13: recursion 20,000 deep with the default limits. Every call is counted (the stack
/// holds 65,536 frames; its memory is committed only as deep as the program goes: the
/// segment's allocated size stays far below its 65,536-frame stacks), and paths past 256
/// functions are folded with their calls kept.
#[test]
fn recursion_20000_deep_counts_every_call() {
    let d = tmp();
    let exe = build_c("calls_deep", d.path(), &[]);
    let data = calls_run(d.path(), &[exe.to_str().unwrap(), "20000", "2"], &[]);
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    let rows = rows(p);
    let rec: u64 = rows
        .iter()
        .filter(|r| r.0.ends_with("rec"))
        .map(|r| r.2)
        .sum();
    assert_eq!(rec, 40_000, "{rows:?}");
    assert_eq!(calls_of(p, "main"), Some(1));
    assert_eq!(
        p["flags"].as_u64().unwrap() & 0x2,
        0,
        "no stack overrun: {p}"
    );
    let w = p["warnings"].to_string();
    assert!(
        w.contains("2 call paths grew longer than 256 functions")
            && w.contains(&format!("their {} deeper calls", 2 * (20_000 - 255))),
        "{w}"
    );
    // Stack memory is committed as deep as the program goes: run with the runtime preloaded
    // (the segment stays), 100 and 20,000 deep. The segment reserves 2048 threads x 65,536
    // frames (5.4 GB) of stack; what is allocated grows by ~40 bytes per frame reached.
    let mut allocated = Vec::new();
    for depth in ["100", "20000"] {
        let dir = tempfile::tempdir().unwrap();
        let st = common::command(&exe)
            .args([depth, "1"])
            .env(
                "LD_PRELOAD",
                common::runtime_release_dir().join("libhood_rt.so"),
            )
            .env("HOOD_SHM_DIR", dir.path())
            .status()
            .unwrap();
        assert!(st.success());
        let seg = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("hood-rt-"))
            .expect("segment");
        use std::os::unix::fs::MetadataExt;
        let md = seg.metadata().unwrap();
        assert!(md.len() > 64 * 65_536 * 40, "{} bytes", md.len());
        allocated.push(md.blocks() * 512);
    }
    let grew = allocated[1] - allocated[0];
    assert!(
        allocated[0] < 4 << 20 && (19_900 * 40..=20_000 * 40 + (64 << 10)).contains(&grew),
        "allocated {allocated:?}"
    );
}

#[test]
fn static_linking_works() {
    let d = tmp();
    let lib = common::runtime_release_dir().join("libhood_rt.a");
    let exe = build_c(
        "calls_known",
        d.path(),
        &[lib.to_str().unwrap(), "-lpthread", "-ldl", "-lm"],
    );
    let out = common::command(&exe)
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .expect("run");
    assert!(out.status.success());
    let data = d.path().join("static.data");
    let out = common::command(hood())
        .args(["calls", "get", "-o"])
        .arg(&data)
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .expect("get");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = report_json(&data, &[]);
    assert_eq!(calls_of(&doc["processes"][0], "main twice leaf"), Some(4));
    // The exited process's segment was removed after collection.
    let left = std::fs::read_dir(d.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("hood-rt-")
        })
        .count();
    assert_eq!(left, 0);
}

#[test]
fn reset_between_phases_shows_only_the_second() {
    use std::io::{BufRead, BufReader, Write};
    let d = tmp();
    let exe = build_c("calls_phases", d.path(), &[]);
    let mut child = common::command(&exe)
        .env(
            "LD_PRELOAD",
            common::runtime_release_dir().join("libhood_rt.so"),
        )
        .env("HOOD_SHM_DIR", d.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.id().to_string();
    // While the program waits: get shows phase 1 with main running.
    let mid = d.path().join("mid.data");
    let st = common::command(hood())
        .args(["calls", "get", "-p", &pid, "-o"])
        .arg(&mid)
        .env("HOOD_SHM_DIR", d.path())
        .status()
        .unwrap();
    assert!(st.success());
    let doc = report_json(&mid, &[]);
    let p = &doc["processes"][0];
    assert_eq!(calls_of(p, "main phase one"), Some(10));
    assert!(rows(p).iter().any(|r| r.0 == "main") && p["state"] == "running");
    let main_running = doc["processes"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["path"] == serde_json::json!(["main"]) && r["running"] == true);
    assert!(main_running, "main must be reported as running: {p}");
    let st = common::command(hood())
        .args(["calls", "reset", "-p", &pid])
        .env("HOOD_SHM_DIR", d.path())
        .status()
        .unwrap();
    assert!(st.success());
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
    let end = d.path().join("end.data");
    let st = common::command(hood())
        .args(["calls", "get", "-p", &pid, "-o"])
        .arg(&end)
        .env("HOOD_SHM_DIR", d.path())
        .status()
        .unwrap();
    assert!(st.success());
    let doc = report_json(&end, &[]);
    let p = &doc["processes"][0];
    assert_eq!(
        calls_of(p, "main phase one"),
        None,
        "phase 1 must be gone: {:?}",
        rows(p)
    );
    assert_eq!(calls_of(p, "main phase two"), Some(20));
    assert_eq!(calls_of(p, "main phase"), Some(1));
}

#[test]
fn corrupt_segments_are_skipped_with_a_warning() {
    let d = tmp();
    std::fs::write(d.path().join("hood-rt-1-1"), b"garbage, not a segment").unwrap();
    let mut bad = vec![0u8; 8192];
    bad[..8].copy_from_slice(&hood_abi_magic());
    bad[8..12].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(d.path().join("hood-rt-2-2"), &bad).unwrap();
    let exe = build_c("calls_known", d.path(), &[]);
    let out = common::command(&exe)
        .env(
            "LD_PRELOAD",
            common::runtime_release_dir().join("libhood_rt.so"),
        )
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let data = d.path().join("c.data");
    let out = common::command(hood())
        .args(["calls", "get", "--keep", "-o"])
        .arg(&data)
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hood-rt-1-1") && err.contains("hood-rt-2-2"),
        "{err}"
    );
    assert!(err.contains("version 99"), "{err}");
    let doc = report_json(&data, &[]);
    assert_eq!(doc["processes"].as_array().unwrap().len(), 1);
}

fn hood_abi_magic() -> [u8; 8] {
    *b"HOODSEG\0"
}

#[test]
fn uninstrumented_program_is_unaffected() {
    let d = tmp();
    let out = common::command(hood())
        .args(["calls", "run", "-o"])
        .arg(d.path().join("x.data"))
        .args(["--", "sh", "-c", "exit 3"])
        .env(
            "HOOD_RT_LIB",
            common::runtime_release_dir().join("libhood_rt.so"),
        )
        .env("HOOD_SHM_DIR", d.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "exit status of the child is passed on"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no call-path tables"));
}

/// The calls workloads, aligned so that identical bodies cost the same.
fn build_c(name: &str, dir: &Path, libs: &[&str]) -> PathBuf {
    instrumented(
        name,
        dir,
        &["-falign-functions=64", "-falign-loops=64"],
        libs,
    )
}

/// The Lua 5.4 sources of the lua-src crate (a dev-dependency, so cargo has them).
fn lua_sources() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = common::command(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(common::repo())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata json");
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "lua-src")
        .and_then(|p| p["manifest_path"].as_str())
        .expect("lua-src in cargo metadata");
    Path::new(manifest).parent().unwrap().join("lua-5.4.7")
}

/// A Lua 5.4.7 interpreter built from those sources with -O2 -g -finstrument-functions, with
/// bench/trace/lua_main.c as its main (runs SCRIPT with ARG set). Its two sources of chance are
/// fixed, so two runs make the same calls: the string-hash seed (time and addresses) and
/// table.sort's pivot (clock and time).
fn build_lua(dir: &Path) -> PathBuf {
    let src = lua_sources();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("lua sources")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    files.sort();
    files.push(common::repo().join("bench/trace/lua_main.c"));
    let exe = dir.join("lua");
    let st = common::command("gcc")
        .args(["-O2", "-g", "-finstrument-functions", "-DLUA_USE_LINUX"])
        .args(["-Dluai_makeseed(L)=0u", "-Dl_randomizePivot()=0u"])
        .arg("-I")
        .arg(&src)
        .args(&files)
        .arg("-o")
        .arg(&exe)
        .args(["-lm", "-ldl"])
        .status()
        .expect("gcc");
    assert!(st.success(), "building Lua from {}", src.display());
    exe
}

/// Calls per function name of the independent counter's output, named with `nm`.
fn counted_calls(exe: &Path, counts: &Path) -> std::collections::HashMap<String, u64> {
    let nm = common::command("nm")
        .args(["--defined-only"])
        .arg(exe)
        .output()
        .expect("nm");
    let mut names = std::collections::HashMap::new();
    for line in String::from_utf8_lossy(&nm.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [addr, kind, name] = f[..] {
            if matches!(kind, "t" | "T") {
                names.insert(u64::from_str_radix(addr, 16).unwrap(), name.to_string());
            }
        }
    }
    let text = std::fs::read_to_string(counts).expect("counter output");
    assert!(
        !text.contains("table full"),
        "the counter's table overflowed"
    );
    let mut calls = std::collections::HashMap::new();
    for line in text.lines() {
        let (off, n) = line.split_once(' ').expect("OFFSET COUNT");
        let off = u64::from_str_radix(off, 16).unwrap();
        let name = names
            .get(&off)
            .unwrap_or_else(|| panic!("no symbol at {off:#x}"));
        *calls.entry(name.clone()).or_insert(0) += n.parse::<u64>().unwrap();
    }
    calls
}

#[test]
fn lua_errors_keep_every_call_and_honest_own_times() {
    // Lua's errors are longjmps out of luaD_throw, past up to ~1,500 traced C frames (errors.lua
    // recurses through pcall). Every function's calls must equal those of an independent counter
    // preloaded into the same binary, and own times must add up to no more than the run: the
    // frame that called setjmp (luaD_rawrunprotected) used to be charged for all unwound frames.
    let d = tmp();
    let lua = build_lua(d.path());
    let script = common::repo().join("tests/lua/errors.lua");
    let counter = instrumented("count_hooks", d.path(), &["-shared", "-fPIC"], &["-ldl"]);
    let counts = d.path().join("counts.txt");
    let out = common::command(&lua)
        .arg(&script)
        .arg("2000")
        .env("LD_PRELOAD", &counter)
        .env("COUNT_HOOKS_OUT", &counts)
        .output()
        .expect("lua under the counter");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let thrown: u64 = printed.split_whitespace().next().unwrap().parse().unwrap();
    let expected = counted_calls(&lua, &counts);
    assert_eq!(expected.get("luaD_throw"), Some(&thrown), "{printed}");

    let started = std::time::Instant::now();
    // Paths past 1,024 functions are folded (their calls kept): the warning shows the errors
    // were thrown that deep.
    let data = calls_run(
        d.path(),
        &[lua.to_str().unwrap(), script.to_str().unwrap(), "2000"],
        &[("HOOD_MAX_PATH_LEN", "1024")],
    );
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    let doc = report_json(&data, &[]);
    let p = &doc["processes"][0];
    let mut got: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for (path, _, calls, _) in rows(p) {
        let f = path.rsplit(' ').next().unwrap().to_string();
        *got.entry(f).or_insert(0) += calls;
    }
    let mut differ: Vec<String> = expected
        .iter()
        .filter(|(f, n)| got.get(*f) != Some(n))
        .map(|(f, n)| format!("{f}: counter {n}, hood {:?}", got.get(f)))
        .collect();
    differ.sort();
    assert!(
        differ.is_empty(),
        "{} functions differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
    assert_eq!(
        got.values().sum::<u64>(),
        expected.values().sum::<u64>(),
        "hood has functions the counter never saw"
    );
    let w = p["warnings"].to_string();
    assert!(w.contains("exits did not match"), "{w}");
    assert!(w.contains("grew longer than 1024 functions"), "{w}");

    let total: f64 = rows(p).iter().map(|r| r.3).sum();
    let protected = own_ms_of(p, "luaD_rawrunprotected");
    eprintln!(
        "{} calls; own ms: all {total:.1}, luaD_rawrunprotected {protected:.1}; run {wall_ms:.1} ms",
        got.values().sum::<u64>()
    );
    assert!(
        total <= wall_ms,
        "own times sum to {total:.1} ms in a {wall_ms:.1} ms run"
    );
    assert!(
        protected < 0.1 * total,
        "luaD_rawrunprotected owns {protected:.1} of {total:.1} ms"
    );
}
