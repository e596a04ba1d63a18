use std::io::Read;

use flate2::read::GzDecoder;
use hood_model::profile::Mode;
use serde_json::Value;

use super::*;
use crate::pprof::tests::small_profile;

fn render(prof: &Profile, filter: Filter) -> Value {
    let opts = ReportOptions {
        filter,
        ..ReportOptions::default()
    };
    let mut gz = Vec::new();
    render_firefox(prof, &opts, &mut gz).unwrap();
    let mut json = String::new();
    GzDecoder::new(&gz[..]).read_to_string(&mut json).unwrap();
    serde_json::from_str(&json).expect("valid JSON")
}

fn category_index(v: &Value, name: &str) -> u64 {
    v["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no category {name}")) as u64
}

/// (pid, tid, name, samples, kernel frame names)
fn threads(v: &Value) -> Vec<(String, String, String, u64, Vec<String>)> {
    let kernel = category_index(v, KERNEL_CATEGORY);
    v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let strings = t["stringArray"].as_array().unwrap();
            let frames = &t["frameTable"];
            let funcs = &t["funcTable"];
            let mut kframes = Vec::new();
            for i in 0..frames["length"].as_u64().unwrap() as usize {
                if frames["category"][i].as_u64() == Some(kernel) {
                    let f = frames["func"][i].as_u64().unwrap() as usize;
                    let n = funcs["name"][f].as_u64().unwrap() as usize;
                    kframes.push(strings[n].as_str().unwrap().to_string());
                }
            }
            (
                t["pid"].as_str().unwrap().to_string(),
                t["tid"].as_str().unwrap().to_string(),
                t["name"].as_str().unwrap().to_string(),
                t["samples"]["weight"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w.as_u64().unwrap())
                    .sum(),
                kframes,
            )
        })
        .collect()
}

#[test]
fn one_track_per_task_with_kernel_frames_marked() {
    let prof = small_profile();
    let v = render(&prof, Filter::default());
    let mut t = threads(&v);
    t.sort();
    assert_eq!(t.len(), 3, "{t:?}");
    assert_eq!(
        t[0],
        (
            "0".into(),
            "0".into(),
            "[idle]".into(),
            1,
            vec!["pv_native_safe_halt".into()]
        )
    );
    assert_eq!(
        t[1],
        (
            "7".into(),
            "7".into(),
            "split".into(),
            7,
            vec!["do_syscall_64".into()]
        )
    );
    assert_eq!(t[2], ("7".into(), "8".into(), "helper".into(), 1, vec![]));
    let total: u64 = t.iter().map(|x| x.3).sum();
    assert_eq!(total, prof.samples.len() as u64);
}

#[test]
fn stacks_are_root_first() {
    let prof = small_profile();
    let v = render(
        &prof,
        Filter {
            pid: Some(7),
            mode: Some(Mode::User),
            ..Filter::default()
        },
    );
    let th = &v["threads"][0];
    let strings = th["stringArray"].as_array().unwrap();
    let name_of_stack = |s: usize| {
        let f = th["stackTable"]["frame"][s].as_u64().unwrap() as usize;
        let func = th["frameTable"]["func"][f].as_u64().unwrap() as usize;
        strings[th["funcTable"]["name"][func].as_u64().unwrap() as usize].clone()
    };
    let leaf = th["samples"]["stack"][0].as_u64().unwrap() as usize;
    assert_eq!(name_of_stack(leaf), "work60");
    let parent = th["stackTable"]["prefix"][leaf].as_u64().unwrap() as usize;
    assert_eq!(name_of_stack(parent), "main");
    assert!(th["stackTable"]["prefix"][parent].is_null());
}

#[test]
fn the_profile_is_marked_symbolicated() {
    let v = render(&small_profile(), Filter::default());
    assert_eq!(
        v["meta"]["symbolicated"],
        Value::Bool(true),
        "{}",
        v["meta"]
    );
}

#[test]
fn breakpad_ids_are_the_build_id_as_a_guid_plus_age() {
    let breakpad_id = |hex: &str| BuildId::from_hex(hex).map(|id| super::breakpad_id(&id));
    // dump_syms and the Firefox Profiler: first three GUID fields byte-swapped, age 0.
    assert_eq!(
        breakpad_id("9575fb0d69d12e97b531a639fd38552843f761ff").as_deref(),
        Some("0DFB7595D169972EB531A639FD3855280")
    );
    // Short ids are padded with zeros; garbage gives none.
    assert_eq!(
        breakpad_id("01020304").as_deref(),
        Some(format!("04030201{}0", "0".repeat(24)).as_str())
    );
    assert_eq!(breakpad_id(""), None);
    assert_eq!(breakpad_id("zz"), None);
}
