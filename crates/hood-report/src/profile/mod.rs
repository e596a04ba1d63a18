//! Renderers for sampled profiles (`hood report`): the text report, JSON,
//! collapsed stacks, flamegraph SVG, the sampling-interval analysis, the short "top"
//! form the recorder prints live, and one function's samples per source line (`hood
//! annotate`).
//!
//! Every renderer aggregates first (one pass over the samples through
//! [`hood_model::profile::aggregate`]) and formats only the rows it prints, so the cost is
//! O(samples + functions), never a string per sample.

pub mod annotate;
pub mod diff;
pub(crate) mod fmt;
pub mod folded;
mod group;
pub mod header;
pub mod intervals;
pub mod json;
mod offcpu;
pub mod text;
pub mod top;
pub mod tree;

#[cfg(test)]
mod testutil;

use hood_model::profile::aggregate::Filter;

pub use folded::{render_collapsed, render_svg};
pub use intervals::render_intervals;
pub use json::{render_json, SCHEMA_VERSION};
pub use text::render_text;
pub use top::render_top;

/// The key of the flat profile. With the `clap` feature it is also `hood report --by`'s
/// value, each variant's line its help.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum By {
    /// Functions (per process sections).
    #[default]
    Function,
    /// Shared objects / executables.
    Dso,
    /// Processes, one row per PID.
    Process,
    /// Process names: all processes of one name in one row, with their number (perf's
    /// `--sort comm` groups by thread name instead: that is thread-name).
    Comm,
    /// Thread names over all processes, as perf's `--sort comm` groups (a thread its program
    /// did not name carries the process's name).
    ThreadName,
    /// Threads.
    Thread,
    /// Source lines (`file:line`) of the sampled code, inlined functions' own lines
    /// included, like perf's `--sort srcline`; needs DWARF debug info (`-g`).
    Line,
    /// Off-CPU time by kernel reason: lock (futex), sleep, poll/epoll, pipe, socket, disk
    /// I/O, page fault, waiting for a CPU (a recording made with `--off-cpu`).
    Reason,
    /// Blocked time by who ended the wait: the waking thread (its process, function and the
    /// kernel call that woke) or interrupt (a recording made with `--off-cpu`).
    Waker,
}

/// Which call tree to print under the flat profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallGraph {
    /// No tree.
    #[default]
    None,
    /// Top-down: outermost callers at the root, callees below.
    Caller,
    /// Bottom-up: sampled functions at the root, their callers below.
    Callee,
}

/// How to render a profile report (the binary builds it from `hood report` arguments).
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Name of the recording file, shown in the header.
    pub source: String,
    /// Rows (and tree children) below this percentage of samples are folded into one
    /// `<P%` line. Default 1.0.
    pub min_percent: f64,
    /// Key of the flat profile.
    pub by: By,
    /// Which samples to look at.
    pub filter: Filter,
    /// Call tree to print (text) or include (JSON).
    pub call_graph: CallGraph,
    /// Width of the `*` bars in characters. Default 30.
    pub bar_width: usize,
    /// At most this many rows per table (the rest is folded); `None`: no limit.
    pub max_rows: Option<usize>,
    /// Deepest call-tree level printed. Default 24.
    pub max_depth: usize,
    /// Longest line of the text report, in characters (the terminal's width): names are cut
    /// with `…` to fit their column, other long lines are cut or wrapped. Default 120;
    /// `usize::MAX` for no limit.
    pub width: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            source: "hood.data".into(),
            min_percent: 1.0,
            by: By::Function,
            filter: Filter::default(),
            call_graph: CallGraph::None,
            bar_width: 30,
            max_rows: None,
            max_depth: 24,
            width: 120,
        }
    }
}

#[cfg(test)]
mod tests_formats;
#[cfg(test)]
mod tests_text;
#[cfg(test)]
mod tests_tree;
