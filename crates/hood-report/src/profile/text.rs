//! The default text report, modeled on the MINIX 3 profiler's: the header, the
//! highest-scoring functions across all processes, then one section per process; or a flat
//! table by file, process or thread; then optionally a call tree.

use std::collections::HashMap;
use std::io::Write;

use hood_model::profile::aggregate::{
    by_function, by_line, by_process, by_process_function, by_thread, totals,
};
use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::{FuncId, Profile};

use super::fmt::{
    bar, comm, ellipsize, ellipsize_left, fold, fold_label, func_label, pct, proc_label, rule,
    threshold, title, FitLines,
};
use super::group::dso_rows;
use super::header::{filter_text, render_header};
use super::offcpu::{self, time, weight};
use super::{tree, By, CallGraph, ReportOptions};
use crate::{safe, ReportError};

/// Names longer than this push the next column right instead of widening every row.
const MAX_NAME_COLUMN: usize = 48;
/// A name is never cut shorter than this to make room for the column after it.
const MIN_NAME_COLUMN: usize = 16;

/// Render the text report, no line longer than [`ReportOptions::width`].
pub fn render_text(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut fit = FitLines::new(out, opts.width.max(1));
    render_text_lines(prof, opts, &mut fit)?;
    fit.flush()?;
    Ok(())
}

fn render_text_lines(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let t = totals(prof, &opts.filter);
    render_header(prof, &opts.source, &opts.filter, &t, opts.width, out)?;
    if t.samples == 0 {
        if filter_text(&opts.filter).is_some() {
            writeln!(
                out,
                "No samples pass the filter; try without --pid/--tid/--comm/--kernel/--user."
            )?;
        } else {
            writeln!(
                out,
                "No samples: the target ran too briefly or sampling was paused throughout."
            )?;
        }
        return Ok(());
    }
    match opts.by {
        By::Function => functions(prof, opts, t.samples, out)?,
        By::Dso => {
            let funcs = by_function(prof, &opts.filter);
            let rows = dso_rows(prof, funcs.iter().map(|r| (r.key, r.count)));
            let counts: Vec<u64> = rows.iter().map(|r| r.1).collect();
            let table = Table::new(&heading(opts, "file"), t.samples, &counts, "file");
            table.write(opts, out, |i| {
                (rows[i].0.to_string(), weight(&opts.filter, rows[i].1))
            })?;
        }
        By::Process => {
            let rows = by_process(prof, &opts.filter);
            let counts: Vec<u64> = rows.iter().map(|r| r.count).collect();
            let table = Table::new(&heading(opts, "process"), t.samples, &counts, "process");
            table.write(opts, out, |i| {
                (
                    proc_label(prof, rows[i].key),
                    weight(&opts.filter, rows[i].count),
                )
            })?;
        }
        By::Comm => {
            let rows = comm_rows(prof, &opts.filter);
            let counts: Vec<u64> = rows.iter().map(|r| r.1).collect();
            let table = Table::new(
                &heading(opts, "process name"),
                t.samples,
                &counts,
                "process name",
            );
            table.write(opts, out, |i| {
                let (comm, count, pids) = &rows[i];
                let extra = match pids {
                    1 => "1 process".to_string(),
                    n => format!("{n} processes"),
                };
                (
                    comm.clone(),
                    format!("{}  {extra}", weight(&opts.filter, *count)),
                )
            })?;
        }
        By::ThreadName => {
            let rows = thread_name_rows(prof, &opts.filter);
            let counts: Vec<u64> = rows.iter().map(|r| r.1).collect();
            let table = Table::new(
                &heading(opts, "thread name"),
                t.samples,
                &counts,
                "thread name",
            );
            table.write(opts, out, |i| {
                let (name, count, threads, procs) = &rows[i];
                let extra = match (threads, procs) {
                    (1, _) => "1 thread".to_string(),
                    (t, 1) => format!("{t} threads, 1 process"),
                    (t, p) => format!("{t} threads, {p} processes"),
                };
                (
                    name.clone(),
                    format!("{}  {extra}", weight(&opts.filter, *count)),
                )
            })?;
        }
        By::Line => {
            let rows = by_line(prof, &opts.filter);
            let counts: Vec<u64> = rows.iter().map(|r| r.count).collect();
            let mut table = Table::new(&heading(opts, "source line"), t.samples, &counts, "line");
            table.name_from_left = true;
            table.write(opts, out, |i| {
                let (place, func) = line_label(prof, rows[i].key.as_ref());
                (
                    place,
                    format!("{}  {func}", weight(&opts.filter, rows[i].count)),
                )
            })?;
            if rows.iter().all(|r| r.key.is_none_or(|l| l.file.is_none())) {
                writeln!(
                    out,
                    "No line numbers: the sampled binaries have no DWARF debug info. Build with -g, \
                     or install their debug files (e.g. Debian's -dbgsym packages)."
                )?;
            }
        }
        By::Thread if opts.filter.measure == Measure::Wall && !prof.thread_times.is_empty() => {
            offcpu::thread_table(prof, &opts.filter, out)?;
        }
        By::Reason => {
            let rows = offcpu::by_reason(prof, &opts.filter);
            let counts: Vec<u64> = rows.iter().map(|r| r.1).collect();
            let table = Table::new("Off-CPU time by reason", t.samples, &counts, "reason");
            table.write(opts, out, |i| {
                (rows[i].0.clone(), weight(&opts.filter, rows[i].1))
            })?;
        }
        By::Waker => {
            let rows = offcpu::by_waker(prof, &opts.filter);
            let counts: Vec<u64> = rows.iter().map(|r| r.1).collect();
            let table = Table::new(
                "Blocked time by who woke the thread",
                t.samples,
                &counts,
                "waker",
            );
            table.write(opts, out, |i| {
                (rows[i].0.clone(), weight(&opts.filter, rows[i].1))
            })?;
        }
        By::Thread => {
            let rows = by_thread(prof, &opts.filter);
            let counts: Vec<u64> = rows.iter().map(|r| r.count).collect();
            let table = Table::new(&heading(opts, "thread"), t.samples, &counts, "thread");
            table.write(opts, out, |i| {
                let (pid, tid) = rows[i].key;
                (
                    thread_label(prof, pid, tid),
                    weight(&opts.filter, rows[i].count),
                )
            })?;
        }
    }
    if opts.call_graph != CallGraph::None {
        tree::render_tree_text(prof, opts, out)?;
    }
    Ok(())
}

/// `file:line` of a sampled line (the file's last two path components; `[no line]` without
/// debug info), and its function's display name.
pub(crate) fn line_label(
    prof: &Profile,
    l: Option<&hood_model::profile::FrameLine>,
) -> (String, String) {
    let Some(l) = l else {
        return ("[no line]".into(), "[unknown]".into());
    };
    let func = func_label(prof, Some(l.func));
    match prof.short_source_file(l) {
        Some(file) => (format!("{}:{}", safe::text(file), l.line), func),
        None => ("[no line]".into(), func),
    }
}

/// The bar width: narrower on narrow terminals, so that names keep their room.
pub(crate) fn bar_width(opts: &ReportOptions) -> usize {
    opts.bar_width
        .min(opts.width.saturating_sub(7 + 2 + 2 + MAX_NAME_COLUMN))
        .max(opts.bar_width.min(8))
}

/// (name, samples, processes) per process name, heaviest first, then by name.
fn comm_rows(prof: &Profile, filter: &Filter) -> Vec<(String, u64, usize)> {
    let mut m: HashMap<String, (u64, usize)> = HashMap::new();
    for r in by_process(prof, filter) {
        let e = m.entry(comm(prof, r.key)).or_default();
        e.0 += r.count;
        e.1 += 1;
    }
    let mut rows: Vec<(String, u64, usize)> = m.into_iter().map(|(c, (n, p))| (c, n, p)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    rows
}

/// (thread name, samples, threads, processes) per thread name, heaviest first, then by
/// name: what perf's `--sort comm` counts. A thread without a name of its own (or one
/// recorded before names were kept) carries its process's.
fn thread_name_rows(prof: &Profile, filter: &Filter) -> Vec<(String, u64, usize, usize)> {
    let mut m: HashMap<String, (u64, usize, std::collections::HashSet<u32>)> = HashMap::new();
    for r in by_thread(prof, filter) {
        let (pid, tid) = r.key;
        let name = prof
            .process(pid)
            .and_then(|p| p.threads.iter().find(|t| t.tid == tid))
            .map(|t| safe::text(&t.comm).into_owned())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| comm(prof, pid));
        let e = m.entry(name).or_default();
        e.0 += r.count;
        e.1 += 1;
        e.2.insert(pid);
    }
    let mut rows: Vec<(String, u64, usize, usize)> = m
        .into_iter()
        .map(|(c, (n, t, p))| (c, n, t, p.len()))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    rows
}

/// `Samples by WHAT`, or `Time by WHAT` when the report weighs time.
fn heading(opts: &ReportOptions, what: &str) -> String {
    match opts.filter.measure.is_time() {
        true => format!("Time by {what}"),
        false => format!("Samples by {what}"),
    }
}

/// `comm pid/tid`, with the thread's own name when it differs from the process's.
pub(crate) fn thread_label(prof: &Profile, pid: u32, tid: u32) -> String {
    let comm = comm(prof, pid);
    let tcomm = prof
        .process(pid)
        .and_then(|p| p.threads.iter().find(|t| t.tid == tid))
        .map(|t| safe::text(&t.comm))
        .filter(|c| !c.is_empty() && *c != comm);
    match tcomm {
        Some(t) => format!("{comm} {pid}/{tid} [{t}]"),
        None => format!("{comm} {pid}/{tid}"),
    }
}

/// A process's sample count and its (function, self samples) rows, heaviest first.
type ProcRows = (u64, Vec<(Option<FuncId>, u64)>);

/// The default layout: functions over all processes, then per process.
fn functions(
    prof: &Profile,
    opts: &ReportOptions,
    total: u64,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let rows = by_process_function(prof, &opts.filter);
    let grouped = by_comm_function(prof, &rows);
    let counts: Vec<u64> = grouped.iter().map(|r| r.count).collect();
    // Say which processes the table covers: all of them only when no filter narrows them.
    let whose = match (opts.filter.tid, opts.filter.pid, &opts.filter.comm) {
        (Some(tid), _, _) => format!("thread {tid}"),
        (None, Some(pid), _) => format!("pid {pid}"),
        (None, None, Some(comm)) => format!("processes named {}", safe::text(comm)),
        (None, None, None) => "all processes".to_string(),
    };
    let table = Table::new(
        &format!("Highest-scoring functions, {whose}"),
        total,
        &counts,
        "function",
    );
    table.write(opts, out, |i| {
        let g = &grouped[i];
        let whose = match g.pids.as_slice() {
            [pid] => proc_label(prof, *pid),
            pids => format!("{} ({} processes)", g.comm, pids.len()),
        };
        (func_label(prof, g.func), whose)
    })?;

    // Rows are heaviest first, so each process's list stays sorted.
    let mut per_proc: HashMap<u32, ProcRows> = HashMap::new();
    for r in &rows {
        let e = per_proc.entry(r.key.0).or_default();
        e.0 += r.count;
        e.1.push((r.key.1, r.count));
    }
    let mut procs: Vec<(u32, u64)> = per_proc.iter().map(|(&p, e)| (p, e.0)).collect();
    procs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if procs.len() < 2 {
        return Ok(()); // the table above already is the one process's profile
    }
    let mut small = (0usize, 0u64);
    for &(pid, count) in &procs {
        if pct(count, total) < opts.min_percent {
            small.0 += 1;
            small.1 += count;
            continue;
        }
        let funcs = &per_proc[&pid].1;
        let counts: Vec<u64> = funcs.iter().map(|f| f.1).collect();
        let comm = comm(prof, pid);
        let left = if comm.starts_with("[pid ") {
            comm
        } else {
            format!("{comm} (pid {pid})")
        };
        let mut table = Table::new(&left, count, &counts, "function");
        table.overall = Some(total);
        table.write(opts, out, |i| (func_label(prof, funcs[i].0), String::new()))?;
    }
    if small.0 > 0 {
        writeln!(out, "{}", rule('-'))?;
        let left = format!(
            "processes {} (not showing functions): {}",
            threshold(opts.min_percent),
            small.0
        );
        let right = match opts.filter.measure.is_time() {
            true => format!("{:.1}% of time", pct(small.1, total)),
            false => format!("{:.1}% of samples", pct(small.1, total)),
        };
        writeln!(out, "{}", title(&left, &right))?;
        writeln!(out, "{}", rule('-'))?;
    }
    Ok(())
}

/// A function's self samples over every process of one name.
struct CommFunction {
    comm: String,
    func: Option<FuncId>,
    count: u64,
    /// The processes of that name it was sampled in.
    pids: Vec<u32>,
}

/// The (process, function) rows joined per (process name, function), heaviest first, then by
/// name: a build or a script that runs a program many times shows that program's functions
/// with their whole share, not one row per short-lived process.
fn by_comm_function(
    prof: &Profile,
    rows: &[hood_model::profile::aggregate::Row<(u32, Option<FuncId>)>],
) -> Vec<CommFunction> {
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut at: HashMap<(String, Option<FuncId>), usize> = HashMap::new();
    let mut out: Vec<CommFunction> = Vec::new();
    for r in rows {
        let (pid, func) = r.key;
        let comm = names.entry(pid).or_insert_with(|| comm(prof, pid)).clone();
        // A process never named is its own group.
        let key = match comm.starts_with("[pid ") {
            true => (format!("{comm}\0{pid}"), func),
            false => (comm.clone(), func),
        };
        let i = *at.entry(key).or_insert_with(|| {
            out.push(CommFunction {
                comm,
                func,
                count: 0,
                pids: Vec::new(),
            });
            out.len() - 1
        });
        out[i].count += r.count;
        out[i].pids.push(pid);
    }
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.comm.cmp(&b.comm))
            .then_with(|| a.pids.cmp(&b.pids))
    });
    out
}

/// One table: a titled list of rows, heaviest first, with percent, bar and labels.
struct Table<'a> {
    /// Title at the left of the heading.
    left: String,
    /// Samples the percentages are relative to.
    base: u64,
    /// When set, a second percent column relative to all samples.
    overall: Option<u64>,
    counts: &'a [u64],
    /// Singular noun for the fold line.
    what: &'static str,
    /// The name column is kept before the extra one and cut from the left (`file:line`,
    /// whose end tells rows apart); the extra column is what the width cuts.
    name_from_left: bool,
}

impl<'a> Table<'a> {
    fn new(left: &str, base: u64, counts: &'a [u64], what: &'static str) -> Self {
        Table {
            left: left.to_string(),
            base,
            overall: None,
            counts,
            what,
            name_from_left: false,
        }
    }

    /// Write the table; `label(i)` gives the name column and an extra column of row `i`,
    /// both written with control characters escaped.
    fn write(
        &self,
        opts: &ReportOptions,
        out: &mut dyn Write,
        label: impl Fn(usize) -> (String, String),
    ) -> Result<(), ReportError> {
        let f = fold(self.counts, self.base, opts.min_percent, opts.max_rows);
        let w = bar_width(opts);
        let prefix = if self.overall.is_some() { 15 } else { 7 } + 2 + w + 2;
        // Each name is cut so that its row, extra column included, fits the width; the
        // extra column (a process) is cut only when the name would drop below its minimum.
        let labels: Vec<(String, String)> = (0..f.shown)
            .map(|i| {
                let (name, extra) = label(i);
                let (name, extra) = (safe::text(&name), safe::text(&extra).into_owned());
                if self.name_from_left {
                    // The extra column keeps a few characters (the count) beside the name.
                    let extra_room = match extra.chars().count() {
                        0 => 0,
                        n => n.min(12) + 2,
                    };
                    let room = opts
                        .width
                        .saturating_sub(prefix + extra_room)
                        .clamp(MIN_NAME_COLUMN, MAX_NAME_COLUMN);
                    return (ellipsize_left(&name, room), extra);
                }
                let extra_room = if extra.is_empty() {
                    0
                } else {
                    extra.chars().count() + 2
                };
                let room = opts
                    .width
                    .saturating_sub(prefix + extra_room)
                    .max(MIN_NAME_COLUMN);
                (ellipsize(&name, room), extra)
            })
            .collect();
        let name_w = labels
            .iter()
            .map(|l| l.0.chars().count())
            .max()
            .unwrap_or(0)
            .min(MAX_NAME_COLUMN);
        let max = self
            .counts
            .first()
            .copied()
            .unwrap_or(0)
            .max(f.folded_count);
        let right = match (self.overall, opts.filter.measure.is_time()) {
            (Some(all), false) => {
                format!("{:.1}% of all samples ({})", pct(self.base, all), self.base)
            }
            (Some(all), true) => format!(
                "{:.1}% of all time ({})",
                pct(self.base, all),
                time(self.base)
            ),
            (None, false) => format!("{} samples", self.base),
            (None, true) => time(self.base),
        };
        writeln!(out, "{}", rule('-'))?;
        writeln!(out, "{}", title(&safe::text(&self.left), &right))?;
        if self.overall.is_some() {
            writeln!(out, "{:>7} {:>7}", "%proc", "%all")?;
        }
        writeln!(out, "{}", rule('-'))?;
        let pcts = |n: u64| match self.overall {
            Some(all) => format!("{:>6.1}% {:>6.1}%", pct(n, self.base), pct(n, all)),
            None => format!("{:>6.1}%", pct(n, self.base)),
        };
        for (i, (name, extra)) in labels.iter().enumerate() {
            let n = self.counts[i];
            let line = format!(
                "{}  {:<w$}  {name:<name_w$}  {extra}",
                pcts(n),
                bar(n, max, w)
            );
            writeln!(out, "{}", line.trim_end())?;
        }
        if f.folded_rows > 0 {
            let label = fold_label(&f, opts.min_percent, self.what);
            let b = bar(f.folded_count, max, w);
            writeln!(out, "{}  {b:<w$}  {label}", pcts(f.folded_count))?;
        }
        writeln!(out, "{}", rule('-'))?;
        let all = match self.overall {
            Some(all) => format!("{:>6.1}% {:>6.1}%", 100.0, pct(self.base, all)),
            None => format!("{:>6.1}%", 100.0),
        };
        writeln!(out, "{all}  total")?;
        writeln!(out)?;
        Ok(())
    }
}
