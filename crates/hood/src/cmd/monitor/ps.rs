//! `hood ps`: list tasks.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hood_monitor::{arrange, ScanOptions, SortKey};
use hood_report::monitor::ps::{render_ps, PsLayout};

use super::{descending, emit, emit_with, out_width, reader, sample, sort_key};

/// List tasks: ID, threads, memory, user and system time, name.
#[derive(Debug, Args)]
pub struct PsArgs {
    /// Only this process (with -H: its threads).
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<u32>,
    /// Only this thread (one row of -H).
    #[arg(long = "tid", value_name = "TID")]
    pub tid: Option<u32>,
    /// List threads instead of processes (all threads, or those of -p PID).
    #[arg(short = 'H', long = "threads", short_alias = 'a', alias = "all")]
    pub threads: bool,
    /// The threads of the task PID: `-H -p PID` (the older spelling).
    #[arg(
        short = 't',
        long = "task",
        value_name = "PID",
        hide = true,
        conflicts_with = "pid"
    )]
    pub task: Option<u32>,
    /// Print the system load.
    #[arg(short, long)]
    pub load: bool,
    /// List CPUs and memory.
    #[arg(short = 'c', long = "cpu")]
    pub cpus: bool,
    /// Also show user and full command line.
    #[arg(short, long)]
    pub full: bool,
    /// Print the `system.*` view as JSON (docs/monitor.md).
    #[arg(long)]
    pub json: bool,
    /// `--sort KEY`, `--filter TEXT`.
    #[command(flatten)]
    pub order: super::Order,
    /// Measure CPU percentages and rates over this many seconds (0: none, the default), as
    /// `hood top --delay` refreshes.
    #[arg(long = "delay", alias = "interval", value_name = "SECS", default_value_t = 0.0, value_parser = crate::cmd::values::interval_secs)]
    pub delay: f64,
    /// The live system or the monitor store (`--at`, `--store`).
    #[command(flatten)]
    pub source: super::store::Source,
}

/// Plain configuration of one `hood ps` run.
struct PsConfig {
    scan: ScanOptions,
    layout: PsLayout,
    key: SortKey,
    desc: bool,
    interval: Duration,
}

impl PsArgs {
    fn config(&self) -> anyhow::Result<PsConfig> {
        let key = sort_key(self.order.sort.as_deref(), SortKey::Pid)?;
        let threads = self.threads || self.task.is_some() || self.tid.is_some();
        // The threads of one process (`-H -p PID`, `-t PID`), or of all.
        let threads_of = self.pid.or(self.task).filter(|_| threads);
        Ok(PsConfig {
            scan: ScanOptions {
                status: self.json,
                owner: self.full,
                io: self.json,
                cmdline: self.json || self.full || self.order.filter.is_some(),
                threads: threads && threads_of.is_none(),
                threads_of,
                cpu_mhz: self.cpus || self.json,
                exceptions: self.json,
                cgroup: self.json,
                cgroup_tree: self.json,
            },
            layout: PsLayout {
                threads,
                load: self.load,
                cpus: self.cpus,
                full: self.full,
                measured: self.delay > 0.0 || self.source.at.is_some(),
            },
            key,
            desc: descending(self.order.sort.as_deref(), key),
            interval: Duration::from_secs_f64(self.delay),
        })
    }
}

/// Run `hood ps`.
pub fn run(args: PsArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.config()?;
    let mut view = match &args.source.at {
        Some(at) => {
            if cfg.layout.threads {
                anyhow::bail!(
                    "the monitor store holds processes, not threads: -H and --tid read the live system only"
                );
            }
            super::store::view_at("ps", &args.source.store, at)?
        }
        None => sample(&mut reader(&args.source.proc_root), &cfg.scan, cfg.interval)?,
    };
    if let Some(pid) = args.pid.or(args.task) {
        if !view.tasks.iter().any(|t| t.pid == pid) {
            errln!(
                "hood ps: no task with pid {pid} (it may have exited); see `hood ps` for the list"
            );
            return Ok(ExitCode::from(1));
        }
        view.tasks.retain(|t| t.pid == pid);
    }
    if let Some(tid) = args.tid {
        let rows = view.threads.get_or_insert_with(Vec::new);
        rows.retain(|t| t.pid == tid);
        if rows.is_empty() {
            errln!(
                "hood ps: no thread with tid {tid} (it may have exited); see `hood ps -H` for the list"
            );
            return Ok(ExitCode::from(1));
        }
    }
    arrange(
        &mut view,
        cfg.key,
        cfg.desc,
        args.order.filter.as_deref().unwrap_or(""),
    );
    if args.json {
        emit(&(serde_json::to_string_pretty(&view)? + "\n"))?;
    } else {
        emit_with(|out| render_ps(out, &view, cfg.layout, out_width(), Some(cfg.key)))?;
    }
    Ok(ExitCode::SUCCESS)
}
