//! `hood uptime`: time, uptime and load averages.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hood_monitor::ScanOptions;
use hood_report::monitor::ps::{render_uptime, render_uptime_json};

use super::{emit, emit_with, reader, sample};

/// Show the time, how long the system has been up, and the load averages.
#[derive(Debug, Args)]
pub struct UptimeArgs {
    /// Print `system.uptime` and `system.load` as JSON.
    #[arg(long)]
    pub json: bool,
    /// Read this directory instead of /proc (for tests with a fake tree).
    #[arg(long, hide = true)]
    pub proc_root: Option<PathBuf>,
}

/// Run `hood uptime`.
pub fn run(args: UptimeArgs) -> anyhow::Result<ExitCode> {
    let mut r = reader(&args.proc_root);
    let v = sample(&mut r, &ScanOptions::default(), Duration::ZERO)?;
    match args.json {
        true => emit(&render_uptime_json(&v))?,
        false => emit_with(|out| render_uptime(out, &v))?,
    }
    Ok(ExitCode::SUCCESS)
}
