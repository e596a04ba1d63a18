//! A sampling session: one ring per online CPU, every event of that CPU
//! redirected into it, raw bytes handed out by [`Session::drain`].

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::Duration;

use perf_event_open_sys::bindings::perf_event_attr;

use crate::attr;
use crate::cpus::online_cpus;
use crate::offcpu::OffCpuTracepoints;
use crate::offcpu_bpf::DeferredStacks;
use crate::open::{open_target, Opened};
use crate::ring::Ring;
use crate::{sys, EventKind, PerfError, SamplingConfig, Target};

/// What [`Session::wait`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// At least one ring has data past its wakeup watermark (or a task event fired).
    Ready,
    /// The timeout passed; rings may still hold data below the watermark.
    Timeout,
    /// A signal interrupted the wait (EINTR); check your signal flags.
    Interrupted,
    /// Every sampled task has exited (Target::Tasks / Target::Child only);
    /// drain once more and stop.
    Hangup,
}

/// One ring's unread bytes in place: its CPU, and one slice, or two when they wrap.
pub type RingBytes<'a> = (u32, [&'a [u8]; 2]);

/// An open set of sampling events with their mapped per-CPU rings.
pub struct Session {
    // Field order matters: the BPF programs detach first, and rings are unmapped before the
    // descriptors close.
    deferred: Option<DeferredStacks>,
    rings: Vec<Ring>,
    pub(crate) fds: Vec<OwnedFd>,
    /// Whether each of `fds` is a sampling event ([`Session::grow_stack_copy`] replaces them).
    pub(crate) sampler: Vec<bool>,
    /// Sampling events replaced by ones with a bigger stack copy: disabled, never enabled
    /// again, kept open (one may own its CPU's ring; each still hangs up when its task ends).
    pub(crate) retired: Vec<OwnedFd>,
    /// The ring-owning event of each ring.
    pub(crate) leaders: Vec<Option<OwnedFd>>,
    pub(crate) target: Target,
    /// Processes that were children of `-p`'s processes when the session opened, and so
    /// are not sampled (nor their descendants).
    pub(crate) not_followed: Vec<i32>,
    cpu_fds: Vec<OwnedFd>,
    pub(crate) pollfds: Mutex<Vec<libc::pollfd>>,
    watch_hup: bool,
    event: EventKind,
    notes: Vec<String>,
    pub(crate) attr: perf_event_attr,
    pub(crate) cpus: Vec<u32>,
    off_cpu: Option<OffCpuTracepoints>,
    layouts: Vec<(u64, Vec<u8>)>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("event", &self.event)
            .field("cpus", &self.cpus)
            .field("events", &self.fds.len())
            .field("notes", &self.notes)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Opens (disabled) sampling events for `target` and maps one ring per online CPU.
    ///
    /// Hardware events fall back to cpu-clock when the machine has no PMU, and
    /// build ids are dropped on kernels without them; both leave a line in
    /// [`Session::notes`]. Threads that exit while being attached are skipped.
    pub fn open(cfg: &SamplingConfig, target: &Target) -> Result<Session, PerfError> {
        cfg.validate()?;
        let cpus = online_cpus()?;
        let Opened {
            rings,
            fds,
            sampler,
            leaders,
            cpu_fds,
            event,
            notes,
            attr,
            off_cpu,
            deferred,
            layouts,
        } = open_target(cfg, target, &cpus)?;
        let pollfds = fds
            .iter()
            .map(|fd| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        Ok(Session {
            deferred,
            rings,
            fds,
            sampler,
            retired: Vec::new(),
            leaders,
            target: target.clone(),
            not_followed: match target {
                Target::Tasks(pids) => crate::grow::children_of(pids),
                _ => Vec::new(),
            },
            cpu_fds,
            pollfds: Mutex::new(pollfds),
            watch_hup: !matches!(target, Target::System),
            event,
            notes,
            attr,
            cpus,
            off_cpu,
            layouts,
        })
    }

    /// The event actually sampled (after any fallback).
    pub fn event(&self) -> EventKind {
        self.event
    }

    /// One-line notes about fallbacks taken while opening.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The raw `perf_event_attr` exactly as passed to the kernel (`size` bytes).
    pub fn attr_bytes(&self) -> Vec<u8> {
        attr::to_bytes(&self.attr)
    }

    /// The events whose samples are laid out otherwise than [`Session::attr_bytes`] says, as
    /// (id, attribute bytes): with deferred off-CPU stacks, the switch and wake-up
    /// tracepoints carry no user registers, stack copy size or empty call chain. Their
    /// samples start with PERF_SAMPLE_IDENTIFIER, so a reader picks the layout by the id.
    pub fn layouts(&self) -> &[(u64, Vec<u8>)] {
        &self.layouts
    }

    /// The `sample_type` bits of the samples in the rings (but see [`Session::layouts`]).
    pub fn sample_type(&self) -> u64 {
        self.attr.sample_type
    }

    /// Whether the events sample kernel code (false after a fall back to user space only).
    pub fn samples_kernel(&self) -> bool {
        self.attr.exclude_kernel() == 0
    }

    /// The off-CPU tracepoints recorded ([`SamplingConfig::off_cpu`]).
    pub fn off_cpu(&self) -> Option<&OffCpuTracepoints> {
        self.off_cpu.as_ref()
    }

    /// The ids of the events whose samples carry the deferred off-CPU user stacks, when the
    /// kernel copies them only for long waits (see [`crate::DEFERRED_RETURN`]); `None` when
    /// every switch and wake-up sample carries its own.
    pub fn deferred_stack_ids(&self) -> Option<&[u64]> {
        self.deferred.as_ref().map(|d| d.output_ids())
    }

    /// The ids of the events whose samples are a task session's wake-ups written by its BPF
    /// program ([`SamplingConfig::off_cpu_bpf_wakeups`]): `sched_waking` records of the
    /// session's own threads whose `common_flags` are 0, for the reader to set their
    /// interrupt bits from the waker's kernel call chain. Empty when the session samples
    /// wake-ups with the tracepoint.
    pub fn wake_output_ids(&self) -> &[u64] {
        self.deferred.as_ref().map_or(&[], |d| d.wake_ids())
    }

    /// What the deferred programs' rate bound left untaken
    /// ([`SamplingConfig::off_cpu_stack_gap_ns`]): long waits' stacks, and preempted threads'
    /// copies; `None` without deferred stacks or if the kernel's counters could not be read.
    pub fn deferred_skipped(&self) -> Option<(u64, u64)> {
        self.deferred.as_ref().and_then(|d| d.skipped())
    }

    /// The CPU number of each ring, in ring order.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Number of perf events opened (threads × CPUs for task targets).
    pub fn event_count(&self) -> usize {
        self.fds.len()
    }

    /// Starts (or resumes) sampling on every event.
    ///
    /// For [`Target::Child`] there is no need to call this before the child
    /// execs: its events enable themselves at exec (`enable_on_exec`); calling
    /// it earlier would also sample the child between fork and exec.
    pub fn enable(&self) -> Result<(), PerfError> {
        self.each_fd("ioctl(PERF_EVENT_IOC_ENABLE)", sys::ioc_enable)
    }

    /// Pauses sampling on every event; side-band records keep arriving.
    pub fn disable(&self) -> Result<(), PerfError> {
        self.each_fd("ioctl(PERF_EVENT_IOC_DISABLE)", sys::ioc_disable)
    }

    fn each_fd(
        &self,
        call: &'static str,
        f: fn(&OwnedFd) -> io::Result<()>,
    ) -> Result<(), PerfError> {
        for fd in self.fds.iter().chain(&self.cpu_fds) {
            f(fd).map_err(|source| PerfError::Sys {
                call,
                what: format!("perf event fd {}", fd.as_raw_fd()),
                source,
            })?;
        }
        Ok(())
    }

    /// Waits up to `timeout` for ring data, a signal, or (task targets) the exit
    /// of every sampled task.
    pub fn wait(&self, timeout: Duration) -> Result<Readiness, PerfError> {
        let mut pfds = self.pollfds.lock().unwrap_or_else(|p| p.into_inner());
        if self.watch_hup && pfds.iter().all(|p| p.fd < 0) {
            return Ok(Readiness::Hangup);
        }
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        let n = match sys::poll(&mut pfds, ms) {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => return Ok(Readiness::Interrupted),
            Err(source) => {
                return Err(PerfError::Sys {
                    call: "poll",
                    what: "perf ring buffers".into(),
                    source,
                })
            }
        };
        if n == 0 {
            return Ok(Readiness::Timeout);
        }
        let mut ready = false;
        for p in pfds.iter_mut() {
            ready |= p.revents & libc::POLLIN != 0;
            if self.watch_hup && p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                // Stop watching a finished task's event, or poll would spin on it.
                p.fd = -1;
            }
            p.revents = 0;
        }
        if self.watch_hup && pfds.iter().all(|p| p.fd < 0) {
            Ok(Readiness::Hangup)
        } else if ready {
            Ok(Readiness::Ready)
        } else {
            Ok(Readiness::Timeout)
        }
    }

    /// Hands every ring's unread bytes to `sink(cpu, bytes)` and releases them to
    /// the kernel. A ring whose unread region wraps is handed over as two slices;
    /// the concatenation of all slices of one CPU, across calls, is a sequence of
    /// whole perf records. Returns the number of bytes drained. Does not allocate.
    /// If `sink` fails, that ring keeps its data and the error is returned.
    pub fn drain(
        &mut self,
        sink: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
    ) -> Result<usize, PerfError> {
        crate::ring::drain_all(&mut self.rings, sink)
    }

    /// Hands `f` every ring's unread bytes in place, without copying them: per ring its CPU
    /// and one slice, or two when the unread region wraps (a record may then start in the
    /// first and end in the second). Once `f` returns `Ok`, the bytes are released to the
    /// kernel; on an error they stay. Returns the number of bytes released.
    pub fn drain_in_place(
        &mut self,
        f: &mut dyn FnMut(&[RingBytes<'_>]) -> io::Result<()>,
    ) -> Result<usize, PerfError> {
        let mut heads = Vec::with_capacity(self.rings.len());
        let mut views = Vec::with_capacity(self.rings.len());
        for ring in &self.rings {
            let (head, parts) = ring.unread()?;
            heads.push(head);
            views.push((ring.cpu(), parts));
        }
        let total = views.iter().map(|(_, [a, b])| a.len() + b.len()).sum();
        let cpu = views.first().map_or(0, |v| v.0);
        f(&views).map_err(|source| PerfError::Sink { cpu, source })?;
        drop(views);
        for (ring, head) in self.rings.iter_mut().zip(heads) {
            ring.release(head);
        }
        Ok(total)
    }

    /// CPU of ring `i` (same order as [`Session::cpus`]).
    pub fn ring_cpu(&self, i: usize) -> Option<u32> {
        self.rings.get(i).map(Ring::cpu)
    }
}
