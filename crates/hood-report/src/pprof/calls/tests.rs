use std::collections::BTreeMap;

use hood_tracemodel::calls::{Limits, PathEntry, ProcessCalls, ThreadCalls};
use prost::Message;

use super::*;

fn entry(parent: Option<u32>, func: u64, calls: u64, own_ticks: i64) -> PathEntry {
    PathEntry {
        parent,
        func,
        calls,
        own_ticks,
        running_ticks: 0,
        running: false,
    }
}

/// main (1 call, 5 ms own) calls leaf 3 times (1 ms) and twice 2 times (2 ms), which calls
/// leaf 4 times (-1 tick after compensation: clamped); ticks are microseconds. A second
/// thread runs main>leaf once more.
fn known() -> ProcessCalls {
    let paths = vec![
        entry(None, 0, 0, 0),
        entry(None, 0x10, 1, 5000),
        entry(Some(1), 0x20, 3, 1000),
        entry(Some(1), 0x30, 2, 2000),
        entry(Some(3), 0x20, 4, -1),
    ];
    let t = |tid, paths| ThreadCalls::ended(tid, paths);
    ProcessCalls {
        pid: 42,
        ppid: 1,
        exe: "/tmp/calls_known".into(),
        ticks_per_sec: 1_000_000,
        clock: hood_tracemodel::Clock::Monotonic,
        compensate: true,
        comp_self_ticks: 0,
        comp_child_ticks: 0,
        flags: 0,
        limits: Limits::default(),
        state: hood_tracemodel::ProcessState::Exited,
        span_ns: 9_000_000,
        threads: vec![
            t(42, paths),
            t(
                43,
                vec![
                    entry(None, 0, 0, 0),
                    entry(None, 0x10, 1, 0),
                    entry(Some(1), 0x20, 1, 500),
                ],
            ),
        ],
        symbols: BTreeMap::from([
            (0x10, "main".to_string()),
            (0x20, "leaf".to_string()),
            (0x30, "twice".to_string()),
        ]),
        notes: vec!["a note".into()],
    }
}

fn s(p: &proto::Profile, i: i64) -> &str {
    &p.string_table[i as usize]
}

/// (stack names leaf first, values, tid label) of every sample.
fn samples(p: &proto::Profile) -> Vec<(Vec<String>, Vec<i64>, Option<i64>)> {
    let func_name = |loc: u64| {
        let l = p.location.iter().find(|l| l.id == loc).expect("location");
        let f = p
            .function
            .iter()
            .find(|f| f.id == l.line[0].function_id)
            .expect("function");
        s(p, f.name).to_string()
    };
    let mut v: Vec<_> = p
        .sample
        .iter()
        .map(|x| {
            let tid = x.label.iter().find(|l| s(p, l.key) == "tid").map(|l| l.num);
            (
                x.location_id.iter().map(|&l| func_name(l)).collect(),
                x.value.clone(),
                tid,
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn one_sample_per_path_leaf_first_with_calls_and_own_nanoseconds() {
    let opts = CallsPprofOptions {
        build_ids: HashMap::from([("/tmp/calls_known".to_string(), "abcd".to_string())]),
        collected_unix_ns: 100_000_000_000,
        ..CallsPprofOptions::default()
    };
    let p = build_calls(&[known()], &opts);
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(&p, t.r#type), s(&p, t.unit)))
        .collect();
    assert_eq!(types, [("calls", "count"), ("time", "nanoseconds")]);
    assert_eq!(s(&p, p.default_sample_type), "time");
    let v = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(
        samples(&p),
        [
            (v(&["leaf", "main"]), vec![4, 1_500_000], None),
            (v(&["leaf", "twice", "main"]), vec![4, 0], None),
            (v(&["main"]), vec![2, 5_000_000], None),
            (v(&["twice", "main"]), vec![2, 2_000_000], None),
        ]
    );
    // One function per name, one location per address, one mapping with the build-id.
    assert_eq!(p.function.len(), 3);
    assert_eq!(p.location.len(), 3);
    assert_eq!(p.mapping.len(), 1);
    assert_eq!(s(&p, p.mapping[0].filename), "/tmp/calls_known");
    assert_eq!(s(&p, p.mapping[0].build_id), "abcd");
    assert!(p.mapping[0].has_functions);
    assert_eq!(p.duration_nanos, 9_000_000);
    assert_eq!(p.time_nanos, 100_000_000_000 - 9_000_000);
    let labels: Vec<(&str, i64, &str)> = p.sample[0]
        .label
        .iter()
        .map(|l| (s(&p, l.key), l.num, s(&p, l.str)))
        .collect();
    assert_eq!(labels, [("pid", 42, ""), ("comm", 0, "calls_known")]);
    assert!(p.comment.iter().any(|&c| s(&p, c) == "pid 42: a note"));
}

#[test]
fn per_thread_samples_carry_a_tid_label() {
    let opts = CallsPprofOptions {
        threads: true,
        ..CallsPprofOptions::default()
    };
    let p = build_calls(&[known()], &opts);
    let got = samples(&p);
    assert_eq!(got.len(), 6);
    let mut leaf_main: Vec<_> = got
        .iter()
        .filter(|x| x.0 == ["leaf", "main"])
        .map(|x| (x.2, x.1.clone()))
        .collect();
    leaf_main.sort();
    assert_eq!(
        leaf_main,
        [(Some(42), vec![3, 1_000_000]), (Some(43), vec![1, 500_000])]
    );
    assert_eq!(s(&p, p.mapping[0].build_id), "");
}

#[test]
fn rendered_output_is_gzip_of_the_message() {
    use std::io::Read;
    let mut out = Vec::new();
    render_calls_pprof(&[known()], &CallsPprofOptions::default(), &mut out).unwrap();
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&out[..])
        .read_to_end(&mut raw)
        .unwrap();
    let p = proto::Profile::decode(&raw[..]).unwrap();
    assert_eq!(p.sample.len(), 4);
}
