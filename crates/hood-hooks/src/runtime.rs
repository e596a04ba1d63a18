//! The hood-rt runtime library the recorders preload into the commands they start.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::HooksError;

/// The runtime library the hood binary carries (see [`carry`]).
static CARRIED: std::sync::OnceLock<&'static [u8]> = std::sync::OnceLock::new();

/// Give the bytes of the libhood_rt.so the binary carries: [`library`] writes them to a
/// private cache directory when no library file is installed.
pub fn carry(bytes: &'static [u8]) {
    let _ = CARRIED.set(bytes);
}

/// Where libhood_rt.so is: `$HOOD_RT_LIB`; next to the hood binary, or `../lib/hood/` (an
/// installed or freshly built one); else the copy the binary carries, written to
/// `$XDG_CACHE_HOME/hood/rt` (or `~/.cache/hood/rt`).
pub fn library() -> Result<PathBuf, HooksError> {
    if let Some(p) = std::env::var_os("HOOD_RT_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(HooksError::Runtime(format!(
                "HOOD_RT_LIB={} does not name a file; point it at libhood_rt.so",
                p.display()
            )));
        }
        return Ok(p);
    }
    let exe = std::env::current_exe()
        .map_err(|e| HooksError::Runtime(format!("locating the hood executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for cand in [
        dir.join("libhood_rt.so"),
        dir.join("../lib/hood/libhood_rt.so"),
        dir.join("deps/libhood_rt.so"),
    ] {
        if cand.is_file() {
            return Ok(cand);
        }
    }
    match CARRIED.get() {
        Some(bytes) if !bytes.is_empty() => carried_copy(bytes, &cache_dir()?),
        _ => Err(HooksError::Runtime(format!(
            "cannot find libhood_rt.so next to {}: build it with `cargo build --release -p hood-rt` \
             (it lands next to the hood binary) or set HOOD_RT_LIB=/path/to/libhood_rt.so",
            exe.display()
        ))),
    }
}

/// `$XDG_CACHE_HOME/hood/rt`, else `$HOME/.cache/hood/rt`.
fn cache_dir() -> Result<PathBuf, HooksError> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .ok_or_else(|| {
            HooksError::Runtime(
                "neither XDG_CACHE_HOME nor HOME is set: nowhere to put the runtime library hood \
                 carries; set HOOD_RT_LIB=/path/to/libhood_rt.so"
                    .into(),
            )
        })?;
    Ok(base.join("hood/rt"))
}

/// The carried library as a file in `dir`, which is created (mode 0700) or checked component by
/// component: every directory on the way a real one of root's or the caller's that no one else
/// may write (or sticky, as /tmp), the last one the caller's own and private. The file,
/// `libhood_rt-HASH.so` (content-addressed), is written beside under a new name and renamed
/// into place, and used only if it is a regular file of the caller, with one link and no write
/// bits for others, holding exactly the carried bytes.
pub fn carried_copy(bytes: &[u8], dir: &Path) -> Result<PathBuf, HooksError> {
    use std::io::{Read, Write};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let fail = |what: String| {
        HooksError::Runtime(format!(
            "{what}; set HOOD_RT_LIB=/path/to/libhood_rt.so (installed by `make install`)"
        ))
    };
    checked_dir(dir).map_err(|why| {
        fail(format!(
            "cannot use {} for the runtime library hood carries: {why}",
            dir.display()
        ))
    })?;
    let path = dir.join(format!("libhood_rt-{:016x}.so", fnv1a(bytes)));
    let nofollow = (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32;
    let me = rustix::process::geteuid().as_raw();
    let holds_it = || -> bool {
        let Ok(mut f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nofollow)
            .open(&path)
        else {
            return false;
        };
        let Ok(md) = f.metadata() else { return false };
        if !md.is_file() || md.uid() != me || md.nlink() != 1 || md.mode() & 0o022 != 0 {
            return false;
        }
        if md.len() != bytes.len() as u64 {
            return false;
        }
        let mut have = Vec::with_capacity(bytes.len());
        f.read_to_end(&mut have).is_ok() && have == bytes
    };
    if holds_it() {
        return Ok(path);
    }
    let temp = dir.join(format!(".libhood_rt.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .open(&temp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(format!("writing {}: {e}", path.display())));
    }
    if !holds_it() {
        return Err(fail(format!(
            "{} does not hold the runtime library just written to it",
            path.display()
        )));
    }
    Ok(path)
}

/// Create `dir` (0700) or check it, and every directory above it (see [`carried_copy`]).
fn checked_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let me = rustix::process::geteuid().as_raw();
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(dir)
    };
    let mut at = PathBuf::from("/");
    let parts: Vec<_> = abs.components().skip(1).collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let last = i + 1 == parts.len();
        let md = match std::fs::symlink_metadata(&at) {
            Ok(md) => md,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&at)
                    .map_err(|e| format!("creating {}: {e}", at.display()))?;
                std::fs::symlink_metadata(&at).map_err(|e| e.to_string())?
            }
            Err(e) => return Err(format!("{}: {e}", at.display())),
        };
        let t = md.file_type();
        // A link of root's on the way (/home -> /var/home) is followed; anyone else's is not.
        if t.is_symlink() && md.uid() == 0 && !last {
            at = std::fs::canonicalize(&at).map_err(|e| format!("{}: {e}", at.display()))?;
            continue;
        }
        if !t.is_dir() {
            return Err(format!(
                "{} is not a directory (a symbolic link?)",
                at.display()
            ));
        }
        if md.uid() != me && md.uid() != 0 {
            return Err(format!("{} belongs to uid {}", at.display(), md.uid()));
        }
        let others_write = md.mode() & 0o022 != 0;
        let sticky = md.mode() & 0o1000 != 0;
        if others_write && (last || !sticky) {
            return Err(format!("{} is writable by other users", at.display()));
        }
        if last && (md.uid() != me || md.mode() & 0o077 != 0) {
            return Err(format!(
                "{} is not private to you (owner uid {}, mode {:o})",
                at.display(),
                md.uid(),
                md.mode() & 0o7777
            ));
        }
    }
    Ok(())
}

/// FNV-1a, 64 bits: the carried library's name (its content is compared whole before use).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The shortest interval a recorder measures the TSC's rate over (sleeping, not spinning, if
/// its set-up took less): the runtime's own measurement spun for 2 ms.
const TSC_INTERVAL: std::time::Duration = std::time::Duration::from_millis(5);

/// `HOOD_TSC_HZ` for the programs a recorder starts: the TSC's rate measured since `start`
/// (taken when the recorder began), so that the runtime in each process it starts uses it
/// instead of spinning ~2 ms of the program's CPU to measure it. `None` where there is no
/// invariant TSC or the measurement failed (the runtime then measures as before).
pub fn tsc_setting(start: Option<hood_proc::clock::TscRate>) -> Option<(OsString, OsString)> {
    let hz = start?.finish(TSC_INTERVAL)?;
    Some(("HOOD_TSC_HZ".into(), hz.to_string().into()))
}

/// The `LD_PRELOAD` value that loads `lib` first, then what the environment preloads already.
pub fn preload(lib: &Path) -> OsString {
    let mut s = lib.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        s.push(":");
        s.push(old);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_carried_library_is_written_once_checked_and_rewritten_when_changed() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("cache/hood/rt");
        let bytes = b"\x7fELF not really a library".repeat(100);
        let p = carried_copy(&bytes, &dir).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), bytes);
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // Content-addressed: other bytes, another file; the same bytes, the same file.
        let other = carried_copy(b"other", &dir).unwrap();
        assert_ne!(other, p);
        assert_eq!(carried_copy(&bytes, &dir).unwrap(), p);
        // A file changed since is written again before it is used.
        std::fs::write(&p, b"tampered").unwrap();
        assert_eq!(carried_copy(&bytes, &dir).unwrap(), p);
        assert_eq!(std::fs::read(&p).unwrap(), bytes);
        // A link in its place is replaced, never followed.
        let target = d.path().join("elsewhere");
        std::fs::write(&target, b"keep").unwrap();
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&target, &p).unwrap();
        assert_eq!(carried_copy(&bytes, &dir).unwrap(), p);
        assert!(!std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn a_directory_others_may_write_or_a_link_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = carried_copy(b"x", &open.join("rt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("writable by other users"), "{e}");
        let real = d.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        // Root's links are followed (/home -> /var/home): the link is another user's.
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        }
        let e = carried_copy(b"x", &link.join("rt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a directory (a symbolic link?)"), "{e}");
        assert!(std::fs::read_dir(&real).unwrap().next().is_none());
    }
}
