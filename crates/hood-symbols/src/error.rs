//! The one error type of this crate.

use std::path::PathBuf;

/// Errors of `hood-symbols`.
///
/// Per-address failures are not errors: they are reported as
/// [`Unresolved`](crate::Unresolved) values. A `SymbolError` is returned
/// only when a whole request cannot go ahead (an unreadable `--symfile`,
/// a malformed line in strict parsing, a file that is not ELF).
#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    /// A file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line of a text symbol file (nm-format `--symfile`, perf map)
    /// could not be parsed.
    #[error("{file}:{line}: {reason}; expected {expected}")]
    BadLine {
        /// The file name (or a description such as `/tmp/perf-42.map`).
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        reason: String,
        /// The format the line should have.
        expected: &'static str,
    },
    /// The bytes are not an ELF image (or its headers are truncated).
    #[error("{what} is not a valid ELF file: {reason}")]
    NotElf {
        /// The file path or image description.
        what: String,
        /// Which check failed.
        reason: &'static str,
    },
    /// A file that is not a regular file, or not one to trust (see [`hood_format::untrusted`]).
    #[error(transparent)]
    Refused(hood_format::FormatError),
    /// A `--probe` spec that selects nothing, or what it selects cannot be probed.
    #[error("--probe {spec}: {reason}")]
    Probe {
        /// The spec as given.
        spec: String,
        /// Why, with the fix.
        reason: String,
    },
    /// A `--probe OBJECT:GLOB` whose library is not among those the program needs or has
    /// mapped: it may still be loaded later (`dlopen`).
    #[error("--probe {spec}: {reason}")]
    ProbeLibraryAbsent {
        /// The spec as given.
        spec: String,
        /// What was looked at.
        reason: String,
    },
    /// The code or source text asked for cannot be shown.
    #[error("{}: {reason}", path.display())]
    NoCode {
        /// The binary or source file.
        path: PathBuf,
        /// Why, in words.
        reason: String,
    },
}
