//! One module per subcommand. Each converts its clap arguments into a library config struct and
//! calls library code; nothing here talks to the kernel directly.

use std::process::ExitCode;

use crate::cli::Command;

/// Run one subcommand.
pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
    }
}
