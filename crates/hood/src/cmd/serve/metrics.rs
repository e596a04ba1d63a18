//! `/metrics`: a fresh /proc snapshot per scrape, ratios against an earlier one.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use anyhow::Context;
use hood_model::monitor::view::CtxView;
use hood_model::monitor::{derive, ScanOptions, Snapshot, TaskView};
use hood_procfs::ProcReader;
use hood_report::metrics::{render_metrics, select_tasks, BuildInfo, Selection};

use super::lean::{LeanNeeds, LeanReader};

/// Shortest interval the per-interval ratios are computed over (once the server has run that
/// long), so scrapes close together (the two servers of a Prometheus HA pair) still get
/// meaningful ratios.
const MIN_INTERVAL_NS: u64 = 1_000_000_000;

/// What the request threads share under one lock: the reader, recent snapshots and the pids
/// exported last time (re-read in full on the next scrape).
struct Inner {
    reader: LeanReader,
    recent: VecDeque<Snapshot>,
    exported: HashSet<u32>,
}

/// The scraper, shared by the request threads.
pub struct Scraper {
    state: Mutex<Inner>,
    needs: LeanNeeds,
    sel: Selection,
}

impl Scraper {
    /// Take the first snapshot now, so the first scrape already has an interval. The /proc
    /// reader holds the descriptors of at most `held_processes` processes.
    pub fn new(sel: Selection, held_processes: usize) -> Scraper {
        // The filter matches user and command line, so those are read when filtering (and,
        // like everything else, only for processes that ran since the last scrape).
        let filtering = sel.filter.is_some();
        let needs = LeanNeeds {
            owner: filtering,
            cmdline: filtering,
        };
        // The clock tick and page size, as the monitor's reader finds them.
        let sys = ProcReader::new().snapshot(&ScanOptions::default()).ok();
        let mut reader = LeanReader::new(
            sys.as_ref().map_or(100, |s| s.clk_tck),
            sys.as_ref().map_or(4096, |s| s.page_size),
            held_processes,
        );
        let first: VecDeque<Snapshot> = reader
            .snapshot(needs, &HashSet::new())
            .ok()
            .into_iter()
            .collect();
        Scraper {
            state: Mutex::new(Inner {
                reader,
                recent: first,
                exported: HashSet::new(),
            }),
            needs,
            sel,
        }
    }

    /// Encode the metrics text of a new snapshot.
    pub fn scrape(&self) -> anyhow::Result<String> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Inner {
            reader,
            recent,
            exported,
        } = &mut *st;
        let cur = reader
            .snapshot(self.needs, exported)
            .context("reading /proc")?;
        // The newest snapshot at least MIN_INTERVAL old, else the oldest kept; older ones go.
        let age = |s: &Snapshot| cur.taken_ns.saturating_sub(s.taken_ns);
        let base = recent
            .iter()
            .rposition(|s| age(s) >= MIN_INTERVAL_NS)
            .unwrap_or(0);
        recent.drain(..base);
        let view = derive(recent.front(), &cur);
        // At most about five kept per MIN_INTERVAL however often scrapes come.
        if recent.back().is_none_or(|b| age(b) >= MIN_INTERVAL_NS / 4) {
            recent.push_back(cur);
        }
        let mut tasks = select_tasks(&view, &self.sel);
        exported.clear();
        exported.extend(tasks.iter().map(|t| t.pid));
        drop(st);
        add_ctx(&mut tasks);
        let build = BuildInfo {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("BUILD_COMMIT"),
            date: env!("BUILD_DATE"),
        };
        Ok(render_metrics(&view, &tasks, build))
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
