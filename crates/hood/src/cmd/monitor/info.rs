//! `hood info [PATH]`: the `system.*` tree.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hood_monitor::tree::{list_paths, lookup};
use hood_monitor::ScanOptions;
use hood_report::monitor::info::{render_node, render_node_json, render_paths, render_paths_json};

use super::{emit, emit_with, reader, sample};

/// List the `system.*` tree, or print one node of it.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Node to print, e.g. `system.load`, `system.tasks`, `system.tasks.PID`, `system.cpus.0`.
    pub path: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Seconds between the two snapshots rates and percentages come from (0: none), as
    /// `hood top --delay` refreshes.
    #[arg(long = "delay", alias = "interval", value_name = "SECS", default_value_t = 0.25, value_parser = crate::cmd::values::interval_secs)]
    pub delay: f64,
    /// Answer from the monitor store at TIME (10:42, 3h ago, 2026-11-26 10:42, UTC) instead of
    /// the live system; rates are those of the recorded interval.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,
    /// With --at: the store recorded by `hood top --record`.
    #[arg(long, value_name = "DIR", default_value = super::store::DEFAULT_STORE, requires = "at")]
    pub store: PathBuf,
    /// Read this directory instead of /proc (for tests with a fake tree).
    #[arg(long, hide = true)]
    pub proc_root: Option<PathBuf>,
}

/// Run `hood info`.
pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let view = match &args.at {
        Some(at) => super::store::view_at("info", &args.store, at)?,
        None => sample(
            &mut reader(&args.proc_root).with_system_io(),
            &ScanOptions::all(),
            Duration::from_secs_f64(args.delay),
        )?,
    };
    let Some(path) = args.path else {
        let paths = list_paths(&view);
        match args.json {
            true => emit(&render_paths_json(view.schema_version, &paths))?,
            false => emit_with(|out| render_paths(out, &paths))?,
        }
        return Ok(ExitCode::SUCCESS);
    };
    match lookup(&view, &path) {
        Some(node) if args.json => emit(&render_node_json(view.schema_version, &path, &node))?,
        Some(node) => emit_with(|out| render_node(out, &path, &node))?,
        None => {
            errln!("hood info: no node {path:?}; run `hood info` for the list of nodes");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
