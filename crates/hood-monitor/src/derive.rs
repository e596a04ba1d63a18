//! Turn raw cumulative snapshots into the [`SystemView`]: unit conversion, and percentages and
//! rates from the difference of two snapshots.

use std::collections::{BTreeMap, HashMap};

use crate::raw::{
    CgroupRaw, CpuRaw, CpuTicks, CtxSwitches, DiskRaw, ExitRaw, ExitsRaw, IoCounters, IrqLine,
    IrqTimeRaw, NetRaw, PressureRaw, PsiLine, PsiRaw, Snapshot, TaskRaw, WholeCounts,
};
use crate::view::*;

/// Derive the view of `cur`, with rates over the interval since `prev` when given.
///
/// Tasks are matched across snapshots by pid and start time, so a reused pid starts fresh.
/// Counters that went backwards (a reset, a different task) give no rate rather than a wrong one.
pub fn derive(prev: Option<&Snapshot>, cur: &Snapshot) -> SystemView {
    let interval_s = prev
        .map(|p| cur.taken_ns.saturating_sub(p.taken_ns) as f64 / 1e9)
        .filter(|s| *s > 0.0);
    let iv = prev.zip(interval_s);
    let hz = cur.clk_tck.max(1);
    let mem_total = cur.mem.total_kb.saturating_mul(1024);

    let mut tasks = derive_tasks(
        iv.map(|(p, s)| (&p.tasks[..], s)),
        &cur.tasks,
        cur,
        mem_total,
    );
    let counted;
    let whole = match &cur.whole {
        Some(w) => w,
        None => {
            counted = whole_counts(cur);
            &counted
        }
    };
    let exits = cur.exits.as_ref().map(|ex| {
        let ended = derive_exits(iv, cur, ex);
        let view = ExitsView {
            processes: whole.ended,
            overruns: ex.overruns,
            dropped: ex.dropped,
            unavailable: ex.unavailable.clone(),
        };
        tasks.extend(ended);
        view
    });
    let threads = cur.threads.as_ref().map(|th| {
        let prev_th = iv.and_then(|(p, s)| p.threads.as_deref().map(|t| (t, s)));
        derive_tasks(prev_th, th, cur, mem_total)
    });

    let threads_by_state = cur.threads.as_ref().map(|th| {
        let mut m = BTreeMap::new();
        for t in th {
            *m.entry(t.state.to_string()).or_insert(0) += 1;
        }
        m
    });

    let prev_cpus: HashMap<u32, &CpuRaw> = prev
        .map(|p| p.cpus.iter().map(|c| (c.id, c)).collect())
        .unwrap_or_default();
    let per_cpu = cur
        .cpus
        .iter()
        .map(|c| CpuView {
            id: Some(c.id),
            mhz: c.mhz,
            time_ms: times_ms(&c.ticks, hz),
            percent: prev_cpus
                .get(&c.id)
                .and_then(|p| cpu_percent(&p.ticks, &c.ticks)),
        })
        .collect();
    let total = CpuView {
        id: None,
        mhz: None,
        time_ms: times_ms(&cur.cpu_total, hz),
        percent: prev.and_then(|p| cpu_percent(&p.cpu_total, &cur.cpu_total)),
    };

    let m = &cur.mem;
    let cache_kb = m.cached_kb.saturating_add(m.sreclaimable_kb);
    let used_kb = m
        .total_kb
        .saturating_sub(m.free_kb)
        .saturating_sub(m.buffers_kb)
        .saturating_sub(cache_kb);
    let physmem = MemView {
        total: mem_total,
        used: used_kb * 1024,
        free: m.free_kb * 1024,
        buffers: m.buffers_kb * 1024,
        cache: cache_kb * 1024,
        available: m.available_kb.unwrap_or(m.free_kb) * 1024,
        swap_total: m.swap_total_kb * 1024,
        swap_used: m.swap_total_kb.saturating_sub(m.swap_free_kb) * 1024,
        swap_free: m.swap_free_kb * 1024,
    };

    let pressure = cur.pressure.map(|pr| {
        let before = iv.and_then(|(p, s)| p.pressure.map(|q| (q, s)));
        derive_pressure(&pr, before.as_ref().map(|(b, s)| (b, *s)))
    });
    let cgroups = cur
        .cgroups
        .as_ref()
        .map(|cgs| derive_cgroups(iv, cgs, &whole.cgroup_tasks));
    let disks = per_device(cur, iv, |s| s.disks.as_deref(), |d| &d.name, disk_view);
    let nets = per_device(cur, iv, |s| s.nets.as_deref(), |n| &n.name, net_view);

    SystemView {
        schema_version: SCHEMA_VERSION,
        interval_s,
        uptime: UptimeView {
            seconds: cur.uptime_s,
            wall_time_s: cur.wall_time_s,
            utc_offset_s: cur.utc_offset_s,
        },
        load: LoadView {
            one: cur.load.one,
            five: cur.load.five,
            fifteen: cur.load.fifteen,
            runnable: cur.load.runnable,
            total: cur.load.total,
        },
        cpus: CpusView {
            total,
            per_cpu,
            context_switches: cur.ctxt,
            context_switches_per_s: iv.and_then(|(p, s)| rate(p.ctxt, cur.ctxt, s)),
        },
        physmem,
        counts: CountsView {
            tasks: whole.tasks,
            tasks_by_state: whole.tasks_by_state.clone(),
            threads: whole.threads,
            threads_running: cur.load.runnable,
            threads_by_state,
        },
        tasks,
        threads,
        exceptions: ExceptionsView {
            interrupts: derive_irqs(iv.map(|(p, s)| (&p.interrupts[..], s)), &cur.interrupts),
            softirqs: derive_irqs(iv.map(|(p, s)| (&p.softirqs[..], s)), &cur.softirqs),
            irq_time: cur.irq_time.as_ref().map(|it| {
                let prev_it = iv.and_then(|(p, s)| p.irq_time.as_ref().map(|x| (x, s)));
                derive_irq_time(prev_it, it, cur.cpus.len().max(1))
            }),
        },
        pressure,
        disks,
        nets,
        exits,
        cgroups,
    }
}

/// A pressure view: the kernel's averages, and the share of the interval stalled from the
/// totals of `before`.
fn derive_pressure(pr: &PressureRaw, before: Option<(&PressureRaw, f64)>) -> PressureView {
    let line = |l: Option<PsiLine>, b: Option<PsiLine>, s: Option<f64>| {
        l.map(|l| PsiLineView {
            avg10: l.avg10,
            avg60: l.avg60,
            avg300: l.avg300,
            total_us: l.total_us,
            percent: b.zip(s).and_then(|(b, s)| {
                (l.total_us >= b.total_us).then(|| (l.total_us - b.total_us) as f64 / 1e4 / s)
            }),
        })
    };
    let res = |r: Option<PsiRaw>, b: Option<PsiRaw>, s: Option<f64>| {
        r.map(|r| PsiView {
            some: line(r.some, b.and_then(|b| b.some), s),
            full: line(r.full, b.and_then(|b| b.full), s),
        })
    };
    let s = before.map(|(_, s)| s);
    let b = before.map(|(b, _)| b);
    PressureView {
        cpu: res(pr.cpu, b.and_then(|b| b.cpu), s),
        memory: res(pr.memory, b.and_then(|b| b.memory), s),
        io: res(pr.io, b.and_then(|b| b.io), s),
    }
}

/// What a cgroup path says it is: a container's or a service's name where it shows one.
pub fn cgroup_name(path: &str) -> String {
    let last = path.rsplit('/').next().unwrap_or("");
    let id = |s: &str| s.chars().take(12).collect::<String>();
    if let Some(rest) = last.strip_prefix("docker-") {
        return format!("docker:{}", id(rest.trim_end_matches(".scope")));
    }
    if let Some(rest) = last.strip_prefix("libpod-") {
        return format!("podman:{}", id(rest.trim_end_matches(".scope")));
    }
    if let Some(rest) = last.strip_prefix("cri-containerd-") {
        return format!("containerd:{}", id(rest.trim_end_matches(".scope")));
    }
    if path.contains("kubepods") {
        if let Some(pod) = path
            .split('/')
            .rev()
            .find(|c| c.contains("-pod") || c.starts_with("pod"))
        {
            let pod = pod.rsplit("-pod").next().unwrap_or(pod);
            return format!("kubepods:{}", pod.trim_end_matches(".slice"));
        }
    }
    if let Some(svc) = last.strip_suffix(".service") {
        return format!("service:{svc}");
    }
    if path.rsplit('/').next() == Some("") {
        return "/".into();
    }
    last.to_string()
}

/// The counts a view makes over all of `cur`'s processes: by state, threads, per cgroup (in
/// `cur.cgroups`' order) and ended ones. A snapshot holding only some processes carries them
/// in [`Snapshot::whole`].
pub fn whole_counts(cur: &Snapshot) -> WholeCounts {
    let mut tasks_by_state = BTreeMap::new();
    for t in &cur.tasks {
        *tasks_by_state.entry(t.state.to_string()).or_insert(0) += 1;
    }
    let cgroup_tasks = cur
        .cgroups
        .as_deref()
        .unwrap_or(&[])
        .iter()
        .map(|c| {
            let under = |p: &str| {
                c.path == "/"
                    || p == c.path
                    || p.strip_prefix(c.path.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            };
            cur.tasks
                .iter()
                .filter(|t| t.cgroup.as_deref().is_some_and(under))
                .count() as u32
        })
        .collect();
    // As derive_exits counts them: by process, less those still alive.
    let ended = cur.exits.as_ref().map_or(0, |ex| {
        let alive: std::collections::HashSet<u32> = cur.tasks.iter().map(|t| t.tgid).collect();
        ex.tasks
            .iter()
            .filter(|e| !alive.contains(&e.tgid))
            .map(|e| e.tgid)
            .collect::<std::collections::HashSet<u32>>()
            .len() as u32
    });
    WholeCounts {
        tasks: cur.tasks.len() as u32,
        tasks_by_state,
        threads: cur.tasks.iter().map(|t| t.num_threads).sum(),
        cgroup_tasks,
        ended,
    }
}

fn derive_cgroups(
    iv: Option<(&Snapshot, f64)>,
    cgs: &[CgroupRaw],
    counts: &[u32],
) -> Vec<CgroupView> {
    let before: HashMap<&str, &CgroupRaw> = iv
        .and_then(|(p, _)| p.cgroups.as_ref())
        .map(|v| v.iter().map(|c| (c.path.as_str(), c)).collect())
        .unwrap_or_default();
    let secs = iv.map(|(_, s)| s);
    let mut out: Vec<CgroupView> = cgs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let b = before.get(c.path.as_str()).copied();
            let pct = |a: Option<u64>, now: u64| {
                secs.zip(a)
                    .and_then(|(s, a)| now.checked_sub(a).map(|d| d as f64 / 1e6 / s * 100.0))
            };
            CgroupView {
                path: c.path.clone(),
                name: cgroup_name(&c.path),
                depth: c.path.split('/').filter(|p| !p.is_empty()).count() as u32,
                tasks: counts.get(i).copied().unwrap_or(0),
                cpu_time_ms: c.usage_us / 1000,
                cpu_percent: pct(b.map(|b| b.usage_us), c.usage_us),
                user_percent: pct(b.map(|b| b.user_us), c.user_us),
                kernel_percent: pct(b.map(|b| b.system_us), c.system_us),
                memory_bytes: c.memory_bytes,
                read_bytes_per_s: secs
                    .zip(b.and_then(|b| b.io_bytes).zip(c.io_bytes))
                    .and_then(|(s, (b, n))| rate(b.0, n.0, s)),
                write_bytes_per_s: secs
                    .zip(b.and_then(|b| b.io_bytes).zip(c.io_bytes))
                    .and_then(|(s, (b, n))| rate(b.1, n.1, s)),
                pressure: derive_pressure(&c.pressure, b.zip(secs).map(|(b, s)| (&b.pressure, s))),
            }
        })
        .collect();
    // Tree order: a parent before its children.
    out.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
    out
}

/// A task's (user, kernel) µs: its scheduler runtime split in the ratio of its sampled user
/// and kernel times, or those times when there is no runtime.
fn split_runtime(e: &ExitRaw) -> (u64, u64) {
    let sampled = e.utime_us.saturating_add(e.stime_us);
    if e.runtime_ns == 0 {
        return (e.utime_us, e.stime_us);
    }
    let total = e.runtime_ns / 1000;
    if sampled == 0 {
        return (total, 0);
    }
    let user = (u128::from(total) * u128::from(e.utime_us) / u128::from(sampled)) as u64;
    (user, total - user)
}

/// The processes that ended since `prev` (from `cur.exits`), one view each, with what they
/// used of the interval: everything for a process that started within it, the rest since
/// `prev` for one that was in it. A process's threads are reported one by one and added up;
/// a process still in `cur` (its main thread ended before the others) is not ended, and its
/// threads' time is in its `/proc` times already. The threads that ended at earlier snapshots
/// come as one `earlier_threads` report: with them the process's whole-life total is known,
/// and its time in the interval is that total less its `/proc` times at `prev` (which hold
/// those threads too). Without them a multi-threaded process lost the interval it ended in.
fn derive_exits(iv: Option<(&Snapshot, f64)>, cur: &Snapshot, ex: &ExitsRaw) -> Vec<TaskView> {
    let alive: HashMap<u32, ()> = cur.tasks.iter().map(|t| (t.tgid, ())).collect();
    let mut by_tgid: BTreeMap<u32, Vec<&ExitRaw>> = BTreeMap::new();
    for e in &ex.tasks {
        if !alive.contains_key(&e.tgid) {
            by_tgid.entry(e.tgid).or_default().push(e);
        }
    }
    let hz = cur.clk_tck.max(1);
    let before: HashMap<u32, &TaskRaw> = iv
        .map(|(p, _)| p.tasks.iter().map(|t| (t.pid, t)).collect())
        .unwrap_or_default();
    let us = |ticks: u64| ticks.saturating_mul(1_000_000) / hz;
    by_tgid
        .into_iter()
        .map(|(tgid, recs)| {
            // The main thread's report names the process; without it, the first one does.
            let tasks: Vec<&ExitRaw> = recs
                .iter()
                .copied()
                .filter(|e| !e.earlier_threads)
                .collect();
            let main = tasks
                .iter()
                .find(|e| e.pid == tgid)
                .or(tasks.first())
                .unwrap_or(&recs[0]);
            let sum =
                |f: &dyn Fn(&ExitRaw) -> u64| recs.iter().fold(0u64, |a, e| a.saturating_add(f(e)));
            // As /proc does: the scheduler's time on CPU, split in the ratio of the sampled
            // user and kernel times (those alone are off by ticks for a short task).
            let (utime, stime) = recs.iter().fold((0u64, 0u64), |(u, s), e| {
                let (eu, es) = split_runtime(e);
                (u.saturating_add(eu), s.saturating_add(es))
            });
            let ctx = CtxSwitches {
                voluntary: sum(&|e| e.ctx.voluntary),
                involuntary: sum(&|e| e.ctx.involuntary),
            };
            let io = IoCounters {
                rchar: sum(&|e| e.io.rchar),
                wchar: sum(&|e| e.io.wchar),
                syscr: sum(&|e| e.io.syscr),
                syscw: sum(&|e| e.io.syscw),
                read_bytes: sum(&|e| e.io.read_bytes),
                write_bytes: sum(&|e| e.io.write_bytes),
            };
            // The same process in the previous snapshot: same pid, started the same second
            // (the report's start is wall-clock seconds, /proc's ticks after boot).
            let was = iv.and_then(|(p, _)| {
                let b = before.get(&tgid)?;
                let boot = p.wall_time_s as f64 - p.uptime_s;
                let start = boot + b.start_time as f64 / p.clk_tck.max(1) as f64;
                ((start - main.start_s as f64).abs() <= 2.0).then_some(*b)
            });
            let secs = iv.map(|(_, s)| s);
            let pct = |before_us: u64, now_us: u64| {
                secs.map(|s| now_us.saturating_sub(before_us) as f64 / 1e6 / s * 100.0)
            };
            let (bu, bs) = was.map_or((0, 0), |b| (us(b.utime), us(b.stime)));
            let user_percent = pct(bu, utime);
            let kernel_percent = pct(bs, stime);
            let bctx = was.and_then(|b| b.ctx).unwrap_or_default();
            let bio = was.and_then(|b| b.io).unwrap_or_default();
            TaskView {
                pid: tgid,
                tgid,
                ppid: main.ppid,
                name: main.name.clone(),
                cmdline: was.and_then(|b| b.cmdline.as_ref().map(|c| c.join(" "))),
                uid: Some(main.uid),
                user: main.user.clone(),
                state: "X".into(),
                threads: tasks.len() as u32,
                priority: was.map_or(0, |b| b.priority),
                nice: main.nice,
                virt_bytes: 0,
                res_bytes: 0,
                mem_percent: 0.0,
                user_time_ms: utime / 1000,
                kernel_time_ms: stime / 1000,
                cpu_percent: user_percent.zip(kernel_percent).map(|(u, k)| u + k),
                user_percent,
                kernel_percent,
                processor: was.map_or(-1, |b| b.processor),
                ctx_switches: Some(ctx_view(ctx, bctx, secs)),
                io: Some(io_view(io, bio, secs)),
                exited: true,
                cgroup: was.and_then(|b| b.cgroup.clone()),
                start_ticks: was.map_or(0, |b| b.start_time),
            }
        })
        .collect()
}

/// A task's context switches, with their rates over the `secs` since `before` (the counts
/// then; zero when not known).
fn ctx_view(c: CtxSwitches, before: CtxSwitches, secs: Option<f64>) -> CtxView {
    let r = |b: u64, c: u64| secs.and_then(|s| rate(b, c, s));
    CtxView {
        voluntary: c.voluntary,
        involuntary: c.involuntary,
        voluntary_per_s: r(before.voluntary, c.voluntary),
        involuntary_per_s: r(before.involuntary, c.involuntary),
    }
}

/// A task's I/O counters, with their rates over the `secs` since `before` (the counters then;
/// zero when not known).
fn io_view(io: IoCounters, before: IoCounters, secs: Option<f64>) -> IoView {
    let r = |b: u64, c: u64| secs.and_then(|s| rate(b, c, s));
    IoView {
        syscr: io.syscr,
        syscw: io.syscw,
        rchar: io.rchar,
        wchar: io.wchar,
        read_bytes: io.read_bytes,
        write_bytes: io.write_bytes,
        syscr_per_s: r(before.syscr, io.syscr),
        syscw_per_s: r(before.syscw, io.syscw),
        rchar_per_s: r(before.rchar, io.rchar),
        wchar_per_s: r(before.wchar, io.wchar),
    }
}

/// A disk's view, with its rates since `b` (the disk at the interval's start, and the
/// interval's seconds).
fn disk_view(d: &DiskRaw, b: Option<(&DiskRaw, f64)>) -> DiskView {
    DiskView {
        name: d.name.clone(),
        reads: d.reads,
        writes: d.writes,
        read_bytes: d.read_sectors.saturating_mul(512),
        write_bytes: d.write_sectors.saturating_mul(512),
        in_flight: d.in_flight,
        reads_per_s: b.and_then(|(b, s)| rate(b.reads, d.reads, s)),
        writes_per_s: b.and_then(|(b, s)| rate(b.writes, d.writes, s)),
        read_bytes_per_s: b
            .and_then(|(b, s)| rate(b.read_sectors, d.read_sectors, s))
            .map(|r| r * 512.0),
        write_bytes_per_s: b
            .and_then(|(b, s)| rate(b.write_sectors, d.write_sectors, s))
            .map(|r| r * 512.0),
        busy_percent: b
            .and_then(|(b, s)| rate(b.io_ms, d.io_ms, s))
            .map(|ms| (ms / 10.0).min(100.0)),
    }
}

/// A network interface's view, with its rates since `b` (the interface at the interval's
/// start, and the interval's seconds).
fn net_view(n: &NetRaw, b: Option<(&NetRaw, f64)>) -> NetView {
    NetView {
        name: n.name.clone(),
        rx_bytes: n.rx_bytes,
        tx_bytes: n.tx_bytes,
        rx_packets: n.rx_packets,
        tx_packets: n.tx_packets,
        rx_errors: n.rx_errs.saturating_add(n.rx_drop),
        tx_errors: n.tx_errs.saturating_add(n.tx_drop),
        rx_bytes_per_s: b.and_then(|(b, s)| rate(b.rx_bytes, n.rx_bytes, s)),
        tx_bytes_per_s: b.and_then(|(b, s)| rate(b.tx_bytes, n.tx_bytes, s)),
        rx_packets_per_s: b.and_then(|(b, s)| rate(b.rx_packets, n.rx_packets, s)),
        tx_packets_per_s: b.and_then(|(b, s)| rate(b.tx_packets, n.tx_packets, s)),
    }
}

/// Each device (disk, network interface) of the snapshot `cur` lists (`list`) made into its
/// view by `view`, with the same-named device of the interval's start and the interval's
/// seconds when both are known (`iv`); `None` when `cur` has no such list.
fn per_device<'a, T: 'a, V>(
    cur: &'a Snapshot,
    iv: Option<(&'a Snapshot, f64)>,
    list: fn(&Snapshot) -> Option<&[T]>,
    name: fn(&T) -> &String,
    view: impl Fn(&'a T, Option<(&'a T, f64)>) -> V,
) -> Option<Vec<V>> {
    let before: HashMap<&str, (&T, f64)> = iv
        .and_then(|(p, s)| list(p).map(|l| l.iter().map(move |d| (name(d).as_str(), (d, s)))))
        .into_iter()
        .flatten()
        .collect();
    let now = list(cur)?;
    Some(
        now.iter()
            .map(|d| view(d, before.get(name(d).as_str()).copied()))
            .collect(),
    )
}

fn rate(prev: u64, cur: u64, secs: f64) -> Option<f64> {
    cur.checked_sub(prev).map(|d| d as f64 / secs)
}

fn ticks_ms(t: u64, hz: u64) -> u64 {
    t.saturating_mul(1000) / hz
}

fn times_ms(t: &CpuTicks, hz: u64) -> CpuTimesMs {
    CpuTimesMs {
        busy: ticks_ms(t.busy(), hz),
        idle: ticks_ms(t.idle_all(), hz),
        user: ticks_ms(t.user.saturating_add(t.nice), hz),
        nice: ticks_ms(t.nice, hz),
        system: ticks_ms(t.system, hz),
        irq: ticks_ms(t.irq, hz),
        softirq: ticks_ms(t.softirq, hz),
        steal: ticks_ms(t.steal, hz),
        iowait: ticks_ms(t.iowait, hz),
    }
}

fn cpu_percent(p: &CpuTicks, c: &CpuTicks) -> Option<CpuPercent> {
    let total = c.total().checked_sub(p.total())?;
    if total == 0 {
        return None;
    }
    let pc = |a: u64, b: u64| b.saturating_sub(a) as f64 * 100.0 / total as f64;
    Some(CpuPercent {
        busy: pc(p.busy(), c.busy()),
        idle: pc(p.idle_all(), c.idle_all()),
        user: pc(p.user + p.nice, c.user + c.nice),
        nice: pc(p.nice, c.nice),
        system: pc(p.system, c.system),
        irq: pc(p.irq, c.irq),
        softirq: pc(p.softirq, c.softirq),
        steal: pc(p.steal, c.steal),
        iowait: pc(p.iowait, c.iowait),
    })
}

fn derive_tasks(
    prev: Option<(&[TaskRaw], f64)>,
    cur: &[TaskRaw],
    snap: &Snapshot,
    mem_total: u64,
) -> Vec<TaskView> {
    let hz = snap.clk_tck.max(1);
    let index: HashMap<u32, &TaskRaw> = prev
        .map(|(p, _)| p.iter().map(|t| (t.pid, t)).collect())
        .unwrap_or_default();
    let secs = prev.map(|(_, s)| s);
    cur.iter()
        .map(|t| {
            let before = index
                .get(&t.pid)
                .filter(|b| b.start_time == t.start_time)
                .copied();
            let pct = |a: u64, b: u64| -> Option<f64> {
                let s = secs?;
                Some(b.checked_sub(a)? as f64 / hz as f64 / s * 100.0)
            };
            // A task new since the previous snapshot is charged from zero: it started within
            // the interval, so all its CPU time falls inside it.
            let (pu, ps) = before.map(|b| (b.utime, b.stime)).unwrap_or((0, 0));
            let user_percent = pct(pu, t.utime);
            let kernel_percent = pct(ps, t.stime);
            let cpu_percent = user_percent.zip(kernel_percent).map(|(u, k)| u + k);
            let res_bytes = t.rss_pages.saturating_mul(snap.page_size);
            TaskView {
                pid: t.pid,
                tgid: t.tgid,
                ppid: t.ppid,
                name: t.name.clone(),
                cmdline: t.cmdline.as_ref().map(|c| c.join(" ")),
                uid: t.uid,
                user: t.user.clone(),
                state: t.state.to_string(),
                threads: t.num_threads,
                priority: t.priority,
                nice: t.nice,
                virt_bytes: t.vsize,
                res_bytes,
                mem_percent: if mem_total > 0 {
                    res_bytes as f64 * 100.0 / mem_total as f64
                } else {
                    0.0
                },
                user_time_ms: ticks_ms(t.utime, hz),
                kernel_time_ms: ticks_ms(t.stime, hz),
                cpu_percent,
                user_percent,
                kernel_percent,
                processor: t.processor,
                ctx_switches: t
                    .ctx
                    .map(|c| ctx_view(c, before.and_then(|b| b.ctx).unwrap_or_default(), secs)),
                io: t
                    .io
                    .map(|io| io_view(io, before.and_then(|b| b.io).unwrap_or_default(), secs)),
                exited: false,
                cgroup: t.cgroup.clone(),
                start_ticks: t.start_time,
            }
        })
        .collect()
}

fn derive_irqs(prev: Option<(&[IrqLine], f64)>, cur: &[IrqLine]) -> Vec<IrqView> {
    let index: HashMap<&str, &IrqLine> = prev
        .map(|(p, _)| p.iter().map(|l| (l.id.as_str(), l)).collect())
        .unwrap_or_default();
    cur.iter()
        .map(|l| {
            let total: u64 = l.per_cpu.iter().sum();
            let before = index.get(l.id.as_str());
            let per_cpu_per_s = prev.zip(before).and_then(|((_, s), b)| {
                (b.per_cpu.len() == l.per_cpu.len())
                    .then(|| {
                        l.per_cpu
                            .iter()
                            .zip(&b.per_cpu)
                            .map(|(c, p)| rate(*p, *c, s))
                            .collect::<Option<Vec<f64>>>()
                    })
                    .flatten()
            });
            IrqView {
                id: l.id.clone(),
                description: l.description.clone(),
                per_cpu: l.per_cpu.clone(),
                total,
                per_s: per_cpu_per_s.as_ref().map(|v| v.iter().sum()),
                per_cpu_per_s,
            }
        })
        .collect()
}

fn derive_irq_time(
    prev: Option<(&IrqTimeRaw, f64)>,
    cur: &IrqTimeRaw,
    ncpus: usize,
) -> IrqTimeView {
    let key = |kind: &str, n: u32| (kind.to_string(), n);
    let index: HashMap<(String, u32), (u64, u64)> = prev
        .map(|(p, _)| {
            p.handlers
                .iter()
                .map(|h| (key(&h.kind, h.number), (h.count, h.total_ns)))
                .collect()
        })
        .unwrap_or_default();
    let secs = prev.map(|(_, s)| s);
    let mut handlers: Vec<HandlerView> = cur
        .handlers
        .iter()
        .map(|h| {
            let (pc, pn) = index
                .get(&key(&h.kind, h.number))
                .copied()
                .unwrap_or((0, 0));
            let dc = h.count.saturating_sub(pc);
            let dn = h.total_ns.saturating_sub(pn);
            let avg_us = if secs.is_some() && dc > 0 {
                dn as f64 / dc as f64 / 1000.0
            } else if h.count > 0 {
                h.total_ns as f64 / h.count as f64 / 1000.0
            } else {
                0.0
            };
            HandlerView {
                kind: h.kind.clone(),
                number: h.number,
                name: h.name.clone(),
                count: h.count,
                count_interval: secs.map(|_| dc),
                avg_us,
                cpu_percent: secs.map(|s| dn as f64 / (s * 1e9 * ncpus as f64) * 100.0),
                total_ns: h.total_ns,
            }
        })
        .collect();
    handlers.sort_by(|a, b| {
        b.cpu_percent
            .unwrap_or(0.0)
            .total_cmp(&a.cpu_percent.unwrap_or(0.0))
            .then(b.total_ns.cmp(&a.total_ns))
    });
    IrqTimeView {
        handlers,
        unavailable: cur.unavailable.clone(),
        events: cur.events,
        lost: cur.lost,
        cost_ms: cur.cost_ns as f64 / 1e6,
        cost_percent: prev
            .map(|(p, s)| cur.cost_ns.saturating_sub(p.cost_ns) as f64 / (s * 1e9) * 100.0),
    }
}

#[cfg(test)]
mod cgroup_tests {
    use super::cgroup_name;

    #[test]
    fn containers_and_services_are_named_from_their_cgroup_path() {
        let n = cgroup_name("/system.slice/docker-0123456789abcdef0123.scope");
        assert_eq!(n, "docker:0123456789ab");
        let n = cgroup_name("/machine.slice/libpod-fedcba9876543210.scope");
        assert_eq!(n, "podman:fedcba987654");
        assert_eq!(cgroup_name("/system.slice/cron.service"), "service:cron");
        let k = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podab12.slice/cri-containerd-99.scope";
        assert_eq!(cgroup_name(k), "containerd:99");
        let k = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podab12.slice";
        assert_eq!(cgroup_name(k), "kubepods:ab12");
        assert_eq!(cgroup_name("/"), "/");
        assert_eq!(cgroup_name("/user.slice"), "user.slice");
    }
}
