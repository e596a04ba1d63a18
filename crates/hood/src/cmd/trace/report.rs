//! `hood trace report`: the file is read twice, never whole: once for everything but the
//! events (processes, switches, irqs, each thread's first event), then chunk by chunk through
//! the analysis, which keeps per-function and per-thread state only. The code-path trace is
//! printed thread by thread as its lines complete; a thread with more lines than the analysis
//! holds is walked twice (the first walk finds the results of the calls still open when lines
//! must be printed).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hood_model::trace::{
    for_each_events, scan, tag_listing, Analysis, AnalysisOptions, Analyzer, PathLine, Probe, Sink,
    ThreadSummary, TraceHead,
};
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
    pub output: Option<PathBuf>,
}

pub fn report(c: ReportConfig) -> anyhow::Result<ExitCode> {
    let head = scan(&c.file).map_err(|e| {
        crate::cmd::missing_file(
            e.into(),
            &c.file,
            "write one with `hood trace record -- PROGRAM`, or give the file's path: `hood trace report FILE`",
        )
    })?;
    for w in &head.warnings {
        eprintln!("hood: warning: {}: {w}", c.file.display());
    }
    for p in &head.processes {
        for n in &p.notes {
            eprintln!("hood: note: pid {}: {n}", p.pid);
        }
    }
    let mut file = match &c.output {
        Some(p) => Some(hood_format::OutputFile::create(p)?),
        None => None,
    };
    let stdout = std::io::stdout();
    let mut lock = std::io::BufWriter::new(stdout.lock());
    let out: &mut dyn Write = match file.as_mut() {
        Some(f) => f,
        None => &mut lock,
    };
    let code = write_report(&c, &head, out)?;
    out.flush()?;
    if let (Some(f), Some(p)) = (file, &c.output) {
        f.commit()
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(code)
}

fn no_events(c: &ReportConfig) -> ExitCode {
    eprintln!(
        "hood trace report: no events in {}{}",
        c.file.display(),
        c.tid
            .map(|t| format!(" for thread {t}"))
            .unwrap_or_default()
    );
    ExitCode::from(1)
}

fn write_report(
    c: &ReportConfig,
    head: &TraceHead,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    if c.tags {
        render::tags(&tag_listing(&head.processes), out)?;
        return Ok(ExitCode::SUCCESS);
    }
    // A JSON report of a time window is that window's code-path lines (and the totals).
    let window = c.from_ns.is_some() || c.to_ns.is_some();
    let paths = c.paths || (c.format == FormatArg::Json && window);
    let opts = AnalysisOptions {
        tid: c.tid,
        paths,
        calls: c.format == FormatArg::Chrome,
        from_ns: c.from_ns,
        to_ns: c.to_ns,
    };
    let threads: Vec<(u32, u32)> = head
        .threads
        .iter()
        .filter(|t| c.tid.is_none_or(|x| x == t.tid))
        .map(|t| (t.pid, t.tid))
        .collect();
    if threads.is_empty() {
        return Ok(no_events(c));
    }
    if paths && c.format != FormatArg::Chrome {
        return print_paths(c, head, &opts, &threads, out);
    }
    let mut a = Analyzer::new(head, &opts);
    match c.format {
        FormatArg::Chrome => {
            let mut sink = ChromeSink {
                w: render::ChromeWriter::begin(out)?,
                out,
            };
            feed_all(&c.file, head, &mut a, &|_, _| true, &mut sink)?;
            let mut done = a.finish();
            sink.w.records(&mut done, sink.out)?;
            sink.w.end(&done.threads, done.origin_mono_ns, sink.out)?;
        }
        _ => {
            feed_all(
                &c.file,
                head,
                &mut a,
                &|_, _| true,
                &mut hood_model::trace::NoSink,
            )?;
            let a = a.finish();
            if a.threads.is_empty() {
                return Ok(no_events(c));
            }
            match c.format {
                FormatArg::Json => render::json(&a, out)?,
                _ => render::summary(&a, c.lines, out)?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Feed the events of the threads `want` picks, chunk by chunk, to `a`.
fn feed_all(
    file: &Path,
    head: &TraceHead,
    a: &mut Analyzer,
    want: &dyn Fn(u32, u32) -> bool,
    sink: &mut dyn Sink,
) -> anyhow::Result<()> {
    let mut io_err = None;
    for_each_events(file, head, want, &mut |te| {
        if io_err.is_none() {
            if let Err(e) = a.feed(&te, sink) {
                io_err = Some(e);
            }
        }
        Ok(())
    })?;
    match io_err {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// A renderer's error as the analysis's I/O error, keeping a broken pipe recognisable (so a
/// closed reader ends the report quietly).
fn io_error(e: hood_report::ReportError) -> std::io::Error {
    match e {
        hood_report::ReportError::Io(e) => e,
        hood_report::ReportError::Json(j) => match j.io_error_kind() {
            Some(k) => std::io::Error::new(k, j),
            None => std::io::Error::other(j),
        },
        e => std::io::Error::other(e),
    }
}

struct ChromeSink<'o> {
    w: render::ChromeWriter,
    out: &'o mut dyn Write,
}

impl Sink for ChromeSink<'_> {
    fn records(&mut self, a: &mut Analysis) -> Result<(), std::io::Error> {
        self.w.records(a, self.out).map_err(io_error)
    }
}

/// Prints a thread's code-path lines as they are flushed.
struct LineSink<'o> {
    json: Option<&'o mut render::JsonPathsWriter>,
    out: &'o mut dyn Write,
}

impl Sink for LineSink<'_> {
    fn lines(&mut self, _th: &ThreadSummary, lines: &[PathLine]) -> Result<(), std::io::Error> {
        let r = match self.json.as_deref_mut() {
            Some(j) => j.lines(lines, self.out),
            None => render::path_lines(lines, self.out),
        };
        r.map_err(io_error)
    }
}

/// The code-path trace (text or JSON), one thread at a time, in the order threads start.
fn print_paths(
    c: &ReportConfig,
    head: &TraceHead,
    opts: &AnalysisOptions,
    threads: &[(u32, u32)],
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let mut a = Analyzer::new(head, opts);
    let mut json = match c.format {
        FormatArg::Json => Some(render::JsonPathsWriter::begin(out)?),
        _ => None,
    };
    for &(pid, tid) in threads {
        let one = move |p: u32, t: u32| (p, t) == (pid, tid);
        // First walk: it counts the thread in the totals and, if its lines fit, holds them.
        feed_all(&c.file, head, &mut a, &one, &mut Probe)?;
        let Some(first) = a.end(pid, tid) else {
            continue;
        };
        match json.as_mut() {
            Some(j) => j.thread_begin(out)?,
            None => render::path_heading(&first.summary, a.filter(), out)?,
        }
        let last = if first.flushes == 0 {
            first.summary.lines.clone()
        } else {
            // Second walk, printing as it goes, with the first walk's results for the calls
            // open at each flush.
            let mut b = Analyzer::new(head, opts);
            b.paths_pass_two(pid, tid, first.results);
            let mut sink = LineSink {
                json: json.as_mut(),
                out,
            };
            feed_all(&c.file, head, &mut b, &one, &mut sink)?;
            b.end(pid, tid).map(|e| e.summary.lines).unwrap_or_default()
        };
        match json.as_mut() {
            Some(j) => {
                j.lines(&last, out)?;
                j.thread_end(&first.summary, out)?;
            }
            None => render::path_lines(&last, out)?,
        }
    }
    let a = a.finish();
    if a.threads.is_empty() {
        return Ok(no_events(c));
    }
    if let Some(j) = json {
        j.end(&a, out)?;
    }
    Ok(ExitCode::SUCCESS)
}
