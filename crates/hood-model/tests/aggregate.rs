//! Aggregations on a hand-built profile with a known answer.

use hood_model::profile::aggregate::{
    by_dso, by_function, by_process, call_tree, folded, intervals, totals, Filter, OffCpuGaps,
};
use hood_model::profile::{Func, Mode, Process, Profile, Sample};

fn func(name: &str, dso: &str, kernel: bool) -> Func {
    Func {
        name: name.into(),
        dso: dso.into(),
        kernel,
        resolved: true,
        inlined: false,
        start_line: 0,
    }
}

/// Process 10 "app": main→a (6 samples), main→b (3), main→b→sys_read[k] (1, kernel).
/// Process 20 "other": main (2). Idle: 4 samples with no frames.
fn profile() -> Profile {
    let mut p = Profile {
        funcs: vec![
            func("main", "app", false),
            func("a", "app", false),
            func("b", "libx.so", false),
            func("sys_read", "[kernel.kallsyms]", true),
        ],
        stacks: vec![vec![], vec![1, 0], vec![2, 0], vec![3, 2, 0], vec![0]],
        processes: vec![
            Process {
                pid: 10,
                comm: "app".into(),
                threads: vec![],
            },
            Process {
                pid: 20,
                comm: "other".into(),
                threads: vec![],
            },
        ],
        ..Profile::default()
    };
    let mut t = 0;
    let mut push = |pid, stack, mode, n| {
        for _ in 0..n {
            t += 1_000_000;
            p.samples.push(Sample {
                pid,
                tid: pid,
                cpu: 0,
                time: t,
                period: 1,
                mode,
                stack,
                locs: 0,
            });
        }
    };
    push(10, 1, Mode::User, 6);
    push(10, 2, Mode::User, 3);
    push(10, 3, Mode::Kernel, 1);
    push(20, 4, Mode::User, 2);
    push(0, 0, Mode::Idle, 4);
    p
}

#[test]
fn totals_and_flat_profiles() {
    let p = profile();
    let all = Filter::default();
    let t = totals(&p, &all);
    assert_eq!((t.samples, t.user, t.kernel, t.idle), (16, 11, 1, 4));
    let f = by_function(&p, &all);
    assert_eq!(f[0].key, Some(1));
    assert_eq!(f[0].count, 6);
    let procs = by_process(&p, &all);
    assert_eq!(
        procs.iter().map(|r| (r.key, r.count)).collect::<Vec<_>>(),
        vec![(10, 10), (0, 4), (20, 2)]
    );
    let d = by_dso(&p, &all);
    assert_eq!(d.iter().find(|r| r.key == "app").unwrap().count, 8);
    assert_eq!(d.iter().find(|r| r.key == "libx.so").unwrap().count, 3);
}

#[test]
fn filters_by_comm_pid_and_mode() {
    let p = profile();
    let app = Filter {
        comm: Some("app".into()),
        ..Filter::default()
    };
    assert_eq!(app.samples(&p).count(), 10);
    let idle = Filter {
        comm: Some("[idle]".into()),
        ..Filter::default()
    };
    assert_eq!(idle.samples(&p).count(), 4);
    let kernel = Filter {
        mode: Some(Mode::Kernel),
        ..Filter::default()
    };
    assert_eq!(kernel.samples(&p).count(), 1);
    let pid = Filter {
        pid: Some(20),
        ..Filter::default()
    };
    assert_eq!(pid.samples(&p).count(), 2);
}

#[test]
fn call_trees_sum_up() {
    let p = profile();
    let app = Filter {
        pid: Some(10),
        ..Filter::default()
    };
    let top = call_tree(&p, &app, true);
    assert_eq!(top.total, 10);
    assert_eq!(top.children.len(), 1);
    let main = &top.children[0];
    assert_eq!((main.func, main.total, main.self_count), (Some(0), 10, 0));
    assert_eq!(main.children[0].func, Some(1));
    assert_eq!(main.children[0].total, 6);
    let b = &main.children[1];
    assert_eq!((b.total, b.self_count, b.children[0].total), (4, 3, 1));
    let bottom = call_tree(&p, &app, false);
    let roots: Vec<(Option<u32>, u64)> =
        bottom.children.iter().map(|c| (c.func, c.total)).collect();
    assert_eq!(roots, vec![(Some(1), 6), (Some(2), 3), (Some(3), 1)]);
}

#[test]
fn folded_lines_mark_kernel_frames_and_sum_to_samples() {
    let p = profile();
    let lines = folded(&p, &Filter::default());
    let sum: u64 = lines.iter().map(|(_, n)| n).sum();
    assert_eq!(sum, 16);
    assert!(lines.contains(&("app;main;b;sys_read_[k]".to_string(), 1)));
    assert!(lines.contains(&("[idle];[unknown]".to_string(), 4)));
}

#[test]
fn intervals_measure_gaps_in_periods() {
    let p = profile();
    let iv = intervals(&p, 1_000_000);
    assert_eq!(iv.len(), 1);
    assert_eq!(
        (iv[0].count, iv[0].min_ns, iv[0].max_ns),
        (15, 1_000_000, 1_000_000)
    );
    assert_eq!(iv[0].delayed_share, 0.0);
}

/// A command's thread sampled every 1 ms that moves CPU 0 → 1 → 0: its samples are 1 ms
/// apart, and each move is a gap (counted on the CPU it moved to), not a long interval.
#[test]
fn a_commands_intervals_leave_out_cpu_migrations() {
    let mut p = profile();
    p.meta.mode = hood_model::profile::RecordMode::Command;
    p.samples.clear();
    let cpus = [0, 0, 0, 1, 1, 1, 0, 0, 0];
    for (k, &cpu) in cpus.iter().enumerate() {
        p.samples.push(sample(10, cpu, (k as u64 + 1) * 1_000_000));
    }
    let iv = intervals(&p, 1_000_000);
    let by_cpu: Vec<(u32, u64, u64, u64)> = iv
        .iter()
        .map(|c| (c.cpu, c.count, c.max_ns, c.off_cpu.migrated))
        .collect();
    // CPU 0: 2 + 2 intervals of 1 ms and the move back; CPU 1: 2 intervals and the move.
    assert_eq!(by_cpu, [(0, 4, 1_000_000, 1), (1, 2, 1_000_000, 1)]);
    assert!(iv.iter().all(|c| c.delayed_share == 0.0));
    // The same samples of a whole-system recording are per CPU: CPU 0's gap of 4 ms is
    // a long interval there.
    p.meta.mode = hood_model::profile::RecordMode::System;
    let iv = intervals(&p, 1_000_000);
    assert_eq!(iv[0].max_ns, 4_000_000);
    assert_eq!(iv[0].off_cpu, OffCpuGaps::default());
}

fn sample(tid: u32, cpu: u32, time: u64) -> Sample {
    Sample {
        pid: 10,
        tid,
        cpu,
        time,
        period: 1,
        mode: Mode::User,
        stack: 1,
        locs: 0,
    }
}

/// Two threads of a command taking turns on one CPU, 3 ms each, each sampled every 1 ms of
/// its own time: within a turn the samples are 1 ms apart (intervals); across the other's
/// turn a thread's gap holds the other's samples (shared), and the CPU's samples of two
/// threads are never paired.
#[test]
fn threads_taking_turns_on_one_cpu_share_it_without_late_samples() {
    let mut p = profile();
    p.meta.mode = hood_model::profile::RecordMode::Command;
    p.samples.clear();
    // Turns of 3 ms: thread 10 at 1, 2, 3 ms, thread 11 at 4, 5, 6 ms, ...; 4 turns each.
    for k in 0..24u64 {
        let tid = 10 + ((k / 3) % 2) as u32;
        p.samples.push(sample(tid, 0, (k + 1) * 1_000_000));
    }
    let iv = intervals(&p, 1_000_000);
    assert_eq!(iv.len(), 1);
    // Per thread: 4 turns of 2 intervals, and 3 gaps between its turns.
    assert_eq!(
        (iv[0].count, iv[0].max_ns, iv[0].delayed_share),
        (16, 1_000_000, 0.0)
    );
    assert_eq!(
        iv[0].off_cpu,
        OffCpuGaps {
            shared: 6,
            ..OffCpuGaps::default()
        }
    );
}

/// A thread sampled every 1 ms whose gaps of 3 ms hold an off-CPU stretch of its own in the
/// recording's switches: preempted (runnable) or blocked, each counted as such; without the
/// switches (nothing else was sampled in between), the same gap is a long interval.
#[test]
fn switches_tell_a_preempted_or_blocked_thread_from_a_late_sample() {
    let mut p = profile();
    p.meta.mode = hood_model::profile::RecordMode::Command;
    p.samples.clear();
    // Samples at 1, 2, 5, 6, 9, 10 ms; off CPU from 2.5 to 4.5 ms (runnable) and from 6.5
    // to 7.5 ms (blocked) then 7.5 to 8.5 ms (woken, runnable).
    for t in [1, 2, 5, 6, 9, 10] {
        p.samples.push(sample(10, 0, t * 1_000_000));
    }
    let long = intervals(&p, 1_000_000);
    assert_eq!((long[0].count, long[0].max_ns), (5, 3_000_000));
    assert!((long[0].delayed_share - 0.4).abs() < 1e-9);
    for (start, len, mode) in [
        (2_500_000, 2_000_000, Mode::Runnable),
        (6_500_000, 1_000_000, Mode::Blocked),
        (7_500_000, 1_000_000, Mode::Runnable),
    ] {
        p.off_cpu.push(Sample {
            time: start,
            period: len,
            mode,
            ..sample(10, 0, 0)
        });
    }
    let iv = intervals(&p, 1_000_000);
    assert_eq!(
        (iv[0].count, iv[0].max_ns, iv[0].delayed_share),
        (3, 1_000_000, 0.0)
    );
    assert_eq!(
        iv[0].off_cpu,
        OffCpuGaps {
            blocked: 1,
            preempted: 1,
            ..OffCpuGaps::default()
        }
    );
    // Another thread's stretch is not this thread's.
    for o in &mut p.off_cpu {
        o.tid = 11;
    }
    assert_eq!(intervals(&p, 1_000_000)[0].count, 5);
}
