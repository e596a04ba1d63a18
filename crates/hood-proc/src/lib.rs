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
}
