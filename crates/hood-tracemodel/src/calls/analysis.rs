//! Per-path and per-function rows for `hood calls report`.

use std::collections::HashMap;

use serde::Serialize;

use super::ProcessCalls;

/// One output line: a call path (or a function with `-f`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Thread id, when rows are per thread.
    pub tid: Option<u32>,
    /// Function names from the outermost call; one name for function rows.
    pub path: Vec<String>,
    /// Calls (counted at entry, running calls included).
    pub calls: u64,
    /// Own-body milliseconds (completed calls plus running calls so far; never negative).
    pub msecs: f64,
    /// Some call of this path/function was still running at collection.
    pub running: bool,
}

/// Sort order of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// By path/function name.
    Name,
    /// By calls, descending.
    Calls,
    /// By time, descending.
    Time,
    /// Table order.
    None,
}

#[derive(Default)]
struct Acc {
    calls: u64,
    ticks: i64,
    running: bool,
    first: usize,
}

/// One unique call path's totals, by function address (the analysis behind [`path_rows`],
/// before names are attached; pprof output uses it to keep functions with equal names apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTotal {
    /// Thread id, when totals are per thread.
    pub tid: Option<u32>,
    /// Function addresses from the outermost call (0 is the lost-paths node).
    pub funcs: Vec<u64>,
    /// Calls (counted at entry, running calls included).
    pub calls: u64,
    /// Own-body ticks, completed plus running calls (may be slightly negative after
    /// compensation; clamp before showing).
    pub ticks: i64,
    /// Some call of this path was still running at collection.
    pub running: bool,
}

/// `parent` of a top-level node of a [`Merged`] table (no node has this index).
const TOP: u32 = u32::MAX;

/// One distinct call path (per thread when asked) of a process, with its totals.
struct Node {
    /// Index of the path it extends, or [`TOP`].
    parent: u32,
    /// Function address at its end.
    func: u64,
    tid: Option<u32>,
    /// Functions along it.
    depth: u32,
    acc: Acc,
    /// Some table entry counted on it (the empty lost-paths node is not).
    used: bool,
}

/// The paths of every thread merged into one table, each distinct path once: memory in
/// proportion to the table, however deep its paths are (a path is its parent's index and one
/// function, never a copy of its parent's functions).
struct Merged {
    nodes: Vec<Node>,
}

impl Merged {
    fn new(p: &ProcessCalls, per_thread: bool) -> Merged {
        let mut nodes: Vec<Node> = Vec::new();
        let mut index: HashMap<(Option<u32>, u32, u64), u32> = HashMap::new();
        let mut order = 0usize;
        for t in &p.threads {
            let tid = per_thread.then_some(t.tid);
            // The merged node of each of this thread's entries.
            let mut local: Vec<u32> = Vec::with_capacity(t.paths.len());
            for (i, e) in t.paths.iter().enumerate() {
                let parent = match e.parent {
                    Some(q) if (q as usize) < i => local[q as usize],
                    _ => TOP,
                };
                let depth = match nodes.get(parent as usize) {
                    Some(n) => n.depth.saturating_add(1),
                    None => 1,
                };
                let id = *index.entry((tid, parent, e.func)).or_insert_with(|| {
                    nodes.push(Node {
                        parent,
                        func: e.func,
                        tid,
                        depth,
                        acc: Acc::default(),
                        used: false,
                    });
                    (nodes.len() - 1) as u32
                });
                local.push(id);
                if i == 0 && e.calls == 0 && e.own_ticks == 0 {
                    continue;
                }
                let n = &mut nodes[id as usize];
                if !n.used {
                    n.used = true;
                    order += 1;
                    n.acc.first = order;
                }
                n.acc.calls += e.calls;
                n.acc.ticks += e.own_ticks + e.running_ticks;
                n.acc.running |= e.running;
            }
        }
        Merged { nodes }
    }

    /// Function addresses of node `id`'s path, from the outermost call.
    fn funcs(&self, id: usize) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.nodes[id].depth as usize);
        let mut at = id;
        while let Some(n) = self.nodes.get(at) {
            v.push(n.func);
            at = n.parent as usize;
        }
        v.reverse();
        v
    }
}

/// How big a path report of a process is: its distinct call paths and the functions along
/// them (what [`path_totals`] and [`path_rows`] hold in memory), counted without building them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathSize {
    /// Distinct call paths.
    pub paths: u64,
    /// Functions along them, summed over the paths.
    pub frames: u64,
    /// Functions along the longest path.
    pub deepest: u32,
}

/// The size of [`path_totals`]`(p, per_thread)`, in memory proportional to the path table
/// (a caller checks it before building rows whose size is paths × depth).
pub fn path_size(p: &ProcessCalls, per_thread: bool) -> PathSize {
    let m = Merged::new(p, per_thread);
    let mut s = PathSize::default();
    for n in m.nodes.iter().filter(|n| n.used) {
        s.paths += 1;
        s.frames += u64::from(n.depth);
        s.deepest = s.deepest.max(n.depth);
    }
    s
}

/// Per-path totals in first-seen order; merged over threads by the sequence of function
/// addresses unless `per_thread`. Their functions add up to [`path_size`]'s `frames`.
pub fn path_totals(p: &ProcessCalls, per_thread: bool) -> Vec<PathTotal> {
    let m = Merged::new(p, per_thread);
    let mut used: Vec<usize> = (0..m.nodes.len()).filter(|&i| m.nodes[i].used).collect();
    used.sort_by_key(|&i| m.nodes[i].acc.first);
    used.into_iter()
        .map(|i| {
            let n = &m.nodes[i];
            PathTotal {
                tid: n.tid,
                funcs: m.funcs(i),
                calls: n.acc.calls,
                ticks: n.acc.ticks,
                running: n.acc.running,
            }
        })
        .collect()
}

/// Per-path rows; merged over threads by the sequence of function addresses unless
/// `per_thread`.
pub fn path_rows(p: &ProcessCalls, per_thread: bool) -> Vec<Row> {
    named(p, path_totals(p, per_thread))
}

/// Per-function totals (`hood calls report -f`): calls and own time of every path ending in the
/// function.
pub fn function_rows(p: &ProcessCalls, per_thread: bool) -> Vec<Row> {
    let mut acc: HashMap<(Option<u32>, Vec<u64>), Acc> = HashMap::new();
    let mut order = 0usize;
    for t in &p.threads {
        let tid = per_thread.then_some(t.tid);
        for (i, e) in t.paths.iter().enumerate() {
            if i == 0 && e.calls == 0 && e.own_ticks == 0 {
                continue;
            }
            let a = acc.entry((tid, vec![e.func])).or_insert_with(|| {
                order += 1;
                Acc {
                    first: order,
                    ..Acc::default()
                }
            });
            a.calls += e.calls;
            a.ticks += e.own_ticks + e.running_ticks;
            a.running |= e.running;
        }
    }
    named(p, ordered(acc))
}

fn ordered(acc: HashMap<(Option<u32>, Vec<u64>), Acc>) -> Vec<PathTotal> {
    let mut v: Vec<(usize, PathTotal)> = acc
        .into_iter()
        .map(|((tid, funcs), a)| {
            (
                a.first,
                PathTotal {
                    tid,
                    funcs,
                    calls: a.calls,
                    ticks: a.ticks,
                    running: a.running,
                },
            )
        })
        .collect();
    v.sort_by_key(|(o, _)| *o);
    v.into_iter().map(|(_, t)| t).collect()
}

/// Name of a path node: the function's, or `<lost paths>` for address 0.
pub fn node_name(p: &ProcessCalls, func: u64) -> String {
    if func == 0 {
        "<lost paths>".to_string()
    } else {
        p.name(func)
    }
}

fn named(p: &ProcessCalls, totals: Vec<PathTotal>) -> Vec<Row> {
    totals
        .into_iter()
        .map(|t| Row {
            tid: t.tid,
            path: t.funcs.iter().map(|&f| node_name(p, f)).collect(),
            calls: t.calls,
            msecs: p.ticks_to_ms(t.ticks).max(0.0),
            running: t.running,
        })
        .collect()
}

/// Sort rows in place.
pub fn sort_rows(rows: &mut [Row], key: SortKey) {
    match key {
        SortKey::Name => rows.sort_by(|a, b| a.path.cmp(&b.path).then(a.tid.cmp(&b.tid))),
        SortKey::Calls => rows.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.path.cmp(&b.path))),
        SortKey::Time => rows.sort_by(|a, b| b.msecs.total_cmp(&a.msecs).then(a.path.cmp(&b.path))),
        SortKey::None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::{Limits, PathEntry, ThreadCalls};

    fn entry(parent: Option<u32>, func: u64, calls: u64) -> PathEntry {
        PathEntry {
            parent,
            func,
            calls,
            own_ticks: calls as i64 * 10,
            running_ticks: 0,
            running: false,
        }
    }

    fn thread(tid: u32, paths: Vec<PathEntry>) -> ThreadCalls {
        ThreadCalls::ended(tid, paths)
    }

    fn process(threads: Vec<ThreadCalls>) -> ProcessCalls {
        ProcessCalls {
            pid: 1,
            ppid: 0,
            exe: "/bin/x".into(),
            ticks_per_sec: 1000,
            clock: crate::Clock::Monotonic,
            compensate: false,
            comp_self_ticks: 0,
            comp_child_ticks: 0,
            flags: 0,
            limits: Limits::default(),
            state: crate::ProcessState::Exited,
            span_ns: 0,
            threads,
            symbols: Default::default(),
            notes: vec![],
        }
    }

    /// Two threads with the path 1→2 in a different table order merge into one path; per
    /// thread they stay two. The lost node counts only when something was charged to it.
    #[test]
    fn paths_merge_over_threads_by_their_functions() {
        let lost = entry(None, 0, 0);
        let a = thread(
            10,
            vec![
                lost,
                entry(None, 1, 1),
                entry(Some(1), 2, 3),
                entry(Some(2), 3, 1),
            ],
        );
        let b = thread(
            11,
            vec![
                lost,
                entry(None, 5, 1),
                entry(None, 1, 2),
                entry(Some(2), 2, 4),
            ],
        );
        let p = process(vec![a, b]);
        let merged = path_totals(&p, false);
        let got: Vec<(Vec<u64>, u64)> = merged.iter().map(|t| (t.funcs.clone(), t.calls)).collect();
        assert_eq!(
            got,
            vec![
                (vec![1], 3),
                (vec![1, 2], 7),
                (vec![1, 2, 3], 1),
                (vec![5], 1)
            ]
        );
        assert_eq!(merged[1].ticks, 70);
        assert_eq!(
            path_size(&p, false),
            PathSize {
                paths: 4,
                frames: 1 + 2 + 3 + 1,
                deepest: 3
            }
        );
        let per = path_totals(&p, true);
        assert_eq!(per.len(), 6);
        assert_eq!(path_size(&p, true).frames, 1 + 2 + 3 + 1 + 1 + 2);
        assert!(per.iter().all(|t| t.tid.is_some()));
    }

    /// A table of one path nested `n` deep: its size is counted, n(n+1)/2 functions, without
    /// building the paths.
    #[test]
    fn a_deep_chain_is_sized_without_being_built() {
        let n = 200_000u32;
        let mut paths = vec![entry(None, 0, 0)];
        paths.extend((1..=n).map(|i| entry((i > 1).then_some(i - 1), u64::from(i), 1)));
        let p = process(vec![thread(1, paths)]);
        let s = path_size(&p, false);
        assert_eq!(s.paths, u64::from(n));
        assert_eq!(s.deepest, n);
        assert_eq!(s.frames, u64::from(n) * u64::from(n + 1) / 2);
    }
}
