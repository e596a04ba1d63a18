//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while opening, mapping or reading perf events.
///
/// Each variant's message names the object involved (pid, CPU, event, file) and,
/// where the user can act, the fix.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// perf_event_open was refused (EACCES/EPERM).
    #[error(
        "no permission to open perf event {event} ({what}): kernel.perf_event_paranoid is {paranoid}; \
         run as root, grant CAP_PERFMON (setcap cap_perfmon+ep on the binary), or lower the setting with \
         `sudo sysctl kernel.perf_event_paranoid={needed}` (kernel samples as non-root need <= 1, \
         system-wide profiling needs <= 0)",
        paranoid = .paranoid.map_or_else(|| "unknown".to_string(), |p| p.to_string())
    )]
    Permission {
        /// The event name, e.g. `cpu-clock`.
        event: String,
        /// What was being opened, e.g. `pid 1234 on CPU 0`.
        what: String,
        /// The current value of /proc/sys/kernel/perf_event_paranoid, if readable.
        paranoid: Option<i32>,
        /// The highest paranoid level that permits this open for a non-root user.
        needed: i32,
    },
    /// The process does not exist (ESRCH, or /proc/PID is missing).
    #[error("no such process: pid {0} (it may have exited; check the pid with `ps -p {0}`)")]
    NoSuchProcess(i32),
    /// The process ran out of file descriptors (EMFILE/ENFILE).
    #[error(
        "too many open files while opening perf events ({what}): one descriptor per thread and CPU \
         is needed; raise the limit with `ulimit -n 65536` and retry"
    )]
    TooManyFiles {
        /// What was being opened.
        what: String,
    },
    /// mmap of a ring buffer was refused for lack of locked-memory budget.
    #[error(
        "cannot map the {bytes}-byte perf ring buffer for CPU {cpu}: the locked-memory budget is \
         exhausted; raise /proc/sys/kernel/perf_event_mlock_kb (e.g. `sudo sysctl \
         kernel.perf_event_mlock_kb=2048`), `ulimit -l`, or use fewer ring pages"
    )]
    MlockLimit {
        /// CPU of the ring.
        cpu: u32,
        /// Size of the mapping that failed.
        bytes: usize,
    },
    /// The sampling configuration is invalid.
    #[error("invalid sampling configuration: {0}")]
    InvalidConfig(String),
    /// The event is not supported by this kernel or machine (and no fallback applies).
    #[error("perf event {event} is not supported on this machine ({source}); try `-e cpu-clock`")]
    Unsupported {
        /// The event name.
        event: String,
        /// The kernel's error.
        #[source]
        source: io::Error,
    },
    /// Any other system call failure.
    #[error("{call} failed ({what}): {source}")]
    Sys {
        /// The system call, e.g. `perf_event_open`.
        call: &'static str,
        /// What it was applied to.
        what: String,
        /// The kernel's error.
        #[source]
        source: io::Error,
    },
    /// A file under /proc, /sys or tracefs could not be read or parsed.
    #[error("cannot read {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// tracefs is not mounted and could not be mounted.
    #[error(
        "tracefs is not available ({reason}); mount it as root with \
         `mount -t tracefs nodev /sys/kernel/tracing`"
    )]
    NoTracefs {
        /// Why it could not be found or mounted.
        reason: String,
    },
    /// The tracepoint does not exist in tracefs.
    #[error("no tracepoint {sys}:{name} (looked for {path}); list them with `ls {events_dir}`")]
    NoTracepoint {
        /// Subsystem, e.g. `sched`.
        sys: String,
        /// Event name, e.g. `sched_switch`.
        name: String,
        /// The id file that was missing.
        path: PathBuf,
        /// The events directory.
        events_dir: String,
    },
    /// The sink given to [`crate::Session::drain`] failed; the ring was not advanced.
    #[error("writing ring data of CPU {cpu} failed: {source}")]
    Sink {
        /// CPU of the ring being drained.
        cpu: u32,
        /// The sink's error.
        #[source]
        source: io::Error,
    },
}

/// Reads /proc/sys/kernel/perf_event_paranoid, if possible.
pub fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}
