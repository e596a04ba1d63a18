//! /proc readers for hood's monitor (`hood top`, `ps`, `info`, `uptime`) and for `hood serve`'s
//! `/metrics`, and the `--irq-time` handler timer.
//!
//! Owns: reading /proc into raw [`Snapshot`](hood_monitor::Snapshot)s (the one /proc
//! reader; [`process`] reads one process's files for the recorders), the parsers of /proc
//! text, the irq/softirq handler timer, the [`Sampler`] that turns one snapshot after another
//! into derived views for `hood top`, and the monitor [`store`] those snapshots are recorded
//! in and replayed from. May depend on: hood-monitor
//! (the snapshot types and their derivation), hood-perf (the irq recorder), hood-raw (its
//! decoder) and hood-format (the store's container, its door to files); no unsafe.
//!
//! [`ProcReader`] takes one snapshot of the system per call, reading only what the
//! [`ScanOptions`](hood_monitor::ScanOptions) ask for and, with [`IdleSkip`], not
//! re-reading processes that did not run. The per-task hot path is hand-written: one reused
//! buffer, one reused path string, held descriptors re-read with `pread`. The root directory is
//! injectable so tests can point it at a fake /proc tree.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod cgroups;
pub mod exits;
pub mod host;
pub mod irq_handlers;
pub mod parse;
pub mod process;
mod reader;
mod sampler;
pub mod store;

pub use reader::{IdleSkip, ProcReader, ScanCounts};
pub use sampler::Sampler;

/// (state, start time in clock ticks since boot) of `pid` from /proc/PID/stat: enough to tell
/// a process from a later one that reuses its pid. `None` when there is no such process.
pub fn state_and_start(pid: i32) -> Option<(char, u64)> {
    let buf = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let mut t = hood_monitor::TaskRaw::default();
    parse::parse_stat(&buf, &mut t)?;
    Some((t.state, t.start_time))
}

use std::path::PathBuf;

/// Errors of the /proc readers. Per-task files that vanish or are unreadable are not errors
/// (the task is skipped or shows what is readable); only system-wide files are.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// A system-wide file could not be read.
    #[error("cannot read {path}: {source} (is procfs mounted? try `mount -t proc proc /proc`)")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A system-wide file had no parseable content.
    #[error("cannot parse {path}: {what}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        what: String,
    },
    /// Tracefs could not be set up for `--irq-time`.
    #[error("{0}")]
    Trace(String),
    /// A monitor store could not be opened, written or read.
    #[error("{}: {what}", path.display())]
    Store {
        /// The store directory or segment.
        path: PathBuf,
        /// What is wrong, and the fix.
        what: String,
    },
    /// A time outside what a store holds.
    #[error("{0}")]
    Time(String),
}
