//! `/metrics`: a fresh /proc snapshot per scrape, rates against the previous one.

use std::sync::Mutex;

use anyhow::Context;
use hood_model::monitor::view::CtxView;
use hood_model::monitor::{derive, ScanOptions, Snapshot};
use hood_procfs::ProcReader;
use hood_report::metrics::{render_metrics, select_tasks, Selection};

/// The scraper: the reader and the previous snapshot, shared by the request threads.
pub struct Scraper {
    state: Mutex<(ProcReader, Option<Snapshot>)>,
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
        let first = r.snapshot(&scan).ok();
        Scraper {
            state: Mutex::new((r, first)),
            scan,
            sel,
        }
    }

    /// Encode the metrics text of a new snapshot.
    pub fn scrape(&self) -> anyhow::Result<String> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (reader, prev) = &mut *st;
        let cur = reader.snapshot(&self.scan).context("reading /proc")?;
        let view = derive(prev.as_ref(), &cur);
        *prev = Some(cur);
        drop(st);
        let mut tasks = select_tasks(&view, &self.sel);
        add_ctx(&mut tasks);
        Ok(render_metrics(&view, &tasks))
    }
}

/// Context switch counters of the exported processes (a vanished process keeps none).
fn add_ctx(tasks: &mut [hood_model::monitor::TaskView]) {
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
