//! Wake-ups of the threads of one traced command (`hood trace record`): the off-CPU session's
//! `sched:sched_waking` tracepoint, opened as its whole-CPU wake-up event is
//! ([`crate::offcpu`]: one event per CPU, no user stack), so a wake-up by an interrupt or by a
//! thread of another process is seen as well as one by the command's own threads. A per-task
//! event would fire only when the waker is traced. Samples carry [`WAKE_SAMPLE_TYPE`] (the
//! waker's pid and tid, CLOCK_MONOTONIC time, CPU, the raw record: wakee and `common_flags`,
//! which say whether a hard irq or a softirq did it). Whole-CPU tracepoints need root or
//! CAP_PERFMON; the caller records without wake-ups otherwise.

use std::io;

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::cpus::online_cpus;
use crate::offcpu::{self, OffCpuTracepoints};
use crate::ring::CpuRings;
use crate::{sys, PerfError};

/// `sample_type` of the wake-up samples: `u32 pid, u32 tid, u64 time, u32 cpu, u32 res,
/// u32 raw size, raw bytes` (padded to 8 bytes).
pub const WAKE_SAMPLE_TYPE: u64 =
    (b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU | b::PERF_SAMPLE_RAW) as u64;

/// Per-CPU `sched:sched_waking` rings.
pub struct WakeupRecorder {
    rings: CpuRings,
    tracepoints: OffCpuTracepoints,
}

/// The sampling attribute the off-CPU attribute builders start from: the trace's clock
/// (CLOCK_MONOTONIC, as its switch and irq records) and sample layout.
fn base() -> perf_event_attr {
    let mut a = perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        sample_type: WAKE_SAMPLE_TYPE,
        ..Default::default()
    };
    crate::attr::on_trace_clock(&mut a, 1 << 16);
    a
}

fn attr(waking_id: u64) -> perf_event_attr {
    offcpu::cpu_wakeups(&base(), waking_id)
}

impl WakeupRecorder {
    /// Open `sched:sched_waking` on every online CPU, enabled at once, each with a ring of
    /// `ring_pages` data pages (a power of two). Fails with [`PerfError::Permission`] without
    /// root / CAP_PERFMON and with [`PerfError::NoTracefs`] / [`PerfError::NoTracepoint`]
    /// when tracefs or the tracepoint is missing.
    pub fn open(ring_pages: usize) -> Result<WakeupRecorder, PerfError> {
        let mut rings = CpuRings::new(ring_pages)?;
        let tracepoints = OffCpuTracepoints::find()?;
        for cpu in online_cpus()? {
            let mut a = attr(tracepoints.waking_id);
            let fd = sys::perf_event_open(&mut a, -1, cpu as i32).map_err(|e| {
                let what = format!("wake-ups on CPU {cpu}");
                match e.raw_os_error().unwrap_or(0) {
                    libc::EACCES | libc::EPERM => {
                        crate::error::permission_error("sched:sched_waking", what, -1, 0)
                    }
                    libc::EMFILE | libc::ENFILE => PerfError::TooManyFiles { what },
                    _ => PerfError::Sys {
                        call: "perf_event_open",
                        what: format!("sched:sched_waking ({what})"),
                        source: e,
                    },
                }
            })?;
            rings.add(fd, cpu, || format!("wake-ups on CPU {cpu}"))?;
        }
        Ok(WakeupRecorder { rings, tracepoints })
    }

    /// The tracepoints' ids and `format` texts (to be stored with the records).
    pub fn tracepoints(&self) -> &OffCpuTracepoints {
        &self.tracepoints
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakeups_sample_every_hit_on_the_monotonic_clock_without_user_stacks() {
        let a = attr(375);
        assert_eq!((a.type_, a.config), (b::PERF_TYPE_TRACEPOINT, 375));
        assert_eq!(a.sample_type, WAKE_SAMPLE_TYPE);
        assert_eq!((a.freq(), a.sample_period), (0, 1));
        assert_eq!((a.exclude_kernel(), a.disabled(), a.inherit()), (0, 0, 0));
        assert_eq!((a.use_clockid(), a.clockid), (1, libc::CLOCK_MONOTONIC));
    }
}
