//! The recorder library on its own: a command's recording and exit status, stop and pause
//! requests, a command that cannot start. Privileged (perf events): run as root here and in CI.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hood_format::tags;
use hood_model::profile::RecordStats;
use hood_proc::child::Child;
use hood_proc::steer::{NoSteer, Request, Steer, StopFlag};
use hood_record::{record, RecordConfig, RecordError, Who};

/// One perf recording at a time in this test binary.
static PERF: Mutex<()> = Mutex::new(());

// The privileged-test convention of hood's tests (one implementation for both crates).
#[path = "../../hood/tests/common/privileged.rs"]
mod privileged;
use privileged::privileged;

fn stats_of(path: &Path) -> (RecordStats, Vec<u32>) {
    let mut r = hood_format::Reader::open(path).unwrap();
    let mut stats = None;
    let mut tags_seen = Vec::new();
    for c in r.chunks() {
        let c = c.unwrap();
        tags_seen.push(c.tag);
        if c.tag == tags::profile::STATS {
            stats = Some(serde_json::from_slice(&c.data).unwrap());
        }
    }
    (stats.expect("a STATS chunk"), tags_seen)
}

fn sh(script: &str) -> Who {
    Who::Command(vec!["sh".into(), "-c".into(), script.into()])
}

#[test]
fn a_command_is_recorded_and_its_exit_status_returned() {
    if !privileged("a_command_is_recorded_and_its_exit_status_returned") {
        return;
    }
    let _l = PERF.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmd.hood");
    let cfg = RecordConfig::new(
        sh("i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; exit 3"),
        out.clone(),
    );
    let mut lines = Vec::new();
    let f = record(&cfg, &mut NoSteer, &mut |l| lines.push(l.to_string())).unwrap();
    assert_eq!(f.exit_status, Some(3));
    assert!(f.outcome.error.is_none(), "{:?}", f.outcome.error);
    assert!(f.outcome.samples > 0, "no samples: {lines:?}");
    assert_eq!(f.outcome.bytes, std::fs::metadata(&out).unwrap().len());
    let (stats, seen) = stats_of(&out);
    assert_eq!(stats.stop_reason, "command exited");
    assert_eq!(stats.exit_status, Some(3));
    for t in [
        tags::profile::META,
        tags::profile::PERF_ATTR,
        tags::profile::PERF_RECORDS,
    ] {
        assert!(seen.contains(&t), "chunk {t} missing: {seen:?}");
    }
    // The summary goes to the caller's sink, without a prefix.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("wrote ") && l.contains(" samples on ")),
        "{lines:?}"
    );
}

#[test]
fn a_stop_flag_ends_a_recording_of_the_machine() {
    if !privileged("a_stop_flag_ends_a_recording_of_the_machine") {
        return;
    }
    let _l = PERF.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all.hood");
    let cfg = RecordConfig::new(Who::System, out.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let setter = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        })
    };
    let t = Instant::now();
    let f = record(&cfg, &mut StopFlag(&stop), &mut |_| {}).unwrap();
    setter.join().unwrap();
    assert!(t.elapsed() >= Duration::from_millis(500));
    assert!(f.exit_status.is_none());
    let (stats, seen) = stats_of(&out);
    assert_eq!(stats.stop_reason, "stopped by user");
    assert!(seen.contains(&tags::profile::PROC_SNAPSHOT), "{seen:?}");
}

/// Pauses, then stops: the pause is noted in the file and in the messages.
struct Script(Vec<Vec<Request>>);

impl Steer for Script {
    fn poll(&mut self, _command: Option<&Child>) -> Vec<Request> {
        if self.0.is_empty() {
            vec![Request::stop()]
        } else {
            self.0.remove(0)
        }
    }
}

#[test]
fn pause_requests_are_honoured_and_counted() {
    if !privileged("pause_requests_are_honoured_and_counted") {
        return;
    }
    let _l = PERF.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pause.hood");
    let cfg = RecordConfig::new(Who::System, out.clone());
    let mut script = Script(vec![
        vec![Request::TogglePause],
        vec![],
        vec![Request::TogglePause],
    ]);
    let mut lines = Vec::new();
    record(&cfg, &mut script, &mut |l| lines.push(l.to_string())).unwrap();
    assert!(lines.iter().any(|l| l.starts_with("paused")), "{lines:?}");
    assert!(lines.iter().any(|l| l == "resumed"), "{lines:?}");
    let (stats, _) = stats_of(&out);
    assert!(stats.paused_ns > 0, "pause not counted");
}

#[test]
fn a_command_that_cannot_start_leaves_no_file() {
    if !privileged("a_command_that_cannot_start_leaves_no_file") {
        return;
    }
    let _l = PERF.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("none.hood");
    let cfg = RecordConfig::new(
        Who::Command(vec!["no-such-command-hood-record".into()]),
        out.clone(),
    );
    let e = record(&cfg, &mut NoSteer, &mut |_| {}).unwrap_err();
    assert!(
        matches!(
            e,
            RecordError::Proc(hood_proc::ProcError::CommandNotFound { .. })
        ),
        "{e}"
    );
    assert!(e
        .to_string()
        .contains("command not found: no-such-command-hood-record"));
    assert!(!out.exists());
}
