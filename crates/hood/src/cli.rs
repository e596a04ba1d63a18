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
}
