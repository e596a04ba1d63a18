//! Owns the pure data model of profiles: reading them into memory (hood's files, perf.data
//! imported), interpreting profiles and their aggregation, labels attribution (traces and
//! call paths are hood-tracemodel's, the monitor's model is hood-monitor's). May depend on
//! hood-raw (the byte decoders) and hood-format; never on the kernel.
//!
//! Pure data model of hood: decoded recordings, profiles and their aggregation. Nothing here touches the kernel, so reports work on another machine.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod labels;
pub mod perfdata;
pub mod profile;

/// Errors of the model layer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The container could not be read.
    #[error(transparent)]
    Format(#[from] hood_format::FormatError),
    /// Raw bytes in the recording could not be decoded, or a chunk's content is malformed
    /// ([`hood_raw::RawError::Malformed`]).
    #[error(transparent)]
    Raw(#[from] hood_raw::RawError),
}
