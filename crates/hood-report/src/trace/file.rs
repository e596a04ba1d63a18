//! `hood trace report` on a trace: the file is read twice, never whole, by its reader (a
//! [`hood_tracemodel::trace::Events`], hood-load's trace file): once for everything but the
//! events (processes, switches, irqs, each thread's first event), then chunk by chunk through
//! the analysis, which
//! keeps per-function and per-thread state only. The code-path trace is printed thread by
//! thread as its lines complete; a thread with more lines than the analysis holds is walked
//! twice (the first walk finds the results of the calls still open when lines must be printed).

use std::io::Write;

use hood_tracemodel::trace::{
    tag_listing, Analysis, AnalysisOptions, Analyzer, Events, PathLine, Probe, Sink, ThreadKey,
    ThreadSummary, WakerFunctions, WakerTops,
};

use crate::ReportError;

/// The form of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The function summary (or, with `paths`, the code-path trace) as text.
    Text,
    /// Versioned JSON of the same.
    Json,
    /// Chrome trace-event JSON (Perfetto, chrome://tracing).
    Chrome,
}

/// What to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceReport {
    /// The code-path trace instead of the summary.
    pub paths: bool,
    /// Only the threads of this process.
    pub pid: Option<u32>,
    /// Only this thread.
    pub tid: Option<u32>,
    /// Window start, ns from the trace's start (code-path lines and chrome slices).
    pub from_ns: Option<u64>,
    /// Window end.
    pub to_ns: Option<u64>,
    /// The form.
    pub view: View,
    /// The listing of names and tags instead.
    pub tags: bool,
    /// Rows of the summary (`None`: all).
    pub lines: Option<usize>,
}

/// What [`report`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The report.
    Report,
    /// Nothing: the file (or the chosen thread) has no events; the caller says so.
    NoEvents,
}

/// Write the report of `trace` to `out`.
pub fn report(
    trace: &dyn Events,
    c: &TraceReport,
    out: &mut dyn Write,
) -> Result<Written, ReportError> {
    let head = trace.head();
    if c.tags {
        super::tags(&tag_listing(&head.processes), out)?;
        return Ok(Written::Report);
    }
    // A JSON report of a time window is that window's code-path lines (and the totals).
    let window = c.from_ns.is_some() || c.to_ns.is_some();
    let paths = c.paths || (c.view == View::Json && window);
    let opts = AnalysisOptions {
        pid: c.pid,
        tid: c.tid,
        paths,
        calls: c.view == View::Chrome,
        from_ns: c.from_ns,
        to_ns: c.to_ns,
    };
    let threads: Vec<ThreadKey> = head
        .threads
        .iter()
        .filter(|t| c.tid.is_none_or(|x| x == t.tid) && c.pid.is_none_or(|p| p == t.key().pid))
        .map(|t| t.key())
        .collect();
    if threads.is_empty() {
        return Ok(Written::NoEvents);
    }
    // The lines and slices name the function each traced waker was in: one more pass over
    // the wakers' events, when any woke a traced thread.
    let wakers = if paths || c.view == View::Chrome {
        waker_functions(trace)?
    } else {
        WakerFunctions::new()
    };
    if paths && c.view != View::Chrome {
        return print_paths(trace, c, &opts, &threads, &wakers, out);
    }
    let mut a = Analyzer::new(head, &opts);
    a.set_wakers(&wakers);
    match c.view {
        View::Chrome => {
            let mut sink = ChromeSink {
                w: super::ChromeWriter::begin(out)?,
                out,
            };
            feed_all(trace, &mut a, &|_| true, &mut sink)?;
            let mut done = a.finish();
            sink.w.records(&mut done, sink.out)?;
            sink.w.end(&done.threads, done.origin_mono_ns, sink.out)?;
        }
        _ => {
            feed_all(
                trace,
                &mut a,
                &|_| true,
                &mut hood_tracemodel::trace::NoSink,
            )?;
            let a = a.finish();
            if a.threads.is_empty() {
                return Ok(Written::NoEvents);
            }
            match c.view {
                View::Json => super::json(&a, out)?,
                _ => super::summary(&a, c.lines, out)?,
            }
        }
    }
    Ok(Written::Report)
}

/// The function each traced waker was in at its wake-ups (see [`WakerTops`]).
fn waker_functions(trace: &dyn Events) -> Result<WakerFunctions, ReportError> {
    let head = trace.head();
    let mut tops = WakerTops::new(head);
    if tops.is_empty() {
        return Ok(WakerFunctions::new());
    }
    let want: std::collections::HashSet<ThreadKey> = head
        .threads
        .iter()
        .map(|t| t.key())
        .filter(|k| tops.wants(k.pid, k.tid))
        .collect();
    trace.for_each_events(&|k| want.contains(&k), &mut |te| {
        tops.feed(&te);
        Ok(())
    })?;
    Ok(tops.finish())
}

/// Feed the events of the threads `want` picks, chunk by chunk, to `a`.
fn feed_all(
    trace: &dyn Events,
    a: &mut Analyzer,
    want: &dyn Fn(ThreadKey) -> bool,
    sink: &mut dyn Sink,
) -> Result<(), ReportError> {
    let mut io_err = None;
    trace.for_each_events(want, &mut |te| {
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
fn io_error(e: ReportError) -> std::io::Error {
    match e {
        ReportError::Io(e) => e,
        ReportError::Json(j) => match j.io_error_kind() {
            Some(k) => std::io::Error::new(k, j),
            None => std::io::Error::other(j),
        },
        e => std::io::Error::other(e),
    }
}

struct ChromeSink<'o> {
    w: super::ChromeWriter,
    out: &'o mut dyn Write,
}

impl Sink for ChromeSink<'_> {
    fn records(&mut self, a: &mut Analysis) -> Result<(), std::io::Error> {
        self.w.records(a, self.out).map_err(io_error)
    }
}

/// Prints a thread's code-path lines as they are flushed.
struct LineSink<'o> {
    json: Option<&'o mut super::JsonPathsWriter>,
    out: &'o mut dyn Write,
}

impl Sink for LineSink<'_> {
    fn lines(&mut self, _th: &ThreadSummary, lines: &[PathLine]) -> Result<(), std::io::Error> {
        let r = match self.json.as_deref_mut() {
            Some(j) => j.lines(lines, self.out),
            None => super::path_lines(lines, self.out),
        };
        r.map_err(io_error)
    }
}

/// The code-path trace (text or JSON), one thread at a time, in the order threads start.
fn print_paths(
    trace: &dyn Events,
    c: &TraceReport,
    opts: &AnalysisOptions,
    threads: &[ThreadKey],
    wakers: &WakerFunctions,
    out: &mut dyn Write,
) -> Result<Written, ReportError> {
    let head = trace.head();
    let mut a = Analyzer::new(head, opts);
    a.set_wakers(wakers);
    let mut json = match c.view {
        View::Json => Some(super::JsonPathsWriter::begin(out)?),
        _ => None,
    };
    for &key in threads {
        let one = move |k: ThreadKey| k == key;
        // First walk: it counts the thread in the totals and, if its lines fit, holds them.
        feed_all(trace, &mut a, &one, &mut Probe)?;
        let Some(first) = a.end(key) else {
            continue;
        };
        match json.as_mut() {
            Some(j) => j.thread_begin(out)?,
            None => super::path_heading(&first.summary, a.filter(), out)?,
        }
        let last = if first.flushes == 0 {
            first.summary.lines.clone()
        } else {
            // Second walk, printing as it goes, with the first walk's results for the calls
            // open at each flush.
            let mut b = Analyzer::new(head, opts);
            b.set_wakers(wakers);
            b.paths_pass_two(key, first.results);
            let mut sink = LineSink {
                json: json.as_mut(),
                out,
            };
            feed_all(trace, &mut b, &one, &mut sink)?;
            b.end(key).map(|e| e.summary.lines).unwrap_or_default()
        };
        match json.as_mut() {
            Some(j) => {
                j.lines(&last, out)?;
                j.thread_end(&first.summary, out)?;
            }
            None => super::path_lines(&last, out)?,
        }
    }
    let a = a.finish();
    if a.threads.is_empty() {
        return Ok(Written::NoEvents);
    }
    if let Some(j) = json {
        j.end(&a, out)?;
    }
    Ok(Written::Report)
}
