//! Real-kernel tests of system-wide and attach sampling.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use hood_perf::{EventKind, PerfError, SamplingConfig, Session, Target};

fn cfg() -> SamplingConfig {
    SamplingConfig {
        freq_hz: 999,
        ..SamplingConfig::default()
    }
}

fn own_pid() -> i32 {
    std::process::id() as i32
}

#[test]
fn system_wide_samples_every_cpu() {
    if !privileged(0, "system_wide_samples_every_cpu") {
        return;
    }
    let mut s = Session::open(&cfg(), &Target::System).unwrap();
    assert_eq!(s.event(), EventKind::CpuClock);
    let attr = s.attr_bytes();
    assert_eq!(
        attr.len() as u32,
        u32_at(&attr, 4),
        "size field = byte count"
    );
    assert_eq!(u64_at(&attr, 24), s.sample_type());

    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = s.cpus().iter().map(|_| busy_thread(stop.clone())).collect();
    s.enable().unwrap();
    let mut got = Collected::default();
    collect(&mut s, Duration::from_millis(300), &mut got);
    s.disable().unwrap();
    drain(&mut s, &mut got);
    stop.store(true, Ordering::Relaxed);
    for (h, _) in busy {
        h.join().unwrap();
    }

    let recs = got.records();
    for &cpu in s.cpus() {
        let samples: Vec<Sample> = recs
            .get(&cpu)
            .map(|v| {
                v.iter()
                    .filter(|r| r.ty == RECORD_SAMPLE)
                    .map(sample)
                    .collect()
            })
            .unwrap_or_default();
        assert!(!samples.is_empty(), "no samples from busy CPU {cpu}");
        assert!(
            samples.iter().all(|x| x.cpu == cpu),
            "ring of CPU {cpu} holds another CPU's sample"
        );
        assert!(samples.iter().all(|x| x.period > 0));
        // Timestamps are CLOCK_MONOTONIC and rise within a ring.
        assert!(samples.windows(2).all(|w| w[0].time <= w[1].time));
    }
    let samples = got.samples();
    assert!(
        samples.iter().any(|(_, x)| x.pid as i32 == own_pid()),
        "the busy threads of pid {} were never sampled",
        own_pid()
    );
    let now = mono_ns();
    assert!(samples
        .iter()
        .all(|(_, x)| x.time <= now && now - x.time < 60_000_000_000));
}

#[test]
fn small_ring_wraps_into_whole_records() {
    if !privileged(0, "small_ring_wraps_into_whole_records") {
        return;
    }
    let c = SamplingConfig {
        ring_pages: 1,
        freq_hz: 4999,
        ..cfg()
    };
    let mut s = Session::open(&c, &Target::System).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = s.cpus().iter().map(|_| busy_thread(stop.clone())).collect();
    s.enable().unwrap();
    let mut got = Collected::default();
    collect(&mut s, Duration::from_millis(400), &mut got);
    s.disable().unwrap();
    drain(&mut s, &mut got);
    stop.store(true, Ordering::Relaxed);
    for (h, _) in busy {
        h.join().unwrap();
    }
    // `records()` walks every stream and fails on any split or torn record.
    let recs = got.records();
    let page = 4096;
    assert!(
        got.bytes > 4 * page * s.cpus().len(),
        "too little data to wrap: {}",
        got.bytes
    );
    assert!(
        got.wraps > 0,
        "no drain ever wrapped around a one-page ring"
    );
    let n: usize = recs
        .values()
        .map(|v| v.iter().filter(|r| r.ty == RECORD_SAMPLE).count())
        .sum();
    let lost: u64 = recs
        .values()
        .flat_map(|v| {
            v.iter()
                .filter(|r| r.ty == RECORD_LOST)
                .map(|r| u64_at(&r.body, 8))
        })
        .sum();
    println!(
        "{} bytes, {n} samples, {lost} lost, {} wrapped drains",
        got.bytes, got.wraps
    );
    assert!(n > 0);
}

#[test]
fn attach_to_own_pid_samples_busy_thread() {
    if !privileged(1, "attach_to_own_pid_samples_busy_thread") {
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (h, tid) = busy_thread(stop.clone());
    let mut s = Session::open(&cfg(), &Target::Tasks(vec![own_pid()])).unwrap();
    assert!(
        s.event_count() >= 2 * s.cpus().len(),
        "main and busy thread on every CPU"
    );
    s.enable().unwrap();
    let mut got = Collected::default();
    collect(&mut s, Duration::from_millis(300), &mut got);
    s.disable().unwrap();
    drain(&mut s, &mut got);
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();

    let samples = got.samples();
    assert!(!samples.is_empty());
    assert!(
        samples.iter().all(|(_, x)| x.pid as i32 == own_pid()),
        "a sample of another process leaked into an attach session"
    );
    let busy = samples.iter().filter(|(_, x)| x.tid == tid as u32).count();
    assert!(busy > 0, "no sample carries the busy thread's tid {tid}");
    assert!(samples.iter().all(|(ring, x)| x.cpu == *ring));
}

#[test]
fn disable_pauses_and_enable_resumes() {
    if !privileged(1, "disable_pauses_and_enable_resumes") {
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (h, tid) = busy_thread(stop.clone());
    let mut s = Session::open(&cfg(), &Target::Tasks(vec![own_pid()])).unwrap();
    let count = |got: &Collected| {
        got.samples()
            .iter()
            .filter(|(_, x)| x.tid == tid as u32)
            .count()
    };

    // Opened disabled: nothing before enable.
    std::thread::sleep(Duration::from_millis(150));
    let mut before = Collected::default();
    drain(&mut s, &mut before);
    assert_eq!(before.samples().len(), 0, "samples before enable()");

    s.enable().unwrap();
    let mut running = Collected::default();
    collect(&mut s, Duration::from_millis(200), &mut running);
    s.disable().unwrap();
    drain(&mut s, &mut running);
    assert!(count(&running) > 0, "no samples while enabled");

    std::thread::sleep(Duration::from_millis(300));
    let mut paused = Collected::default();
    drain(&mut s, &mut paused);
    assert_eq!(paused.samples().len(), 0, "samples arrived while paused");

    s.enable().unwrap();
    let mut resumed = Collected::default();
    collect(&mut s, Duration::from_millis(200), &mut resumed);
    s.disable().unwrap();
    drain(&mut s, &mut resumed);
    assert!(count(&resumed) > 0, "no samples after resume");
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
}

#[test]
fn hardware_event_opens_or_falls_back_with_note() {
    if !privileged(1, "hardware_event_opens_or_falls_back_with_note") {
        return;
    }
    for ev in [EventKind::Cycles, EventKind::Instructions] {
        let c = SamplingConfig { event: ev, ..cfg() };
        let s = Session::open(&c, &Target::Tasks(vec![own_pid()])).unwrap();
        if s.event() == ev {
            assert!(s.notes().iter().all(|n| !n.contains("PMU")));
        } else {
            assert_eq!(s.event(), EventKind::CpuClock);
            assert!(
                s.notes()
                    .iter()
                    .any(|n| n.contains(ev.name()) && n.contains("cpu-clock")),
                "fallback without a note: {:?}",
                s.notes()
            );
            // The stored attribute is the one really used: software cpu-clock.
            let attr = s.attr_bytes();
            assert_eq!(u32_at(&attr, 0), 1, "PERF_TYPE_SOFTWARE");
            assert_eq!(u64_at(&attr, 8), 0, "PERF_COUNT_SW_CPU_CLOCK");
        }
    }
}

#[test]
fn missing_pid_is_no_such_process() {
    let pid = vacant_pid();
    match Session::open(&cfg(), &Target::Tasks(vec![pid])) {
        Err(PerfError::NoSuchProcess(p)) => assert_eq!(p, pid),
        other => panic!("expected NoSuchProcess({pid}), got {other:?}"),
    }
    if !privileged(1, "missing_pid_is_no_such_process (child)") {
        return;
    }
    match Session::open(&cfg(), &Target::Child(pid)) {
        Err(PerfError::NoSuchProcess(p)) => assert_eq!(p, pid),
        other => panic!("expected NoSuchProcess({pid}), got {other:?}"),
    }
}

#[test]
fn bad_config_is_rejected() {
    let c = SamplingConfig {
        ring_pages: 3,
        ..cfg()
    };
    let e = Session::open(&c, &Target::System).unwrap_err();
    assert!(matches!(e, PerfError::InvalidConfig(_)), "{e}");
    assert!(e.to_string().contains("power of two"));
    assert!("bogus".parse::<EventKind>().is_err());
    for ev in [
        EventKind::CpuClock,
        EventKind::TaskClock,
        EventKind::Cycles,
        EventKind::Instructions,
    ] {
        assert_eq!(ev.to_string().parse::<EventKind>().unwrap(), ev);
    }
}

#[test]
fn duplicate_pids_open_each_thread_once() {
    if !privileged(1, "duplicate_pids_open_each_thread_once") {
        return;
    }
    // A single-threaded process listed twice.
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let s = Session::open(&cfg(), &Target::Tasks(vec![pid, pid]));
    child.kill().unwrap();
    child.wait().unwrap();
    let s = s.unwrap();
    assert_eq!(
        s.event_count(),
        s.cpus().len(),
        "one event per CPU for one thread"
    );
}

#[test]
fn frequency_above_kernel_cap_is_explained() {
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let c = SamplingConfig {
        freq_hz: max + 1,
        ..cfg()
    };
    let e = Session::open(&c, &Target::Tasks(vec![own_pid()])).unwrap_err();
    assert!(matches!(e, PerfError::InvalidConfig(_)), "{e}");
    assert!(e.to_string().contains("perf_event_max_sample_rate"), "{e}");
}

fn vacant_pid() -> i32 {
    let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(32768);
    (2..max)
        .rev()
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        .expect("some pid is free")
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// With deferred off-CPU stacks, the switch and wake-up samples are laid out apart from the
/// timer's ([`Session::layouts`]): no stack copy size, one user register, and no empty call
/// chain (a task session's whole-CPU wake-ups keep their kernel chain). Each record of those
/// events has exactly that layout, and the id at its start names it; system-wide and task
/// sessions alike.
#[test]
fn deferred_off_cpu_tracepoints_have_their_own_smaller_layout() {
    if !privileged(
        0,
        "deferred_off_cpu_tracepoints_have_their_own_smaller_layout",
    ) {
        return;
    }
    for target in [Target::System, Target::Tasks(vec![own_pid()])] {
        deferred_layouts(&target);
    }
}

fn deferred_layouts(target: &Target) {
    let c = SamplingConfig {
        user_stack: hood_perf::UserStack::AUTO,
        off_cpu: true,
        off_cpu_min_ns: 10_000,
        ..cfg()
    };
    let mut s = Session::open(&c, target).unwrap();
    assert!(s.deferred_stack_ids().is_some(), "{:?}", s.notes());
    let layouts: std::collections::BTreeMap<u64, Vec<u8>> = s.layouts().iter().cloned().collect();
    let cpus = s.cpus().len();
    match target {
        // A switch and a wake-up event per CPU.
        Target::System => assert_eq!(layouts.len(), 2 * cpus),
        // A switch event per thread and CPU, a whole-CPU wake-up event per CPU.
        _ => assert!(layouts.len() >= 2 * cpus, "{}", layouts.len()),
    }
    let (regs_user, stack_user, callchain) = (1u64 << 12, 1u64 << 13, 1u64 << 5);
    let mut chained = 0;
    for a in layouts.values() {
        let st = u64_at(a, 24);
        assert_eq!(st & stack_user, 0, "{st:#x}");
        assert_ne!(st & regs_user, 0, "{st:#x}");
        chained += usize::from(st & callchain != 0);
        assert_eq!(u64_at(a, 80), 1 << 8, "only the user IP");
        assert_eq!(u32_at(a, 88), 0, "no stack copy");
    }
    match target {
        Target::System => assert_eq!(chained, 0),
        _ => assert_eq!(
            chained, cpus,
            "the whole-CPU wake-ups keep their kernel chain"
        ),
    }
    let tp = s.off_cpu().unwrap().clone();
    let sleeper = std::thread::spawn(|| {
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    s.enable().unwrap();
    let mut got = Collected::default();
    collect(&mut s, Duration::from_millis(300), &mut got);
    s.disable().unwrap();
    drain(&mut s, &mut got);
    sleeper.join().unwrap();
    let mut seen = [0usize; 2];
    for recs in got.records().values() {
        for r in recs.iter().filter(|r| r.ty == RECORD_SAMPLE) {
            let Some(a) = layouts.get(&u64_at(&r.body, 0)) else {
                continue;
            };
            // IDENTIFIER, IP, TID, TIME, CPU, PERIOD; the call chain if kept; the raw field;
            // then the user registers' ABI word and, for a task with a user context, its IP.
            let mut at = 48;
            if u64_at(a, 24) & callchain != 0 {
                at += 8 + 8 * u64_at(&r.body, at) as usize;
            }
            let raw = u32_at(&r.body, at) as usize;
            let common_type = u64::from(u16::from_ne_bytes([r.body[at + 4], r.body[at + 5]]));
            let kind = [tp.switch_id, tp.waking_id]
                .iter()
                .position(|&id| id == common_type);
            let kind = kind.unwrap_or_else(|| panic!("common_type {common_type}"));
            seen[kind] += 1;
            let end = at + 4 + raw;
            let abi = u64_at(&r.body, end);
            let regs = if abi == 0 { 0 } else { 8 };
            assert_eq!(r.body.len(), end + 8 + regs, "a record of {common_type}");
        }
    }
    assert!(
        seen[0] > 0 && seen[1] > 0,
        "switches and wake-ups: {seen:?}"
    );
}

/// A task session whose BPF program writes its wake-ups (`off_cpu_bpf_wakeups`): one output
/// per CPU, laid out as the whole-CPU wake-up events were (the waker's kernel call chain),
/// each record in `sched_waking`'s layout with the waker's name after it. A thread of ours
/// reading a pipe that another process (a shell, started before the session, so not
/// followed) writes gets its wake-ups, named after the shell; the shell itself, woken
/// whenever one of its `sleep`s exits, gets none: no wake-up of a thread the session does
/// not trace is recorded.
#[test]
fn a_task_sessions_bpf_wakeups_are_of_its_own_threads_only() {
    if !privileged(0, "a_task_sessions_bpf_wakeups_are_of_its_own_threads_only") {
        return;
    }
    use std::io::Read;
    let mut shell = std::process::Command::new("sh")
        .args(["-c", "while :; do echo x; sleep 0.002; done"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let shell_pid = shell.id();
    let mut pipe = shell.stdout.take().unwrap();
    let c = SamplingConfig {
        user_stack: hood_perf::UserStack::AUTO,
        off_cpu: true,
        off_cpu_min_ns: 10_000,
        off_cpu_bpf_wakeups: true,
        ..cfg()
    };
    let mut s = Session::open(&c, &Target::Tasks(vec![own_pid()])).unwrap();
    let ids: Vec<u64> = s.wake_output_ids().to_vec();
    assert_eq!(ids.len(), s.cpus().len(), "{:?}", s.notes());
    let layouts: std::collections::BTreeMap<u64, Vec<u8>> = s.layouts().iter().cloned().collect();
    let callchain = 1u64 << 5;
    for id in &ids {
        let st = u64_at(&layouts[id], 24);
        assert_ne!(st & callchain, 0, "the waker's kernel chain");
    }
    let tp = s.off_cpu().unwrap().clone();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() } as u32;
            let mut b = [0u8; 64];
            while !stop.load(Ordering::Relaxed) {
                if pipe.read(&mut b).unwrap_or(0) == 0 {
                    break;
                }
            }
            tid
        })
    };
    s.enable().unwrap();
    let mut got = Collected::default();
    collect(&mut s, Duration::from_millis(400), &mut got);
    s.disable().unwrap();
    drain(&mut s, &mut got);
    stop.store(true, Ordering::Relaxed);
    let _ = shell.kill();
    let _ = shell.wait();
    let reader_tid = reader.join().unwrap();
    let (mut by_shell, mut all) = (0, 0);
    for recs in got.records().values() {
        for r in recs.iter().filter(|r| r.ty == RECORD_SAMPLE) {
            let id = u64_at(&r.body, 0);
            let Some(a) = layouts.get(&id) else {
                continue;
            };
            let mut at = 48;
            if u64_at(a, 24) & callchain != 0 {
                at += 8 + 8 * u64_at(&r.body, at) as usize;
            }
            let size = u32_at(&r.body, at) as usize;
            let raw = &r.body[at + 4..at + 4 + size];
            let common_type = u64::from(u16::from_ne_bytes([raw[0], raw[1]]));
            if common_type != tp.waking_id {
                continue;
            }
            // Only the BPF outputs write wake-ups in this session.
            assert!(ids.contains(&id), "a wake-up from event {id}");
            // 36 bytes of fields, the waker's name at 40, padded as the kernel pads a raw
            // field (its size word and data end on 8 bytes).
            assert_eq!(size, 60, "the record's size");
            assert_eq!(raw[2], 0, "common_flags: the reader sets them");
            let wakee = u32::from_ne_bytes(raw[24..28].try_into().unwrap());
            assert_ne!(
                wakee, shell_pid,
                "the untraced shell's wake-up was recorded"
            );
            let waker = &raw[40..56];
            let waker = &waker[..waker.iter().position(|&b| b == 0).unwrap_or(16)];
            all += 1;
            if wakee == reader_tid && waker == b"sh" {
                by_shell += 1;
            }
        }
    }
    assert!(
        by_shell > 10,
        "{by_shell} of {all} wake-ups of the reader by sh"
    );
}
