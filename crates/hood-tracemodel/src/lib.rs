//! Owns the data model of what hood's hook recorders write (`hood trace record`, `hood calls`):
//! trace files read and analysed ([`trace`]), call-path tables built, read and compared
//! ([`calls`]). May depend on hood-raw (the byte decoders), hood-format and hood-abi; never on
//! the kernel, and not on hood-model (the profiles): `hood-reconcile` is where the two meet.
//!
//! Nothing here touches the kernel, so reports work on another machine.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod calls;
pub mod trace;

/// Errors of the trace and call-path model.
#[derive(Debug, thiserror::Error)]
pub enum TraceModelError {
    /// The container could not be read.
    #[error(transparent)]
    Format(#[from] hood_format::FormatError),
    /// Raw bytes in the recording could not be decoded.
    #[error(transparent)]
    Raw(#[from] hood_raw::RawError),
    /// A chunk's content is malformed.
    #[error("malformed recording: {0}")]
    Malformed(String),
}
