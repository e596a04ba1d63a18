//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong while opening, mapping or reading perf events.
///
/// Each variant's message names the object involved (pid, CPU, event, file) and,
/// where the user can act, the fix.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// perf_event_open was refused (EACCES/EPERM) by kernel.perf_event_paranoid (or, when the
    /// setting already allows it, by something else: the message says which).
    #[error("{}", permission_message(event, what, *paranoid, *needed))]
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
    /// An ordinary user asked for another user's process: the kernel lets a user without
    /// CAP_PERFMON profile only processes they could ptrace, whatever perf_event_paranoid says.
    #[error(
        "no permission to profile pid {pid}: it belongs to uid {owner} and hood runs as uid {uid}; \
         an ordinary user may profile only their own processes (kernel.perf_event_paranoid does \
         not change that). Fix: run hood as root (`sudo hood ...`) or as the process's owner, or grant it \
         CAP_PERFMON (`sudo setcap cap_perfmon+ep $(command -v hood)`)"
    )]
    NotYourProcess {
        /// The process asked for.
        pid: i32,
        /// Its owner (the uid of /proc/PID).
        owner: u32,
        /// hood's effective uid.
        uid: u32,
    },
    /// tracefs is mounted but this user may not enter it (mode 0700, root's).
    #[error(
        "tracefs is mounted at {dir} but only root may use it (mode {mode:04o}, owner uid {owner}; \
         hood runs as uid {uid}), and tracepoint recording needs root anyway. Fix: run hood as root \
         (`sudo hood ...`)"
    )]
    TracefsRootOnly {
        /// The mount point.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// Its owner.
        owner: u32,
        /// hood's effective uid.
        uid: u32,
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
    /// Uprobes cannot be defined: no `uprobe_events` in tracefs (a kernel built without
    /// CONFIG_UPROBE_EVENTS), or not root.
    #[error(
        "cannot define uprobes ({reason}): --probe needs root and a kernel with uprobe events \
         (CONFIG_UPROBE_EVENTS, tracefs's uprobe_events); run hood as root, or rebuild the \
         program with -finstrument-functions and leave out --probe"
    )]
    NoUprobes {
        /// What failed.
        reason: String,
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

/// The text of [`PerfError::Permission`]: lowering perf_event_paranoid is advised only when
/// it is above what the open needs; otherwise the obstacle is something else and the message
/// says so instead of advising the value it already has.
fn permission_message(event: &str, what: &str, paranoid: Option<i32>, needed: i32) -> String {
    let head = format!("no permission to open perf event {event} ({what})");
    match paranoid {
        Some(p) if p <= needed => format!(
            "{head}: kernel.perf_event_paranoid is {p}, which allows it, so the kernel refused for \
             another reason (a container or seccomp policy, a locked-down kernel, or an LSM such \
             as SELinux or AppArmor); run as root with CAP_PERFMON, or check `dmesg` and the \
             policy of this container"
        ),
        _ => format!(
            "{head}: kernel.perf_event_paranoid is {}; run as root, grant CAP_PERFMON (`sudo \
             setcap cap_perfmon+ep $(command -v hood)`), or lower the setting with `sudo sysctl \
             kernel.perf_event_paranoid={needed}` (kernel samples as non-root need <= 1, \
             system-wide profiling needs <= 0, tracepoint data needs -1)",
            paranoid.map_or_else(|| "unknown".to_string(), |p| p.to_string())
        ),
    }
}

/// The error for an EACCES/EPERM from perf_event_open on `pid` (-1: all tasks): another
/// user's process when that is the obstacle, else [`PerfError::Permission`].
pub(crate) fn permission_error(event: &str, what: String, pid: i32, needed: i32) -> PerfError {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if pid > 0 && uid != 0 {
        use std::os::unix::fs::MetadataExt;
        if let Ok(m) = std::fs::metadata(format!("/proc/{pid}")) {
            if m.uid() != uid {
                return PerfError::NotYourProcess {
                    pid,
                    owner: m.uid(),
                    uid,
                };
            }
        }
    }
    PerfError::Permission {
        event: event.to_string(),
        what,
        paranoid: paranoid_level(),
        needed,
    }
}

/// Why /proc/kallsyms shows no addresses to this process, and the fix, from the kernel's
/// rule (kallsyms_show_value): kptr_restrict 0 shows them to anyone when
/// perf_event_paranoid <= 1, kptr_restrict 1 only with CAP_SYSLOG, 2 to nobody.
pub fn kallsyms_hidden_reason() -> String {
    let kptr: Option<i32> = std::fs::read_to_string("/proc/sys/kernel/kptr_restrict")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    kallsyms_reason(kptr, paranoid_level(), root)
}

fn kallsyms_reason(kptr: Option<i32>, paranoid: Option<i32>, root: bool) -> String {
    match (kptr, paranoid) {
        (Some(k), _) if k >= 2 => format!(
            "kernel.kptr_restrict is {k}, which hides kernel addresses even from root. Fix: \
             `sudo sysctl kernel.kptr_restrict=1` and record as root"
        ),
        (Some(1), _) if !root => "kernel.kptr_restrict is 1: only root (CAP_SYSLOG) sees kernel \
             addresses. Fix: record as root, or `sudo sysctl kernel.kptr_restrict=0` together with \
             kernel.perf_event_paranoid <= 1"
            .to_string(),
        (Some(0), Some(p)) if p >= 2 && !root => format!(
            "kernel.perf_event_paranoid is {p}: with kernel.kptr_restrict 0 an ordinary user sees \
             kernel addresses only when it is <= 1. Fix: record as root, or `sudo sysctl \
             kernel.perf_event_paranoid=1`"
        ),
        (k, p) => format!(
            "kernel.kptr_restrict is {}, kernel.perf_event_paranoid is {}; /proc/kallsyms still \
             shows zeros (a security module or container may hide it). Fix: record as root on the \
             host",
            k.map_or_else(|| "unknown".into(), |k| k.to_string()),
            p.map_or_else(|| "unknown".into(), |p| p.to_string())
        ),
    }
}

/// Reads /proc/sys/kernel/perf_event_paranoid, if possible.
pub fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The error of a failed perf_event_open of `event` for `what` (a pid and CPU) on `pid`:
/// permission (raw tracepoint data needs CAP_PERFMON unless perf_event_paranoid is -1), a
/// process gone, too many open files, or the call's own error.
pub(crate) fn open_error(e: std::io::Error, event: &str, what: String, pid: i32) -> PerfError {
    match e.raw_os_error().unwrap_or(0) {
        libc::EACCES | libc::EPERM => permission_error(event, what, pid, -1),
        libc::ESRCH => PerfError::NoSuchProcess(pid),
        libc::EMFILE | libc::ENFILE => PerfError::TooManyFiles { what },
        _ => PerfError::Sys {
            call: "perf_event_open",
            what: format!("{event} ({what})"),
            source: e,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paranoid_is_advised_only_when_it_is_the_obstacle() {
        let high = permission_message("cpu-clock", "all tasks on CPU 0", Some(2), 0);
        assert!(high.contains("perf_event_paranoid=0"), "{high}");
        let allowed = permission_message("cpu-clock", "pid 5 on CPU 0", Some(2), 2);
        assert!(!allowed.contains("sysctl"), "{allowed}");
        assert!(allowed.contains("which allows it"), "{allowed}");
    }

    #[test]
    fn kallsyms_cause_follows_the_kernel_rule() {
        let r = kallsyms_reason(Some(0), Some(2), false);
        assert!(r.starts_with("kernel.perf_event_paranoid is 2"), "{r}");
        assert!(!r.contains("kptr_restrict=0"), "{r}");
        let r = kallsyms_reason(Some(1), Some(1), false);
        assert!(r.starts_with("kernel.kptr_restrict is 1"), "{r}");
        let r = kallsyms_reason(Some(2), Some(-1), true);
        assert!(r.contains("kptr_restrict=1"), "{r}");
        let r = kallsyms_reason(Some(0), Some(1), false);
        assert!(r.contains("security module"), "{r}");
    }
}
