//! `--irq-time`: time spent in each irq and softirq handler, from the
//! `irq:irq_handler_entry/exit` and `irq:softirq_entry/exit` tracepoints.
//!
//! The events are hood-perf's irq recorder opened for every task of each CPU
//! ([`IrqRecorder::open_system`]: the recorder `hood trace` uses for one command), drained at
//! each refresh and decoded by hood-raw's irq decoder (the trace report's), so timestamps are
//! CLOCK_MONOTONIC nanoseconds. Entries and exits are matched per CPU, hard irqs and softirqs
//! apart (a hard irq may interrupt a softirq). Perf events need no tracefs instance: nothing
//! is left behind when hood is killed.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use hood_monitor::{HandlerTime, IrqTimeRaw};
use hood_perf::{IrqRecorder, PerfError};
use hood_raw::irq::{Irq, IrqDecoder};

use crate::ProcError;

/// Data pages of each CPU's ring (2 MiB), drained at every refresh.
const RING_PAGES: usize = 512;

/// A handler entered but not yet left on one CPU: (irq or vector number, entry time in ns).
type Pending = Option<(u32, u64)>;

/// A running irq/softirq handler timer. Dropping it closes its events.
pub struct IrqTracer {
    recorder: IrqRecorder,
    decoder: IrqDecoder,
    /// Each CPU's bytes of one drain (a ring that wrapped comes in two slices).
    bufs: BTreeMap<u32, Vec<u8>>,
    clock: HandlerClock,
    cost_ns: u64,
}

impl std::fmt::Debug for IrqTracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IrqTracer")
            .field("events", &self.clock.events)
            .field("lost", &self.clock.lost)
            .finish_non_exhaustive()
    }
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
             {owner}; hood runs as uid {uid}), and timing irq handlers needs the irq \
             tracepoints' formats there. Fix: run as root (`sudo hood top --irq-time`)",
            dir.display()
        )),
        e => ProcError::Trace(format!("timing irq handlers: {e}")),
    }
}

impl IrqTracer {
    /// Open the irq tracepoints on every CPU. Explains what is missing on failure (no root,
    /// no tracefs, no irq events).
    pub fn start() -> Result<Self, ProcError> {
        let recorder = IrqRecorder::open_system(RING_PAGES).map_err(trace_error)?;
        let meta = recorder.meta();
        Ok(IrqTracer {
            recorder,
            decoder: IrqDecoder::new(&meta),
            bufs: BTreeMap::new(),
            clock: HandlerClock::default(),
            cost_ns: 0,
        })
    }

    /// Read what arrived since the last call and return the cumulative handler times.
    pub fn poll(&mut self) -> IrqTimeRaw {
        let t0 = Instant::now();
        let bufs = &mut self.bufs;
        let drained = self.recorder.drain(&mut |cpu, bytes| {
            bufs.entry(cpu).or_default().extend_from_slice(bytes);
            Ok(())
        });
        for (&cpu, buf) in self.bufs.iter_mut() {
            let d = self.decoder.decode(cpu, buf);
            self.clock.lost = self.clock.lost.saturating_add(d.lost);
            if d.lost > 0 || d.malformed.is_some() {
                // Entries or exits are missing: a pair across the gap would be wrong.
                self.clock.forget(cpu);
            }
            d.irqs.iter().for_each(|i| self.clock.add(i));
            buf.clear();
        }
        self.cost_ns += t0.elapsed().as_nanos() as u64;
        IrqTimeRaw {
            handlers: self.clock.handlers(),
            unavailable: drained
                .err()
                .map(|e| format!("reading the irq events stopped: {e}")),
            events: self.clock.events,
            lost: self.clock.lost,
            cost_ns: self.cost_ns,
        }
    }
}

/// Handler runs from entries and exits in time order per CPU.
#[derive(Debug, Default)]
struct HandlerClock {
    /// Per CPU: pending hard irq and softirq.
    pending: HashMap<u32, (Pending, Pending)>,
    /// By (softirq, number).
    handlers: HashMap<(bool, u32), HandlerTime>,
    events: u64,
    lost: u64,
}

impl HandlerClock {
    fn add(&mut self, i: &Irq) {
        self.events += 1;
        let soft = i.kind.is_soft();
        let slot = self.pending.entry(i.cpu).or_default();
        let pend = if soft { &mut slot.1 } else { &mut slot.0 };
        if i.kind.is_entry() {
            *pend = Some((i.num, i.time_ns));
            let h = self
                .handlers
                .entry((soft, i.num))
                .or_insert_with(|| HandlerTime {
                    kind: if soft { "softirq" } else { "irq" }.into(),
                    number: i.num,
                    ..HandlerTime::default()
                });
            if !i.name.is_empty() && h.name != i.name {
                h.name.clone_from(&i.name);
            }
            return;
        }
        if let Some((n, start)) = pend.take() {
            if n == i.num {
                if let Some(h) = self.handlers.get_mut(&(soft, n)) {
                    h.count += 1;
                    h.total_ns = h.total_ns.saturating_add(i.time_ns.saturating_sub(start));
                }
            }
        }
    }

    fn forget(&mut self, cpu: u32) {
        self.pending.remove(&cpu);
    }

    fn handlers(&self) -> Vec<HandlerTime> {
        let mut out: Vec<HandlerTime> = self.handlers.values().cloned().collect();
        out.sort_by(|a, b| (&a.kind, a.number).cmp(&(&b.kind, b.number)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hood_raw::irq::IrqKind;

    fn irq(cpu: u32, kind: IrqKind, num: u32, t: u64, name: &str) -> Irq {
        Irq {
            pid: 0,
            tid: 0,
            time_ns: t,
            cpu,
            kind,
            num,
            name: name.into(),
        }
    }

    #[test]
    fn entries_and_exits_pair_per_cpu_in_nanoseconds_with_nesting() {
        let mut c = HandlerClock::default();
        for i in [
            irq(0, IrqKind::SoftEntry, 1, 1_000, "TIMER"),
            // A hard irq inside the softirq, and one on another CPU at the same time.
            irq(0, IrqKind::HardEntry, 24, 1_100, "virtio0-input.0"),
            irq(1, IrqKind::HardEntry, 24, 1_150, "virtio0-input.0"),
            irq(0, IrqKind::HardExit, 24, 1_350, ""),
            irq(1, IrqKind::HardExit, 24, 1_200, ""),
            irq(0, IrqKind::SoftExit, 1, 2_001, "TIMER"),
            // An exit without its entry (before the start) counts nothing.
            irq(1, IrqKind::SoftExit, 3, 2_100, "NET_RX"),
        ] {
            c.add(&i);
        }
        let h = c.handlers();
        assert_eq!(c.events, 7);
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(
            (h[0].kind.as_str(), h[0].number, h[0].name.as_str()),
            ("irq", 24, "virtio0-input.0")
        );
        assert_eq!((h[0].count, h[0].total_ns), (2, 250 + 50));
        assert_eq!(
            (h[1].kind.as_str(), h[1].name.as_str(), h[1].count),
            ("softirq", "TIMER", 1)
        );
        assert_eq!(h[1].total_ns, 1_001);
    }

    #[test]
    fn a_gap_forgets_what_was_pending() {
        let mut c = HandlerClock::default();
        c.add(&irq(0, IrqKind::HardEntry, 5, 100, "eth0"));
        c.forget(0);
        c.add(&irq(0, IrqKind::HardExit, 5, 900, ""));
        assert_eq!(c.handlers()[0].count, 0);
    }
}
