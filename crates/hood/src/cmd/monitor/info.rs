//! `hood info [PATH]`: the `system.*` tree.

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
    /// The live system or the monitor store (`--at`, `--store`).
    #[command(flatten)]
    pub source: super::store::Source,
}

/// Run `hood info`.
pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let view = match &args.source.at {
        Some(at) => super::store::view_at("info", &args.source.store, at)?,
        None => sample(
            &mut reader(&args.source.proc_root).with_system_io(),
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
