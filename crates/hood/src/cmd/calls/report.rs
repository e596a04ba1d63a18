//! `hood calls report`.

use std::process::ExitCode;

use hood_report::calls::{render_collapsed, render_json, render_text, CallsReportOptions};
use hood_report::pprof::calls::{render_calls_pprof, CallsPprofOptions};
use hood_tracemodel::calls::SortKey;

use super::{FormatArg, ReportArgs, SortArg};

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let path = a.input.path("hood-calls.data");
    crate::cmd::note_killed_writers(&path, hood_format::FileKind::Calls);
    let file = hood_load::open_for(&path, hood_load::Command::CallsReport)
        .and_then(|_| {
            hood_load::calls::read(&path, &mut |w| {
                errln!("hood: warning: {}", crate::cmd::clean(w))
            })
        })
        .map_err(|e| {
            crate::cmd::missing_file(
                e.into(),
                &path,
                "write one with `hood calls run -- PROGRAM` or `hood calls get`, or name the file with -i FILE",
            )
        })?;
    let mut procs = file.procs;
    let sel = a.select;
    procs.retain(|p| sel.pid.is_none_or(|x| x == p.pid));
    if let Some(tid) = sel.tid {
        for p in &mut procs {
            p.threads.retain(|t| t.tid == tid);
        }
        procs.retain(|p| !p.threads.is_empty());
    }
    if procs.is_empty() {
        let what = sel.words();
        errln!(
            "hood calls report: no processes in {}{}",
            crate::cmd::clean(path.display()),
            if what.is_empty() {
                String::new()
            } else {
                format!(" match {}", what.join(" "))
            }
        );
        return Ok(ExitCode::from(1));
    }
    // Path rows hold every path's functions: a table of deep paths (a user's segment may claim
    // any) would take paths × depth of memory, so it is measured first and refused over the cap.
    if !a.functions || matches!(a.format, FormatArg::Collapsed | FormatArg::Pprof) {
        check_path_sizes(&procs, a.threads, &path, &|p| {
            format!(
                "read it per function with `hood calls report -f -i {}`",
                crate::cmd::clean(p.display())
            )
        })?;
    }
    if let FormatArg::Pprof = a.format {
        crate::cmd::refuse_binary_on_terminal(a.output.as_deref(), "pprof", "calls.pb.gz")?;
    }
    let mut out = crate::cmd::Output::open(a.output.as_deref())?;
    if let FormatArg::Pprof = a.format {
        // The call-path file does not record build-ids: they are read from the executables
        // now (a rebuilt or deleted one gets none, with a note).
        let ids = hood_hooks::calls::exe_build_ids(&procs);
        for w in &ids.warnings {
            errln!("hood: warning: {}", crate::cmd::clean(w));
        }
        let opts = CallsPprofOptions {
            threads: a.threads,
            build_ids: ids
                .ids
                .into_iter()
                .map(|(exe, id)| (exe, id.to_string()))
                .collect(),
            collected_unix_ns: file.meta.map_or(0, |m| m.collected_realtime_ns),
            comments: ids.comments,
        };
        render_calls_pprof(&procs, &opts, &mut out)?;
        out.finish()?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = CallsReportOptions {
        functions: a.functions,
        sort: match a.sort {
            SortArg::Name => SortKey::Name,
            SortArg::Calls => SortKey::Calls,
            SortArg::Time => SortKey::Time,
            SortArg::None => SortKey::None,
        },
        limit: a.lines,
        full_paths: a.full_paths,
        threads: a.threads,
        notes: a.notes,
    };
    match a.format {
        FormatArg::Text => render_text(&procs, &opts, &mut out)?,
        FormatArg::Json => render_json(&procs, &opts, &mut out)?,
        FormatArg::Collapsed => render_collapsed(&procs, &opts, &mut out)?,
        FormatArg::Pprof => unreachable!("handled above"),
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// Functions, summed over the paths of a path report, it holds unless `HOOD_REPORT_MAX_FRAMES`
/// says otherwise: about 512 MiB of rows.
const MAX_FRAMES: u64 = 1 << 23;

/// Refuse a path report (or a diff `--by path`) whose rows would hold more functions than the
/// cap, naming the process, its size, the cap and the ways to read the file (`instead`: the
/// command that reads it without path rows).
pub(crate) fn check_path_sizes(
    procs: &[hood_tracemodel::calls::ProcessCalls],
    per_thread: bool,
    path: &std::path::Path,
    instead: &dyn Fn(&std::path::Path) -> String,
) -> anyhow::Result<()> {
    let cap = std::env::var("HOOD_REPORT_MAX_FRAMES")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(MAX_FRAMES);
    let mut total = 0u64;
    for p in procs {
        let s = hood_tracemodel::calls::path_size(p, per_thread);
        total = total.saturating_add(s.frames);
        if total > cap {
            anyhow::bail!(
                "{}: pid {} ({}) has {} call paths with {} functions along them (the longest {} \
                 deep), more than a path report holds ({cap} functions in all, about 64 bytes \
                 each; HOOD_REPORT_MAX_FRAMES): {}, or set HOOD_REPORT_MAX_FRAMES higher if this \
                 machine has the memory",
                crate::cmd::clean(path.display()),
                p.pid,
                crate::cmd::clean(p.comm()),
                s.paths,
                s.frames,
                s.deepest,
                instead(path),
            );
        }
    }
    Ok(())
}
