//! The privileged-test convention, shared by the tests of hood and of hood-record (which
//! includes this file): a test that needs perf events of every process runs when the process
//! is root or perf_event_paranoid allows it; otherwise it says SKIPPED (which CI looks for), or
//! panics when HOOD_REQUIRE_PRIVILEGED=1 (CI).

/// Whether perf sampling with kernel frames is allowed; otherwise print SKIPPED, or panic when
/// HOOD_REQUIRE_PRIVILEGED=1 (CI).
pub fn privileged(test: &str) -> bool {
    let root = hood_proc::usage::running_as_root();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(3);
    if root || paranoid <= 0 {
        return true;
    }
    if std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
        panic!("{test} needs root or CAP_PERFMON (perf_event_paranoid is {paranoid}) and HOOD_REQUIRE_PRIVILEGED=1 forbids skipping");
    }
    eprintln!("SKIPPED (needs root or CAP_PERFMON): {test}");
    false
}
