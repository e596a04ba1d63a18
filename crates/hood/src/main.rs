//! `hood`: look under the hood of a running Linux system.
//!
//! This file stays thin: parse the command line, run one subcommand, map errors to exit codes
//! (0 success, 1 ran but found nothing / target failed, 2 usage or environment error; `record --`
//! exits with the child's status).

mod cli;
mod cmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::dispatch(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("hood: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
