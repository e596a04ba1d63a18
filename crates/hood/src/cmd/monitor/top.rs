//! `hood top`: full-screen monitor, or batch frames (`-b -n N`, text or JSON Lines).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use hood_monitor::{arrange, scan_needs, Mode, ScanOptions, Seek, SortKey, SystemView};
use hood_procfs::irq_handlers::IrqTracer;
use hood_procfs::store::{Replay, Store, StoreLimits};
use hood_procfs::{IdleSkip, ProcError, Sampler};
use hood_report::monitor::dump::{csv_rows, CSV_HEADER};
use hood_report::monitor::top::frame;
use hood_tui::{TuiConfig, TuiError};

use super::pick::{Pick, Picked};
use super::{descending, emit, out_width, reader_with_exits, sort_key, store};

/// Full-screen system monitor (batch mode when stdout is not a terminal).
#[derive(Debug, Args)]
#[command(mut_arg("pid", |a| a.conflicts_with("record").help(
    "Only these processes (comma-separated; with -H, their threads), live or with --replay. \
An ID that matches no task exits 1. A dump of a replay (-b) reads the store's per-process \
index: a day of one process in well under a second"
)))]
pub struct TopArgs {
    /// Seconds between refreshes (default 1; 5 with --record). `-d SECS`, as top and htop
    /// spell it, works too.
    #[arg(long, short_alias = 'd', value_name = "SECS", value_parser = crate::cmd::values::refresh_secs)]
    pub delay: Option<f64>,
    /// Batch mode: print plain-text frames instead of the full-screen UI.
    #[arg(short, long)]
    pub batch: bool,
    /// Number of frames in batch mode, or of intervals with --record (default: until
    /// interrupted).
    #[arg(short = 'n', long, value_name = "N")]
    pub iterations: Option<u64>,
    /// Batch mode: one JSON object per frame (JSON Lines) with the whole `system.*` view.
    #[arg(long)]
    pub json: bool,
    /// `--sort KEY`, `--filter TEXT`.
    #[command(flatten)]
    pub order: super::Order,
    /// `-p/--pid` (help line set above).
    #[command(flatten)]
    pub pids: crate::cmd::select::Pids<u32>,
    /// Only these threads (comma-separated thread IDs, as `hood ps -H` shows them): shows
    /// threads (-H). Live only: the monitor store holds processes.
    #[arg(long = "tid", value_name = "TID", value_delimiter = ',', conflicts_with_all = ["record", "replay"])]
    pub tid: Vec<u32>,
    /// Only processes in the cgroup (v2) PATH or below it, as /proc/PID/cgroup names it
    /// (e.g. /system.slice/cron.service), live or with --replay; the JSON view's
    /// system.cgroups then holds that tree's CPU, memory, I/O and pressure.
    #[arg(long, value_name = "PATH", conflicts_with = "record")]
    pub cgroup: Option<String>,
    /// The process tree, each process under its parent (as `t` or F5 on the screen): in
    /// text frames (-b) and on the screen, in the task views.
    #[arg(long, conflicts_with_all = ["json", "csv", "openmetrics", "record"])]
    pub tree: bool,
    /// Show threads instead of processes.
    #[arg(short = 'H', long)]
    pub threads: bool,
    /// Start in mode: t (tasks), i (context switches and syscalls per task), e (interrupts),
    /// H (threads), o (the cgroup tree).
    #[arg(short, long, value_name = "MODE", default_value = "t")]
    pub mode: String,
    /// Batch mode: at most this many task lines per frame (default: all).
    #[arg(long, value_name = "N")]
    pub rows: Option<usize>,
    /// Measure time per irq/softirq handler from the irq tracepoints (root or CAP_PERFMON).
    #[arg(long)]
    pub irq_time: bool,
    /// Record the whole system (processes, CPUs, memory, load, interrupts, pressure, disks,
    /// network) every --delay seconds into the store DIR (created mode 0700) until stopped; see
    /// docs/monitor.md.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["replay", "json", "csv", "batch", "irq_time"])]
    pub record: Option<PathBuf>,
    /// With --record: remove recorded time older than AGE (e.g. 12h, 7d, 4w; default 7d).
    #[arg(long, value_name = "AGE", value_parser = crate::cmd::values::age_secs)]
    pub keep: Option<u64>,
    /// With --record: keep the store within SIZE (e.g. 500M, 1G; default 1G), removing the
    /// oldest time.
    #[arg(long, value_name = "SIZE", value_parser = crate::cmd::values::size_bytes)]
    pub max_size: Option<u64>,
    /// Show recorded time from the store DIR (made by --record) instead of the live system.
    #[arg(long, value_name = "DIR", conflicts_with = "irq_time")]
    pub replay: Option<PathBuf>,
    /// With --replay: open at TIME (10:42, 3h ago, 2026-11-26 10:42, UTC; default the last
    /// recorded interval); with -b print that interval.
    #[arg(
        long,
        value_name = "TIME",
        requires = "replay",
        allow_hyphen_values = true
    )]
    pub at: Option<String>,
    /// With --replay -b: print every recorded interval from TIME (default the first).
    #[arg(long, value_name = "TIME", requires = "replay", conflicts_with = "at")]
    pub from: Option<String>,
    /// With --replay -b: ... up to TIME (default the last).
    #[arg(long, value_name = "TIME", requires = "replay", conflicts_with = "at")]
    pub to: Option<String>,
    /// Batch mode: CSV, one row per task and interval.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// With --replay -b: OpenMetrics text, every sample with its interval's timestamp (the
    /// busiest --rows processes per interval, default 20).
    #[arg(long, requires = "replay", conflicts_with_all = ["json", "csv"])]
    pub openmetrics: bool,
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
        "o" | "cgroups" => Mode::Cgroups,
        _ => anyhow::bail!(
            "unknown mode {s:?}; use t (tasks), i (context switches and syscalls), e \
             (interrupts), H (threads) or o (cgroups)"
        ),
    })
}

/// Start the `--irq-time` tracer, or explain why it is unavailable (the rest still works).
fn start_tracer(wanted: bool) -> Option<Result<IrqTracer, String>> {
    wanted.then(|| {
        if let Ok(root) = hood_perf::tracefs::mount_point() {
            for note in hood_perf::tracefs::remove_stale_hood_instances(&root) {
                errln!("hood: {}", crate::cmd::clean(note));
            }
        }
        IrqTracer::start().map_err(|e| e.to_string())
    })
}

/// A process that did not run keeps its record, but each one is read in full at least every
/// this many refreshes (its resident size and nice value can change without it running).
pub(crate) const REREAD_EVERY: u32 = 10;

/// Run `hood top`.
pub fn run(args: TopArgs) -> anyhow::Result<ExitCode> {
    let mode = parse_mode(&args.mode, args.threads || !args.tid.is_empty())?;
    let pick = Pick {
        pids: args.pids.pid.clone(),
        tids: args.tid.clone(),
    };
    let default_key = if mode == Mode::Ipc {
        SortKey::Ctx
    } else {
        SortKey::Cpu
    };
    let key = sort_key(args.order.sort.as_deref(), default_key)?;
    let desc = descending(args.order.sort.as_deref(), key);
    if let Some(dir) = &args.record {
        return store::record(store::RecordConfig {
            dir,
            delay: Duration::from_secs_f64(args.delay.unwrap_or(5.0)),
            iterations: args.iterations,
            limits: StoreLimits {
                keep_s: Some(args.keep.unwrap_or(7 * 86_400)),
                max_bytes: Some(args.max_size.unwrap_or(1 << 30)),
            },
            proc_root: &args.proc_root,
        });
    }
    if args.keep.is_some() || args.max_size.is_some() {
        anyhow::bail!("--keep and --max-size bound a store: use them with --record DIR");
    }
    let delay = Duration::from_secs_f64(args.delay.unwrap_or(1.0));
    let batch =
        args.batch || args.json || args.csv || args.openmetrics || !std::io::stdout().is_terminal();
    if let Some(dir) = &args.replay {
        return replay(&args, dir, mode, key, desc, batch, pick);
    }
    if args.from.is_some() || args.to.is_some() {
        anyhow::bail!("--from and --to need --replay DIR");
    }
    let tracer = start_tracer(args.irq_time);
    if let Some(Err(why)) = &tracer {
        errln!(
            "hood top: --irq-time unavailable: {}",
            crate::cmd::clean(why)
        );
    }
    let r = reader_with_exits(&args.proc_root)
        .with_system_io()
        .with_idle_skip(IdleSkip::Every(REREAD_EVERY));
    if !batch {
        let cfg = TuiConfig {
            mode,
            sort: key,
            descending: desc,
            filter: args.order.filter.unwrap_or_default(),
            delay,
            irq_time: args.irq_time,
            tree: args.tree,
        };
        let mut scan = scan_needs(mode, key, args.irq_time);
        scan.cgroup |= args.cgroup.is_some();
        let sampler = Sampler::start(r, tracer, &scan)?;
        if let Some(code) = unmatched_live(&pick, &sampler, args.cgroup.as_deref()) {
            return Ok(code);
        }
        let views = Picked {
            inner: Views {
                sampler,
                cgroup: args.cgroup.clone(),
            },
            pick,
        };
        hood_tui::run_sampled(cfg, views, &mut ProcessControl).map_err(|e| match e {
            TuiError::Io(_) => anyhow::Error::from(e).context("running the terminal UI"),
            e => e.into(),
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let scan = match args.json || args.csv {
        true => ScanOptions {
            threads: mode == Mode::Threads,
            ..ScanOptions::all()
        },
        false => {
            let mut s = scan_needs(mode, key, args.irq_time);
            s.cgroup |= args.cgroup.is_some();
            s
        }
    };
    let width = out_width();
    let mut sampler = Sampler::start(r, tracer, &scan).context("reading /proc")?;
    if let Some(code) = unmatched_live(&pick, &sampler, args.cgroup.as_deref()) {
        return Ok(code);
    }
    let mut n = 0u64;
    while args.iterations.is_none_or(|max| n < max) {
        std::thread::sleep(delay);
        let mut v = sampler.next(&scan).context("reading /proc")?;
        if let Some(cg) = &args.cgroup {
            store::keep_cgroup(&mut v, cg);
        }
        pick.keep(&mut v);
        arrange(
            &mut v,
            key,
            desc,
            args.order.filter.as_deref().unwrap_or(""),
        );
        if args.json {
            emit(&(serde_json::to_string(&v)? + "\n"))?;
        } else if args.csv {
            let mut s = String::new();
            if n == 0 {
                s.push_str(CSV_HEADER);
            }
            if let Some(r) = args.rows {
                v.tasks.truncate(r);
            }
            csv_rows(&v, store::UTC_OFFSET_S, &mut s);
            emit(&s)?;
        } else {
            if args.tree {
                store::into_tree(&mut v, mode);
            }
            let mut s = frame(&v, mode, width, args.rows, Some(key));
            s.push('\n');
            emit(&s)?;
        }
        n += 1;
    }
    Ok(ExitCode::SUCCESS)
}

/// `-p`/`--tid` IDs that match no task of the sampler's first snapshot, said in one line
/// (exit 1, as every reader's unmatched filter).
fn unmatched_live(pick: &Pick, sampler: &Sampler, cgroup: Option<&str>) -> Option<ExitCode> {
    if !pick.any() {
        return None;
    }
    let mut now = sampler.current();
    if let Some(cg) = cgroup {
        store::keep_cgroup(&mut now, cg);
    }
    let missing = pick.unmatched(&now);
    if missing.is_empty() {
        return None;
    }
    errln!(
        "hood top: no running task matches {} (it may have exited); `hood ps` lists the \
         processes, `hood ps -H` the threads",
        missing.join(", ")
    );
    Some(ExitCode::from(1))
}

/// `hood top --replay DIR`: the screen on recorded time, or (batch) a window of it printed.
fn replay(
    args: &TopArgs,
    dir: &Path,
    mode: Mode,
    key: SortKey,
    desc: bool,
    batch: bool,
    pick: Pick,
) -> anyhow::Result<ExitCode> {
    let filter = args.order.filter.as_deref().unwrap_or("");
    if batch {
        let dump = match (args.json, args.csv, args.openmetrics) {
            (true, _, _) => store::Dump::Json,
            (_, true, _) => store::Dump::Csv,
            (_, _, true) => store::Dump::OpenMetrics,
            _ => store::Dump::Text,
        };
        return store::replay_batch(store::ReplayBatch {
            dir,
            at: args.at.as_deref(),
            from: args.from.as_deref(),
            to: args.to.as_deref(),
            dump,
            mode,
            key,
            desc,
            filter,
            rows: args.rows,
            width: out_width(),
            iterations: args.iterations,
            cgroup: args.cgroup.as_deref(),
            pick: &pick,
            tree: args.tree,
        });
    }
    if args.from.is_some() || args.to.is_some() {
        anyhow::bail!("--from and --to print a window in batch mode (-b); on the screen use --at");
    }
    let start = match &args.at {
        Some(at) => Seek::At(store::time_arg("--at", at)?),
        None => Seek::Last,
    };
    let st = Store::open(dir)?;
    let cfg = TuiConfig {
        mode,
        sort: key,
        descending: desc,
        filter: filter.to_string(),
        delay: Duration::from_secs_f64(args.delay.unwrap_or(5.0)),
        irq_time: false,
        tree: args.tree,
    };
    let mut rec = store::InCgroup {
        inner: Replay::new(st, store::UTC_OFFSET_S),
        cgroup: args.cgroup.clone(),
    };
    if pick.any() {
        // The screen opens at `start`: each -p process must be there (another time it ran
        // at is reached with --at).
        let first = hood_monitor::Recorded::seek(&mut rec, start)?;
        let missing = pick.unmatched(&first);
        if !missing.is_empty() {
            errln!(
                "hood top: no process matches {} at {} in {}; open at a time it ran with \
                 --at TIME, or list the processes there with `hood ps --at TIME --store {}`",
                missing.join(", "),
                hood_monitor::when::format_time(first.uptime.wall_time_s, store::UTC_OFFSET_S),
                crate::cmd::clean(dir.display()),
                crate::cmd::clean(dir.display()),
            );
            return Ok(ExitCode::from(1));
        }
    }
    let rec = Picked { inner: rec, pick };
    hood_tui::run_replay(cfg, rec, start).map_err(|e| match e {
        TuiError::Io(_) => anyhow::Error::from(e).context("running the terminal UI"),
        e => e.into(),
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The UI's views, from hood-procfs's sampler, with `--cgroup`'s processes only.
struct Views {
    sampler: Sampler,
    cgroup: Option<String>,
}

impl hood_monitor::Source for Views {
    type Error = ProcError;
    fn next(&mut self, scan: &ScanOptions) -> Result<SystemView, ProcError> {
        let scan = ScanOptions {
            cgroup: scan.cgroup || self.cgroup.is_some(),
            ..*scan
        };
        let mut v = self.sampler.next(&scan)?;
        if let Some(cg) = &self.cgroup {
            store::keep_cgroup(&mut v, cg);
        }
        Ok(v)
    }
    fn restart(&mut self, scan: &ScanOptions) -> Result<(), ProcError> {
        let scan = ScanOptions {
            cgroup: scan.cgroup || self.cgroup.is_some(),
            ..*scan
        };
        self.sampler.restart(&scan)
    }
}

/// What `k` and `n` do once confirmed in the UI: hood-proc's pidfd-checked signal and nice.
struct ProcessControl;

impl hood_tui::Actions for ProcessControl {
    fn signal(&mut self, pid: u32, start_ticks: u64, sig: i32) -> Result<(), String> {
        hood_proc::others::send_signal(pid, start_ticks, sig).map_err(|e| e.to_string())
    }
    fn renice(&mut self, pid: u32, start_ticks: u64, nice: i32) -> Result<(), String> {
        hood_proc::others::set_nice(pid, start_ticks, nice).map_err(|e| e.to_string())
    }
}
