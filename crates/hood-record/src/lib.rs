//! hood's profile recorder: the library behind `hood record`, `hood start` and `hood serve`'s
//! `/debug/pprof/profile`. It opens the perf events (through `hood-perf`), starts the command
//! to profile (through `hood-proc`), streams the rings' raw records into a recording file with
//! what a report needs besides them (process snapshots, kallsyms, the vDSO, build-ids, JIT
//! maps, labels events), and finalizes the file on every way out.
//!
//! Owns: the recording loop and its file's chunks, the start-up snapshot, the labels events
//! recorder and the state of a detached recording (`hood start`/`stop`); it writes recordings
//! and never reads one back (hood-load does). May depend on:
//! hood-format, hood-raw, hood-model, hood-perf, hood-proc, hood-procfs, hood-symbols, hood-unwind (and
//! rustix's safe calls, serde, thiserror); never on the binary or a renderer. Its callers pass
//! a [`RecordConfig`], a [`hood_proc::steer::Steer`] (stop, pause, print requests: the one
//! way every recorder is steered) and a message sink; the recorder prints nothing itself.

#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod collect;
mod config;
mod labels;
mod recorder;
pub mod session;
pub mod snapshot;

pub use config::{
    call_graph_has_size, call_graph_name, least_ring_kb, off_cpu_ring_kb, off_cpu_ring_pages,
    parse_call_graph, ring_pages, stack_copy_cap, RecordConfig, Who, DEFAULT_EVENT,
    DEFAULT_FREQ_HZ, DEFAULT_OFF_CPU_RATE,
};
pub use recorder::{record, CopyStep, Finished, Outcome};

/// What stopped a recording from starting or going on.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The perf events (or tracefs) refused.
    #[error(transparent)]
    Perf(#[from] hood_perf::PerfError),
    /// The recording file could not be written.
    #[error(transparent)]
    Format(#[from] hood_format::FormatError),
    /// The command could not be started.
    #[error(transparent)]
    Proc(#[from] hood_proc::ProcError),
    /// `--labels` could not set up its tracing.
    #[error("{what}: {source}")]
    Labels {
        /// What was being done, e.g. "--labels needs tracefs".
        what: &'static str,
        /// Why it failed.
        source: hood_perf::PerfError,
    },
    /// `--labels` on a kernel without the softirq tracepoints.
    #[error("--labels: this kernel has no irq:{0} tracepoint; softirq work cannot be told apart")]
    NoSoftirqTracepoint(&'static str),
    /// The state of a detached recording is missing, foreign or unsafe to use.
    #[error("{0}")]
    Session(String),
    /// An option given in a form that cannot be used (what and how to write it instead).
    #[error("{0}")]
    Option(String),
    /// A file of the state directory could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A chunk's metadata could not be encoded.
    #[error("encoding the recording's metadata: {0}")]
    Json(#[from] serde_json::Error),
}
