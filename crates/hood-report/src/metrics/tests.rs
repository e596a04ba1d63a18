use std::collections::BTreeMap;

use hood_monitor::view::{CpuPercent, CpuView, CtxView, IrqView};
use hood_monitor::{SystemView, TaskView};

use super::*;

const BUILD: BuildInfo<'static> = BuildInfo {
    version: "0.1.0",
    commit: "abc1234",
    date: "2026-01-02",
};

fn task(pid: u32, name: &str, cpu: Option<f64>, res: u64) -> TaskView {
    TaskView {
        pid,
        tgid: pid,
        name: name.into(),
        cpu_percent: cpu,
        res_bytes: res,
        user_time_ms: 1500,
        kernel_time_ms: 250,
        threads: 2,
        ctx_switches: Some(CtxView {
            voluntary: 7,
            involuntary: 3,
            ..CtxView::default()
        }),
        ..TaskView::default()
    }
}

fn view() -> SystemView {
    let mut v = SystemView {
        interval_s: Some(2.0),
        tasks: vec![
            task(10, "idle", Some(0.0), 100),
            task(20, "busy \"x\"\\y", Some(150.0), 5),
            task(30, "medium", Some(40.0), 50),
        ],
        ..SystemView::default()
    };
    let mut c0 = CpuView {
        id: Some(0),
        ..CpuView::default()
    };
    c0.time_ms.user = 3000;
    c0.time_ms.nice = 1000;
    c0.time_ms.idle = 9000;
    c0.time_ms.iowait = 500;
    v.cpus.per_cpu = vec![c0];
    v.cpus.total.percent = Some(CpuPercent {
        busy: 25.0,
        ..CpuPercent::default()
    });
    v.cpus.context_switches = 12345;
    v.load.one = 0.5;
    v.counts.tasks_by_state = BTreeMap::from([("R".into(), 1), ("S".into(), 2)]);
    v.physmem.total = 1 << 30;
    v.exceptions.interrupts = vec![IrqView {
        id: "LOC".into(),
        description: "Local timer interrupts".into(),
        total: 99,
        ..IrqView::default()
    }];
    v
}

/// Every line is a comment (`# HELP`/`# TYPE`) or `name{labels} value` with a parseable value,
/// and every sample belongs to the family declared before it.
fn check_syntax(text: &str) -> BTreeMap<String, Vec<(String, f64)>> {
    let mut families: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("type line");
            assert!(["gauge", "counter"].contains(&kind), "{line}");
            assert!(!families.contains_key(name), "family {name} declared twice");
            families.insert(name.to_string(), Vec::new());
            current = name.to_string();
        } else if line.starts_with("# HELP ") {
        } else {
            let (series, value) = line.rsplit_once(' ').expect("sample line");
            let value: f64 = match value {
                "+Inf" => f64::INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("value in {line}")),
            };
            let name = series.split('{').next().unwrap();
            assert_eq!(name, current, "{line}");
            families
                .get_mut(name)
                .unwrap()
                .push((series.to_string(), value));
        }
    }
    families
}

#[test]
fn system_families_and_values() {
    let v = view();
    let text = rendered(&v, &v.tasks, BUILD);
    let f = check_syntax(&text);
    let cpu = &f["hood_cpu_seconds_total"];
    let get = |fam: &[(String, f64)], s: &str| fam.iter().find(|(k, _)| k == s).map(|x| x.1);
    // user excludes nice, idle excludes iowait, so the modes add up to the CPU's total.
    assert_eq!(
        get(cpu, r#"hood_cpu_seconds_total{cpu="0",mode="user"}"#),
        Some(2.0)
    );
    assert_eq!(
        get(cpu, r#"hood_cpu_seconds_total{cpu="0",mode="nice"}"#),
        Some(1.0)
    );
    assert_eq!(
        get(cpu, r#"hood_cpu_seconds_total{cpu="0",mode="idle"}"#),
        Some(8.5)
    );
    assert_eq!(
        get(&f["hood_cpu_busy_ratio"], "hood_cpu_busy_ratio"),
        Some(0.25)
    );
    assert_eq!(
        get(
            &f["hood_context_switches_total"],
            "hood_context_switches_total"
        ),
        Some(12345.0)
    );
    assert_eq!(get(&f["hood_load1"], "hood_load1"), Some(0.5));
    assert_eq!(
        get(&f["hood_memory_total_bytes"], "hood_memory_total_bytes"),
        Some(1073741824.0)
    );
    assert_eq!(
        f["hood_build_info"],
        vec![(
            r#"hood_build_info{version="0.1.0",commit="abc1234",build_date="2026-01-02"}"#
                .to_string(),
            1.0
        )]
    );
    assert_eq!(
        get(
            &f["hood_interrupts_total"],
            r#"hood_interrupts_total{irq="LOC",description="Local timer interrupts"}"#
        ),
        Some(99.0)
    );
    assert_eq!(
        get(&f["hood_processes"], r#"hood_processes{state="S"}"#),
        Some(2.0)
    );
}

#[test]
fn process_series_escape_names() {
    let v = view();
    let text = rendered(&v, &v.tasks[1..2], BUILD);
    let f = check_syntax(&text);
    let series = r#"{pid="20",name="busy \"x\"\\y"}"#;
    assert_eq!(
        f["hood_process_cpu_ratio"],
        vec![(format!("hood_process_cpu_ratio{series}"), 1.5)]
    );
    assert_eq!(f["hood_process_cpu_seconds_total"].len(), 2);
    assert_eq!(f["hood_process_context_switches_total"].len(), 2);
    assert!(
        !text.contains("pid=\"10\""),
        "unselected process exported:\n{text}"
    );
}

#[test]
fn selection_is_bounded_and_busiest_first() {
    let v = view();
    let all = Selection {
        top: 2,
        filter: None,
    };
    let pids: Vec<u32> = select_tasks(&v, &all).iter().map(|t| t.pid).collect();
    assert_eq!(pids, [20, 30]);
    let filtered = Selection {
        top: 10,
        filter: Some("idle".into()),
    };
    let pids: Vec<u32> = select_tasks(&v, &filtered).iter().map(|t| t.pid).collect();
    assert_eq!(pids, [10]);
}

#[test]
fn values_and_labels_format() {
    assert_eq!(format_value(3.0), "3");
    assert_eq!(format_value(0.25), "0.25");
    assert_eq!(format_value(f64::NAN), "NaN");
    assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
    assert_eq!(escape_label("a\nb\"c\\"), "a\\nb\\\"c\\\\");
}

/// Prometheus's naming guide and node_exporter's shape: counters end in `_total`, sizes in
/// `_bytes`, times in `_seconds`; no label named `kind` or `period` splits a metric into parts
/// that overlap (a total beside its parts).
#[test]
fn names_follow_the_naming_guide() {
    let v = view();
    let text = rendered(&v, &v.tasks, BUILD);
    let mut kinds = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            kinds.insert(name.to_string(), kind.to_string());
        }
    }
    for (name, kind) in &kinds {
        assert!(name.starts_with("hood_"), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{name}"
        );
        assert_eq!(
            kind == "counter",
            name.ends_with("_total"),
            "{name} is a {kind}"
        );
        if name.contains("memory") || name.contains("swap") {
            assert!(name.ends_with("_bytes"), "{name}");
        }
    }
    for overlapping in ["kind=\"total\"", "period="] {
        assert!(!text.contains(overlapping), "{overlapping} in:\n{text}");
    }
    for name in [
        "hood_memory_total_bytes",
        "hood_memory_available_bytes",
        "hood_swap_free_bytes",
        "hood_load15",
        "hood_process_resident_memory_bytes",
        "hood_build_info",
    ] {
        assert!(kinds.contains_key(name), "{name} missing");
    }
}

#[test]
fn cgroups_are_bounded_to_the_busiest_and_their_labels_escaped() {
    use hood_monitor::view::CgroupView;
    let mut v = view();
    let mut cgs: Vec<CgroupView> = (0..MAX_CGROUPS as u64 + 50)
        .map(|i| CgroupView {
            path: format!("/g{i:03}"),
            name: format!("g{i:03}"),
            depth: 1,
            cpu_time_ms: i * 1000,
            ..CgroupView::default()
        })
        .collect();
    cgs.push(CgroupView {
        path: "/system.slice/a\"b\\c\nd.service".into(),
        depth: 2,
        cpu_time_ms: 1 << 40,
        memory_bytes: Some(4096),
        ..CgroupView::default()
    });
    v.cgroups = Some(cgs);
    let text = rendered(&v, &[], BUILD);
    let cpu: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("hood_cgroup_cpu_seconds_total{"))
        .collect();
    assert_eq!(cpu.len(), MAX_CGROUPS, "{text}");
    // The idlest 51 are left out, the busiest kept.
    assert!(!text.contains("cgroup=\"/g050\"") && text.contains("cgroup=\"/g149\""));
    assert!(text.contains("cgroup=\"/g051\""));
    // Quote, backslash and newline escaped in both labels; the name says it is a service.
    let esc = r#"cgroup="/system.slice/a\"b\\c\nd.service",name="service:a\"b\\c\nd""#;
    assert!(
        text.contains(&format!("hood_cgroup_memory_bytes{{{esc}}} 4096")),
        "{text}"
    );
    // Memory is read for one cgroup only: the others have no series, and no family is
    // empty where no cgroup has the value.
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("hood_cgroup_memory_bytes{"))
            .count(),
        1
    );
    assert!(!text.contains("hood_cgroup_read_bytes_per_second"));
}

/// [`render_metrics`] into a string.
fn rendered(view: &SystemView, tasks: &[TaskView], build: BuildInfo<'_>) -> String {
    let mut out = Vec::new();
    render_metrics(&mut out, view, tasks, build).expect("write to a Vec");
    String::from_utf8(out).expect("UTF-8")
}
