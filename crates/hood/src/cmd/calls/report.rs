//! `hood calls report`.

use std::io::Write;
use std::process::ExitCode;

use hood_model::calls::SortKey;
use hood_report::calls::{render_collapsed, render_json, render_text, CallsReportOptions};
use hood_report::pprof::calls::{render_calls_pprof, CallsPprofOptions};

use super::{FormatArg, ReportArgs, SortArg};

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let path = crate::cmd::select::input(&a.input, &a.file, "hood-calls.data");
    crate::cmd::note_killed_writers(&path, hood_format::FileKind::Calls);
    let file = hood_hooks::calls::read(&path, &mut |w| errln!("hood: warning: {}", crate::cmd::clean(w)))
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
        notes: a.notes,
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
