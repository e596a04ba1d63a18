//! Off-CPU views of a recording made with `hood record --off-cpu`: blocked time by kernel
//! reason, by waker, each thread's wall-clock time split into on-CPU, blocked and runnable,
//! and the header lines that say what was recorded and how it is weighed.

use std::collections::HashMap;
use std::io::Write;

use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::{Func, Mode, Profile, Sample, OFF_CPU_DSO};

use super::fmt::{pct, rule, secs, title};
use crate::ReportError;

/// A duration for a table cell: `1.23 s`, `45.6 ms`, `789 µs`, `12 ns`.
pub(crate) fn time(ns: u64) -> String {
    if ns >= 1_000_000 {
        secs(ns)
    } else if ns >= 1_000 {
        format!("{:.0} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// A weight as the filter measures it: a sample count, or a time.
pub(crate) fn weight(f: &Filter, n: u64) -> String {
    match f.measure.is_time() {
        true => time(n),
        false => n.to_string(),
    }
}

/// Kernel functions that name why a thread blocked, tried in order on the kernel part of its
/// stack, innermost frame first (the first frame that matches any pattern decides).
const REASONS: &[(&str, &[&str])] = &[
    (
        "page fault",
        &["exc_page_fault", "handle_mm_fault", "do_user_addr_fault"],
    ),
    (
        "lock or condition variable (futex)",
        &["futex_wait", "futex_lock_pi", "futex_"],
    ),
    (
        "sleep",
        &["do_nanosleep", "hrtimer_nanosleep", "clock_nanosleep"],
    ),
    (
        "poll, epoll or select",
        &[
            "ep_poll",
            "do_epoll_wait",
            "do_poll",
            "do_select",
            "do_sys_poll",
        ],
    ),
    ("pipe", &["pipe_read", "pipe_write", "pipe_wait", "pipe_"]),
    (
        "socket",
        &[
            "sk_wait_data",
            "sock_",
            "tcp_recvmsg",
            "tcp_sendmsg",
            "udp_recvmsg",
            "unix_stream",
            "unix_dgram",
            "inet_csk_accept",
            "__skb_wait_for_more_packets",
        ],
    ),
    (
        "disk I/O",
        &[
            "io_schedule",
            "blk_",
            "folio_wait",
            "wait_on_page",
            "filemap_",
            "jbd2_",
            "file_write_and_wait",
            "do_fsync",
            "vfs_fsync",
            "ext4_sync",
            "xfs_",
            "bit_wait_io",
        ],
    ),
    ("waiting for a child process", &["do_wait", "kernel_wait4"]),
    ("terminal", &["n_tty_read", "tty_read", "wait_woken"]),
    ("eventfd", &["eventfd_read", "eventfd_write"]),
    ("signal", &["sigsuspend", "do_sigtimedwait", "sys_pause"]),
    ("completion", &["wait_for_completion"]),
];

/// Why an off-CPU stretch happened, in a user's words: runnable time is waiting for a CPU;
/// blocked time is named by the first kernel frame (innermost first) that says why.
pub(crate) fn reason(prof: &Profile, s: &Sample) -> String {
    if s.mode == Mode::Runnable {
        return "runnable, waiting for a CPU".into();
    }
    let funcs: Vec<&Func> = prof
        .stacks
        .get(s.stack as usize)
        .map(|st| {
            st.iter()
                .filter_map(|&f| prof.funcs.get(f as usize))
                .collect()
        })
        .unwrap_or_default();
    if let Some(f) = funcs.first().filter(|f| f.dso == OFF_CPU_DSO) {
        return f.name.trim_matches(['[', ']']).to_string();
    }
    for f in funcs.iter().filter(|f| f.kernel) {
        for (words, patterns) in REASONS {
            if patterns.iter().any(|p| f.name.contains(p)) {
                return (*words).to_string();
            }
        }
    }
    match funcs.iter().find(|f| f.kernel) {
        Some(f) => format!("other: {}", f.name),
        None => "unknown (no kernel stack)".into(),
    }
}

/// Off-CPU time per reason, heaviest first.
pub(crate) fn by_reason(prof: &Profile, f: &Filter) -> Vec<(String, u64)> {
    let mut m: HashMap<String, u64> = HashMap::new();
    for s in f.samples(prof).filter(|s| s.mode.off_cpu()) {
        *m.entry(reason(prof, &s)).or_insert(0) += f.weight(&s);
    }
    sorted(m)
}

/// Blocked time per waker (its identity, the innermost function of its own code, and the
/// kernel function that did the wake-up), heaviest first. `f` must have `by_waker` set.
pub(crate) fn by_waker(prof: &Profile, f: &Filter) -> Vec<(String, u64)> {
    let mut labels: HashMap<u32, String> = HashMap::new();
    let mut m: HashMap<String, u64> = HashMap::new();
    for s in f.samples(prof) {
        let label = labels
            .entry(s.stack)
            .or_insert_with(|| waker_label(prof, s.stack))
            .clone();
        *m.entry(label).or_insert(0) += f.weight(&s);
    }
    sorted(m)
}

fn waker_label(prof: &Profile, stack: u32) -> String {
    let funcs: Vec<&Func> = prof
        .stacks
        .get(stack as usize)
        .map(|st| {
            st.iter()
                .filter_map(|&f| prof.funcs.get(f as usize))
                .collect()
        })
        .unwrap_or_default();
    let who = funcs
        .iter()
        .rev()
        .find(|f| f.dso == OFF_CPU_DSO)
        .map(|f| {
            let n = f.name.trim_start_matches('[').trim_end_matches(']');
            n.strip_prefix("woken by ").unwrap_or(n).to_string()
        })
        .unwrap_or_else(|| "unknown".into());
    // The waker's own code: its innermost function outside the C library and the dynamic
    // loader (which only carry the call into the kernel), else the innermost user function.
    let user = || funcs.iter().filter(|f| !f.kernel && f.dso != OFF_CPU_DSO);
    let code = user()
        .find(|f| !SYSTEM_LIBRARIES.iter().any(|l| f.dso.starts_with(l)))
        .or_else(|| user().next());
    // The kernel call that woke: the innermost kernel function that is not the wake-up
    // machinery itself (`pipe_write`, `futex_wake`, `hrtimer_wakeup`).
    let via = funcs
        .iter()
        .filter(|f| f.kernel)
        .find(|f| !WAKE_MACHINERY.iter().any(|m| f.name.starts_with(m)))
        .or_else(|| funcs.iter().find(|f| f.kernel));
    match (code, via) {
        (Some(c), Some(k)) => format!("{who}: {} via {}", c.label(), k.name),
        (Some(c), None) => format!("{who}: {}", c.label()),
        (None, Some(k)) => format!("{who}: {}", k.name),
        (None, None) => who,
    }
}

/// Libraries whose functions only carry a call into the kernel.
const SYSTEM_LIBRARIES: &[&str] = &["libc.so", "libc-", "libpthread", "ld-linux", "ld-musl"];

/// Kernel functions that deliver a wake-up rather than decide it.
const WAKE_MACHINERY: &[&str] = &[
    "__wake_up",
    "wake_up",
    "autoremove_wake_function",
    "default_wake_function",
    "woken_wake_function",
    "wake_q",
    "__wake_q",
    "ttwu",
    "pollwake",
    "__pollwake",
    "ep_poll_callback",
    "wake_page_function",
    "wake_bit_function",
];

fn sorted(m: HashMap<String, u64>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The header lines of a recording with off-CPU data: what was derived, and in the CPU
/// sample view a pointer to the time views.
pub(crate) fn header_lines(prof: &Profile, f: &Filter) -> Vec<String> {
    let Some(o) = &prof.meta.off_cpu else {
        return Vec::new();
    };
    let st = &prof.off_cpu_stats;
    let (blocked, runnable) = prof
        .off_cpu
        .iter()
        .fold((0u64, 0u64), |(b, r), s| match s.mode {
            Mode::Blocked => (b + s.period, r),
            _ => (b, r + s.period),
        });
    let mut out = vec![format!(
        "Off-CPU:     {} blocked, {} runnable, in {} intervals; waker seen for {} of {} blocked \
         intervals{}",
        time(blocked),
        time(runnable),
        st.intervals,
        st.woken,
        st.woken + st.waker_unknown,
        if o.all_wakeups {
            ""
        } else {
            " (wake-ups by other processes and interrupts not recorded)"
        },
    )];
    if st.short > 0 {
        out.push(format!(
            "             {} intervals shorter than {} ({}) shown together per thread \
             (record with --off-cpu-min to change)",
            st.short,
            hood_model::profile::offcpu_min_words(o.min_ns),
            time(st.short_ns)
        ));
    }
    if st.inherited > 0 {
        out.push(format!(
            "             {} long waits ({}) have their thread's previous stacks: the \
             recording took one thread's stacks at most {} times a second (record with \
             --off-cpu-rate to change)",
            st.inherited,
            time(st.inherited_ns),
            st.stack_rate
        ));
    }
    if st.unmatched > 0 {
        out.push(format!(
            "             {} intervals whose switch back in was not recorded end at the \
             thread's next sign of running",
            st.unmatched
        ));
    }
    match f.measure {
        Measure::CpuSamples => out.push(
            "             this is the CPU profile; `--wall` adds the waits, `--off-cpu` shows \
             only them, `--by waker` who ended them"
                .into(),
        ),
        Measure::Wall => out.push(
            "             weights are time: CPU samples count their period, waits their length"
                .into(),
        ),
        Measure::OffCpu => {}
    }
    out
}

/// The totals block of a time view: on CPU (user, kernel, idle), blocked, runnable.
pub(crate) fn totals_block(
    t: &hood_model::profile::aggregate::Totals,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let line =
        |label: &str, n: u64| format!("{label:>18}: {:>12} ({:>5.1}%)", time(n), pct(n, t.samples));
    if t.user + t.kernel + t.idle > 0 {
        writeln!(out, "{}", line("On CPU, user", t.user))?;
        writeln!(out, "{}", line("On CPU, kernel", t.kernel))?;
        if t.idle > 0 {
            writeln!(out, "{}", line("Idle", t.idle))?;
        }
    }
    writeln!(out, "{}", line("Blocked", t.blocked))?;
    writeln!(out, "{}", line("Runnable (waiting)", t.runnable))?;
    writeln!(out, "{:>20}{:->12}  {:->7}", "", "", "")?;
    writeln!(out, "{:>18}: {:>12} (100.0%)", "Total", time(t.samples))?;
    writeln!(out)?;
    Ok(())
}

/// Each thread's time in the recording, exact from its switches: lifetime = on CPU + blocked
/// + runnable (`hood report --wall --by thread`).
pub(crate) fn thread_table(
    prof: &Profile,
    f: &Filter,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut rows: Vec<_> = prof
        .thread_times
        .iter()
        .filter(|t| f.pid.is_none_or(|p| p == t.pid) && f.tid.is_none_or(|x| x == t.tid))
        .filter(|t| f.comm.as_ref().is_none_or(|c| prof.comm(t.pid) == *c))
        .collect();
    rows.sort_by(|a, b| {
        b.lifetime_ns
            .cmp(&a.lifetime_ns)
            .then(b.blocked_ns.cmp(&a.blocked_ns))
            .then((a.pid, a.tid).cmp(&(b.pid, b.tid)))
    });
    writeln!(out, "{}", rule('-'))?;
    writeln!(
        out,
        "{}",
        title(
            "Each thread's time, from its switches",
            "lifetime = on CPU + blocked + runnable"
        )
    )?;
    writeln!(out, "{}", rule('-'))?;
    writeln!(
        out,
        "{:>10} {:>10} {:>10} {:>10} {:>7}  thread",
        "lifetime", "on CPU", "blocked", "runnable", "%off"
    )?;
    for t in rows {
        let off = t.blocked_ns + t.runnable_ns;
        writeln!(
            out,
            "{:>10} {:>10} {:>10} {:>10} {:>6.1}%  {}",
            time(t.lifetime_ns),
            time(t.on_cpu_ns),
            time(t.blocked_ns),
            time(t.runnable_ns),
            pct(off, t.lifetime_ns),
            super::text::thread_label(prof, t.pid, t.tid)
        )?;
    }
    writeln!(out, "{}", rule('-'))?;
    writeln!(out)?;
    Ok(())
}
