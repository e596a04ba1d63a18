//! Owns the `hood top` terminal app and the pacing of its sampler thread. May depend on
//! hood-monitor and hood-report; it never reads /proc itself.
//!
//! Terminal UI of `hood top` (ratatui + crossterm). It never touches /proc: it receives derived
//! [`SystemView`]s over a channel and sends back the [`ScanOptions`] its current mode needs, so
//! the sampler reads only what is shown. [`run_sampled`] runs the UI with a thread that reads
//! the views from the caller's [`Source`](hood_monitor::Source); [`run_replay`] runs it on
//! recorded time from the caller's [`Recorded`] store.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod app;
mod draw;
mod sampled;

use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

use hood_monitor::{Mode, Recorded, ScanOptions, Seek, SortKey, SystemView};

pub use app::{signal_name, App, Prompt, PromptKind, ReplayState};
pub use draw::HELP as KEYS;
pub use sampled::run_sampled;

/// Errors of the terminal UI.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be set up, drawn or read.
    #[error("terminal I/O failed: {0} (is stdin/stdout a terminal? use `hood top -b` otherwise)")]
    Io(#[from] std::io::Error),
    /// The views could not be read.
    #[error("{0}")]
    Source(Box<dyn std::error::Error + Send + Sync>),
    /// The thread reading the views panicked.
    #[error("the sampler thread panicked")]
    SamplerPanicked,
}

/// Starting state of the UI.
#[derive(Clone, Debug)]
pub struct TuiConfig {
    /// Initial mode.
    pub mode: Mode,
    /// Initial sort key.
    pub sort: SortKey,
    /// Largest first.
    pub descending: bool,
    /// Initial filter text (empty: none).
    pub filter: String,
    /// Refresh interval (shown in the status line).
    pub delay: Duration,
    /// Whether `--irq-time` handler times are being measured.
    pub irq_time: bool,
    /// Start with the process tree on (`--tree`; `t`/F5 toggle it).
    pub tree: bool,
}

/// What `k` and `n` do once the user confirmed them (the caller's process control: the
/// UI itself never touches a process). Each call names the process by pid and start time
/// (clock ticks after boot), so that a pid reused since the screen showed it is refused.
pub trait Actions: Send {
    /// Send signal `sig` to process `pid`.
    fn signal(&mut self, pid: u32, start_ticks: u64, sig: i32) -> Result<(), String>;
    /// Set the nice value of process `pid` to `nice`.
    fn renice(&mut self, pid: u32, start_ticks: u64, nice: i32) -> Result<(), String>;
}

/// The terminal width, if stdout is a terminal.
pub fn terminal_width() -> Option<u16> {
    ratatui::crossterm::terminal::size().ok().map(|(w, _)| w)
}

/// Run the UI until `q` (or Ctrl-C, or the frame channel closing). The terminal is restored on
/// return and, through ratatui's panic hook, after a panic.
pub fn run(
    cfg: TuiConfig,
    frames: Receiver<SystemView>,
    needs: Sender<ScanOptions>,
    actions: &mut dyn Actions,
) -> Result<(), TuiError> {
    let mut terminal = ratatui::try_init()?;
    let res = App::new(cfg).run(&mut terminal, &frames, &needs, actions);
    ratatui::try_restore()?;
    res
}

/// Run the UI on recorded time, starting at `start`, until `q`. An error reading the first
/// view is returned before the terminal is taken over.
pub fn run_replay<R: Recorded>(cfg: TuiConfig, mut rec: R, start: Seek) -> Result<(), TuiError> {
    let first = rec.seek(start).map_err(|e| TuiError::Source(Box::new(e)))?;
    let mut app = App::new(cfg);
    app.replay = Some(ReplayState {
        note: rec.warnings().pop(),
        utc_offset_s: rec.utc_offset_s(),
        ..ReplayState::default()
    });
    app.raw = Some(first);
    app.rearrange();
    let mut terminal = ratatui::try_init()?;
    let res = app.run_replay(&mut terminal, &mut rec);
    ratatui::try_restore()?;
    res
}
