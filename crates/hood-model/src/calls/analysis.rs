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

/// Per-path totals in first-seen order; merged over threads by the sequence of function
/// addresses unless `per_thread`.
pub fn path_totals(p: &ProcessCalls, per_thread: bool) -> Vec<PathTotal> {
    let mut acc: HashMap<(Option<u32>, Vec<u64>), Acc> = HashMap::new();
    let mut order = 0usize;
    for t in &p.threads {
        let tid = per_thread.then_some(t.tid);
        let mut keys: Vec<Vec<u64>> = Vec::with_capacity(t.paths.len());
        for (i, e) in t.paths.iter().enumerate() {
            let mut k = match e.parent {
                Some(q) if (q as usize) < i => keys[q as usize].clone(),
                _ => Vec::new(),
            };
            k.push(e.func);
            keys.push(k);
            if i == 0 && e.calls == 0 && e.own_ticks == 0 {
                continue;
            }
            let a = acc.entry((tid, keys[i].clone())).or_insert_with(|| {
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
    ordered(acc)
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
