//! `hood top`: full-screen monitor, or batch frames (`-b -n N`, text or JSON Lines).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hood_monitor::{arrange, scan_needs, Mode, ScanOptions, SortKey, SystemView};
use hood_procfs::irqtime::IrqTracer;
use hood_procfs::{IdleSkip, ProcError, Sampler};
use hood_report::monitor::top::frame;
use hood_tui::{TuiConfig, TuiError};

use super::{descending, emit, out_width, reader, sort_key};

/// Full-screen system monitor (batch mode when stdout is not a terminal).
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Seconds between refreshes.
    #[arg(short, long, value_name = "SECS", default_value_t = 1.0, value_parser = crate::cmd::values::refresh_secs)]
    pub delay: f64,
    /// Batch mode: print plain-text frames instead of the full-screen UI.
    #[arg(short, long)]
    pub batch: bool,
    /// Number of frames in batch mode (default: until interrupted).
    #[arg(short = 'n', long, value_name = "N")]
    pub iterations: Option<u64>,
    /// Batch mode: one JSON object per frame (JSON Lines) with the whole `system.*` view.
    #[arg(long)]
    pub json: bool,
    /// Sort by KEY (see `hood ps --help`); prefix `+` ascending, `-` descending.
    #[arg(long, value_name = "KEY", allow_hyphen_values = true)]
    pub sort: Option<String>,
    /// Only tasks whose pid, name, user or command line contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Show threads instead of processes.
    #[arg(short = 'H', long)]
    pub threads: bool,
    /// Start in mode: t (tasks), i (IPC-like activity), e (interrupts), H (threads).
    #[arg(short, long, value_name = "MODE", default_value = "t")]
    pub mode: String,
    /// Batch mode: at most this many task lines per frame (default: all).
    #[arg(long, value_name = "N")]
    pub rows: Option<usize>,
    /// Measure time per irq/softirq handler from tracepoints (root; uses a tracefs instance).
    #[arg(long)]
    pub irq_time: bool,
    /// Read this directory instead of /proc (for tests with a fake tree).
    #[arg(long, hide = true)]
    pub proc_root: Option<PathBuf>,
}

fn parse_mode(s: &str, threads: bool) -> anyhow::Result<Mode> {
    if threads {
        return Ok(Mode::Threads);
    }
    Ok(match s {
        "t" | "tasks" => Mode::Tasks,
        "i" | "ipc" => Mode::Ipc,
        "e" | "exceptions" | "interrupts" => Mode::Exceptions,
        "H" | "threads" => Mode::Threads,
        _ => anyhow::bail!(
            "unknown mode {s:?}; use t (tasks), i (ipc), e (exceptions) or H (threads)"
        ),
    })
}

/// Start the `--irq-time` tracer, or explain why it is unavailable (the rest still works).
fn start_tracer(wanted: bool) -> Option<Result<IrqTracer, String>> {
    wanted.then(|| {
        if let Ok(root) = hood_perf::tracefs::mount_point() {
            crate::cmd::record::remove_stale_tracefs_instances(&root);
        }
        IrqTracer::start().map_err(|e| e.to_string())
    })
}

/// A process that did not run keeps its record, but each one is read in full at least every
/// this many refreshes (its resident size and nice value can change without it running).
const REREAD_EVERY: u32 = 10;

/// Run `hood top`.
pub fn run(args: TopArgs) -> anyhow::Result<ExitCode> {
    let mode = parse_mode(&args.mode, args.threads)?;
    let default_key = if mode == Mode::Ipc {
        SortKey::Ctx
    } else {
        SortKey::Cpu
    };
    let key = sort_key(args.sort.as_deref(), default_key)?;
    let desc = descending(args.sort.as_deref(), key);
    let delay = Duration::from_secs_f64(args.delay);
    let tracer = start_tracer(args.irq_time);
    if let Some(Err(why)) = &tracer {
        errln!(
            "hood top: --irq-time unavailable: {}",
            crate::cmd::clean(why)
        );
    }
    let batch = args.batch || args.json || !std::io::stdout().is_terminal();
    let r = reader(&args.proc_root).with_idle_skip(IdleSkip::Every(REREAD_EVERY));
    if !batch {
        let cfg = TuiConfig {
            mode,
            sort: key,
            descending: desc,
            filter: args.filter.unwrap_or_default(),
            delay,
            irq_time: args.irq_time,
        };
        let sampler = Sampler::start(r, tracer, &scan_needs(mode, key, args.irq_time))?;
        hood_tui::run_sampled(cfg, Views(sampler)).map_err(|e| match e {
            TuiError::Io(_) => anyhow::Error::from(e).context("running the terminal UI"),
            e => e.into(),
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let scan = match args.json {
        true => ScanOptions {
            threads: mode == Mode::Threads,
            ..ScanOptions::all()
        },
        false => scan_needs(mode, key, args.irq_time),
    };
    let width = out_width();
    let mut sampler = Sampler::start(r, tracer, &scan).context("reading /proc")?;
    let mut n = 0u64;
    while args.iterations.is_none_or(|max| n < max) {
        std::thread::sleep(delay);
        let mut v = sampler.next(&scan).context("reading /proc")?;
        arrange(&mut v, key, desc, args.filter.as_deref().unwrap_or(""));
        if args.json {
            emit(&(serde_json::to_string(&v)? + "\n"))?;
        } else {
            let mut s = frame(&v, mode, width, args.rows, Some(key));
            s.push('\n');
            emit(&s)?;
        }
        n += 1;
    }
    Ok(ExitCode::SUCCESS)
}

/// The UI's views, from hood-procfs's sampler.
struct Views(Sampler);

impl hood_monitor::Source for Views {
    type Error = ProcError;
    fn next(&mut self, scan: &ScanOptions) -> Result<SystemView, ProcError> {
        self.0.next(scan)
    }
    fn restart(&mut self, scan: &ScanOptions) -> Result<(), ProcError> {
        self.0.restart(scan)
    }
}
