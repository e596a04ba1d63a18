//! The command-line surface. Each subcommand owns its clap `Args` struct in its module under
//! `cmd/`; this file only lists them, plus the top-level `--generate` and `--version`.

use clap::{Parser, Subcommand, ValueEnum};

use crate::cmd;

/// `hood --version`: the package version, the git commit and the build date (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("BUILD_COMMIT"),
    ", built ",
    env!("BUILD_DATE"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "hood",
    version = VERSION,
    about = "Look under the hood of a running Linux system",
    after_help = "Exit status: 0 success (also when a reader such as `head` closes the output early), \
1 nothing found or the target failed, 2 usage or environment error; `hood record -- CMD` \
exits with CMD's status. Environment variables and details: docs/cli.md or `man hood`.",
    arg_required_else_help = true,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Print a man page or a shell completion script to standard output, then exit.
    #[arg(long, value_enum, value_name = "KIND")]
    pub generate: Option<Generate>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What `hood --generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// The man page in roff (`hood --generate man > hood.1; man -l hood.1`).
    Man,
    /// Bash completion (source it, or install as /usr/share/bash-completion/completions/hood).
    CompleteBash,
    /// Zsh completion (save as `_hood` in a directory of $fpath).
    CompleteZsh,
    /// Fish completion (save as ~/.config/fish/completions/hood.fish).
    CompleteFish,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Sample CPUs (a command, running processes, or the whole system) into a recording.
    Record(cmd::record::RecordArgs),
    /// Start a detached recording and return at once (`hood stop` finishes it).
    Start(cmd::record::RecordArgs),
    /// Stop the detached recording, finalize its file and print its path and counts.
    Stop(cmd::record::detach::StopArgs),
    /// Report a recording: where time went, per process and per function.
    Report(cmd::report::ReportArgs),
    /// One function's samples per source line, with the source beside (perf annotate).
    Annotate(cmd::annotate::AnnotateArgs),
    /// Compare two profile recordings: where time grew or shrank, per function, beyond noise.
    Diff(cmd::diff::DiffArgs),
    /// List tasks (or threads): ID, threads, memory, user/system time, name.
    Ps(cmd::monitor::ps::PsArgs),
    /// Time, uptime and load averages.
    Uptime(cmd::monitor::uptime::UptimeArgs),
    /// Full-screen system monitor; `-b` for batch text or `--json` lines.
    Top(cmd::monitor::top::TopArgs),
    /// List the system.* tree or print one node (`hood info system.load`).
    Info(cmd::monitor::info::InfoArgs),
    /// Call-path profiling of programs built with -finstrument-functions (run, get, reset, report).
    Calls(cmd::calls::CallsArgs),
    /// Event-tag tracing of programs built with -finstrument-functions (record, report).
    Trace(cmd::trace::TraceArgs),
    /// Serve Prometheus /metrics, pprof CPU profiles (/debug/pprof/profile) and /healthz over HTTP.
    Serve(cmd::serve::ServeArgs),
}
