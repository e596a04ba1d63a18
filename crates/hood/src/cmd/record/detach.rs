//! `hood start` / `hood stop`: a detached recording that runs on after the command returns.
//! Starting, stopping and the state directory are the recorder library's
//! (`hood_record::session`); this validates the arguments and prints.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::{Outcome, RecordArgs};

/// Arguments of `hood stop`.
#[derive(Debug, Clone, Args)]
pub struct StopArgs {
    /// Seconds to wait for the recorder to finish writing.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
}

/// Run `hood start`: re-run this binary as a detached `hood record` and return.
pub fn start(args: &RecordArgs, raw_args: &[String]) -> anyhow::Result<ExitCode> {
    args.to_config()?;
    let exe = std::env::current_exe().context("finding the hood executable")?;
    let state = hood_record::session::start(&exe, raw_args, &args.output)?;
    outln!(
        "hood: recording in the background (pid {}) to {}; `hood stop` finishes it",
        state.pid,
        state.output
    );
    Ok(ExitCode::SUCCESS)
}

/// Run `hood stop`.
pub fn stop(args: &StopArgs) -> anyhow::Result<ExitCode> {
    let o: Outcome = hood_record::session::stop(Duration::from_secs(args.timeout))?;
    // The summary `hood record` prints, on standard output: the recording's result.
    for line in o.lines() {
        outln!("hood: {}", crate::cmd::clean(line));
    }
    Ok(ExitCode::SUCCESS)
}
