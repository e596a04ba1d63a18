//! Renderers for `hood calls report`: the text layout (`calls  msecs  path`
//! per process, with its notes), JSON, and collapsed stacks (own time in µs per path).

pub mod diff;

use std::borrow::Cow;
use std::io::Write;

use hood_tracemodel::calls::{
    function_rows, path_rows, path_size, sort_rows, ProcessCalls, Row, SortKey,
};
use serde::Serialize;

use crate::{safe, ReportError};

/// Report options (built by the binary from its arguments).
#[derive(Debug, Clone)]
pub struct CallsReportOptions {
    /// Totals per function instead of per path.
    pub functions: bool,
    /// Sort order.
    pub sort: SortKey,
    /// Lines per process (None = all).
    pub limit: Option<usize>,
    /// Print full paths; otherwise long paths are shortened to fit 100 columns.
    pub full_paths: bool,
    /// Rows per thread.
    pub threads: bool,
    /// The whole [`NOTES`] block after the report, instead of [`NOTES_SHORT`].
    pub notes: bool,
}

/// The one line printed after the text report unless the whole [`NOTES`] are asked for.
pub const NOTES_SHORT: &str = "\
calls counted at entry; msecs: own body time, blocking included; * still running; \
`--notes` explains
";

/// The notes printed after the text report.
pub const NOTES: &str = "\
Notes:
- Calls attributed to a path are calls made on that call level.
    For instance: a() is called once and calls b() twice. Path \"a\" is attributed
    1 call, path \"a b\" 2 calls. Calls are counted at entry.
- Time attributed to a path is time spent in the own body of the function at its end.
    For instance: a() spends 10 ms in its own body and calls b(), which spends 5 ms in its
    body. Path \"a\" is attributed 10 ms, path \"a b\" 5 ms.
- Time spent blocking (sleeping, waiting for I/O) is included.
- The profiler's own cost is compensated (small/big difference, calibrated at start-up)
  unless HOOD_COMPENSATE=0 was set.
- Functions that had not returned when the table was read (e.g. main) are marked with *
  and shown with their time so far.
- After `hood calls reset`, a thread resets at its next function entry or exit; threads that
  had not yet done so are marked in the header.
- Time is in milliseconds.
";

fn rows(p: &ProcessCalls, o: &CallsReportOptions) -> Vec<Row> {
    let mut r = if o.functions {
        function_rows(p, o.threads)
    } else {
        path_rows(p, o.threads)
    };
    sort_rows(&mut r, o.sort);
    if let Some(n) = o.limit {
        r.truncate(n);
    }
    r
}

/// A path's function names joined by spaces, their control characters escaped (the names
/// came from the program's symbols), its start cut when longer than 80 bytes and not `full`.
fn shorten(path: &[String], full: bool) -> String {
    let path: Vec<Cow<'_, str>> = path.iter().map(|n| safe::text(n)).collect();
    let s = path.join(" ");
    if full || s.len() <= 80 {
        return s;
    }
    let mut tail = String::new();
    for name in path.iter().rev() {
        if tail.len() + name.len() + 1 > 74 {
            break;
        }
        tail = if tail.is_empty() {
            name.to_string()
        } else {
            format!("{name} {tail}")
        };
    }
    format!("... {tail}")
}

/// The text report for all processes.
pub fn render_text(
    procs: &[ProcessCalls],
    o: &CallsReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let rule = "-".repeat(80);
    for p in procs {
        let rows = rows(p, o);
        let what = if o.functions {
            "functions"
        } else {
            "call paths"
        };
        let count = if o.functions {
            function_rows(p, false).len() as u64
        } else {
            path_size(p, false).paths
        };
        writeln!(out, "{rule}")?;
        let title = format!("{} [{}] ({})", safe::text(p.comm()), p.pid, p.state);
        writeln!(out, "{title:<60}{:>20}", format!("{count} {what}"))?;
        writeln!(out, "{rule}")?;
        for n in p.flag_notes().iter().chain(p.notes.iter()) {
            writeln!(out, "  ! {}", safe::text(n))?;
        }
        let tcol = if o.threads {
            format!("{:>8}", "tid")
        } else {
            String::new()
        };
        let label = if o.functions { "function" } else { "path" };
        writeln!(out, "{tcol}{:>10}  {:>12}  {label}", "calls", "msecs")?;
        writeln!(out, "{rule}")?;
        for r in &rows {
            let tcol = match (o.threads, r.tid) {
                (true, Some(t)) => format!("{t:>8}"),
                _ => String::new(),
            };
            let mark = if r.running { "*" } else { " " };
            writeln!(
                out,
                "{tcol}{:>10}  {:>12.3}{mark} {}",
                r.calls,
                r.msecs,
                shorten(&r.path, o.full_paths)
            )?;
        }
        writeln!(out)?;
    }
    out.write_all(if o.notes { NOTES } else { NOTES_SHORT }.as_bytes())?;
    Ok(())
}

/// Versioned JSON (`{"schema_version":1,"processes":[...]}`, docs/json.md).
pub fn render_json(
    procs: &[ProcessCalls],
    o: &CallsReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    #[derive(Serialize)]
    struct P<'a> {
        pid: u32,
        ppid: u32,
        exe: &'a str,
        state: &'a str,
        ticks_per_sec: u64,
        compensate: bool,
        /// The calibrated cost per call taken out of the function's own time (ns).
        comp_self_ns: f64,
        /// The calibrated cost per call taken out of its caller's own time (ns).
        comp_child_ns: f64,
        flags: u32,
        warnings: Vec<String>,
        threads: Vec<u32>,
        rows: Vec<Row>,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        schema_version: u32,
        per: &'a str,
        processes: Vec<P<'a>>,
    }
    let doc = Doc {
        schema_version: 1,
        per: if o.functions { "function" } else { "path" },
        processes: procs
            .iter()
            .map(|p| P {
                pid: p.pid,
                ppid: p.ppid,
                exe: &p.exe,
                state: p.state.as_str(),
                ticks_per_sec: p.ticks_per_sec,
                compensate: p.compensate,
                comp_self_ns: p.ticks_to_ms(p.comp_self_ticks as i64) * 1e6,
                comp_child_ns: p.ticks_to_ms(p.comp_child_ticks as i64) * 1e6,
                flags: p.flags,
                warnings: p
                    .flag_notes()
                    .into_iter()
                    .chain(p.notes.iter().cloned())
                    .collect(),
                threads: p.threads.iter().map(|t| t.tid).collect(),
                rows: rows(p, o),
            })
            .collect(),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

/// Collapsed stacks (`comm;f1;f2 µs`), one line per path, own time in microseconds, for
/// flamegraph tools.
pub fn render_collapsed(
    procs: &[ProcessCalls],
    o: &CallsReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    for p in procs {
        let mut rows = path_rows(p, o.threads);
        sort_rows(&mut rows, SortKey::Name);
        for r in rows {
            let us = (r.msecs * 1000.0).round() as u64;
            if us == 0 {
                continue;
            }
            let tid = r.tid.map(|t| format!(";tid {t}")).unwrap_or_default();
            writeln!(
                out,
                "{} [{}]{tid};{} {us}",
                p.comm(),
                p.pid,
                r.path.join(";")
            )?;
        }
    }
    Ok(())
}

/// What a collection wrote, one line each for standard error: the processes and call paths
/// written to `out` (and how to read them), then each process's warnings of lost data.
pub fn render_summary(procs: &[ProcessCalls], out: &std::path::Path, bytes: u64) -> Vec<String> {
    let paths: usize = procs
        .iter()
        .flat_map(|p| &p.threads)
        .map(|t| t.paths.len().saturating_sub(1))
        .sum();
    let line = hood_format::wrote_line(
        out,
        bytes,
        hood_format::FileKind::Calls,
        &format!(
            "{} process{}, {paths} call paths",
            procs.len(),
            if procs.len() == 1 { "" } else { "es" },
        ),
    );
    let mut lines = vec![safe::text(&line).into_owned()];
    for p in procs {
        for n in p.flag_notes() {
            lines.push(format!("warning: pid {}: {}", p.pid, safe::text(&n)));
        }
    }
    lines
}
