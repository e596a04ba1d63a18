//! `/metrics`: a fresh /proc snapshot per scrape, ratios against an earlier one.
//!
//! The /proc reader is hood-procfs's, with [`IdleSkip::UntilRun`]: a process that did not run
//! since the last scrape keeps its record (its schedstat is read, not its stat), except the
//! processes exported last time, which are read in full (their resident size is exported and
//! can change without them running).

use std::collections::VecDeque;
use std::sync::Mutex;

use hood_monitor::view::CtxView;
use hood_monitor::{derive, ScanOptions, Snapshot, TaskView};
use hood_procfs::{IdleSkip, ProcReader};
use hood_report::metrics::{render_metrics, select_tasks, BuildInfo, Selection};

use crate::ServeError;

/// Shortest interval the per-interval ratios are computed over (once the server has run that
/// long), so scrapes close together (the two servers of a Prometheus HA pair) still get
/// meaningful ratios.
const MIN_INTERVAL_NS: u64 = 1_000_000_000;

/// What the request threads share under one lock: the reader and recent snapshots.
struct Inner {
    reader: ProcReader,
    recent: VecDeque<Snapshot>,
}

/// The scraper, shared by the request threads.
pub struct Scraper {
    state: Mutex<Inner>,
    scan: ScanOptions,
    sel: Selection,
    build: BuildInfo<'static>,
}

impl Scraper {
    /// Take the first snapshot now, so the first scrape already has an interval. The /proc
    /// reader holds the descriptors of at most `held_processes` processes.
    pub fn new(sel: Selection, held_processes: usize, build: BuildInfo<'static>) -> Scraper {
        // The filter matches user and command line, so those are read when filtering (and,
        // like everything else, only for processes that ran since the last scrape).
        let filtering = sel.filter.is_some();
        let scan = ScanOptions {
            owner: filtering,
            cmdline: filtering,
            exceptions: true,
            // cgroups and their CPU, memory, I/O and pressure (at most MAX_CGROUPS exported).
            cgroup: true,
            cgroup_tree: true,
            ..ScanOptions::default()
        };
        let mut reader = ProcReader::new()
            .with_idle_skip(IdleSkip::UntilRun)
            .with_fd_budget(held_processes.saturating_mul(2));
        let first: VecDeque<Snapshot> = reader.snapshot(&scan).ok().into_iter().collect();
        Scraper {
            state: Mutex::new(Inner {
                reader,
                recent: first,
            }),
            scan,
            sel,
            build,
        }
    }

    /// Encode the metrics text of a new snapshot.
    pub fn scrape(&self) -> Result<Vec<u8>, ServeError> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Inner { reader, recent } = &mut *st;
        let cur = reader.snapshot(&self.scan)?;
        // The newest snapshot at least MIN_INTERVAL old, else the oldest kept; older ones go.
        let age = |s: &Snapshot| cur.taken_ns.saturating_sub(s.taken_ns);
        let base = recent
            .iter()
            .rposition(|s| age(s) >= MIN_INTERVAL_NS)
            .unwrap_or(0);
        // Records of snapshots no longer needed are reused by the reader.
        for old in recent.drain(..base) {
            reader.recycle(old);
        }
        let view = derive(recent.front(), &cur);
        // At most about five kept per MIN_INTERVAL however often scrapes come.
        if recent.back().is_none_or(|b| age(b) >= MIN_INTERVAL_NS / 4) {
            recent.push_back(cur);
        } else {
            reader.recycle(cur);
        }
        let mut tasks = select_tasks(&view, &self.sel);
        // The exported processes are read in full at the next scrape.
        reader.reread(tasks.iter().map(|t| t.pid));
        drop(st);
        add_ctx(&mut tasks);
        let mut body = Vec::new();
        render_metrics(&mut body, &view, &tasks, self.build)?;
        Ok(body)
    }
}

/// Context switch counters of the exported processes, summed over their live threads (a
/// process's own status counts its main thread only); a vanished process keeps none.
fn add_ctx(tasks: &mut [TaskView]) {
    for t in tasks {
        let Ok(threads) = std::fs::read_dir(format!("/proc/{}/task", t.pid)) else {
            continue;
        };
        let mut sum: Option<CtxView> = None;
        for th in threads.flatten() {
            let Ok(text) = std::fs::read_to_string(th.path().join("status")) else {
                continue;
            };
            if let Some(c) = hood_procfs::parse::parse_status(&text).ctx {
                let s = sum.get_or_insert_with(CtxView::default);
                s.voluntary = s.voluntary.saturating_add(c.voluntary);
                s.involuntary = s.involuntary.saturating_add(c.involuntary);
            }
        }
        if sum.is_some() {
            t.ctx_switches = sum;
        }
    }
}
