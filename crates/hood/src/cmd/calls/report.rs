//! `hood calls report`.

use std::process::ExitCode;

use hood_model::calls::SortKey;
use hood_report::calls::{render_collapsed, render_json, render_text, CallsReportOptions};

use super::{file, FormatArg, ReportArgs, SortArg};

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut procs = file::read(&a.file)?;
    if let Some(pid) = a.pid {
        procs.retain(|p| p.pid == pid);
    }
    if procs.is_empty() {
        eprintln!(
            "hood calls report: no processes in {}{}",
            a.file.display(),
            a.pid.map(|p| format!(" with pid {p}")).unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
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
    let out = match a.format {
        FormatArg::Text => render_text(&procs, &opts),
        FormatArg::Json => render_json(&procs, &opts),
        FormatArg::Collapsed => render_collapsed(&procs, &opts),
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}
