//! What a report takes from the running system beside a recording, and a recorder keeps in
//! one: the text of /proc/kallsyms and the JIT maps (/tmp/perf-PID.map) of processes. Both are
//! read as untrusted text within bounds.

use std::collections::BTreeSet;
use std::path::Path;

use crate::process;

/// The text of /proc/kallsyms, or `None` with addresses hidden (kptr_restrict) or unreadable.
pub fn kallsyms() -> Option<String> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let hidden = text
        .lines()
        .take(50)
        .all(|l| l.starts_with("0000000000000000"));
    (!hidden).then_some(text)
}

/// The part of a JIT map kept in a recording. Maps are text a JIT appends to (a few MB for a
/// large Java or node process); a file any user can plant in /tmp may claim any size (sparse),
/// so only its beginning, whole lines, is read beyond this.
pub const MAX_PERF_MAP: u64 = 64 << 20;

/// The longest line of a JIT map kept: an address, a size and a name (C++ and Java names run
/// to a few KiB). A longer one is left out, and the zeros of a file's holes are never read.
const MAX_PERF_MAP_LINE: usize = 64 << 10;

/// The /tmp/perf-PID.map text of each pid that has one, and warnings about the maps that are
/// not read (or not whole). A map is read as perf reads it: a regular file, not a symbolic
/// link, owned by root or by the process's user (any user can write to /tmp), never blocking.
pub fn perf_maps(pids: &BTreeSet<u32>) -> (Vec<(u32, String)>, Vec<String>) {
    perf_maps_in(Path::new("/tmp"), pids, MAX_PERF_MAP, 0)
}

/// [`perf_maps`] in `dir`, keeping at most `max` bytes of each. The map of a process that is
/// gone must belong to root or to `gone_owner`.
pub fn perf_maps_in(
    dir: &Path,
    pids: &BTreeSet<u32>,
    max: u64,
    gone_owner: u32,
) -> (Vec<(u32, String)>, Vec<String>) {
    use hood_format::untrusted::{read_lines, Policy};
    let mut maps = Vec::new();
    let mut warnings = Vec::new();
    for &pid in pids {
        let path = dir.join(format!("perf-{pid}.map"));
        // The process's user owns /proc/PID; a process that is gone has none, and then only
        // root's map or `gone_owner`'s is read.
        let uid = process::uid(pid).unwrap_or(gone_owner);
        // Read a line at a time, the holes of a sparse file skipped: a map claiming
        // gigabytes costs what its lines hold, at most `max`.
        match read_lines(&path, Policy::owned_by_root_or(uid), max, MAX_PERF_MAP_LINE) {
            Ok(l) => {
                if l.cut {
                    warnings.push(format!(
                        "{}: larger than {} MiB; only its first {} MiB are kept, so JIT \
                         functions named further on stay unnamed",
                        path.display(),
                        max >> 20,
                        max >> 20
                    ));
                }
                if l.dropped > 0 {
                    warnings.push(format!(
                        "{}: {} lines left out (longer than {} KiB, or in a stretch of the \
                         file that holds no data)",
                        path.display(),
                        l.dropped,
                        MAX_PERF_MAP_LINE >> 10
                    ));
                }
                maps.push((pid, String::from_utf8_lossy(&l.text).into_owned()));
            }
            Err(hood_format::FormatError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => warnings.push(format!("JIT map not read: {e}")),
        }
    }
    (maps, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::{Duration, Instant};

    #[test]
    fn planted_perf_maps_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        // This process's own map (root's or its user's file) is kept whole.
        std::fs::write(dir.path().join(format!("perf-{me}.map")), "1000 10 jit_a\n").unwrap();
        // A FIFO, a link and a directory at the paths of other pids.
        let fifo = dir.path().join("perf-1.map");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o666),
            0,
        )
        .unwrap();
        symlink("/etc/passwd", dir.path().join("perf-2.map")).unwrap();
        std::fs::create_dir(dir.path().join("perf-3.map")).unwrap();
        let t = Instant::now();
        let (maps, warnings) =
            perf_maps_in(dir.path(), &BTreeSet::from([1, 2, 3, me, 4]), 1 << 20, 0);
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(maps, vec![(me, "1000 10 jit_a\n".to_string())]);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("perf-1.map is a FIFO"), "{warnings:?}");
        assert!(
            warnings[1].contains("perf-2.map is a symbolic link"),
            "{warnings:?}"
        );
        assert!(
            warnings[2].contains("perf-3.map is a directory"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_huge_perf_map_is_cut_at_a_whole_line_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let path = dir.path().join(format!("perf-{me}.map"));
        let line = "7f0000001000 10 a_jit_function_name\n";
        std::fs::write(&path, line.repeat(100)).unwrap();
        // Sparse beyond the lines: claims 8 GiB.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        let (maps, warnings) = perf_maps_in(dir.path(), &BTreeSet::from([me]), 1000, 0);
        let kept = &maps[0].1;
        assert_eq!(kept.len(), 1000 / line.len() * line.len());
        assert!(kept.ends_with('\n'));
        assert!(
            warnings[0].contains(&path.display().to_string())
                && warnings[0].contains("larger than"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_sparse_perf_map_costs_only_its_lines() {
        // Attack 18/19 of issue 29: a map claiming 10 GiB, its lines at the start and the end.
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let path = dir.path().join(format!("perf-{me}.map"));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(10 << 30).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"1000 10 first\n", 0).unwrap();
        f.write_all_at(b"\n2000 10 last\n", 5 << 30).unwrap();
        let (maps, warnings) = perf_maps_in(dir.path(), &BTreeSet::from([me]), MAX_PERF_MAP, 0);
        let kept = &maps[0].1;
        assert!(kept.starts_with("1000 10 first\n"), "{:?}", &kept[..20]);
        assert!(kept.len() <= MAX_PERF_MAP as usize);
        // Where the file system knows holes, the lines past it are kept too and nothing is
        // cut; elsewhere the zeros are read up to the bound as overlong lines, left out.
        assert!(
            kept.ends_with("\n2000 10 last\n")
                || warnings.iter().any(|w| w.contains("larger than")),
            "{warnings:?}"
        );
    }

    #[test]
    fn another_users_perf_map_is_refused() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIPPED (needs root to chown): another_users_perf_map_is_refused");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let path = dir.path().join(format!("perf-{me}.map"));
        std::fs::write(&path, "1000 10 evil\n").unwrap();
        rustix::fs::chown(&path, Some(rustix::fs::Uid::from_raw(4242)), None).unwrap();
        // This process runs as root: only root's map is its.
        let (maps, warnings) = perf_maps_in(dir.path(), &BTreeSet::from([me]), 1 << 20, 0);
        assert!(maps.is_empty());
        assert!(warnings[0].contains("uid 4242"), "{warnings:?}");
    }
}
