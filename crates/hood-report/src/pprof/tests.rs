use std::io::Read;

use flate2::read::GzDecoder;
use hood_model::profile::aggregate::Filter;
use hood_model::profile::{DsoFile, Func, Mode, Process, Profile, RecordMeta, Sample, Thread};
use prost::Message;

use super::*;

/// A profile with user stacks main->work60 (6x), main->work10 (1x, other thread) and a kernel
/// stack in pid 2, plus one idle sample.
pub(crate) fn small_profile() -> Profile {
    let f = |name: &str, dso: &str, kernel: bool| Func {
        name: name.into(),
        dso: dso.into(),
        kernel,
        resolved: true,
        inlined: false,
        start_line: 0,
    };
    let mut prof = Profile {
        meta: RecordMeta {
            event: "cpu-clock".into(),
            freq_hz: 1000,
            mode: hood_model::profile::RecordMode::System,
            ..RecordMeta::default()
        },
        funcs: vec![
            f("main", "split", false),
            f("work60", "split", false),
            f("work10", "split", false),
            f("do_syscall_64", "[kernel.kallsyms]", true),
            f("pv_native_safe_halt", "[kernel.kallsyms]", true),
        ],
        stacks: vec![vec![], vec![1, 0], vec![2, 0], vec![3, 0], vec![4]],
        processes: vec![
            Process {
                pid: 0,
                comm: "swapper".into(),
                threads: vec![],
            },
            Process {
                pid: 7,
                comm: "split".into(),
                threads: vec![
                    Thread {
                        tid: 7,
                        comm: "split".into(),
                    },
                    Thread {
                        tid: 8,
                        comm: "helper".into(),
                    },
                ],
            },
        ],
        ..Profile::default()
    };
    prof.dso_files.insert(
        "split".into(),
        DsoFile {
            path: "/tmp/split".into(),
            build_id: hood_model::profile::BuildId::from_hex("abcd"),
        },
    );
    let mut t = 1_000;
    let mut push = |pid, tid, mode, stack| {
        t += 1_000_000;
        prof.samples.push(Sample {
            pid,
            tid,
            cpu: 0,
            time: t,
            period: 1_000_000,
            mode,
            stack,
            locs: 0,
        });
    };
    for _ in 0..6 {
        push(7, 7, Mode::User, 1);
    }
    push(7, 8, Mode::User, 2);
    push(7, 7, Mode::Kernel, 3);
    push(0, 0, Mode::Idle, 4);
    prof
}

fn decode(prof: &Profile, filter: &Filter) -> proto::Profile {
    let opts = ReportOptions {
        filter: filter.clone(),
        ..ReportOptions::default()
    };
    let mut gz = Vec::new();
    render_pprof(prof, &opts, &mut gz).unwrap();
    let mut bytes = Vec::new();
    GzDecoder::new(&gz[..]).read_to_end(&mut bytes).unwrap();
    proto::Profile::decode(&bytes[..]).expect("valid profile.proto")
}

fn leaf_name(p: &proto::Profile, s: &proto::Sample) -> String {
    let loc = &p.location[(s.location_id[0] - 1) as usize];
    let func = &p.function[(loc.line[0].function_id - 1) as usize];
    p.string_table[func.name as usize].clone()
}

fn label<'a>(p: &'a proto::Profile, s: &proto::Sample, key: &str) -> (&'a str, i64) {
    let l = s
        .label
        .iter()
        .find(|l| p.string_table[l.key as usize] == key)
        .unwrap_or_else(|| panic!("no label {key}"));
    (p.string_table[l.str as usize].as_str(), l.num)
}

#[test]
fn round_trips_counts_names_labels_and_mappings() {
    let prof = small_profile();
    let p = decode(&prof, &Filter::default());
    assert_eq!(p.string_table[0], "");
    assert_eq!(p.string_table[p.default_sample_type as usize], "samples");
    assert_eq!(p.period, 1_000_000);
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total, 9);
    let ns: i64 = p.sample.iter().map(|s| s.value[1]).sum();
    assert_eq!(ns, 9_000_000);
    let work60: i64 = p
        .sample
        .iter()
        .filter(|s| leaf_name(&p, s) == "work60")
        .map(|s| s.value[0])
        .sum();
    assert_eq!(work60, 6);
    // Merged: the six identical work60 samples are one pprof sample.
    assert_eq!(p.sample.len(), 4);
    let helper = p
        .sample
        .iter()
        .find(|s| leaf_name(&p, s) == "work10")
        .unwrap();
    assert_eq!(label(&p, helper, "tid").1, 8);
    assert_eq!(label(&p, helper, "pid").1, 7);
    assert_eq!(label(&p, helper, "comm").0, "split");
    assert_eq!(label(&p, helper, "thread").0, "helper");
    assert_eq!(label(&p, helper, "mode").0, "user");
    // Stacks are leaf first: work10 then main.
    assert_eq!(helper.location_id.len(), 2);
    // Mappings: the file with its build-id, and the kernel.
    let names: Vec<(&str, &str)> = p
        .mapping
        .iter()
        .map(|m| {
            (
                p.string_table[m.filename as usize].as_str(),
                p.string_table[m.build_id as usize].as_str(),
            )
        })
        .collect();
    assert!(names.contains(&("/tmp/split", "abcd")), "{names:?}");
    assert!(names.iter().any(|(f, _)| *f == "[kernel.kallsyms]"));
    let kernel = p
        .sample
        .iter()
        .find(|s| leaf_name(&p, s) == "do_syscall_64")
        .unwrap();
    let loc = &p.location[(kernel.location_id[0] - 1) as usize];
    let m = &p.mapping[(loc.mapping_id - 1) as usize];
    assert_eq!(p.string_table[m.filename as usize], "[kernel.kallsyms]");
}

#[test]
fn filter_limits_the_samples() {
    let prof = small_profile();
    let f = Filter {
        mode: Some(Mode::Kernel),
        ..Filter::default()
    };
    let p = decode(&prof, &f);
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total, 1);
    assert_eq!(leaf_name(&p, &p.sample[0]), "do_syscall_64");
}

#[test]
fn empty_profile_is_still_a_valid_message() {
    let prof = Profile {
        stacks: vec![vec![]],
        ..Profile::default()
    };
    let p = decode(&prof, &Filter::default());
    assert!(p.sample.is_empty());
    assert_eq!(p.sample_type.len(), 2);
}

fn labeled(charges: Vec<hood_model::labels::Charge>) -> hood_model::labels::Labeled {
    hood_model::labels::Labeled {
        attribution: hood_model::labels::Attribution {
            charges,
            ..Default::default()
        },
        finalized: true,
        ..Default::default()
    }
}

fn decode_labeled(view: &crate::labels::LabeledView<'_>) -> proto::Profile {
    let mut gz = Vec::new();
    render_pprof_labeled(view, &mut gz).unwrap();
    let mut bytes = Vec::new();
    GzDecoder::new(&gz[..]).read_to_end(&mut bytes).unwrap();
    proto::Profile::decode(&bytes[..]).expect("valid profile.proto")
}

/// The charges of `small_profile`'s samples: 6 work60 and 1 work10 for pid 7, 1 kernel
/// sample (block completion done for pid 7), 1 idle.
fn small_profile_charges() -> Vec<hood_model::labels::Charge> {
    use hood_model::labels::{AsyncKind, Charge};
    let mut charges = vec![Charge::Sync(7); 7];
    charges.push(Charge::Async(7, AsyncKind::Block));
    charges.push(Charge::Idle);
    charges
}

#[test]
fn labeled_samples_carry_their_charge() {
    let prof = small_profile();
    let l = labeled(small_profile_charges());
    let mut view = crate::labels::LabeledView {
        prof: &prof,
        labeled: &l,
        source: "t.data",
        pid: None,
        comm: None,
    };
    let p = decode_labeled(&view);
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total, 9);
    let by_leaf = |leaf: &str| p.sample.iter().find(|s| leaf_name(&p, s) == leaf).unwrap();
    let s = by_leaf("work60");
    assert_eq!(s.value[0], 6);
    assert_eq!(label(&p, s, "charged_comm").0, "split");
    assert_eq!(label(&p, s, "charged_pid").1, 7);
    assert!(!s
        .label
        .iter()
        .any(|l| p.string_table[l.key as usize] == "async"));
    let k = by_leaf("do_syscall_64");
    assert_eq!(label(&p, k, "async").0, "BLOCK");
    assert_eq!(label(&p, k, "charged_pid").1, 7);
    let idle = by_leaf("pv_native_safe_halt");
    assert_eq!(label(&p, idle, "charged_comm").0, "[idle]");
    assert!(!idle
        .label
        .iter()
        .any(|l| p.string_table[l.key as usize] == "charged_pid"));
    // --pid keeps the samples charged to that process.
    view.pid = Some(7);
    let p = decode_labeled(&view);
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total, 8);
}

/// `small_profile` plus code locations: work60 has `sq` inlined at its sampled address, and
/// pid 7 has a softirq sample (net_rx_action under handle_softirqs, interrupting work60).
fn profile_with_inlined_locations() -> Profile {
    use hood_model::profile::{FrameLine, Location};
    let mut prof = small_profile();
    let func = |name: &str, kernel: bool, inlined: bool| Func {
        name: name.into(),
        dso: if kernel { "[kernel.kallsyms]" } else { "split" }.into(),
        kernel,
        resolved: true,
        inlined,
        start_line: 0,
    };
    prof.funcs.push(func("sq", false, true)); // 5
    prof.funcs.push(func("net_rx_action", true, false)); // 6
    prof.funcs.push(func("handle_softirqs", true, false)); // 7
    prof.source_files.push("split.c".into());
    let line = |func, line| FrameLine {
        func,
        file: Some(0),
        line,
    };
    // 0: sq inlined in work60, 1: main, 2: net_rx_action, 3: handle_softirqs.
    prof.lines = vec![line(5, 3), line(1, 12), line(0, 20)];
    let loc = |func, address, lines| Location {
        func,
        address,
        map: None,
        lines,
    };
    prof.locations = vec![
        loc(1, 0x1010, (0, 2)),
        loc(0, 0x1100, (2, 3)),
        loc(6, 0xffff_0010, (0, 0)),
        loc(7, 0xffff_0200, (0, 0)),
    ];
    prof.stacks.push(vec![5, 1, 0]); // 5: user stack with the inlined frame
    prof.stacks.push(vec![6, 7, 5, 1, 0]); // 6: softirq over it
    prof.loc_stacks = vec![vec![], vec![0, 1], vec![2, 3, 0, 1]];
    for s in prof.samples.iter_mut().filter(|s| s.stack == 1) {
        s.stack = 5;
        s.locs = 1;
    }
    prof.samples.push(Sample {
        pid: 7,
        tid: 7,
        cpu: 0,
        time: 99_000_000,
        period: 1_000_000,
        mode: Mode::Kernel,
        stack: 6,
        locs: 2,
    });
    prof
}

#[test]
fn labeled_pprof_keeps_inlined_functions_as_lines_of_their_location() {
    use hood_model::labels::{AsyncKind, Charge};
    let prof = profile_with_inlined_locations();
    // `small_profile`'s samples (work60 with sq inlined), then the softirq sample.
    let mut charges = small_profile_charges();
    charges.push(Charge::Async(7, AsyncKind::NetRx));
    let l = labeled(charges);
    let view = crate::labels::LabeledView {
        prof: &prof,
        labeled: &l,
        source: "t.data",
        pid: None,
        comm: None,
    };
    let p = decode_labeled(&view);
    let name = |id: u64| p.string_table[p.function[(id - 1) as usize].name as usize].clone();
    let frames = |s: &proto::Sample| -> Vec<Vec<(String, i64)>> {
        s.location_id
            .iter()
            .map(|&id| {
                p.location[(id - 1) as usize]
                    .line
                    .iter()
                    .map(|l| (name(l.function_id), l.line))
                    .collect()
            })
            .collect()
    };
    let sync = p
        .sample
        .iter()
        .find(|s| s.value[0] == 6)
        .expect("the work60 samples");
    assert_eq!(
        frames(sync),
        vec![
            vec![("sq".to_string(), 3), ("work60".to_string(), 12)],
            vec![("main".to_string(), 20)],
        ],
        "one location holding sq and work60, innermost first, as unlabeled pprof has it"
    );
    assert_eq!(
        p.location[(sync.location_id[0] - 1) as usize].address,
        0x1010
    );
    // The softirq sample keeps the handler's frames only, cut at the dispatcher.
    let rx = p
        .sample
        .iter()
        .find(|s| {
            s.label.iter().any(|l| {
                p.string_table[l.key as usize] == "async"
                    && p.string_table[l.str as usize] == "NET_RX"
            })
        })
        .expect("the softirq sample");
    assert_eq!(
        frames(rx),
        vec![
            vec![("net_rx_action".to_string(), 0)],
            vec![("handle_softirqs".to_string(), 0)],
        ]
    );
}

#[test]
fn each_line_names_its_own_file_when_a_function_spans_files() {
    use hood_model::profile::{FrameLine, Location};
    // `sq` (inlined) has code from two files, as a Rust function with a macro's body
    // expanded in it does: split.c:3 inside work60, and macros.h:7 inside work10.
    let mut prof = profile_with_inlined_locations();
    prof.source_files.push("macros.h".into()); // 1
    let first = prof.lines.len() as u32;
    prof.lines.push(FrameLine {
        func: 5,
        file: Some(1),
        line: 7,
    });
    prof.lines.push(FrameLine {
        func: 2,
        file: Some(0),
        line: 30,
    });
    prof.locations.push(Location {
        func: 2,
        address: 0x1210,
        map: None,
        lines: (first, first + 2),
    }); // 4
    prof.stacks.push(vec![5, 2, 0]); // 7
    prof.loc_stacks.push(vec![4, 1]); // 3
    for s in prof.samples.iter_mut().filter(|s| s.stack == 2) {
        s.stack = 7;
        s.locs = 3;
    }
    let p = decode(&prof, &Filter::default());
    let text = |i: i64| p.string_table[i as usize].clone();
    let line_of = |l: &proto::Line| {
        let f = &p.function[(l.function_id - 1) as usize];
        (text(f.name), text(f.filename), l.line)
    };
    let mut seen: Vec<(String, String, i64)> = p
        .location
        .iter()
        .filter(|l| l.address == 0x1010 || l.address == 0x1210)
        .flat_map(|l| l.line.iter().map(line_of))
        .collect();
    seen.sort();
    let want = |n: &str, f: &str, l| (n.to_string(), f.to_string(), l);
    assert_eq!(
        seen,
        vec![
            want("sq", "macros.h", 7),
            want("sq", "split.c", 3),
            want("work10", "split.c", 30),
            want("work60", "split.c", 12),
        ],
        "every line in the file hood's profile gives it"
    );
    // One pprof function per (function, file): sq twice, the others once.
    let sq: Vec<String> = p
        .function
        .iter()
        .filter(|f| text(f.name) == "sq")
        .map(|f| text(f.filename))
        .collect();
    assert_eq!(sq.len(), 2, "{sq:?}");
}
