//! Process control for hood's recorders: the clock they stamp with, the state of standard
//! output, and (as the recorders move out of the `hood` binary) starting and stopping the
//! commands they record, signals, the one way every recorder is steered ([`steer`]), and
//! reading or touching another process's memory.
//!
//! Owns: every system call of the recorders that is not a perf event, a tracefs file or the
//! injected runtime (those live in `hood-perf` and `hood-rt`). May depend on: libc, rustix,
//! signal-hook, thiserror, and no other hood crate. Safe calls of rustix are preferred; each remaining
//! `unsafe` block is behind a safe function and carries a `// SAFETY:` comment.

#![deny(unsafe_op_in_unsafe_fn)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod child;
pub mod clock;
pub mod others;
pub mod remote;
pub mod shm;
pub mod signal;
pub mod space;
pub mod stdio;
pub mod steer;
pub mod terminal;
pub mod usage;

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
    /// A command to start was empty.
    #[error("empty command")]
    EmptyCommand,
    /// A command's argument or environment variable holds a NUL byte.
    #[error("argument {arg:?} contains a NUL byte")]
    NulByte {
        /// The argument.
        arg: String,
    },
    /// The command to start is not on PATH.
    #[error("command not found: {program} (check the name and your PATH)")]
    CommandNotFound {
        /// The command's name.
        program: String,
    },
    /// The command could not be executed.
    #[error("cannot run {program}: {source}")]
    Exec {
        /// The command's name.
        program: String,
        /// Why exec failed.
        source: std::io::Error,
    },
}
