//! `hood top --irq-time` (root): handler times from the irq/softirq tracepoints (perf events,
//! no tracefs instance of its own); stale instances of dead hood processes are removed.

use std::path::Path;

use crate::common;

const HOOD: &str = env!("CARGO_BIN_EXE_hood");

fn privileged(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        if std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
            panic!("{test} needs root (HOOD_REQUIRE_PRIVILEGED=1)");
        }
        println!("SKIPPED (needs root or CAP_PERFMON): {test}");
    }
    root
}

#[test]
fn irq_time_measures_handlers_and_cleans_up() {
    if !privileged("irq_time_measures_handlers_and_cleans_up") {
        return;
    }
    // It plants and removes tracefs instances, as `record --labels` and the killed-recorder
    // tests do: never beside another user of tracefs.
    let _one = crate::common::exclusive();
    let out = common::command(HOOD)
        .args(["top", "-b", "-n", "1", "-d", "0.1"])
        .arg("--irq-time")
        .output()
        .expect("hood top");
    assert!(out.status.success());
    let inst = Path::new("/sys/kernel/tracing/instances");
    assert!(inst.is_dir(), "tracefs mounted by hood when missing");
    // A stale instance of a dead hood process (pid beyond pid_max).
    let stale = inst.join("hood-4999999");
    std::fs::create_dir(&stale).expect("create stale instance");
    let out = common::command(HOOD)
        .args([
            "top",
            "-b",
            "-n",
            "2",
            "-d",
            "0.5",
            "--json",
            "--irq-time",
            "-m",
            "e",
        ])
        .output()
        .expect("hood top");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stale.exists(), "stale instance removed");
    let text = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value =
        serde_json::from_str(text.lines().last().expect("frames")).expect("JSON");
    let it = &last["exceptions"]["irq_time"];
    assert!(it["unavailable"].is_null(), "{it}");
    let handlers = it["handlers"].as_array().expect("handlers");
    // The timer softirq runs on every tick of a busy or idle system.
    let timer = handlers
        .iter()
        .find(|h| h["kind"] == "softirq" && h["name"] == "TIMER")
        .expect("TIMER softirq seen");
    assert!(timer["count"].as_u64().expect("count") > 0);
    assert!(timer["avg_us"].as_f64().expect("avg") >= 0.0);
    assert!(it["events"].as_u64().expect("events") >= timer["count"].as_u64().expect("count"));
    // No hood-* instance left behind by the finished runs.
    let left: Vec<String> = std::fs::read_dir(inst)
        .expect("instances")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // Only the monitor's own instances (`hood-PID`); other hood tools use other prefixes.
        .filter_map(|n| {
            let pid = n.strip_prefix("hood-")?;
            (pid.chars().all(|c| c.is_ascii_digit()) && !Path::new("/proc").join(pid).exists())
                .then_some(n)
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
