//! `hood top`: full-screen monitor, or batch frames (`-b -n N`, text or JSON Lines).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hood_model::monitor::{derive, ScanOptions, SortKey};
use hood_procfs::irqtime::IrqTracer;
use hood_procfs::{IdleSkip, ProcReader};
use hood_report::monitor::top::frame;
use hood_report::monitor::Mode;
use hood_tui::{scan_needs, TuiConfig};

use super::{arrange, descending, emit, out_width, reader, sort_key};

/// Full-screen system monitor (batch mode when stdout is not a terminal).
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Seconds between refreshes.
    #[arg(short, long, value_name = "SECS", default_value_t = 1.0)]
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

fn irq_state(t: &mut Option<Result<IrqTracer, String>>) -> Option<hood_model::monitor::IrqTimeRaw> {
    match t.as_mut()? {
        Ok(tr) => Some(tr.poll()),
        Err(why) => Some(hood_model::monitor::IrqTimeRaw {
            unavailable: Some(why.clone()),
            ..Default::default()
        }),
    }
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
    let delay = Duration::from_secs_f64(args.delay.clamp(0.01, 3600.0));
    let mut tracer = start_tracer(args.irq_time);
    if let Some(Err(why)) = &tracer {
        eprintln!("hood top: --irq-time unavailable: {why}");
    }
    let batch = args.batch || args.json || !std::io::stdout().is_terminal();
    let mut r = reader(&args.proc_root).with_idle_skip(IdleSkip::Every(REREAD_EVERY));
    if batch {
        let mut scan = scan_needs(mode, key, args.irq_time);
        if args.json {
            scan = ScanOptions {
                threads: mode == Mode::Threads,
                ..ScanOptions::all()
            };
        }
        let width = out_width();
        let mut prev = r.snapshot(&scan).context("reading /proc")?;
        prev.irq_time = irq_state(&mut tracer);
        let mut n = 0u64;
        while args.iterations.is_none_or(|max| n < max) {
            std::thread::sleep(delay);
            let mut cur = r.snapshot(&scan).context("reading /proc")?;
            cur.irq_time = irq_state(&mut tracer);
            let mut v = derive(Some(&prev), &cur);
            arrange(&mut v, key, desc, args.filter.as_deref());
            if args.json {
                emit(&(serde_json::to_string(&v)? + "\n"))?;
            } else {
                let mut s = frame(&v, mode, width, args.rows, Some(key));
                s.push('\n');
                emit(&s)?;
            }
            // The older snapshot's records are reused by the next scan.
            r.recycle(std::mem::replace(&mut prev, cur));
            n += 1;
        }
        return Ok(ExitCode::SUCCESS);
    }
    run_tui(
        r,
        tracer,
        TuiConfig {
            mode,
            sort: key,
            descending: desc,
            filter: args.filter.unwrap_or_default(),
            delay,
            irq_time: args.irq_time,
        },
    )
}

/// The interactive UI: a sampler thread reads /proc at the requested depth and sends derived
/// views; the UI thread draws them and sends back what its current mode needs.
fn run_tui(
    mut r: ProcReader,
    mut tracer: Option<Result<IrqTracer, String>>,
    cfg: TuiConfig,
) -> anyhow::Result<ExitCode> {
    let (frame_tx, frame_rx) = mpsc::channel();
    let (need_tx, need_rx) = mpsc::channel::<ScanOptions>();
    let delay = cfg.delay;
    let mut scan = scan_needs(cfg.mode, cfg.sort, cfg.irq_time);
    let sampler = std::thread::spawn(move || -> anyhow::Result<()> {
        let mut prev = r.snapshot(&scan)?;
        prev.irq_time = irq_state(&mut tracer);
        loop {
            // Sleep in small steps so a new request (mode change) or quit is seen quickly.
            let mut slept = Duration::ZERO;
            let mut changed = false;
            while slept < delay && !changed {
                let step = Duration::from_millis(50).min(delay - slept);
                std::thread::sleep(step);
                slept += step;
                loop {
                    match need_rx.try_recv() {
                        Ok(s) => {
                            changed = s != scan;
                            scan = s;
                        }
                        Err(mpsc::TryRecvError::Empty) => break,
                        Err(mpsc::TryRecvError::Disconnected) => return Ok(()),
                    }
                }
            }
            let mut cur = r.snapshot(&scan)?;
            cur.irq_time = irq_state(&mut tracer);
            if changed {
                // Rates need two snapshots of the same depth: take a short second one.
                r.recycle(std::mem::replace(&mut prev, cur));
                std::thread::sleep(Duration::from_millis(200));
                cur = r.snapshot(&scan)?;
                cur.irq_time = irq_state(&mut tracer);
            }
            if frame_tx.send(derive(Some(&prev), &cur)).is_err() {
                return Ok(());
            }
            r.recycle(std::mem::replace(&mut prev, cur));
        }
    });
    let res = hood_tui::run(cfg, frame_rx, need_tx);
    let sampled = sampler.join();
    res.context("running the terminal UI")?;
    match sampled {
        Ok(r) => r?,
        Err(_) => anyhow::bail!("the sampler thread panicked"),
    }
    Ok(ExitCode::SUCCESS)
}
