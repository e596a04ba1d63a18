//! `hood calls report`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use hood_format::{tags, Reader};
use hood_model::calls::{CallsMeta, ProcessCalls, SortKey};
use hood_report::calls::{render_collapsed, render_json, render_text, CallsReportOptions};
use hood_report::pprof::calls::{render_calls_pprof, CallsPprofOptions};

use super::{file, FormatArg, ReportArgs, SortArg};

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut procs = file::read(&a.file).map_err(|e| {
        crate::cmd::missing_file(
            e,
            &a.file,
            "write one with `hood calls run -- PROGRAM` or `hood calls get`, or give the file's path: `hood calls report FILE`",
        )
    })?;
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
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => {
            if let FormatArg::Pprof = a.format {
                crate::cmd::refuse_binary_on_terminal(None, "pprof", "calls.pb.gz")?;
            }
            Box::new(BufWriter::new(std::io::stdout().lock()))
        }
    };
    if let FormatArg::Pprof = a.format {
        let opts = pprof_options(&a.file, &procs, a.threads);
        render_calls_pprof(&procs, &opts, &mut out)?;
        out.flush()?;
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
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The pprof options: build-ids of the executables (read from the files now: the call-path
/// file does not record them, so a rebuilt or deleted executable gets none, with a note) and
/// the collection time from the file's META chunk.
fn pprof_options(data: &Path, procs: &[ProcessCalls], threads: bool) -> CallsPprofOptions {
    let mut build_ids = HashMap::new();
    let mut comments = Vec::new();
    for p in procs {
        if build_ids.contains_key(&p.exe) {
            continue;
        }
        match hood_symbols::read_build_id(Path::new(&p.exe)) {
            Ok(Some(id)) => {
                comments.push(format!("build-id of {} read at report time", p.exe));
                build_ids.insert(p.exe.clone(), hood_symbols::hex(&id));
            }
            Ok(None) => comments.push(format!("{} has no build-id", p.exe)),
            Err(e) => {
                eprintln!("hood: warning: no build-id for {}: {e}", p.exe);
                comments.push(format!("no build-id for {}: {e}", p.exe));
            }
        }
    }
    CallsPprofOptions {
        threads,
        build_ids,
        collected_unix_ns: collected_at(data).unwrap_or(0),
        comments,
    }
}

/// CLOCK_REALTIME of the collection from the META chunk, if readable.
fn collected_at(data: &Path) -> Option<u64> {
    let mut r = Reader::open(data).ok()?;
    for c in r.chunks() {
        let c = c.ok()?;
        if c.tag == tags::calls::META {
            let m: CallsMeta = serde_json::from_slice(&c.data).ok()?;
            return Some(m.collected_realtime_ns);
        }
    }
    None
}
