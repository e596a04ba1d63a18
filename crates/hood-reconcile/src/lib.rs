//! The call profile held against the statistical profile of the same program
//! (`hood diff --reconcile CALLS PROFILE`), after Meurs's reconciliation of MINIX 3's two
//! profilers: per function, the share of own time the call profiler measured and the share
//! of time the sampler saw, with the difference broken down into what each profiler counts
//! that the other does not.
//!
//! The call profiler (hooks at every entry and exit of an instrumented function) charges a
//! call's whole elapsed time, less its instrumented callees', to the function: also the time
//! the thread was blocked or waiting for a CPU, the library, assembly and kernel code it ran
//! (no hooks there), and, less the calibrated compensation, the hooks' own cost. The sampler
//! charges each sample to the function that was running. So each sample and off-CPU stretch
//! of the profiled program is charged here as the call profiler would charge it: to the
//! innermost instrumented function of its stack (matched by name, inlined copies by the name
//! of the function inlined), and the charge is split by what the stack shows below it:
//!
//! - **sampled**: the function's own code was running (the sampler's own share);
//! - **entry** and **exit**: the entry code of its instrumented callees ran, or their exit code
//!   (below);
//! - **library**: code without hooks ran below it (libraries, assembly, the kernel);
//! - **irq**: the kernel was handling an interrupt or a softirq on the thread's CPU (kernel
//!   frames under an interrupt entry): Meurs's interrupt-delay pollution. The call profile
//!   counts it in the interrupted function's elapsed time too, so it is part of the explained
//!   share, in its own column because no code of the program ran;
//! - **hooks**: the call profiler's runtime ran below it, or the thread was preempted in it
//!   (its own cost; taken out of both sides when the call profile compensated for it, and a
//!   preemption inside a hook is charged by the call profile to a callee the stack does not
//!   show);
//! - **blocked** and **runnable**: the thread was off the CPU, waiting for something or
//!   for a CPU (from `hood record --off-cpu` data; without it, these parts are unknown, and
//!   the shares of a program that waits, or that a busy machine keeps waiting for a CPU,
//!   cannot agree).
//!
//! Samples with no instrumented function in their stack (start-up, the dynamic loader, the
//! runtime's threads) are outside what the call profile measures and are left out of the
//! statistical total. The sampler's own cost (its interrupt) is charged by the kernel to
//! whatever ran and is not in the file.
//!
//! **The profilers' own cost, per call, on both sides** (Meurs): the statistical side leaves
//! the hooks' samples out. The call profile took a calibrated cost per call out of its times,
//! measured at start-up in a tight loop: `comp_self`, the part of a call's two hooks between
//! the entry hook's timestamp and the exit hook's, from the called function, and `comp_child`,
//! the rest, from its caller. In a real program the same hook code costs more (cold caches,
//! slow clock reads, preemptions), and the excess stays in the own times, mostly the caller's:
//! a tiny function called millions of times makes its caller look expensive. The sampler
//! measures what the hooks really cost in this run (the hooks' samples below each function,
//! on and off the CPU), and their stacks show on which side of the call's timestamps each
//! fell: the runtime reads every entry timestamp in `hood_rt::hook::entry_stamped` and every
//! exit timestamp in `hood_rt::hook::exit_stamped` (or `exit_stamped_slow`), inlined, and
//! does the rest of that hook there, so an entry hook's sample with that frame, and an exit
//! hook's without it, ran inside the call (the function's own time), and the others ran in
//! the caller's (the next instrumented function up the sample's stack). That split is exact
//! for the hooks' **waits** (a preempted hook either had read its clock or not), which are
//! all beyond the calibration and go where their stacks put them. Their **time on the CPU**
//! beyond the compensation is spread as the compensation was (the same code, a few percent
//! slower in every call), not by the samples' addresses: the clock read is half of a hook's
//! samples, and where inside it the counter is latched no address shows (on bzip2 on a quiet
//! machine the addresses left 6–8 points between the tiny `mainGtU` and its caller, about
//! 10 ns a call; spread as compensated, at most 1.5). What the hooks
//! cost beyond the compensation, so split, is the call side's **profiler** cost, and a
//! function's **net** share is its own time less its cost. A runtime whose stacks show neither frame (from before this split) gets the rule it
//! had: the function keeps its calibrated part (`comp_self`, at most what the sampler saw)
//! and its callers take the rest (by calls per call path);
//! [`Reconcile::hooks_split_at_stamps`] says which applied. This needs hook samples in the
//! profile; without any, the compensation stands as it is.
//!
//! A function's **entry** code, from its first instruction to its entry
//! hook's call (saving the registers the call clobbers, the hook's arguments), runs before
//! the call's first timestamp: the call profile charges it, and any wait that falls in it, to
//! the caller. The profile's code addresses show it: a sample (or wait) whose first user frame
//! is an instrumented function at or before the address where that function calls its entry
//! hook (learnt from the hook's own samples) is charged to the next instrumented function up
//! the stack, in its **entry** column. A function's **exit** code, after its exit hook's call
//! returned (restoring the registers, returning) up to the function's end, runs after the
//! call's last timestamp and is charged to the caller the same way: a sample (or wait) whose
//! first user frame is an instrumented function within an epilogue's length
//! (24 bytes) after an address where that function calls its exit hook (the hook's
//! return address) goes to the next instrumented function up the stack, in its **exit**
//! column. Only that far: gcc places the way out anywhere in the function (bzip2's `mainGtU`
//! calls its exit hook at byte 0x64 of 0x33d), and also calls the exit hook, in the body, for
//! callees inlined into the function, where the body goes on after the call. For a function of a few instructions called very often, such as
//! bzip2's `mainGtU`, that code is points of the profile.
//!
//! A function *agrees* when its net call share and the explained statistical share (sampled +
//! entry + exit + library + irq + blocked + runnable, + hooks when not compensated) are within
//! [`TOLERANCE_POINTS`]; the closing count covers the functions over [`OVER_PERCENT`] in
//! either.
//!
//! **Where the boundary of a call is not where either profiler can see it.** The hooks read
//! the clock without waiting for the instructions before the read to finish (ordering it
//! would cost about 20 ns a call). So a call's entry timestamp can be taken while the caller's
//! last instructions are still executing, and their remaining latency is inside the call,
//! while the sampler, whose interrupt is taken where instructions retire, charges it to the
//! caller's code (and the function's last work before its exit timestamp the other way).
//! For a function of a few instructions called millions of times that is points: on
//! `tests/c/reconcile_tiny.c` about 5 ns a call between a call after a chain of multiplies and
//! one after no work (`bench/diff/tiny.sh`). Neither the calibration nor the samples show it,
//! so it stays in the difference; a warning names each function over 5 % that disagrees at
//! calls made so often that 1 ns a call is at least a tenth of the tolerance (its own calls,
//! or its calls of such a function).
//!
//! Depends on hood-model (the profile) and hood-tracemodel (the call profile): the one place
//! the two meet, so neither compiles the other.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::{Mode, Profile, Sample};
use hood_tracemodel::calls::{function_rows, node_name, ProcessCalls};

/// The longest way out after a call of the exit hook (restoring registers, returning): six
/// pops, a stack adjustment, the return value and `ret` take 17 bytes on x86-64.
const EPILOGUE_BYTES: u64 = 24;
/// Calls of the exit hook kept per function.
const MAX_EXIT_SITES: usize = 64;
/// The runtime's code of an entry hook from its timestamp on (`hood_rt::hook::entry_stamped`,
/// inlined): it runs inside the call the hook opens. A name, because the stacks show it.
const ENTRY_STAMPED: &str = "hood_rt::hook::entry_stamped";
/// The runtime's code of an exit hook from its timestamp on (`hood_rt::hook::exit_stamped`
/// and `exit_stamped_slow`, inlined): it runs in the caller, after the call it closes.
const EXIT_STAMPED: &str = "hood_rt::hook::exit_stamped";

/// Two shares agree within this many percentage points.
pub const TOLERANCE_POINTS: f64 = 2.0;
/// Functions over this share (percent, either profile) are counted in the closing line.
pub const OVER_PERCENT: f64 = 5.0;

/// How the profile's processes were matched with the call profile's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchedBy {
    /// The same process ids (both taken in one run).
    Pid,
    /// The same process name (two runs).
    Comm,
}

/// One function's reconciliation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReconcileRow {
    /// The function's name.
    pub name: String,
    /// Calls (call profile).
    pub calls: u64,
    /// Own ns the call profile measured.
    pub calls_ns: f64,
    /// Its share of the call profile's own time, percent.
    pub calls_percent: f64,
    /// ns of the hooks' cost beyond the compensation left in `calls_ns` (measured by the
    /// sampler; may be negative where the compensation took out more than the hooks cost).
    pub profiler_ns: f64,
    /// `profiler_ns` in points of the call profile's own time.
    pub profiler_points: f64,
    /// `calls_ns − profiler_ns` as a share of the call profile's own time less all
    /// functions' profiler cost, percent: the call profiler's share without its own cost.
    pub net_percent: f64,
    /// ns of samples in the function's own code.
    pub sampled_ns: f64,
    /// ns of samples and waits in the entry code of its instrumented callees, before their
    /// entry hook: the call profiler charges that code to the caller.
    pub entry_ns: f64,
    /// ns of samples and waits in the exit code of its instrumented callees, after their exit
    /// hook returned: the call profiler charges that code to the caller too.
    pub exit_ns: f64,
    /// ns of samples in code without hooks below it.
    pub library_ns: f64,
    /// ns of samples in interrupt or softirq context on top of it.
    pub irq_ns: f64,
    /// ns of samples in the call profiler's runtime below it.
    pub hooks_ns: f64,
    /// ns blocked below it (`None`: the profile has no off-CPU data).
    pub blocked_ns: Option<f64>,
    /// ns runnable, waiting for a CPU, below it (`None`: no off-CPU data).
    pub runnable_ns: Option<f64>,
    /// `sampled_ns` as a share of the statistical total, percent.
    pub sampled_percent: f64,
    /// `entry_ns` in points of the statistical total.
    pub entry_points: f64,
    /// `exit_ns` in points of the statistical total.
    pub exit_points: f64,
    /// `library_ns` in points of the statistical total.
    pub library_points: f64,
    /// `irq_ns` in points of the statistical total.
    pub irq_points: f64,
    /// `hooks_ns` in points of the statistical total.
    pub hooks_points: f64,
    /// `blocked_ns` in points of the statistical total.
    pub blocked_points: Option<f64>,
    /// `runnable_ns` in points of the statistical total.
    pub runnable_points: Option<f64>,
    /// The statistical share charged as the call profiler charges: sampled + entry + exit + library + irq +
    /// blocked + runnable (+ hooks when the call profile was not compensated), percent.
    pub explained_percent: f64,
    /// `net_percent − explained_percent`: what the breakdown leaves unexplained.
    pub delta_points: f64,
    /// The sampling error of `explained_percent` (one standard deviation, points), from the
    /// weights of the samples and waits it is made of: a wait for a CPU is one stack standing
    /// for its whole length, so on a busy machine a few hundred waits of milliseconds each
    /// make most of the statistical side and this error.
    pub explained_error_points: f64,
    /// Over [`OVER_PERCENT`] in either profile.
    pub over: bool,
    /// `|delta_points| <=` [`TOLERANCE_POINTS`].
    pub agree: bool,
}

/// The two profiles reconciled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reconcile {
    /// How processes were matched.
    pub matched_by: MatchedBy,
    /// The process names compared.
    pub comms: Vec<String>,
    /// Own ns of the call profile (all its functions).
    pub calls_total_ns: f64,
    /// ns of the statistical total the shares are of (charged to an instrumented function;
    /// hooks left out when compensated).
    pub stat_total_ns: f64,
    /// ns of samples of the program with no instrumented function in their stack.
    pub outside_ns: f64,
    /// ns of hook samples in all.
    pub hooks_ns: f64,
    /// ns of the hooks' cost beyond the compensation in the call profile's own times, all
    /// functions (taken out of the net shares).
    pub profiler_ns: f64,
    /// ns of samples in interrupt or softirq context, all functions.
    pub irq_ns: f64,
    /// The call profile took its hooks' cost out of its times.
    pub compensated: bool,
    /// The hooks' stacks show their timestamps (the runtime's code from a timestamp on is a
    /// frame of its own): the hooks' waits were split at the timestamps, and their time on
    /// the CPU beyond the compensation spread as the compensation was; false: by rule (a
    /// function keeps its calibrated part of its hooks, its callers take the rest), for a
    /// runtime whose stacks do not show it, or when there was nothing to split.
    pub hooks_split_at_stamps: bool,
    /// The profile holds off-CPU data.
    pub off_cpu: bool,
    /// Samples and off-CPU stretches of the program read.
    pub samples: u64,
    /// Rows, largest call share first.
    pub rows: Vec<ReconcileRow>,
    /// Functions over [`OVER_PERCENT`].
    pub considered: usize,
    /// Of them, those that agree.
    pub agreeing: usize,
    /// Tolerance applied.
    pub tolerance_points: f64,
    /// Threshold applied.
    pub over_percent: f64,
    /// What makes the comparison doubtful.
    pub warnings: Vec<String>,
}

/// Linux keeps 15 bytes of a process name.
fn comm_of(exe_name: &str) -> String {
    let mut end = exe_name.len().min(15);
    while !exe_name.is_char_boundary(end) {
        end -= 1;
    }
    exe_name[..end].to_string()
}

/// A frame of the call profiler's runtime (its library, or the hooks' entry points).
fn is_hook(name: &str, dso: &str) -> bool {
    dso.contains("libhood_rt") || name.starts_with("__cyg_profile_func_")
}

/// Which hook a frame of the runtime's, called by an instrumented function, is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HookKind {
    Entry,
    Exit,
}

/// The hook the instrumented function's frame calls, by its name: the exported hooks (and
/// their PLT stubs) and the entry hook's body, `hood_rt::entry`, which the exported entry
/// hook jumps to.
fn hook_kind(name: &str) -> Option<HookKind> {
    // The exported hooks (and their PLT stubs), the runtime's dispatch (`entry`), the common
    // paths each mode's hooks jump to (`calls_enter`, `trace_exit`, ...), and the calls
    // mode's inlined parts; `hook_other`, which serves both, is told by what is below it.
    const ENTRY: [&str; 6] = [
        "__cyg_profile_func_enter",
        "hood_rt::entry",
        "hood_rt::enter_hook",
        "hood_rt::calls_enter",
        "hood_rt::trace_enter",
        "hood_rt::hook::ent",
    ];
    const EXIT: [&str; 6] = [
        "__cyg_profile_func_exit",
        "hood_rt::exit_hook",
        "hood_rt::calls_exit",
        "hood_rt::trace_exit",
        "hood_rt::hook::exit",
        "hood_rt::hook::close",
    ];
    if ENTRY.iter().any(|p| name.starts_with(p)) {
        Some(HookKind::Entry)
    } else if EXIT.iter().any(|p| name.starts_with(p)) {
        Some(HookKind::Exit)
    } else {
        None
    }
}

/// A kernel frame that enters interrupt or softirq handling: whatever the kernel ran above
/// it, it ran for an interrupt, not for the interrupted thread (x86-64 and arm64 entry
/// points).
fn is_irq_entry(name: &str) -> bool {
    name.starts_with("asm_sysvec_")
        || name.starts_with("sysvec_")
        || name.starts_with("__sysvec_")
        || matches!(
            name,
            "asm_common_interrupt"
                | "common_interrupt"
                | "do_IRQ"
                | "irq_exit"
                | "irq_exit_rcu"
                | "__irq_exit_rcu"
                | "__do_softirq"
                | "handle_softirqs"
                | "do_softirq"
                | "do_softirq_own_stack"
                | "el1_interrupt"
                | "el0_interrupt"
                | "gic_handle_irq"
        )
}

/// One function of the call profile over its processes and threads.
#[derive(Default)]
struct CallFn {
    name: String,
    calls: u64,
    ns: f64,
    /// ns the runtime's compensation took out of the function's own time (`comp_self` per
    /// call) and out of its callers' (`comp_child` per call).
    comp_self_ns: f64,
    comp_child_ns: f64,
    /// Calls per calling function.
    callers: BTreeMap<String, u64>,
}

impl CallFn {
    /// What the sampler saw this function's hooks cost.
    fn measured_hooks(&self, hooks: &HashMap<&str, Charge>) -> f64 {
        hooks.get(self.name.as_str()).map_or(0.0, |c| c.hooks)
    }
}

/// The call profile per function: calls, own ns, compensation and callers.
fn call_side(calls: &[ProcessCalls]) -> BTreeMap<String, CallFn> {
    let mut out: BTreeMap<String, CallFn> = BTreeMap::new();
    for p in calls {
        for r in function_rows(p, false) {
            let name = r.path.concat();
            let e = out.entry(name.clone()).or_default();
            e.name = name;
            e.calls = e.calls.saturating_add(r.calls);
            e.ns += r.msecs * 1e6;
        }
        let ns_per_tick = if p.ticks_per_sec > 0 && p.compensate {
            1e9 / p.ticks_per_sec as f64
        } else {
            0.0
        };
        for t in &p.threads {
            for (i, e) in t.paths.iter().enumerate() {
                if i == 0 && e.func == 0 {
                    continue;
                }
                let name = node_name(p, e.func);
                let f = out.entry(name.clone()).or_default();
                f.name = name;
                let n = e.calls as f64;
                f.comp_self_ns += n * p.comp_self_ticks as f64 * ns_per_tick;
                f.comp_child_ns += n * p.comp_child_ticks as f64 * ns_per_tick;
                let caller = e
                    .parent
                    .and_then(|j| t.paths.get(j as usize))
                    .filter(|c| c.func != 0)
                    .map(|c| node_name(p, c.func));
                if let Some(c) = caller {
                    let k = f.callers.entry(c).or_default();
                    *k = k.saturating_add(e.calls);
                }
            }
        }
    }
    out
}

/// The hooks' cost beyond the compensation left in each function's own time, from the
/// hooks' samples below each function (`hooks`). Of a call's two hooks, the part between the
/// entry hook's timestamp and the exit hook's is in the call's own time and the rest in its
/// caller's. The called function's part is a few instructions on each side of the
/// timestamps (returning from the entry hook, calling the exit hook), the same in every call:
/// what the calibration measured of it (`comp_self`), and no more than the sampler saw. The
/// rest is the hooks' work (the path table, closing the frame) before the entry hook's
/// timestamp and after the exit hook's; that is where a real program's hooks outrun the
/// calibration's tight loop (cold caches, slow clock reads, preemptions), so the whole excess
/// over the compensation is the callers', split by calls per call path.
fn profiler_cost(
    side: &BTreeMap<String, CallFn>,
    hooks: &HashMap<&str, Charge>,
) -> HashMap<String, f64> {
    let mut cost: HashMap<String, f64> = HashMap::new();
    for f in side.values() {
        let measured = f.measured_hooks(hooks);
        let comp = f.comp_self_ns + f.comp_child_ns;
        if comp <= 0.0 && measured <= 0.0 {
            continue;
        }
        let own_part = measured.min(f.comp_self_ns);
        *cost.entry(f.name.clone()).or_default() += own_part - f.comp_self_ns;
        let by_callers: u64 = f.callers.values().sum();
        if by_callers == 0 {
            continue;
        }
        let excess = measured - own_part - f.comp_child_ns;
        for (caller, &n) in &f.callers {
            *cost.entry(caller.clone()).or_default() += excess * n as f64 / by_callers as f64;
        }
    }
    cost
}

/// The hooks' cost beyond the compensation left in each function's own time, when the hooks'
/// stacks show their timestamps.
///
/// - **Waits** in the hooks (preempted, or blocked on a page fault) are all beyond the
///   calibration, and a wait's stack shows exactly which side of the call's timestamps the
///   hook was on when it stopped: from the entry hook's timestamp on, and before the exit
///   hook's, it is in the called function's own time (`hooks_inside`); otherwise in the
///   caller's (`hooks_of_callees`, charged to the next instrumented function up the stack).
/// - **Time on the CPU** in the hooks beyond the calibration (cold caches, slower clock reads
///   than in the calibration's tight loop) is spread as the compensation was: the same code
///   run in the same calls, a few percent slower throughout. The samples' own split at the
///   timestamps is not used for it: the clock read is most of a hook's time (half of its
///   samples fall on the instruction after `rdtsc`), and where inside that read the counter
///   is latched, and which neighbouring instructions the CPU runs around it out of order,
///   no instruction address shows. On bzip2 (6.6 M calls of the tiny `mainGtU`), the split by
///   address left mainGtU and its caller 2–8 points apart, about 10 ns a call; spread as the
///   compensation, at most 1.5, quiet or loaded.
///
/// The total is the hooks' measured cost less the compensated one, as before.
fn profiler_cost_at_stamps(
    side: &BTreeMap<String, CallFn>,
    charges: &HashMap<&str, Charge>,
) -> HashMap<String, f64> {
    let mut cost: HashMap<String, f64> = HashMap::new();
    // What the runtime took out of each function (its calls' comp_self, and comp_child of
    // each call it made, by calls per call path), and the hooks' CPU time on all sides.
    let mut compensated: HashMap<String, f64> = HashMap::new();
    let mut cpu = 0.0;
    for f in side.values() {
        let c = charges.get(f.name.as_str()).copied().unwrap_or_default();
        cpu +=
            (c.hooks_inside - c.hooks_inside_wait) + (c.hooks_of_callees - c.hooks_of_callees_wait);
        *cost.entry(f.name.clone()).or_default() += c.hooks_inside_wait + c.hooks_of_callees_wait;
        *compensated.entry(f.name.clone()).or_default() += f.comp_self_ns;
        let by_callers: u64 = f.callers.values().sum();
        if by_callers == 0 {
            continue;
        }
        for (caller, &n) in &f.callers {
            *compensated.entry(caller.clone()).or_default() +=
                f.comp_child_ns * n as f64 / by_callers as f64;
        }
    }
    let total: f64 = compensated.values().sum();
    if total > 0.0 {
        let scale = (cpu - total) / total;
        for (name, comp) in compensated {
            *cost.entry(name).or_default() += comp * scale;
        }
    }
    cost
}

/// 1 ns a call worth at least this share of [`TOLERANCE_POINTS`] makes a function called
/// often enough for where its calls' timestamps fall to matter (about 10 ns a call would then
/// fill the tolerance; bench/diff/tiny.sh measured 2–8).
const CALL_SITE_SHARE: f64 = 0.1;

/// The functions over [`OVER_PERCENT`] that disagree at calls made so often that 1 ns a call
/// is at least a tenth of the tolerance: their own calls, or their calls of another
/// instrumented function. The hooks read the clock without waiting for the instructions still
/// executing, so the caller's last work before a call can count inside the call, and the
/// called function's last work before its exit hook in the caller: a few ns a call between
/// the two that neither the calibration nor the samples show. Each warning names those calls
/// (with the function's own code and hooks a call, as the sampler saw them) and what 1 ns a
/// call over them is worth in points of the statistical total.
fn short_call_warnings(
    rows: &[ReconcileRow],
    side: &BTreeMap<String, CallFn>,
    stat_total_ns: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    if stat_total_ns <= 0.0 {
        return out;
    }
    let points = |calls: u64| calls as f64 * 100.0 / stat_total_ns;
    let often = |calls: u64| points(calls) >= CALL_SITE_SHARE * TOLERANCE_POINTS;
    for r in rows {
        if !r.over || r.agree {
            continue;
        }
        let mut edges = Vec::new();
        let mut calls = 0u64;
        if r.calls > 0 && often(r.calls) {
            let n = r.calls as f64;
            let from: Vec<&str> = side
                .get(&r.name)
                .map(|f| f.callers.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let from = if from.is_empty() {
                String::new()
            } else {
                format!(", from {}", from.join(", "))
            };
            edges.push(format!(
                "its own {} calls ({:.1} ns of its code and {:.0} ns of hooks each{from})",
                r.calls,
                r.sampled_ns / n,
                r.hooks_ns / n
            ));
            calls = calls.saturating_add(r.calls);
        }
        for f in side.values() {
            if let Some(&c) = f.callers.get(&r.name) {
                if f.name != r.name && often(c) {
                    edges.push(format!("its {c} calls of {}", f.name));
                    calls = calls.saturating_add(c);
                }
            }
        }
        if edges.is_empty() {
            continue;
        }
        out.push(format!(
            "{}: {}; the hooks read the clock without waiting for the instructions still executing, so the last work before a call's entry or exit timestamp can count on the other side of it, a few ns a call between a caller and the function it calls that neither the calibration nor the samples show; 1 ns a call over these calls is {:.1} points here",
            r.name,
            edges.join("; "),
            points(calls),
        ));
    }
    out
}

/// What a sample's stack shows about the instrumented function it is charged to.
struct Walk<'a> {
    /// The innermost instrumented function (the call profile's name).
    owner: &'a str,
    /// Its frame's index in the stack.
    depth: usize,
    /// The call profiler's runtime is below it.
    hook_below: bool,
    /// The frame just below it, when that is one of the runtime's hooks.
    hook_called: Option<&'a str>,
    /// Which hook the runtime's frames below it are in, if they tell.
    hook: Option<HookKind>,
    /// Below it, the runtime's code from a hook's timestamp on ([`ENTRY_STAMPED`] or
    /// [`EXIT_STAMPED`]).
    stamped: bool,
    /// An interrupt entry is below it.
    irq: bool,
    /// Only kernel frames are below it: its frame is the interrupted user code.
    first_user: bool,
    /// The next instrumented function up the stack.
    caller: Option<&'a str>,
    /// The owner's address in this stack and its mapping, when the owner's frame is a real
    /// function (not inlined) and the profile keeps locations.
    owner_at: Option<(u64, u32)>,
}

/// Walk a sample's stack from the leaf to its innermost instrumented function.
fn walk<'a>(prof: &'a Profile, instrumented: &HashSet<&'a str>, s: &Sample) -> Option<Walk<'a>> {
    let frames = prof
        .stacks
        .get(s.stack as usize)
        .map_or(&[][..], Vec::as_slice);
    let func = |id: u32| prof.funcs.get(id as usize);
    let (mut hook_below, mut irq, mut first_user) = (false, false, true);
    let mut stamped = false;
    let mut found = None;
    for (i, &id) in frames.iter().enumerate() {
        let Some(f) = func(id) else {
            continue;
        };
        if !f.kernel {
            if let Some(name) = instrumented.get(f.name.as_str()) {
                found = Some((i, *name));
                break;
            }
            first_user = false;
        }
        let hook = is_hook(&f.name, &f.dso);
        hook_below |= hook;
        stamped |= hook && (f.name.starts_with(ENTRY_STAMPED) || f.name.starts_with(EXIT_STAMPED));
        irq |= f.kernel && is_irq_entry(&f.name);
    }
    let (depth, owner) = found?;
    let hook_called = depth
        .checked_sub(1)
        .and_then(|i| func(frames[i]))
        .filter(|f| is_hook(&f.name, &f.dso))
        .map(|f| f.name.as_str());
    // Which hook: the first of the runtime's frames, from the one the function called
    // towards the leaf, that tells.
    let hook = frames[..depth]
        .iter()
        .rev()
        .filter_map(|&id| func(id))
        .filter(|f| is_hook(&f.name, &f.dso))
        .find_map(|f| hook_kind(&f.name));
    let caller = frames[depth + 1..].iter().find_map(|&id| {
        let f = func(id)?;
        (!f.kernel)
            .then(|| instrumented.get(f.name.as_str()).copied())
            .flatten()
    });
    // The location holding frame `depth`: each location stands for its inlined functions and
    // its own, in the order the stack lists them.
    let mut owner_at = None;
    let mut at = 0usize;
    for &l in prof
        .loc_stacks
        .get(s.locs as usize)
        .map_or(&[][..], Vec::as_slice)
    {
        let Some(loc) = prof.locations.get(l as usize) else {
            break;
        };
        let n = prof.lines_of(loc).len();
        if n == 0 || at + n > depth + 1 {
            break;
        }
        at += n;
        if at == depth + 1 {
            owner_at = loc.map.map(|m| (loc.address, m));
            break;
        }
    }
    Some(Walk {
        owner,
        depth,
        hook_below,
        hook_called,
        hook,
        stamped,
        irq,
        first_user,
        caller,
        owner_at,
    })
}

/// Whether the walked sample ran in its function's exit code: its first user frame is the
/// function, within [`EPILOGUE_BYTES`] past a call of its exit hook in `exit_sites`.
fn in_exit(wk: &Walk<'_>, exit_sites: &HashMap<(&str, u32), Vec<u64>>) -> bool {
    !wk.hook_below
        && wk.first_user
        && wk.owner_at.is_some_and(|(addr, map)| {
            exit_sites.get(&(wk.owner, map)).is_some_and(|sites| {
                sites
                    .iter()
                    .any(|&site| addr > site && addr - site <= EPILOGUE_BYTES)
            })
        })
}

#[derive(Default, Clone, Copy)]
struct Charge {
    sampled: f64,
    /// Samples and waits in its instrumented callees' entry code (before their entry hook).
    entry: f64,
    /// Samples and waits in its instrumented callees' exit code (after their exit hook).
    exit: f64,
    library: f64,
    irq: f64,
    hooks: f64,
    /// Of `hooks`, what ran between the timestamps of the function's own calls (its entry
    /// hooks from their timestamp on, its exit hooks before theirs): the call profile counts
    /// it in the function's own time.
    hooks_inside: f64,
    /// Hook samples of its instrumented callees outside their calls' timestamps (a callee's
    /// entry hook before its timestamp, its exit hook from its timestamp on): the call
    /// profile counts them in this function's own time.
    hooks_of_callees: f64,
    /// Of `hooks_inside`, the waits (off the CPU).
    hooks_inside_wait: f64,
    /// Of `hooks_of_callees`, the waits (off the CPU).
    hooks_of_callees_wait: f64,
    blocked: f64,
    runnable: f64,
    /// The sum of the squared weights of the samples and waits in its explained share.
    squares: f64,
}

/// Reconcile the call profile `calls` with the statistical profile `prof` of the same
/// program.
pub fn reconcile(calls: &[ProcessCalls], prof: &Profile) -> Reconcile {
    let mut warnings = Vec::new();
    // Call side: own time per function over the processes and threads.
    let call_rows = call_side(calls);
    let calls_total_ns: f64 = call_rows.values().map(|v| v.ns).sum();
    let instrumented: HashSet<&str> = call_rows.keys().map(String::as_str).collect();
    let compensated = !calls.is_empty() && calls.iter().all(|p| p.compensate);

    // Which of the profile's processes: the same pids with the same name (one run), else
    // the same names.
    let comms: Vec<String> = {
        let mut v: Vec<String> = calls.iter().map(|p| comm_of(p.comm())).collect();
        v.sort();
        v.dedup();
        v
    };
    let same_pid: HashSet<u32> = calls
        .iter()
        .filter(|p| prof.process(p.pid).is_some() && prof.comm(p.pid) == comm_of(p.comm()))
        .map(|p| p.pid)
        .collect();
    let matched_by = if same_pid.is_empty() {
        MatchedBy::Comm
    } else {
        MatchedBy::Pid
    };
    let comm_set: HashSet<&str> = comms.iter().map(String::as_str).collect();
    let mut pid_ok: HashMap<u32, bool> = HashMap::new();

    let off_cpu = prof.meta.off_cpu.is_some();
    let event = prof.meta.event.split(':').next().unwrap_or("");
    if off_cpu && !matches!(event, "cpu-clock" | "task-clock") {
        warnings.push(format!(
            "the profile sampled {event}, whose periods are not nanoseconds: its CPU samples and off-CPU time are added as they are; record with the default cpu-clock event"
        ));
    }
    let filter = Filter {
        measure: if off_cpu {
            Measure::Wall
        } else {
            Measure::CpuSamples
        },
        ..Filter::default()
    };
    let mut charges: HashMap<&str, Charge> = HashMap::new();
    let (mut outside_ns, mut samples) = (0.0, 0u64);
    let mut stamps_seen = false;
    let mut keep = |pid: u32| {
        *pid_ok.entry(pid).or_insert_with(|| match matched_by {
            MatchedBy::Pid => same_pid.contains(&pid),
            MatchedBy::Comm => comm_set.contains(prof.comm(pid).as_str()),
        })
    };
    // First pass: where each instrumented function calls its entry and exit hooks (the
    // address of the call, from the stacks of the hooks' samples), per mapping.
    let mut enter_sites: HashMap<(&str, u32), u64> = HashMap::new();
    let mut exit_sites: HashMap<(&str, u32), Vec<u64>> = HashMap::new();
    for s in filter.samples(prof) {
        if !keep(s.pid) {
            continue;
        }
        let Some(wk) = walk(prof, &instrumented, &s) else {
            continue;
        };
        if let (Some(hook), Some((addr, map))) = (wk.hook_called, wk.owner_at) {
            // The entry hook's PLT stub's samples only. A function also calls the entry
            // hooks of the callees gcc inlined into it, in its body, and `hood_rt::entry`'s
            // many samples would show those calls too, with no sample of the function's own
            // entry call among them when it is called rarely. The exported
            // `__cyg_profile_func_enter` is a two-instruction trampoline to `hood_rt::entry`
            // with no unwind information: a stack sampled in it is not to be trusted for its
            // caller's address (one such sample put a whole function in its caller's entry
            // column).
            if hook.starts_with("__cyg_profile_func_enter@") {
                // One call of the entry hook per function (at its start): the lowest address
                // seen is it.
                let e = enter_sites.entry((wk.owner, map)).or_insert(addr);
                *e = (*e).min(addr);
            } else if hook_kind(hook) == Some(HookKind::Exit) {
                // Every call of the exit hook the samples show (one per return, and one per
                // return of a callee inlined into it), a bounded number.
                let e = exit_sites.entry((wk.owner, map)).or_default();
                if !e.contains(&addr) && e.len() < MAX_EXIT_SITES {
                    e.push(addr);
                }
            }
        }
    }
    for s in filter.samples(prof) {
        if !keep(s.pid) {
            continue;
        }
        samples += 1;
        let w = s.period as f64;
        let Some(wk) = walk(prof, &instrumented, &s) else {
            outside_ns += w;
            continue;
        };
        // The function's entry code up to its entry hook's call (saving registers, setting up
        // the hook's arguments) runs before the call's first timestamp: the call profiler
        // charges it, and any wait that falls in it, to the caller.
        let in_entry = !wk.hook_below
            && wk.first_user
            && wk.owner_at.is_some_and(|(addr, map)| {
                enter_sites
                    .get(&(wk.owner, map))
                    .is_some_and(|&site| addr <= site)
            });
        if let (true, Some(caller)) = (in_entry, wk.caller) {
            let c = charges.entry(caller).or_default();
            c.entry += w;
            c.squares += w * w;
            continue;
        }
        // The way out after the exit hook's call returned (the stacks show a caller's address
        // as the return address less one, so the code after the call is above it) runs after
        // the call's last timestamp: charged to the caller too.
        if let (true, Some(caller)) = (in_exit(&wk, &exit_sites), wk.caller) {
            let c = charges.entry(caller).or_default();
            c.exit += w;
            c.squares += w * w;
            continue;
        }
        if wk.hook_below {
            stamps_seen |= wk.stamped;
            // Which side of the call's timestamps the hook was on when sampled (or
            // preempted): inside, the call profile counts it in this function's own time;
            // outside, in the caller's.
            let inside = match wk.hook {
                Some(HookKind::Entry) => wk.stamped,
                Some(HookKind::Exit) => !wk.stamped,
                None => false,
            };
            let wait = matches!(s.mode, Mode::Blocked | Mode::Runnable);
            if !inside {
                if let Some(caller) = wk.caller {
                    let c = charges.entry(caller).or_default();
                    c.hooks_of_callees += w;
                    if wait {
                        c.hooks_of_callees_wait += w;
                    }
                }
            }
            let c = charges.entry(wk.owner).or_default();
            // A hook's samples, on or off the CPU, are the hooks' part of the function
            // whose frame calls them.
            c.hooks += w;
            if !compensated {
                c.squares += w * w;
            }
            if inside {
                c.hooks_inside += w;
                if wait {
                    c.hooks_inside_wait += w;
                }
            }
            continue;
        }
        let c = charges.entry(wk.owner).or_default();
        c.squares += w * w;
        if s.mode == Mode::Blocked {
            c.blocked += w;
        } else if s.mode == Mode::Runnable {
            c.runnable += w;
        } else if wk.irq {
            // On the CPU in interrupt context (a wait's stack may hold an interrupt entry
            // too, when the interrupt preempted the thread: that is runnable time above).
            c.irq += w;
        } else if wk.depth == 0 {
            c.sampled += w;
        } else {
            c.library += w;
        }
    }
    let hooks_ns: f64 = charges.values().map(|c| c.hooks).sum();
    let irq_ns: f64 = charges.values().map(|c| c.irq).sum();
    let explained = |c: &Charge| {
        c.sampled
            + c.entry
            + c.exit
            + c.library
            + c.irq
            + c.blocked
            + c.runnable
            + if compensated { 0.0 } else { c.hooks }
    };
    let stat_total_ns: f64 = charges.values().map(explained).sum();
    // The hooks' cost per function on the call side: only when compensated (else the hooks
    // are on both sides already) and when the sampler saw the hooks at all.
    let cost = if compensated && hooks_ns > 0.0 && stamps_seen {
        profiler_cost_at_stamps(&call_rows, &charges)
    } else if compensated && hooks_ns > 0.0 {
        profiler_cost(&call_rows, &charges)
    } else {
        if compensated && samples > 0 {
            warnings.push(
                "no sample shows the call profiler's hooks (libhood_rt.so), so what they cost beyond the calibrated compensation is unknown and left in the call profile's times; record the profile with stacks through the hooks (the default --call-graph)"
                    .into(),
            );
        }
        HashMap::new()
    };
    let profiler_ns: f64 = cost.values().sum();
    let net_total_ns = calls_total_ns - profiler_ns;
    let pct = |n: f64, total: f64| if total > 0.0 { n * 100.0 / total } else { 0.0 };
    // The share p = W_f / W of samples drawn with weights w_i: its variance is about
    // (Σ_f w² (1 − p)² + Σ_rest w² p²) / W² (each sample in or out of the function).
    let squares_total: f64 = charges.values().map(|c| c.squares).sum();
    let error_points = |c: &Charge| {
        if stat_total_ns <= 0.0 {
            return 0.0;
        }
        let p = explained(c) / stat_total_ns;
        let var = c.squares * (1.0 - p) * (1.0 - p) + (squares_total - c.squares).max(0.0) * p * p;
        100.0 * var.max(0.0).sqrt() / stat_total_ns
    };
    let mut rows: Vec<ReconcileRow> = call_rows
        .iter()
        .map(|(name, f)| {
            let (ncalls, ns) = (f.calls, f.ns);
            let c = charges.get(name.as_str()).copied().unwrap_or_default();
            let own_cost = cost.get(name).copied().unwrap_or(0.0);
            let calls_percent = pct(ns, calls_total_ns);
            let net_percent = pct(ns - own_cost, net_total_ns);
            let explained_percent = pct(explained(&c), stat_total_ns);
            let delta_points = net_percent - explained_percent;
            let over = net_percent > OVER_PERCENT || explained_percent > OVER_PERCENT;
            ReconcileRow {
                name: name.clone(),
                calls: ncalls,
                calls_ns: ns,
                calls_percent,
                profiler_ns: own_cost,
                profiler_points: pct(own_cost, calls_total_ns),
                net_percent,
                sampled_ns: c.sampled,
                entry_ns: c.entry,
                exit_ns: c.exit,
                library_ns: c.library,
                irq_ns: c.irq,
                hooks_ns: c.hooks,
                blocked_ns: off_cpu.then_some(c.blocked),
                runnable_ns: off_cpu.then_some(c.runnable),
                sampled_percent: pct(c.sampled, stat_total_ns),
                entry_points: pct(c.entry, stat_total_ns),
                exit_points: pct(c.exit, stat_total_ns),
                library_points: pct(c.library, stat_total_ns),
                irq_points: pct(c.irq, stat_total_ns),
                hooks_points: pct(c.hooks, stat_total_ns),
                blocked_points: off_cpu.then(|| pct(c.blocked, stat_total_ns)),
                runnable_points: off_cpu.then(|| pct(c.runnable, stat_total_ns)),
                explained_percent,
                delta_points,
                explained_error_points: error_points(&c),
                over,
                agree: delta_points.abs() <= TOLERANCE_POINTS,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.calls_percent
            .total_cmp(&a.calls_percent)
            .then_with(|| a.name.cmp(&b.name))
    });
    let considered = rows.iter().filter(|r| r.over).count();
    let agreeing = rows.iter().filter(|r| r.over && r.agree).count();
    if compensated {
        warnings.extend(short_call_warnings(&rows, &call_rows, stat_total_ns));
    }
    if samples == 0 {
        warnings.push(format!(
            "the profile holds no sample of {}: record the same program",
            comms.join(", ")
        ));
    } else if stat_total_ns == 0.0 {
        warnings.push(
            "no sample's stack holds an instrumented function: the profile's stacks do not reach the program's functions (record with frame pointers or --call-graph dwarf)"
                .into(),
        );
    }
    if !off_cpu {
        warnings.push(
            "the profile holds no off-CPU data, so the time the call profile counts while threads were blocked is unknown; record with `hood record --off-cpu` to break it down"
                .into(),
        );
    }
    Reconcile {
        matched_by,
        comms,
        calls_total_ns,
        stat_total_ns,
        outside_ns,
        hooks_ns,
        profiler_ns,
        irq_ns,
        compensated,
        hooks_split_at_stamps: compensated && hooks_ns > 0.0 && stamps_seen,
        off_cpu,
        samples,
        rows,
        considered,
        agreeing,
        tolerance_points: TOLERANCE_POINTS,
        over_percent: OVER_PERCENT,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hood_model::profile::{FrameLine, Func, Location, Process, RecordMeta, Sample};
    use hood_tracemodel::calls::{Limits, PathEntry, ThreadCalls};

    /// The two diffs (profiles, call profiles) live in crates that do not see each other;
    /// `hood diff` promises one noise threshold (`noise_z` in both JSON reports).
    #[test]
    fn both_diffs_call_the_same_changes_noise() {
        assert_eq!(
            hood_model::profile::diff::NOISE_Z,
            hood_tracemodel::calls::NOISE_Z
        );
    }

    fn calls(own: &[(u64, &str, i64)]) -> ProcessCalls {
        let mut paths = vec![PathEntry::LOST];
        for &(func, _, ticks) in own {
            paths.push(PathEntry {
                parent: None,
                func,
                calls: 1,
                own_ticks: ticks,
                running_ticks: 0,
                running: false,
            });
        }
        ProcessCalls {
            pid: 9,
            ppid: 1,
            exe: "/x/work".into(),
            ticks_per_sec: 1000,
            clock: hood_tracemodel::Clock::Monotonic,
            compensate: true,
            comp_self_ticks: 0,
            comp_child_ticks: 0,
            flags: 0,
            limits: Limits::default(),
            state: hood_tracemodel::ProcessState::Exited,
            span_ns: 0,
            threads: vec![ThreadCalls::ended(9, paths)],
            symbols: own.iter().map(|&(a, n, _)| (a, n.to_string())).collect(),
            notes: Vec::new(),
        }
    }

    /// Frames from the leaf as (name, dso), a count of 1 ms samples, and their mode.
    type Samples<'a> = (&'a [(&'a str, &'a str)], u64, Mode);

    /// Samples of 1 ms.
    fn prof(pid: u32, samples: &[Samples<'_>], off_cpu: bool) -> Profile {
        let mut p = Profile {
            meta: RecordMeta {
                event: "cpu-clock".into(),
                freq_hz: 1000,
                ..RecordMeta::default()
            },
            processes: vec![Process {
                pid,
                comm: "work".into(),
                threads: Vec::new(),
            }],
            ..Profile::default()
        };
        if off_cpu {
            p.meta.off_cpu = Some(Default::default());
        }
        for (stack, n, mode) in samples {
            let ids: Vec<u32> = stack
                .iter()
                .map(|(name, dso)| {
                    p.funcs.push(Func {
                        name: name.to_string(),
                        dso: dso.to_string(),
                        kernel: *dso == "[kernel.kallsyms]",
                        resolved: true,
                        ..Func::default()
                    });
                    p.funcs.len() as u32 - 1
                })
                .collect();
            p.stacks.push(ids);
            for _ in 0..*n {
                let s = Sample {
                    pid,
                    tid: pid,
                    cpu: 0,
                    time: 0,
                    period: 1_000_000,
                    mode: *mode,
                    stack: p.stacks.len() as u32 - 1,
                    locs: 0,
                };
                if matches!(mode, Mode::Blocked | Mode::Runnable) {
                    p.off_cpu.push(s);
                } else {
                    p.samples.push(s);
                }
            }
        }
        p
    }

    #[test]
    fn library_hooks_and_blocked_time_are_charged_as_the_call_profiler_charges() {
        // Call profile: main 10 ms, spin 50 ms, copy 20 ms, wait 20 ms (own, ticks of 1 ms).
        let c = calls(&[
            (1, "main", 10),
            (2, "spin", 50),
            (3, "copy", 20),
            (4, "wait", 20),
        ]);
        const W: &str = "work";
        let samples: Vec<Samples<'_>> = vec![
            (&[("main", W)], 10, Mode::User),
            // Preempted in a hook: the hooks' part, not main's or spin's runnable time.
            (
                &[("hood_enter", "libhood_rt.so"), ("main", W)],
                3,
                Mode::Runnable,
            ),
            (&[("spin", W), ("main", W)], 48, Mode::User),
            // The hooks' cost under spin: compensated, so left out.
            (
                &[("__cyg_profile_func_enter", "libhood_rt.so"), ("spin", W)],
                5,
                Mode::User,
            ),
            (
                &[("__memmove_avx", "libc.so.6"), ("copy", W)],
                15,
                Mode::User,
            ),
            (
                &[("clear_page", "[kernel.kallsyms]"), ("copy", W)],
                5,
                Mode::Kernel,
            ),
            (&[("wait", W), ("main", W)], 1, Mode::User),
            (
                &[
                    ("schedule", "[kernel.kallsyms]"),
                    ("nanosleep", "libc.so.6"),
                    ("wait", W),
                ],
                19,
                Mode::Blocked,
            ),
            // Start-up: outside.
            (&[("_dl_start", "ld.so")], 7, Mode::User),
        ];
        let p = prof(9, &samples, true);
        let r = reconcile(std::slice::from_ref(&c), &p);
        assert_eq!(r.matched_by, MatchedBy::Pid);
        assert_eq!(r.outside_ns, 7e6);
        assert_eq!(r.stat_total_ns, 98e6);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert_eq!(row("copy").library_ns, 20e6);
        assert_eq!(row("spin").hooks_ns, 5e6);
        assert_eq!(row("main").hooks_ns, 3e6);
        assert_eq!(row("main").runnable_ns, Some(0.0));
        assert_eq!(row("wait").blocked_ns, Some(19e6));
        assert!((row("spin").calls_percent - 50.0).abs() < 1e-9);
        assert!((row("spin").explained_percent - 48.0 * 100.0 / 98.0).abs() < 1e-9);
        assert_eq!((r.considered, r.agreeing), (4, 4));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);

        // Without off-CPU data the blocked part is unknown, and wait's share cannot agree.
        let p = prof(4242, &samples[..samples.len() - 2], false);
        let r = reconcile(&[c], &p);
        assert_eq!(r.matched_by, MatchedBy::Comm);
        let wait = r.rows.iter().find(|x| x.name == "wait").unwrap();
        assert_eq!(wait.blocked_ns, None);
        assert!(!wait.agree);
        assert!(r.warnings.iter().any(|w| w.contains("--off-cpu")));
    }

    /// A call profile of `(func, name, own ticks, calls, parent path index)` paths (path 0 is
    /// the lost node; indexes from 1), ticks of 1 ns, with the given compensation.
    fn calls_tree(paths: &[(u64, &str, i64, u64, Option<u32>)], comp: (u64, u64)) -> ProcessCalls {
        let mut c = calls(&[]);
        c.ticks_per_sec = 1_000_000_000;
        (c.comp_self_ticks, c.comp_child_ticks) = comp;
        for &(func, name, ticks, n, parent) in paths {
            c.threads[0].paths.push(PathEntry {
                parent,
                func,
                calls: n,
                own_ticks: ticks,
                running_ticks: 0,
                running: false,
            });
            c.symbols.insert(func, name.to_string());
        }
        c
    }

    #[test]
    fn the_explained_shares_sampling_error_is_the_binomial_one_for_equal_weights() {
        // 40 samples of 1 ms, 10 of them in `tiny`: sqrt(0.25 * 0.75 / 40) = 6.85 points.
        let c = calls_tree(
            &[
                (1, "outer", 30_000_000, 1, None),
                (2, "tiny", 10_000_000, 10, Some(1)),
            ],
            (0, 0),
        );
        const W: &str = "work";
        let samples: Vec<Samples<'_>> = vec![
            (&[("outer", W)], 30, Mode::User),
            (&[("tiny", W), ("outer", W)], 10, Mode::User),
        ];
        let r = reconcile(std::slice::from_ref(&c), &prof(9, &samples, true));
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        let want = 100.0 * (0.25f64 * 0.75 / 40.0).sqrt();
        assert!((row("tiny").explained_error_points - want).abs() < 1e-9);
        assert!((row("outer").explained_error_points - want).abs() < 1e-9);
        // One wait of 10 ms in `tiny` instead of ten samples: as many points, far less sure.
        let waits: Vec<Samples<'_>> = vec![
            (&[("outer", W)], 30, Mode::User),
            (&[("tiny", W), ("outer", W)], 1, Mode::Runnable),
        ];
        let mut p = prof(9, &waits, true);
        p.off_cpu.last_mut().unwrap().period = 10_000_000;
        let r = reconcile(std::slice::from_ref(&c), &p);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert!((row("tiny").explained_percent - 25.0).abs() < 1e-9);
        assert!(
            row("tiny").explained_error_points > 2.0 * want,
            "{:?}",
            row("tiny")
        );
    }

    #[test]
    fn the_hooks_waits_are_split_at_their_timestamps_and_their_cpu_excess_as_compensated() {
        // `outer` calls `tiny` 1000 times; the runtime compensated 2 µs per call in `tiny`
        // (comp_self, 2 ms) and 6 µs per call in `outer` (comp_child, 6 ms; and 2 µs for
        // outer's own call). In this run the hooks' code took 1.5 times the calibration on
        // the CPU, 12 ms: 3 ms between the timestamps of tiny's calls, 9 ms outside them; and
        // 6 ms of waits for a CPU in exit hooks after their timestamp, in `outer`'s time. The
        // call profile below is what the runtime measures of that: tiny 2 + 3 - 2 ms, outer
        // 22 + 9 + 6 - 6 ms (less 2 µs). The CPU samples' addresses put 7 ms inside (4 ms of
        // entry hooks after their timestamp, 3 ms of exit hooks before theirs) and 5 ms
        // outside: where in the clock read the counter is latched, they cannot show, and
        // the rule does not use them; the waits' stacks it does.
        let c = calls_tree(
            &[
                (1, "outer", 30_998_000, 1, None),
                (2, "tiny", 3_000_000, 1000, Some(1)),
            ],
            (2000, 6000),
        );
        const W: &str = "work";
        const RT: &str = "libhood_rt.so";
        let samples: Vec<Samples<'_>> = vec![
            (&[("outer", W)], 22, Mode::User),
            (&[("tiny", W), ("outer", W)], 2, Mode::User),
            (
                &[
                    ("hood_rt::hook::enter_fast", RT),
                    ("hood_rt::entry", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                5,
                Mode::User,
            ),
            (
                &[
                    (ENTRY_STAMPED, RT),
                    ("hood_rt::hook::enter_fast", RT),
                    ("hood_rt::entry", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                4,
                Mode::User,
            ),
            (
                &[
                    ("hood_rt::exit_hook", RT),
                    ("__cyg_profile_func_exit", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                3,
                Mode::User,
            ),
            (
                &[
                    ("irqentry_exit_to_user_mode", "[kernel.kallsyms]"),
                    (EXIT_STAMPED, RT),
                    ("hood_rt::hook::exit_fast", RT),
                    ("__cyg_profile_func_exit", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                6,
                Mode::Runnable,
            ),
        ];
        let p = prof(9, &samples, true);
        let r = reconcile(std::slice::from_ref(&c), &p);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        // 12 ms on the CPU against 8.002 ms compensated: each function's compensation is
        // scaled by 3.998 / 8.002; the 6 ms of waits are outer's.
        let scale = (12e6 - 8.002e6) / 8.002e6;
        assert!(
            (row("tiny").profiler_ns - 2e6 * scale).abs() < 1.0,
            "{:?}",
            row("tiny")
        );
        assert!(
            (row("outer").profiler_ns - (6.002e6 * scale + 6e6)).abs() < 1.0,
            "{:?}",
            row("outer")
        );
        assert!((r.profiler_ns - (18e6 - 8.002e6)).abs() < 1.0);
        assert!((row("tiny").hooks_ns - 18e6).abs() < 1.0);
        // Within a hundredth of a point: outer's own call's 2 µs are scaled with the rest.
        assert!((row("tiny").net_percent - 2.0 * 100.0 / 24.0).abs() < 1e-2);
        assert!((row("outer").net_percent - 22.0 * 100.0 / 24.0).abs() < 1e-2);
        assert!(row("tiny").delta_points.abs() < 1e-2);
        assert!(row("outer").delta_points.abs() < 1e-2);
        assert!(r.hooks_split_at_stamps);
        // Where the CPU samples fell does not move the answer; the waits' side does.
        let mut moved = samples.clone();
        moved[3].1 = 1;
        moved[2].1 = 8;
        let r2 = reconcile(std::slice::from_ref(&c), &prof(9, &moved, true));
        let row2 = |n: &str| r2.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert!((row2("tiny").profiler_ns - row("tiny").profiler_ns).abs() < 1.0);
        let mut inside = samples.clone();
        inside[5].0 = &[
            ("irqentry_exit_to_user_mode", "[kernel.kallsyms]"),
            ("hood_rt::hook::exit_fast", RT),
            ("__cyg_profile_func_exit", RT),
            ("tiny", W),
            ("outer", W),
        ];
        let r3 = reconcile(std::slice::from_ref(&c), &prof(9, &inside, true));
        let row3 = |n: &str| r3.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert!(
            (row3("tiny").profiler_ns - (2e6 * scale + 6e6)).abs() < 1.0,
            "a wait before the exit hook's timestamp is tiny's: {:?}",
            row3("tiny")
        );

        // The runtime's hooks as they are now: the exported hooks jump to each mode's common
        // path (`calls_enter`, `calls_exit`), whose frames are the ones under the function;
        // the rest go through `hook_other`, which serves both and is told by what is below.
        let now: Vec<Samples<'_>> = vec![
            samples[0],
            samples[1],
            (
                &[
                    ("hood_rt::hook::enter_fast", RT),
                    ("hood_rt::calls_enter", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                5,
                Mode::User,
            ),
            (
                &[
                    (ENTRY_STAMPED, RT),
                    ("hood_rt::hook::enter", RT),
                    ("hood_rt::hook_other", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                4,
                Mode::User,
            ),
            (
                &[
                    ("hood_rt::hook::exit_fast", RT),
                    ("hood_rt::calls_exit", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                3,
                Mode::User,
            ),
            (
                &[
                    ("irqentry_exit_to_user_mode", "[kernel.kallsyms]"),
                    (EXIT_STAMPED, RT),
                    ("hood_rt::hook::exit_fast", RT),
                    ("hood_rt::calls_exit", RT),
                    ("tiny", W),
                    ("outer", W),
                ],
                6,
                Mode::Runnable,
            ),
        ];
        let r4 = reconcile(std::slice::from_ref(&c), &prof(9, &now, true));
        let row4 = |n: &str| r4.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert!(r4.hooks_split_at_stamps);
        assert!((row4("tiny").profiler_ns - row("tiny").profiler_ns).abs() < 1.0);
        assert!((row4("outer").profiler_ns - row("outer").profiler_ns).abs() < 1.0);
        assert!(row4("tiny").agree && row4("outer").agree, "{:?}", r4.rows);
        // A wait in `calls_exit` before its timestamp is inside the call: tiny's.
        let mut before = now.clone();
        before[5].0 = &[
            ("irqentry_exit_to_user_mode", "[kernel.kallsyms]"),
            ("hood_rt::hook::exit_fast", RT),
            ("hood_rt::calls_exit", RT),
            ("tiny", W),
            ("outer", W),
        ];
        let r5 = reconcile(std::slice::from_ref(&c), &prof(9, &before, true));
        let row5 = |n: &str| r5.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert!(
            (row5("tiny").profiler_ns - (2e6 * scale + 6e6)).abs() < 1.0,
            "{:?}",
            row5("tiny")
        );

        // The same samples without the timestamps' frames (an older runtime): the rule
        // leaves `tiny` its calibrated 2 ms and gives `outer` the rest, 1 ms too much for
        // `tiny`, and says how it split them.
        let old: Vec<Samples<'_>> = vec![
            samples[0],
            samples[1],
            (
                &[("hood_rt::entry", RT), ("tiny", W), ("outer", W)],
                9,
                Mode::User,
            ),
            (
                &[("__cyg_profile_func_exit", RT), ("tiny", W), ("outer", W)],
                9,
                Mode::User,
            ),
        ];
        let r = reconcile(std::slice::from_ref(&c), &prof(9, &old, true));
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert!(row("tiny").profiler_ns.abs() < 1.0, "{:?}", row("tiny"));
        assert!(!row("tiny").agree, "{:?}", row("tiny"));
        assert!(!r.hooks_split_at_stamps);
    }

    #[test]
    fn the_hooks_cost_beyond_the_compensation_is_the_callers() {
        // `outer` calls `tiny` 1000 times. The runtime compensated 2 µs per call in `tiny`
        // (comp_self) and 6 µs per call in `outer` (comp_child): 8 ms in all; the sampler saw
        // the hooks under `tiny` take 16 ms. `tiny` keeps its calibrated 2 ms (its part of the
        // hooks is the few instructions next to the timestamps); the 8 ms excess is the hooks'
        // table work on the caller's side and stays in `outer`'s own time (less the 2 µs
        // compensated for `outer`'s own one call, under which no hook was sampled).
        let c = calls_tree(
            &[
                (1, "outer", 30_000_000, 1, None),
                (2, "tiny", 20_000_000, 1000, Some(1)),
            ],
            (2000, 6000),
        );
        const W: &str = "work";
        let samples: Vec<Samples<'_>> = vec![
            (&[("outer", W)], 22, Mode::User),
            (&[("tiny", W), ("outer", W)], 20, Mode::User),
            (
                &[
                    ("__cyg_profile_func_enter", "libhood_rt.so"),
                    ("tiny", W),
                    ("outer", W),
                ],
                16,
                Mode::User,
            ),
        ];
        let p = prof(9, &samples, true);
        let r = reconcile(std::slice::from_ref(&c), &p);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert!(row("tiny").profiler_ns.abs() < 1.0, "{:?}", row("tiny"));
        assert!(
            (row("outer").profiler_ns - (8e6 - 2e3)).abs() < 1.0,
            "{:?}",
            row("outer")
        );
        assert!((r.profiler_ns - (8e6 - 2e3)).abs() < 1.0);
        assert!((row("outer").net_percent - 22.0 * 100.0 / 42.0).abs() < 0.01);
        assert!((row("outer").explained_percent - 22.0 * 100.0 / 42.0).abs() < 1e-6);
        assert_eq!((r.considered, r.agreeing), (2, 2));
        // Left in, the excess would put `outer` at 60 % of the call profile against 52 %.
        assert!((row("outer").calls_percent - 60.0).abs() < 1e-6);

        // Hooks that cost less than the calibration: `tiny` keeps what the sampler saw, and
        // the rest of the compensation comes back to it and to its caller.
        let mut cheap = samples.clone();
        cheap[2].1 = 1;
        let p = prof(9, &cheap, true);
        let r = reconcile(std::slice::from_ref(&c), &p);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        // One hook sample, 1 ms, of tiny's 2 ms compensated: 1 ms back to `tiny`, and all
        // of `outer`'s 6 ms (less its own call's 2 µs).
        assert!(
            (row("tiny").profiler_ns + 1e6).abs() < 1.0,
            "{:?}",
            row("tiny")
        );
        assert!(
            (row("outer").profiler_ns + 6e6 + 2e3).abs() < 1.0,
            "{:?}",
            row("outer")
        );

        // Without hook samples the cost is unknown: the compensation stands, and that is said.
        let p = prof(9, &samples[..2], true);
        let r = reconcile(std::slice::from_ref(&c), &p);
        assert_eq!(r.profiler_ns, 0.0);
        assert!(r.rows.iter().all(|x| x.net_percent == x.calls_percent));
        assert!(r.warnings.iter().any(|w| w.contains("libhood_rt.so")));
    }

    /// A profile of pid 9 with the functions `outer` and `tiny` (in `work`), the hook `hook`
    /// (in libhood_rt.so) and `__schedule` (the kernel), as 0..=3, and no samples yet.
    fn hook_profile(hook: &str) -> Profile {
        let mut p = prof(9, &[], true);
        for (name, dso) in [
            ("outer", "work"),
            ("tiny", "work"),
            (hook, "libhood_rt.so"),
            ("__schedule", "[kernel.kallsyms]"),
        ] {
            p.funcs.push(Func {
                name: name.into(),
                dso: dso.into(),
                kernel: dso.starts_with('['),
                resolved: true,
                ..Func::default()
            });
        }
        p.stacks = vec![Vec::new()];
        p.loc_stacks = vec![Vec::new()];
        p
    }

    /// `n` samples of 1 ms of one stack of `(function, address)` frames, innermost first
    /// (runnable ones as off-CPU waits).
    fn add_samples(p: &mut Profile, frames: &[(u32, u64)], n: u64, mode: Mode) {
        let mut locs = Vec::new();
        for &(func, address) in frames {
            p.lines.push(FrameLine {
                func,
                file: None,
                line: 0,
            });
            p.locations.push(Location {
                func,
                address,
                map: (address != 0).then_some(0),
                lines: (p.lines.len() as u32 - 1, p.lines.len() as u32),
            });
            locs.push(p.locations.len() as u32 - 1);
        }
        p.stacks.push(frames.iter().map(|f| f.0).collect());
        p.loc_stacks.push(locs);
        let id = p.stacks.len() as u32 - 1;
        for _ in 0..n {
            let s = Sample {
                pid: 9,
                tid: 9,
                cpu: 0,
                time: 0,
                period: 1_000_000,
                mode,
                stack: id,
                locs: id,
            };
            if matches!(mode, Mode::Runnable) {
                p.off_cpu.push(s);
            } else {
                p.samples.push(s);
            }
        }
    }

    #[test]
    fn a_callees_entry_code_before_its_entry_hook_is_charged_to_the_caller() {
        // Frames as (function, address); `tiny` calls its entry hook at 0x1010..0x1014 (the
        // hook's stacks show 0x1014, the return address less one, as stacks record callers).
        let c = calls_tree(
            &[
                (1, "outer", 29_000_000, 1, None),
                (2, "tiny", 10_000_000, 1000, Some(1)),
            ],
            (0, 0),
        );
        let mut p = hook_profile("__cyg_profile_func_enter@plt");
        let (outer, tiny, hook, sched) = (0u32, 1u32, 2u32, 3u32);
        let mut add =
            |frames: &[(u32, u64)], n: u64, mode: Mode| add_samples(&mut p, frames, n, mode);
        add(
            &[(hook, 0x9000), (tiny, 0x1014), (outer, 0x2000)],
            4,
            Mode::User,
        );
        // tiny's entry code: saving registers before the hook call, and a preemption there.
        add(&[(tiny, 0x1008), (outer, 0x2000)], 3, Mode::User);
        add(
            &[(sched, 0), (tiny, 0x1004), (outer, 0x2000)],
            2,
            Mode::Runnable,
        );
        // tiny's body, after the hook returned.
        add(&[(tiny, 0x1030), (outer, 0x2000)], 10, Mode::User);
        add(&[(outer, 0x2100)], 20, Mode::User);
        let r = reconcile(std::slice::from_ref(&c), &p);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert_eq!(row("outer").entry_ns, 5e6, "{:?}", row("outer"));
        assert_eq!(row("tiny").sampled_ns, 10e6);
        assert_eq!(row("tiny").runnable_ns, Some(0.0));
        assert_eq!(row("tiny").hooks_ns, 4e6);
        // The call profile: outer's 29 ms hold its 20, tiny's entry code (5) and the hooks
        // (4, none compensated for here: no calibration, so tiny keeps none of them); tiny's
        // 10 ms its 10: nets 25 and 10 of 35, as the sampler charges them.
        assert!((row("outer").profiler_ns - 4e6).abs() < 1.0);
        assert!(row("tiny").profiler_ns.abs() < 1.0);
        assert!((row("outer").explained_percent - 25.0 * 100.0 / 35.0).abs() < 1e-6);
        assert!(row("outer").delta_points.abs() < 1e-6, "{:?}", row("outer"));
        assert_eq!((r.considered, r.agreeing), (2, 2));

        // The exported entry hook is a trampoline without unwind information: a stack
        // sampled in it may show any address of the caller (here one past tiny's body),
        // which must not make tiny's body its entry code.
        let mut p = hook_profile("__cyg_profile_func_enter");
        let mut add =
            |frames: &[(u32, u64)], n: u64, mode: Mode| add_samples(&mut p, frames, n, mode);
        add(
            &[(hook, 0x9000), (tiny, 0x1040), (outer, 0x2000)],
            1,
            Mode::User,
        );
        add(&[(tiny, 0x1030), (outer, 0x2000)], 10, Mode::User);
        let r = reconcile(std::slice::from_ref(&c), &p);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert_eq!(row("outer").entry_ns, 0.0, "{:?}", row("outer"));
        assert_eq!(row("tiny").sampled_ns, 10e6);
    }

    #[test]
    fn a_callees_exit_code_after_its_exit_hook_is_charged_to_the_caller() {
        // Frames as (function, address); `tiny` calls its exit hook at 0x1040..0x1045 (the
        // hook's stacks show 0x1044, the return address less one, as stacks record callers)
        // and at 0x1020..0x1025 on another return (0x1024); an epilogue follows each.
        let c = calls_tree(
            &[
                (1, "outer", 29_000_000, 1, None),
                (2, "tiny", 10_000_000, 1000, Some(1)),
            ],
            (0, 0),
        );
        let mut p = hook_profile("__cyg_profile_func_exit");
        let (outer, tiny, hook, sched) = (0u32, 1u32, 2u32, 3u32);
        let mut add =
            |frames: &[(u32, u64)], n: u64, mode: Mode| add_samples(&mut p, frames, n, mode);
        add(
            &[(hook, 0x9000), (tiny, 0x1044), (outer, 0x2000)],
            3,
            Mode::User,
        );
        add(
            &[(hook, 0x9000), (tiny, 0x1024), (outer, 0x2000)],
            1,
            Mode::User,
        );
        // tiny's exit code: from the return address of the last hook call (restoring
        // registers, returning), and a preemption there.
        add(&[(tiny, 0x1045), (outer, 0x2000)], 1, Mode::User);
        add(&[(tiny, 0x104a), (outer, 0x2000)], 2, Mode::User);
        add(
            &[(sched, 0), (tiny, 0x1047), (outer, 0x2000)],
            2,
            Mode::Runnable,
        );
        // tiny's body: further than an epilogue past a hook call, or the call itself.
        add(&[(tiny, 0x1040), (outer, 0x2000)], 6, Mode::User);
        add(&[(tiny, 0x1044), (outer, 0x2000)], 2, Mode::User);
        add(&[(tiny, 0x1084), (outer, 0x2000)], 2, Mode::User);
        add(&[(outer, 0x2100)], 20, Mode::User);
        let r = reconcile(std::slice::from_ref(&c), &p);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n).unwrap().clone();
        assert_eq!(row("outer").exit_ns, 5e6, "{:?}", row("outer"));
        assert_eq!(row("outer").entry_ns, 0.0);
        assert_eq!(row("tiny").exit_ns, 0.0);
        assert_eq!(row("tiny").sampled_ns, 10e6);
        assert_eq!(row("tiny").runnable_ns, Some(0.0));
        assert_eq!(row("tiny").hooks_ns, 4e6);
        // The call profile: outer's 29 ms hold its 20, tiny's exit code (5) and the hooks
        // (4, none compensated for here: no calibration, so tiny keeps none of them); tiny's
        // 10 ms its 10: nets 25 and 10 of 35, as the sampler charges them.
        assert!((row("outer").profiler_ns - 4e6).abs() < 1.0);
        assert!(row("tiny").profiler_ns.abs() < 1.0);
        assert!((row("outer").explained_percent - 25.0 * 100.0 / 35.0).abs() < 1e-6);
        assert!(row("outer").delta_points.abs() < 1e-6, "{:?}", row("outer"));
        assert_eq!((r.considered, r.agreeing), (2, 2));
    }

    #[test]
    fn interrupt_work_on_top_of_a_function_has_its_own_column() {
        let c = calls(&[(1, "spin", 100)]);
        const K: &str = "[kernel.kallsyms]";
        const W: &str = "work";
        let samples: Vec<Samples<'_>> = vec![
            (&[("spin", W)], 90, Mode::User),
            // A softirq run at the end of the timer interrupt that hit spin.
            (
                &[
                    ("net_rx_action", K),
                    ("handle_softirqs", K),
                    ("irq_exit_rcu", K),
                    ("sysvec_apic_timer_interrupt", K),
                    ("asm_sysvec_apic_timer_interrupt", K),
                    ("spin", W),
                ],
                6,
                Mode::Kernel,
            ),
            // A system call of spin's: library (kernel code it asked for), not interrupt work.
            (
                &[("do_sys_poll", K), ("poll", "libc.so.6"), ("spin", W)],
                2,
                Mode::Kernel,
            ),
            // Preempted at the interrupt's end: waiting for a CPU, not interrupt work.
            (
                &[
                    ("__schedule", K),
                    ("preempt_schedule_irq", K),
                    ("asm_sysvec_apic_timer_interrupt", K),
                    ("spin", W),
                ],
                2,
                Mode::Runnable,
            ),
        ];
        let p = prof(9, &samples, true);
        let r = reconcile(&[c], &p);
        let spin = &r.rows[0];
        assert_eq!(spin.irq_ns, 6e6);
        assert_eq!(spin.library_ns, 2e6);
        assert_eq!(spin.runnable_ns, Some(2e6));
        assert_eq!(r.irq_ns, 6e6);
        assert!((spin.irq_points - 6.0).abs() < 1e-9);
        assert!((spin.explained_percent - 100.0).abs() < 1e-9);
    }

    /// A function called so often that 1 ns a call is at least a tenth of the tolerance, and
    /// that does not agree, is named with its callers and what 1 ns a call is worth; one that
    /// agrees, one under 5 %, and one called rarely are not.
    #[test]
    fn a_disagreeing_function_called_millions_of_times_is_named_with_its_callers() {
        let row =
            |name: &str, calls: u64, sampled_ms: f64, hooks_ms: f64, delta: f64| ReconcileRow {
                name: name.into(),
                calls,
                calls_percent: 10.0,
                net_percent: 10.0,
                sampled_ns: sampled_ms * 1e6,
                hooks_ns: hooks_ms * 1e6,
                explained_percent: 10.0 - delta,
                delta_points: delta,
                explained_error_points: 0.5,
                over: name != "small",
                agree: delta.abs() <= TOLERANCE_POINTS,
                ..ReconcileRow::default()
            };
        let rows = vec![
            // 5 M calls, 0.7 ns of own code and 45 ns of hooks each, and their caller.
            row("tiny", 5_000_000, 3.5, 225.0, 3.8),
            row("outer", 1, 100.0, 0.0, -3.8),
            row("agrees", 5_000_000, 3.5, 225.0, 1.0),
            row("small", 5_000_000, 3.5, 225.0, 3.8),
            // 200 k calls of 1 µs: 1 ns a call is 0.03 points.
            row("rare", 200_000, 200.0, 9.0, 3.8),
        ];
        let mut side = BTreeMap::new();
        let mut tiny = CallFn {
            name: "tiny".into(),
            calls: 5_000_000,
            ..CallFn::default()
        };
        tiny.callers.insert("outer".into(), 5_000_000);
        side.insert("tiny".to_string(), tiny);
        // 5 M calls of 1 ns in 700 ms: 0.7 points.
        let w = short_call_warnings(&rows, &side, 700e6);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with(
                "tiny: its own 5000000 calls (0.7 ns of its code and 45 ns of hooks each, from outer); the hooks read the clock"
            ),
            "{}",
            w[0]
        );
        assert!(
            w[1].starts_with("outer: its 5000000 calls of tiny; the hooks read the clock"),
            "{}",
            w[1]
        );
        for w in &w {
            assert!(
                w.ends_with("1 ns a call over these calls is 0.7 points here"),
                "{w}"
            );
        }
    }
}
