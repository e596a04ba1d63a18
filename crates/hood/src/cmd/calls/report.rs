//! `hood calls report`.

use std::io::Write;
use std::process::ExitCode;

use hood_model::calls::SortKey;
use hood_report::calls::{render_collapsed, render_json, render_text, CallsReportOptions};
use hood_report::pprof::calls::{render_calls_pprof, CallsPprofOptions};

use super::{FormatArg, ReportArgs, SortArg};

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    crate::cmd::note_killed_writers(&a.file, hood_format::FileKind::Calls);
    let file = hood_hooks::calls::read(&a.file, &mut |w| errln!("hood: warning: {}", crate::cmd::clean(w)))
        .map_err(|e| {
            crate::cmd::missing_file(
                e.into(),
                &a.file,
                "write one with `hood calls run -- PROGRAM` or `hood calls get`, or give the file's path: `hood calls report FILE`",
            )
        })?;
    let mut procs = file.procs;
    if let Some(pid) = a.pid {
        procs.retain(|p| p.pid == pid);
    }
    if procs.is_empty() {
        errln!(
            "hood calls report: no processes in {}{}",
            crate::cmd::clean(a.file.display()),
            a.pid.map(|p| format!(" with pid {p}")).unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
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
            build_ids: ids.ids,
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
    };
    let text = match a.format {
        FormatArg::Text => render_text(&procs, &opts),
        FormatArg::Json => render_json(&procs, &opts),
        FormatArg::Collapsed => render_collapsed(&procs, &opts),
        FormatArg::Pprof => unreachable!("handled above"),
    };
    out.write_all(text.as_bytes())?;
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}
