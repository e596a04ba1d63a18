//! `hood report --format pprof` read back by a real pprof client (`go tool pprof`, Debian's
//! golang-go): the same top functions and percentages as `hood report --format json`.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::*;

/// Self percentages by function name from `go tool pprof -top`.
fn pprof_top(file: &Path) -> HashMap<String, f64> {
    let out = Command::new("go")
        .args([
            "tool",
            "pprof",
            "-top",
            "-nodecount=50",
            "-sample_index=samples",
        ])
        .arg(file)
        .env("GOTOOLCHAIN", "local")
        .env("HOME", file.parent().unwrap())
        .output()
        .expect("`go` must be installed for this test (apt-get install golang-go)");
    assert!(
        out.status.success(),
        "go tool pprof failed:\n{}",
        text(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("flat%"), "no table:\n{stdout}");
    // Rows: flat flat% sum% cum cum% name
    stdout
        .lines()
        .skip_while(|l| !l.contains("flat%"))
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let pct = cols.get(1)?.strip_suffix('%')?.parse().ok()?;
            Some((cols.get(5..)?.join(" "), pct))
        })
        .collect()
}

/// Self percentages by function name from hood's JSON report (summed over processes).
fn hood_functions(file: &Path) -> (u64, HashMap<String, f64>) {
    let out = run(hood()
        .args(["report", "--format", "json", "--min-percent", "0", "-i"])
        .arg(file));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mut m = HashMap::new();
    for f in v["functions"].as_array().expect("functions") {
        *m.entry(f["name"].as_str().unwrap().to_string())
            .or_insert(0.0) += f["percent"].as_f64().unwrap();
    }
    (v["totals"]["samples"].as_u64().unwrap(), m)
}

#[test]
fn go_tool_pprof_shows_the_same_top_functions_as_hood_report() {
    if !privileged("go_tool_pprof_same_top") {
        return;
    }
    let _serial = perf_lock();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("split.data");
    let pb = dir.path().join("split.pb.gz");
    let prog = c_program("split");
    let out = record(&data, &["-F", "999", "--", prog.to_str().unwrap(), "1500"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(hood()
        .args(["report", "--format", "pprof", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&pb));
    assert!(out.status.success(), "{}", text(&out));
    let gz = std::fs::read(&pb).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "pprof output is gzip");

    let (total, hood) = hood_functions(&data);
    let pprof = pprof_top(&pb);
    assert!(total > 200, "{total} samples");
    let mut top: Vec<(&String, &f64)> = hood.iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    // The work functions lead both reports, in the same order, with the same shares.
    let names: Vec<&str> = top.iter().take(3).map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["work60", "work30", "work10"], "hood: {top:?}");
    for (name, pct) in top.iter().filter(|(_, p)| **p >= 1.0) {
        let got = pprof
            .get(*name)
            .unwrap_or_else(|| panic!("{name} ({pct}%) missing from pprof: {pprof:?}"));
        assert!(
            (got - **pct).abs() <= 1.0,
            "{name}: pprof {got}% vs hood {pct}%"
        );
    }
}
