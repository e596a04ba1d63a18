//! Entry and return probes on functions of programs nobody rebuilt (`hood trace record --probe`,
//! `hood calls run --probe`): uprobes defined in tracefs (`uprobe_events`, one entry `p:` and
//! one return `r:` event per function, in the group `hood_PID` of this recorder), placed at a
//! file offset of a file named by path: hood writes `/proc/self/fd/N` of the file it checked
//! and read the offset from, so the kernel resolves the very file hood read. Each event is
//! then opened through perf_event_open as a tracepoint.
//!
//! Why not the uprobe PMU (`/sys/bus/event_source/devices/uprobe`), whose probes die with
//! their descriptors: an inherited copy of a PMU uprobe is made when the probed program forks
//! or starts a thread, and the kernel then reads the probe's path from the attribute's
//! `config1` pointer in the *forking* program's memory, where it does not exist: every fork
//! and `pthread_create` of the probed program fails with EFAULT (seen on Linux 6.18). A
//! tracepoint event inherits with no such read, so threads and children are followed.
//! What that costs: a definition outlives a recorder killed by SIGKILL. It is inert (a
//! uprobe is placed in a program only while a perf event uses it, and the events die with
//! hood), and the next recorder removes the definitions whose hood is gone
//! ([`remove_stale_probes`]). Dropping the recorder closes the events, then removes its
//! definitions.
//!
//! Samples carry [`UPROBE_SAMPLE_TYPE`] (`u64 id, u32 pid, u32 tid, u64 time, u32 cpu, u32
//! res`), time on CLOCK_MONOTONIC; the id is the opened event's (an inherited copy reports its
//! parent's), which [`UprobeRecorder::ids`] maps back to the function and kind. As for the
//! context-switch event, inherited per-task events must be per CPU to be mapped: each CPU has
//! one ring, and every event of that CPU writes into it (`PERF_EVENT_IOC_SET_OUTPUT`).
//! A command started by hood is probed from its exec (`enable_on_exec`, `inherit`: threads and
//! children follow); the threads of a running process are probed each (`inherit` again, for
//! the threads and children they start), from [`UprobeRecorder::enable`] on.
//! With `track`, each task also has a side-band event (a software dummy event with `mmap2`,
//! `comm_exec` and `task`) in the same rings: its new executable mappings, execs, forks and
//! exits, from which the caller learns where probes must be added for an exec'd program or a
//! library loaded later ([`UprobeRecorder::add_points`], [`UprobeRecorder::attach`]: events
//! opened on each thread of a running process, inherited from then on, writing into the
//! recorder's rings).

use std::io;
use std::io::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::cpus::online_cpus;
use crate::ring::Ring;
use crate::{sys, tracefs, PerfError};

/// `sample_type` of a probe hit: `u64 id, u32 pid, u32 tid, u64 time, u32 cpu, u32 res`.
pub const UPROBE_SAMPLE_TYPE: u64 =
    (b::PERF_SAMPLE_IDENTIFIER | b::PERF_SAMPLE_TID | b::PERF_SAMPLE_TIME | b::PERF_SAMPLE_CPU)
        as u64;

/// Prefix of the tracefs event group of one recorder: `hood_PID`.
pub const GROUP_PREFIX: &str = "hood_";

/// A function to probe: the file (a path the kernel resolves when the probe is defined) and
/// the offset of its first instruction in that file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UprobePoint {
    /// The file, e.g. `/proc/self/fd/7`.
    pub path: String,
    /// Offset of the function in the file.
    pub offset: u64,
    /// A return probe too (a uretprobe); else an entry probe only (a Go function, whose
    /// stack a uretprobe would corrupt, or an inlined copy, which has no return).
    pub returns: bool,
}

/// Whose calls are probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UprobeTarget {
    /// A child held before exec: probed from its exec on, with everything it starts.
    Child(i32),
    /// Threads of running processes, with everything they start from now on.
    Threads(Vec<i32>),
}

/// What one event id stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UprobeId {
    /// The kernel's event id (a sample's `id`).
    pub id: u64,
    /// Index of the function in the points given to [`UprobeRecorder::open`].
    pub point: u32,
    /// A return (uretprobe), else an entry.
    pub ret: bool,
}

/// The uprobe definitions of one recorder, removed when dropped (after its events closed).
struct Definitions {
    file: PathBuf,
    names: Vec<String>,
}

impl Definitions {
    fn define(&mut self, line: &str, name: String) -> Result<(), PerfError> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.file)
            .map_err(|e| no_uprobes(&self.file, e))?;
        f.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| PerfError::File {
                path: self.file.clone(),
                source: io::Error::new(e.kind(), format!("defining {line:?}: {e}")),
            })?;
        self.names.push(name);
        Ok(())
    }
}

impl Drop for Definitions {
    fn drop(&mut self) {
        let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&self.file) else {
            return;
        };
        for n in self.names.drain(..).rev() {
            let _ = f.write_all(format!("-:{n}\n").as_bytes());
        }
    }
}

fn no_uprobes(file: &Path, e: io::Error) -> PerfError {
    PerfError::NoUprobes {
        reason: format!("{}: {e}", file.display()),
    }
}

/// Remove the uprobe definitions of recorders that are gone (killed by SIGKILL: see the module
/// documentation): groups `hood_PID` whose process no longer exists. Returns the groups
/// removed, for the caller to say so.
pub fn remove_stale_probes() -> Vec<String> {
    let Ok(root) = tracefs::mount_point() else {
        return Vec::new();
    };
    let file = root.join("uprobe_events");
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Vec::new();
    };
    let mut groups: Vec<String> = Vec::new();
    let mut names = Vec::new();
    for l in text.lines() {
        let Some(def) = l.split_whitespace().next() else {
            continue;
        };
        let Some((_, name)) = def.split_once(':') else {
            continue;
        };
        let Some((group, _)) = name.split_once('/') else {
            continue;
        };
        let Some(pid) = group.strip_prefix(GROUP_PREFIX) else {
            continue;
        };
        if pid.parse::<u32>().is_err() || Path::new("/proc").join(pid).exists() {
            continue;
        }
        if !groups.iter().any(|g| g == group) {
            groups.push(group.to_string());
        }
        names.push(name.to_string());
    }
    drop(Definitions { file, names });
    groups
}

fn attr(id: u64, child: bool) -> perf_event_attr {
    crate::attr::task_tracepoint(id, UPROBE_SAMPLE_TYPE, child)
}

/// The side-band event of a probed task: no samples, only its `PERF_RECORD_MMAP2` (new
/// executable mappings: an exec's program and libraries, a `dlopen`), `COMM` (exec), `FORK`
/// and `EXIT` records, with the hits' sample id (pid, tid, time, cpu, id) appended.
fn tracking_attr(child: bool) -> perf_event_attr {
    let mut a = perf_event_attr {
        type_: b::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: b::PERF_COUNT_SW_DUMMY as u64,
        sample_type: UPROBE_SAMPLE_TYPE,
        ..Default::default()
    };
    a.__bindgen_anon_1.sample_period = 1;
    a.set_disabled(1);
    a.set_enable_on_exec(u64::from(child));
    a.set_inherit(1);
    a.set_sample_id_all(1);
    a.set_mmap(1);
    a.set_mmap2(1);
    a.set_comm(1);
    a.set_comm_exec(1);
    a.set_task(1);
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    a.set_watermark(1);
    a.wakeup_watermark = 1 << 16;
    a
}

/// Open probes and their per-CPU rings.
pub struct UprobeRecorder {
    // Rings are unmapped before their descriptors close, and the definitions are removed
    // after (a definition in use cannot be removed).
    rings: Vec<Ring>,
    /// Each event, with what it probes (none: a side-band event).
    fds: Vec<(OwnedFd, Option<UprobeId>)>,
    defs: Definitions,
    ids: Vec<UprobeId>,
    root: PathBuf,
    group: String,
    /// Per point: its path (for errors) and tracepoint ids (entry, return if any).
    points: Vec<(UprobePoint, u64, Option<u64>)>,
    /// Per CPU: the CPU and the index in `fds` of the event whose ring its events share.
    leaders: Vec<(u32, usize)>,
}

impl UprobeRecorder {
    /// Open an entry probe (and, where the point says so, a return probe) on every point for `target`,
    /// on every online CPU, with a ring of `ring_pages` data pages (a power of two) per CPU.
    /// With `track`, each CPU's ring also receives the tasks' new executable mappings, execs,
    /// forks and exits (a side-band event per task and CPU, as the probes follow them), so
    /// that probes can be added ([`add_points`](Self::add_points),
    /// [`attach`](Self::attach)) where a process execs or loads a library.
    /// Root (or CAP_PERFMON and CAP_SYS_ADMIN) is needed. The descriptor limit is raised to
    /// its hard limit first: points × kinds × CPUs × threads descriptors are held.
    pub fn open(
        points: &[UprobePoint],
        target: &UprobeTarget,
        ring_pages: usize,
        track: bool,
    ) -> Result<UprobeRecorder, PerfError> {
        if !ring_pages.is_power_of_two() {
            return Err(PerfError::InvalidConfig(format!(
                "ring pages must be a power of two, not {ring_pages}"
            )));
        }
        let root = tracefs::mount_point()?;
        let mut rec = UprobeRecorder {
            rings: Vec::new(),
            fds: Vec::new(),
            defs: Definitions {
                file: root.join("uprobe_events"),
                names: Vec::new(),
            },
            ids: Vec::new(),
            group: format!("{GROUP_PREFIX}{}", std::process::id()),
            root,
            points: Vec::new(),
            leaders: Vec::new(),
        };
        rec.add_points(points)?;
        let cpus = online_cpus()?;
        let (tasks, child) = match target {
            UprobeTarget::Child(pid) => (vec![*pid], true),
            UprobeTarget::Threads(t) => (t.clone(), false),
        };
        let kinds: usize = rec
            .points
            .iter()
            .map(|p| 1 + usize::from(p.2.is_some()))
            .sum();
        let want = (kinds + usize::from(track)) * cpus.len() * tasks.len() + 64;
        sys::raise_fd_limit(want as u64);
        for &cpu in &cpus {
            let mut leader: Option<usize> = None;
            for &task in &tasks {
                if track {
                    let mut a = tracking_attr(child);
                    match sys::perf_event_open(&mut a, task, cpu as i32) {
                        Ok(fd) => rec.join_ring(fd, cpu, ring_pages, &mut leader, task, None)?,
                        // A thread that ended since it was listed: nothing to probe.
                        Err(e) if !child && e.raw_os_error() == Some(libc::ESRCH) => continue,
                        Err(e) => {
                            return Err(crate::error::open_error(
                                e,
                                "the mappings, execs and forks of a probed task",
                                format!("pid {task} on CPU {cpu}"),
                                task,
                            ))
                        }
                    }
                }
                let all: Vec<u32> = (0..rec.points.len() as u32).collect();
                rec.open_points(&all, task, cpu, child, ring_pages, &mut leader)?;
            }
            if let Some(l) = leader {
                rec.leaders.push((cpu, l));
            }
        }
        if rec.fds.is_empty() {
            return Err(PerfError::NoSuchProcess(
                tasks.first().copied().unwrap_or(0),
            ));
        }
        Ok(rec)
    }

    /// Define `points` in tracefs (after those defined so far, which keep their indices):
    /// returns the index of the first. They are probed in no task until
    /// [`attach`](Self::attach)ed to some.
    pub fn add_points(&mut self, points: &[UprobePoint]) -> Result<u32, PerfError> {
        let first = self.points.len() as u32;
        for p in points {
            if p.path.contains(char::is_whitespace) {
                return Err(PerfError::InvalidConfig(format!(
                    "probe path {:?} holds white space",
                    p.path
                )));
            }
            let i = self.points.len();
            let mut tp = [0u64; 2];
            let kinds: &[bool] = if p.returns { &[false, true] } else { &[false] };
            for &ret in kinds {
                let ev = format!("{}{i}", if ret { "r" } else { "p" });
                let name = format!("{}/{ev}", self.group);
                let line = format!(
                    "{}:{name} {}:{:#x}",
                    if ret { "r" } else { "p" },
                    p.path,
                    p.offset
                );
                self.defs.define(&line, name)?;
                tp[usize::from(ret)] = tracefs::tracepoint_id_in(&self.root, &self.group, &ev)?;
            }
            self.points
                .push((p.clone(), tp[0], p.returns.then_some(tp[1])));
        }
        Ok(first)
    }

    /// Probe `points` (indices of [`add_points`](Self::add_points) or
    /// [`open`](Self::open)) in `tasks` (the threads of a process: each follows the threads
    /// and children it starts from now on), from now on: their hits go to the rings of the
    /// recorder. A thread that has ended is skipped. Returns the events opened.
    pub fn attach(&mut self, points: &[u32], tasks: &[i32]) -> Result<usize, PerfError> {
        let before = self.fds.len();
        let kinds: usize = points
            .iter()
            .filter_map(|&i| self.points.get(i as usize))
            .map(|p| 1 + usize::from(p.2.is_some()))
            .sum();
        sys::raise_fd_limit((before + kinds * self.leaders.len() * tasks.len() + 64) as u64);
        for (cpu, l) in self.leaders.clone() {
            for &task in tasks {
                let mut leader = Some(l);
                self.open_points(points, task, cpu, false, 0, &mut leader)?;
            }
        }
        enable_in_order(&self.fds[before..])?;
        Ok(self.fds.len() - before)
    }

    /// Open the events of `points` for `task` on `cpu`. A thread that ended since it
    /// was listed (not a child held by hood) is skipped.
    fn open_points(
        &mut self,
        points: &[u32],
        task: i32,
        cpu: u32,
        child: bool,
        ring_pages: usize,
        leader: &mut Option<usize>,
    ) -> Result<(), PerfError> {
        for &i in points {
            let Some((p, entry, ret)) = self.points.get(i as usize).cloned() else {
                continue;
            };
            for (tp_id, is_ret) in [(Some(entry), false), (ret, true)] {
                let Some(tp_id) = tp_id else { continue };
                let mut a = attr(tp_id, child);
                let fd = match sys::perf_event_open(&mut a, task, cpu as i32) {
                    Ok(fd) => fd,
                    Err(e) if !child && e.raw_os_error() == Some(libc::ESRCH) => return Ok(()),
                    Err(e) => return Err(open_error(e, &p, is_ret, task, cpu)),
                };
                self.join_ring(fd, cpu, ring_pages, leader, task, Some((i, is_ret)))?;
            }
        }
        Ok(())
    }

    /// Keep `fd` (an event of `task` on `cpu`), writing into the CPU's ring (mapped on it
    /// when it is the CPU's first event); `id`: the point and kind it probes.
    fn join_ring(
        &mut self,
        fd: OwnedFd,
        cpu: u32,
        ring_pages: usize,
        leader: &mut Option<usize>,
        task: i32,
        id: Option<(u32, bool)>,
    ) -> Result<(), PerfError> {
        match *leader {
            None => {
                self.rings.push(Ring::map(fd.as_raw_fd(), cpu, ring_pages)?);
                *leader = Some(self.fds.len());
            }
            Some(l) => sys::ioc_set_output(&fd, &self.fds[l].0).map_err(|e| PerfError::Sys {
                call: "ioctl(PERF_EVENT_IOC_SET_OUTPUT)",
                what: format!("uprobe of pid {task} on CPU {cpu}"),
                source: e,
            })?,
        }
        let id = match id {
            Some((point, ret)) => {
                let id = sys::ioc_id(&fd).map_err(|e| PerfError::Sys {
                    call: "ioctl(PERF_EVENT_IOC_ID)",
                    what: format!("uprobe of pid {task} on CPU {cpu}"),
                    source: e,
                })?;
                let id = UprobeId { id, point, ret };
                self.ids.push(id);
                Some(id)
            }
            None => None,
        };
        self.fds.push((fd, id));
        Ok(())
    }

    /// Start the probes of running threads (a child's start at its exec by themselves). The
    /// return probes are enabled first, so no call is seen to start without being seen to end
    /// (a call already running when the probes come may still show only its end).
    pub fn enable(&self) -> Result<(), PerfError> {
        enable_in_order(&self.fds)
    }

    /// Stop every probe (entries first), before the rings are drained a last time.
    pub fn disable(&self) {
        let entries = self.fds.iter().filter(|(_, i)| i.is_some_and(|i| !i.ret));
        let rest = self.fds.iter().filter(|(_, i)| !i.is_some_and(|i| !i.ret));
        for (fd, _) in entries.chain(rest) {
            let _ = sys::ioc_disable(fd);
        }
    }

    /// What each event id stands for.
    pub fn ids(&self) -> &[UprobeId] {
        &self.ids
    }

    /// Descriptors held (one per function, kind, CPU and thread).
    pub fn events(&self) -> usize {
        self.fds.len()
    }

    /// Hand each CPU's unread records to `sink` (raw ring bytes: PERF_RECORD_SAMPLE and
    /// PERF_RECORD_LOST; one drain of a CPU may come in two slices where the ring wrapped).
    /// Returns the bytes drained.
    pub fn drain(
        &mut self,
        sink: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
    ) -> Result<usize, PerfError> {
        crate::ring::drain_all(&mut self.rings, sink)
    }
}

/// Enable `fds`: side-band events and return probes before entry probes, so no call is seen
/// to start without being seen to end.
fn enable_in_order(fds: &[(OwnedFd, Option<UprobeId>)]) -> Result<(), PerfError> {
    let first = fds.iter().filter(|(_, i)| !i.is_some_and(|i| !i.ret));
    let entries = fds.iter().filter(|(_, i)| i.is_some_and(|i| !i.ret));
    for (fd, _) in first.chain(entries) {
        sys::ioc_enable(fd).map_err(|e| PerfError::Sys {
            call: "ioctl(PERF_EVENT_IOC_ENABLE)",
            what: "uprobe".into(),
            source: e,
        })?;
    }
    Ok(())
}

fn open_error(e: io::Error, p: &UprobePoint, ret: bool, pid: i32, cpu: u32) -> PerfError {
    let event = format!(
        "{} probe at offset {:#x} of {}",
        if ret { "return" } else { "entry" },
        p.offset,
        p.path
    );
    crate::error::open_error(e, &event, format!("pid {pid} on CPU {cpu}"), pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_inherit_on_the_monotonic_clock() {
        let a = attr(42, true);
        assert_eq!((a.type_, a.config), (b::PERF_TYPE_TRACEPOINT, 42));
        assert_eq!(
            (a.inherit(), a.enable_on_exec(), a.use_clockid()),
            (1, 1, 1)
        );
        assert_eq!(a.sample_type, UPROBE_SAMPLE_TYPE);
        assert_eq!(attr(42, false).enable_on_exec(), 0);
    }
}
