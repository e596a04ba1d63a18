//! `hood trace report`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use hood_model::trace::{analyze, load, tag_listing, AnalysisOptions};
use hood_report::trace as render;

use super::FormatArg;

/// Plain config of `hood trace report`.
pub struct ReportConfig {
    pub file: PathBuf,
    pub paths: bool,
    pub tid: Option<u32>,
    pub from_ns: Option<u64>,
    pub to_ns: Option<u64>,
    pub format: FormatArg,
    pub tags: bool,
    pub lines: Option<usize>,
}

pub fn report(c: ReportConfig) -> anyhow::Result<ExitCode> {
    let trace = load(&c.file).map_err(|e| {
        crate::cmd::missing_file(
            e.into(),
            &c.file,
            "write one with `hood trace record -- PROGRAM`, or give the file's path: `hood trace report FILE`",
        )
    })?;
    for w in &trace.warnings {
        eprintln!("hood: warning: {}: {w}", c.file.display());
    }
    for p in &trace.processes {
        for n in &p.notes {
            eprintln!("hood: note: pid {}: {n}", p.pid);
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if c.tags {
        render::tags(&tag_listing(&trace), &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = AnalysisOptions {
        tid: c.tid,
        paths: c.paths,
        calls: c.format == FormatArg::Chrome,
        from_ns: c.from_ns,
        to_ns: c.to_ns,
    };
    let a = analyze(&trace, &opts);
    if a.threads.is_empty() {
        eprintln!(
            "hood trace report: no events in {}{}",
            c.file.display(),
            c.tid
                .map(|t| format!(" for thread {t}"))
                .unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
    }
    match c.format {
        FormatArg::Json => render::json(&a, &mut out)?,
        FormatArg::Chrome => render::chrome(&a, &mut out)?,
        FormatArg::Text if c.paths => render::paths(&a, &mut out)?,
        FormatArg::Text => render::summary(&a, c.lines, &mut out)?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
