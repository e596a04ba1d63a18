//! `hood report --intervals`: the interrupt-delay analysis of sampling. Per CPU, the time
//! between consecutive samples against the nominal period 1/F: a delayed sample makes one
//! interval longer and the next one shorter.

use std::io::Write;

use hood_model::profile::aggregate::{intervals, intervals_per_thread, CpuIntervals};
use hood_model::profile::Profile;

use super::fmt::{bar, rule, title};
use super::header::{filter_text, target};
use super::ReportOptions;
use crate::ReportError;

/// The nominal sampling period in ns (1e9 / frequency), `None` without a frequency.
pub fn nominal_period_ns(prof: &Profile) -> Option<u64> {
    (prof.meta.freq_hz > 0).then(|| (1e9 / prof.meta.freq_hz as f64).round() as u64)
}

/// Write the per-CPU interval analysis: min / median / p99 / max, the share of delayed
/// samples and a histogram over [`INTERVAL_BUCKETS`].
///
/// [`INTERVAL_BUCKETS`]: hood_model::profile::aggregate::INTERVAL_BUCKETS
/// Filters are ignored: intervals are a property of
/// the sampling, measured over every sample of a CPU.
pub fn render_intervals(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let period = nominal_period_ns(prof).ok_or(ReportError::MissingMeta {
        field: "sampling frequency",
        fix: "interval analysis needs a recording made with a frequency (hood record -F HZ)",
    })?;
    let cpus = intervals(prof, period);
    let us = |ns: u64| ns as f64 / 1000.0;
    let per = |ns: u64| ns as f64 / period as f64;

    writeln!(out, "{}", rule('='))?;
    writeln!(
        out,
        "Sampling intervals: {} ({})",
        opts.source,
        target(prof)
    )?;
    writeln!(
        out,
        "Nominal period: {:.1} µs ({} at {} Hz)",
        us(period),
        prof.meta.event,
        prof.meta.freq_hz
    )?;
    writeln!(out, "{}", rule('='))?;
    if intervals_per_thread(prof) {
        for line in [
            "Not a system-wide recording: each thread is sampled on its own timer, which runs only",
            "while the thread runs and moves with it. Each interval is the time between two",
            "consecutive samples of one thread on one CPU. On time, it is 1.0 period; a sample",
            "delayed by interrupt latency makes its interval longer and the next one shorter, so",
            "the spread shows how late samples were taken. A gap across which the thread was off",
            "the CPU is not a late sample: it is left out and counted, by the first fact that",
            "shows it: the recording's context switches (blocked, or preempted: runnable but not",
            "running), its next sample on another CPU (migrated), another thread sampled on the",
            "CPU in between (shared).",
        ] {
            writeln!(out, "{line}")?;
        }
        if prof.meta.off_cpu.is_none() {
            for line in [
                "Note: this recording has no context switches (record with --off-cpu to have them):",
                "a thread that lost its CPU to a task that was not recorded, or that blocked,",
                "between two of its samples leaves no sign in the samples, and its gap counts as a",
                "long interval.",
            ] {
                writeln!(out, "{line}")?;
            }
        }
    } else {
        for line in [
            "Each interval is the time between two consecutive samples on one CPU (each CPU is",
            "sampled on its own timer). On time, it is 1.0 period; a sample delayed by interrupt",
            "latency makes its interval longer and the next one shorter, so the spread shows how",
            "late samples were taken.",
        ] {
            writeln!(out, "{line}")?;
        }
    }
    if filter_text(&opts.filter).is_some() {
        writeln!(
            out,
            "Note: filters are ignored here; every sample of each CPU is used."
        )?;
    }
    writeln!(out)?;
    if cpus.is_empty() {
        writeln!(out, "No CPU has two samples: no interval to measure.")?;
        return Ok(());
    }
    for c in &cpus {
        cpu(c, opts, us, per, out)?;
    }
    Ok(())
}

fn cpu(
    c: &CpuIntervals,
    opts: &ReportOptions,
    us: impl Fn(u64) -> f64,
    per: impl Fn(u64) -> f64,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    writeln!(out, "{}", rule('-'))?;
    writeln!(
        out,
        "{}",
        title(&format!("CPU {}", c.cpu), &format!("{} intervals", c.count))
    )?;
    writeln!(out, "{}", rule('-'))?;
    if c.count > 0 {
        for (label, ns) in [
            ("min", c.min_ns),
            ("median", c.median_ns),
            ("p99", c.p99_ns),
            ("max", c.max_ns),
        ] {
            writeln!(
                out,
                "  {label:<7} {:>12.1} µs  {:>9.2} periods",
                us(ns),
                per(ns)
            )?;
        }
        writeln!(
            out,
            "  delayed by more than half a period (interval > 1.5 periods): {:.2}% of samples",
            c.delayed_share * 100.0
        )?;
    }
    let g = &c.off_cpu;
    if g.total() > 0 {
        let mut why = Vec::new();
        for (n, what) in [
            (g.blocked, "blocked"),
            (g.preempted, "preempted"),
            (g.migrated, "migrated"),
            (g.shared, "shared"),
        ] {
            if n > 0 {
                why.push(format!("{n} {what}"));
            }
        }
        writeln!(
            out,
            "  left out, not late samples: {} gaps with the thread off the CPU ({})",
            g.total(),
            why.join(", ")
        )?;
    }
    writeln!(out)?;
    writeln!(out, "  interval in periods")?;
    let max = c.histogram.iter().map(|h| h.1).max().unwrap_or(0);
    let mut lo = 0.0;
    for &(hi, n) in &c.histogram {
        let label = bucket_label(lo, hi);
        let share = if c.count == 0 {
            0.0
        } else {
            n as f64 * 100.0 / c.count as f64
        };
        let b = bar(n, max, opts.bar_width);
        let w = opts.bar_width;
        writeln!(out, "  {label:>11}  {b:<w$} {n:>9} {share:>6.2}%")?;
        lo = hi;
    }
    writeln!(out)?;
    Ok(())
}

/// `0.9 – 1.1`, `< 0.5`, `>= 16`.
fn bucket_label(lo: f64, hi: f64) -> String {
    if lo == 0.0 {
        format!("< {hi}")
    } else if hi.is_infinite() {
        format!(">= {lo}")
    } else {
        format!("{lo} - {hi}")
    }
}
