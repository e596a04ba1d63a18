//! Opening the per-(task, CPU) events with the documented fallbacks:
//! hardware event → cpu-clock when there is no PMU, and MMAP2 build ids off
//! when the kernel predates them.

use std::io;
use std::os::fd::OwnedFd;

use perf_event_open_sys::bindings::perf_event_attr;

use crate::attr::{self, AttrOpts};
use crate::error::paranoid_level;
use crate::{sys, EventKind, PerfError, SamplingConfig};

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
            libc::EACCES | libc::EPERM => PerfError::Permission {
                event: self.event.to_string(),
                what,
                paranoid: paranoid_level(),
            },
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
