//! Renderers of `hood trace report`: the function summary, the code-path
//! trace, versioned JSON, Chrome trace-event JSON and the name/tag listing, and [`report`],
//! which streams a trace file's events through the analysis into them.

mod chrome;
mod file;
mod json;

pub use chrome::{chrome, ChromeWriter};
pub use file::{report, TraceReport, View, Written};
pub use json::JsonPathsWriter;

use std::io::Write;

use hood_tracemodel::trace::{Analysis, PathItem, PathLine, ThreadSummary, TraceFilter};

use crate::{safe, ReportError};

/// JSON version of [`json`] output.
pub const JSON_VERSION: u32 = 1;

/// `serde_json::to_writer`, with a failed write reported as the I/O error it is (a closed
/// pipe stays recognisable as one).
pub(crate) fn write_json<T: serde::Serialize + ?Sized>(
    out: &mut dyn Write,
    v: &T,
) -> Result<(), ReportError> {
    serde_json::to_writer(&mut *out, v).map_err(|e| match e.io_error_kind() {
        Some(k) => ReportError::Io(std::io::Error::new(k, e)),
        None => ReportError::Json(e),
    })
}

fn us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

/// µs with one decimal below 100 µs (irq handlers take a few µs).
fn us_frac(ns: u64) -> String {
    if ns < 100_000 {
        format!("{:.1}", ns as f64 / 1000.0)
    } else {
        us(ns).to_string()
    }
}

/// `s:mmm uuu`: seconds, milliseconds, microseconds.
fn stamp(ns: u64) -> String {
    let us = ns / 1000;
    format!(
        "{}:{:03} {:03}",
        us / 1_000_000,
        us / 1000 % 1000,
        us % 1000
    )
}

fn sec_us(ns: u64) -> String {
    let us = ns / 1000;
    format!("{} sec {:6} us", us / 1_000_000, us % 1_000_000)
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 * 100.0 / d as f64
    }
}

/// The function summary: totals, then one row per function sorted by net time (µs).
pub fn summary(a: &Analysis, limit: Option<usize>, out: &mut dyn Write) -> Result<(), ReportError> {
    writeln!(
        out,
        "Elapsed time = {} ({} events, {} thread{})",
        sec_us(a.elapsed_ns),
        a.events,
        a.threads.len(),
        if a.threads.len() == 1 { "" } else { "s" }
    )?;
    let only = match (a.filter.pid, a.filter.tid) {
        (_, Some(tid)) => Some(format!("thread {tid}")),
        (Some(pid), None) => Some(format!("pid {pid}")),
        (None, None) => None,
    };
    if let Some(only) = only {
        writeln!(
            out,
            "Filter: {only} only ({} of {} thread{} in the file)",
            a.threads.len(),
            a.filter.threads_in_file,
            if a.filter.threads_in_file == 1 {
                ""
            } else {
                "s"
            }
        )?;
    }
    if let Some(w) = window(a.filter.from_ns, a.filter.to_ns) {
        writeln!(
            out,
            "Window: {w} selects code-path lines (--paths) and chrome slices; these totals cover the whole trace"
        )?;
    }
    if a.threads.len() > 1 {
        writeln!(
            out,
            "Thread time  = {} (sum of the threads' traced spans)",
            sec_us(a.thread_ns)
        )?;
    }
    writeln!(
        out,
        "Accumulated run time = {} ({:6.2}%)",
        sec_us(a.run_ns),
        pct(a.run_ns, a.thread_ns)
    )?;
    writeln!(
        out,
        "Off-CPU time         = {} ({:6.2}%){}",
        sec_us(a.off_cpu_ns),
        pct(a.off_cpu_ns, a.thread_ns),
        if a.sched {
            ""
        } else {
            "  [context switches not recorded: off-CPU time is counted as run time]"
        }
    )?;
    if a.wake {
        let other = a.off_cpu_ns.saturating_sub(a.blocked_ns + a.runnable_ns);
        writeln!(
            out,
            "  of which blocked   = {} ({:6.2}%), runnable (preempted or woken, waiting for a CPU) = {} ({:6.2}%){}",
            sec_us(a.blocked_ns),
            pct(a.blocked_ns, a.thread_ns),
            sec_us(a.runnable_ns),
            pct(a.runnable_ns, a.thread_ns),
            if other > 0 {
                format!(", no wake-up recorded {}", sec_us(other))
            } else {
                String::new()
            }
        )?;
    } else if a.sched {
        writeln!(
            out,
            "  [wake-ups not recorded (they need root or CAP_PERFMON; HOOD_TRACE_WAKE=0 turns them off): off-CPU time is not split into blocked and runnable]"
        )?;
    }
    if a.irq {
        writeln!(
            out,
            "irq/softirq time     = {} ({:6.2}%)  {} hard irq{}, {} softirq{} in the traced threads' context{}",
            sec_us(a.irq_ns),
            pct(a.irq_ns, a.thread_ns),
            a.hard_irqs,
            if a.hard_irqs == 1 { "" } else { "s" },
            a.softirqs,
            if a.softirqs == 1 { "" } else { "s" },
            if a.hard_irqs_outside + a.softirqs_outside > 0 {
                " during their traced spans"
            } else {
                ""
            }
        )?;
        if a.hard_irqs_outside + a.softirqs_outside > 0 {
            writeln!(
                out,
                "  and {} hard irq{}, {} softirq{} outside them (before a thread's first traced event or after its end): recorded and counted by `record`, not in these times",
                a.hard_irqs_outside,
                if a.hard_irqs_outside == 1 { "" } else { "s" },
                a.softirqs_outside,
                if a.softirqs_outside == 1 { "" } else { "s" },
            )?;
        }
    } else if a.sched {
        writeln!(
            out,
            "irq/softirq time     = not recorded (needs root or CAP_PERFMON; HOOD_TRACE_IRQ=0 turns it off): counted as run time"
        )?;
    }
    if a.threads.iter().any(|t| t.streamed) {
        count_line(
            out,
            "Events lost",
            a.threads.iter().map(|t| t.dropped).sum(),
            " (the program outran the recorder: see the notes)",
            " (streamed while the program ran)",
        )?;
    }
    count_line(
        out,
        "Exits repaired",
        a.threads.iter().map(|t| t.mismatched).sum(),
        " (calls left by longjmp or an exception, without their exit event: counted, see the notes)",
        "",
    )?;
    match (a.probe_cost, a.probe_cost_stepped) {
        (Some(c), Some(s)) => writeln!(
            out,
            "Probe cost           = {} us per probed call where the kernel emulates the function's first instruction ({} us inside the call, {} us in its caller), {} us where it single-steps it ({} us, {} us; {} function{}), taken out of elapsed and net (measured at the start on two empty functions)",
            us_frac(c.per_call_ns()),
            us_frac(c.self_ns),
            us_frac(c.child_ns),
            us_frac(s.per_call_ns()),
            us_frac(s.self_ns),
            us_frac(s.child_ns),
            a.probe_stepped_functions,
            if a.probe_stepped_functions == 1 { "" } else { "s" }
        )?,
        (Some(c), None) => writeln!(
            out,
            "Probe cost           = {} us per probed call, taken out of elapsed and net ({} us inside the call, {} us in its caller; measured at the start on an empty function)",
            us_frac(c.per_call_ns()),
            us_frac(c.self_ns),
            us_frac(c.child_ns)
        )?,
        _ => {}
    }
    notes(a, out)?;
    writeln!(out, "{}", "-".repeat(96))?;
    writeln!(
        out,
        "{:>10} {:>10} {:>8} {:>24} {:>7} {:>7}  name",
        "Elapsed", "Net", "# calls", "(max/avg/min) us", "% real", "% net"
    )?;
    for f in a.functions.iter().take(limit.unwrap_or(usize::MAX)) {
        writeln!(
            out,
            "{:>10} {:>10} {:>8} {:>24} {:>6.2}% {:>6.2}%  {}",
            us(f.elapsed_ns),
            us(f.net_ns),
            f.calls,
            if f.calls == 0 {
                "(-/-/-)".to_string()
            } else {
                format!("({}/{}/{})", us(f.max_ns), us(f.avg_ns()), us(f.min_ns))
            },
            f.pct_real,
            f.pct_net,
            safe::text(&f.name)
        )?;
    }
    writeln!(out, "{}", "-".repeat(96))?;
    writeln!(
        out,
        "times in us; net = elapsed - callees - off-CPU time - irq/softirq time; max/avg/min are net per call;"
    )?;
    writeln!(
        out,
        "% real = net / traced thread time, % net = net / on-CPU time (run time); calls still running at the end are timed to it (in net) but not counted (nor in max/avg/min)."
    )?;
    Ok(())
}

/// A count of the summary, `LABEL = N`, and what a count above zero (`some`) or of zero
/// (`none`) means.
fn count_line(
    out: &mut dyn Write,
    label: &str,
    n: u64,
    some: &str,
    none: &str,
) -> Result<(), ReportError> {
    writeln!(out, "{label:<21}= {n}{}", if n > 0 { some } else { none })?;
    Ok(())
}

fn notes(a: &Analysis, out: &mut dyn Write) -> Result<(), ReportError> {
    for t in &a.threads {
        if t.dropped > 0 && t.streamed {
            writeln!(
                out,
                "note: pid {} tid {}: {} events LOST: the program outran the recorder and filled its ring; calls around the gaps may show as repaired or without their entry. Record with a larger --buffer, --filter, or a free CPU for the recorder",
                t.pid, t.tid, t.dropped
            )?;
        } else if t.dropped > 0 {
            writeln!(
                out,
                "note: pid {} tid {}: buffer full, {} events dropped after the first {} (--full stop); raise --buffer",
                t.pid, t.tid, t.dropped, t.events
            )?;
        }
        if t.overwritten > 0 {
            writeln!(
                out,
                "note: pid {} tid {}: buffer wrapped, the oldest {} events were overwritten (--full wrap); the trace keeps the newest {}",
                t.pid, t.tid, t.overwritten, t.events
            )?;
        }
        // Counts of events that could not be timed as recorded: each a note when not zero.
        for (n, what) in [
            (
                t.irq_unmatched,
                "irq entries without their exit (records lost), not timed",
            ),
            (
                t.mismatched,
                "exits repaired: calls left by longjmp or an exception (no exit event) were closed at the exit of a caller; they are counted, and timed up to that exit",
            ),
            (
                t.unmatched_exits,
                "exits without their entry (entries lost to the buffer or made before a fork)",
            ),
        ] {
            if n > 0 {
                writeln!(out, "note: pid {} tid {}: {n} {what}", t.pid, t.tid)?;
            }
        }
    }
    // Records the kernel could not hand over: each a note when not zero.
    for (n, what) in [
        (a.lost_irqs, "irq records: irq/softirq time is undercounted"),
        (a.lost_wakeups, "wake-up records: some waits show no waker"),
        (a.lost_switches, "context-switch records"),
    ] {
        if n > 0 {
            writeln!(out, "note: the kernel lost {n} {what}")?;
        }
    }
    Ok(())
}

/// The code-path trace, one section per thread.
pub fn paths(a: &Analysis, out: &mut dyn Write) -> Result<(), ReportError> {
    for t in &a.threads {
        path_heading(t, &a.filter, out)?;
        path_lines(&t.lines, out)?;
    }
    Ok(())
}

/// The heading of one thread's code-path trace; `filter`'s window, if any, is stated in it.
pub fn path_heading(
    t: &ThreadSummary,
    filter: &TraceFilter,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let w = window(filter.from_ns, filter.to_ns)
        .map(|w| format!(" lines {w}"))
        .unwrap_or_default();
    writeln!(
        out,
        "==== pid {} tid {} ({}){w} ====",
        t.pid,
        t.tid,
        safe::text(&t.exe)
    )?;
    Ok(())
}

/// `from S:mmm uuu to S:mmm uuu` (times since the trace start, as the code-path lines print
/// them) for a `--from/--to` window; `None` without one.
fn window(from_ns: Option<u64>, to_ns: Option<u64>) -> Option<String> {
    match (from_ns, to_ns) {
        (None, None) => None,
        (Some(f), None) => Some(format!("from {} to the end", stamp(f))),
        (None, Some(t)) => Some(format!("from the start to {}", stamp(t))),
        (Some(f), Some(t)) => Some(format!("from {} to {}", stamp(f), stamp(t))),
    }
}

/// Lines of a code-path trace.
pub fn path_lines(lines: &[PathLine], out: &mut dyn Write) -> Result<(), ReportError> {
    for l in lines {
        let ts = stamp(l.t_ns);
        match &l.item {
            PathItem::Call {
                depth,
                name,
                net_ns,
                total_ns,
                unfinished,
                repaired,
                before_window,
            } => {
                let pad = "    ".repeat(*depth);
                let name = safe::text(name);
                let more = if *unfinished {
                    ", running at end"
                } else if *repaired {
                    ", left by longjmp/exception: exit repaired"
                } else {
                    ""
                };
                let more = if *before_window {
                    format!("{more}, entered before the window")
                } else {
                    more.to_string()
                };
                match total_ns {
                    Some(tot) => writeln!(
                        out,
                        "{ts} {pad}-> {name} ({} us, {} total{more})",
                        us(*net_ns),
                        us(*tot)
                    )?,
                    None => writeln!(out, "{ts} {pad}-> {name} ({} us{more})", us(*net_ns))?,
                }
            }
            PathItem::Return { depth, name } => {
                writeln!(out, "{ts} {}<- {}", "    ".repeat(*depth), safe::text(name))?
            }
            PathItem::Mark { depth, label } => writeln!(
                out,
                "{ts} {}== {}",
                "    ".repeat(*depth),
                safe::text(label)
            )?,
            PathItem::SwitchOut { preempt } => writeln!(
                out,
                "{ts} ---- context switch out{} ----",
                if *preempt { " (preempted)" } else { "" }
            )?,
            PathItem::SwitchIn {
                off_ns,
                blocked_ns,
                runnable_ns,
                waker,
            } => {
                let parts = match (blocked_ns, runnable_ns, waker) {
                    (_, Some(r), None) => format!(": preempted, runnable {} us", us(*r)),
                    (Some(b), Some(r), Some(w)) => format!(
                        ": blocked {} us, runnable {} us; woken by {}",
                        us(*b),
                        us(*r),
                        safe::text(&w.describe())
                    ),
                    (None, None, Some(w)) => format!("; woken by {}", safe::text(&w.describe())),
                    _ => String::new(),
                };
                writeln!(
                    out,
                    "{ts} ---- context switch in ({} us off-CPU{parts}) ----",
                    us(*off_ns)
                )?
            }
            PathItem::IrqIn { depth, label } => writeln!(
                out,
                "{ts} {}---- {} in ----",
                "    ".repeat(*depth),
                safe::text(label)
            )?,
            PathItem::IrqOut {
                depth,
                label,
                dur_ns,
            } => {
                let what = safe::text(label.split(' ').next().unwrap_or("irq"));
                writeln!(
                    out,
                    "{ts} {}---- {what} out ({} us) ----",
                    "    ".repeat(*depth),
                    us_frac(*dur_ns)
                )?
            }
            PathItem::Control { on } => writeln!(
                out,
                "{ts} ==== trace {} ====",
                if *on { "on" } else { "off" }
            )?,
            PathItem::UnmatchedExit { name } => {
                writeln!(out, "{ts} <- {} (entry not in the trace)", safe::text(name))?
            }
        }
    }
    Ok(())
}

/// Versioned JSON: totals, functions, threads (with path lines when computed).
pub fn json(a: &Analysis, out: &mut dyn Write) -> Result<(), ReportError> {
    let v = serde_json::json!({
        "schema_version": JSON_VERSION,
        "analysis": a,
    });
    serde_json::to_writer_pretty(&mut *out, &v)?;
    writeln!(out)?;
    Ok(())
}

/// The names file: `name/tag`, with '=' for inline marks.
pub fn tags(list: &[(String, u64, char)], out: &mut dyn Write) -> Result<(), ReportError> {
    for (name, tag, m) in list {
        if *m == ' ' {
            writeln!(out, "{name}/{tag}")?;
        } else {
            writeln!(out, "{name}/{tag}{m}")?;
        }
    }
    Ok(())
}
