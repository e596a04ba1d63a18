//! Process control for hood's recorders: the clock they stamp with, the state of standard
//! output, and (as the recorders move out of the `hood` binary) starting and stopping the
//! commands they record, signals, and reading or touching another process's memory.
//!
//! Owns: every system call of the recorders that is not a perf event, a tracefs file or the
//! injected runtime (those live in `hood-perf` and `hood-rt`). May depend on: libc, rustix,
//! thiserror, and no other hood crate. Safe calls of rustix are preferred; each remaining
//! `unsafe` block is behind a safe function and carries a `// SAFETY:` comment.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod clock;
pub mod remote;
pub mod shm;
pub mod stdio;

/// What a process-control call could not do.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// A system call failed.
    #[error("{what}: {source}")]
    Sys {
        /// The call and its target, e.g. `kill(1234, SIGINT)`.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A shared file hood does not read: what is wrong with it and what to do (the caller
    /// names the file).
    #[error("{reason}")]
    Refused {
        /// Why, and what to do about it.
        reason: String,
    },
    /// A shared file could not be opened or examined (the caller names the file).
    #[error("{source}")]
    Open {
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A read of a shared file failed: it is shorter than its layout says, or gone.
    #[error("reading {what} ({len} bytes at {offset}): {source}")]
    Read {
        /// The area read, e.g. `the header`.
        what: String,
        /// Bytes asked for.
        len: u64,
        /// Where in the file.
        offset: u64,
        /// The operating system's error.
        source: std::io::Error,
    },
}
