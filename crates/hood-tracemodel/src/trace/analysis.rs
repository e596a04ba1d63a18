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

use super::timeline::{PathItem, PathLine, Waker, WakerKind, UNKNOWN_CPU};
use super::wake::WakerFunctions;
use super::{IrqKind, Kind, ProcessTrace, ThreadEvents, ThreadKey, Trace, TraceHead};

/// What to compute.
#[derive(Debug, Clone, Default)]
pub struct AnalysisOptions {
    /// Only the threads of this process.
    pub pid: Option<u32>,
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
    /// Net ns (of the calls still running at the end too).
    pub net_ns: u64,
    /// Of `net_ns`, that of the calls still running at the end: timed to it, not counted in
    /// `calls`, nor in the maximum, mean and minimum per call.
    pub running_net_ns: u64,
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
    /// Mean net ns per completed call (calls still running at the end are not calls yet).
    pub fn avg_ns(&self) -> u64 {
        self.net_ns
            .saturating_sub(self.running_net_ns)
            .checked_div(self.calls)
            .unwrap_or(0)
    }
}

/// One thread of the analysis.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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
    /// Of which blocked up to a recorded wake-up (with wake-ups recorded).
    pub blocked_ns: u64,
    /// Of which runnable: preempted, or woken and waiting for a CPU (with wake-ups recorded).
    pub runnable_ns: u64,
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
    /// Events dropped: buffer full (`--full stop`), or lost because the program outran the
    /// recorder (streamed).
    pub dropped: u64,
    /// The thread's events were streamed to the file while it ran (else a fixed buffer).
    pub streamed: bool,
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

/// An off-CPU interval of a thread, for timeline output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffInterval {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Switch-out, ns since the trace start.
    pub start_ns: u64,
    /// Time off-CPU.
    pub dur_ns: u64,
    /// Of which blocked, when known (see [`PathItem::SwitchIn`]).
    pub blocked_ns: Option<u64>,
    /// Of which runnable, when known.
    pub runnable_ns: Option<u64>,
    /// Who woke it, when known.
    pub waker: Option<Waker>,
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
    /// Hard irq entries in the traced threads' context, inside their traced spans.
    pub hard_irqs: u64,
    /// Softirq entries in the traced threads' context, inside their traced spans.
    pub softirqs: u64,
    /// Hard irq entries in the file (of the chosen thread, with `--tid`) outside every
    /// traced span: before a thread's first event, after its end, or in a thread with no
    /// events. The recorder counts them; the times leave them out.
    pub hard_irqs_outside: u64,
    /// Softirq entries likewise.
    pub softirqs_outside: u64,
    /// Irq entries/exits were recorded.
    pub irq: bool,
    /// Irq records lost by the kernel.
    pub lost_irqs: u64,
    /// Context switches were recorded.
    pub sched: bool,
    /// Switch records lost by the kernel.
    pub lost_switches: u64,
    /// Wake-ups of the traced threads were recorded: off-CPU time splits into blocked and
    /// runnable, and each wait names its waker.
    pub wake: bool,
    /// Of the off-CPU time, blocked up to a recorded wake-up (with `wake`).
    pub blocked_ns: u64,
    /// Of the off-CPU time, runnable: preempted, or woken and waiting for a CPU (with `wake`).
    pub runnable_ns: u64,
    /// Wake-up records lost by the kernel.
    pub lost_wakeups: u64,
    /// Per function, by net time.
    pub functions: Vec<FunctionRow>,
    /// Per thread.
    pub threads: Vec<ThreadSummary>,
    /// Completed calls (with `calls`).
    #[serde(skip)]
    pub calls: Vec<CallRec>,
    /// Off-CPU intervals (with `calls`).
    #[serde(skip)]
    pub off_intervals: Vec<OffInterval>,
    /// Marks (pid, tid, ns since origin, label) (with `calls`).
    #[serde(skip)]
    pub marks: Vec<(u32, u32, u64, String)>,
    /// Irq and softirq intervals (pid, tid, start ns since origin, duration, name such as
    /// `irq 11 virtio0` or `softirq NET_RX`) (with `calls`).
    #[serde(skip)]
    pub irq_intervals: Vec<(u32, u32, u64, u64, String)>,
    /// What the report was asked to keep, so its header can say so.
    pub filter: TraceFilter,
    /// Probed functions: the cost per probed call taken out of the times (the first process's
    /// figure; each process's own is used for its calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_cost: Option<super::ProbeCost>,
    /// The same for a function whose first instruction the kernel single-steps (then
    /// `probe_cost` is for one whose first instruction it emulates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_cost_stepped: Option<super::ProbeCost>,
    /// How many probed functions (of that process) are of the single-stepped kind.
    #[serde(skip_serializing_if = "is_zero")]
    pub probe_stepped_functions: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The filters of a trace report, as asked (`--tid`, `--from`, `--to`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TraceFilter {
    /// Only the threads of this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Only this thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<u32>,
    /// Code-path lines from this many ns after the trace start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_ns: Option<u64>,
    /// Code-path lines up to this many ns after the trace start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_ns: Option<u64>,
    /// Threads with events in the file, whatever the filter.
    pub threads_in_file: usize,
}

#[derive(Default)]
struct Acc {
    elapsed: u64,
    net: u64,
    /// Of `net`, that of calls still running at the end.
    running: u64,
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
    /// Its code-path line (absolute number).
    line: Option<u64>,
    has_child: bool,
    /// Probe compensation: the cost outside their own spans of the calls it made that have
    /// ended, and the whole cost of the calls made below it (ns).
    kids_ns: u64,
    below_ns: u64,
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
    Wake(usize),
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

/// The state of one thread's walk, kept between the chunks of its events.
struct ThreadState {
    /// Its process (index into the processes).
    proc: usize,
    stack: Vec<Open>,
    active: FastMap<u64, u32>,
    th: ThreadSummary,
    off_since: Option<u64>,
    /// The last switch-out was a preemption.
    off_preempt: bool,
    /// The wake-up that ended the current off-CPU interval (time since the origin, index).
    woken: Option<(u64, usize)>,
    /// A wake-up that came while the thread was still on the CPU, after its last event: it
    /// was woken between deciding to sleep and leaving the CPU.
    early_wake: Option<(u64, usize)>,
    show_returns: bool,
    /// Open hard irq and softirq (Linux nests at most a hard irq inside a softirq).
    hard: Option<OpenIrq>,
    soft: Option<OpenIrq>,
    /// Start of the outermost open irq, and the time up to which its time was charged.
    irq_since: u64,
    irq_mark: u64,
    /// The thread's switches and irqs (ns since the origin), in time order, and the next one.
    side: Vec<(u64, Side)>,
    side_pos: usize,
    /// Exit time (ns since the origin), when the thread exited.
    exit: Option<u64>,
    /// Time of the last event walked.
    last: u64,
    started: bool,
    /// The calls open at the start of the `--from` window have their lines (or need none).
    window_context: bool,
    /// Code-path lines: number of lines flushed before `th.lines[0]`.
    line_base: u64,
    /// Flushes so far.
    flushes: u64,
    /// Pass 1 of a long code-path trace: lines of open calls at a flush, whose results pass 2
    /// needs; pass 2: those results.
    needed: std::collections::HashSet<u64>,
    results: HashMap<u64, PathItem>,
}

/// A switch or irq of a thread.
#[derive(Clone, Copy)]
enum Side {
    Switch {
        out: bool,
        preempt: bool,
    },
    Irq(usize),
    /// A wake-up (index into the head's wake-ups).
    Wake(usize),
}

struct Walk<'a> {
    p: &'a ProcessTrace,
    head: &'a TraceHead,
    wakers: Option<&'a WakerFunctions>,
    origin: u64,
    opts: &'a AnalysisOptions,
    acc: &'a mut FastMap<(u32, u64), Acc>,
    out: &'a mut Analysis,
    st: &'a mut ThreadState,
}

impl std::ops::Deref for Walk<'_> {
    type Target = ThreadState;
    fn deref(&self) -> &ThreadState {
        self.st
    }
}

impl std::ops::DerefMut for Walk<'_> {
    fn deref_mut(&mut self) -> &mut ThreadState {
        self.st
    }
}

/// A multiplicative hash for integer keys (function addresses): the walk looks one up per
/// event, where SipHash would cost more than the rest of the step.
#[derive(Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(29) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IntHasher>>;

impl Walk<'_> {
    fn in_window(&self, t: u64) -> bool {
        self.opts.paths
            && self.opts.from_ns.is_none_or(|f| t >= f)
            && self.opts.to_ns.is_none_or(|e| t <= e)
    }

    /// At the first step at or after the `--from` window's start: the calls then open (all
    /// entered before it) get their lines, at their entry times, so the window's lines show
    /// inside what they ran in, even a window with no event of its own.
    fn window_context(&mut self, t: u64) {
        if self.st.window_context {
            return;
        }
        let Some(from) = self.opts.from_ns.filter(|_| self.opts.paths) else {
            self.st.window_context = true;
            return;
        };
        if t < from {
            return;
        }
        self.st.window_context = true;
        if self.opts.to_ns.is_some_and(|e| from > e) {
            return;
        }
        for depth in 0..self.st.stack.len() {
            if self.st.stack[depth].line.is_some() {
                continue;
            }
            let o = &self.st.stack[depth];
            let (entry, name) = (o.entry, self.p.name(o.func));
            self.st.th.lines.push(PathLine {
                t_ns: entry,
                item: PathItem::Call {
                    depth,
                    name,
                    net_ns: 0,
                    total_ns: None,
                    unfinished: true,
                    repaired: false,
                    before_window: true,
                },
            });
            self.st.stack[depth].line = Some(self.line_base + self.th.lines.len() as u64 - 1);
        }
    }

    fn line(&mut self, t: u64, item: PathItem) -> Option<u64> {
        if !self.in_window(t) {
            return None;
        }
        self.st.th.lines.push(PathLine { t_ns: t, item });
        Some(self.line_base + self.th.lines.len() as u64 - 1)
    }

    /// Whether `[a, b]` meets the `--from/--to` window (timeline output).
    fn overlaps(&self, a: u64, b: u64) -> bool {
        self.opts.from_ns.is_none_or(|f| b >= f) && self.opts.to_ns.is_none_or(|e| a <= e)
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
        let raw = t.saturating_sub(o.entry);
        // Probed functions: the traps' cost out of the call's own and elapsed times (`child`
        // keeps the callees' raw elapsed times, which hold their whole cost but `child_ns`).
        let cost = self.p.probe_cost_of(o.func);
        let elapsed = raw.saturating_sub(cost.self_ns).saturating_sub(o.below_ns);
        let net = raw
            .saturating_sub(o.child)
            .saturating_sub(o.off)
            .saturating_sub(o.irq)
            .saturating_sub(cost.self_ns)
            .saturating_sub(o.kids_ns);
        let a = self.st.active.entry(o.func).or_insert(1);
        *a = a.saturating_sub(1);
        let outermost = *a == 0;
        let acc = self.acc.entry((self.st.proc as u32, o.func)).or_default();
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
        if !finished {
            acc.running += net;
        }
        acc.off += o.off;
        acc.irq += o.irq;
        acc.irqs += o.irqs;
        if let Some(parent) = self.st.stack.last_mut() {
            parent.child += raw;
            parent.has_child = true;
            parent.kids_ns = parent.kids_ns.saturating_add(cost.child_ns);
            parent.below_ns = parent
                .below_ns
                .saturating_add(cost.per_call_ns())
                .saturating_add(o.below_ns);
        }
        if let Some(i) = o.line {
            let item = PathItem::Call {
                depth: self.stack.len(),
                name: self.p.name(o.func),
                net_ns: net,
                total_ns: o.has_child.then_some(elapsed),
                unfinished: !finished,
                repaired: end == End::Repaired,
                before_window: o.entry < self.opts.from_ns.unwrap_or(0),
            };
            let base = self.line_base;
            if i >= base {
                self.st.th.lines[(i - base) as usize].item = item;
            } else if self.st.needed.remove(&i) {
                self.st.results.insert(i, item);
            }
        }
        if self.opts.calls && self.overlaps(o.entry, t) {
            self.out.calls.push(CallRec {
                pid: self.p.pid,
                tid: self.th.tid,
                name: self.p.name(o.func),
                start_ns: o.entry,
                // The timeline shows what happened: the traps' time included.
                dur_ns: raw,
                net_ns: net,
            });
        }
    }

    /// The blocked and runnable parts of the off-CPU interval `[o, t]` just ended, and who
    /// woke the thread, when wake-ups were recorded.
    fn wait_parts(&mut self, o: u64, t: u64) -> (Option<u64>, Option<u64>, Option<Waker>) {
        let woken = self.st.woken.take();
        if self.head.meta.as_ref().is_none_or(|m| m.wake.is_none()) {
            return (None, None, None);
        }
        let d = t.saturating_sub(o);
        if self.st.off_preempt {
            return (Some(0), Some(d), None);
        }
        let Some((w, k)) = woken else {
            // No wake-up recorded for a blocked wait. The kernel takes no sample of a wake-up
            // done by an interrupt on an idle CPU (a timer, a device: no task ran there); in a
            // trace that lost no wake-up or switch record, that is what ended it. When it came,
            // and so the blocked/runnable split, is not known.
            if self.head.lost_wakeups == 0 && self.head.lost_switches == 0 {
                let idle = Waker {
                    kind: WakerKind::Idle,
                    pid: 0,
                    tid: 0,
                    comm: None,
                    cpu: UNKNOWN_CPU,
                    function: None,
                    t_ns: t.saturating_sub(self.origin),
                };
                return (None, None, Some(idle));
            }
            return (None, None, None);
        };
        let Some(wk) = self.head.wakeups.get(k) else {
            return (None, None, None);
        };
        let w = w.clamp(o, t);
        use hood_raw::records::trace_flags as f;
        let kind = if wk.flags & f::NMI != 0 {
            WakerKind::Nmi
        } else if wk.tid == 0 {
            WakerKind::Idle
        } else if wk.flags & f::HARDIRQ != 0 {
            WakerKind::Hardirq
        } else if wk.flags & f::SOFTIRQ != 0 {
            WakerKind::Softirq
        } else {
            WakerKind::Thread
        };
        let comm = self
            .head
            .tasks
            .get(&wk.tid)
            .filter(|n| n.pid == wk.pid)
            .map(|n| n.comm.clone())
            .or_else(|| {
                // A traced process's thread the recorder did not name: its program's name.
                let p = self.head.processes.iter().find(|p| p.pid == wk.pid)?;
                let base = p.exe.rsplit('/').next().unwrap_or(&p.exe);
                Some(base.chars().take(15).collect())
            })
            .filter(|_| wk.tid != 0);
        let function = match kind {
            WakerKind::Thread => self
                .wakers
                .and_then(|m| m.get(&(wk.tid, wk.time_ns)))
                .cloned(),
            _ => None,
        };
        let waker = Waker {
            kind,
            pid: wk.pid,
            tid: wk.tid,
            comm,
            cpu: wk.cpu,
            function,
            t_ns: wk.time_ns.saturating_sub(self.origin),
        };
        (Some(w - o), Some(t - w), Some(waker))
    }

    fn step(&mut self, t: u64, ev: Ev) {
        self.window_context(t);
        if matches!(ev, Ev::Raw(..)) && self.off_since.is_some() {
            // The thread ran while its switch-in record says it was still off-CPU: the two
            // clocks disagree by a little (or the record comes late). It was on the CPU by now:
            // the off interval ends here, charged to the call that was on top through it, and
            // the late switch-in is ignored. Otherwise the call on top at the record (another
            // one, after this event) would be charged instead, and net time could exceed run time.
            self.step(
                t,
                Ev::Switch {
                    out: false,
                    preempt: false,
                },
            );
        }
        if matches!(ev, Ev::Raw(..)) {
            // It ran on: a wake-up before this was not the end of a coming wait.
            self.st.early_wake = None;
        }
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
                        before_window: false,
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
                    kids_ns: 0,
                    below_ns: 0,
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
                if self.opts.calls && self.overlaps(t, t) {
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
            Ev::Wake(k) => {
                if self.off_since.is_some() {
                    if self.st.woken.is_none() {
                        self.st.woken = Some((t, k));
                    }
                } else {
                    self.st.early_wake = Some((t, k));
                }
            }
            Ev::Switch { out: true, preempt } => {
                // No task switch happens inside an irq: an irq still open lost its exit.
                self.drop_open_irqs();
                self.off_since = Some(t);
                self.st.off_preempt = preempt;
                // Woken after its last event but before it left the CPU: the wake-up ends
                // this wait (it was runnable all along).
                self.st.woken = if preempt {
                    None
                } else {
                    self.st.early_wake.map(|(_, k)| (t, k))
                };
                self.st.early_wake = None;
                self.th.switches += 1;
                self.line(t, PathItem::SwitchOut { preempt });
            }
            Ev::Switch { out: false, .. } => {
                self.st.early_wake = None;
                if let Some(o) = self.off_since.take() {
                    let d = t.saturating_sub(o);
                    self.th.off_cpu_ns += d;
                    if let Some(top) = self.stack.last_mut() {
                        top.off += d;
                    }
                    let (blocked_ns, runnable_ns, waker) = self.wait_parts(o, t);
                    if let Some(b) = blocked_ns {
                        self.st.th.blocked_ns += b;
                    }
                    if let Some(r) = runnable_ns {
                        self.st.th.runnable_ns += r;
                    }
                    if self.opts.calls && self.overlaps(o, t) {
                        self.out.off_intervals.push(OffInterval {
                            pid: self.p.pid,
                            tid: self.th.tid,
                            start_ns: o,
                            dur_ns: d,
                            blocked_ns,
                            runnable_ns,
                            waker: waker.clone(),
                        });
                    }
                    if self.in_window(t) {
                        self.line(
                            t,
                            PathItem::SwitchIn {
                                off_ns: d,
                                blocked_ns,
                                runnable_ns,
                                waker,
                            },
                        );
                    }
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

/// Code-path lines a thread holds before they are flushed to the output (bounded memory).
pub const LINES_HELD: usize = 1 << 16;
/// Timeline records held before they are handed to the sink.
const RECORDS_HELD: usize = 1 << 14;

/// Where an [`Analyzer`] hands what it cannot keep: code-path lines and timeline records.
pub trait Sink {
    /// A thread's next code-path lines (with `paths`), when [`LINES_HELD`] are waiting. A
    /// call still open shows the result a first pass found for it.
    fn lines(&mut self, _th: &ThreadSummary, _lines: &[PathLine]) -> Result<(), std::io::Error> {
        Ok(())
    }
    /// Timeline records (with `calls`) in `a.calls`, `a.off_intervals`, `a.marks` and
    /// `a.irq_intervals`: take them out.
    fn records(&mut self, _a: &mut Analysis) -> Result<(), std::io::Error> {
        Ok(())
    }
    /// A first pass over a thread's long code-path trace: nothing is printed; the analyzer
    /// learns which open calls' results the second pass needs.
    fn probe(&self) -> bool {
        false
    }
}

/// A thread at its end (see [`Analyzer::end`]).
pub struct Ended {
    /// Its summary, with the code-path lines not yet flushed.
    pub summary: ThreadSummary,
    /// Results of the calls open at a flush, for a second pass.
    pub results: HashMap<u64, PathItem>,
    /// Times its lines were flushed (0: `summary.lines` holds them all).
    pub flushes: u64,
}

/// The processes of a trace by program image: a pid that exec'd has one segment, so one
/// process, per image.
struct Procs {
    /// (pid, segment start) → index into the processes.
    by_image: HashMap<(u32, u64), usize>,
    /// Each pid's images: segment starts, sorted, with the index of each.
    images: HashMap<u32, Vec<(u64, usize)>>,
}

impl Procs {
    fn new(processes: &[ProcessTrace]) -> Procs {
        let mut by_image = HashMap::new();
        let mut images: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        for (i, p) in processes.iter().enumerate() {
            by_image.insert((p.pid, p.start_mono_ns), i);
            images.entry(p.pid).or_default().push((p.start_mono_ns, i));
        }
        for v in images.values_mut() {
            v.sort_unstable();
            v.dedup_by_key(|x| x.0);
        }
        Procs { by_image, images }
    }

    /// The process of a thread's events: its image's, or (files of payload version 1, whose
    /// events name no image) the pid's last.
    fn of(&self, key: ThreadKey) -> Option<usize> {
        self.by_image
            .get(&(key.pid, key.start_mono_ns))
            .copied()
            .or_else(|| {
                let last = self.images.get(&key.pid)?.last()?;
                (key.start_mono_ns == 0).then_some(last.1)
            })
    }

    /// The start of the image that replaced `pid`'s image started at `start`, if one did.
    fn next_image(&self, pid: u32, start: u64) -> Option<u64> {
        let v = self.images.get(&pid)?;
        v.get(v.partition_point(|x| x.0 <= start)).map(|x| x.0)
    }

    /// Whether the image of `pid` started at `start` is its first in the trace.
    fn first_image(&self, pid: u32, start: u64) -> bool {
        self.images
            .get(&pid)
            .and_then(|v| v.first())
            .is_none_or(|x| x.0 >= start)
    }
}

/// A sink that keeps nothing (summaries, tests).
pub struct NoSink;
impl Sink for NoSink {}

/// The first pass of a long code-path trace (see [`Sink::probe`]).
pub struct Probe;
impl Sink for Probe {
    fn probe(&self) -> bool {
        true
    }
}

/// Analysis of a trace fed one chunk of events at a time: per-function and per-thread state
/// only, so memory does not grow with the trace's length. Make one with [`Analyzer::new`],
/// [`feed`](Analyzer::feed) it the events in file order, and [`finish`](Analyzer::finish).
pub struct Analyzer<'h> {
    head: &'h TraceHead,
    opts: AnalysisOptions,
    procs: Procs,
    /// Switches and irqs per thread id (ns since the origin), sorted; each image's part is
    /// handed to the thread when its first event comes.
    side: HashMap<u32, Vec<(u64, Side)>>,
    threads: HashMap<ThreadKey, ThreadState>,
    /// Per (process index, function address).
    acc: FastMap<(u32, u64), Acc>,
    out: Analysis,
    end_max: u64,
    wakers: Option<&'h WakerFunctions>,
}

impl<'h> Analyzer<'h> {
    /// Prepare for the trace whose head is `head` (from [`super::scan`]).
    pub fn new(head: &'h TraceHead, opts: &AnalysisOptions) -> Analyzer<'h> {
        let procs = Procs::new(&head.processes);
        // With --pid, the side events (switches, irqs, wake-ups) name only a thread: those
        // of the process's threads are kept.
        let of_pid: Option<std::collections::HashSet<u32>> = opts.pid.map(|pid| {
            head.threads
                .iter()
                .filter(|t| t.key().pid == pid)
                .map(|t| t.tid)
                .collect()
        });
        let wants = |tid: u32| {
            opts.tid.is_none_or(|x| x == tid) && of_pid.as_ref().is_none_or(|s| s.contains(&tid))
        };
        let entries = |soft: bool| {
            head.irqs
                .iter()
                .filter(|i| i.kind.is_entry() && i.kind.is_soft() == soft)
                .filter(|i| wants(i.tid))
                .count() as u64
        };
        // The trace's start (all threads, also with --tid: times are since the trace began).
        let origin = head
            .threads
            .iter()
            .filter_map(|t| Some(head.processes[procs.of(t.key())?].ns(t.first_ticks?)))
            .min()
            .unwrap_or(0);
        let mut side: HashMap<u32, Vec<(u64, Side)>> = HashMap::new();
        for s in &head.switches {
            if s.time_ns >= origin && wants(s.tid) {
                side.entry(s.tid).or_default().push((
                    s.time_ns - origin,
                    Side::Switch {
                        out: s.out,
                        preempt: s.preempt,
                    },
                ));
            }
        }
        // Irqs after the switches: at equal times a switch is walked first, as before.
        for (k, i) in head.irqs.iter().enumerate() {
            if i.time_ns >= origin && wants(i.tid) {
                side.entry(i.tid)
                    .or_default()
                    .push((i.time_ns - origin, Side::Irq(k)));
            }
        }
        // Wake-ups last: at equal times the switch-out comes first.
        for (k, w) in head.wakeups.iter().enumerate() {
            if w.time_ns >= origin && wants(w.wakee) {
                side.entry(w.wakee)
                    .or_default()
                    .push((w.time_ns - origin, Side::Wake(k)));
            }
        }
        for v in side.values_mut() {
            v.sort_by_key(|s| s.0);
        }
        Analyzer {
            head,
            opts: opts.clone(),
            procs,
            side,
            threads: HashMap::new(),
            acc: FastMap::default(),
            end_max: 0,
            wakers: None,
            out: Analysis {
                origin_mono_ns: origin,
                elapsed_ns: 0,
                events: 0,
                thread_ns: 0,
                run_ns: 0,
                off_cpu_ns: 0,
                sched: head.meta.as_ref().is_some_and(|m| m.sched),
                lost_switches: head.lost_switches,
                wake: head.meta.as_ref().is_some_and(|m| m.wake.is_some()),
                blocked_ns: 0,
                runnable_ns: 0,
                lost_wakeups: head.lost_wakeups,
                irq_ns: 0,
                hard_irqs: 0,
                softirqs: 0,
                // All the file's entries until `finish` takes those walked out.
                hard_irqs_outside: entries(false),
                softirqs_outside: entries(true),
                irq: head.meta.as_ref().is_some_and(|m| m.irq.is_some()),
                lost_irqs: head.lost_irqs,
                functions: Vec::new(),
                threads: Vec::new(),
                calls: Vec::new(),
                off_intervals: Vec::new(),
                marks: Vec::new(),
                irq_intervals: Vec::new(),
                filter: TraceFilter {
                    pid: opts.pid,
                    tid: opts.tid,
                    from_ns: opts.from_ns,
                    to_ns: opts.to_ns,
                    threads_in_file: head.threads.len(),
                },
                probe_cost: head.processes.iter().find_map(|p| p.probe_cost),
                probe_cost_stepped: head
                    .processes
                    .iter()
                    .find(|p| p.probe_cost.is_some())
                    .and_then(|p| p.probe_cost_stepped),
                probe_stepped_functions: head
                    .processes
                    .iter()
                    .find(|p| p.probe_cost.is_some())
                    .map_or(0, |p| p.probe_stepped.len()),
            },
        }
    }

    /// The functions traced wakers were in ([`super::WakerTops`]), for the wakers of the
    /// `context switch in` lines.
    pub fn set_wakers(&mut self, wakers: &'h WakerFunctions) {
        self.wakers = Some(wakers);
    }

    /// The filters asked, as the finished analysis will carry them.
    pub fn filter(&self) -> &TraceFilter {
        &self.out.filter
    }

    /// CLOCK_MONOTONIC ns of the trace's start (its first event).
    pub fn origin_mono_ns(&self) -> u64 {
        self.out.origin_mono_ns
    }

    /// Timeline records (calls, off-CPU intervals, marks, irqs; with `calls`) produced so
    /// far; take them out to keep memory bounded.
    pub fn records(&mut self) -> &mut Analysis {
        &mut self.out
    }

    /// Second pass of a thread's long code-path trace: the results of the calls open at each
    /// flush, from the first pass.
    pub fn paths_pass_two(&mut self, key: ThreadKey, results: HashMap<u64, PathItem>) {
        if let Some(t) = self.thread(key) {
            t.results = results;
        }
    }

    fn thread(&mut self, key: ThreadKey) -> Option<&mut ThreadState> {
        let ThreadKey { pid, tid, .. } = key;
        let proc = self.procs.of(key)?;
        let p = &self.head.processes[proc];
        let origin = self.out.origin_mono_ns;
        let side = &mut self.side;
        let procs = &self.procs;
        Some(self.threads.entry(key).or_insert_with(|| {
            let info = p.threads.iter().find(|t| t.tid == tid);
            // An image replaced by exec ends where the next image of its pid began: its
            // switches and irqs are those before, and its threads end there.
            let next = procs
                .next_image(p.pid, p.start_mono_ns)
                .map(|s| s.saturating_sub(origin));
            let exit = info
                .and_then(|i| i.exit_ticks)
                .map(|e| p.ns(e).saturating_sub(origin))
                .or(next);
            let own = match side.get_mut(&tid) {
                Some(v) => {
                    let lo = v.partition_point(|s| s.0 < p.start_mono_ns.saturating_sub(origin));
                    let lo = if procs.first_image(p.pid, p.start_mono_ns) {
                        0
                    } else {
                        lo
                    };
                    let hi = next.map_or(v.len(), |n| v.partition_point(|s| s.0 < n));
                    v.drain(lo..hi.max(lo)).collect()
                }
                None => Vec::new(),
            };
            ThreadState {
                proc,
                stack: Vec::new(),
                active: FastMap::default(),
                th: ThreadSummary {
                    pid,
                    tid,
                    exe: p.exe.clone(),
                    start_ns: 0,
                    end_ns: 0,
                    events: 0,
                    off_cpu_ns: 0,
                    blocked_ns: 0,
                    runnable_ns: 0,
                    switches: 0,
                    irq_ns: 0,
                    hard_irqs: 0,
                    softirqs: 0,
                    irq_unmatched: 0,
                    dropped: info.map_or(0, |i| i.dropped),
                    streamed: p.full == "stream",
                    overwritten: info.map_or(0, |i| i.overwritten),
                    unmatched_exits: 0,
                    mismatched: 0,
                    unfinished: 0,
                    lines: Vec::new(),
                },
                off_since: None,
                off_preempt: false,
                woken: None,
                early_wake: None,
                show_returns: false,
                hard: None,
                soft: None,
                irq_since: 0,
                irq_mark: 0,
                side: own,
                side_pos: 0,
                exit,
                last: 0,
                started: false,
                window_context: false,
                line_base: 0,
                flushes: 0,
                needed: Default::default(),
                results: HashMap::new(),
            }
        }))
    }

    /// Walk one chunk of a thread's events (chunks of a thread in file order). `flush` gets
    /// the thread's code-path lines whenever [`LINES_HELD`] of them are waiting (with
    /// `paths`), `None` in a first pass that only learns which results the second needs.
    pub fn feed(&mut self, te: &ThreadEvents, sink: &mut dyn Sink) -> Result<(), std::io::Error> {
        if self.opts.tid.is_some_and(|t| t != te.tid)
            || self.opts.pid.is_some_and(|p| p != te.key().pid)
        {
            return Ok(());
        }
        let origin = self.out.origin_mono_ns;
        let key = te.key();
        if self.thread(key).is_none() {
            return Ok(());
        }
        let Some(st) = self.threads.get_mut(&key) else {
            return Ok(());
        };
        let p = &self.head.processes[st.proc];
        let irqs = &self.head.irqs;
        let mut w = Walk {
            p,
            head: self.head,
            wakers: self.wakers,
            origin: self.out.origin_mono_ns,
            opts: &self.opts,
            acc: &mut self.acc,
            out: &mut self.out,
            st,
        };
        for e in &te.events {
            let t = p.ns(e.ticks()).saturating_sub(origin);
            if !w.started {
                w.started = true;
                w.st.th.start_ns = t;
                // Switches and irqs before the thread's first event are not its.
                let skip = w.side.iter().take_while(|s| s.0 < t).count();
                w.st.side_pos = skip;
            }
            w.side_until(t, false, irqs);
            w.st.last = t;
            w.st.th.events += 1;
            w.step(t, Ev::Raw(e.kind(), e.addr));
            if w.th.lines.len() >= LINES_HELD {
                w.flush_lines(sink)?;
            }
            if w.out.calls.len() + w.out.off_intervals.len() >= RECORDS_HELD {
                sink.records(w.out)?;
            }
        }
        Ok(())
    }

    /// End one thread: its walk reaches its exit (or last event) and its totals are added.
    /// Returns its summary with the code-path lines not yet flushed, and the results of the
    /// calls that were open at a flush (for a second pass; see [`Sink::probe`]).
    pub fn end(&mut self, key: ThreadKey) -> Option<Ended> {
        let mut st = self.threads.remove(&key)?;
        let th = self.end_thread(&mut st);
        self.out.events += th.events;
        self.out.thread_ns += th.end_ns - th.start_ns;
        self.out.off_cpu_ns += th.off_cpu_ns;
        self.out.blocked_ns += th.blocked_ns;
        self.out.runnable_ns += th.runnable_ns;
        self.out.irq_ns += th.irq_ns;
        self.out.hard_irqs += th.hard_irqs;
        self.out.softirqs += th.softirqs;
        self.end_max = self.end_max.max(th.end_ns);
        let mut kept = th.clone();
        kept.lines = Vec::new();
        self.out.threads.push(kept);
        Some(Ended {
            summary: th,
            results: std::mem::take(&mut st.results),
            flushes: st.flushes,
        })
    }

    /// End every thread and return the analysis (timeline records not yet taken included).
    pub fn finish(mut self) -> Analysis {
        let mut keys: Vec<ThreadKey> = self.threads.keys().copied().collect();
        keys.sort_by_key(|k| (self.threads[k].th.start_ns, *k));
        for k in keys {
            if let Some(Ended { summary: th, .. }) = self.end(k) {
                // Lines still held (a caller that wants them uses `end` itself); `end` has
                // just pushed the thread's row.
                if let Some(t) = self.out.threads.last_mut() {
                    t.lines = th.lines;
                }
            }
        }
        let end_max = self.end_max;
        let mut out = self.out;
        out.elapsed_ns = end_max;
        out.off_cpu_ns = out.off_cpu_ns.min(out.thread_ns);
        out.irq_ns = out.irq_ns.min(out.thread_ns - out.off_cpu_ns);
        out.run_ns = out.thread_ns - out.off_cpu_ns - out.irq_ns;
        out.hard_irqs_outside = out.hard_irqs_outside.saturating_sub(out.hard_irqs);
        out.softirqs_outside = out.softirqs_outside.saturating_sub(out.softirqs);
        let pct = |n: u64, d: u64| {
            if d == 0 {
                0.0
            } else {
                n as f64 * 100.0 / d as f64
            }
        };
        // Per function name: the same name in several processes is one row.
        let mut by_name: HashMap<String, Acc> = HashMap::new();
        for ((proc, func), a) in self.acc {
            let name = self
                .head
                .processes
                .get(proc as usize)
                .map(|p| p.name(func))
                .unwrap_or_else(|| format!("{func:#x}"));
            let e = by_name.entry(name).or_default();
            e.merge(&a);
        }
        let mut rows: Vec<FunctionRow> = by_name
            .into_iter()
            .map(|(name, a)| FunctionRow {
                pct_real: pct(a.net, out.thread_ns),
                pct_net: pct(a.net, out.run_ns),
                name,
                elapsed_ns: a.elapsed,
                net_ns: a.net,
                running_net_ns: a.running,
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

    /// End one thread (its walk reaches its exit or last event) and return its summary.
    fn end_thread(&mut self, st: &mut ThreadState) -> ThreadSummary {
        let p = &self.head.processes[st.proc];
        let irqs = &self.head.irqs;
        let last = st.last;
        let end = st.exit.filter(|&e| e >= last).unwrap_or(last);
        let mut w = Walk {
            p,
            head: self.head,
            wakers: self.wakers,
            origin: self.out.origin_mono_ns,
            opts: &self.opts,
            acc: &mut self.acc,
            out: &mut self.out,
            st,
        };
        w.side_until(end, true, irqs);
        if let Some(o) = w.st.off_since.take() {
            w.st.th.off_cpu_ns += end.saturating_sub(o);
        }
        w.drop_open_irqs();
        w.window_context(end);
        while !w.stack.is_empty() {
            w.st.th.unfinished += 1;
            w.pop(end, End::Running);
        }
        w.st.th.end_ns = end;
        std::mem::take(&mut w.st.th)
    }
}

impl Walk<'_> {
    /// Walk the thread's switches and irqs up to `t` (before a raw event at `t`: only those
    /// strictly before it; at the end: those at `t` too).
    fn side_until(&mut self, t: u64, inclusive: bool, irqs: &[super::Irq]) {
        while let Some(&(at, s)) = self.st.side.get(self.st.side_pos) {
            if at > t || (at == t && !inclusive) {
                break;
            }
            self.st.side_pos += 1;
            match s {
                Side::Switch { out, preempt } => self.step(at, Ev::Switch { out, preempt }),
                Side::Wake(k) => self.step(at, Ev::Wake(k)),
                Side::Irq(k) => {
                    let i = &irqs[k];
                    if i.pid == self.p.pid {
                        self.step(
                            at,
                            Ev::Irq {
                                kind: i.kind,
                                num: i.num,
                                name: &i.name,
                            },
                        );
                    }
                }
            }
        }
    }

    /// Hand the waiting code-path lines to `flush` (pass 2) or note which open calls' results
    /// a second pass needs (pass 1).
    fn flush_lines(&mut self, sink: &mut dyn Sink) -> Result<(), std::io::Error> {
        let base = self.line_base;
        let open: Vec<u64> = self
            .stack
            .iter()
            .filter_map(|o| o.line)
            .filter(|&i| i >= base)
            .collect();
        if sink.probe() {
            self.st.needed.extend(open);
        } else {
            for i in open {
                if let Some(item) = self.st.results.remove(&i) {
                    self.st.th.lines[(i - base) as usize].item = item;
                }
            }
            sink.lines(&self.st.th, &self.st.th.lines)?;
        }
        self.st.flushes += 1;
        self.st.line_base += self.th.lines.len() as u64;
        self.st.th.lines.clear();
        Ok(())
    }
}

impl Acc {
    fn merge(&mut self, a: &Acc) {
        self.min = match (self.calls, a.calls) {
            (0, _) => a.min,
            (_, 0) => self.min,
            _ => self.min.min(a.min),
        };
        self.elapsed += a.elapsed;
        self.net += a.net;
        self.running += a.running;
        self.calls += a.calls;
        self.repaired += a.repaired;
        self.max = self.max.max(a.max);
        self.off += a.off;
        self.irq += a.irq;
        self.irqs += a.irqs;
    }
}

/// Analyse a trace held in memory (tests, small traces): the same walk as [`Analyzer`].
pub fn analyze(trace: &Trace, opts: &AnalysisOptions) -> Analysis {
    let head = TraceHead {
        meta: trace.meta.clone(),
        processes: trace.processes.clone(),
        threads: trace
            .events
            .iter()
            .map(|te| super::ThreadIndex {
                pid: te.pid,
                tid: te.tid,
                first_ticks: te.events.first().map(|e| e.ticks()),
                start_mono_ns: te.start_mono_ns,
            })
            .collect(),
        switches: trace.switches.clone(),
        lost_switches: trace.lost_switches,
        irqs: trace.irqs.clone(),
        lost_irqs: trace.lost_irqs,
        ..Default::default()
    };
    let mut a = Analyzer::new(&head, opts);
    for te in &trace.events {
        let _ = a.feed(te, &mut NoSink);
    }
    a.finish()
}

/// Name/tag listing (McRae's names file): function names get even tags in address order
/// per process (exit = tag + 1); inline marks are listed with '='.
pub fn tag_listing(processes: &[ProcessTrace]) -> Vec<(String, u64, char)> {
    let mut names: BTreeMap<String, ()> = BTreeMap::new();
    let mut marks: BTreeMap<String, ()> = BTreeMap::new();
    for p in processes {
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
