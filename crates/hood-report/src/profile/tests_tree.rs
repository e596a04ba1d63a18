//! Tests of the call trees (text and JSON) on hand-built profiles.

use hood_model::profile::{Mode, Profile};
use serde_json::Value;

use super::testutil::{known, Builder};
use super::*;

fn text(prof: &Profile, opts: &ReportOptions) -> String {
    let mut out = Vec::new();
    render_text(prof, opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The tree part of the text report.
fn tree_lines(s: &str) -> Vec<&str> {
    s.lines()
        .skip_while(|l| !l.starts_with("Call graph"))
        .skip(3)
        .take_while(|l| !l.starts_with("-----"))
        .collect()
}

#[test]
fn caller_tree_totals_self_and_folding() {
    let o = ReportOptions {
        call_graph: CallGraph::Caller,
        ..Default::default()
    };
    let t = tree_lines(&text(&known(), &o)).join("\n");
    let expect = "  84.0%    0.0%  main
  50.0%   50.0%    work_a
  25.0%   25.0%    work_b
   9.0%    8.0%    work_c
   1.0%    0.0%      sys_read [k]
   1.0%    1.0%        read_zero [k]
  10.0%    0.0%  main2
  10.0%   10.0%    spin
   5.5%    5.5%  idle_fn [k]
   0.5%          <1% (1 callee)";
    assert_eq!(t, expect);
}

#[test]
fn callee_tree_lists_callers_below_sampled_functions() {
    let o = ReportOptions {
        call_graph: CallGraph::Callee,
        min_percent: 2.0,
        ..Default::default()
    };
    let s = text(&known(), &o);
    let t = tree_lines(&s);
    assert_eq!(t[0], "  50.0%  work_a");
    assert_eq!(t[1], "  50.0%    main");
    // read_zero (1.0%) and tiny (0.5%) fold at the root.
    assert_eq!(t.last().unwrap(), &"   1.5%  <2% (2 callers)");
}

#[test]
fn small_folds_below_the_top_level_are_not_listed() {
    let mut b = Builder::new();
    let [main, a, c, d, e] = ["main", "a", "c", "d", "e"].map(|n| b.func(n, "x"));
    b.samples(1, 1, Mode::User, &[a, main], 970);
    b.samples(1, 1, Mode::User, &[c, main], 10);
    b.samples(1, 1, Mode::User, &[d, main], 10);
    b.samples(1, 1, Mode::User, &[e], 10);
    let p = b.finish(&[]);
    let o = ReportOptions {
        call_graph: CallGraph::Caller,
        min_percent: 1.5,
        ..Default::default()
    };
    let s = text(&p, &o);
    // c and d (1.0% each) fold into a 2.0% line under main; e (1.0%) folds at the top.
    assert_eq!(
        tree_lines(&s),
        [
            "  99.0%    0.0%  main",
            "  97.0%   97.0%    a",
            "   2.0%            <1.5% (2 callees)",
            "   1.0%          <1.5% (1 callee)"
        ]
    );
    let o = ReportOptions {
        min_percent: 2.5,
        ..o
    };
    let s = text(&p, &o);
    assert_eq!(tree_lines(&s).len(), 3, "the 2% fold under main is dropped");
}

#[test]
fn deep_stacks_are_cut_at_max_depth() {
    let mut b = Builder::new();
    let frames: Vec<_> = (0..40).map(|i| b.func(&format!("f{i}"), "deep")).collect();
    b.samples(1, 1, Mode::User, &frames, 10);
    let p = b.finish(&[]);
    let o = ReportOptions {
        call_graph: CallGraph::Caller,
        max_depth: 5,
        ..Default::default()
    };
    let s = text(&p, &o);
    let t = tree_lines(&s);
    assert_eq!(t.len(), 6);
    assert!(t[0].ends_with("  f39"), "outermost frame first: {}", t[0]);
    assert!(t[5].ends_with("... (deeper frames not shown)"));
    let mut out = Vec::new();
    render_json(&p, &o, &mut out).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let mut n = &v["call_graph"]["root"];
    let mut depth = 0;
    while let Some(c) = n["children"].as_array().and_then(|c| c.first()) {
        n = c;
        depth += 1;
    }
    assert_eq!(depth, 5);
    assert_eq!(n["depth_limited"], true);
    assert_eq!(n["other_samples"], 10);
}

/// Every node's total equals its self samples plus its children's totals, shown or folded.
fn check(n: &Value) -> u64 {
    let kids: u64 = n["children"].as_array().unwrap().iter().map(check).sum();
    let total = n["total"].as_u64().unwrap();
    assert_eq!(
        total,
        n["self_samples"].as_u64().unwrap() + kids + n["other_samples"].as_u64().unwrap(),
        "{n}"
    );
    total
}

#[test]
fn json_trees_add_up() {
    for call_graph in [CallGraph::Caller, CallGraph::Callee] {
        let o = ReportOptions {
            call_graph,
            ..Default::default()
        };
        let mut out = Vec::new();
        render_json(&known(), &o, &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        let root = &v["call_graph"]["root"];
        assert_eq!(check(root), 1000);
        assert_eq!(root["other_samples"], 5, "tiny (0.5%) is folded");
    }
}
