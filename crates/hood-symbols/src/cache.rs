//! Private cache directories (debuginfod downloads, unpacked DWARF): hood runs as root, so a
//! cache is untrusted ground until checked. A cache directory is created `0700` and used only
//! if it is a real directory of the user hood runs as that no one else may write; a cached
//! file is opened without following symlinks and used only if it is a regular file of that
//! user carrying the build-id asked for.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::elfread::build_id_of_file;

/// `O_NOFOLLOW`: open the file itself, never what a symlink points to.
pub(crate) fn nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// The user hood runs as.
pub(crate) fn my_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Creates `dir` (mode 0700, parents as needed) or checks it: a real directory, owned by
/// the user hood runs as, not writable by group or others. `what` names the cache in
/// messages ("debuginfod cache") and `var` the environment variable that moves it.
pub(crate) fn private_dir(dir: &Path, what: &str, var: &str) -> Result<PathBuf, String> {
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

/// A cached file is used if it is a regular file (not a symlink) of the cache's owner with
/// the build-id asked for.
pub(crate) fn cached_ok(path: &Path, build_id: &[u8]) -> bool {
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
        && matches!(build_id_of_file(f, path), Ok(Some(id)) if id == build_id)
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
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        let err = check(&link).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
    }
}
