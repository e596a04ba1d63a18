//! Hard-irq and softirq entries/exits that interrupt one traced command (`hood trace record`):
//! the tracepoints `irq:irq_handler_entry/exit` and `irq:softirq_entry/exit` opened through
//! perf_event_open for the child (stopped before exec) with `inherit` and `enable_on_exec`.
//! A per-task tracepoint event fires only while one of the command's threads is the CPU's
//! current task, so exactly the interrupts that steal the traced threads' time are recorded.
//! The kernel refuses to map inherited per-task events opened with cpu = -1, so, like the
//! context-switch event, they are opened once per CPU; the four events of a CPU share one ring
//! (`PERF_EVENT_IOC_SET_OUTPUT`). Samples carry [`IRQ_SAMPLE_TYPE`] (tid, CLOCK_MONOTONIC time,
//! CPU, raw tracepoint record); the record's `common_type` tells the four events apart. The
//! tracepoint ids and record layouts are read from tracefs (they differ between kernels and
//! boots), and the `format` texts are handed to the caller to be stored with the rings.
//!
//! The same four tracepoints, opened for every task of each CPU ([`IrqRecorder::open_system`],
//! enabled at once), time every irq handler of the machine for `hood top --irq-time`.

use std::io;

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::cpus::online_cpus;
use crate::ring::CpuRings;
use crate::{sys, tracefs, PerfError};

/// `sample_type` of the irq samples: `u32 pid, u32 tid, u64 time, u32 cpu, u32 res,
/// u32 raw size, raw bytes` (padded to 8 bytes).
pub const IRQ_SAMPLE_TYPE: u64 =
    (b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU | b::PERF_SAMPLE_RAW) as u64;

/// The tracepoints recorded, `(subsystem, name)`.
pub const IRQ_TRACEPOINTS: [(&str, &str); 4] = [
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
];

/// One tracepoint as opened: its name and the text of its tracefs `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrqTracepoint {
    /// `sys:name`, e.g. `irq:softirq_entry`.
    pub name: String,
    /// The tracepoint id (the raw record's `common_type`).
    pub id: u64,
    /// The `format` file text (field offsets, softirq names).
    pub format: String,
}

/// Per-CPU irq rings of a child stopped before exec.
pub struct IrqRecorder {
    rings: CpuRings,
    tracepoints: Vec<IrqTracepoint>,
}

fn attr(id: u64) -> perf_event_attr {
    crate::attr::task_tracepoint(id, IRQ_SAMPLE_TYPE, true)
}

/// The tracepoint for every task of one CPU: enabled at once, nothing to inherit.
fn system_attr(id: u64) -> perf_event_attr {
    let mut a = crate::attr::task_tracepoint(id, IRQ_SAMPLE_TYPE, false);
    a.set_inherit(0);
    a.set_disabled(0);
    a
}

impl IrqRecorder {
    /// Open the four irq tracepoints for `pid` (a child that has not exec'd yet) on every
    /// online CPU, with one ring of `ring_pages` data pages (a power of two) per CPU. Fails
    /// with [`PerfError::Permission`] without root / CAP_PERFMON (raw tracepoint data) and
    /// with [`PerfError::NoTracefs`] / [`PerfError::NoTracepoint`] when tracefs or the
    /// tracepoints are missing; callers record without irq data then.
    pub fn open_child(pid: i32, ring_pages: usize) -> Result<IrqRecorder, PerfError> {
        Self::open(pid, ring_pages, attr)
    }

    /// Open the four irq tracepoints for every task on every online CPU, enabled at once,
    /// with one ring of `ring_pages` data pages (a power of two) per CPU: every handler run
    /// of the machine. Fails as [`IrqRecorder::open_child`] does.
    pub fn open_system(ring_pages: usize) -> Result<IrqRecorder, PerfError> {
        Self::open(-1, ring_pages, system_attr)
    }

    fn open(
        pid: i32,
        ring_pages: usize,
        attr: fn(u64) -> perf_event_attr,
    ) -> Result<IrqRecorder, PerfError> {
        let mut rings = CpuRings::new(ring_pages)?;
        let root = tracefs::mount_point()?;
        let mut tracepoints = Vec::new();
        for (sys, name) in IRQ_TRACEPOINTS {
            let id = tracefs::tracepoint_id_in(&root, sys, name)?;
            let format = tracefs::event_format(&root, sys, name)?;
            tracepoints.push(IrqTracepoint {
                name: format!("{sys}:{name}"),
                id,
                format,
            });
        }
        let whose = match pid {
            -1 => "all tasks".to_string(),
            pid => format!("pid {pid}"),
        };
        for cpu in online_cpus()? {
            for tp in &tracepoints {
                let mut a = attr(tp.id);
                let fd = sys::perf_event_open(&mut a, pid, cpu as i32)
                    .map_err(|e| open_error(e, &tp.name, &whose, pid, cpu))?;
                rings.add(fd, cpu, || format!("{} of {whose} on CPU {cpu}", tp.name))?;
            }
        }
        Ok(IrqRecorder { rings, tracepoints })
    }

    /// The tracepoints opened, with their ids and `format` texts.
    pub fn tracepoints(&self) -> &[IrqTracepoint] {
        &self.tracepoints
    }

    /// What a recording's META says of these rings: the sample type and the tracepoints.
    pub fn meta(&self) -> hood_raw::irq::IrqMeta {
        hood_raw::irq::IrqMeta {
            sample_type: IRQ_SAMPLE_TYPE,
            tracepoints: self
                .tracepoints
                .iter()
                .map(|t| hood_raw::irq::IrqTracepointMeta {
                    name: t.name.clone(),
                    id: t.id,
                    format: t.format.clone(),
                })
                .collect(),
        }
    }

    /// Hand each CPU's unread records to `sink` (raw ring bytes: PERF_RECORD_SAMPLE and
    /// PERF_RECORD_LOST; one drain of a CPU may come in two slices where the ring wrapped).
    /// Returns the bytes drained.
    pub fn drain(
        &mut self,
        sink: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
    ) -> Result<usize, PerfError> {
        self.rings.drain(sink)
    }

    /// The attribute bytes of the event with tracepoint id `id` (for the recording file).
    pub fn attr_bytes(id: u64) -> Vec<u8> {
        crate::attr::to_bytes(&attr(id))
    }
}

fn open_error(e: io::Error, event: &str, whose: &str, pid: i32, cpu: u32) -> PerfError {
    let what = format!("irq tracepoints of {whose} on CPU {cpu}");
    crate::error::open_error(e, event, what, pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_samples_every_hit_on_the_monotonic_clock() {
        let a = attr(42);
        assert_eq!(a.type_, b::PERF_TYPE_TRACEPOINT);
        assert_eq!(a.config, 42);
        assert_eq!(a.exclude_kernel(), 0);
        assert_eq!(
            (a.inherit(), a.enable_on_exec(), a.use_clockid()),
            (1, 1, 1)
        );
        assert_eq!(a.clockid, libc::CLOCK_MONOTONIC);
        assert_eq!(IrqRecorder::attr_bytes(42).len(), 144);
    }

    #[test]
    fn the_machine_wide_attribute_is_on_at_once_and_inherits_nothing() {
        let a = system_attr(42);
        assert_eq!((a.type_, a.config), (b::PERF_TYPE_TRACEPOINT, 42));
        assert_eq!(a.sample_type, IRQ_SAMPLE_TYPE);
        assert_eq!((a.disabled(), a.inherit(), a.enable_on_exec()), (0, 0, 0));
        assert_eq!((a.use_clockid(), a.clockid), (1, libc::CLOCK_MONOTONIC));
    }
}
