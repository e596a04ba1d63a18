//! hood's door for reading recordings back: the library behind `hood report`, `annotate`,
//! `diff`, `calls report` and serve's profile endpoint. A profile recording (hood's own or a
//! perf.data file) is read with its `--labels` part in one pass, interpreted by hood-model and
//! every unique address named once by hood-symbols ([`load_profile`]); a call-path recording
//! is read into hood-tracemodel's tables ([`calls::read`]); an event trace is opened for the
//! passes of its report ([`trace::TraceFile`]). [`open_for`] says what kind of
//! file a recording is before a command reads it, with one message for a file of another
//! kind, naming what it is and the command that reads it.
//!
//! Owns: reading a recording and naming its addresses, and what a perf.data file lacks taken
//! from this system (kallsyms, the vDSO, JIT maps). May depend on: hood-format, hood-model,
//! hood-tracemodel, hood-raw, hood-symbols, hood-unwind and hood-procfs (this system's kallsyms
//! and JIT maps); never on a recorder (hood-record, hood-hooks), a renderer or the binary. It
//! prints nothing: warnings go to the caller.

#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod calls;
mod kind;
mod perfdata;
mod profile;
pub mod trace;

pub use kind::{open, open_for, Command, Kind, WrongKind};
pub use profile::{load_profile, load_profile_labeled, load_profile_timed, LoadTiming};

/// What stopped a recording from being read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading a recording (hood's own or a perf.data file) failed.
    #[error(transparent)]
    Model(#[from] hood_model::ModelError),
    /// Setting up symbolization failed.
    #[error(transparent)]
    Symbols(#[from] hood_symbols::SymbolError),
    /// A trace file could not be read.
    #[error(transparent)]
    Trace(#[from] hood_tracemodel::TraceModelError),
    /// The file is of a kind the command does not read.
    #[error("{0}")]
    WrongKind(WrongKind),
    /// The file could not be opened or read, or is of another kind.
    #[error(transparent)]
    Format(#[from] hood_format::FormatError),
    /// A call-path file's process chunk could not be decoded.
    #[error("{}", path.display())]
    CallsDecode {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with the chunk.
        source: hood_tracemodel::TraceModelError,
    },
    /// A call-path file without call-path data.
    #[error("{}: no call-path data in this file", .0.display())]
    NoCallPaths(std::path::PathBuf),
}
