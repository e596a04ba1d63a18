//! Owns the pure data model: decoding raw records (hood's files and perf.data), address spaces
//! over time, profiles and their aggregation, monitor snapshots, call-path tables, trace
//! analysis. May depend on hood-format and hood-abi; never on the kernel.
//!
//! Pure data model of hood: decoded recordings, profiles and their aggregation, and the system
//! monitor's snapshots. Nothing here touches the kernel, so reports work on another machine.
#![forbid(unsafe_code)]

pub mod calls;
pub mod frames;
pub mod labels;
pub mod monitor;
pub mod perfdata;
pub mod profile;
pub mod trace;

/// Errors of the model layer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The container could not be read.
    #[error(transparent)]
    Format(#[from] hood_format::FormatError),
    /// A chunk's content is malformed.
    #[error("malformed recording: {0}")]
    Malformed(String),
}
