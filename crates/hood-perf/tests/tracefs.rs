//! tracefs discovery (mounting it when root) and tracepoint ids.

use hood_perf::{tracefs, PerfError};

#[test]
fn finds_tracefs_and_sched_switch_id() {
    let root = match tracefs::mount_point() {
        Ok(r) => r,
        Err(e @ PerfError::NoTracefs { .. }) => {
            // SAFETY: geteuid has no preconditions.
            assert_ne!(
                unsafe { libc::geteuid() },
                0,
                "root could not mount tracefs: {e}"
            );
            if std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
                panic!("tracefs unavailable: {e}");
            }
            println!("SKIPPED (needs root or CAP_PERFMON): finds_tracefs_and_sched_switch_id");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(root.join("events").is_dir());
    let id = tracefs::tracepoint_id("sched", "sched_switch").unwrap();
    let text = std::fs::read_to_string(root.join("events/sched/sched_switch/id")).unwrap();
    assert_eq!(id, text.trim().parse::<u64>().unwrap());
    assert!(matches!(
        tracefs::tracepoint_id("sched", "no_such_event"),
        Err(PerfError::NoTracepoint { .. })
    ));
    assert!(matches!(
        tracefs::tracepoint_id("..", "id"),
        Err(PerfError::NoTracepoint { .. })
    ));
}
