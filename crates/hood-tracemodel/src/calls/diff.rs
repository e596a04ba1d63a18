//! Two call-path recordings compared (`hood diff BASE NEW` of two `hood calls` or two
//! `hood trace` files): per function or per call path, the calls and own time in each, the
//! change, and the shares of own time.
//!
//! **Calls** are counted exactly, at entry: a change of calls is a change of what the
//! program did, never noise.
//!
//! **Own time** is a call's elapsed time minus that of the calls it made, as `hood calls`
//! counts it (blocked time included). From a trace that recorded its threads' context
//! switches, the time a thread was off the CPU while a call was on top of its stack is
//! taken out as well (as `hood trace report`'s net time takes it out), so a trace's times
//! are CPU time and a busy machine's preemption does not land in them. A call-path table (`hood calls`) holds only sums per
//! path, so nothing in it tells how much a total varies run to run: no noise rule applies
//! to its times ([`CallsDiff::per_call`] is false, rows have no `z`). A trace (`hood trace`)
//! holds every call, so each row's own time per call has a sample variance `s²`; taking the
//! calls as independent draws, a total over `n` calls varies by `n s²`, and the change is
//! compared with `√(n_b s_b² + n_n s_n²)` as the profile diff compares sample counts
//! (`|z| <` [`NOISE_Z`] is noise). A row with fewer than two completed calls on a side that
//! has calls has no variance, so no `z`.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{function_rows, path_rows, ProcessCalls};
use crate::trace::{Kind, ProbeCosts, ThreadEvents, ThreadKey, TraceHead};

/// Below this `|z|` a change is noise: the two-sided 99 % point of the standard normal
/// distribution. The profile diff uses the same threshold (`hood_model::profile::diff::NOISE_Z`;
/// a test in hood-reconcile, which sees both, holds them equal), so both diffs call the same
/// changes noise.
pub const NOISE_Z: f64 = 2.576;

/// What the rows of a call-path diff are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallsBy {
    /// Functions by name (all paths ending in the function).
    #[default]
    Function,
    /// Call paths, by the names of their functions from the outermost call.
    Path,
}

/// One row's sums on one side.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Calls (counted at entry, calls still running included).
    pub calls: u64,
    /// Own ns (calls still running: so far).
    pub own_ns: f64,
    /// Completed calls whose own time is known one by one (traces).
    pub done: u64,
    /// Their own ns.
    pub done_ns: f64,
    /// Their squared own ns.
    pub done_sq: f64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.calls = self.calls.saturating_add(o.calls);
        self.own_ns += o.own_ns;
        self.done = self.done.saturating_add(o.done);
        self.done_ns += o.done_ns;
        self.done_sq += o.done_sq;
    }

    /// The estimated variance of the total own time, `n s²` (`None`: not known).
    fn variance(&self, per_call: bool) -> Option<f64> {
        if self.calls == 0 {
            return Some(0.0);
        }
        if !per_call || self.done < 2 {
            return None;
        }
        let n = self.done as f64;
        let s2 = ((self.done_sq - self.done_ns * self.done_ns / n) / (n - 1.0)).max(0.0);
        // Calls still running count as draws of the same variance.
        Some(self.calls as f64 * s2)
    }
}

/// One side of a call-path diff: rows keyed by function name or by path (names joined with
/// `;`).
#[derive(Debug, Clone, Default)]
pub struct CallsSide {
    /// Rows.
    pub rows: HashMap<String, Tally>,
    /// Each call's own time is known (a trace), so rows have a variance.
    pub per_call: bool,
    /// Processes read.
    pub processes: usize,
    /// Threads read.
    pub threads: usize,
    /// What the side's reading found doubtful.
    pub notes: Vec<String>,
}

impl CallsSide {
    /// Total own ns.
    pub fn own_ns(&self) -> f64 {
        self.rows.values().map(|t| t.own_ns).sum()
    }
    /// Total calls.
    pub fn calls(&self) -> u64 {
        self.rows
            .values()
            .fold(0u64, |a, t| a.saturating_add(t.calls))
    }
}

/// The rows of call-path tables (`hood calls`), merged over processes and threads by name.
pub fn calls_side(procs: &[ProcessCalls], by: CallsBy) -> CallsSide {
    let mut side = CallsSide {
        processes: procs.len(),
        ..CallsSide::default()
    };
    for p in procs {
        side.threads += p.threads.len();
        let rows = match by {
            CallsBy::Function => function_rows(p, false),
            CallsBy::Path => path_rows(p, false),
        };
        for r in rows {
            let t = Tally {
                calls: r.calls,
                own_ns: r.msecs * 1e6,
                ..Tally::default()
            };
            side.rows.entry(r.path.join(";")).or_default().add(&t);
        }
    }
    side
}

/// Deepest stack a trace walk keeps per thread; entries deeper are counted and skipped.
const MAX_DEPTH: usize = 1 << 16;

struct Open {
    path: u32,
    func: u64,
    entry_ns: u64,
    /// Elapsed ns of the calls it made that have ended.
    child_ns: u64,
    /// ns the thread was off the CPU while this call was on top.
    off_ns: u64,
    /// The probes' cost outside their spans of the calls it made that have ended (ns).
    kids_ns: u64,
}

#[derive(Default)]
struct Walk {
    /// (parent path or u32::MAX, function address) → path index.
    index: HashMap<(u32, u64), u32>,
    /// Per path: parent, function, sums.
    paths: Vec<(u32, u64, Tally)>,
    stack: Vec<Open>,
    /// Open calls per function address: an exit of a function not open is found at once.
    open: HashMap<u64, u32>,
    last_ns: u64,
    proc: usize,
    /// The thread's off-CPU intervals `[out, in)`, by time.
    off: Vec<(u64, u64)>,
    /// The first interval not yet wholly before the last event.
    cursor: usize,
    /// What a probed call costs (probe traces, `--probe`): taken out of own times as the
    /// trace analysis takes it out, so `hood diff` of two traces shows `hood trace report`'s
    /// times.
    cost: ProbeCosts,
    /// The last event's time.
    prev_ns: Option<u64>,
}

impl Walk {
    fn entry(&mut self, func: u64, t: u64) -> bool {
        if self.stack.len() >= MAX_DEPTH {
            return false;
        }
        let parent = self.stack.last().map_or(u32::MAX, |o| o.path);
        let next = self.paths.len() as u32;
        let path = *self.index.entry((parent, func)).or_insert(next);
        if path == next {
            self.paths.push((parent, func, Tally::default()));
        }
        self.paths[path as usize].2.calls += 1;
        self.stack.push(Open {
            path,
            func,
            entry_ns: t,
            child_ns: 0,
            off_ns: 0,
            kids_ns: 0,
        });
        *self.open.entry(func).or_insert(0) += 1;
        true
    }

    fn exit(&mut self, func: u64, t: u64) -> bool {
        if self.open.get(&func).copied().unwrap_or(0) == 0 {
            return false;
        }
        while let Some(o) = self.stack.pop() {
            if let Some(n) = self.open.get_mut(&o.func) {
                *n = n.saturating_sub(1);
            }
            let elapsed = t.saturating_sub(o.entry_ns);
            let own = elapsed
                .saturating_sub(o.child_ns)
                .saturating_sub(o.off_ns)
                .saturating_sub(self.cost.of(o.func).self_ns)
                .saturating_sub(o.kids_ns) as f64;
            let tally = &mut self.paths[o.path as usize].2;
            tally.own_ns += own;
            tally.done += 1;
            tally.done_ns += own;
            tally.done_sq += own * own;
            if let Some(up) = self.stack.last_mut() {
                up.child_ns = up.child_ns.saturating_add(elapsed);
                up.kids_ns = up.kids_ns.saturating_add(self.cost.of(o.func).child_ns);
            }
            if o.func == func {
                break;
            }
        }
        true
    }

    /// The thread reached `t`: the time it was off the CPU since its last event goes to the
    /// call on top of its stack.
    fn advance(&mut self, t: u64) {
        let Some(a) = self.prev_ns.replace(t) else {
            return;
        };
        if t <= a {
            return;
        }
        let mut off = 0u64;
        while let Some(&(s, e)) = self.off.get(self.cursor) {
            if s >= t {
                break;
            }
            off += e.min(t).saturating_sub(s.max(a));
            if e <= t {
                self.cursor += 1;
            } else {
                break;
            }
        }
        if let Some(top) = self.stack.last_mut() {
            top.off_ns = top.off_ns.saturating_add(off);
        }
    }

    /// Calls still open at the thread's last event: their own time so far.
    fn finish(&mut self) {
        let end = self.last_ns;
        // (elapsed, cost outside its span) of the call still open inside the next one.
        let mut child_running: Option<(u64, u64)> = None;
        while let Some(o) = self.stack.pop() {
            let elapsed = end.saturating_sub(o.entry_ns);
            let cost = self.cost.of(o.func);
            // The call still open inside it is one more call it made.
            let (running, running_cost) = child_running.unwrap_or((0, 0));
            let own = elapsed
                .saturating_sub(o.child_ns)
                .saturating_sub(o.off_ns)
                .saturating_sub(running)
                .saturating_sub(cost.self_ns)
                .saturating_sub(o.kids_ns)
                .saturating_sub(running_cost);
            self.paths[o.path as usize].2.own_ns += own as f64;
            child_running = Some((elapsed, cost.child_ns));
        }
    }
}

/// Call paths walked from a trace's events (`hood trace`), thread by thread, a chunk of
/// events at a time.
pub struct TraceCalls<'h> {
    head: &'h TraceHead,
    by: CallsBy,
    /// Off-CPU intervals per thread id, from the trace's context switches.
    off: HashMap<u32, Vec<(u64, u64)>>,
    threads: BTreeMap<ThreadKey, Walk>,
    unmatched: u64,
    deep: u64,
}

impl<'h> TraceCalls<'h> {
    /// An empty walk over the processes of `head`.
    pub fn new(head: &'h TraceHead, by: CallsBy) -> TraceCalls<'h> {
        let mut switches: HashMap<u32, Vec<(u64, bool)>> = HashMap::new();
        for s in &head.switches {
            switches.entry(s.tid).or_default().push((s.time_ns, s.out));
        }
        let off = switches
            .into_iter()
            .map(|(tid, mut v)| {
                v.sort_unstable();
                let mut iv = Vec::new();
                let mut out_at = None;
                for (t, out) in v {
                    match (out, out_at) {
                        (true, None) => out_at = Some(t),
                        (false, Some(o)) => {
                            iv.push((o, t));
                            out_at = None;
                        }
                        _ => {}
                    }
                }
                if let Some(o) = out_at {
                    iv.push((o, u64::MAX));
                }
                (tid, iv)
            })
            .collect();
        TraceCalls {
            head,
            by,
            off,
            threads: BTreeMap::new(),
            unmatched: 0,
            deep: 0,
        }
    }

    /// The next events of a thread (in file order).
    pub fn feed(&mut self, te: &ThreadEvents) {
        let key = te.key();
        let Some(proc) = self
            .head
            .processes
            .iter()
            .position(|p| p.pid == te.pid && p.start_mono_ns == te.start_mono_ns)
            .or_else(|| self.head.processes.iter().position(|p| p.pid == te.pid))
        else {
            return;
        };
        let p = &self.head.processes[proc];
        let off = &mut self.off;
        let w = self.threads.entry(key).or_insert_with(|| Walk {
            proc,
            off: off.remove(&te.tid).unwrap_or_default(),
            cost: ProbeCosts::of_process(p),
            ..Walk::default()
        });
        for e in &te.events {
            let t = p.ns(e.ticks());
            w.last_ns = w.last_ns.max(t);
            w.advance(t);
            match e.kind() {
                Kind::Entry => {
                    if !w.entry(e.addr, t) {
                        self.deep += 1;
                    }
                }
                Kind::Exit => {
                    if !w.exit(e.addr, t) {
                        self.unmatched += 1;
                    }
                }
                Kind::Mark | Kind::Control => {}
            }
        }
    }

    /// The rows, by name.
    pub fn finish(mut self) -> CallsSide {
        let mut side = CallsSide {
            per_call: true,
            processes: self.head.processes.len(),
            threads: self.threads.len(),
            ..CallsSide::default()
        };
        for w in self.threads.values_mut() {
            w.finish();
            let p = &self.head.processes[w.proc];
            let mut names: Vec<String> = Vec::with_capacity(w.paths.len());
            for (parent, func, tally) in &w.paths {
                let name = p.name(*func);
                let key = match self.by {
                    CallsBy::Function => name.clone(),
                    CallsBy::Path => match names.get(*parent as usize) {
                        Some(up) => format!("{up};{name}"),
                        None => name.clone(),
                    },
                };
                names.push(key.clone());
                side.rows.entry(key).or_default().add(tally);
            }
        }
        if self.head.switches.is_empty() {
            side.notes.push(
                "the trace holds no context switches (`hood trace record` as root records them): its own times include the time threads were off the CPU"
                    .into(),
            );
        }
        if self.unmatched > 0 {
            side.notes.push(format!(
                "{} exits of calls that began before the trace were ignored",
                self.unmatched
            ));
        }
        if self.deep > 0 {
            side.notes.push(format!(
                "{} calls deeper than {MAX_DEPTH} frames were not counted",
                self.deep
            ));
        }
        side
    }
}

/// One row of a call-path diff.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallsDiffRow {
    /// The function's name, or the path's names from the outermost call joined by `;`.
    pub name: String,
    /// Calls in BASE.
    pub base_calls: u64,
    /// Calls in NEW.
    pub new_calls: u64,
    /// Own ns in BASE.
    pub base_ns: f64,
    /// Own ns in NEW.
    pub new_ns: f64,
    /// `new_ns − base_ns`.
    pub delta_ns: f64,
    /// The change of own time relative to BASE's, percent (`None`: none in BASE).
    pub change_percent: Option<f64>,
    /// The change of calls relative to BASE's, percent (`None`: none in BASE).
    pub calls_change_percent: Option<f64>,
    /// Share of BASE's own time, percent.
    pub base_percent: f64,
    /// Share of NEW's own time, percent.
    pub new_percent: f64,
    /// `new_percent − base_percent`.
    pub delta_points: f64,
    /// The change of time in standard errors of the per-call variation (`None`: no rule
    /// applies, see the module's documentation).
    pub z: Option<f64>,
    /// `|z| <` [`NOISE_Z`]; `None` when no rule applies.
    pub noise: Option<bool>,
}

/// One side of a call-path diff, in sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CallsDiffSide {
    /// Calls.
    pub calls: u64,
    /// Own ns.
    pub own_ns: f64,
    /// Processes.
    pub processes: usize,
    /// Threads.
    pub threads: usize,
}

/// Two call-path recordings compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallsDiff {
    /// What the rows are.
    pub by: CallsBy,
    /// BASE in sum.
    pub base: CallsDiffSide,
    /// NEW in sum.
    pub new: CallsDiffSide,
    /// Both sides know each call's time (traces), so times have a noise rule.
    pub per_call: bool,
    /// Rows, the largest change of own time (either sign) first, ties by name.
    pub rows: Vec<CallsDiffRow>,
    /// The noise threshold applied (where a rule applies).
    pub noise_z: f64,
}

fn pct(n: f64, total: f64) -> f64 {
    if total > 0.0 {
        n * 100.0 / total
    } else {
        0.0
    }
}

/// Compare two sides row by row.
pub fn calls_diff(base: &CallsSide, new: &CallsSide, by: CallsBy) -> CallsDiff {
    let per_call = base.per_call && new.per_call;
    let (tb, tn) = (base.own_ns(), new.own_ns());
    let mut keys: BTreeMap<&str, (Tally, Tally)> = BTreeMap::new();
    for (k, t) in &base.rows {
        keys.entry(k).or_default().0 = *t;
    }
    for (k, t) in &new.rows {
        keys.entry(k).or_default().1 = *t;
    }
    let mut rows: Vec<CallsDiffRow> = keys
        .into_iter()
        .map(|(k, (b, n))| {
            let delta_ns = n.own_ns - b.own_ns;
            let z = match (b.variance(per_call), n.variance(per_call)) {
                (Some(vb), Some(vn)) => {
                    let err = (vb + vn).sqrt();
                    Some(if err > 0.0 {
                        delta_ns / err
                    } else if delta_ns == 0.0 {
                        0.0
                    } else {
                        f64::INFINITY.copysign(delta_ns)
                    })
                }
                _ => None,
            };
            let (base_percent, new_percent) = (pct(b.own_ns, tb), pct(n.own_ns, tn));
            CallsDiffRow {
                name: k.to_string(),
                base_calls: b.calls,
                new_calls: n.calls,
                base_ns: b.own_ns,
                new_ns: n.own_ns,
                delta_ns,
                change_percent: (b.own_ns > 0.0).then(|| delta_ns * 100.0 / b.own_ns),
                calls_change_percent: (b.calls > 0)
                    .then(|| (n.calls as f64 - b.calls as f64) * 100.0 / b.calls as f64),
                base_percent,
                new_percent,
                delta_points: new_percent - base_percent,
                z,
                noise: z.map(|z| z.abs() < NOISE_Z),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.delta_ns
            .abs()
            .total_cmp(&a.delta_ns.abs())
            .then_with(|| a.name.cmp(&b.name))
    });
    let sum = |s: &CallsSide, own_ns: f64| CallsDiffSide {
        calls: s.calls(),
        own_ns,
        processes: s.processes,
        threads: s.threads,
    };
    CallsDiff {
        by,
        base: sum(base, tb),
        new: sum(new, tn),
        per_call,
        rows,
        noise_z: NOISE_Z,
    }
}

impl CallsDiff {
    /// Order the rows by the size of their change of share, either way.
    pub fn sort_by_points(&mut self) {
        self.rows.sort_by(|a, b| {
            b.delta_points
                .abs()
                .total_cmp(&a.delta_points.abs())
                .then_with(|| a.name.cmp(&b.name))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ProcessTrace, RawEvent};

    fn head() -> TraceHead {
        TraceHead {
            meta: None,
            processes: vec![ProcessTrace {
                pid: 5,
                ppid: 1,
                exe: "/bin/w".into(),
                clock: crate::Clock::Monotonic,
                ticks_per_sec: 1_000_000_000,
                start_ticks: 0,
                start_mono_ns: 0,
                state: crate::ProcessState::Exited,
                flags: 0,
                capacity: 0,
                full: "stop".into(),
                threads: Vec::new(),
                symbols: [(1, "main".to_string()), (2, "f".into()), (3, "g".into())]
                    .into_iter()
                    .collect(),
                tags: BTreeMap::new(),
                funcs: Vec::new(),
                notes: Vec::new(),
                probe_cost: None,
                probe_cost_stepped: None,
                probe_stepped: Vec::new(),
            }],
            threads: Vec::new(),
            switches: Vec::new(),
            lost_switches: 0,
            irqs: Vec::new(),
            lost_irqs: 0,
            wakeups: Vec::new(),
            lost_wakeups: 0,
            tasks: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }

    fn ev(addr: u64, t: u64, exit: bool) -> RawEvent {
        RawEvent {
            addr,
            ticks_kind: t << 2 | u64::from(exit),
        }
    }

    /// main { f(g) × calls, each f `own` ns and g 10 ns }, `jitter` added to every other f.
    fn trace_side(calls: u64, own: u64, jitter: u64, by: CallsBy) -> CallsSide {
        let h = head();
        let mut events = vec![ev(1, 0, false)];
        let mut t = 0;
        for i in 0..calls {
            let own = own + if i % 2 == 1 { jitter } else { 0 };
            events.push(ev(2, t, false));
            events.push(ev(3, t + 1, false));
            events.push(ev(3, t + 11, true));
            events.push(ev(2, t + own + 10, true));
            t += own + 10;
        }
        events.push(ev(1, t + 5, true));
        let mut w = TraceCalls::new(&h, by);
        // Fed in two parts, as chunks come.
        let (a, b) = events.split_at(events.len() / 2);
        for part in [a, b] {
            w.feed(&ThreadEvents {
                pid: 5,
                tid: 5,
                start_mono_ns: 0,
                events: part.to_vec(),
            });
        }
        w.finish()
    }

    #[test]
    fn trace_walk_counts_calls_and_own_time_per_path_and_function() {
        let s = trace_side(4, 100, 0, CallsBy::Path);
        let f = s.rows["main;f"];
        assert_eq!((f.calls, f.own_ns, f.done), (4, 400.0, 4));
        assert_eq!(s.rows["main;f;g"].own_ns, 40.0);
        assert_eq!(s.rows["main"].own_ns, 5.0);
        let s = trace_side(4, 100, 0, CallsBy::Function);
        assert_eq!(s.rows["g"].calls, 4);
        assert!(s.per_call);
    }

    #[test]
    fn a_function_twice_as_slow_or_called_twice_as_often_is_no_noise() {
        let base = trace_side(100, 1000, 50, CallsBy::Function);
        let slow = trace_side(100, 2000, 50, CallsBy::Function);
        let d = calls_diff(&base, &slow, CallsBy::Function);
        assert_eq!(d.rows[0].name, "f");
        let r = &d.rows[0];
        assert_eq!((r.base_calls, r.new_calls), (100, 100));
        // f's own time per call: 1000 and 1050 ns alternately, then 2000 and 2050.
        assert_eq!(r.delta_ns, 100_000.0);
        assert!((r.change_percent.unwrap() - 100_000.0 * 100.0 / 102_500.0).abs() < 1e-9);
        assert_eq!(r.noise, Some(false));
        // g did not change: z 0, noise.
        let g = d.rows.iter().find(|r| r.name == "g").unwrap();
        assert_eq!(g.noise, Some(true));
        // main has one call a side: no variance, no rule.
        let m = d.rows.iter().find(|r| r.name == "main").unwrap();
        assert_eq!(m.noise, None);

        let more = trace_side(200, 1000, 50, CallsBy::Function);
        let d = calls_diff(&base, &more, CallsBy::Function);
        let f = d.rows.iter().find(|r| r.name == "f").unwrap();
        assert_eq!(f.calls_change_percent, Some(100.0));
        assert_eq!(f.noise, Some(false));
        // The same calls with the jitter drawn again: a change inside n·s² is noise.
        let again = trace_side(100, 1000 + 1, 50, CallsBy::Function);
        let d = calls_diff(&base, &again, CallsBy::Function);
        let f = d.rows.iter().find(|r| r.name == "f").unwrap();
        assert_eq!(f.noise, Some(true), "{f:?}");
    }

    #[test]
    fn time_off_the_cpu_is_taken_out_of_the_call_on_top() {
        use crate::trace::Switch;
        let mut h = head();
        // Off 25..35 (inside f, on top) and 70..80 (in main after f returned).
        for (t, out) in [(25, true), (35, false), (70, true), (80, false)] {
            h.switches.push(Switch {
                pid: 5,
                tid: 5,
                time_ns: t,
                out,
                preempt: true,
                cpu: 0,
            });
        }
        let mut w = TraceCalls::new(&h, CallsBy::Function);
        w.feed(&ThreadEvents {
            pid: 5,
            tid: 5,
            start_mono_ns: 0,
            events: vec![
                ev(1, 10, false),
                ev(2, 20, false),
                ev(2, 50, true),
                ev(1, 100, true),
            ],
        });
        let s = w.finish();
        assert_eq!(s.rows["f"].own_ns, 20.0);
        assert_eq!(s.rows["main"].own_ns, 90.0 - 30.0 - 10.0);
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }

    #[test]
    fn exits_of_calls_never_entered_and_open_calls() {
        let h = head();
        let mut w = TraceCalls::new(&h, CallsBy::Function);
        w.feed(&ThreadEvents {
            pid: 5,
            tid: 6,
            start_mono_ns: 0,
            events: vec![
                ev(3, 0, true),
                ev(1, 10, false),
                ev(2, 20, false),
                ev(2, 50, true),
                ev(2, 60, false),
            ],
        });
        let s = w.finish();
        // main: 10..60 less f's 30 ns; the open f has run 0 ns.
        assert_eq!(s.rows["main"].own_ns, 20.0);
        assert_eq!(s.rows["f"].calls, 2);
        assert_eq!(s.rows["f"].own_ns, 30.0);
        assert_eq!(s.rows["f"].done, 1);
        assert!(
            s.notes.iter().any(|n| n.contains("1 exits")),
            "{:?}",
            s.notes
        );
    }
}
