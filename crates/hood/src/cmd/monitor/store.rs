//! The monitor store on the command line: `hood top --record DIR`, `hood top --replay DIR`
//! (batch dumps here; the screen is hood-tui's), and the store behind `hood ps --at` and
//! `hood info --at`. The store itself is `hood_procfs::store`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use hood_monitor::{arrange, Mode, SortKey, SystemView};
use hood_procfs::store::{Store, StoreLimits, StoreWriter};
use hood_procfs::IdleSkip;
use hood_report::monitor::dump::{csv_rows, OpenMetricsDump, CSV_HEADER};
use hood_report::monitor::top::frame;

use super::emit;
use crate::cmd::clean;

/// Where `hood ps --at` and `hood info --at` look without `--store`, and the documented
/// directory of the systemd unit (docs/monitor.md).
pub const DEFAULT_STORE: &str = "/var/lib/hood/monitor";

/// Where `hood ps` and `hood info` read from: the live system (or a fake /proc tree), or the
/// monitor store at a time.
#[derive(Debug, clap::Args)]
pub struct Source {
    /// Answer from the monitor store at TIME (10:42, 3h ago, 2026-11-26 10:42, UTC) instead of
    /// the live system; rates are those of the recorded interval.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub at: Option<String>,
    /// With --at: the store recorded by `hood top --record`.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STORE, requires = "at")]
    pub store: PathBuf,
    /// Read this directory instead of /proc (for tests with a fake tree).
    #[arg(long, hide = true)]
    pub proc_root: Option<PathBuf>,
}

/// Times are read and shown in UTC, as `hood top`'s clock shows them.
pub const UTC_OFFSET_S: i32 = 0;

pub(crate) fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A time from the command line (`--at`, `--from`, `--to`), with the option it came from in
/// the error.
pub(crate) fn time_arg(option: &str, text: &str) -> anyhow::Result<i64> {
    hood_monitor::when::parse_time(text, now_s(), UTC_OFFSET_S)
        .map_err(|e| anyhow::anyhow!("{option}: {e}"))
}

/// Say what the store found damaged, each once, naming the file and offset.
pub(crate) fn say_warnings(cmd: &str, store: &mut Store) {
    for w in store.take_warnings() {
        errln!("hood {cmd}: warning: {}", clean(w));
    }
}

/// What `hood top --record` was asked for.
pub(crate) struct RecordConfig<'a> {
    pub dir: &'a Path,
    pub delay: Duration,
    pub iterations: Option<u64>,
    pub limits: StoreLimits,
    pub proc_root: &'a Option<PathBuf>,
}

/// `hood top --record DIR`: a snapshot every `delay`, appended and synced, until stopped (or
/// `-n` intervals). SIGINT and SIGTERM (systemd's stop) end it after writing the per-process
/// index of the last minutes; every interval is on disk already.
pub(crate) fn record(c: RecordConfig<'_>) -> anyhow::Result<ExitCode> {
    let mut w = StoreWriter::create(c.dir, c.limits)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second one while the first is being handled ends hood at once (exit 1).
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let mut r = super::reader_with_exits(c.proc_root)
        .with_idle_skip(IdleSkip::Every(super::top::REREAD_EVERY));
    errln!(
        "hood top: recording every {} s into {} (keeping {}, at most {}); replay with \
         `hood top --replay {}`",
        c.delay.as_secs_f64(),
        clean(c.dir.display()),
        c.limits
            .keep_s
            .map_or("all".into(), |s| format!("{:.1} days", s as f64 / 86_400.0)),
        c.limits
            .max_bytes
            .map_or("no size limit".into(), |b| format!("{} MiB", b >> 20)),
        clean(c.dir.display()),
    );
    let start = Instant::now();
    let (mut done, mut tick) = (0u64, 0u64);
    loop {
        w.record(&mut r)
            .with_context(|| format!("recording into {}", c.dir.display()))?;
        done += 1;
        if c.iterations.is_some_and(|n| done >= n) || stop.load(Ordering::Relaxed) {
            w.finish();
            return Ok(ExitCode::SUCCESS);
        }
        // On a fixed grid from the start; an interval that ran late skips the ticks it missed.
        let el = start.elapsed();
        tick = (tick + 1).max((el.as_secs_f64() / c.delay.as_secs_f64()) as u64 + 1);
        let due = c.delay.mul_f64(tick as f64);
        // Woken now and then to see a stop request (a signal does not cut the sleep short).
        loop {
            let left = due.saturating_sub(start.elapsed());
            if left.is_zero() {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                w.finish();
                return Ok(ExitCode::SUCCESS);
            }
            std::thread::sleep(left.min(Duration::from_millis(250)));
        }
    }
}

/// The view recorded at `at` in the store `dir` (`hood ps --at`, `hood info --at`).
pub(crate) fn view_at(cmd: &str, dir: &Path, at: &str) -> anyhow::Result<SystemView> {
    let t = time_arg("--at", at)?;
    let mut store = Store::open(dir)?;
    let p = store.locate(t, UTC_OFFSET_S);
    say_warnings(cmd, &mut store);
    let mut p = p?;
    loop {
        if let Some(v) = store.view(p) {
            say_warnings(cmd, &mut store);
            return Ok(v);
        }
        say_warnings(cmd, &mut store);
        p = store.prev(p).ok_or_else(|| {
            anyhow::anyhow!("{}: no readable interval at or before {at}", dir.display())
        })?;
    }
}

/// Output of a batch replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dump {
    Text,
    Json,
    Csv,
    OpenMetrics,
}

/// What `hood top -b --replay` was asked for.
pub(crate) struct ReplayBatch<'a> {
    pub dir: &'a Path,
    pub at: Option<&'a str>,
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
    pub dump: Dump,
    pub mode: Mode,
    pub key: SortKey,
    pub desc: bool,
    pub filter: &'a str,
    pub rows: Option<usize>,
    pub width: usize,
    pub iterations: Option<u64>,
    /// `--cgroup PATH`: only the processes (and cgroups) in it or below it.
    pub cgroup: Option<&'a str>,
    /// `-p PID[,PID…]`: only these processes.
    pub pick: &'a super::pick::Pick,
    /// `--tree`: text frames in process-tree order.
    pub tree: bool,
}

/// `hood top -b --replay DIR [--at T | --from T1 --to T2]`: the recorded intervals as text
/// frames, JSON Lines, CSV rows or OpenMetrics.
pub(crate) fn replay_batch(c: ReplayBatch<'_>) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(c.dir)?;
    let (from, to) = match c.at {
        Some(at) => {
            let t = time_arg("--at", at)?;
            let p = store.locate(t, UTC_OFFSET_S);
            say_warnings("top", &mut store);
            let s = store.time_ms(p?).div_euclid(1000);
            (s, s)
        }
        None => {
            let from = c.from.map(|f| time_arg("--from", f)).transpose()?;
            let to = c.to.map(|f| time_arg("--to", f)).transpose()?;
            let first = store.first().map(|p| store.time_ms(p).div_euclid(1000));
            let last = store.last().map(|p| store.time_ms(p).div_euclid(1000));
            let (Some(first), Some(last)) = (first, last) else {
                say_warnings("top", &mut store);
                anyhow::bail!("{}: holds no readable interval", c.dir.display());
            };
            let (from, to) = (from.unwrap_or(first), to.unwrap_or(last));
            if from > to {
                anyhow::bail!("--from is after --to: give the earlier time first");
            }
            if to < first || from > last {
                let span = store.span_text(UTC_OFFSET_S);
                anyhow::bail!(
                    "no recorded interval from {} to {}: {} holds {span}",
                    hood_monitor::when::format_time(from, UTC_OFFSET_S),
                    hood_monitor::when::format_time(to, UTC_OFFSET_S),
                    c.dir.display()
                );
            }
            (from, to)
        }
    };
    let mut om = OpenMetricsDump::default();
    let mut n: u64 = 0;
    let mut any_cgroup = false;
    // The -p IDs no interval printed has held yet.
    let mut missing = c.pick.unmatched(&SystemView::default());
    let mut res: anyhow::Result<()> = Ok(());
    if c.dump == Dump::Csv {
        res = emit(CSV_HEADER);
    }
    let build = hood_report::metrics::BuildInfo {
        version: env!("CARGO_PKG_VERSION"),
        commit: "",
        date: "",
    };
    // With -p, the per-process index answers without decoding every interval's snapshot:
    // CSV rows are the processes alone; the other dumps show the machine too, which the
    // index holds beside the processes (a store written before it held them is read whole).
    let indexed = !c.pick.pids.is_empty() && c.pick.tids.is_empty();
    let system = c.dump != Dump::Csv;
    // Output goes out in blocks of about 64 KiB: a day of rows is not 17,280 writes.
    let mut buf = String::new();
    if res.is_ok() {
        let mut each = |mut v: SystemView| {
            if let Some(cg) = c.cgroup {
                any_cgroup |= v.cgroups.is_some() || v.tasks.iter().any(|t| t.cgroup.is_some());
                keep_cgroup(&mut v, cg);
            }
            c.pick.seen_in(&v, &mut missing);
            c.pick.keep(&mut v);
            arrange(&mut v, c.key, c.desc, c.filter);
            let out = match c.dump {
                Dump::Text => {
                    if c.tree {
                        into_tree(&mut v, c.mode);
                    }
                    buf.push_str(&frame(&v, c.mode, c.width, c.rows, Some(c.key)));
                    buf.push('\n');
                    Ok(())
                }
                Dump::Json => serde_json::to_string(&v)
                    .map_err(anyhow::Error::from)
                    .map(|s| {
                        buf.push_str(&s);
                        buf.push('\n');
                    }),
                Dump::Csv => {
                    if let Some(r) = c.rows {
                        v.tasks.truncate(r);
                    }
                    csv_rows(&v, UTC_OFFSET_S, &mut buf);
                    Ok(())
                }
                Dump::OpenMetrics => {
                    let sel = hood_report::metrics::Selection {
                        top: c.rows.unwrap_or(20),
                        filter: (!c.filter.is_empty()).then(|| c.filter.to_string()),
                    };
                    let tasks = hood_report::metrics::select_tasks(&v, &sel);
                    let mut text = Vec::new();
                    hood_report::metrics::render_metrics(&mut text, &v, &tasks, build)
                        .map_err(anyhow::Error::from)
                        .map(|()| {
                            om.add(
                                &String::from_utf8_lossy(&text),
                                v.uptime.wall_time_s.saturating_mul(1000),
                            )
                        })
                }
            };
            let out = out.and_then(|()| {
                if buf.len() < 64 << 10 {
                    return Ok(());
                }
                let r = emit(&buf);
                buf.clear();
                r
            });
            n += 1;
            if let Err(e) = out {
                res = Err(e);
                return false;
            }
            c.iterations.is_none_or(|max| n < max)
        };
        if indexed {
            store.window_pids(from, to, &c.pick.pids, system, &mut each);
        } else {
            store.window(from, to, &mut each);
        }
    }
    if res.is_ok() && !buf.is_empty() {
        res = emit(&buf);
    }
    say_warnings("top", &mut store);
    res?;
    if n > 0 && c.cgroup.is_some() && !any_cgroup {
        errln!(
            "hood top: --cgroup: the intervals from {} to {} in {} hold no cgroups (recorded \
             by a hood that did not read them, or without a cgroup v2 hierarchy), so no \
             process is shown; record again with this hood",
            hood_monitor::when::format_time(from, UTC_OFFSET_S),
            hood_monitor::when::format_time(to, UTC_OFFSET_S),
            clean(c.dir.display())
        );
    }
    if c.dump == Dump::OpenMetrics {
        emit(&om.finish())?;
    }
    if n > 0 && !missing.is_empty() {
        errln!(
            "hood top: no process matches {} in the intervals from {} to {} in {}; `hood ps \
             --at TIME --store {}` lists the processes at TIME",
            missing.join(", "),
            hood_monitor::when::format_time(from, UTC_OFFSET_S),
            hood_monitor::when::format_time(to, UTC_OFFSET_S),
            clean(c.dir.display()),
            clean(c.dir.display())
        );
        return Ok(ExitCode::from(1));
    }
    if n == 0 {
        errln!(
            "hood top: no readable interval from {} to {} in {}",
            hood_monitor::when::format_time(from, UTC_OFFSET_S),
            hood_monitor::when::format_time(to, UTC_OFFSET_S),
            clean(c.dir.display())
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--tree`: the (sorted, filtered) processes of the task views in process-tree order, as the
/// screen's `t` shows them.
pub(crate) fn into_tree(v: &mut SystemView, mode: Mode) {
    if matches!(mode, Mode::Tasks | Mode::Ipc) {
        hood_report::monitor::table::into_tree(&mut v.tasks);
    }
}

/// Only the processes (and cgroups) in the cgroup `path` or below it (`--cgroup`).
pub(crate) fn keep_cgroup(v: &mut SystemView, path: &str) {
    let path = path.trim_end_matches('/');
    let under = |p: &str| {
        path.is_empty() || p == path || p.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
    };
    v.tasks.retain(|t| t.cgroup.as_deref().is_some_and(under));
    if let Some(cgs) = v.cgroups.as_mut() {
        cgs.retain(|c| under(&c.path));
    }
}

/// A replay (`hood top --replay DIR`) with `--cgroup`'s processes only.
pub(crate) struct InCgroup<R> {
    pub inner: R,
    pub cgroup: Option<String>,
}

impl<R: hood_monitor::Recorded> hood_monitor::Recorded for InCgroup<R> {
    type Error = R::Error;
    fn seek(&mut self, to: hood_monitor::Seek) -> Result<SystemView, R::Error> {
        let mut v = self.inner.seek(to)?;
        if let Some(cg) = &self.cgroup {
            keep_cgroup(&mut v, cg);
        }
        Ok(v)
    }
    fn warnings(&mut self) -> Vec<String> {
        self.inner.warnings()
    }
    fn utc_offset_s(&self) -> i32 {
        self.inner.utc_offset_s()
    }
}
