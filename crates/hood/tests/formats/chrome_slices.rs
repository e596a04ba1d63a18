//! Chrome trace slices are named by function only (issue 15, item 8): speedscope names a
//! frame by a slice's name together with its `args`, so nothing per call may sit there.

use std::collections::BTreeSet;

use crate::common;
use common::{hood, run, text};

#[test]
fn call_slices_carry_the_function_name_and_nothing_per_call() {
    // A traced run: not beside this binary's known answers (eco_perfdata's shares moved by 6
    // points when a recording ran beside them).
    let _serial = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prog = common::instrumented("calls_abcd", d, &[], &[]);
    let lib = common::runtime_release_dir().join("libhood_rt.so");
    let out = run(hood()
        .args(["trace", "record", "-o", "t.data", "--"])
        .arg(&prog)
        .args(["100", "50"])
        .env("HOOD_RT_LIB", &lib)
        .current_dir(d));
    assert!(out.status.success(), "{}", text(&out));
    let out = run(hood()
        .args(["trace", "report", "t.data", "--format", "chrome"])
        .current_dir(d));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let calls: Vec<&serde_json::Value> = v["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "call")
        .collect();
    // main, then 50 x (a, b, d, c).
    assert_eq!(calls.len(), 1 + 50 * 4, "{}", calls.len());
    for c in &calls {
        assert!(c.get("args").is_none(), "a call slice with args: {c}");
    }
    let names: BTreeSet<&str> = calls.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, BTreeSet::from(["a", "b", "c", "d", "main"]));
}
