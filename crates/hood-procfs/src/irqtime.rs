//! `--irq-time`: time spent in each irq and softirq handler, measured from the
//! `irq:irq_handler_entry/exit` and `irq:softirq_entry/exit` tracepoints.
//!
//! A private tracefs instance `instances/hood-<pid>` with `trace_clock mono` carries only these
//! four events, so other tracing users are not disturbed. Its text `trace_pipe` is read without
//! blocking at each refresh; entry/exit pairs are matched per CPU. Timestamps in the text are in
//! microseconds, so a single run's time is quantized to 1 µs, but both ends are truncated the
//! same way and the average over many runs is unbiased. The instance is removed when the tracer
//! is dropped; instances of dead hood processes are removed at the next start.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Instant;

use hood_monitor::{HandlerTime, IrqTimeRaw};
use hood_perf::tracefs::{self, Instance};
use hood_perf::PerfError;

use crate::ProcError;

/// Name prefix of the instance (`hood-<pid>`).
const PREFIX: &str = "hood-";

const EVENTS: [(&str, &str); 4] = [
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
];

/// A handler entered but not yet left on one CPU: (irq or vector number, entry time in µs).
type Pending = Option<(u32, u64)>;

/// A running irq/softirq handler timer. Dropping it removes its tracefs instance.
#[derive(Debug)]
pub struct IrqTracer {
    /// Declared before the instance, so it is closed first: an instance with an open
    /// `trace_pipe` cannot be removed.
    pipe: File,
    /// Held for its `Drop`, which stops tracing and removes the instance.
    _instance: Instance,
    buf: Vec<u8>,
    carry: String,
    /// Per CPU: pending hard irq (number, entry µs) and softirq (vector, entry µs).
    pending: HashMap<u32, (Pending, Pending)>,
    handlers: HashMap<(bool, u32), HandlerTime>,
    events: u64,
    lost: u64,
    cost_ns: u64,
}

/// Why the tracer cannot start, in the monitor's words.
fn trace_error(e: PerfError) -> ProcError {
    match e {
        PerfError::TracefsRootOnly {
            dir,
            mode,
            owner,
            uid,
        } => ProcError::Trace(format!(
            "tracefs is mounted at {} but only root may use it (mode {mode:04o}, owner uid \
             {owner}; hood runs as uid {uid}), and timing irq handlers needs a tracefs \
             instance, which only root can create. Fix: run as root (`sudo hood top --irq-time`)",
            dir.display()
        )),
        e => ProcError::Trace(e.to_string()),
    }
}

impl IrqTracer {
    /// Set up the instance and start tracing. Explains what is missing on failure (no root,
    /// no tracefs, no irq events).
    pub fn start() -> Result<Self, ProcError> {
        let root = tracefs::mount_point().map_err(trace_error)?;
        // Removes the instances of dead hood processes first.
        let instance = Instance::create(&root, PREFIX, &EVENTS, 2048, &[]).map_err(trace_error)?;
        if let Some((sys, name)) = EVENTS.iter().find(|(sys, name)| {
            !instance
                .enabled()
                .iter()
                .any(|(s, n)| s == sys && n == name)
        }) {
            return Err(ProcError::Trace(format!(
                "this kernel has no {sys}/{name} tracepoint"
            )));
        }
        let path = instance.dir().join("trace_pipe");
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .map_err(|e| ProcError::Trace(format!("cannot open {}: {e}", path.display())))?;
        instance.start().map_err(trace_error)?;
        Ok(IrqTracer {
            pipe,
            _instance: instance,
            buf: vec![0; 1 << 16],
            carry: String::new(),
            pending: HashMap::new(),
            handlers: HashMap::new(),
            events: 0,
            lost: 0,
            cost_ns: 0,
        })
    }

    /// Read what arrived since the last call and return the cumulative handler times.
    pub fn poll(&mut self) -> IrqTimeRaw {
        let t0 = Instant::now();
        loop {
            match self.pipe.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => {
                    let chunk = String::from_utf8_lossy(&self.buf[..n]).into_owned();
                    self.carry.push_str(&chunk);
                    let text = std::mem::take(&mut self.carry);
                    let mut rest = text.as_str();
                    while let Some(nl) = rest.find('\n') {
                        self.line(&rest[..nl]);
                        rest = &rest[nl + 1..];
                    }
                    self.carry = rest.to_string();
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break, // WouldBlock: nothing more now
            }
        }
        self.cost_ns += t0.elapsed().as_nanos() as u64;
        let mut handlers: Vec<HandlerTime> = self.handlers.values().cloned().collect();
        handlers.sort_by(|a, b| (&a.kind, a.number).cmp(&(&b.kind, b.number)));
        IrqTimeRaw {
            handlers,
            unavailable: None,
            events: self.events,
            lost: self.lost,
            cost_ns: self.cost_ns,
        }
    }

    fn line(&mut self, l: &str) {
        if let Some(p) = l.find("[LOST ") {
            self.lost += l[p + 6..]
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            return;
        }
        let Some(parsed) = parse_line(l) else { return };
        self.events += 1;
        let (cpu, us, ev, num, name) = parsed;
        let slot = self.pending.entry(cpu).or_default();
        let (soft, pend) = match ev {
            Ev::IrqEntry | Ev::IrqExit => (false, &mut slot.0),
            Ev::SoftEntry | Ev::SoftExit => (true, &mut slot.1),
        };
        match ev {
            Ev::IrqEntry | Ev::SoftEntry => {
                *pend = Some((num, us));
                if let Some(n) = name {
                    let h = self
                        .handlers
                        .entry((soft, num))
                        .or_insert_with(|| HandlerTime {
                            kind: if soft { "softirq" } else { "irq" }.into(),
                            number: num,
                            ..HandlerTime::default()
                        });
                    if h.name != n {
                        h.name = n.to_string();
                    }
                }
            }
            Ev::IrqExit | Ev::SoftExit => {
                if let Some((n, start)) = pend.take() {
                    if n == num {
                        if let Some(h) = self.handlers.get_mut(&(soft, num)) {
                            h.count += 1;
                            h.total_ns += us.saturating_sub(start) * 1000;
                        }
                    }
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    IrqEntry,
    IrqExit,
    SoftEntry,
    SoftExit,
}

/// Parse one `trace_pipe` line: `comm-pid [cpu] flags secs.usecs: event: fields`.
/// Returns (cpu, timestamp µs, event, irq/vector number, name on entry).
fn parse_line(l: &str) -> Option<(u32, u64, Ev, u32, Option<&str>)> {
    let open = l.find("] ")?;
    let cpu_start = l[..open].rfind('[')?;
    let cpu = l[cpu_start + 1..open].trim().parse().ok()?;
    let after = &l[open + 2..];
    let colon = after.find(": ")?;
    let ts_str = after[..colon].split_whitespace().last()?;
    let (s, frac) = ts_str.split_once('.')?;
    let us = s.parse::<u64>().ok()? * 1_000_000 + frac.get(..6)?.parse::<u64>().ok()?;
    let body = &after[colon + 2..];
    let (ev_name, fields) = body.split_once(": ")?;
    let ev = match ev_name {
        "irq_handler_entry" => Ev::IrqEntry,
        "irq_handler_exit" => Ev::IrqExit,
        "softirq_entry" => Ev::SoftEntry,
        "softirq_exit" => Ev::SoftExit,
        _ => return None,
    };
    let key = if matches!(ev, Ev::IrqEntry | Ev::IrqExit) {
        "irq="
    } else {
        "vec="
    };
    let num = fields
        .split_whitespace()
        .find_map(|f| f.strip_prefix(key))?
        .parse()
        .ok()?;
    let name = match ev {
        Ev::IrqEntry => fields.split_once("name=").map(|(_, n)| n.trim()),
        Ev::SoftEntry => fields
            .split_once("action=")
            .map(|(_, n)| n.trim().trim_end_matches(']')),
        _ => None,
    };
    Some((cpu, us, ev, num, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_trace_lines() {
        let l = "          <idle>-0       [001] d.h1.  1234.567890: irq_handler_entry: irq=24 name=virtio0-input.0";
        assert_eq!(
            parse_line(l),
            Some((1, 1_234_567_890, Ev::IrqEntry, 24, Some("virtio0-input.0")))
        );
        let l =
            "     ksoftirqd/0-15      [000] ..s..   10.000001: softirq_entry: vec=1 [action=TIMER]";
        assert_eq!(
            parse_line(l),
            Some((0, 10_000_001, Ev::SoftEntry, 1, Some("TIMER")))
        );
        let l =
            "     ksoftirqd/0-15      [000] ..s..   10.000009: softirq_exit: vec=1 [action=TIMER]";
        assert_eq!(parse_line(l), Some((0, 10_000_009, Ev::SoftExit, 1, None)));
        assert_eq!(parse_line("garbage"), None);
        assert_eq!(parse_line("x [0] 1.2: irq_handler_exit: irq=x"), None);
    }
}
