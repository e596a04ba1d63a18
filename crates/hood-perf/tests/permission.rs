//! Running without privileges gives an error that names perf_event_paranoid and
//! the fix. As root the test re-runs itself as the unprivileged user `nobody`.

use std::os::unix::process::CommandExt;
use std::process::Command;

use hood_perf::{paranoid_level, PerfError, SamplingConfig, Session, Target};

const INNER: &str = "HOOD_PERF_PERMISSION_INNER";

#[test]
fn unprivileged_system_wide_names_paranoid_and_fix() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root && std::env::var_os(INNER).is_none() {
        let exe = std::env::current_exe().unwrap();
        let out = Command::new(exe)
            .args([
                "--exact",
                "unprivileged_system_wide_names_paranoid_and_fix",
                "--nocapture",
            ])
            .env(INNER, "1")
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "unprivileged run failed:\n{text}");
        assert!(
            text.contains("1 passed"),
            "unprivileged run did not run the test:\n{text}"
        );
        return;
    }
    if paranoid_level().is_none_or(|p| p <= 0) {
        println!("perf_event_paranoid allows system-wide profiling; no permission error to check");
        return;
    }
    match Session::open(&SamplingConfig::default(), &Target::System) {
        Err(e @ PerfError::Permission { .. }) => {
            let PerfError::Permission { paranoid, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*paranoid, paranoid_level());
            let msg = e.to_string();
            println!("{msg}");
            let level = format!("perf_event_paranoid is {}", paranoid_level().unwrap());
            assert!(msg.contains(&level), "{msg}");
            assert!(msg.contains("sysctl kernel.perf_event_paranoid=0"), "{msg}");
            assert!(msg.contains("CAP_PERFMON"), "{msg}");
        }
        other => panic!("expected a permission error, got {other:?}"),
    }
}
