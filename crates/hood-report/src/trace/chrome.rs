//! Chrome trace-event JSON (opens in Perfetto and chrome://tracing): one complete ("X") event
//! per call, off-CPU intervals as "X" events in category `sched`, hard irqs and softirqs that
//! interrupted the thread as "X" events in category `irq`, marks as instant events,
//! process and thread names as metadata.
//!
//! A call slice carries its function's name and nothing else: speedscope names a frame by the
//! slice's name together with its `args`, so a per-call value there (the call's net time)
//! would make every call a frame of its own and nothing would group. Perfetto computes each
//! slice's self time from the nesting.

use std::io::Write;

use hood_model::trace::Analysis;
use serde_json::{json, Value};

use crate::ReportError;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Write `a` (analysed with `calls` on) as Chrome trace-event JSON.
pub fn chrome(a: &Analysis, out: &mut dyn Write) -> Result<(), ReportError> {
    let mut ev: Vec<Value> = Vec::new();
    for t in &a.threads {
        ev.push(
            json!({"ph": "M", "name": "process_name", "pid": t.pid, "tid": t.tid,
            "args": {"name": format!("{} [{}]", t.exe, t.pid)}}),
        );
        ev.push(
            json!({"ph": "M", "name": "thread_name", "pid": t.pid, "tid": t.tid,
            "args": {"name": format!("tid {}", t.tid)}}),
        );
    }
    for c in &a.calls {
        ev.push(
            json!({"ph": "X", "cat": "call", "name": c.name, "pid": c.pid, "tid": c.tid,
            "ts": us(c.start_ns), "dur": us(c.dur_ns)}),
        );
    }
    for &(pid, tid, start, dur) in &a.off_intervals {
        ev.push(
            json!({"ph": "X", "cat": "sched", "name": "off-CPU", "pid": pid, "tid": tid,
            "ts": us(start), "dur": us(dur)}),
        );
    }
    for (pid, tid, start, dur, name) in &a.irq_intervals {
        ev.push(
            json!({"ph": "X", "cat": "irq", "name": name, "pid": pid, "tid": tid,
            "ts": us(*start), "dur": us(*dur)}),
        );
    }
    for (pid, tid, t, label) in &a.marks {
        ev.push(
            json!({"ph": "i", "s": "t", "cat": "mark", "name": label, "pid": pid,
            "tid": tid, "ts": us(*t)}),
        );
    }
    let v = json!({"traceEvents": ev, "displayTimeUnit": "ns",
        "otherData": {"producer": "hood trace report", "origin_mono_ns": a.origin_mono_ns}});
    serde_json::to_writer(&mut *out, &v)?;
    writeln!(out)?;
    Ok(())
}
