//! Owns the `hood top` terminal app and the pacing of its sampler thread. May depend on
//! hood-monitor and hood-report; it never reads /proc itself.
//!
//! Terminal UI of `hood top` (ratatui + crossterm). It never touches /proc: it receives derived
//! [`SystemView`]s over a channel and sends back the [`ScanOptions`] its current mode needs, so
//! the sampler reads only what is shown. [`run_sampled`] runs the UI with a thread that reads
//! the views from the caller's [`Source`](hood_monitor::Source).
#![forbid(unsafe_code)]

mod app;
mod draw;
mod sampled;

use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

use hood_monitor::{Mode, ScanOptions, SortKey, SystemView};

pub use app::App;
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
) -> Result<(), TuiError> {
    let mut terminal = ratatui::try_init()?;
    let res = App::new(cfg).run(&mut terminal, &frames, &needs);
    ratatui::try_restore()?;
    res
}
