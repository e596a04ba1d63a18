//! Private cache directories (debuginfod downloads, unpacked DWARF): hood runs as root, so a
//! cache is untrusted ground until checked. A cache directory is created `0700` and used only
//! if it is a real directory of the user hood runs as that no one else may write; a cached
//! file is opened without following symlinks and used only if it is a regular file of that
//! user carrying the build-id asked for.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::elfread::build_id_of_file;

/// `O_NOFOLLOW`: open the file itself, never what a symlink points to.
pub(crate) fn nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// The user hood runs as.
pub(crate) fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// A cache directory checked by [`private_dir`] on first use, and the answer kept for the
/// rest of the report (one check, and one warning, however often it is asked for).
pub(crate) struct CheckedDir {
    what: &'static str,
    var: &'static str,
    checked: Option<Result<PathBuf, String>>,
}

impl CheckedDir {
    /// `what` names the cache in messages, `var` the environment variable that moves it.
    pub(crate) fn new(what: &'static str, var: &'static str) -> CheckedDir {
        CheckedDir {
            what,
            var,
            checked: None,
        }
    }

    /// `dir`, created or checked the first time.
    pub(crate) fn get(&mut self, dir: &Path) -> Result<PathBuf, String> {
        self.checked
            .get_or_insert_with(|| private_dir(dir, self.what, self.var))
            .clone()
    }
}

/// Creates `dir` (mode 0700, parents as needed) or checks it: a real directory, owned by
/// the user hood runs as, not writable by group or others. `what` names the cache in
/// messages ("debuginfod cache") and `var` the environment variable that moves it.
pub(crate) fn private_dir(dir: &Path, what: &str, var: &str) -> Result<PathBuf, String> {
    // As root, with HOME or XDG_CACHE_HOME still a user's (`sudo -E`, `su -m`), every
    // component is checked before anything is created through it, and again after.
    let me = my_uid();
    let check_as_root = || match me {
        0 => trusted_path(dir, me).map_err(|why| {
            format!(
                "{what} {}: {why}; not used — set {var} to a directory of root's",
                dir.display()
            )
        }),
        _ => Ok(()),
    };
    check_as_root()?;
    if let Some(parent) = dir.parent() {
        fs::create_dir_all(parent).map_err(|e| {
            format!(
                "{what} {}: cannot create {}: {e}; set {var}",
                dir.display(),
                parent.display()
            )
        })?;
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(format!(
                "{what} {}: {e}; set {var} to a directory of yours",
                dir.display()
            ))
        }
    }
    check_as_root()?;
    let meta = fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let refuse = if !meta.file_type().is_dir() {
        Some("is not a directory (a symlink?)")
    } else if meta.uid() != my_uid() {
        Some("belongs to another user")
    } else if meta.mode() & 0o022 != 0 {
        Some("is writable by other users")
    } else {
        None
    };
    match refuse {
        Some(why) => Err(format!(
            "{what} {} {why}; not used — remove it or set {var}",
            dir.display()
        )),
        None => Ok(dir.to_path_buf()),
    }
}

/// Checks each existing component of `dir`, from the root down, as seen and as resolved: a
/// symlink must belong to root or `me` (another user's link would send the cache where they
/// choose), and every directory on the resolved path must belong to root or `me` and not be
/// writable by others unless sticky (as /tmp). Components not created yet are not checked.
fn trusted_path(dir: &Path, me: u32) -> Result<(), String> {
    let mut seen = PathBuf::new();
    for part in dir.components() {
        seen.push(part);
        let Ok(md) = fs::symlink_metadata(&seen) else {
            break;
        };
        if md.file_type().is_symlink() && md.uid() != 0 && md.uid() != me {
            return Err(format!(
                "{} is a symlink of another user (uid {})",
                seen.display(),
                md.uid()
            ));
        }
        let Ok(real) = fs::canonicalize(&seen) else {
            break;
        };
        let mut up = PathBuf::new();
        for p in real.components() {
            up.push(p);
            let md = fs::symlink_metadata(&up).map_err(|e| format!("{}: {e}", up.display()))?;
            if md.uid() != 0 && md.uid() != me {
                return Err(format!(
                    "{} belongs to another user (uid {})",
                    up.display(),
                    md.uid()
                ));
            }
            if md.mode() & 0o022 != 0 && md.mode() & 0o1000 == 0 {
                return Err(format!("{} is writable by other users", up.display()));
            }
        }
    }
    Ok(())
}

/// A cached file is used if it is a regular file (not a symlink) of the cache's owner with
/// the build-id asked for.
pub(crate) fn cached_ok(path: &Path, build_id: &crate::BuildId) -> bool {
    let Ok(f) = OpenOptions::new()
        .read(true)
        .custom_flags(nofollow())
        .open(path)
    else {
        return false;
    };
    let Ok(meta) = f.metadata() else {
        return false;
    };
    meta.is_file()
        && meta.uid() == my_uid()
        && matches!(build_id_of_file(f, path), Ok(Some(id)) if id == *build_id)
}

/// The default root of hood's caches: `$XDG_CACHE_HOME/hood`, else `$HOME/.cache/hood`.
pub(crate) fn default_root() -> PathBuf {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/root/.cache"))
        .join("hood")
}

/// A cache directory from the environment variable `var`: unset or empty gives
/// `default_root()/sub`, `off` (or `0`) none, anything else is the directory. The flag says
/// whether the user chose it (a directory the user chose that cannot be used is warned
/// about; the default one is skipped quietly).
pub(crate) fn dir_from_env(var: &str, sub: &str) -> Option<(PathBuf, bool)> {
    match std::env::var(var) {
        Ok(v) if v == "off" || v == "0" => None,
        Ok(v) if !v.trim().is_empty() => Some((PathBuf::from(v), true)),
        _ => Some((default_root().join(sub), false)),
    }
}

/// A file being written under a temporary name for this long is one whose report was killed.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Marks a cached file as just used (caches are trimmed least recently used first).
pub(crate) fn touch(path: &Path) {
    if let Ok(f) = fs::OpenOptions::new()
        .write(true)
        .custom_flags(nofollow())
        .open(path)
    {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// Removes the least recently used files named `*SUFFIX` in `dir` until they take at most
/// `max_bytes`, never `keep`, and files named `TEMP_PREFIX*` an hour old (left by a report
/// that was killed while it wrote one). Only regular files of this user are counted or
/// removed.
pub(crate) fn trim(dir: &Path, max_bytes: u64, keep: &Path, temp_prefix: &str, suffix: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut kept: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for e in entries.filter_map(|e| e.ok()) {
        let Ok(m) = fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !m.file_type().is_file() || m.uid() != my_uid() {
            continue;
        }
        let when = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(temp_prefix) {
            let stale = SystemTime::now()
                .duration_since(when)
                .is_ok_and(|age| age > STALE_TEMP);
            if stale {
                let _ = fs::remove_file(e.path());
            }
        } else if name.ends_with(suffix) {
            kept.push((when, m.len(), e.path()));
        }
    }
    let mut total: u64 = kept.iter().map(|c| c.1).fold(0, u64::saturating_add);
    kept.sort();
    for (_, len, path) in kept {
        if total <= max_bytes {
            break;
        }
        if path != keep && fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_cache_directory_must_be_private() {
        let base = tempfile::tempdir().unwrap();
        let made = base.path().join("a/b/cache");
        let check = |d: &Path| private_dir(d, "test cache", "TEST_VAR");
        assert_eq!(check(&made), Ok(made.clone()));
        assert_eq!(
            fs::metadata(&made).unwrap().permissions().mode() & 0o777,
            0o700
        );
        fs::set_permissions(&made, fs::Permissions::from_mode(0o777)).unwrap();
        let err = check(&made).unwrap_err();
        assert!(err.contains("writable by other users"), "{err}");
        assert!(
            err.contains("test cache") && err.contains("TEST_VAR"),
            "{err}"
        );
        fs::set_permissions(&made, fs::Permissions::from_mode(0o700)).unwrap();
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        let err = check(&link).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
    }
}
