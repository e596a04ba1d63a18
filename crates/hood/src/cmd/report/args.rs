//! `hood report` arguments.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use hood_report::profile::By;

/// Call-graph direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CallGraphArg {
    /// Top-down: from outermost callers to callees.
    Caller,
    /// Bottom-up: from hot functions to their callers.
    Callee,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Human-readable text: sample counts, top functions, then one section per process.
    Text,
    /// Versioned JSON (docs/json.md).
    Json,
    /// Folded stacks for flamegraph tools.
    Collapsed,
    /// Interactive flamegraph SVG.
    Svg,
    /// pprof profile.proto, gzip-compressed (go tool pprof, Pyroscope, Parca).
    Pprof,
    /// Firefox Profiler processed format, gzip-compressed JSON (profiler.firefox.com).
    Firefox,
    /// gprof-style flat profile and call graph (with `--labels`).
    Gprof,
}

/// Arguments of `hood report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Recording to read (hood's own, or a perf.data file written by `perf record`).
    #[arg(short = 'i', long = "input", default_value = "hood.data")]
    pub input: PathBuf,
    /// Fold rows below this percentage into one line.
    #[arg(long = "min-percent", default_value_t = 1.0, value_parser = crate::cmd::values::percent)]
    pub min_percent: f64,
    /// What to group the flat profile by.
    #[arg(long = "by", value_enum, default_value_t = By::Function)]
    pub by: By,
    /// Only this process (`-p/--pid`), only this thread (`--tid`).
    #[command(flatten)]
    pub select: crate::cmd::select::Select,
    /// `--comm`, `--kernel`/`--user`, `--wall`, `--off-cpu`.
    #[command(flatten)]
    pub samples: crate::cmd::select::SampleFilter,
    /// Print a call tree.
    #[arg(long = "call-graph", value_enum)]
    pub call_graph: Option<CallGraphArg>,
    /// Sampling-interval analysis per CPU (are samples delayed?).
    #[arg(long = "intervals")]
    pub intervals: bool,
    /// Charge each sample to the process it served (a recording made with `--labels`):
    /// kernel time split into synchronous and asynchronous work, functions named `PIDu:`
    /// (user) and `PIDk:` (kernel work for process PID); formats text, gprof, collapsed, pprof.
    #[arg(long = "labels")]
    pub labels: bool,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// `-o`, how code is named, `--width`.
    #[command(flatten)]
    pub out: Written,
}

/// Where a profile report or diff goes and how it names code: the last options of `hood
/// report` and `hood diff`.
#[derive(Debug, Clone, Args)]
pub struct Written {
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// How code is named.
    #[command(flatten)]
    pub symbols: SymbolOpts,
    /// Longest line of the text output in characters; longer names are cut with `…`
    /// (0: no limit). Default: the terminal's width, else $COLUMNS, else 120.
    #[arg(long = "width", value_name = "COLUMNS")]
    pub width: Option<usize>,
}

impl Written {
    /// The text's width: `--width`, else the terminal's (see [`super::text_width`]).
    pub fn text_width(&self) -> usize {
        super::text_width(self.width, self.output.is_some())
    }
}

/// How code is named: the options of every command that symbolizes (`hood report`, `hood
/// annotate`).
#[derive(Debug, Clone, Default, Args)]
pub struct SymbolOpts {
    /// nm-format symbol file for addresses nothing else resolves.
    #[arg(long = "symfile")]
    pub symfile: Option<PathBuf>,
    /// Name C++ functions by their whole signature (parameter lists, return types);
    /// by default names are shortened as perf prints them (`ns::Map<K, V>::find`).
    #[arg(long = "full-names")]
    pub full_names: bool,
    /// Leave out inlined functions. By default, where a binary (or its separate debug file)
    /// has DWARF debug info, code the compiler inlined is shown as its own frame,
    /// `name (inlined)`, under the function it was inlined into, as `perf report --inline`
    /// does.
    #[arg(long = "no-inline")]
    pub no_inline: bool,
    /// Also look for separate debug files here, before /usr/lib/debug (repeatable): by
    /// build-id (`DIR/.build-id/XX/YYYY.debug`) and by the binary's `.gnu_debuglink`
    /// (`DIR/BINARY_DIR/NAME`, `DIR/NAME`; next to the binary and in its `.debug/` are always
    /// tried). A debug file is used only with the binary's build-id or the link's CRC.
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
    /// Do not fetch debug files from debuginfod servers. By default, when DEBUGINFOD_URLS is
    /// set (space-separated server URLs, as for perf and gdb), the debug file of a sampled
    /// binary that has no DWARF and none on disk is downloaded by build-id into
    /// DEBUGINFOD_CACHE_PATH (default ~/.cache/hood/debuginfod), waiting at most
    /// DEBUGINFOD_TIMEOUT seconds (default 90) for a server to answer; progress is shown.
    #[arg(long = "no-debuginfod")]
    pub no_debuginfod: bool,
}
