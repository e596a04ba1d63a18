//! `hood trace report`: the command line of [`hood_report::trace::report`], which streams the
//! trace file's events through the analysis, never holding the file whole.

use std::process::ExitCode;

use hood_load::trace::TraceFile;
use hood_report::trace::{TraceReport, View, Written};
use hood_tracemodel::trace::Events;

use super::{FormatArg, ReportArgs};

/// `hood trace report`, with its warnings on standard error.
pub fn report(c: ReportArgs) -> anyhow::Result<ExitCode> {
    let file = c.input.path("hood-trace.data");
    crate::cmd::note_killed_writers(&file, hood_format::FileKind::Trace);
    let trace = hood_load::open_for(&file, hood_load::Command::TraceReport)
        .and_then(|_| TraceFile::open(&file))
        .map_err(|e| {
            crate::cmd::missing_file(
                e.into(),
                &file,
                "write one with `hood trace record -- PROGRAM`, or name the file with -i FILE",
            )
        })?;
    let head = trace.head();
    for w in &head.warnings {
        errln!(
            "hood: warning: {}",
            crate::cmd::clean(format!("{}: {w}", file.display()))
        );
    }
    for p in &head.processes {
        for n in &p.notes {
            errln!("hood: note: pid {}: {}", p.pid, crate::cmd::clean(n));
        }
    }
    let mut out = crate::cmd::Output::open(c.output.as_deref())?;
    let what = TraceReport {
        paths: c.paths,
        pid: c.select.pid,
        tid: c.select.tid,
        from_ns: c.from,
        to_ns: c.to,
        view: match c.format {
            FormatArg::Text => View::Text,
            FormatArg::Json => View::Json,
            FormatArg::Chrome => View::Chrome,
        },
        tags: c.tags,
        lines: c.lines,
    };
    let written = hood_report::trace::report(&trace, &what, &mut out)?;
    out.finish()?;
    if written == Written::NoEvents {
        errln!(
            "hood trace report: no events in {}{}",
            crate::cmd::clean(file.display()),
            match c.select.words() {
                w if w.is_empty() => String::new(),
                w => format!(" matching {}", w.join(" ")),
            }
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
