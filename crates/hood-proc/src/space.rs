//! Room left on a file system: what a recorder checks before its file fills the disk.

use std::path::Path;

/// Space on the file system that holds `path`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Bytes an unprivileged writer may still use.
    pub available: u64,
    /// The file system's size.
    pub total: u64,
}

/// The space of the file system holding `path` (a directory or file; statvfs does not open
/// it), or `None` when it cannot be asked.
pub fn of(path: &Path) -> Option<Space> {
    let st = rustix::fs::statvfs(path).ok()?;
    let unit = st.f_frsize.max(1);
    Some(Space {
        available: st.f_bavail.saturating_mul(unit),
        total: st.f_blocks.saturating_mul(unit),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_directory_has_space() {
        let dir = tempfile::tempdir().unwrap();
        let s = super::of(dir.path()).unwrap();
        assert!(s.total > 0 && s.available <= s.total, "{s:?}");
        assert!(super::of(&dir.path().join("missing")).is_none());
    }
}
