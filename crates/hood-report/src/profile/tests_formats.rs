//! Tests of the JSON, collapsed, SVG, intervals and top renderers on hand-built profiles.

use hood_model::profile::{Mode, Profile};
use serde_json::Value;

use super::testutil::{known, Builder, START};
use super::*;
use crate::ReportError;

fn render(
    f: fn(&Profile, &ReportOptions, &mut dyn std::io::Write) -> Result<(), ReportError>,
    p: &Profile,
    o: &ReportOptions,
) -> String {
    let mut out = Vec::new();
    f(p, o, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn json_has_schema_version_totals_and_rows() {
    let s = render(render_json, &known(), &ReportOptions::default());
    let v: Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["schema_version"], SCHEMA_VERSION);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["totals"]["samples"], 1000);
    assert_eq!(v["totals"]["kernel"], 10);
    assert_eq!(v["totals"]["idle"], 55);
    assert_eq!(v["meta"]["freq_hz"], 1000);
    assert_eq!(v["finalized"], true);
    assert!(v["call_graph"].is_null());
    let f = &v["functions"];
    assert_eq!(f.as_array().unwrap().len(), 7, "all rows, no threshold");
    assert_eq!(f[0]["name"], "work_a");
    assert_eq!(f[0]["pid"], 100);
    assert_eq!(f[0]["comm"], "work");
    assert_eq!(f[0]["samples"], 500);
    assert_eq!(f[0]["percent"], 50.0);
    let sum: u64 = f
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["samples"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, 1000);
    let rz = f
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "read_zero")
        .unwrap();
    assert_eq!(rz["kernel"], true);
    assert_eq!(rz["dso"], "[kernel.kallsyms]");
    let p = &v["processes"];
    assert_eq!(p[0]["pid"], 100);
    assert_eq!(p[0]["percent"], 84.0);
    assert_eq!(p[0]["functions"][0]["percent_of_process"], 59.524);
    assert_eq!(p[1]["comm"], "helper");
    assert_eq!(p[2]["comm"], "[idle]");
    let t = v["threads"].as_array().unwrap();
    let spinner = t.iter().find(|r| r["tid"] == 201).unwrap();
    assert_eq!(spinner["comm"], "spinner");
    assert_eq!(spinner["samples"], 100);
    assert_eq!(v["dsos"][0]["dso"], "work");
    assert_eq!(v["dsos"][0]["samples"], 830);
}

#[test]
fn json_respects_filter() {
    let mut o = ReportOptions::default();
    o.filter.mode = Some(Mode::User);
    let v: Value = serde_json::from_str(&render(render_json, &known(), &o)).unwrap();
    assert_eq!(v["filter"]["mode"], "user");
    assert_eq!(v["totals"]["samples"], 935);
    assert_eq!(v["functions"][0]["percent"], 53.476);
}

#[test]
fn collapsed_counts_sum_to_samples() {
    let p = known();
    let s = render(render_collapsed, &p, &ReportOptions::default());
    let sum: u64 = s
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(sum, p.samples.len() as u64);
    assert!(s
        .lines()
        .any(|l| l == "work;main;work_c;sys_read_[k];read_zero_[k] 10"));
    assert!(s.lines().any(|l| l == "helper;main2;spin 100"));
    let mut o = ReportOptions::default();
    o.filter.mode = Some(Mode::Kernel);
    let s = render(render_collapsed, &p, &o);
    assert_eq!(s, "work;main;work_c;sys_read_[k];read_zero_[k] 10\n");
}

#[test]
fn svg_flamegraph_has_title_and_frames() {
    let s = render(render_svg, &known(), &ReportOptions::default());
    assert!(s.contains("<svg"));
    assert!(s.contains("hood: command `./work 60`"));
    assert!(s.contains("work_a"));
    // inferno drops the `_[k]` annotation from the label and paints kernel frames orange.
    assert!(s.contains("read_zero (10 samples, 1.00%)"));
    // Frame colours: only the orange family (kernel frames) has no blue.
    let blue = |name: &str| {
        let at = s.find(&format!("<title>{name} (")).unwrap();
        let fill = &s[at..][s[at..].find("fill=\"rgb(").unwrap() + 10..];
        fill[..fill.find(')').unwrap()]
            .rsplit(',')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(blue("read_zero"), "0");
    assert_eq!(blue("sys_read"), "0");
    assert_ne!(blue("work_a"), "0");
    let mut o = ReportOptions::default();
    o.filter.pid = Some(4242);
    let mut out = Vec::new();
    let e = render_svg(&known(), &o, &mut out).unwrap_err();
    assert!(matches!(e, ReportError::NoSamples { .. }));
    assert!(e.to_string().contains("pid 4242"), "{e}");
}

#[test]
fn intervals_show_delay_distribution_per_cpu() {
    let mut b = Builder::new();
    let f = b.func("f", "x");
    // CPU 0: 1 ms period; the 4th sample comes 0.8 ms late: intervals 1,1,1.8,0.2,1,...
    let mut times: Vec<u64> = (0..101).map(|i| START + i * 1_000_000).collect();
    times[3] += 800_000;
    for t in times {
        b.sample_at(0, t, &[f]);
    }
    // CPU 1: a single sample, no interval.
    b.sample_at(1, START, &[f]);
    let mut p = b.finish(&[]);
    // A whole-system recording: each CPU on its own timer (the builder's one thread is on
    // two CPUs at START, which a command's recording would take for a migration).
    p.meta.mode = hood_model::profile::RecordMode::System;
    let s = render(render_intervals, &p, &ReportOptions::default());
    assert!(s.contains("Nominal period: 1000.0 µs"));
    assert!(s.contains("CPU 0") && !s.contains("CPU 1"));
    let row = |k: &str| {
        s.lines()
            .find(|l| l.trim_start().starts_with(k))
            .unwrap()
            .to_string()
    };
    assert!(row("min").contains("200.0 µs") && row("min").contains("0.20 periods"));
    assert!(row("median").contains("1000.0 µs"));
    assert!(row("max").contains("1800.0 µs") && row("max").contains("1.80 periods"));
    assert!(row("delayed").ends_with("1.00% of samples"));
    assert!(row("< 0.5").contains(" 1   1.00%"));
    assert!(row("0.9 - 1.1").contains(" 98  98.00%"));
    assert!(row("1.5 - 2").contains(" 1   1.00%"));
    p.meta.freq_hz = 0;
    let mut out = Vec::new();
    let e = render_intervals(&p, &ReportOptions::default(), &mut out).unwrap_err();
    assert!(e.to_string().contains("-F HZ"), "{e}");
}

#[test]
fn top_lists_the_heaviest_functions() {
    let mut out = Vec::new();
    render_top(&known(), 3, &mut out).unwrap();
    let s = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("1000 samples (1.0% kernel, 93.5% user, 5.5% idle)"));
    assert_eq!(lines[1], "  50.0%  work_a  work (100)");
    assert_eq!(lines[3], "  10.0%  spin  helper (200)");
}
