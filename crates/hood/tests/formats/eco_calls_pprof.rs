//! `hood calls report --format pprof` read back by a real pprof client (`go tool pprof`,
//! Debian's golang-go): the same call counts and the same top functions by own time as
//! `hood calls report -f --format json` on known-answer C workloads built with
//! -finstrument-functions.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::*;

/// `hood calls run` with the release runtime and a private segment directory.
fn calls_run(dir: &Path, argv: &[&str]) -> PathBuf {
    // Own times are wall-clock: a CPU hog beside the workload would reorder its functions, and
    // the workload is a CPU hog beside the sampling tests of this binary.
    let _one = exclusive();
    let data = dir.join("calls.data");
    let out = hood()
        .args(["calls", "run", "-o"])
        .arg(&data)
        .arg("--")
        .args(argv)
        .env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"))
        .env("HOOD_SHM_DIR", dir)
        .stdout(Stdio::null())
        .output()
        .expect("hood calls run");
    assert!(out.status.success(), "hood calls run: {}", text(&out));
    data
}

/// Per-function (calls, msecs) summed over processes from `hood calls report -f --format json`.
fn json_functions(data: &Path) -> HashMap<String, (u64, f64)> {
    let out = run(hood()
        .args(["calls", "report", "-f", "--format", "json"])
        .arg(data));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mut m: HashMap<String, (u64, f64)> = HashMap::new();
    for p in v["processes"].as_array().expect("processes") {
        for r in p["rows"].as_array().expect("rows") {
            let e = m
                .entry(r["path"][0].as_str().unwrap().to_string())
                .or_default();
            e.0 += r["calls"].as_u64().unwrap();
            e.1 += r["msecs"].as_f64().unwrap();
        }
    }
    m
}

/// `go tool pprof -top` of one sample type: function → (flat value, flat %).
fn pprof_top(file: &Path, sample_index: &str, unit: &str) -> HashMap<String, (f64, f64)> {
    let out = common::go_tool_pprof(file.parent().unwrap())
        .args(["-top", "-nodecount=100", "-nodefraction=0"])
        .arg(format!("-sample_index={sample_index}"))
        .arg(format!("-unit={unit}"))
        .arg(file)
        .output()
        .expect("`go` must be installed for this test (apt-get install golang-go)");
    assert!(out.status.success(), "go tool pprof: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("flat%"), "no table:\n{stdout}");
    stdout
        .lines()
        .skip_while(|l| !l.contains("flat%"))
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let flat = cols.first()?.trim_end_matches(unit).parse().ok()?;
            let pct = cols.get(1)?.strip_suffix('%')?.parse().ok()?;
            Some((cols.get(5..)?.join(" "), (flat, pct)))
        })
        .collect()
}

fn write_pprof(data: &Path, extra: &[&str]) -> PathBuf {
    let pb = data.with_extension("pb.gz");
    let out = run(hood()
        .args(["calls", "report", "--format", "pprof"])
        .args(extra)
        .arg("-o")
        .arg(&pb)
        .arg(data));
    assert!(out.status.success(), "{}", text(&out));
    let gz = std::fs::read(&pb).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "pprof output is gzip");
    pb
}

#[test]
fn go_tool_pprof_counts_the_same_calls_as_hood_calls_report() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_instrumented("calls_known", dir.path());
    let data = calls_run(dir.path(), &[exe.to_str().unwrap()]);
    let json = json_functions(&data);
    // By construction: leaf 3 + 2*2, twice 2, fact 5 levels, main once.
    let known = [("leaf", 7), ("twice", 2), ("fact", 5), ("main", 1)];
    for (name, calls) in known {
        assert_eq!(
            json.get(name).map(|e| e.0),
            Some(calls),
            "json {name}: {json:?}"
        );
    }
    for extra in [&[][..], &["--threads"][..]] {
        let pb = write_pprof(&data, extra);
        let top = pprof_top(&pb, "calls", "count");
        for (name, (calls, _)) in &json {
            assert_eq!(
                top.get(name).map(|e| e.0),
                Some(*calls as f64),
                "pprof calls of {name} ({extra:?}): {top:?}"
            );
        }
    }
}

#[test]
fn go_tool_pprof_shows_the_same_top_functions_by_own_time() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build_instrumented("split", dir.path());
    let data = calls_run(dir.path(), &[exe.to_str().unwrap(), "600"]);
    let json = json_functions(&data);
    let pb = write_pprof(&data, &[]);
    let time = pprof_top(&pb, "time", "ms");
    let calls = pprof_top(&pb, "calls", "count");

    let total_ms: f64 = json.values().map(|e| e.1).sum();
    let mut by_time: Vec<(&String, f64)> = json.iter().map(|(n, e)| (n, e.1)).collect();
    by_time.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let names: Vec<&str> = by_time.iter().take(3).map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["work60", "work30", "work10"], "json: {by_time:?}");
    let mut pprof_order: Vec<(&String, f64)> = time.iter().map(|(n, e)| (n, e.0)).collect();
    pprof_order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let top3: Vec<&str> = pprof_order
        .iter()
        .take(3)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(top3, names, "pprof: {pprof_order:?}");
    for (name, ms) in &by_time {
        let pct = 100.0 * ms / total_ms;
        if pct < 1.0 {
            continue;
        }
        let (flat, got_pct) = time
            .get(*name)
            .unwrap_or_else(|| panic!("{name} ({pct:.1}%) missing from pprof: {time:?}"));
        assert!(
            (got_pct - pct).abs() <= 0.2,
            "{name}: pprof {got_pct}% vs json {pct:.2}%"
        );
        assert!(
            (flat - ms).abs() <= 0.01 * ms + 0.1,
            "{name}: pprof {flat} ms vs json {ms} ms"
        );
        assert_eq!(
            calls.get(*name).map(|e| e.0),
            Some(json[*name].0 as f64),
            "{name} calls"
        );
    }
}

/// Built as calls_runtime.rs builds its workloads.
fn build_instrumented(name: &str, dir: &Path) -> PathBuf {
    instrumented(
        name,
        dir,
        &["-falign-functions=64", "-falign-loops=64"],
        &[],
    )
}
