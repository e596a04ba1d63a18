//! Finding tracefs and tracepoint ids (ids change every boot; never hard-code them).

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use crate::PerfError;

const STANDARD: &str = "/sys/kernel/tracing";
const LEGACY: &str = "/sys/kernel/debug/tracing";

/// Where tracefs is mounted. Looks in /proc/mounts, then at the standard
/// (/sys/kernel/tracing) and legacy (/sys/kernel/debug/tracing) places; when
/// none is there and we are root, mounts tracefs at /sys/kernel/tracing.
pub fn mount_point() -> Result<PathBuf, PerfError> {
    if let Ok(mounts) = std::fs::read_to_string("/proc/mounts") {
        let mut mounted: Vec<PathBuf> = mounts
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (_, dir, ty) = (f.next()?, f.next()?, f.next()?);
                (ty == "tracefs").then(|| PathBuf::from(unescape_mount(dir)))
            })
            .collect();
        mounted.sort_by_key(|d| d != Path::new(STANDARD));
        if let Some(d) = mounted.iter().find(|d| d.join("events").is_dir()) {
            return Ok(d.clone());
        }
        // Mounted, but closed to this user (tracefs is 0700 by default): say so, rather
        // than "not mounted".
        if let Some(d) = mounted.first() {
            if let Some(e) = root_only(d) {
                return Err(e);
            }
        }
    }
    for dir in [STANDARD, LEGACY] {
        if Path::new(dir).join("events").is_dir() {
            return Ok(dir.into());
        }
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(PerfError::NoTracefs {
            reason: format!("not mounted at {STANDARD} and mounting it needs root"),
        });
    }
    mount_tracefs(STANDARD).map_err(|e| PerfError::NoTracefs {
        reason: format!("mount at {STANDARD} failed: {e}"),
    })?;
    if Path::new(STANDARD).join("events").is_dir() {
        Ok(STANDARD.into())
    } else {
        Err(PerfError::NoTracefs {
            reason: format!("mounted at {STANDARD} but it has no events directory"),
        })
    }
}

/// [`PerfError::TracefsRootOnly`] when `dir` exists but this process may not enter it.
fn root_only(dir: &Path) -> Option<PerfError> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).ok()?;
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            Some(PerfError::TracefsRootOnly {
                dir: dir.to_owned(),
                mode: m.mode() & 0o7777,
                owner: m.uid(),
                // SAFETY: geteuid has no preconditions and cannot fail.
                uid: unsafe { libc::geteuid() },
            })
        }
        _ => None,
    }
}

fn mount_tracefs(dir: &str) -> io::Result<()> {
    let src = CString::new("nodev").map_err(io::Error::other)?;
    let target = CString::new(dir).map_err(io::Error::other)?;
    let fstype = CString::new("tracefs").map_err(io::Error::other)?;
    // SAFETY: all three arguments are valid NUL-terminated strings that outlive
    // the call; data is NULL, which tracefs accepts.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// /proc/mounts escapes spaces and friends as octal (`\040`).
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The perf tracepoint id of `sys:name` (e.g. `sched`, `sched_switch`), read
/// from `events/<sys>/<name>/id` under tracefs.
pub fn tracepoint_id(sys: &str, name: &str) -> Result<u64, PerfError> {
    let root = mount_point()?;
    tracepoint_id_in(&root, sys, name)
}

/// Like [`tracepoint_id`] with an explicit tracefs directory.
pub fn tracepoint_id_in(root: &Path, sys: &str, name: &str) -> Result<u64, PerfError> {
    let events = root.join("events");
    let bad = |s: &str| s.is_empty() || s.contains('/') || s == "." || s == "..";
    let path = events.join(sys).join(name).join("id");
    let missing = || PerfError::NoTracepoint {
        sys: sys.into(),
        name: name.into(),
        path: path.clone(),
        events_dir: events.display().to_string(),
    };
    if bad(sys) || bad(name) {
        return Err(missing());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => missing(),
        _ => PerfError::File {
            path: path.clone(),
            source: e,
        },
    })?;
    text.trim().parse().map_err(|_| PerfError::File {
        path: path.clone(),
        source: io::Error::new(
            io::ErrorKind::InvalidData,
            format!("expected a number, found {:?}", text.trim()),
        ),
    })
}

/// A private tracefs instance (`instances/<prefix><pid>`): its own per-CPU ring buffers, clock
/// and enabled events, so other tracing users are neither disturbed nor seen. Events are read
/// as raw ring-buffer pages from `per_cpu/cpuN/trace_pipe_raw` (no text formatting, nothing
/// lost to a reader that keeps up). Dropping it switches tracing off, closes the pipes and
/// removes the instance, so the system's tracing state is as before.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    pipes: Vec<(u32, std::fs::File)>,
    page: Vec<u8>,
    enabled: Vec<(String, String)>,
}

/// Size of one raw ring-buffer page as `trace_pipe_raw` hands it out.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

fn tracefs_err(path: &Path, e: io::Error, what: &str) -> PerfError {
    let hint = if e.kind() == io::ErrorKind::PermissionDenied {
        " (tracefs instances need root)"
    } else {
        ""
    };
    PerfError::File {
        path: path.to_owned(),
        source: io::Error::new(e.kind(), format!("{what}: {e}{hint}")),
    }
}

fn write_file(path: &Path, val: &str) -> Result<(), PerfError> {
    std::fs::write(path, val).map_err(|e| tracefs_err(path, e, &format!("writing {val:?}")))
}

/// Remove instances named `<prefix><pid>` whose process no longer exists (left by a recorder
/// that was killed). Returns the names removed.
pub fn remove_stale_instances(root: &Path, prefix: &str) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(root.join("instances")) else {
        return removed;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(prefix) else {
            continue;
        };
        if pid.parse::<u32>().is_ok()
            && !Path::new("/proc").join(pid).exists()
            && std::fs::remove_dir(e.path()).is_ok()
        {
            removed.push(name);
        }
    }
    removed
}

/// Prefixes of the instances hood creates: `hood-labels-` (`record --labels`) and `hood-`
/// (`top --irq-time` of hood versions before it timed handlers with perf events).
pub const INSTANCE_PREFIXES: [&str; 2] = ["hood-labels-", "hood-"];

/// Remove the instances of hood processes that are gone (see [`INSTANCE_PREFIXES`]): a
/// SIGKILLed recorder cannot remove its own, which would otherwise keep tracing into its
/// buffers. Returns one note for the user per instance removed. Every hood command that uses
/// tracefs calls this first.
pub fn remove_stale_hood_instances(root: &Path) -> Vec<String> {
    INSTANCE_PREFIXES
        .iter()
        .flat_map(|prefix| remove_stale_instances(root, prefix))
        .map(|name| {
            format!(
                "removed tracefs instance {name}, left tracing by a hood process that is gone \
                 (killed)"
            )
        })
        .collect()
}

/// The `format` file text of `sys:name` under tracefs `root` (field offsets come from here).
pub fn event_format(root: &Path, sys: &str, name: &str) -> Result<String, PerfError> {
    let path = root.join("events").join(sys).join(name).join("format");
    std::fs::read_to_string(&path).map_err(|e| tracefs_err(&path, e, "reading the event format"))
}

impl Instance {
    /// Create `instances/<prefix><our pid>` under `root` with `trace_clock mono` (the clock of
    /// hood's perf samples), `buffer_kb` KiB per CPU, and those of `events` (`(sys, name)`)
    /// this kernel has enabled. Tracing stays off until [`Instance::start`]. Stale instances
    /// of dead recorders with the same prefix are removed first. Events the kernel lacks are
    /// skipped; [`Instance::enabled`] lists what was enabled.
    pub fn create(
        root: &Path,
        prefix: &str,
        events: &[(&str, &str)],
        buffer_kb: usize,
        cpus: &[u32],
    ) -> Result<Instance, PerfError> {
        remove_stale_instances(root, prefix);
        let dir = root
            .join("instances")
            .join(format!("{prefix}{}", std::process::id()));
        if let Err(e) = std::fs::create_dir(&dir) {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(tracefs_err(&dir, e, "creating the tracefs instance"));
            }
        }
        // From here on Drop removes the instance on any failure.
        let mut inst = Instance {
            dir,
            pipes: Vec::new(),
            page: vec![0; page_size()],
            enabled: Vec::new(),
        };
        write_file(&inst.dir.join("tracing_on"), "0")?;
        write_file(&inst.dir.join("trace_clock"), "mono")?;
        write_file(
            &inst.dir.join("buffer_size_kb"),
            &buffer_kb.max(4).to_string(),
        )?;
        for &(sys, name) in events {
            let ev = inst.dir.join("events").join(sys).join(name);
            if !ev.is_dir() {
                continue;
            }
            write_file(&ev.join("enable"), "1")?;
            inst.enabled.push((sys.to_string(), name.to_string()));
        }
        for &cpu in cpus {
            let path = inst
                .dir
                .join("per_cpu")
                .join(format!("cpu{cpu}"))
                .join("trace_pipe_raw");
            use std::os::unix::fs::OpenOptionsExt;
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| tracefs_err(&path, e, "opening the raw pipe"))?;
            inst.pipes.push((cpu, f));
        }
        Ok(inst)
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The CPUs whose buffers are read.
    pub fn cpus(&self) -> Vec<u32> {
        self.pipes.iter().map(|(c, _)| *c).collect()
    }

    /// The events enabled, as `(sys, name)`.
    pub fn enabled(&self) -> &[(String, String)] {
        &self.enabled
    }

    /// Switch one enabled event on or off (e.g. to duty-cycle high-rate events).
    pub fn set_event(&self, sys: &str, name: &str, on: bool) -> Result<(), PerfError> {
        let path = self.dir.join("events").join(sys).join(name).join("enable");
        write_file(&path, if on { "1" } else { "0" })
    }

    /// Switch tracing on.
    pub fn start(&self) -> Result<(), PerfError> {
        write_file(&self.dir.join("tracing_on"), "1")
    }

    /// Switch tracing off (events already in the buffers stay readable).
    pub fn stop(&self) -> Result<(), PerfError> {
        write_file(&self.dir.join("tracing_on"), "0")
    }

    /// Read every page available now from each CPU's raw pipe, handing `(cpu, page)` to `sink`;
    /// never blocks. Each page is one ring-buffer page, verbatim: u64 timestamp, the commit
    /// word (data length in its low bits), then the event data. Returns the pages read.
    pub fn drain(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<u64, PerfError> {
        use std::io::Read;
        let mut pages = 0;
        for (cpu, f) in &mut self.pipes {
            loop {
                match f.read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => {
                        pages += 1;
                        sink(*cpu, &self.page[..n]);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        let path = self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
                        return Err(tracefs_err(&path, e, "reading the raw pipe"));
                    }
                }
            }
        }
        Ok(pages)
    }

    /// The kernel's counters for `cpu`'s buffer (`per_cpu/cpuN/stats` text: entries, overrun,
    /// dropped events, read events, ...).
    pub fn cpu_stats(&self, cpu: u32) -> Result<String, PerfError> {
        let path = self.dir.join(format!("per_cpu/cpu{cpu}/stats"));
        std::fs::read_to_string(&path).map_err(|e| tracefs_err(&path, e, "reading buffer stats"))
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        self.pipes.clear();
        // rmdir fails while the kernel still holds a reader reference; retry briefly.
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unescape_mount;

    #[test]
    fn unescapes_octal() {
        assert_eq!(unescape_mount("/a\\040b"), "/a b");
        assert_eq!(unescape_mount("/plain"), "/plain");
        assert_eq!(unescape_mount("/end\\04"), "/end\\04");
    }
}
