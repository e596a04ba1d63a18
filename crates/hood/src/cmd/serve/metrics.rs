//! `/metrics`: a fresh /proc snapshot per scrape, ratios against an earlier one.

use std::collections::VecDeque;
use std::sync::Mutex;

use anyhow::Context;
use hood_model::monitor::view::CtxView;
use hood_model::monitor::{derive, ScanOptions, Snapshot, TaskView};
use hood_procfs::ProcReader;
use hood_report::metrics::{render_metrics, select_tasks, Selection};

/// Shortest interval the per-interval ratios are computed over (once the server has run that
/// long), so scrapes close together (the two servers of a Prometheus HA pair) still get
/// meaningful ratios.
const MIN_INTERVAL_NS: u64 = 1_000_000_000;

/// The scraper: the reader and recent snapshots, shared by the request threads.
pub struct Scraper {
    state: Mutex<(ProcReader, VecDeque<Snapshot>)>,
    scan: ScanOptions,
    sel: Selection,
}

impl Scraper {
    /// Take the first snapshot now, so the first scrape already has an interval.
    pub fn new(sel: Selection) -> Scraper {
        // Only what the exported series need; /proc/PID/status is read for the exported
        // processes alone (see `add_ctx`), which keeps a scrape cheaper than a `hood top`
        // refresh. The filter matches user and command line, so those are read when filtering.
        let filtering = sel.filter.is_some();
        let scan = ScanOptions {
            owner: filtering,
            cmdline: filtering,
            exceptions: true,
            ..ScanOptions::default()
        };
        let mut r = ProcReader::new();
        let first: VecDeque<Snapshot> = r.snapshot(&scan).ok().into_iter().collect();
        Scraper {
            state: Mutex::new((r, first)),
            scan,
            sel,
        }
    }

    /// Encode the metrics text of a new snapshot.
    pub fn scrape(&self) -> anyhow::Result<String> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (reader, recent) = &mut *st;
        let cur = reader.snapshot(&self.scan).context("reading /proc")?;
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
        drop(st);
        let mut tasks = select_tasks(&view, &self.sel);
        add_ctx(&mut tasks);
        Ok(render_metrics(&view, &tasks))
    }
}

/// Context switch counters of the exported processes (a vanished process keeps none).
fn add_ctx(tasks: &mut [TaskView]) {
    for t in tasks {
        let path = format!("/proc/{}/status", t.pid);
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Some(c) = hood_procfs::parse::parse_status(&text).ctx {
                t.ctx_switches = Some(CtxView {
                    voluntary: c.voluntary,
                    involuntary: c.involuntary,
                    ..CtxView::default()
                });
            }
        }
    }
}
