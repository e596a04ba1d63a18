//! The command-line surface (DESIGN.md §2). Each subcommand owns its clap `Args` struct in its
//! module under `cmd/`; this file only lists them.

use clap::{Parser, Subcommand};

use crate::cmd;

#[derive(Debug, Parser)]
#[command(
    name = "hood",
    version,
    about = "Look under the hood of a running Linux system"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
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
