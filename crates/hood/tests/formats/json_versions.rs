//! One JSON versioning rule (docs/json.md#versioning): every JSON document hood prints is an
//! object whose first field is `"schema_version": 1`.

use std::path::Path;

use crate::common;
use common::{hood, run, text};

/// The document `hood ARGS` prints (one per line with `lines`), checked against the rule.
fn check(args: &[&str], dir: &Path, lines: bool) {
    let out = run(hood().args(args).current_dir(dir));
    assert!(out.status.success(), "hood {args:?}:\n{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    let docs: Vec<&str> = if lines {
        s.lines().filter(|l| !l.is_empty()).collect()
    } else {
        vec![&s]
    };
    assert!(!docs.is_empty(), "hood {args:?} printed nothing");
    for d in docs {
        let v: serde_json::Value =
            serde_json::from_str(d).unwrap_or_else(|e| panic!("hood {args:?}: {e}:\n{d}"));
        let obj = v
            .as_object()
            .unwrap_or_else(|| panic!("hood {args:?} printed no object:\n{d}"));
        assert_eq!(
            obj.keys().next().map(String::as_str),
            Some("schema_version"),
            "hood {args:?}: the first field must be schema_version:\n{d}"
        );
        assert_eq!(obj["schema_version"], 1, "hood {args:?}");
        assert!(
            !obj.contains_key("version"),
            "hood {args:?}: a second version field"
        );
    }
}

#[test]
fn monitor_outputs_follow_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    check(&["ps", "--json"], d, false);
    check(&["top", "-b", "-n", "2", "-d", "0.1", "--json"], d, true);
    check(&["uptime", "--json"], d, false);
    check(&["info", "--json"], d, false);
    check(&["info", "system.load", "--json"], d, false);
    check(&["info", "system.load.one", "--json"], d, false);
}

#[test]
fn report_calls_and_trace_outputs_follow_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let split = common::instrumented("split", d, &[], &[]);
    let split = split.to_str().unwrap();
    let _lock = common::exclusive();
    let out = run(hood()
        .args(["record", "-o", "p.data", "--", split, "100"])
        .current_dir(d));
    assert!(out.status.success(), "{}", text(&out));
    check(&["report", "-i", "p.data", "--format", "json"], d, false);
    check(&["diff", "p.data", "p.data", "--format", "json"], d, false);
    let lib = common::runtime_release_dir().join("libhood_rt.so");
    let out = run(hood()
        .args(["calls", "run", "-o", "c.data", "--", split, "100"])
        .env("HOOD_RT_LIB", &lib)
        .current_dir(d));
    assert!(out.status.success(), "{}", text(&out));
    check(&["calls", "report", "c.data", "--format", "json"], d, false);
    check(
        &["calls", "report", "c.data", "-f", "--format", "json"],
        d,
        false,
    );
    let out = run(hood()
        .args(["trace", "record", "-o", "t.data", "--", split, "50"])
        .env("HOOD_RT_LIB", &lib)
        .current_dir(d));
    assert!(out.status.success(), "{}", text(&out));
    check(&["trace", "report", "t.data", "--format", "json"], d, false);
}
