//! Opening the per-(task, CPU) events with the documented fallbacks:
//! hardware event → cpu-clock when there is no PMU, and MMAP2 build ids off
//! when the kernel predates them; then one ring per CPU with every other
//! event of that CPU redirected into it.

use std::collections::BTreeSet;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::attr::{self, AttrOpts};
use crate::cpus::threads_of;
use crate::offcpu::{self, OffCpuTracepoints, WakingLayout};
use crate::offcpu_bpf::{self, DeferredStacks, Fallback};
use crate::ring::Ring;
use crate::{sys, EventKind, PerfError, SamplingConfig, Target};

/// Opens events, remembering the fallbacks taken so that every later event of
/// the session gets the same attribute.
pub(crate) struct Opener<'a> {
    cfg: &'a SamplingConfig,
    pub event: EventKind,
    pub opts: AttrOpts,
    pub notes: Vec<String>,
    /// The attribute of the last successful open.
    pub attr: Option<perf_event_attr>,
}

impl<'a> Opener<'a> {
    pub fn new(cfg: &'a SamplingConfig, opts: AttrOpts) -> Opener<'a> {
        Opener {
            cfg,
            event: cfg.event,
            opts,
            notes: Vec::new(),
            attr: None,
        }
    }

    /// Opens one event for `pid` on `cpu`, applying fallbacks; `pid` is `-1`
    /// for every task on the CPU.
    pub fn open(&mut self, pid: i32, cpu: u32) -> Result<OwnedFd, PerfError> {
        loop {
            let mut attr = attr::build(self.cfg, self.event, self.opts);
            match sys::perf_event_open(&mut attr, pid, cpu as i32) {
                Ok(fd) => {
                    self.attr = Some(attr);
                    return Ok(fd);
                }
                Err(e) => {
                    let errno = e.raw_os_error().unwrap_or(0);
                    if self.event.is_hardware()
                        && matches!(errno, libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV)
                    {
                        self.notes.push(format!(
                            "no hardware PMU on this machine ({} not supported); sampling cpu-clock instead",
                            self.event
                        ));
                        self.event = EventKind::CpuClock;
                        continue;
                    }
                    if errno == libc::EINVAL && self.opts.sideband && self.opts.build_id {
                        self.notes.push(
                            "kernel does not support build ids in MMAP2 records (needs Linux 5.12); \
                             recording without them"
                                .to_string(),
                        );
                        self.opts.build_id = false;
                        continue;
                    }
                    return Err(self.error(e, pid, cpu));
                }
            }
        }
    }

    /// Turns an open failure into the error users can act on.
    pub fn error(&self, e: io::Error, pid: i32, cpu: u32) -> PerfError {
        let what = if pid == -1 {
            format!("all tasks on CPU {cpu}")
        } else {
            format!("pid {pid} on CPU {cpu}")
        };
        match e.raw_os_error().unwrap_or(0) {
            libc::EACCES | libc::EPERM => crate::error::permission_error(
                &self.event.to_string(),
                what,
                pid,
                if pid == -1 {
                    0
                } else if self.cfg.include_kernel {
                    1
                } else {
                    2
                },
            ),
            libc::ESRCH => PerfError::NoSuchProcess(pid),
            libc::EMFILE | libc::ENFILE => PerfError::TooManyFiles { what },
            libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => PerfError::Unsupported {
                event: self.event.to_string(),
                source: e,
            },
            _ => PerfError::Sys {
                call: "perf_event_open",
                what: format!("{} for {what}", self.event),
                source: e,
            },
        }
    }
}

/// Everything opened for one session: one ring per CPU (in CPU order) and all
/// event descriptors (ring owners and redirected events).
pub(crate) struct Opened {
    pub rings: Vec<Ring>,
    /// Events of the sampled tasks (or CPUs): polled, and hung up when their task exits.
    pub fds: Vec<OwnedFd>,
    /// Whether each of `fds` is a sampling (timer or PMU) event, not a tracepoint.
    pub sampler: Vec<bool>,
    /// The ring-owning event of each ring (a duplicate of one of `fds`), for redirecting
    /// events opened later.
    pub leaders: Vec<Option<OwnedFd>>,
    /// Whole-CPU events beside a task session (off-CPU wake-ups): not polled.
    pub cpu_fds: Vec<OwnedFd>,
    pub event: EventKind,
    pub notes: Vec<String>,
    pub attr: perf_event_attr,
    /// The off-CPU tracepoints, when recorded.
    pub off_cpu: Option<OffCpuTracepoints>,
    /// The programs that copy off-CPU user stacks only for long waits, when loaded.
    pub deferred: Option<DeferredStacks>,
    /// The events whose samples are laid out otherwise than `attr` says: id and attribute
    /// bytes (the off-CPU tracepoints with deferred stacks, [`Builder::trim`]).
    pub layouts: Vec<(u64, Vec<u8>)>,
}

/// Opens the events of `target` on every CPU of `cpus`.
pub(crate) fn open_target(
    cfg: &SamplingConfig,
    target: &Target,
    cpus: &[u32],
) -> Result<Opened, PerfError> {
    let (inherit, enable_on_exec) = match target {
        Target::System => (false, false),
        Target::Tasks(_) => (true, false),
        Target::Child(_) => (true, true),
    };
    let opts = AttrOpts {
        sideband: true,
        build_id: true,
        inherit,
        enable_on_exec,
    };
    check_sample_rate(cfg.freq_hz)?;
    let off_cpu = match cfg.off_cpu {
        true => Some(OffCpuTracepoints::find()?),
        false => None,
    };
    let mut notes = Vec::new();
    let deferred = match off_cpu {
        Some(_) if defers_stacks(cfg) => {
            let traced = match target {
                Target::System => None,
                Target::Child(pid) => Some(vec![*pid]),
                Target::Tasks(pids) => Some(pids.clone()),
            };
            let wakes = off_cpu
                .as_ref()
                .filter(|_| cfg.off_cpu_bpf_wakeups && traced.is_some())
                .and_then(|tp| WakingLayout::parse(tp.waking_id, tp.formats.get(1)?));
            if cfg.off_cpu_bpf_wakeups && traced.is_some() && wakes.is_none() {
                notes.push(
                    "off-CPU: the sched_waking tracepoint's format is not the one hood's BPF \
                     program writes, so the recording samples every wake-up of the machine \
                     (costlier on a busy machine)"
                        .to_string(),
                );
            }
            match offcpu_bpf::load(
                cfg.off_cpu_min_ns,
                cfg.off_cpu_stack_gap_ns,
                traced.as_deref(),
                cfg.off_cpu_hash_tables,
                wakes,
            ) {
                Ok(d) => {
                    match &d.fallback {
                        Some(Fallback::Refused(why)) => notes.push(format!(
                            "off-CPU: hood's BPF programs keep their per-thread state in hash \
                             tables, because the kernel refused task-local storage ({why}); a \
                             context-switch storm costs the workload more"
                        )),
                        Some(Fallback::Asked) => notes.push(
                            "off-CPU: hood's BPF programs keep their per-thread state in hash \
                             tables, as asked (HOOD_OFF_CPU_BPF=hash), the way of a kernel \
                             that refuses task-local storage; a context-switch storm costs the \
                             workload more"
                                .to_string(),
                        ),
                        None => {}
                    }
                    Some(d)
                }
                Err(e) => {
                    notes.push(format!(
                        "off-CPU: every context switch copies its user stack, because the \
                         kernel refused hood's BPF programs ({e}); a context-switch storm \
                         costs the workload more"
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    let mut b = Builder {
        opener: Opener::new(cfg, opts),
        defer_stacks: deferred.is_some(),
        cpus,
        ring_pages: cfg.ring_pages,
        rings: cpus.iter().map(|_| None).collect(),
        leaders: vec![None; cpus.len()],
        fds: Vec::new(),
        sampler: Vec::new(),
        seen: BTreeSet::new(),
        off_cpu: off_cpu.clone(),
        layouts: Vec::new(),
    };
    let first_pid = match target {
        Target::System => {
            for (i, &cpu) in cpus.iter().enumerate() {
                let fd = b.opener.open(-1, cpu)?;
                b.attach(i, cpu, fd, -1, true)?;
                b.add_tracepoints(i, cpu, -1)?;
            }
            -1
        }
        Target::Child(pid) => {
            if *pid <= 0 || b.add_task(*pid)? == 0 {
                return Err(PerfError::NoSuchProcess(*pid));
            }
            *pid
        }
        Target::Tasks(pids) => {
            let first = *pids
                .first()
                .ok_or_else(|| PerfError::InvalidConfig("no pid to attach to".into()))?;
            for &pid in pids {
                b.add_process(pid)?;
            }
            first
        }
    };
    // A task session's wake-ups: written by the BPF program for its own threads only, or
    // else sampled on every CPU for every thread.
    let bpf_wakes = deferred.as_ref().is_some_and(|d| d.writes_wakeups());
    let mut cpu_fds = match (&b.off_cpu, target) {
        (Some(tp), Target::Tasks(_) | Target::Child(_)) if !bpf_wakes => {
            b.add_cpu_wakeups(tp.waking_id)?
        }
        _ => Vec::new(),
    };
    let rings = b
        .rings
        .into_iter()
        .collect::<Option<Vec<Ring>>>()
        // Only possible when every thread vanished while we attached.
        .ok_or(PerfError::NoSuchProcess(first_pid))?;
    let attr = b.opener.attr.ok_or(PerfError::NoSuchProcess(first_pid))?;
    let mut deferred = deferred;
    if let Some(d) = deferred.as_mut() {
        for (i, &cpu) in cpus.iter().enumerate() {
            let Some(leader) = b.leaders[i] else {
                continue;
            };
            let fail = |source| PerfError::Sys {
                call: "perf_event_open",
                what: format!("the off-CPU stack outputs of CPU {cpu} (PERF_COUNT_SW_BPF_OUTPUT)"),
                source,
            };
            let open = |mut a: perf_event_attr| {
                let fd = sys::perf_event_open(&mut a, -1, cpu as i32).map_err(fail)?;
                sys::ioc_set_output(&fd, &b.fds[leader]).map_err(fail)?;
                Ok::<_, PerfError>(fd)
            };
            let copies = open(offcpu_bpf::output_attr(&attr))?;
            let kstacks = open(offcpu_bpf::kstack_output_attr(&attr))?;
            d.add_outputs(cpu, copies, kstacks).map_err(fail)?;
            if d.writes_wakeups() {
                // Laid out as the whole-CPU wake-up events would be (trimmed as they are).
                let mut w = offcpu::wake_output(&attr);
                trim(true, &mut w, 0);
                let fd = open(w)?;
                let id = sys::ioc_id(&fd).map_err(fail)?;
                b.layouts.push((id, attr::to_bytes(&w)));
                d.add_wake_output(cpu, &fd).map_err(fail)?;
                // Enabled and disabled with the session (a paused recording writes none).
                cpu_fds.push(fd);
            }
        }
    }
    let mut all_notes = b.opener.notes;
    all_notes.extend(notes);
    let leaders = b
        .leaders
        .iter()
        .map(|l| l.and_then(|l| b.fds[l].try_clone().ok()))
        .collect();
    Ok(Opened {
        rings,
        fds: b.fds,
        sampler: b.sampler,
        leaders,
        cpu_fds,
        event: b.opener.event,
        notes: all_notes,
        attr,
        off_cpu,
        deferred,
        layouts: b.layouts,
    })
}

/// [`Builder::trim`]: with `defer_stacks`, drop the stack copy and the `also` fields of `a`
/// and keep one user register; returns whether it did.
fn trim(defer_stacks: bool, a: &mut perf_event_attr, also: u32) -> bool {
    let copy = u64::from(b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER);
    if !defer_stacks || a.sample_type & copy != copy {
        return false;
    }
    a.sample_type &= !u64::from(b::PERF_SAMPLE_STACK_USER | also);
    a.sample_regs_user = attr::USER_IP_MASK;
    a.sample_stack_user = 0;
    true
}

/// Whether an off-CPU session of `cfg` lets the kernel copy user stacks only for long waits
/// ([`SamplingConfig::off_cpu_min_ns`] set, with stack copies).
fn defers_stacks(cfg: &SamplingConfig) -> bool {
    cfg.off_cpu_min_ns > 0 && cfg.callchain && cfg.include_user && cfg.user_stack.copies_stack()
}

/// Frequency mode is capped by kernel.perf_event_max_sample_rate (which the
/// kernel itself lowers when sampling interrupts take too long).
fn check_sample_rate(freq_hz: u64) -> Result<(), PerfError> {
    let path = "/proc/sys/kernel/perf_event_max_sample_rate";
    let max = std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    match max {
        Some(max) if freq_hz > max => Err(PerfError::InvalidConfig(format!(
            "sampling frequency {freq_hz} Hz exceeds kernel.perf_event_max_sample_rate = {max} \
             ({path}); use a lower -F or raise it with `sudo sysctl kernel.perf_event_max_sample_rate={freq_hz}`"
        ))),
        _ => Ok(()),
    }
}

struct Builder<'a> {
    opener: Opener<'a>,
    cpus: &'a [u32],
    ring_pages: usize,
    rings: Vec<Option<Ring>>,
    /// Index into `fds` of the ring-owning event of each CPU.
    leaders: Vec<Option<usize>>,
    fds: Vec<OwnedFd>,
    /// Whether each of `fds` is a sampling event.
    sampler: Vec<bool>,
    /// Threads already opened (a pid listed twice, or a thread id given as a
    /// pid, must not double its samples).
    seen: BTreeSet<i32>,
    /// Off-CPU tracepoints to open beside each timer event.
    off_cpu: Option<OffCpuTracepoints>,
    /// Their samples carry no user stack: BPF programs emit it for long waits.
    defer_stacks: bool,
    /// Ids and attributes of the events opened with [`Builder::trim`]'s layout.
    layouts: Vec<(u64, Vec<u8>)>,
}

impl Builder<'_> {
    /// Attaches to every thread of `pid`, re-listing /proc/PID/task until no new
    /// thread appears (threads created after their event opened are inherited).
    fn add_process(&mut self, pid: i32) -> Result<(), PerfError> {
        let mut opened = 0;
        for round in 0..8 {
            let tids = match threads_of(pid) {
                Ok(t) => t,
                Err(PerfError::NoSuchProcess(_)) if round > 0 => break,
                Err(e) => return Err(e),
            };
            let mut any_new = false;
            for tid in tids {
                if self.seen.insert(tid) {
                    any_new = true;
                    opened += self.add_task(tid)?;
                }
            }
            if !any_new {
                break;
            }
        }
        if opened == 0 && !self.seen.contains(&pid) {
            return Err(PerfError::NoSuchProcess(pid));
        }
        Ok(())
    }

    /// Opens `tid` on every CPU; returns how many events opened (0 when the
    /// thread no longer exists).
    fn add_task(&mut self, tid: i32) -> Result<usize, PerfError> {
        let mut n = 0;
        for (i, &cpu) in self.cpus.iter().enumerate() {
            match self.opener.open(tid, cpu) {
                Ok(fd) => {
                    self.attach(i, cpu, fd, tid, true)?;
                    match self.add_tracepoints(i, cpu, tid) {
                        Ok(()) | Err(PerfError::NoSuchProcess(_)) => {}
                        Err(e) => return Err(e),
                    }
                    n += 1;
                }
                Err(PerfError::NoSuchProcess(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// With off-CPU recording: the switch and wake-up events of `tid` (`-1`: every task) on
    /// CPU `i`, redirected into that CPU's ring.
    fn add_tracepoints(&mut self, i: usize, cpu: u32, tid: i32) -> Result<(), PerfError> {
        let (Some(tp), Some(base)) = (&self.off_cpu, self.opener.attr) else {
            return Ok(());
        };
        let switch = match tid {
            -1 => offcpu::tracepoint(&base, tp.switch_id),
            _ => offcpu::task_switch(&base, tp.switch_id),
        };
        let mut events = vec![(switch, "sched:sched_switch")];
        match (self.defer_stacks, tid) {
            // Deferred stacks: a long wait's waker comes with its kernel and user stack in a
            // copy; the wake-up sample itself only says who woke whom (unwinding the kernel
            // stack of every wake-up is most of what a storm costs). A task session's
            // whole-CPU wake-up events see its own threads' wake-ups too.
            (true, -1) => {
                let mut w = offcpu::tracepoint(&base, tp.waking_id);
                w.set_exclude_callchain_kernel(1);
                w.set_exclude_callchain_user(1);
                events.push((w, "sched:sched_waking"));
            }
            (true, _) => {}
            (false, _) => events.push((
                offcpu::tracepoint(&base, tp.waking_id),
                "sched:sched_waking",
            )),
        }
        for (mut a, name) in events {
            if self.defer_stacks {
                // No stack at all: a long wait's kernel stack comes when its thread is
                // switched back in, its user stack at its system call's return.
                a.set_exclude_callchain_kernel(1);
                a.set_exclude_callchain_user(1);
                a.sample_stack_user = 0;
            }
            let trimmed = self.trim(&mut a, b::PERF_SAMPLE_CALLCHAIN);
            let fd = sys::perf_event_open(&mut a, tid, cpu as i32)
                .map_err(|e| self.tracepoint_error(e, name, tid, cpu))?;
            if trimmed {
                self.note_layout(&fd, &a, name, tid, cpu)?;
            }
            self.attach(i, cpu, fd, tid, false)?;
        }
        Ok(())
    }

    /// With deferred stacks, the switch and wake-up samples carry no stack copy (not even its
    /// size word), one user register instead of three, and without the `also` fields (e.g.
    /// the empty call chain): 40 bytes fewer per sample of a storm's hundreds of thousands a
    /// second for the kernel to write and the recorder to read, near perf's own layout for
    /// `perf sched record`. One register stays because the kernel refuses an empty register
    /// mask, and its ABI word tells a task with a user context from a kernel thread. The
    /// samples keep PERF_SAMPLE_IDENTIFIER first, which names the event and so the layout;
    /// the recorder rewrites them into the recording's one layout (it unwinds the session's
    /// stack copies, so it exists whenever the samples carry them). Returns whether `a` was
    /// trimmed.
    fn trim(&self, a: &mut perf_event_attr, also: u32) -> bool {
        trim(self.defer_stacks, a, also)
    }

    /// Keep the id and layout of an event opened with [`Builder::trim`]'s layout.
    fn note_layout(
        &mut self,
        fd: &OwnedFd,
        a: &perf_event_attr,
        name: &str,
        tid: i32,
        cpu: u32,
    ) -> Result<(), PerfError> {
        let id = sys::ioc_id(fd).map_err(|e| PerfError::Sys {
            call: "ioctl(PERF_EVENT_IOC_ID)",
            what: format!("{name} of thread {tid} on CPU {cpu}"),
            source: e,
        })?;
        self.layouts.push((id, attr::to_bytes(a)));
        Ok(())
    }

    /// Beside a task session: one whole-CPU wake-up event per CPU, so wake-ups that come from
    /// interrupts and other processes are seen too.
    fn add_cpu_wakeups(&mut self, waking_id: u64) -> Result<Vec<OwnedFd>, PerfError> {
        let Some(base) = self.opener.attr else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (i, &cpu) in self.cpus.iter().enumerate() {
            let mut a = offcpu::cpu_wakeups(&base, waking_id);
            // The waker's kernel call chain stays; no user registers or stack.
            let trimmed = self.trim(&mut a, 0);
            let fd = sys::perf_event_open(&mut a, -1, cpu as i32)
                .map_err(|e| self.tracepoint_error(e, "sched:sched_waking", -1, cpu))?;
            if trimmed {
                self.note_layout(&fd, &a, "sched:sched_waking", -1, cpu)?;
            }
            if let Some(l) = self.leaders[i] {
                sys::ioc_set_output(&fd, &self.fds[l]).map_err(|e| PerfError::Sys {
                    call: "ioctl(PERF_EVENT_IOC_SET_OUTPUT)",
                    what: format!("wake-ups on CPU {cpu}"),
                    source: e,
                })?;
            }
            out.push(fd);
        }
        Ok(out)
    }

    fn tracepoint_error(&self, e: io::Error, name: &str, pid: i32, cpu: u32) -> PerfError {
        let what = match pid {
            -1 => format!("{name} on all tasks of CPU {cpu} (hood record --off-cpu)"),
            _ => format!("{name} of pid {pid} on CPU {cpu} (hood record --off-cpu)"),
        };
        match e.raw_os_error().unwrap_or(0) {
            libc::EACCES | libc::EPERM => crate::error::permission_error(name, what, pid, -1),
            libc::ESRCH => PerfError::NoSuchProcess(pid),
            libc::EMFILE | libc::ENFILE => PerfError::TooManyFiles { what },
            _ => PerfError::Sys {
                call: "perf_event_open",
                what,
                source: e,
            },
        }
    }

    /// Makes `fd` the owner of CPU `i`'s ring, or redirects it into that ring; `sampler`: a
    /// sampling event, not a tracepoint.
    fn attach(
        &mut self,
        i: usize,
        cpu: u32,
        fd: OwnedFd,
        tid: i32,
        sampler: bool,
    ) -> Result<(), PerfError> {
        match self.leaders[i] {
            None => {
                self.rings[i] = Some(Ring::map(fd.as_raw_fd(), cpu, self.ring_pages)?);
                self.leaders[i] = Some(self.fds.len());
            }
            Some(l) => sys::ioc_set_output(&fd, &self.fds[l]).map_err(|e| PerfError::Sys {
                call: "ioctl(PERF_EVENT_IOC_SET_OUTPUT)",
                what: format!("thread {tid} on CPU {cpu}"),
                source: e,
            })?,
        }
        self.fds.push(fd);
        self.sampler.push(sampler);
        Ok(())
    }
}
