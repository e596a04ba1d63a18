//! `hood report --format firefox`: gzip-compressed Firefox Profiler processed JSON with one
//! thread track per task, kernel frames in the Kernel category, and every sample accounted.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;
use serde_json::Value;

fn firefox(data: &Path) -> Value {
    let out_file = data.with_extension("json.gz");
    let out = run(hood()
        .args(["report", "--format", "firefox", "-i"])
        .arg(data)
        .arg("-o")
        .arg(&out_file));
    assert!(out.status.success(), "{}", text(&out));
    let gz = std::fs::read(&out_file).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "firefox output is gzip");
    let plain = run(common::command("gzip").arg("-dc").arg(&out_file));
    assert!(plain.status.success(), "gunzip: {}", text(&plain));
    serde_json::from_slice(&plain.stdout).expect("JSON")
}

fn hood_json(data: &Path) -> Value {
    let out = run(hood()
        .args(["report", "--format", "json", "--min-percent", "0", "-i"])
        .arg(data));
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (pid, tid) -> samples, per thread track.
fn tracks(v: &Value) -> BTreeMap<(u32, u32), u64> {
    v["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .map(|t| {
            let id = |k: &str| t[k].as_str().unwrap().parse::<u32>().unwrap();
            let w: u64 = t["samples"]["weight"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_u64().unwrap())
                .sum();
            assert_eq!(t["samples"]["length"].as_u64(), Some(w), "weight 1 each");
            ((id("pid"), id("tid")), w)
        })
        .collect()
}

/// Function names of the frames in each category, over all threads.
fn frames_by_category(v: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let cats: Vec<String> = v["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in v["threads"].as_array().unwrap() {
        let strings = t["stringArray"].as_array().unwrap();
        let ft = &t["frameTable"];
        for i in 0..ft["length"].as_u64().unwrap() as usize {
            let cat = &cats[ft["category"][i].as_u64().unwrap() as usize];
            let func = ft["func"][i].as_u64().unwrap() as usize;
            let name = t["funcTable"]["name"][func].as_u64().unwrap() as usize;
            m.entry(cat.clone())
                .or_default()
                .insert(strings[name].as_str().unwrap().to_string());
        }
    }
    m
}

#[test]
fn one_track_per_task_with_every_sample() {
    if !privileged("firefox_tracks") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fork.data");
    let prog = c_program("forker");
    let out = record(&data, &["--", prog.to_str().unwrap(), "500"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = firefox(&data);
    let hj = hood_json(&data);
    let want: BTreeMap<(u32, u32), u64> = hj["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                (
                    t["pid"].as_u64().unwrap() as u32,
                    t["tid"].as_u64().unwrap() as u32,
                ),
                t["samples"].as_u64().unwrap(),
            )
        })
        .collect();
    let got = tracks(&v);
    assert_eq!(got, want, "thread tracks vs hood's thread rows");
    assert!(got.len() >= 2, "parent and child: {got:?}");
    assert_eq!(
        got.values().sum::<u64>(),
        hj["totals"]["samples"].as_u64().unwrap()
    );
    let names: BTreeSet<&str> = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["processName"].as_str().unwrap())
        .collect();
    assert!(names.contains("hood_kid"), "{names:?}");
    let cats = frames_by_category(&v);
    assert!(cats["User"].contains("child_work"), "{cats:?}");
}

#[test]
fn kernel_frames_are_in_the_kernel_category() {
    if !privileged("firefox_kernel_frames") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("reader.data");
    let prog = c_program("reader");
    let out = record(&data, &["--", prog.to_str().unwrap(), "500"]);
    assert!(out.status.success(), "{}", text(&out));
    let v = firefox(&data);
    let hj = hood_json(&data);
    let mut kernel = BTreeSet::new();
    let mut user = BTreeSet::new();
    for f in hj["functions"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap().to_string();
        if f["kernel"].as_bool().unwrap() {
            kernel.insert(name);
        } else {
            user.insert(name);
        }
    }
    assert!(!kernel.is_empty(), "reader spends its time in read(): {hj}");
    let cats = frames_by_category(&v);
    let k = cats.get("Kernel").cloned().unwrap_or_default();
    let u = cats.get("User").cloned().unwrap_or_default();
    for name in &kernel {
        assert!(k.contains(name), "{name} not in the Kernel category: {k:?}");
    }
    for name in user.iter().filter(|n| !kernel.contains(*n)) {
        assert!(!k.contains(name), "user function {name} marked kernel");
    }
    assert!(u.contains("main"), "{u:?}");
}
