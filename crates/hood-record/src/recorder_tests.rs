//! Errors inside a run: a fault injected at the run's calls into the kernel (the `seam`) ends
//! the run with a stop reason naming it, and the file is finalized, readable and summed up all
//! the same. Privileged (perf events): run as root here and in CI.

use std::path::Path;
use std::sync::Mutex;

use hood_model::profile::{RawRecording, RecordStats};

use super::seam::{self, Point};
use hood_proc::child::Child;
use hood_proc::steer::{NoSteer, Request, Steer};

use super::record;
use crate::{RecordConfig, Who};

// The privileged-test convention of hood's tests (one implementation for every crate).
#[path = "../../hood/tests/common/privileged.rs"]
mod privileged;
use privileged::privileged;

/// One perf recording at a time in this test binary.
static PERF: Mutex<()> = Mutex::new(());

/// The file as a report reads it: no warning of a cut-off file, and its STATS chunk.
fn read_back(path: &Path) -> RecordStats {
    let rec = RawRecording::load(path).unwrap();
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    rec.stats.expect("a STATS chunk: the file was finalized")
}

#[test]
fn a_poll_error_mid_run_finalizes_the_file_and_kills_the_command() {
    if !privileged("a_poll_error_mid_run_finalizes_the_file_and_kills_the_command") {
        return;
    }
    let _l = PERF.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("poll.hood");
    // A command that would run for a minute: only a kill ends it before that.
    let cfg = RecordConfig::new(
        Who::Command(vec![
            "sh".into(),
            "-c".into(),
            "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 60".into(),
        ]),
        out.clone(),
    );
    seam::fail(Point::Wait, 2);
    let mut lines = Vec::new();
    let f = record(&cfg, &mut NoSteer, &mut |l| lines.push(l.to_string()))
        .expect("an error inside the run is an outcome, not an error");
    let error = f.outcome.error.as_deref().unwrap_or_default();
    assert!(error.contains("poll"), "{error:?}");
    // The command was killed (SIGKILL: 128 + 9) and reaped, not waited for.
    assert_eq!(f.exit_status, Some(137), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("killing the recorded command")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("recording stopped early: ")),
        "{lines:?}"
    );
    let stats = read_back(&out);
    assert_eq!(stats.stop_reason, "poll error");
    assert_eq!(stats.error.as_deref(), Some(error));
    assert_eq!(stats.exit_status, Some(137));
    assert_eq!(f.outcome.bytes, std::fs::metadata(&out).unwrap().len());
}

/// Pauses at the first look, then resumes at the second (which the seam fails).
struct PauseResume(u32);

impl Steer for PauseResume {
    fn poll(&mut self, _command: Option<&Child>) -> Vec<Request> {
        self.0 += 1;
        match self.0 {
            1 | 2 => vec![Request::TogglePause],
            _ => vec![Request::stop()],
        }
    }
}

#[test]
fn a_resume_that_fails_finalizes_the_file_with_its_pause_counted() {
    if !privileged("a_resume_that_fails_finalizes_the_file_with_its_pause_counted") {
        return;
    }
    let _l = PERF.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pause.hood");
    let cfg = RecordConfig::new(Who::System, out.clone());
    // The pause's ioctl succeeds; the resume's fails.
    seam::fail(Point::Switch, 1);
    let mut lines = Vec::new();
    let f = record(&cfg, &mut PauseResume(0), &mut |l| {
        lines.push(l.to_string())
    })
    .unwrap();
    let error = f.outcome.error.as_deref().unwrap_or_default();
    assert!(error.contains("ioctl"), "{error:?}");
    assert!(f.exit_status.is_none());
    assert!(lines.iter().any(|l| l.starts_with("paused")), "{lines:?}");
    assert!(!lines.iter().any(|l| l == "resumed"), "{lines:?}");
    let stats = read_back(&out);
    assert_eq!(stats.stop_reason, "pause error");
    assert_eq!(stats.error.as_deref(), Some(error));
    assert!(stats.paused_ns > 0, "the pause is not counted");
}
