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
        let mut found: Vec<PathBuf> = mounts
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (_, dir, ty) = (f.next()?, f.next()?, f.next()?);
                (ty == "tracefs").then(|| PathBuf::from(unescape_mount(dir)))
            })
            .filter(|d| d.join("events").is_dir())
            .collect();
        found.sort_by_key(|d| d != Path::new(STANDARD));
        if let Some(d) = found.into_iter().next() {
            return Ok(d);
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
