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
//! - **library**: code without hooks ran below it (libraries, assembly, the kernel);
//! - **hooks**: the call profiler's runtime ran below it, or the thread was preempted in it
//!   (its own cost; taken out of both sides when the call profile compensated for it, since
//!   the call profile then took it out of its times, and a preemption inside a hook is
//!   charged by the call profile to a callee the stack does not show);
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
//! A function *agrees* when its call share and the explained statistical share (sampled +
//! library + blocked + runnable, + hooks when not compensated) are within [`TOLERANCE_POINTS`]; the
//! closing count covers the functions over [`OVER_PERCENT`] in either.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::calls::{function_rows, ProcessCalls};
use crate::profile::aggregate::{Filter, Measure};
use crate::profile::{Mode, Profile};

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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReconcileRow {
    /// The function's name.
    pub name: String,
    /// Calls (call profile).
    pub calls: u64,
    /// Own ns the call profile measured.
    pub calls_ns: f64,
    /// Its share of the call profile's own time, percent.
    pub calls_percent: f64,
    /// ns of samples in the function's own code.
    pub sampled_ns: f64,
    /// ns of samples in code without hooks below it.
    pub library_ns: f64,
    /// ns of samples in the call profiler's runtime below it.
    pub hooks_ns: f64,
    /// ns blocked below it (`None`: the profile has no off-CPU data).
    pub blocked_ns: Option<f64>,
    /// ns runnable, waiting for a CPU, below it (`None`: no off-CPU data).
    pub runnable_ns: Option<f64>,
    /// `sampled_ns` as a share of the statistical total, percent.
    pub sampled_percent: f64,
    /// `library_ns` in points of the statistical total.
    pub library_points: f64,
    /// `hooks_ns` in points of the statistical total.
    pub hooks_points: f64,
    /// `blocked_ns` in points of the statistical total.
    pub blocked_points: Option<f64>,
    /// `runnable_ns` in points of the statistical total.
    pub runnable_points: Option<f64>,
    /// The statistical share charged as the call profiler charges: sampled + library +
    /// blocked + runnable (+ hooks when the call profile was not compensated), percent.
    pub explained_percent: f64,
    /// `calls_percent − explained_percent`: what the breakdown leaves unexplained.
    pub delta_points: f64,
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
    /// The call profile took its hooks' cost out of its times.
    pub compensated: bool,
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

#[derive(Default, Clone, Copy)]
struct Charge {
    sampled: f64,
    library: f64,
    hooks: f64,
    blocked: f64,
    runnable: f64,
}

/// Reconcile the call profile `calls` with the statistical profile `prof` of the same
/// program.
pub fn reconcile(calls: &[ProcessCalls], prof: &Profile) -> Reconcile {
    let mut warnings = Vec::new();
    // Call side: own time per function over the processes and threads.
    let mut call_rows: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for p in calls {
        for r in function_rows(p, false) {
            let e = call_rows.entry(r.path.concat()).or_insert((0, 0.0));
            e.0 = e.0.saturating_add(r.calls);
            e.1 += r.msecs * 1e6;
        }
    }
    let calls_total_ns: f64 = call_rows.values().map(|v| v.1).sum();
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
    for s in filter.samples(prof) {
        let keep = *pid_ok.entry(s.pid).or_insert_with(|| match matched_by {
            MatchedBy::Pid => same_pid.contains(&s.pid),
            MatchedBy::Comm => comm_set.contains(prof.comm(s.pid).as_str()),
        });
        if !keep {
            continue;
        }
        samples += 1;
        let w = s.period as f64;
        let frames = prof
            .stacks
            .get(s.stack as usize)
            .map_or(&[][..], Vec::as_slice);
        let mut hook_below = false;
        let mut owner = None;
        for (i, &id) in frames.iter().enumerate() {
            let Some(f) = prof.funcs.get(id as usize) else {
                continue;
            };
            if !f.kernel {
                if let Some(name) = instrumented.get(f.name.as_str()) {
                    owner = Some((i, *name));
                    break;
                }
            }
            hook_below |= is_hook(&f.name, &f.dso);
        }
        let Some((depth, name)) = owner else {
            outside_ns += w;
            continue;
        };
        let c = charges.entry(name).or_default();
        // A hook is charged by the call profiler to the call it times, which the stack does
        // not show (the hook runs before the callee's frame is set up), so its time, on or
        // off the CPU, is the hooks' part of the function the stack does show.
        if hook_below {
            c.hooks += w;
        } else if s.mode == Mode::Blocked {
            c.blocked += w;
        } else if s.mode == Mode::Runnable {
            c.runnable += w;
        } else if depth == 0 {
            c.sampled += w;
        } else {
            c.library += w;
        }
    }
    let hooks_ns: f64 = charges.values().map(|c| c.hooks).sum();
    let explained = |c: &Charge| {
        c.sampled + c.library + c.blocked + c.runnable + if compensated { 0.0 } else { c.hooks }
    };
    let stat_total_ns: f64 = charges.values().map(explained).sum();
    let pct = |n: f64, total: f64| if total > 0.0 { n * 100.0 / total } else { 0.0 };
    let mut rows: Vec<ReconcileRow> = call_rows
        .iter()
        .map(|(name, &(ncalls, ns))| {
            let c = charges.get(name.as_str()).copied().unwrap_or_default();
            let calls_percent = pct(ns, calls_total_ns);
            let explained_percent = pct(explained(&c), stat_total_ns);
            let delta_points = calls_percent - explained_percent;
            let over = calls_percent > OVER_PERCENT || explained_percent > OVER_PERCENT;
            ReconcileRow {
                name: name.clone(),
                calls: ncalls,
                calls_ns: ns,
                calls_percent,
                sampled_ns: c.sampled,
                library_ns: c.library,
                hooks_ns: c.hooks,
                blocked_ns: off_cpu.then_some(c.blocked),
                runnable_ns: off_cpu.then_some(c.runnable),
                sampled_percent: pct(c.sampled, stat_total_ns),
                library_points: pct(c.library, stat_total_ns),
                hooks_points: pct(c.hooks, stat_total_ns),
                blocked_points: off_cpu.then(|| pct(c.blocked, stat_total_ns)),
                runnable_points: off_cpu.then(|| pct(c.runnable, stat_total_ns)),
                explained_percent,
                delta_points,
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
        compensated,
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
    use crate::calls::{Limits, PathEntry, ThreadCalls};
    use crate::profile::{Func, Process, RecordMeta, Sample};

    fn calls(own: &[(u64, &str, i64)]) -> ProcessCalls {
        let mut paths = vec![PathEntry {
            parent: None,
            func: 0,
            calls: 0,
            own_ticks: 0,
            running_ticks: 0,
            running: false,
        }];
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
            clock: "monotonic".into(),
            compensate: true,
            comp_self_ticks: 0,
            comp_child_ticks: 0,
            flags: 0,
            limits: Limits::default(),
            state: "exited".into(),
            span_ns: 0,
            threads: vec![ThreadCalls {
                tid: 9,
                exited: true,
                mismatched: 0,
                lost_calls: 0,
                folded_calls: 0,
                folded_paths: 0,
                flags: 0,
                reset_pending: false,
                paths,
            }],
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
}
