//! `hood report --intervals`: the interrupt-delay analysis of sampling. Per CPU, the time
//! between consecutive samples against the nominal period 1/F: a delayed sample makes one
//! interval longer and the next one shorter.

use std::io::Write;

use hood_model::profile::aggregate::{intervals, CpuIntervals};
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
    writeln!(
        out,
        "Each interval is the time between two consecutive samples on one CPU. On time, it is"
    )?;
    writeln!(
        out,
        "1.0 period; a sample delayed by interrupt latency makes its interval longer and the"
    )?;
    writeln!(
        out,
        "next one shorter, so the spread shows how late samples were taken."
    )?;
    if prof.meta.mode != "system" {
        writeln!(
            out,
            "Note: not a system-wide recording: each thread is sampled on its own timer, which moves with"
        )?;
        writeln!(
            out,
            "it. A CPU's gap while a thread of it ran on another CPU (a migration) is left out; other gaps"
        )?;
        writeln!(
            out,
            "while the target was not running on the CPU count as long intervals."
        )?;
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
    if c.migrations > 0 {
        writeln!(
            out,
            "  left out: {} gaps while a thread ran on another CPU (migrations)",
            c.migrations
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
