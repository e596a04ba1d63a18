//! The JSON report (`hood report --format json`), documented in docs/json.md.

use std::collections::HashMap;
use std::io::Write;

use hood_model::profile::aggregate::{
    by_line, by_process_function, by_thread, totals, Totals, TreeNode,
};
use hood_model::profile::{FuncId, Mode, Profile, RecordMeta, RecordStats};
use serde::Serialize;

use super::group::dso_rows;
use super::header::{achieved_hz, achieved_hz_per_thread, active_ns, cpu_count, target, throttled};
use super::{tree, CallGraph, ReportOptions};
use crate::ReportError;

/// Version of the JSON layout; bumped when a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Report<'a> {
    schema_version: u32,
    source: &'a str,
    target: String,
    meta: &'a RecordMeta,
    stats: Option<&'a RecordStats>,
    finalized: bool,
    duration_ns: u64,
    active_ns: u64,
    cpus: usize,
    achieved_hz_per_cpu: f64,
    achieved_hz_per_thread: Option<f64>,
    lost: u64,
    throttled: u64,
    user_stacks: StacksJson,
    warnings: &'a [String],
    filter: FilterJson<'a>,
    totals: Totals,
    functions: Vec<FuncRow<'a>>,
    processes: Vec<ProcRow<'a>>,
    threads: Vec<ThreadRow<'a>>,
    dsos: Vec<DsoRow<'a>>,
    lines: Vec<LineRow<'a>>,
    call_graph: Option<TreeJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    off_cpu: Option<OffCpuJson<'a>>,
}

/// What a recording made with `--off-cpu` adds: the derivation's counts, each thread's time,
/// and off-CPU time by reason and blocked time by waker (in ns, whatever the view).
#[derive(Serialize)]
struct OffCpuJson<'a> {
    stats: &'a hood_model::profile::OffCpuStats,
    threads: Vec<ThreadTimeJson<'a>>,
    reasons: Vec<NsRow>,
    wakers: Vec<NsRow>,
}

#[derive(Serialize)]
struct ThreadTimeJson<'a> {
    comm: &'a str,
    #[serde(flatten)]
    time: &'a hood_model::profile::ThreadTime,
}

#[derive(Serialize)]
struct NsRow {
    name: String,
    ns: u64,
}

fn off_cpu_json<'a>(
    prof: &'a Profile,
    filt: &hood_model::profile::aggregate::Filter,
    thread_names: &HashMap<u32, &'a str>,
) -> Option<OffCpuJson<'a>> {
    use hood_model::profile::aggregate::Measure;
    prof.meta.off_cpu.as_ref()?;
    let off = hood_model::profile::aggregate::Filter {
        measure: Measure::OffCpu,
        by_waker: false,
        ..filt.clone()
    };
    let waker = hood_model::profile::aggregate::Filter {
        by_waker: true,
        ..off.clone()
    };
    let rows = |v: Vec<(String, u64)>| v.into_iter().map(|(name, ns)| NsRow { name, ns }).collect();
    Some(OffCpuJson {
        stats: &prof.off_cpu_stats,
        threads: prof
            .thread_times
            .iter()
            .filter(|t| filt.pid.is_none_or(|p| p == t.pid))
            .map(|t| ThreadTimeJson {
                comm: thread_names.get(&t.tid).copied().unwrap_or(""),
                time: t,
            })
            .collect(),
        reasons: rows(super::offcpu::by_reason(prof, &off)),
        wakers: rows(super::offcpu::by_waker(prof, &waker)),
    })
}

#[derive(Serialize)]
struct LineRow<'a> {
    file: Option<&'a str>,
    line: u32,
    function: &'a str,
    inlined: bool,
    dso: &'a str,
    samples: u64,
    percent: f64,
}

#[derive(Serialize)]
struct StacksJson {
    with_user_stack: u64,
    truncated: u64,
    reasons: Vec<ReasonJson>,
}

#[derive(Serialize)]
struct ReasonJson {
    frame: String,
    samples: u64,
}

#[derive(Serialize)]
struct FilterJson<'a> {
    pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    comm: Option<&'a str>,
    mode: Option<Mode>,
    /// `samples` (counts), `wall` or `off_cpu` (every count is then nanoseconds).
    measure: &'static str,
    by_waker: bool,
}

#[derive(Serialize)]
struct FuncRow<'a> {
    name: &'a str,
    dso: &'a str,
    kernel: bool,
    resolved: bool,
    inlined: bool,
    pid: u32,
    comm: String,
    samples: u64,
    percent: f64,
}

#[derive(Serialize)]
struct ProcFunc<'a> {
    name: &'a str,
    dso: &'a str,
    kernel: bool,
    resolved: bool,
    inlined: bool,
    samples: u64,
    percent: f64,
    percent_of_process: f64,
}

#[derive(Serialize)]
struct ProcRow<'a> {
    pid: u32,
    comm: String,
    samples: u64,
    percent: f64,
    functions: Vec<ProcFunc<'a>>,
}

#[derive(Serialize)]
struct ThreadRow<'a> {
    pid: u32,
    tid: u32,
    comm: &'a str,
    samples: u64,
    percent: f64,
}

#[derive(Serialize)]
struct DsoRow<'a> {
    dso: &'a str,
    samples: u64,
    percent: f64,
}

#[derive(Serialize)]
struct TreeJson<'a> {
    kind: &'static str,
    min_percent: f64,
    max_depth: usize,
    root: NodeJson<'a>,
}

#[derive(Serialize)]
struct NodeJson<'a> {
    name: &'a str,
    dso: &'a str,
    kernel: bool,
    inlined: bool,
    total: u64,
    self_samples: u64,
    percent: f64,
    other_children: usize,
    other_samples: u64,
    depth_limited: bool,
    children: Vec<NodeJson<'a>>,
}

/// A percentage rounded to 3 decimals (0 when `total` is 0).
fn pct3(n: u64, total: u64) -> f64 {
    (super::fmt::pct(n, total) * 1000.0).round() / 1000.0
}

/// (name, dso, kernel, resolved, inlined) of a leaf, `[unknown]` for none.
fn func_fields(prof: &Profile, f: Option<FuncId>) -> (&str, &str, bool, bool, bool) {
    match f.and_then(|id| prof.funcs.get(id as usize)) {
        Some(func) => (
            &func.name,
            &func.dso,
            func.kernel,
            func.resolved,
            func.inlined,
        ),
        None => ("[unknown]", "[unknown]", false, false, false),
    }
}

/// Render the JSON report: one pretty-printed object and a newline.
pub fn render_json(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let filt = &opts.filter;
    let t = totals(prof, filt);
    let total = t.samples;
    let limit = opts.max_rows.unwrap_or(usize::MAX);

    let pf = by_process_function(prof, filt);
    let mut per_proc: HashMap<u32, (u64, Vec<ProcFunc>)> = HashMap::new();
    for r in &pf {
        let (name, dso, kernel, resolved, inlined) = func_fields(prof, r.key.1);
        let e = per_proc.entry(r.key.0).or_default();
        e.0 += r.count;
        e.1.push(ProcFunc {
            name,
            dso,
            kernel,
            resolved,
            inlined,
            samples: r.count,
            percent: pct3(r.count, total),
            percent_of_process: 0.0,
        });
    }
    let functions = pf
        .iter()
        .take(limit)
        .map(|r| {
            let (name, dso, kernel, resolved, inlined) = func_fields(prof, r.key.1);
            FuncRow {
                name,
                dso,
                kernel,
                resolved,
                inlined,
                pid: r.key.0,
                comm: prof.comm(r.key.0),
                samples: r.count,
                percent: pct3(r.count, total),
            }
        })
        .collect();
    let mut processes: Vec<ProcRow> = per_proc
        .into_iter()
        .map(|(pid, (samples, mut functions))| {
            functions.truncate(limit);
            for f in &mut functions {
                f.percent_of_process = pct3(f.samples, samples);
            }
            ProcRow {
                pid,
                comm: prof.comm(pid),
                samples,
                percent: pct3(samples, total),
                functions,
            }
        })
        .collect();
    processes.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.pid.cmp(&b.pid)));

    let thread_names: HashMap<u32, &str> = prof
        .processes
        .iter()
        .flat_map(|p| p.threads.iter().map(|t| (t.tid, t.comm.as_str())))
        .collect();
    let threads = by_thread(prof, filt)
        .into_iter()
        .take(limit)
        .map(|r| ThreadRow {
            pid: r.key.0,
            tid: r.key.1,
            comm: thread_names.get(&r.key.1).copied().unwrap_or(""),
            samples: r.count,
            percent: pct3(r.count, total),
        })
        .collect();
    let dsos = dso_rows(prof, pf.iter().map(|r| (r.key.1, r.count)))
        .into_iter()
        .take(limit)
        .map(|(dso, samples)| DsoRow {
            dso,
            samples,
            percent: pct3(samples, total),
        })
        .collect();

    let lines = by_line(prof, filt)
        .into_iter()
        .take(limit)
        .map(|r| {
            let l = r.key;
            let (function, dso, _, _, inlined) = func_fields(prof, l.map(|l| l.func));
            LineRow {
                file: l.as_ref().and_then(|l| prof.source_file(l)),
                line: l.map_or(0, |l| l.line),
                function,
                inlined,
                dso,
                samples: r.count,
                percent: pct3(r.count, total),
            }
        })
        .collect();

    let built = tree::build(prof, opts);
    let call_graph = built.as_ref().map(|root| TreeJson {
        kind: if opts.call_graph == CallGraph::Caller {
            "caller"
        } else {
            "callee"
        },
        min_percent: opts.min_percent,
        max_depth: opts.max_depth,
        root: node(prof, opts, root, root.total, 0),
    });

    let report = Report {
        schema_version: SCHEMA_VERSION,
        source: &opts.source,
        target: target(prof),
        meta: &prof.meta,
        stats: prof.stats.as_ref(),
        finalized: prof.stats.is_some(),
        duration_ns: prof.duration_ns(),
        active_ns: active_ns(prof),
        cpus: cpu_count(prof),
        achieved_hz_per_cpu: (achieved_hz(prof) * 1000.0).round() / 1000.0,
        achieved_hz_per_thread: achieved_hz_per_thread(prof)
            .map(|(hz, _, _)| (hz * 1000.0).round() / 1000.0),
        lost: prof.lost(),
        throttled: throttled(prof),
        user_stacks: {
            let c = hood_model::profile::aggregate::stack_completeness(prof, filt);
            StacksJson {
                with_user_stack: c.with_user_stack,
                truncated: c.truncated,
                reasons: c
                    .reasons
                    .into_iter()
                    .map(|(frame, samples)| ReasonJson { frame, samples })
                    .collect(),
            }
        },
        warnings: &prof.warnings,
        filter: FilterJson {
            pid: filt.pid,
            tid: filt.tid,
            comm: filt.comm.as_deref(),
            mode: filt.mode,
            measure: match filt.measure {
                hood_model::profile::aggregate::Measure::CpuSamples => "samples",
                hood_model::profile::aggregate::Measure::Wall => "wall",
                hood_model::profile::aggregate::Measure::OffCpu => "off_cpu",
            },
            by_waker: filt.by_waker,
        },
        totals: t,
        functions,
        processes,
        threads,
        dsos,
        lines,
        call_graph,
        off_cpu: off_cpu_json(prof, filt, &thread_names),
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)?;
    Ok(())
}

/// A tree node with its visible children (pruned like the text tree).
fn node<'a>(
    prof: &'a Profile,
    opts: &ReportOptions,
    n: &TreeNode,
    base: u64,
    depth: usize,
) -> NodeJson<'a> {
    let (name, dso, kernel, inlined) = match n.func.and_then(|id| prof.funcs.get(id as usize)) {
        Some(f) => (f.name.as_str(), f.dso.as_str(), f.kernel, f.inlined),
        None if depth == 0 => ("[all]", "", false, false),
        None => ("[unknown]", "[unknown]", false, false),
    };
    let mut out = NodeJson {
        name,
        dso,
        kernel,
        inlined,
        total: n.total,
        self_samples: n.self_count,
        percent: pct3(n.total, base),
        other_children: 0,
        other_samples: 0,
        depth_limited: false,
        children: Vec::new(),
    };
    if depth >= opts.max_depth && !n.children.is_empty() {
        out.depth_limited = true;
        out.other_children = n.children.len();
        out.other_samples = n.children.iter().map(|c| c.total).sum();
        return out;
    }
    let f = tree::visible(n, base, opts.min_percent);
    out.other_children = f.folded_rows;
    out.other_samples = f.folded_count;
    out.children = n.children[..f.shown]
        .iter()
        .map(|c| node(prof, opts, c, base, depth + 1))
        .collect();
    out
}
