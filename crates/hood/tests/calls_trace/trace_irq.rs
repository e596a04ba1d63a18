//! Irq and softirq entries/exits merged into `hood trace` (issue 5, kernel context): a real C
//! program (tests/c/trace_irq.c) floods a loopback UDP socket from its traced main thread, so
//! the kernel runs NET_RX softirqs inside that thread's sendto() calls, i.e. inside
//! `send_burst()`; `spin()` makes no system calls. The report must show the softirqs at
//! `send_burst`'s nesting, take their time out of its net time, and not charge them to `spin`.
//! Needs root (raw tracepoint data); otherwise SKIPPED, or a panic under
//! HOOD_REQUIRE_PRIVILEGED=1.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;

use crate::common;

fn hood() -> &'static str {
    env!("CARGO_BIN_EXE_hood")
}

fn record(dir: &Path, data: &Path, env: &[(&str, &str)], cmd: &[&str]) -> Output {
    let out = common::command(hood())
        .args(["trace", "record", "-o"])
        .arg(data)
        .arg("--")
        .args(cmd)
        .env(
            "HOOD_RT_LIB",
            common::runtime_release_dir().join("libhood_rt.so"),
        )
        .env("HOOD_SHM_DIR", dir)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .output()
        .expect("hood trace record");
    assert!(
        out.status.success(),
        "hood trace record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn report(data: &Path, extra: &[&str]) -> String {
    let out = common::command(hood())
        .args(["trace", "report"])
        .args(extra)
        .arg(data)
        .output()
        .expect("hood trace report");
    assert!(
        out.status.success(),
        "hood trace report {extra:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 report")
}

fn analysis(data: &Path) -> Value {
    let v: Value = serde_json::from_str(&report(data, &["--format", "json"])).expect("json");
    v["analysis"].clone()
}

fn func<'a>(a: &'a Value, name: &str) -> &'a Value {
    a["functions"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in the report: {a}"))
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing or not a number in {v}"))
}

/// NET_RX softirqs run so far on all CPUs (/proc/softirqs).
fn net_rx_total() -> u64 {
    let text = std::fs::read_to_string("/proc/softirqs").expect("/proc/softirqs");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("NET_RX:"))
        .expect("NET_RX line in /proc/softirqs");
    line.split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse::<u64>().ok())
        .sum()
}

fn indent(line: &str) -> usize {
    // "s:mmm uuu " then the nesting.
    let rest = line.splitn(3, ' ').nth(2).unwrap_or("");
    rest.len() - rest.trim_start().len()
}

#[test]
fn softirqs_inside_the_sender_are_shown_and_taken_out_of_its_net_time() {
    if !common::privileged("softirqs_inside_the_sender_are_shown_and_taken_out_of_its_net_time") {
        return;
    }
    // One recording at a time (they share 2 CPUs and /proc/softirqs).
    // (`common::exclusive()`: the one lock of every test of this binary that must run alone.)
    let _g = common::exclusive();
    let tmp = tempfile::tempdir().expect("tempdir");
    let exe = build(tmp.path());
    let data = tmp.path().join("irq.data");
    let before = net_rx_total();
    let rec = record(tmp.path(), &data, &[], &[exe.to_str().unwrap(), "20"]);
    let during = net_rx_total() - before;
    let stderr = String::from_utf8_lossy(&rec.stderr);
    assert!(
        stderr.contains("hood trace: irqs: ") && stderr.contains("softirq entries"),
        "record must say what the irq rings held: {stderr}"
    );

    let a = analysis(&data);
    assert_eq!(a["irq"], true, "irq entries must be recorded as root");
    assert_eq!(
        u(&a, "lost_irqs"),
        0,
        "the irq rings must not lose records here"
    );
    let softirqs = u(&a, "softirqs");
    let send = func(&a, "send_burst");
    assert_eq!(u(send, "calls"), 20);
    // 40,000 datagrams sent on loopback: their receive softirqs run inside sendto().
    assert!(
        u(send, "irqs") >= 20,
        "NET_RX softirqs must interrupt send_burst: {send}"
    );
    assert!(u(send, "irq_ns") > 0, "{send}");
    // A leaf: whatever of its elapsed time is not net was irq or off-CPU time.
    let (el, net, off, irq) = (
        u(send, "elapsed_ns"),
        u(send, "net_ns"),
        u(send, "off_cpu_ns"),
        u(send, "irq_ns"),
    );
    let diff = el.abs_diff(net + off + irq);
    assert!(
        diff * 1000 <= el,
        "send_burst: elapsed {el} != net {net} + off-CPU {off} + irq {irq} (diff {diff} ns)"
    );
    // spin() makes no system calls: only the tick's softirqs can hit it (and now() inside it).
    let spin_irqs = u(func(&a, "spin"), "irqs") + u(func(&a, "now"), "irqs");
    assert!(
        spin_irqs * 10 < u(send, "irqs"),
        "softirqs charged to spin ({spin_irqs}) instead of send_burst ({})",
        u(send, "irqs")
    );
    let total_irq: u64 = a["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| u(f, "irq_ns"))
        .sum();
    assert!(
        total_irq <= u(&a, "irq_ns") && u(&a, "irq_ns") <= u(&a, "thread_ns"),
        "per-function irq time {total_irq} must fit in the total {}",
        u(&a, "irq_ns")
    );
    assert_eq!(
        u(&a, "run_ns") + u(&a, "off_cpu_ns") + u(&a, "irq_ns"),
        u(&a, "thread_ns"),
        "run + off-CPU + irq time is the thread time"
    );

    // The summary line, and the code-path trace: NET_RX entries nested inside send_burst.
    let summary = report(&data, &[]);
    assert!(
        summary.contains("irq/softirq time     = ") && summary.contains(" softirqs in the traced"),
        "{summary}"
    );
    let paths = report(&data, &["--paths"]);
    let lines: Vec<&str> = paths.lines().collect();
    let mut net_rx = 0u64;
    let mut inside = 0u64;
    let mut current: Option<(usize, &str)> = None;
    for (k, l) in lines.iter().enumerate() {
        if l.contains("-> ") {
            let name = l.split("-> ").nth(1).and_then(|r| r.split(' ').next());
            current = name.map(|n| (indent(l), n));
        }
        if l.ends_with("---- softirq NET_RX in ----") {
            net_rx += 1;
            let next = lines.get(k + 1).copied().unwrap_or("");
            assert!(
                next.contains("---- softirq out (") || next.contains("---- irq "),
                "a NET_RX entry must be followed by its exit (or a nested hard irq): {l:?} then {next:?}"
            );
            if let Some((ind, "send_burst")) = current {
                if indent(l) == ind + 4 {
                    inside += 1;
                }
            }
        }
    }
    eprintln!(
        "NET_RX softirqs: {net_rx} in the trace ({inside} nested in send_burst), {during} in /proc/softirqs; send_burst irq {irq} ns of {el} ns elapsed"
    );
    assert!(
        net_rx > 0 && net_rx <= during,
        "recorded {net_rx} NET_RX softirqs; /proc/softirqs counted {during} in all"
    );
    assert!(
        inside * 10 >= net_rx * 9,
        "only {inside} of {net_rx} NET_RX lines nested one level inside send_burst"
    );
    assert!(net_rx <= softirqs);

    // Chrome: one irq slice per completed irq, on the thread's track.
    let chrome: Value =
        serde_json::from_str(&report(&data, &["--format", "chrome"])).expect("chrome json");
    let irq_slices: Vec<&Value> = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "irq")
        .collect();
    let outs = lines
        .iter()
        .filter(|l| l.contains("---- softirq out (") || l.contains("---- irq out ("))
        .count();
    assert_eq!(irq_slices.len(), outs);
    assert!(irq_slices
        .iter()
        .any(|e| e["name"] == "softirq NET_RX" && e["ph"] == "X" && e["dur"].as_f64() > Some(0.0)));
}

#[test]
fn without_irq_recording_the_report_says_so_and_charges_nothing() {
    if !common::privileged("without_irq_recording_the_report_says_so_and_charges_nothing") {
        return;
    }
    let _g = common::exclusive();
    let tmp = tempfile::tempdir().expect("tempdir");
    let exe = build(tmp.path());
    let data = tmp.path().join("noirq.data");
    record(
        tmp.path(),
        &data,
        &[("HOOD_TRACE_IRQ", "0")],
        &[exe.to_str().unwrap(), "3"],
    );
    let a = analysis(&data);
    assert_eq!(a["irq"], false);
    assert_eq!(u(&a, "irq_ns"), 0);
    assert_eq!(u(func(&a, "send_burst"), "irq_ns"), 0);
    assert!(report(&data, &[]).contains("irq/softirq time     = not recorded"));
    assert!(!report(&data, &["--paths"]).contains("softirq"));
}

fn build(dir: &Path) -> PathBuf {
    common::instrumented("trace_irq", dir, &["-pthread"], &[])
}
