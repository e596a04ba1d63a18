//! `hood trace record|report`: event-tag tracing with the hood-rt runtime in trace mode (McRae's
//! hardware kernel profiler, in software). See docs/trace.md.

mod record;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

/// `hood trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

/// The `hood trace` subcommands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Run a program built with -finstrument-functions and record every function entry and
    /// exit, inline mark and context switch with nanosecond timestamps; or, with --probe, the
    /// entries and exits of chosen functions of any program, started or already running.
    ///
    /// Ctrl-C, SIGTERM and SIGHUP are passed on to the program, and the trace is finished when
    /// it ends; a program that still runs 2 s after the signal is not recorded any further: the
    /// trace is finished there, and hood waits for the program.
    Record(RecordArgs),
    /// Print a trace: function summary, code-path trace, JSON, Chrome trace or tag listing.
    Report(ReportArgs),
}

/// What to do when a thread's buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FullArg {
    /// Stop recording that thread and count the events dropped.
    Stop,
    /// Keep the newest events (flight recorder) and count the overwritten ones.
    Wrap,
}

/// `hood trace record`.
#[derive(Debug, Args)]
#[command(mut_arg("pid", |a| a.requires("probe").conflicts_with("command").help(
    "Attach to running processes (comma-separated) and probe them (with --probe; the specs are \
resolved in each one's own program and libraries); Ctrl-C or SIGTERM detaches and leaves them \
running"
)))]
pub struct RecordArgs {
    /// Output file.
    #[arg(short, long, default_value = "hood-trace.data")]
    pub output: PathBuf,
    /// Events per thread buffer (8 bytes each). Streaming (the default) needs only a ring the
    /// recorder empties while the program runs: 1048576 events; with --full, the whole trace
    /// of a thread must fit: 8388608 (memory is used only as events are written).
    #[arg(long)]
    pub buffer: Option<u64>,
    /// Record into a fixed buffer per thread instead of streaming, and when it is full: stop
    /// (keep the first events) or wrap (keep the newest, a flight recorder).
    #[arg(long, value_enum)]
    pub full: Option<FullArg>,
    /// Trace only functions whose name matches GLOB, or whose object file matches it when
    /// GLOB contains '/' or ".so" (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub filter: Vec<String>,
    /// Do not trace functions (or objects) matching GLOB (repeatable; wins over --filter).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Do not record context switches.
    #[arg(long)]
    pub no_sched: bool,
    /// Start with tracing off; the program turns it on with hood_trace_on().
    #[arg(long)]
    pub start_off: bool,
    /// Leave the runtime's segments in their directory.
    #[arg(long)]
    pub keep: bool,
    /// Probe the functions SPEC names with uprobes instead of the runtime: no rebuild needed,
    /// and running processes too (-p). SPEC is GLOB (functions of the program, e.g.
    /// 'parse_*', 'Foo::bar', demangled names match) or OBJECT:GLOB for a library
    /// ('libc.so.6:malloc', 'libc:str*', '/path/lib.so:f'). Repeatable. Programs a process
    /// execs and libraries it loads later (dlopen) are probed too, a few ms after they are
    /// mapped. Each call costs the program two kernel traps (a few µs, measured at the start
    /// and taken out of the times unless HOOD_COMPENSATE=0); more than 1000 functions need
    /// --yes. Root only.
    #[arg(
        long,
        value_name = "SPEC",
        conflicts_with_all = ["filter", "exclude", "full", "buffer", "start_off", "keep", "max_size"]
    )]
    pub probe: Vec<String>,
    /// `-p/--pid` (help line set above).
    #[command(flatten)]
    pub pids: crate::cmd::select::Pids<u32>,
    /// With --probe: stop recording after SECS seconds (an attached process runs on; a
    /// started command is waited for).
    #[arg(short = 'd', long = "duration", value_name = "SECS", requires = "probe", value_parser = crate::cmd::values::record_secs)]
    pub duration: Option<f64>,
    /// With --probe: go ahead when more than 1000 functions match.
    #[arg(long, requires = "probe")]
    pub yes: bool,
    /// Stop recording when the file reaches SIZE (e.g. 500M, 20G; K, M, G, T are powers of
    /// 1024). Whatever it says, recording stops when the file system has less than 5 % (at most
    /// 1 GiB) free. The command runs on until it ends; hood waits for it.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// The command to run.
    #[arg(last = true, required_unless_present = "pid")]
    pub command: Vec<String>,
}

/// Output format of `hood trace report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Function summary (or the code-path trace with --paths).
    Text,
    /// Versioned JSON (`"schema_version": 1`).
    Json,
    /// Chrome trace-event JSON (Perfetto at ui.perfetto.dev, speedscope).
    Chrome,
}

/// `hood trace report`.
#[derive(Debug, Args)]
#[command(mut_arg("input", |a| a.help("The file written by `hood trace record` (default hood-trace.data)")))]
pub struct ReportArgs {
    /// `-i FILE`, or FILE after the options (`hood trace report FILE`).
    #[command(flatten)]
    pub input: crate::cmd::select::InputFile,
    /// Print the code-path trace instead of the summary.
    #[arg(long)]
    pub paths: bool,
    /// Only this process (`-p/--pid`), only this thread (`--tid`).
    #[command(flatten)]
    pub select: crate::cmd::select::Select,
    /// Code-path trace and Chrome/JSON timeline from this time after the start (e.g. 10ms,
    /// 1.5s, 250us; plain = s). Calls that overlap the window are kept.
    #[arg(long, value_parser = parse_time)]
    pub from: Option<u64>,
    /// Code-path trace up to this time after the start.
    #[arg(long, value_parser = parse_time)]
    pub to: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// List function names and their event tags instead.
    #[arg(long)]
    pub tags: bool,
    /// Rows of the function summary.
    #[arg(short = 'n', long)]
    pub lines: Option<usize>,
    /// Write the report to FILE (any format; created 0600, put in place when complete).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// "500M", "20G", "1.5T", "4096" → bytes (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(format!("{s:?}: use a size such as 4096, 500M or 20G")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size: use e.g. 4096, 500M or 20G"))?;
    let bytes = v * (1u64 << shift) as f64;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("{s:?}: the size must be at least 1 byte"));
    }
    Ok(bytes as u64)
}

/// "10ms", "1.5s", "250us", "900ns" or plain seconds → ns.
fn parse_time(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e9)
    } else {
        (s, 1e9)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a time: use e.g. 10ms, 1.5s, 250us"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("{s:?}: time must be >= 0"));
    }
    Ok((v * mul) as u64)
}

/// Run one `hood trace` subcommand.
pub fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        TraceCommand::Record(a) => record::record(a),
        TraceCommand::Report(a) => report::report(a),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_parse_with_units() {
        assert_eq!(super::parse_time("10ms"), Ok(10_000_000));
        assert_eq!(super::parse_time("1.5"), Ok(1_500_000_000));
        assert_eq!(super::parse_time("250us"), Ok(250_000));
        assert!(super::parse_time("abc").is_err());
        assert!(super::parse_time("-1s").is_err());
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(super::parse_size("4096"), Ok(4096));
        assert_eq!(super::parse_size("500M"), Ok(500 << 20));
        assert_eq!(super::parse_size("1.5k"), Ok(1536));
        assert_eq!(super::parse_size("20G"), Ok(20 << 30));
        assert!(super::parse_size("0").is_err());
        assert!(super::parse_size("10X").is_err());
        assert!(super::parse_size("M").is_err());
        assert!(super::parse_size("-1G").is_err());
    }
}
