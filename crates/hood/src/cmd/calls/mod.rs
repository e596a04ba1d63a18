//! `hood calls run|get|reset|report`: call-path profiling with the hood-rt runtime. See
//! docs/calls.md.

mod file;
mod report;
pub(crate) mod run;

pub(crate) use hood_hooks::{segments, symbols};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

/// `hood calls`.
#[derive(Debug, Args)]
pub struct CallsArgs {
    #[command(subcommand)]
    pub command: CallsCommand,
}

/// The `hood calls` subcommands.
#[derive(Debug, Subcommand)]
pub enum CallsCommand {
    /// Run a program built with -finstrument-functions with the runtime preloaded and collect
    /// every process of its tree at exit.
    Run(RunArgs),
    /// Collect the tables of running and exited instrumented processes.
    Get(GetArgs),
    /// Reset the tables of running instrumented processes (honoured at their next hook).
    Reset(ResetArgs),
    /// Print a call-path file per path or per function.
    Report(ReportArgs),
}

/// `hood calls run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Output file.
    #[arg(short, long, default_value = "hood-calls.data")]
    pub output: PathBuf,
    /// Leave the segments in their directory after collecting them.
    #[arg(long)]
    pub keep: bool,
    /// The command to run.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `hood calls get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// Only this process.
    #[arg(short, long)]
    pub pid: Option<u32>,
    /// Output file.
    #[arg(short, long, default_value = "hood-calls.data")]
    pub output: PathBuf,
    /// Do not remove the segments of processes that have ended.
    #[arg(long)]
    pub keep: bool,
}

/// `hood calls reset`.
#[derive(Debug, Args)]
pub struct ResetArgs {
    /// Only this process.
    #[arg(short, long)]
    pub pid: Option<u32>,
}

/// Sort order for `hood calls report`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SortArg {
    /// By name.
    Name,
    /// By calls.
    Calls,
    /// By time.
    Time,
    /// Table order.
    None,
}

/// Output format for `hood calls report`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// Calls and milliseconds per call path, with notes.
    Text,
    /// Versioned JSON.
    Json,
    /// Collapsed stacks (own µs per path).
    Collapsed,
    /// pprof profile.proto, gzipped (calls and own-body time per path; needs -o).
    Pprof,
}

/// `hood calls report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The file written by `hood calls run` or `hood calls get`.
    #[arg(default_value = "hood-calls.data")]
    pub file: PathBuf,
    /// Totals per function instead of per path.
    #[arg(short = 'f', long = "functions")]
    pub functions: bool,
    /// Sort order.
    #[arg(long, value_enum, default_value_t = SortArg::Time)]
    pub sort: SortArg,
    /// Lines per process.
    #[arg(short = 'n', long)]
    pub lines: Option<usize>,
    /// Print full paths (long paths are otherwise shortened).
    #[arg(short = 'i', long = "full-paths")]
    pub full_paths: bool,
    /// One set of rows per thread.
    #[arg(long)]
    pub threads: bool,
    /// Only this process.
    #[arg(short, long)]
    pub pid: Option<u32>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

/// Run one `hood calls` subcommand.
pub fn run(args: CallsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CallsCommand::Run(a) => run::run(run::RunConfig {
            output: a.output,
            keep: a.keep,
            argv: a.command,
        }),
        CallsCommand::Get(a) => run::get(run::GetConfig {
            pid: a.pid,
            output: a.output,
            keep: a.keep,
        }),
        CallsCommand::Reset(a) => run::reset(a.pid),
        CallsCommand::Report(a) => report::report(a),
    }
}
