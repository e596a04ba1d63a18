//! `hood top -p/--pid PID[,PID…]` and `--tid TID[,TID…]`: the processes and threads a view
//! keeps, the same options as every reader's (docs/cli.md, "One convention"), live, in batch
//! frames and on a replayed store.

use hood_monitor::SystemView;

/// The processes and threads asked for; empty lists keep everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Pick {
    /// `-p/--pid`: these processes (in thread mode, their threads).
    pub pids: Vec<u32>,
    /// `--tid`: these threads (and, in process mode, the processes they belong to).
    pub tids: Vec<u32>,
}

impl Pick {
    /// Whether anything is asked for.
    pub fn any(&self) -> bool {
        !self.pids.is_empty() || !self.tids.is_empty()
    }

    /// Keep only the picked tasks in `v`: processes by `--pid`, threads by `--pid` (their
    /// process) and `--tid`; with `--tid` alone, the processes that own those threads.
    pub fn keep(&self, v: &mut SystemView) {
        if !self.any() {
            return;
        }
        let owners: Vec<u32> = match &v.threads {
            Some(th) if !self.tids.is_empty() => th
                .iter()
                .filter(|t| self.tids.contains(&t.pid))
                .map(|t| t.tgid)
                .collect(),
            _ => Vec::new(),
        };
        let pid_ok = |tgid: u32| self.pids.is_empty() || self.pids.contains(&tgid);
        v.tasks
            .retain(|t| pid_ok(t.pid) && (self.tids.is_empty() || owners.contains(&t.pid)));
        if let Some(th) = v.threads.as_mut() {
            th.retain(|t| pid_ok(t.tgid) && (self.tids.is_empty() || self.tids.contains(&t.pid)));
        }
    }

    /// The options of `self` that `v` (before [`keep`](Self::keep)) has no task for, as
    /// typed: `--pid 12`, `--tid 13`. A thread counts only where `v` lists threads.
    pub fn unmatched(&self, v: &SystemView) -> Vec<String> {
        let mut out = Vec::new();
        for &p in &self.pids {
            if !v.tasks.iter().any(|t| t.pid == p) {
                out.push(format!("--pid {p}"));
            }
        }
        let threads = v.threads.as_deref().unwrap_or(&[]);
        for &t in &self.tids {
            let of_pids = |tgid: u32| self.pids.is_empty() || self.pids.contains(&tgid);
            if !threads.iter().any(|x| x.pid == t && of_pids(x.tgid)) {
                out.push(format!("--tid {t}"));
            }
        }
        out
    }

    /// Drop from `missing` what `v` has (a window of replayed intervals: an ID is matched
    /// once any interval holds it).
    pub fn seen_in(&self, v: &SystemView, missing: &mut Vec<String>) {
        if missing.is_empty() {
            return;
        }
        let now = self.unmatched(v);
        missing.retain(|m| now.contains(m));
    }
}

/// A source of views (live or replayed) with only the picked tasks.
pub(crate) struct Picked<S> {
    pub inner: S,
    pub pick: Pick,
}

impl<S: hood_monitor::Source> hood_monitor::Source for Picked<S> {
    type Error = S::Error;
    fn next(&mut self, scan: &hood_monitor::ScanOptions) -> Result<SystemView, S::Error> {
        let mut v = self.inner.next(scan)?;
        self.pick.keep(&mut v);
        Ok(v)
    }
    fn restart(&mut self, scan: &hood_monitor::ScanOptions) -> Result<(), S::Error> {
        self.inner.restart(scan)
    }
}

impl<R: hood_monitor::Recorded> hood_monitor::Recorded for Picked<R> {
    type Error = R::Error;
    fn seek(&mut self, to: hood_monitor::Seek) -> Result<SystemView, R::Error> {
        let mut v = self.inner.seek(to)?;
        self.pick.keep(&mut v);
        Ok(v)
    }
    fn warnings(&mut self) -> Vec<String> {
        self.inner.warnings()
    }
    fn utc_offset_s(&self) -> i32 {
        self.inner.utc_offset_s()
    }
}

#[cfg(test)]
mod tests {
    use super::Pick;
    use hood_monitor::{SystemView, TaskView};

    fn task(pid: u32, tgid: u32) -> TaskView {
        TaskView {
            pid,
            tgid,
            ..TaskView::default()
        }
    }

    /// Processes 10 (threads 10, 11) and 20 (threads 20, 21).
    fn view() -> SystemView {
        SystemView {
            tasks: vec![task(10, 10), task(20, 20)],
            threads: Some(vec![task(10, 10), task(11, 10), task(20, 20), task(21, 20)]),
            ..SystemView::default()
        }
    }

    fn ids(v: &[TaskView]) -> Vec<u32> {
        v.iter().map(|t| t.pid).collect()
    }

    #[test]
    fn pids_keep_their_processes_and_threads() {
        let mut v = view();
        let p = Pick {
            pids: vec![20],
            tids: vec![],
        };
        assert!(p.unmatched(&v).is_empty());
        p.keep(&mut v);
        assert_eq!(ids(&v.tasks), [20]);
        assert_eq!(ids(v.threads.as_deref().unwrap()), [20, 21]);
    }

    #[test]
    fn tids_keep_their_threads_and_owners() {
        let mut v = view();
        let p = Pick {
            pids: vec![],
            tids: vec![11, 21],
        };
        p.keep(&mut v);
        assert_eq!(ids(&v.tasks), [10, 20]);
        assert_eq!(ids(v.threads.as_deref().unwrap()), [11, 21]);
        // With -p, a thread of another process is not kept, and is named as unmatched.
        let p = Pick {
            pids: vec![10],
            tids: vec![11, 21],
        };
        assert_eq!(p.unmatched(&view()), ["--tid 21"]);
        let mut v = view();
        p.keep(&mut v);
        assert_eq!(ids(v.threads.as_deref().unwrap()), [11]);
    }

    #[test]
    fn unmatched_names_each_missing_id_and_a_window_clears_them() {
        let p = Pick {
            pids: vec![10, 30],
            tids: vec![31],
        };
        let mut missing = p.unmatched(&view());
        assert_eq!(missing, ["--pid 30", "--tid 31"]);
        let mut later = view();
        later.tasks.push(task(30, 30));
        p.seen_in(&later, &mut missing);
        assert_eq!(missing, ["--tid 31"]);
    }
}
