//! Aggregations over a symbolized profile: totals, flat profiles by function / source line /
//! dso / process / thread, call trees, folded stacks and sampling intervals. Counts are samples,
//! or nanoseconds when the filter's [`Measure`] takes off-CPU time in (a CPU sample then
//! weighs its period: the nanoseconds of cpu-clock it stands for).

use crate::profile::RecordMode;
use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use super::model::{FrameLine, FuncId, Mode, Profile, Sample};

/// What a report adds up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Measure {
    /// CPU samples, counted (the classic profile).
    #[default]
    CpuSamples,
    /// Wall-clock time: CPU samples weighted by their period, and off-CPU time (`--wall`).
    Wall,
    /// Off-CPU time only, blocked and runnable (`--off-cpu`).
    OffCpu,
}

impl Measure {
    /// Whether weights are nanoseconds (else sample counts).
    pub fn is_time(self) -> bool {
        self != Measure::CpuSamples
    }
}

/// Which samples a report looks at.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this process.
    pub pid: Option<u32>,
    /// Only this thread.
    pub tid: Option<u32>,
    /// Only processes with this name.
    pub comm: Option<String>,
    /// Only kernel (`Some(Mode::Kernel)`) or user (`Some(Mode::User)`) samples, or only
    /// blocked / runnable off-CPU time.
    pub mode: Option<Mode>,
    /// What is added up.
    pub measure: Measure,
    /// Blocked time is shown with the stack of whoever woke the thread (`--by waker`);
    /// runnable time is left out.
    pub by_waker: bool,
}

impl Filter {
    /// Whether `s` passes.
    pub fn keep(&self, prof: &Profile, s: &Sample) -> bool {
        self.keep_mode_pid(s) && self.comm.as_ref().is_none_or(|c| prof.comm(s.pid) == *c)
    }

    fn keep_mode_pid(&self, s: &Sample) -> bool {
        !(self.pid.is_some_and(|p| p != s.pid)
            || self.tid.is_some_and(|t| t != s.tid)
            || self.mode.is_some_and(|m| m != s.mode))
    }

    /// What one sample weighs: 1, or its nanoseconds when the measure is time.
    pub fn weight(&self, s: &Sample) -> u64 {
        match self.measure {
            Measure::CpuSamples => 1,
            _ => s.period,
        }
    }

    /// The unit of [`weight`](Self::weight) in words (`samples`, `ns`).
    pub fn unit(&self) -> &'static str {
        match self.measure.is_time() {
            true => "ns",
            false => "samples",
        }
    }

    /// The samples that pass, by value: CPU samples, off-CPU stretches or both as the
    /// measure says (with `by_waker`, blocked stretches carry their waker's stack). A
    /// `comm` filter is resolved to pids once, not per sample.
    pub fn samples<'a>(&'a self, prof: &'a Profile) -> impl Iterator<Item = Sample> + 'a {
        let pids: Option<rustc_hash::FxHashSet<u32>> = self.comm.as_ref().map(|c| {
            let mut set: rustc_hash::FxHashSet<u32> = prof
                .processes
                .iter()
                .filter(|p| prof.comm(p.pid) == *c)
                .map(|p| p.pid)
                .collect();
            if c == "[idle]" {
                set.insert(0);
            }
            set
        });
        let cpu: &[Sample] = match self.measure {
            Measure::OffCpu => &[],
            _ => &prof.samples,
        };
        let off: &[Sample] = match self.measure {
            Measure::CpuSamples => &[],
            _ => &prof.off_cpu,
        };
        let by_waker = self.by_waker;
        let off = off.iter().enumerate().filter_map(move |(i, s)| {
            if !by_waker {
                return Some(*s);
            }
            if s.mode != Mode::Blocked {
                return None;
            }
            let (stack, locs) = match prof.off_cpu_waker.get(i).copied().flatten() {
                Some(w) => prof
                    .wakers
                    .get(w as usize)
                    .map_or(prof.unknown_waker, |w| (w.stack, w.locs)),
                None => prof.unknown_waker,
            };
            Some(Sample { stack, locs, ..*s })
        });
        cpu.iter().copied().chain(off).filter(move |s| {
            self.keep_mode_pid(s) && pids.as_ref().is_none_or(|set| set.contains(&s.pid))
        })
    }
}

/// Sample counts (or nanoseconds, by the filter's measure) by mode.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Totals {
    /// All samples.
    pub samples: u64,
    /// User-mode samples.
    pub user: u64,
    /// Kernel-mode samples of tasks.
    pub kernel: u64,
    /// Samples of the idle task.
    pub idle: u64,
    /// Blocked off-CPU time.
    #[serde(skip_serializing_if = "is_zero")]
    pub blocked: u64,
    /// Runnable off-CPU time.
    #[serde(skip_serializing_if = "is_zero")]
    pub runnable: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Add up the samples `f` keeps, by mode.
pub fn totals(prof: &Profile, f: &Filter) -> Totals {
    let mut t = Totals::default();
    for s in f.samples(prof) {
        let w = f.weight(&s);
        t.samples += w;
        match s.mode {
            Mode::User => t.user += w,
            Mode::Kernel => t.kernel += w,
            Mode::Idle => t.idle += w,
            Mode::Blocked => t.blocked += w,
            Mode::Runnable => t.runnable += w,
        }
    }
    t
}

/// The leaf function of a sample (`None`: no frame at all).
pub fn leaf(prof: &Profile, s: &Sample) -> Option<FuncId> {
    prof.stacks
        .get(s.stack as usize)
        .and_then(|st| st.first().copied())
}

/// One row of a flat profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row<K> {
    /// What was counted.
    pub key: K,
    /// Samples.
    pub count: u64,
}

fn sorted<K: Ord + Clone>(map: HashMap<K, u64>) -> Vec<Row<K>> {
    let mut v: Vec<Row<K>> = map
        .into_iter()
        .map(|(key, count)| Row { key, count })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
    v
}

/// Self samples per (pid, leaf function); `None` function means no frame.
pub fn by_process_function(prof: &Profile, f: &Filter) -> Vec<Row<(u32, Option<FuncId>)>> {
    let mut m = HashMap::default();
    for s in f.samples(prof) {
        *m.entry((s.pid, leaf(prof, &s))).or_insert(0) += f.weight(&s);
    }
    sorted(m)
}

/// Self samples per leaf function over all processes.
pub fn by_function(prof: &Profile, f: &Filter) -> Vec<Row<Option<FuncId>>> {
    let mut m = HashMap::default();
    for s in f.samples(prof) {
        *m.entry(leaf(prof, &s)).or_insert(0) += f.weight(&s);
    }
    sorted(m)
}

/// The source line a sample was taken at: the innermost function at its address, with that
/// function's file:line (no file without debug info). `None` when the sample has no frame.
pub fn sampled_line(prof: &Profile, s: &Sample) -> Option<FrameLine> {
    let loc = prof
        .loc_stacks
        .get(s.locs as usize)
        .and_then(|l| l.first())
        .and_then(|&l| prof.locations.get(l as usize));
    match loc.and_then(|l| prof.lines_of(l).first()) {
        Some(line) => Some(*line),
        // Hand-built profiles keep no locations: the leaf function, without a line.
        None => leaf(prof, s).map(|func| FrameLine {
            func,
            file: None,
            line: 0,
        }),
    }
}

/// Self samples per source line (`hood report --by line`, perf's `--sort srcline`): the
/// sampled line of the innermost (possibly inlined) function.
pub fn by_line(prof: &Profile, f: &Filter) -> Vec<Row<Option<FrameLine>>> {
    let mut m = HashMap::default();
    for s in f.samples(prof) {
        *m.entry(sampled_line(prof, &s)).or_insert(0) += f.weight(&s);
    }
    sorted(m)
}

/// Samples per process.
pub fn by_process(prof: &Profile, f: &Filter) -> Vec<Row<u32>> {
    let mut m = HashMap::default();
    for s in f.samples(prof) {
        *m.entry(s.pid).or_insert(0) += f.weight(&s);
    }
    sorted(m)
}

/// Samples per (pid, tid).
pub fn by_thread(prof: &Profile, f: &Filter) -> Vec<Row<(u32, u32)>> {
    let mut m = HashMap::default();
    for s in f.samples(prof) {
        *m.entry((s.pid, s.tid)).or_insert(0) += f.weight(&s);
    }
    sorted(m)
}

/// Samples per file of the leaf frame (counted per function first, then grouped).
pub fn by_dso(prof: &Profile, f: &Filter) -> Vec<Row<String>> {
    let mut m: HashMap<String, u64> = HashMap::default();
    for row in by_function(prof, f) {
        let dso = match row.key {
            Some(id) => prof.funcs[id as usize].dso.clone(),
            None => "[unknown]".to_string(),
        };
        *m.entry(dso).or_insert(0) += row.count;
    }
    sorted(m)
}

/// A node of a call tree.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct TreeNode {
    /// The function (`None` at the root).
    pub func: Option<FuncId>,
    /// Samples at or below this node.
    pub total: u64,
    /// Samples whose path ends here.
    pub self_count: u64,
    /// Children, heaviest first.
    pub children: Vec<TreeNode>,
}

impl TreeNode {
    fn sort(&mut self) {
        self.children
            .sort_by(|a, b| b.total.cmp(&a.total).then(a.func.cmp(&b.func)));
        for c in &mut self.children {
            c.sort();
        }
    }
}

/// A tree under construction: nodes in an arena, children found through a hash map, so wide
/// levels (a bottom-up tree has one root child per sampled function) cost O(1) per step.
struct Arena {
    func: Vec<Option<FuncId>>,
    total: Vec<u64>,
    self_count: Vec<u64>,
    kids: Vec<Vec<u32>>,
    index: HashMap<(u32, FuncId), u32>,
}

impl Arena {
    fn new() -> Arena {
        Arena {
            func: vec![None],
            total: vec![0],
            self_count: vec![0],
            kids: vec![Vec::new()],
            index: HashMap::default(),
        }
    }

    fn child(&mut self, parent: u32, func: FuncId) -> u32 {
        if let Some(&id) = self.index.get(&(parent, func)) {
            return id;
        }
        let id = self.func.len() as u32;
        self.func.push(Some(func));
        self.total.push(0);
        self.self_count.push(0);
        self.kids.push(Vec::new());
        self.kids[parent as usize].push(id);
        self.index.insert((parent, func), id);
        id
    }

    fn into_tree(self) -> TreeNode {
        fn build(a: &Arena, id: u32) -> TreeNode {
            let i = id as usize;
            TreeNode {
                func: a.func[i],
                total: a.total[i],
                self_count: a.self_count[i],
                children: a.kids[i].iter().map(|&k| build(a, k)).collect(),
            }
        }
        build(&self, 0)
    }
}

/// Call tree: `caller` (top-down, roots are outermost frames) or callee (bottom-up, roots
/// are leaf functions). The root node stands for all samples.
pub fn call_tree(prof: &Profile, f: &Filter, top_down: bool) -> TreeNode {
    let mut counts: HashMap<u32, u64> = HashMap::default();
    for s in f.samples(prof) {
        *counts.entry(s.stack).or_insert(0) += f.weight(&s);
    }
    let mut arena = Arena::new();
    for (stack, n) in counts {
        let frames = prof
            .stacks
            .get(stack as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        arena.total[0] += n;
        let mut node = 0u32;
        let order: Box<dyn Iterator<Item = &FuncId>> = if top_down {
            Box::new(frames.iter().rev())
        } else {
            Box::new(frames.iter())
        };
        for &func in order {
            node = arena.child(node, func);
            arena.total[node as usize] += n;
        }
        arena.self_count[node as usize] += n;
    }
    let mut root = arena.into_tree();
    root.sort();
    root
}

/// Folded stacks: `COMM;root;...;leaf` → count. Kernel frames carry `_[k]`, inlined frames
/// ` (inlined)`.
///
/// With [`Filter::by_waker`], each blocked stretch is one line of the thread's stack, then
/// `--`, then its waker's stack from the wake-up outwards (bcc's `offwaketime` layout, which
/// flame graph tools draw as the waker stacked on the wait).
pub fn folded(prof: &Profile, f: &Filter) -> Vec<(String, u64)> {
    // (pid, stack, waker stack or u32::MAX) -> weight.
    let mut by_stack: HashMap<(u32, u32, u32), u64> = HashMap::default();
    if f.by_waker {
        let own = Filter {
            by_waker: false,
            mode: Some(Mode::Blocked),
            ..f.clone()
        };
        let mut waker_of = prof.off_cpu_waker.iter();
        for s in &prof.off_cpu {
            let w = waker_of.next().copied().flatten();
            if !own.keep(prof, s) {
                continue;
            }
            let ws = w
                .and_then(|w| prof.wakers.get(w as usize))
                .map_or(prof.unknown_waker.0, |w| w.stack);
            *by_stack.entry((s.pid, s.stack, ws)).or_insert(0) += own.weight(s);
        }
    } else {
        for s in f.samples(prof) {
            *by_stack.entry((s.pid, s.stack, u32::MAX)).or_insert(0) += f.weight(&s);
        }
    }
    // Frame names are sanitized once per function, not once per occurrence.
    let names: Vec<String> = prof
        .funcs
        .iter()
        .map(|f| {
            let mut n = sanitize(&f.label());
            if f.kernel {
                n.push_str("_[k]");
            }
            n
        })
        .collect();
    let mut comms: HashMap<u32, String> = HashMap::default();
    let mut lines: HashMap<String, u64> = HashMap::default();
    for ((pid, stack, waker), n) in by_stack {
        let mut line = comms
            .entry(pid)
            .or_insert_with(|| sanitize(&prof.comm(pid)))
            .clone();
        let frames = prof
            .stacks
            .get(stack as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if frames.is_empty() {
            line.push_str(";[unknown]");
        }
        for &fid in frames.iter().rev() {
            line.push(';');
            line.push_str(&names[fid as usize]);
        }
        if waker != u32::MAX {
            line.push_str(";--");
            for &fid in prof
                .stacks
                .get(waker as usize)
                .map_or(&[][..], Vec::as_slice)
            {
                line.push(';');
                line.push_str(&names[fid as usize]);
            }
        }
        *lines.entry(line).or_insert(0) += n;
    }
    let mut v: Vec<(String, u64)> = lines.into_iter().collect();
    v.sort();
    v
}

/// Folded-stack frames may not contain `;` or newlines, and the count is the last
/// space-separated field.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// Distribution of the time between consecutive samples on one CPU.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CpuIntervals {
    /// CPU number.
    pub cpu: u32,
    /// Intervals measured.
    pub count: u64,
    /// Shortest, ns.
    pub min_ns: u64,
    /// Median, ns.
    pub median_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Share of intervals longer than 1.5 nominal periods (the sample was delayed by more
    /// than half a period).
    pub delayed_share: f64,
    /// Histogram: (upper bound in periods, count); the last bound is infinity.
    pub histogram: Vec<(f64, u64)>,
    /// The gaps between two samples of one thread across which the thread was off this CPU
    /// (a command's or attached processes' recording, whose timers run only while their
    /// thread runs): not intervals, so not late samples. Counted on the CPU of the later
    /// sample.
    pub off_cpu: OffCpuGaps,
}

/// Why a thread's gap between two of its samples was not an interval of its timer
/// ([`CpuIntervals::off_cpu`]), each gap counted once, in this order.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct OffCpuGaps {
    /// The recording's context switches show the thread blocked in the gap (sleeping, waiting
    /// for I/O or a lock).
    pub blocked: u64,
    /// The recording's context switches show the thread runnable but not running in the gap:
    /// preempted, or woken and waiting for a CPU.
    pub preempted: u64,
    /// Its two samples are on different CPUs: it left the first (a migration).
    pub migrated: u64,
    /// Another thread was sampled on the CPU between them: the thread had left the CPU.
    pub shared: u64,
}

impl OffCpuGaps {
    /// All the gaps left out.
    pub fn total(&self) -> u64 {
        self.blocked + self.preempted + self.migrated + self.shared
    }
}

/// Histogram bucket upper bounds, in nominal periods.
pub const INTERVAL_BUCKETS: [f64; 8] = [0.5, 0.9, 1.1, 1.5, 2.0, 4.0, 16.0, f64::INFINITY];

/// Whether [`intervals`] measures each thread's timer (a command's or attached processes'
/// recording) rather than each CPU's (a whole-system recording).
pub fn intervals_per_thread(prof: &Profile) -> bool {
    matches!(prof.meta.mode, RecordMode::Command | RecordMode::Pids)
}

/// Per-CPU sampling intervals relative to the nominal period `period_ns`.
///
/// A whole-system recording samples each CPU on its own timer: every gap between two samples
/// of a CPU is an interval.
///
/// A command's or attached processes' recording samples each thread on its own timer, which
/// runs only while the thread runs (the kernel stops it when the thread leaves a CPU and
/// starts it with what was left of the period when it comes back, on whichever CPU). An
/// interval is then the time between two consecutive samples of one thread on one CPU; a
/// gap across which the thread was off the CPU is counted in [`CpuIntervals::off_cpu`]
/// instead, by the first of these facts that holds:
/// - the recording's context switches (`hood record --off-cpu`) show the thread blocked, or
///   runnable but not running (preempted), at some time in the gap;
/// - its two samples are on different CPUs;
/// - another thread was sampled on that CPU between them.
///
/// Without context switches, a thread that lost its CPU to a task that was not recorded, or
/// that blocked, between two of its samples leaves no sign in the samples: that gap counts as
/// a long interval.
pub fn intervals(prof: &Profile, period_ns: u64) -> Vec<CpuIntervals> {
    let per_thread = intervals_per_thread(prof);
    let mut on_cpu: Vec<&Sample> = prof.samples.iter().filter(|s| !s.mode.off_cpu()).collect();
    on_cpu.sort_by_key(|s| s.time);
    // Each thread's off-CPU stretches (start, end, blocked), in time order.
    let mut away: HashMap<u32, Vec<(u64, u64, bool)>> = HashMap::default();
    if per_thread {
        for o in prof.off_cpu.iter().filter(|o| o.period > 0) {
            away.entry(o.tid).or_default().push((
                o.time,
                o.time.saturating_add(o.period),
                o.mode == Mode::Blocked,
            ));
        }
        for v in away.values_mut() {
            v.sort_unstable();
        }
    }
    let mut per_cpu: HashMap<u32, Vec<u64>> = HashMap::default();
    let mut gaps: HashMap<u32, OffCpuGaps> = HashMap::default();
    let mut last_of_cpu: HashMap<u32, usize> = HashMap::default();
    let mut last_of_thread: HashMap<u32, usize> = HashMap::default();
    for (b, s) in on_cpu.iter().enumerate() {
        let before_on_cpu = last_of_cpu.insert(s.cpu, b);
        let a = if per_thread {
            match last_of_thread.insert(s.tid, b) {
                Some(a) => a,
                None => continue,
            }
        } else {
            match before_on_cpu {
                Some(a) => a,
                None => continue,
            }
        };
        let pa = on_cpu[a];
        if per_thread {
            let g = gaps.entry(s.cpu).or_default();
            match off_cpu_between(away.get(&s.tid), pa.time, s.time) {
                Some(true) => {
                    g.blocked += 1;
                    continue;
                }
                Some(false) => {
                    g.preempted += 1;
                    continue;
                }
                None => {}
            }
            if pa.cpu != s.cpu {
                g.migrated += 1;
                continue;
            }
            if before_on_cpu != Some(a) {
                g.shared += 1;
                continue;
            }
        }
        per_cpu.entry(s.cpu).or_default().push(s.time - pa.time);
    }
    let mut out = Vec::new();
    let mut cpus: Vec<u32> = per_cpu.keys().chain(gaps.keys()).copied().collect();
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in cpus {
        let mut d = per_cpu.remove(&cpu).unwrap_or_default();
        let off_cpu = gaps.get(&cpu).copied().unwrap_or_default();
        if d.is_empty() && off_cpu.total() == 0 {
            continue;
        }
        d.sort_unstable();
        let pct = |p: f64| {
            d.get((((d.len().max(1) - 1) as f64) * p).round() as usize)
                .copied()
                .unwrap_or(0)
        };
        let period = period_ns.max(1) as f64;
        let mut histogram: Vec<(f64, u64)> = INTERVAL_BUCKETS.iter().map(|&b| (b, 0)).collect();
        let mut delayed = 0u64;
        for &x in &d {
            let r = x as f64 / period;
            if r > 1.5 {
                delayed += 1;
            }
            if let Some(slot) = histogram.iter_mut().find(|(b, _)| r < *b) {
                slot.1 += 1;
            }
        }
        out.push(CpuIntervals {
            cpu,
            count: d.len() as u64,
            min_ns: d.first().copied().unwrap_or(0),
            median_ns: pct(0.5),
            p99_ns: pct(0.99),
            max_ns: d.last().copied().unwrap_or(0),
            delayed_share: if d.is_empty() {
                0.0
            } else {
                delayed as f64 / d.len() as f64
            },
            histogram,
            off_cpu,
        });
    }
    out
}

/// Whether a thread with off-CPU stretches `away` (start, end, blocked; in time order, not
/// overlapping) was off CPU at some time strictly between `from` and `to`: `Some(true)` if
/// blocked in any of them, `Some(false)` if only runnable, `None` if it was not.
fn off_cpu_between(away: Option<&Vec<(u64, u64, bool)>>, from: u64, to: u64) -> Option<bool> {
    let away = away?;
    let before_to = away.partition_point(|&(start, _, _)| start < to);
    let mut found = None;
    for &(_, end, blocked) in away[..before_to].iter().rev() {
        if end <= from {
            break;
        }
        found = Some(found.unwrap_or(false) || blocked);
    }
    found
}

/// How complete the user stacks of the kept samples are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackCompleteness {
    /// Samples whose stack has a user part.
    pub with_user_stack: u64,
    /// Of those, stacks that end in a truncation frame.
    pub truncated: u64,
    /// Truncated samples per truncation frame name, most first.
    pub reasons: Vec<(String, u64)>,
}

/// Count the kept samples whose user stack could not be completed (their outermost frame is
/// a `[truncated: …]` frame).
pub fn stack_completeness(prof: &Profile, f: &Filter) -> StackCompleteness {
    let mut out = StackCompleteness::default();
    let mut by_reason: HashMap<FuncId, u64> = HashMap::default();
    for s in f.samples(prof) {
        let Some(stack) = prof.stacks.get(s.stack as usize) else {
            continue;
        };
        let Some(&root) = stack.last() else {
            continue;
        };
        let Some(func) = prof.funcs.get(root as usize) else {
            continue;
        };
        if func.dso == super::TRUNCATED_DSO {
            out.with_user_stack += 1;
            out.truncated += 1;
            *by_reason.entry(root).or_default() += 1;
        } else if s.pid != 0
            && stack
                .iter()
                .any(|&f| prof.funcs.get(f as usize).is_some_and(|f| !f.kernel))
        {
            out.with_user_stack += 1;
        }
    }
    out.reasons = by_reason
        .into_iter()
        .map(|(f, n)| (prof.funcs[f as usize].name.clone(), n))
        .collect();
    out.reasons
        .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}
