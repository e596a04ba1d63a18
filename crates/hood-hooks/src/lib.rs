//! Recorders for the compiler-inserted entry/exit hooks (`-finstrument-functions`): call-path
//! tables and event traces, read from the shared-memory segments the hood-rt runtime writes.
//!
//! Owns: the runtime library preloaded into the started commands, the segment directory (each
//! recorder's private directory, the stale ones killed recorders leave), reading and checking
//! segments into `hood_tracemodel`'s call-path and trace values, naming the hooked functions, the
//! `calls` recorder (`run`, `get`, `reset`: tables collected into Calls files, snapshots while
//! the command runs) and its file (written here, read back by hood-load), streaming trace
//! rings into a trace file while the program runs, pre-faulting those rings, and the
//! `--filter/--exclude` address table. May
//! depend on: hood-abi (the segment layout), hood-model, hood-raw (irq records, /proc maps), hood-format, hood-symbols,
//! hood-procfs, hood-proc (the system calls on shared files and other processes' memory) and
//! hood-perf (a trace's context-switch and irq rings); never on the `hood` binary. Segments are
//! untrusted input: a bad one is skipped with a warning that names it, never a panic, a hang or
//! an allocation sized by its claims.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod calls;
pub mod probe;
mod run;
pub mod runtime;
pub mod segments;
pub mod symbols;
pub mod trace;

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
    /// The runtime library to preload is not where it should be.
    #[error("{0}")]
    Runtime(String),
    /// A stop request (a signal, Ctrl-C) came before the command was started: it was not
    /// started, and nothing was recorded.
    #[error(
        "{0} received before the command started: it was not started, and nothing was recorded"
    )]
    StoppedBeforeStart(String),
    /// A recorder that starts a command was given none.
    #[error("no command given")]
    NoCommand,
    /// The output file could not be written: what it holds instead.
    #[error("{what}")]
    Output {
        /// What the file holds now.
        what: String,
        /// Why it could not be written.
        source: Box<HooksError>,
    },
    /// A system call on a file or directory failed (writing a file the recorder made,
    /// creating its segment directory, writing a segment's reset counter).
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}
