//! Recorders for the compiler-inserted entry/exit hooks (`-finstrument-functions`): call-path
//! tables and event traces, read from the shared-memory segments the hood-rt runtime writes.
//!
//! Owns: the segment directory (each recorder's private directory, the stale ones killed
//! recorders leave), reading and checking segments into `hood_model`'s call-path and trace
//! values, naming the hooked functions, streaming trace rings into a trace file while the
//! program runs, pre-faulting those rings, and the `--filter/--exclude` address table. May
//! depend on: hood-abi (the segment layout), hood-model, hood-format, hood-symbols,
//! hood-procfs, hood-proc (the system calls on shared files and other processes' memory) and
//! hood-perf (a trace's context-switch and irq rings); never on the `hood` binary. Segments are untrusted input: a bad one is skipped with a warning
//! that names it, never a panic, a hang or an allocation sized by its claims.
#![forbid(unsafe_code)]

pub mod segments;
pub mod symbols;
pub mod trace;

use std::path::PathBuf;

/// What a recorder of the hooks could not do.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// A segment that is not read (further): what is wrong with it, in words (the caller
    /// names the file).
    #[error("{0}")]
    Segment(String),
    /// A segment file refused by its checks, or a read of it that failed.
    #[error(transparent)]
    Proc(#[from] hood_proc::ProcError),
    /// Writing the output file.
    #[error(transparent)]
    Format(#[from] hood_format::FormatError),
    /// Encoding a chunk's JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Setting up symbolization.
    #[error(transparent)]
    Symbols(#[from] hood_symbols::SymbolError),
    /// A recording that cannot start as configured (no command, a command not found).
    #[error("{0}")]
    Config(String),
    /// Opening or reading a kernel ring (context switches, irqs).
    #[error(transparent)]
    Perf(#[from] hood_perf::PerfError),
    /// Writing a file the recorder made.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The recorder's private segment directory could not be created.
    #[error("creating the segment directory {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}
