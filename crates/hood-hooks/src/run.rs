//! What the two recorders that start a command (`trace record`, `calls run`) hold from their
//! open to their finish, as `hood record`'s run skeleton does (hood-record `recorder.rs`):
//! open → start → until a stop → finish, where an error inside the run is a stop with a
//! reason, the file is finished (or put in place as far as it was written), and the command
//! and the segment directory are handled on every way out, a panic included.

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

use hood_proc::child::{Child, Exit};
use hood_proc::steer::Steering;

use crate::HooksError;

/// How a run's rounds ended, handed from its `until_stop` to its `finish` (`trace record`
/// and the probe session of `--probe`; `calls run` watches its command in one step).
pub(crate) struct End {
    /// How the command ended, when it did while recorded.
    pub(crate) ended: Option<Exit>,
    /// Why recording stopped before the command ended (a limit, `-d`, a command that ignored
    /// a stop signal; for attached processes a stop request or the end of all of them), if it
    /// did.
    pub(crate) cut: Option<String>,
    /// The error that ended the run, if one did.
    pub(crate) error: Option<String>,
}

/// The command a recorder started: killed (SIGKILL) and reaped on every way out that did not
/// wait for it (an error before the run started, a panic); a no-op once it was reaped.
pub(crate) struct Command(pub(crate) Child);

impl Drop for Command {
    fn drop(&mut self) {
        self.0.kill();
    }
}

impl Deref for Command {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl DerefMut for Command {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// Look at the steer once before the command starts: a stop request that came already (a
/// Ctrl-C while the recorder set up) ends the run there, with nothing started, as the signal
/// would have ended the recorder before it was steered.
pub(crate) fn not_stopped_yet(steering: &mut Steering<'_>) -> Result<(), HooksError> {
    steering.look(None);
    match steering.stop() {
        Some(s) => Err(HooksError::StoppedBeforeStart(s.words())),
        None => Ok(()),
    }
}

/// What the recorder says when the command still runs [`STOP_GRACE`] after a stop request:
/// recording stopped there.
///
/// [`STOP_GRACE`]: hood_proc::steer::STOP_GRACE
pub(crate) fn still_runs(prog: &str, pid: i32, stop: &hood_proc::steer::StopRequest) -> String {
    format!(
        "{prog} (pid {pid}) still runs {} s after {}",
        hood_proc::steer::STOP_GRACE.as_secs(),
        stop.words()
    )
}

/// A recorder's private segment directory: removed on every way out (a panic included),
/// unless kept (`--keep`), which [`SegmentDir::close`] says.
pub(crate) struct SegmentDir {
    path: PathBuf,
    keep: bool,
    closed: bool,
}

impl SegmentDir {
    pub(crate) fn new(path: PathBuf, keep: bool) -> SegmentDir {
        SegmentDir {
            path,
            keep,
            closed: false,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Remove the directory, or say where it was kept.
    pub(crate) fn close(mut self, log: &mut dyn FnMut(String)) {
        self.closed = true;
        match self.keep {
            true => log(format!("segments kept in {}", self.path.display())),
            false => {
                let _ = std::fs::remove_dir_all(&self.path);
            }
        }
    }
}

impl Drop for SegmentDir {
    fn drop(&mut self) {
        if !self.closed && !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The line a recorder prints when an error ended its run: what the file holds, and how to
/// read it.
pub(crate) fn stopped_early(error: &str, file: &Path, report: &str) -> String {
    format!(
        "recording stopped early: {error}; `{report} -i {}` reads what was written",
        file.display()
    )
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;

/// Faults a unit test injects into a run (not in a build of the library for use), as
/// hood-record's recorder does: no timing, the n-th call at a point fails.
#[cfg(test)]
pub(crate) mod seam {
    use std::cell::Cell;

    /// Where a fault is injected.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Point {
        /// A round of `trace record` (draining the rings into the file).
        TraceRound,
        /// A look at the command of `calls run` while it runs.
        CallsWatch,
        /// A round of the probe session (`--probe`) that took hits.
        ProbeRound,
    }

    thread_local! {
        /// The point that fails, and how many calls there succeed first.
        static FAIL: Cell<Option<(Point, u32)>> = const { Cell::new(None) };
    }

    /// Make the call at `point` fail after `after` calls there succeeded (this thread only).
    pub fn fail(point: Point, after: u32) {
        FAIL.with(|f| f.set(Some((point, after))));
    }

    /// An error (ENOSPC, as a full disk gives) when a fault is due at `point`.
    pub fn fails(point: Point) -> Result<(), crate::HooksError> {
        FAIL.with(|f| match f.get() {
            Some((p, 0)) if p == point => {
                f.set(None);
                Err(crate::HooksError::Io {
                    what: format!("{point:?} (a fault injected by a test)"),
                    source: std::io::Error::from_raw_os_error(28),
                })
            }
            Some((p, n)) if p == point => {
                f.set(Some((p, n - 1)));
                Ok(())
            }
            _ => Ok(()),
        })
    }
}
