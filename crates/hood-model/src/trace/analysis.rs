//! From raw events and context switches to McRae's function summary and code-path trace.
//!
//! Per thread, events and that thread's switches are merged by CLOCK_MONOTONIC time and walked
//! with a stack. A call's *elapsed* time is exit minus entry; its *net* time is elapsed minus
//! the elapsed time of its callees minus the time the thread was off-CPU while the call was on
//! top of the stack, minus the time hard irqs and softirqs ran in the thread's context while
//! the call was on top of the stack. Off-CPU time is the thread's time between a switch-out and
//! the next switch-in inside its traced span; irq time runs from the outermost irq entry to its
//! exit (a hard irq inside a softirq is counted once). Elapsed time of a recursive function counts only its
//! outermost activation, so it never exceeds wall time.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::timeline::{PathItem, PathLine};
use super::{IrqKind, Kind, ProcessTrace, Trace};

/// What to compute.
#[derive(Debug, Clone, Default)]
pub struct AnalysisOptions {
    /// Only this thread.
    pub tid: Option<u32>,
    /// Build the code-path trace lines.
    pub paths: bool,
    /// Keep every completed call (for Chrome trace output).
    pub calls: bool,
    /// Path lines from this many ns after the trace start.
    pub from_ns: Option<u64>,
    /// Path lines up to this many ns after the trace start.
    pub to_ns: Option<u64>,
}

/// Per-function totals, sorted by net time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionRow {
    /// Function name.
    pub name: String,
    /// Elapsed ns (outermost activations).
    pub elapsed_ns: u64,
    /// Net ns.
    pub net_ns: u64,
    /// Completed calls, those left by longjmp or an exception (see `repaired`) included.
    pub calls: u64,
    /// Of `calls`, those whose exit hook never ran (left by longjmp or an exception): closed
    /// when a caller's exit showed them gone, and timed up to that exit (the hooks record no
    /// stack pointer to tell when the jump happened).
    pub repaired: u64,
    /// Largest net ns of one call.
    pub max_ns: u64,
    /// Smallest net ns of one call.
    pub min_ns: u64,
    /// Off-CPU ns taken out of its net time (the thread was off-CPU while it was on top of
    /// the stack).
    pub off_cpu_ns: u64,
    /// Irq and softirq ns taken out of its net time (they ran while it was on top of the stack).
    pub irq_ns: u64,
    /// Hard irq and softirq entries while it was on top of the stack.
    pub irqs: u64,
    /// Net ns as a share of the traced threads' time, %.
    pub pct_real: f64,
    /// Net ns as a share of their on-CPU time, %.
    pub pct_net: f64,
}

impl FunctionRow {
    /// Mean net ns per call.
    pub fn avg_ns(&self) -> u64 {
        self.net_ns.checked_div(self.calls).unwrap_or(0)
    }
}

/// One thread of the analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadSummary {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Executable.
    pub exe: String,
    /// First event, ns since the trace start.
    pub start_ns: u64,
    /// Last event or thread exit, ns since the trace start.
    pub end_ns: u64,
    /// Events kept.
    pub events: u64,
    /// Time off-CPU inside the span.
    pub off_cpu_ns: u64,
    /// Context switches out inside the span.
    pub switches: u64,
    /// Time in hard irqs and softirqs inside the span (on-CPU, but not the program's work).
    pub irq_ns: u64,
    /// Hard irq entries inside the span.
    pub hard_irqs: u64,
    /// Softirq entries inside the span.
    pub softirqs: u64,
    /// Irq entries whose exit is missing (lost records), not timed.
    pub irq_unmatched: u64,
    /// Events dropped (buffer full, stop mode).
    pub dropped: u64,
    /// Events overwritten (wrap mode).
    pub overwritten: u64,
    /// Exits without a matching entry.
    pub unmatched_exits: u64,
    /// Exits repaired: calls closed because a caller returned first (longjmp, exceptions),
    /// counted as calls of their functions.
    pub mismatched: u64,
    /// Calls still open at the end of the trace.
    pub unfinished: u64,
    /// Code-path lines (with `paths`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<PathLine>,
}

/// A completed (or unfinished) call, for timeline output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRec {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Function name.
    pub name: String,
    /// Entry, ns since the trace start.
    pub start_ns: u64,
    /// Elapsed ns.
    pub dur_ns: u64,
    /// Net ns.
    pub net_ns: u64,
}

/// Everything `hood trace report` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// CLOCK_MONOTONIC ns of the trace start (first event).
    pub origin_mono_ns: u64,
    /// Wall time from the first to the last event.
    pub elapsed_ns: u64,
    /// Events kept.
    pub events: u64,
    /// Sum of the threads' traced spans.
    pub thread_ns: u64,
    /// Of which on-CPU.
    pub run_ns: u64,
    /// Of which off-CPU.
    pub off_cpu_ns: u64,
    /// Of which in hard irqs and softirqs that interrupted the traced threads.
    pub irq_ns: u64,
    /// Hard irq entries in the traced threads' context.
    pub hard_irqs: u64,
    /// Softirq entries in the traced threads' context.
    pub softirqs: u64,
    /// Irq entries/exits were recorded.
    pub irq: bool,
    /// Irq records lost by the kernel.
    pub lost_irqs: u64,
    /// Context switches were recorded.
    pub sched: bool,
    /// Switch records lost by the kernel.
    pub lost_switches: u64,
    /// Per function, by net time.
    pub functions: Vec<FunctionRow>,
    /// Per thread.
    pub threads: Vec<ThreadSummary>,
    /// Completed calls (with `calls`).
    #[serde(skip)]
    pub calls: Vec<CallRec>,
    /// Off-CPU intervals (pid, tid, start ns since origin, duration) (with `calls`).
    #[serde(skip)]
    pub off_intervals: Vec<(u32, u32, u64, u64)>,
    /// Marks (pid, tid, ns since origin, label) (with `calls`).
    #[serde(skip)]
    pub marks: Vec<(u32, u32, u64, String)>,
    /// Irq and softirq intervals (pid, tid, start ns since origin, duration, name such as
    /// `irq 11 virtio0` or `softirq NET_RX`) (with `calls`).
    #[serde(skip)]
    pub irq_intervals: Vec<(u32, u32, u64, u64, String)>,
}

#[derive(Default)]
struct Acc {
    elapsed: u64,
    net: u64,
    calls: u64,
    repaired: u64,
    max: u64,
    min: u64,
    off: u64,
    irq: u64,
    irqs: u64,
}

/// How a call on the stack ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// Its exit event.
    Returned,
    /// A caller's exit came first: it was left by longjmp or an exception.
    Repaired,
    /// Still open when the thread's trace ended.
    Running,
}

struct Open {
    func: u64,
    entry: u64,
    child: u64,
    off: u64,
    irq: u64,
    irqs: u64,
    line: Option<usize>,
    has_child: bool,
}

enum Ev<'t> {
    Raw(Kind, u64),
    Switch {
        out: bool,
        preempt: bool,
    },
    Irq {
        kind: IrqKind,
        num: u32,
        name: &'t str,
    },
}

/// An irq or softirq that has entered and not yet exited.
struct OpenIrq {
    entry: u64,
    label: String,
}

/// `irq 11 virtio0` / `softirq NET_RX`.
fn irq_label(kind: IrqKind, num: u32, name: &str) -> String {
    match (kind.is_soft(), name.is_empty()) {
        (true, false) => format!("softirq {name}"),
        (true, true) => format!("softirq {num}"),
        (false, false) => format!("irq {num} {name}"),
        (false, true) => format!("irq {num}"),
    }
}

struct Walk<'a> {
    p: &'a ProcessTrace,
    opts: &'a AnalysisOptions,
    origin: u64,
    acc: &'a mut HashMap<String, Acc>,
    out: &'a mut Analysis,
    stack: Vec<Open>,
    active: HashMap<u64, u32>,
    th: ThreadSummary,
    off_since: Option<u64>,
    show_returns: bool,
    /// Open hard irq and softirq (Linux nests at most a hard irq inside a softirq).
    hard: Option<OpenIrq>,
    soft: Option<OpenIrq>,
    /// Start of the outermost open irq, and the time up to which its time was charged.
    irq_since: u64,
    irq_mark: u64,
}

impl Walk<'_> {
    fn in_window(&self, t: u64) -> bool {
        self.opts.paths
            && self.opts.from_ns.is_none_or(|f| t >= f)
            && self.opts.to_ns.is_none_or(|e| t <= e)
    }

    fn line(&mut self, t: u64, item: PathItem) -> Option<usize> {
        if !self.in_window(t) {
            return None;
        }
        self.th.lines.push(PathLine { t_ns: t, item });
        Some(self.th.lines.len() - 1)
    }

    fn in_irq(&self) -> bool {
        self.hard.is_some() || self.soft.is_some()
    }

    /// Charge the irq time since the last charge to the call on top of the stack (called
    /// before the stack changes and when the outermost irq exits).
    fn charge_irq(&mut self, t: u64) {
        if self.in_irq() {
            self.charge_since_mark(t);
        }
    }

    fn charge_since_mark(&mut self, t: u64) {
        let d = t.saturating_sub(self.irq_mark);
        self.irq_mark = self.irq_mark.max(t);
        if let Some(top) = self.stack.last_mut() {
            top.irq += d;
        }
    }

    fn pop(&mut self, t: u64, end: End) {
        let finished = end != End::Running;
        self.charge_irq(t);
        let Some(o) = self.stack.pop() else { return };
        let elapsed = t.saturating_sub(o.entry);
        let net = elapsed
            .saturating_sub(o.child)
            .saturating_sub(o.off)
            .saturating_sub(o.irq);
        let name = self.p.name(o.func);
        let a = self.active.entry(o.func).or_insert(1);
        *a = a.saturating_sub(1);
        let outermost = *a == 0;
        let acc = self.acc.entry(name.clone()).or_default();
        if outermost {
            acc.elapsed += elapsed;
        }
        if finished {
            acc.calls += 1;
            acc.repaired += u64::from(end == End::Repaired);
            acc.max = acc.max.max(net);
            acc.min = if acc.calls == 1 {
                net
            } else {
                acc.min.min(net)
            };
        }
        acc.net += net;
        acc.off += o.off;
        acc.irq += o.irq;
        acc.irqs += o.irqs;
        if let Some(parent) = self.stack.last_mut() {
            parent.child += elapsed;
            parent.has_child = true;
        }
        if let Some(i) = o.line {
            self.th.lines[i].item = PathItem::Call {
                depth: self.stack.len(),
                name: name.clone(),
                net_ns: net,
                total_ns: o.has_child.then_some(elapsed),
                unfinished: !finished,
                repaired: end == End::Repaired,
            };
        }
        if self.opts.calls {
            self.out.calls.push(CallRec {
                pid: self.p.pid,
                tid: self.th.tid,
                name,
                start_ns: o.entry,
                dur_ns: elapsed,
                net_ns: net,
            });
        }
    }

    fn step(&mut self, t: u64, ev: Ev) {
        match ev {
            Ev::Raw(Kind::Entry, f) => {
                let line = self.line(
                    t,
                    PathItem::Call {
                        depth: self.stack.len(),
                        name: String::new(),
                        net_ns: 0,
                        total_ns: None,
                        unfinished: true,
                        repaired: false,
                    },
                );
                *self.active.entry(f).or_insert(0) += 1;
                self.charge_irq(t);
                self.stack.push(Open {
                    func: f,
                    entry: t,
                    child: 0,
                    off: 0,
                    irq: 0,
                    irqs: 0,
                    line,
                    has_child: false,
                });
                self.show_returns = false;
            }
            Ev::Raw(Kind::Exit, f) => match self.stack.iter().rposition(|o| o.func == f) {
                Some(k) => {
                    while self.stack.len() > k + 1 {
                        self.th.mismatched += 1;
                        self.pop(t, End::Repaired);
                    }
                    if self.show_returns {
                        let name = self.p.name(f);
                        self.line(t, PathItem::Return { depth: k, name });
                    }
                    self.pop(t, End::Returned);
                }
                None => {
                    self.th.unmatched_exits += 1;
                    let name = self.p.name(f);
                    self.line(t, PathItem::UnmatchedExit { name });
                }
            },
            Ev::Raw(Kind::Mark, i) => {
                let label = self
                    .p
                    .tags
                    .get(&i)
                    .cloned()
                    .unwrap_or_else(|| "<unknown tag>".into());
                if self.opts.calls {
                    self.out
                        .marks
                        .push((self.p.pid, self.th.tid, t, label.clone()));
                }
                let depth = self.stack.len();
                self.line(t, PathItem::Mark { depth, label });
            }
            Ev::Raw(Kind::Control, c) => {
                self.line(t, PathItem::Control { on: c != 0 });
            }
            Ev::Irq { kind, num, name } => self.irq(t, kind, num, name),
            Ev::Switch { out: true, preempt } => {
                // No task switch happens inside an irq: an irq still open lost its exit.
                self.drop_open_irqs();
                self.off_since = Some(t);
                self.th.switches += 1;
                self.line(t, PathItem::SwitchOut { preempt });
            }
            Ev::Switch { out: false, .. } => {
                if let Some(o) = self.off_since.take() {
                    let d = t.saturating_sub(o);
                    self.th.off_cpu_ns += d;
                    if let Some(top) = self.stack.last_mut() {
                        top.off += d;
                    }
                    if self.opts.calls {
                        self.out.off_intervals.push((self.p.pid, self.th.tid, o, d));
                    }
                    self.line(t, PathItem::SwitchIn { off_ns: d });
                    self.show_returns = true;
                }
            }
        }
    }
}

#[path = "analysis_irq.rs"]
mod irq_walk;

#[cfg(test)]
#[path = "analysis_tests.rs"]
mod tests;

/// Analyse a trace.
pub fn analyze(trace: &Trace, opts: &AnalysisOptions) -> Analysis {
    let procs: HashMap<u32, &ProcessTrace> = trace.processes.iter().map(|p| (p.pid, p)).collect();
    let mut switches: HashMap<u32, Vec<(u64, bool, bool)>> = HashMap::new();
    for s in &trace.switches {
        switches
            .entry(s.tid)
            .or_default()
            .push((s.time_ns, s.out, s.preempt));
    }
    for v in switches.values_mut() {
        v.sort_by_key(|s| s.0);
    }
    let mut irqs: HashMap<u32, Vec<&super::Irq>> = HashMap::new();
    for i in &trace.irqs {
        irqs.entry(i.tid).or_default().push(i);
    }
    let origin = trace
        .events
        .iter()
        .filter_map(|te| Some(procs.get(&te.pid)?.ns(te.events.first()?.ticks())))
        .min()
        .unwrap_or(0);
    let mut out = Analysis {
        origin_mono_ns: origin,
        elapsed_ns: 0,
        events: 0,
        thread_ns: 0,
        run_ns: 0,
        off_cpu_ns: 0,
        sched: trace.meta.as_ref().is_some_and(|m| m.sched),
        lost_switches: trace.lost_switches,
        irq_ns: 0,
        hard_irqs: 0,
        softirqs: 0,
        irq: trace.meta.as_ref().is_some_and(|m| m.irq.is_some()),
        lost_irqs: trace.lost_irqs,
        functions: Vec::new(),
        threads: Vec::new(),
        calls: Vec::new(),
        off_intervals: Vec::new(),
        marks: Vec::new(),
        irq_intervals: Vec::new(),
    };
    let mut acc: HashMap<String, Acc> = HashMap::new();
    let mut end_max = 0u64;
    for te in &trace.events {
        if opts.tid.is_some_and(|t| t != te.tid) {
            continue;
        }
        let Some(p) = procs.get(&te.pid) else {
            continue;
        };
        let Some(first) = te.events.first() else {
            continue;
        };
        let info = p.threads.iter().find(|t| t.tid == te.tid);
        let rel = |ticks: u64| p.ns(ticks).saturating_sub(origin);
        let start = rel(first.ticks());
        let last = rel(te.events.last().map_or(0, |e| e.ticks()));
        let end = info
            .and_then(|i| i.exit_ticks)
            .map(rel)
            .filter(|&e| e >= last)
            .unwrap_or(last);
        let mut evs: Vec<(u64, Ev)> = te
            .events
            .iter()
            .map(|e| (rel(e.ticks()), Ev::Raw(e.kind(), e.addr)))
            .collect();
        if let Some(sw) = switches.get(&te.tid) {
            for &(ns, o, pre) in sw {
                let t = ns.saturating_sub(origin);
                if ns >= origin && t >= start && t <= end {
                    evs.push((
                        t,
                        Ev::Switch {
                            out: o,
                            preempt: pre,
                        },
                    ));
                }
            }
        }
        if let Some(list) = irqs.get(&te.tid) {
            for i in list {
                let t = i.time_ns.saturating_sub(origin);
                if i.pid == te.pid && i.time_ns >= origin && t >= start && t <= end {
                    evs.push((
                        t,
                        Ev::Irq {
                            kind: i.kind,
                            num: i.num,
                            name: &i.name,
                        },
                    ));
                }
            }
        }
        // Stable: at equal times function events stay in program order.
        evs.sort_by_key(|e| e.0);
        let mut w = Walk {
            p,
            opts,
            origin,
            acc: &mut acc,
            out: &mut out,
            stack: Vec::new(),
            active: HashMap::new(),
            th: ThreadSummary {
                pid: te.pid,
                tid: te.tid,
                exe: p.exe.clone(),
                start_ns: start,
                end_ns: end,
                events: te.events.len() as u64,
                off_cpu_ns: 0,
                switches: 0,
                irq_ns: 0,
                hard_irqs: 0,
                softirqs: 0,
                irq_unmatched: 0,
                dropped: info.map_or(0, |i| i.dropped),
                overwritten: info.map_or(0, |i| i.overwritten),
                unmatched_exits: 0,
                mismatched: 0,
                unfinished: 0,
                lines: Vec::new(),
            },
            off_since: None,
            show_returns: false,
            hard: None,
            soft: None,
            irq_since: 0,
            irq_mark: 0,
        };
        for (t, ev) in evs {
            w.step(t, ev);
        }
        if let Some(o) = w.off_since.take() {
            w.th.off_cpu_ns += end.saturating_sub(o);
        }
        w.drop_open_irqs();
        while !w.stack.is_empty() {
            w.th.unfinished += 1;
            w.pop(end, End::Running);
        }
        let _ = w.origin;
        let th = w.th;
        out.events += th.events;
        out.thread_ns += th.end_ns - th.start_ns;
        out.off_cpu_ns += th.off_cpu_ns;
        out.irq_ns += th.irq_ns;
        out.hard_irqs += th.hard_irqs;
        out.softirqs += th.softirqs;
        end_max = end_max.max(th.end_ns);
        out.threads.push(th);
    }
    out.elapsed_ns = end_max;
    out.off_cpu_ns = out.off_cpu_ns.min(out.thread_ns);
    out.irq_ns = out.irq_ns.min(out.thread_ns - out.off_cpu_ns);
    out.run_ns = out.thread_ns - out.off_cpu_ns - out.irq_ns;
    let pct = |n: u64, d: u64| {
        if d == 0 {
            0.0
        } else {
            n as f64 * 100.0 / d as f64
        }
    };
    let mut rows: Vec<FunctionRow> = acc
        .into_iter()
        .map(|(name, a)| FunctionRow {
            pct_real: pct(a.net, out.thread_ns),
            pct_net: pct(a.net, out.run_ns),
            name,
            elapsed_ns: a.elapsed,
            net_ns: a.net,
            calls: a.calls,
            repaired: a.repaired,
            max_ns: a.max,
            min_ns: a.min,
            off_cpu_ns: a.off,
            irq_ns: a.irq,
            irqs: a.irqs,
        })
        .collect();
    rows.sort_by(|a, b| b.net_ns.cmp(&a.net_ns).then_with(|| a.name.cmp(&b.name)));
    out.functions = rows;
    out.threads.sort_by_key(|t| (t.start_ns, t.pid, t.tid));
    out
}

/// Name/tag listing (McRae's names file): function names get even tags in address order
/// per process (exit = tag + 1); inline marks are listed with '='.
pub fn tag_listing(trace: &Trace) -> Vec<(String, u64, char)> {
    let mut names: BTreeMap<String, ()> = BTreeMap::new();
    let mut marks: BTreeMap<String, ()> = BTreeMap::new();
    for p in &trace.processes {
        for n in p.symbols.values() {
            names.insert(n.clone(), ());
        }
        for l in p.tags.values() {
            marks.insert(l.clone(), ());
        }
    }
    let mut out = Vec::new();
    let mut tag = 2u64;
    for n in names.into_keys() {
        out.push((n, tag, ' '));
        tag += 2;
    }
    for m in marks.into_keys() {
        out.push((m, tag, '='));
        tag += 1;
    }
    out
}
