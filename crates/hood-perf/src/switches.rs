//! Context switches of one traced command (`hood trace record`): a software dummy event per
//! CPU for the child, with `context_switch = 1`, `inherit` (threads and children follow) and
//! `enable_on_exec`, timestamps on CLOCK_MONOTONIC. It samples nothing; the kernel only emits
//! PERF_RECORD_SWITCH (and LOST) records, each with the task's pid/tid and time
//! (`sample_id_all`, sample type [`SWITCH_SAMPLE_TYPE`]). No root needed for one's own child.
//! The rings are per CPU because the kernel refuses to map inherited per-task events.

use std::io;

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::cpus::online_cpus;
use crate::ring::CpuRings;
use crate::{sys, PerfError};

/// The `sample_type` of switch records' sample id trailer: `u32 pid, u32 tid, u64 time`.
pub const SWITCH_SAMPLE_TYPE: u64 = (b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME) as u64;

/// Open per-CPU switch rings of a child stopped before exec.
pub struct SwitchRecorder {
    rings: CpuRings,
}

fn attr() -> perf_event_attr {
    let mut a = perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: b::PERF_COUNT_SW_DUMMY as u64,
        sample_type: SWITCH_SAMPLE_TYPE,
        ..Default::default()
    };
    a.set_disabled(1);
    a.set_enable_on_exec(1);
    a.set_inherit(1);
    a.set_context_switch(1);
    a.set_exclude_kernel(1);
    crate::attr::on_trace_clock(&mut a, 4096);
    a
}

impl SwitchRecorder {
    /// Open the dummy event for `pid` (a child that has not exec'd yet) on every online CPU,
    /// each with a ring of `ring_pages` data pages (a power of two).
    pub fn open_child(pid: i32, ring_pages: usize) -> Result<SwitchRecorder, PerfError> {
        let mut rings = CpuRings::new(ring_pages)?;
        for cpu in online_cpus()? {
            let mut a = attr();
            let fd = sys::perf_event_open(&mut a, pid, cpu as i32).map_err(|e| {
                let what = format!("context switches of pid {pid} on CPU {cpu}");
                match e.raw_os_error().unwrap_or(0) {
                    libc::EACCES | libc::EPERM => {
                        crate::error::permission_error("dummy (context_switch)", what, pid, 2)
                    }
                    libc::ESRCH => PerfError::NoSuchProcess(pid),
                    _ => PerfError::Sys {
                        call: "perf_event_open",
                        what,
                        source: e,
                    },
                }
            })?;
            rings.add(fd, cpu, || {
                format!("context switches of pid {pid} on CPU {cpu}")
            })?;
        }
        Ok(SwitchRecorder { rings })
    }

    /// Open the dummy event for the running threads `tids` (and what they start from now on)
    /// on every online CPU, enabled at once; the events of a CPU share one ring of
    /// `ring_pages` data pages. A thread that ended since it was listed is skipped.
    pub fn open_threads(tids: &[i32], ring_pages: usize) -> Result<SwitchRecorder, PerfError> {
        let mut rings = CpuRings::new(ring_pages)?;
        for cpu in online_cpus()? {
            for &tid in tids {
                let mut a = attr();
                a.set_enable_on_exec(0);
                a.set_disabled(0);
                let fd = match sys::perf_event_open(&mut a, tid, cpu as i32) {
                    Ok(fd) => fd,
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                    Err(e) => {
                        let what = format!("context switches of thread {tid} on CPU {cpu}");
                        return Err(match e.raw_os_error().unwrap_or(0) {
                            libc::EACCES | libc::EPERM => crate::error::permission_error(
                                "dummy (context_switch)",
                                what,
                                tid,
                                2,
                            ),
                            libc::EMFILE | libc::ENFILE => PerfError::TooManyFiles { what },
                            _ => PerfError::Sys {
                                call: "perf_event_open",
                                what,
                                source: e,
                            },
                        });
                    }
                };
                rings.add(fd, cpu, || {
                    format!("context switches of thread {tid} on CPU {cpu}")
                })?;
            }
        }
        Ok(SwitchRecorder { rings })
    }

    /// Hand each CPU's unread records to `sink` (raw ring bytes; one drain of a CPU may come in
    /// two slices where the ring wrapped). Returns the bytes drained.
    pub fn drain(
        &mut self,
        sink: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
    ) -> Result<usize, PerfError> {
        self.rings.drain(sink)
    }

    /// The attribute bytes used (for the recording file).
    pub fn attr_bytes() -> Vec<u8> {
        crate::attr::to_bytes(&attr())
    }
}
