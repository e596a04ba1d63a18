//! `hood diff` of two call-path recordings ([`hood_tracemodel::calls::calls_diff`]) and
//! `hood diff --reconcile` ([`hood_reconcile`]): text tables and JSON.

use std::io::Write;

use hood_reconcile::{MatchedBy, Reconcile};
use hood_tracemodel::calls::{CallsBy, CallsDiff, CallsDiffSide};
use serde::Serialize;

use crate::profile::diff::percent;
use crate::profile::fmt::{ellipsize, FitLines};
use crate::{safe, ReportError};

/// Version of the `hood diff --format json` layout of call-path recordings and of
/// `--reconcile` (docs/json.md).
pub const CALLS_DIFF_SCHEMA_VERSION: u32 = 1;

/// One side of a call-path diff as the header names it.
pub struct CallsSource<'a> {
    /// The file's name.
    pub source: &'a str,
    /// `calls` or `trace`.
    pub kind: &'a str,
}

/// How the text tables are laid out: as the profile diff's.
pub type CallsDiffTextOptions = crate::profile::diff::DiffTextOptions;

/// ns as text (`2.31 s`, `250.0 ms`, `12 µs`, `80 ns`).
fn amount(v: f64) -> String {
    crate::profile::diff::amount(v, true)
}

/// A change in ns, with its sign (`+2.31 s`, `±0 ns`).
fn signed(v: f64) -> String {
    crate::profile::diff::signed(v, true)
}

fn side_line(s: &CallsSource<'_>, d: &CallsDiffSide) -> String {
    format!(
        "{}: hood {}, {} process{}, {} thread{}, {} calls, own time {}",
        safe::text(s.source),
        s.kind,
        d.processes,
        if d.processes == 1 { "" } else { "es" },
        d.threads,
        if d.threads == 1 { "" } else { "s" },
        d.calls,
        amount(d.own_ns)
    )
}

/// Write the call-path diff as a table, the largest change of own time first.
pub fn render_calls_diff_text(
    d: &CallsDiff,
    base: &CallsSource<'_>,
    new: &CallsSource<'_>,
    opts: &CallsDiffTextOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut out = FitLines::new(out, opts.width.max(1));
    writeln!(out, "BASE  {}", side_line(base, &d.base))?;
    writeln!(out, "NEW   {}", side_line(new, &d.new))?;
    let total = d.new.own_ns - d.base.own_ns;
    let rel = (d.base.own_ns > 0.0).then(|| total * 100.0 / d.base.own_ns);
    writeln!(
        out,
        "Total own time: {} → {}, {} ({}); calls {} → {}",
        amount(d.base.own_ns),
        amount(d.new.own_ns),
        signed(total),
        percent(rel),
        d.base.calls,
        d.new.calls
    )?;
    writeln!(
        out,
        "Largest changes of own time first. Calls are counted exactly: a change of calls is real."
    )?;
    if d.per_call {
        writeln!(
            out,
            "noise: a change of time within the calls' own variation (|z| < {:.2}, 99 %; z = Δtime / √(n·s² of both), s² the variance of a call's own time)",
            d.noise_z
        )?;
    } else {
        writeln!(
            out,
            "No noise rule applies to times: call-path tables hold sums, not each call's time (two `hood trace` recordings have one)"
        )?;
    }
    let head = format!(
        "{} {:>10} {:>10} {:>8} {:5}  ",
        crate::profile::diff::change_columns("Δtime"),
        "calls",
        "calls new",
        "Δcalls%",
        ""
    );
    let key = match d.by {
        CallsBy::Function => "function",
        CallsBy::Path => "call path",
    };
    let room = opts.width.saturating_sub(head.chars().count()).max(16);
    writeln!(out, "{head}{key}")?;
    for r in d.rows.iter().take(opts.rows) {
        let name = match d.by {
            CallsBy::Function => safe::text(&r.name).into_owned(),
            CallsBy::Path => safe::text(&r.name.replace(';', " → ")).into_owned(),
        };
        writeln!(
            out,
            "{:>10} {:>8} {:>10} {:>10} {:>6.1} {:>6.1} {:>+7.1} {:>10} {:>10} {:>8} {:5}  {}",
            signed(r.delta_ns),
            percent(r.change_percent),
            amount(r.base_ns),
            amount(r.new_ns),
            r.base_percent,
            r.new_percent,
            r.delta_points,
            r.base_calls,
            r.new_calls,
            percent(r.calls_change_percent),
            match r.noise {
                Some(true) => "noise",
                Some(false) => "",
                None => "-",
            },
            ellipsize(&name, room)
        )?;
    }
    let rest = d.rows.len().saturating_sub(opts.rows);
    if rest > 0 {
        let moved: f64 = d.rows[opts.rows..].iter().map(|r| r.delta_ns).sum();
        writeln!(
            out,
            "({rest} more rows, together {}; --top 0 shows all)",
            signed(moved)
        )?;
    }
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct CallsDiffJson<'a> {
    schema_version: u32,
    kind: &'a str,
    base_source: &'a str,
    new_source: &'a str,
    time_unit: &'static str,
    #[serde(flatten)]
    diff: &'a CallsDiff,
}

/// Write the call-path diff as one JSON object (docs/json.md).
pub fn render_calls_diff_json(
    d: &CallsDiff,
    base: &CallsSource<'_>,
    new: &CallsSource<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let doc = CallsDiffJson {
        schema_version: CALLS_DIFF_SCHEMA_VERSION,
        kind: base.kind,
        base_source: base.source,
        new_source: new.source,
        time_unit: "ns",
        diff: d,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

fn points(v: f64) -> String {
    format!("{v:.1}")
}

/// Write the reconciliation as a table, the largest call share first, and the closing
/// count of functions that agree.
pub fn render_reconcile_text(
    r: &Reconcile,
    calls_source: &str,
    profile_source: &str,
    opts: &CallsDiffTextOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut out = FitLines::new(out, opts.width.max(1));
    writeln!(
        out,
        "CALLS    {}: {} functions, own time {}{}",
        safe::text(calls_source),
        r.rows.len(),
        amount(r.calls_total_ns),
        if r.compensated {
            " (hooks' cost compensated)"
        } else {
            " (hooks' cost not compensated)"
        }
    )?;
    writeln!(
        out,
        "PROFILE  {}: {} samples{} of {} ({}), {}",
        safe::text(profile_source),
        r.samples,
        if r.off_cpu {
            " and off-CPU stretches"
        } else {
            ""
        },
        safe::text(&r.comms.join(", ")),
        match r.matched_by {
            MatchedBy::Pid => "same pids: one run",
            MatchedBy::Comm => "same name: two runs",
        },
        if r.off_cpu {
            "off-CPU data"
        } else {
            "no off-CPU data: blocked time unknown"
        }
    )?;
    writeln!(
        out,
        "Charged to the innermost instrumented function of each stack: {}; outside any, left out: {}",
        amount(r.stat_total_ns),
        amount(r.outside_ns)
    )?;
    if r.compensated && r.hooks_ns > 0.0 {
        writeln!(
            out,
            "Profiler cost: hooks {} in samples, {} beyond the compensation, taken out of the call side (net); {}",
            amount(r.hooks_ns),
            amount(r.profiler_ns),
            if r.hooks_split_at_stamps {
                "on the CPU, spread as the compensation was; waits in the hooks split at their timestamps, as their stacks show"
            } else {
                "split by rule: each function keeps its calibrated part, its callers take the rest"
            }
        )?;
    }
    writeln!(
        out,
        "Shares %, parts points; net = calls-profiler; explained = sampled+entry+exit+library+irq+blocked+runnable{}",
        if r.compensated {
            "; (hooks) left out"
        } else {
            "+hooks"
        }
    )?;
    let head = format!(
        "{:>7} {:>8} {:>6} {:>8} {:>6} {:>6} {:>8} {:>6} {:>7} {:>8} {:>9} {:>9} {:>7} {:>5} {:5}  ",
        "calls%",
        "profiler",
        "net%",
        "sampled",
        "entry",
        "exit",
        "library",
        "irq",
        "hooks",
        "blocked",
        "runnable",
        "explained",
        "Δpoints",
        "±σ",
        "agree"
    );
    let room = opts.width.saturating_sub(head.chars().count()).max(16);
    writeln!(out, "{head}function")?;
    for row in r.rows.iter().take(opts.rows) {
        let hooks = if r.compensated {
            format!("({})", points(row.hooks_points))
        } else {
            points(row.hooks_points)
        };
        writeln!(
            out,
            "{:>7.1} {:>8.1} {:>6.1} {:>8.1} {:>6.1} {:>6.1} {:>8.1} {:>6.1} {:>7} {:>8} {:>9} {:>9.1} {:>+7.1} {:>5.1} {:5}  {}",
            row.calls_percent,
            row.profiler_points,
            row.net_percent,
            row.sampled_percent,
            row.entry_points,
            row.exit_points,
            row.library_points,
            row.irq_points,
            hooks,
            row.blocked_points.map_or_else(|| "?".to_string(), points),
            row.runnable_points.map_or_else(|| "?".to_string(), points),
            row.explained_percent,
            row.delta_points,
            row.explained_error_points,
            match (row.over, row.agree) {
                (_, true) => "yes",
                (true, false) => "NO",
                (false, false) => "no",
            },
            ellipsize(&safe::text(&row.name), room)
        )?;
    }
    let rest = r.rows.len().saturating_sub(opts.rows);
    if rest > 0 {
        writeln!(out, "({rest} more functions; --top 0 shows all)")?;
    }
    // A disagreement inside the statistical side's own sampling error says more samples
    // are needed, not that time hides somewhere.
    let noisy = r
        .rows
        .iter()
        .filter(|row| {
            row.over
                && !row.agree
                && row.delta_points.abs() <= r.tolerance_points + 2.0 * row.explained_error_points
        })
        .count();
    write!(
        out,
        "{} of {} functions over {} % agree within {} points.",
        r.agreeing, r.considered, r.over_percent, r.tolerance_points
    )?;
    if noisy > 0 {
        write!(
            out,
            " {noisy} of the others within {} points + twice their sampling error (±σ, one \
             standard deviation of the statistical share): more samples would tell (a higher \
             -F or a longer run).",
            r.tolerance_points
        )?;
    }
    writeln!(out)?;
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct ReconcileJson<'a> {
    schema_version: u32,
    calls_source: &'a str,
    profile_source: &'a str,
    time_unit: &'static str,
    #[serde(flatten)]
    reconcile: &'a Reconcile,
}

/// Write the reconciliation as one JSON object (docs/json.md).
pub fn render_reconcile_json(
    r: &Reconcile,
    calls_source: &str,
    profile_source: &str,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let doc = ReconcileJson {
        schema_version: CALLS_DIFF_SCHEMA_VERSION,
        calls_source,
        profile_source,
        time_unit: "ns",
        reconcile: r,
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hood_reconcile::ReconcileRow;

    fn row(name: &str, calls_percent: f64, delta: f64, sigma: f64) -> ReconcileRow {
        ReconcileRow {
            name: name.into(),
            calls: 1,
            calls_percent,
            net_percent: calls_percent,
            sampled_percent: calls_percent - delta,
            explained_percent: calls_percent - delta,
            delta_points: delta,
            explained_error_points: sigma,
            over: calls_percent > 5.0,
            agree: delta.abs() <= 2.0,
            ..ReconcileRow::default()
        }
    }

    fn text(rows: Vec<ReconcileRow>) -> String {
        let r = Reconcile {
            matched_by: MatchedBy::Pid,
            comms: vec!["prog".into()],
            calls_total_ns: 1e9,
            stat_total_ns: 1e9,
            outside_ns: 0.0,
            hooks_ns: 0.0,
            profiler_ns: 0.0,
            irq_ns: 0.0,
            compensated: true,
            hooks_split_at_stamps: false,
            off_cpu: false,
            samples: 100,
            considered: rows.iter().filter(|r| r.over).count(),
            agreeing: rows.iter().filter(|r| r.over && r.agree).count(),
            rows,
            tolerance_points: 2.0,
            over_percent: 5.0,
            warnings: Vec::new(),
        };
        let mut out = Vec::new();
        let opts = CallsDiffTextOptions {
            rows: usize::MAX,
            width: usize::MAX,
        };
        render_reconcile_text(&r, "c.data", "p.data", &opts, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_table_gives_each_functions_sampling_error_and_counts_disagreements_inside_it() {
        // a agrees; b is 3 points off with a 1-point error (inside 2 + 2σ); c is 9 points off
        // with the same error; d is under 5 %.
        let t = text(vec![
            row("a", 40.0, 0.5, 1.5),
            row("b", 30.0, 3.0, 1.0),
            row("c", 25.0, -9.0, 1.0),
            row("d", 5.0, 4.0, 0.1),
        ]);
        assert!(t.contains("Δpoints    ±σ agree"), "{t}");
        let b = t.lines().find(|l| l.ends_with(" b")).unwrap();
        assert!(b.contains("   +3.0   1.0 NO "), "{b}");
        assert!(
            t.contains("1 of 3 functions over 5 % agree within 2 points. 1 of the others within 2 points + twice their sampling error"),
            "{t}"
        );
        // All agreeing: the closing line alone.
        let t = text(vec![row("a", 40.0, 0.5, 1.5)]);
        assert!(
            t.ends_with("1 of 1 functions over 5 % agree within 2 points.\n"),
            "{t}"
        );
    }
}
