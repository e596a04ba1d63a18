//! Growing a session's user stack copy while it records ([`Session::grow_stack_copy`]).
//!
//! The kernel cannot change an open event's `sample_stack_user`, so the sampling events are
//! replaced: new ones with the bigger copy are opened disabled and redirected into the same
//! per-CPU rings, then the old ones are disabled and the new ones enabled. The copy is one
//! size for the whole session, not per process: a whole-CPU event (`-a`) samples every
//! process and cannot leave one out, and an inherited event cannot be taken back from one
//! descendant, so a per-process size would sample that process twice.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, OwnedFd};

use crate::cpus::threads_of;
use crate::session::Session;
use crate::{sys, PerfError, Target, MAX_STACK_COPY};

/// Processes walked at most when a task session's events are replaced.
const MAX_TREE: usize = 1 << 16;

/// What [`Session::grow_stack_copy`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grown {
    /// Sampling events opened with the new copy size.
    pub opened: usize,
    /// Sampling events disabled (and kept until the session ends).
    pub retired: usize,
}

impl Session {
    /// Replaces every sampling event with one that copies `bytes` of user stack (a multiple
    /// of 8, at most [`MAX_STACK_COPY`]), into the same rings; with `enable`, the new events
    /// start sampling as the old ones stop (otherwise they wait for [`Session::enable`], as a
    /// paused session's do). Off-CPU tracepoint events keep their copy.
    ///
    /// `-a` (whole-CPU events) is replaced one for one. A task session opens the new events,
    /// which follow new threads and children, on every thread of the sampled processes and of
    /// their descendants, listed once before opening (`/proc/PID/task/TID/children`); a
    /// thread started in the few milliseconds between that list and the open of its parent's
    /// new event has neither and is not sampled. No thread is sampled twice.
    ///
    /// On an error the session goes on with the events it had.
    pub fn grow_stack_copy(&mut self, bytes: u32, enable: bool) -> Result<Grown, PerfError> {
        if bytes == 0 || !bytes.is_multiple_of(8) || bytes > MAX_STACK_COPY {
            return Err(PerfError::InvalidConfig(format!(
                "a stack copy of {bytes} bytes: it must be a multiple of 8 between 8 and {MAX_STACK_COPY}"
            )));
        }
        if !matches!(self.target, Target::System)
            && !std::path::Path::new("/proc/thread-self/children").exists()
        {
            // Without the list, the descendants' events would be disabled and not replaced.
            return Err(PerfError::InvalidConfig(
                "this kernel does not list a task's children (/proc/PID/task/TID/children, \
                 CONFIG_PROC_CHILDREN)"
                    .into(),
            ));
        }
        let tids: Vec<i32> = match &self.target {
            Target::System => vec![-1],
            Target::Child(pid) => tree(&[*pid], &[]),
            Target::Tasks(pids) => tree(pids, &self.not_followed),
        };
        let mut attr = self.attr;
        attr.sample_stack_user = bytes;
        attr.set_disabled(1);
        attr.set_enable_on_exec(0);
        let mut new: Vec<OwnedFd> = Vec::new();
        for &tid in &tids {
            for (i, &cpu) in self.cpus.iter().enumerate() {
                let mut a = attr;
                let fd = match sys::perf_event_open(&mut a, tid, cpu as i32) {
                    Ok(fd) => fd,
                    // The thread ended meanwhile.
                    Err(e) if tid != -1 && e.raw_os_error() == Some(libc::ESRCH) => continue,
                    Err(source) => {
                        return Err(PerfError::Sys {
                            call: "perf_event_open",
                            what: format!(
                            "a sampling event with a {bytes}-byte stack copy for {} on CPU {cpu}",
                            who(tid)
                        ),
                            source,
                        })
                    }
                };
                let Some(Some(leader)) = self.leaders.get(i) else {
                    continue;
                };
                sys::ioc_set_output(&fd, leader).map_err(|source| PerfError::Sys {
                    call: "ioctl(PERF_EVENT_IOC_SET_OUTPUT)",
                    what: format!("{} on CPU {cpu}", who(tid)),
                    source,
                })?;
                new.push(fd);
            }
        }
        if new.is_empty() {
            return Err(PerfError::NoSuchProcess(
                tids.first().copied().unwrap_or(-1),
            ));
        }
        let fail = |call, source| PerfError::Sys {
            call,
            what: "the sampling events".into(),
            source,
        };
        let (old, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.fds)
            .into_iter()
            .zip(std::mem::take(&mut self.sampler))
            .partition(|(_, s)| *s);
        self.fds = kept.into_iter().map(|(fd, _)| fd).collect();
        self.sampler = vec![false; self.fds.len()];
        let retired = old.len();
        for (fd, _) in old {
            // Disabling an inherited event disables its copies in every descendant.
            let r = sys::ioc_disable(&fd);
            self.retired.push(fd);
            r.map_err(|e| fail("ioctl(PERF_EVENT_IOC_DISABLE)", e))?;
        }
        let watch = !matches!(self.target, Target::System);
        let mut pfds = self.pollfds.lock().unwrap_or_else(|p| p.into_inner());
        for fd in new.iter() {
            if enable {
                sys::ioc_enable(fd).map_err(|e| fail("ioctl(PERF_EVENT_IOC_ENABLE)", e))?;
            }
            if watch {
                pfds.push(libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
        }
        drop(pfds);
        let opened = new.len();
        self.sampler.extend(std::iter::repeat_n(true, opened));
        self.fds.extend(new);
        self.attr.sample_stack_user = bytes;
        Ok(Grown { opened, retired })
    }

    /// The user stack copy the sampling events ask for now (0: none).
    pub fn stack_copy_bytes(&self) -> u32 {
        self.attr.sample_stack_user
    }
}

fn who(tid: i32) -> String {
    match tid {
        -1 => "all tasks".into(),
        t => format!("thread {t}"),
    }
}

/// Every thread of `roots` and of their descendants now, parents before children (at most
/// [`MAX_TREE`] processes), leaving out the processes `skip` and their descendants.
fn tree(roots: &[i32], skip: &[i32]) -> Vec<i32> {
    let mut seen: BTreeSet<i32> = skip.iter().copied().collect();
    let mut todo: Vec<i32> = roots.to_vec();
    let mut tids = Vec::new();
    let mut i = 0;
    while i < todo.len() && i < MAX_TREE {
        let pid = todo[i];
        i += 1;
        if !seen.insert(pid) {
            continue;
        }
        let Ok(threads) = threads_of(pid) else {
            continue;
        };
        for t in threads {
            tids.push(t);
            let path = format!("/proc/{pid}/task/{t}/children");
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            todo.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
    tids
}

/// The processes that are children of `pids` now and not among them (a task session does
/// not sample them).
pub(crate) fn children_of(pids: &[i32]) -> Vec<i32> {
    let mut out = Vec::new();
    for &pid in pids {
        for t in threads_of(pid).unwrap_or_default() {
            let path = format!("/proc/{pid}/task/{t}/children");
            if let Ok(text) = std::fs::read_to_string(path) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|c| c.parse::<i32>().ok())
                        .filter(|c| !pids.contains(c)),
                );
            }
        }
    }
    out
}
