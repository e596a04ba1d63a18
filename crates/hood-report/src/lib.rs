//! Owns the renderers of every hood output: text, JSON, collapsed stacks, flamegraph SVG,
//! pprof, the Firefox Profiler's format, chrome traces, the monitor's text and JSON, the
//! call-path reports and collection summary, and the trace text (with the trace report that
//! streams a trace file through hood-model's analysis into it). May depend on hood-model and
//! hood-monitor only: renderers format what the models derived.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod calls;
pub mod firefox;
pub mod labels;
pub mod metrics;
pub mod monitor;
pub mod pprof;
pub mod profile;
pub mod safe;
pub mod trace;

/// Why a report could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Writing the output failed (closed pipe, full disk, ...).
    #[error("cannot write the report: {0}")]
    Io(#[from] std::io::Error),
    /// Reading the recording failed (a trace file read chunk by chunk).
    #[error(transparent)]
    Trace(#[from] hood_tracemodel::TraceModelError),
    /// Encoding JSON failed.
    #[error("cannot encode the JSON report: {0}")]
    Json(#[from] serde_json::Error),
    /// Nothing to draw (e.g. a flamegraph of zero samples).
    #[error("no samples to {what}{hint}")]
    NoSamples {
        /// What was attempted.
        what: &'static str,
        /// How to get samples (empty, or starting with "; ").
        hint: String,
    },
    /// The recording lacks a field the report needs.
    #[error("the recording has no {field}: {fix}")]
    MissingMeta {
        /// The missing field.
        field: &'static str,
        /// What to do about it.
        fix: &'static str,
    },
}
