//! The command-line surface (DESIGN.md §2). Each subcommand owns its clap `Args` struct in its
//! module under `cmd/`; this file only lists them.

use clap::{Parser, Subcommand};

use crate::cmd;

#[derive(Debug, Parser)]
#[command(name = "hood", version, about = "Look under the hood of a running Linux system")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List tasks (or threads): ID, threads, memory, user/system time, name.
    Ps(cmd::monitor::ps::PsArgs),
    /// Time, uptime and load averages.
    Uptime(cmd::monitor::uptime::UptimeArgs),
    /// Full-screen system monitor; `-b` for batch text or `--json` lines.
    Top(cmd::monitor::top::TopArgs),
    /// List the system.* tree or print one node (`hood info system.load`).
    Info(cmd::monitor::info::InfoArgs),
}
