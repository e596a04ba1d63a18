//! One module per subcommand. Each converts its clap arguments into a library config struct and
//! calls library code; nothing here talks to the kernel directly.

pub mod monitor;

use std::process::ExitCode;

use crate::cli::Command;

/// Run one subcommand.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Ps(a) => monitor::ps::run(a),
        Command::Uptime(a) => monitor::uptime::run(a),
        Command::Top(a) => monitor::top::run(a),
        Command::Info(a) => monitor::info::run(a),
    }
}
