//! Owns the decoders of raw bytes as the kernel and perf write them: perf ring records and
//! their attributes ([`records`], [`attr`], [`frames`], [`stackcopy`]), the perf.data
//! container ([`perfdata`]), build-ids ([`BuildId`]), the irq tracepoint records of traces ([`irq`]), tracefs formats
//! and pages ([`tracefs`]), /proc/PID/maps and address spaces over time ([`maps`]), the replay
//! of side-band records to an unwinder ([`replay`]), and the one bounds-checked byte reader
//! ([`bytes`]). May depend on no hood crate (serde, rustc-hash, thiserror only); never on the
//! kernel, and nothing here reads a file.
//!
//! Every byte decoded here is untrusted: each read is bounds-checked, nothing is allocated by
//! a size the bytes claim, and malformed input gives an error or a count, never a panic.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod attr;
pub mod build_id;
pub mod bytes;
pub mod frames;
pub mod irq;
pub mod maps;
pub mod perfdata;
pub mod records;
pub mod replay;
pub mod stackcopy;
pub mod tracefs;

pub use build_id::BuildId;

/// Errors of the raw decoders.
#[derive(Debug, thiserror::Error)]
pub enum RawError {
    /// The bytes do not hold what they should.
    #[error("malformed recording: {0}")]
    Malformed(String),
}
