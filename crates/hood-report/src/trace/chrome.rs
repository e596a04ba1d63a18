//! Chrome trace-event JSON (opens in Perfetto and chrome://tracing): one complete ("X") event
//! per call, off-CPU intervals as "X" events in category `sched`, hard irqs and softirqs that
//! interrupted the thread as "X" events in category `irq`, marks as instant events,
//! process and thread names as metadata. Written as the analysis produces the records, so a
//! trace of any length is exported in bounded memory.
//!
//! A call slice carries its function's name and nothing else: speedscope names a frame by the
//! slice's name together with its `args`, so a per-call value there (the call's net time)
//! would make every call a frame of its own and nothing would group. Perfetto computes each
//! slice's self time from the nesting.

use std::io::Write;

use hood_tracemodel::trace::{Analysis, ThreadSummary};
use serde_json::{json, Value};

use crate::ReportError;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Writes one Chrome trace: [`ChromeWriter::begin`], [`ChromeWriter::records`] as often as
/// records come, [`ChromeWriter::end`].
pub struct ChromeWriter {
    first: bool,
}

impl ChromeWriter {
    /// Start the JSON document.
    pub fn begin(out: &mut dyn Write) -> Result<ChromeWriter, ReportError> {
        write!(out, "{{\"traceEvents\":[")?;
        Ok(ChromeWriter { first: true })
    }

    fn event(&mut self, v: Value, out: &mut dyn Write) -> Result<(), ReportError> {
        if !self.first {
            out.write_all(b",\n")?;
        }
        self.first = false;
        super::write_json(out, &v)?;
        Ok(())
    }

    /// Write the records `a` holds (calls, off-CPU intervals, irqs, marks) and take them out.
    pub fn records(&mut self, a: &mut Analysis, out: &mut dyn Write) -> Result<(), ReportError> {
        for c in std::mem::take(&mut a.calls) {
            self.event(
                json!({"ph": "X", "cat": "call", "name": c.name, "pid": c.pid, "tid": c.tid,
                "ts": us(c.start_ns), "dur": us(c.dur_ns)}),
                out,
            )?;
        }
        for o in std::mem::take(&mut a.off_intervals) {
            let mut v = json!({"ph": "X", "cat": "sched", "name": "off-CPU", "pid": o.pid,
                "tid": o.tid, "ts": us(o.start_ns), "dur": us(o.dur_ns)});
            // With wake-ups recorded: the blocked and runnable parts and who woke the thread.
            if let (Some(b), Some(r)) = (o.blocked_ns, o.runnable_ns) {
                let mut args = json!({"blocked_us": us(b), "runnable_us": us(r)});
                if let Some(w) = &o.waker {
                    args["woken_by"] = json!(w.describe());
                    args["waker"] = json!(w);
                }
                v["args"] = args;
            }
            self.event(v, out)?;
        }
        for (pid, tid, start, dur, name) in std::mem::take(&mut a.irq_intervals) {
            self.event(
                json!({"ph": "X", "cat": "irq", "name": name, "pid": pid, "tid": tid,
                "ts": us(start), "dur": us(dur)}),
                out,
            )?;
        }
        for (pid, tid, t, label) in std::mem::take(&mut a.marks) {
            self.event(
                json!({"ph": "i", "s": "t", "cat": "mark", "name": label, "pid": pid,
                "tid": tid, "ts": us(t)}),
                out,
            )?;
        }
        Ok(())
    }

    /// Name the processes and threads and close the document.
    pub fn end(
        mut self,
        threads: &[ThreadSummary],
        origin_mono_ns: u64,
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        for t in threads {
            self.event(
                json!({"ph": "M", "name": "process_name", "pid": t.pid, "tid": t.tid,
                "args": {"name": format!("{} [{}]", t.exe, t.pid)}}),
                out,
            )?;
            self.event(
                json!({"ph": "M", "name": "thread_name", "pid": t.pid, "tid": t.tid,
                "args": {"name": format!("tid {}", t.tid)}}),
                out,
            )?;
        }
        let other = json!({"producer": "hood trace report", "origin_mono_ns": origin_mono_ns});
        write!(out, "],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        super::write_json(out, &other)?;
        writeln!(out, "}}")?;
        Ok(())
    }
}

/// Write `a` (analysed with `calls` on, held in memory) as Chrome trace-event JSON.
pub fn chrome(a: &Analysis, out: &mut dyn Write) -> Result<(), ReportError> {
    let mut a = a.clone();
    let mut w = ChromeWriter::begin(out)?;
    w.records(&mut a, out)?;
    w.end(&a.threads, a.origin_mono_ns, out)
}
