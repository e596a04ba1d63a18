//! Separate debug files: the full symbol table and DWARF of a stripped binary (libc's local
//! functions, a distribution's stripped tools), found the ways gdb and perf find them:
//!
//! 1. by build-id, `DIR/.build-id/XX/YYYY.debug` in each debug directory (the layout of
//!    Debian's `-dbgsym` packages), with the same build-id inside;
//! 2. by the binary's `.gnu_debuglink` section (a file name and the CRC-32 of the debug
//!    file, written by `objcopy --add-gnu-debuglink`): next to the binary, in its `.debug/`
//!    subdirectory, and under each debug directory (by the binary's own directory, then
//!    directly); a file whose CRC differs is never read;
//! 3. from debuginfod servers (`DEBUGINFOD_URLS`, see [`crate::debuginfod`]).
//!
//! Their program headers describe no file contents, so a file offset is first turned into a
//! virtual address with the binary's own `PT_LOAD` headers.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use object::elf::{PT_LOAD, SHT_NOBITS};
use object::read::elf::{FileHeader as _, ProgramHeader as _, SectionHeader as _};
use object::read::ReadCache;
use object::Endianness;

use crate::elfread::{build_id_at, sections64, Elf64};
use crate::open::{open, BINARY, DEBUG};
use crate::BuildId;

/// Larger `.gnu_debuglink` sections are not debug links.
const MAX_DEBUGLINK: u64 = 4096;
/// Larger files are not read to check a debug link's CRC.
const MAX_DEBUG_FILE: u64 = 16 << 30;

/// Larger debug-link candidates are checked for holes before their CRC is computed.
const SPARSE_CHECKED: u64 = 64 << 20;

/// Whether `f` (`len` bytes) has a hole before its end and less than half of its bytes on
/// disk: a debug file is written whole, while a sparse one (issue 29: 16 GiB that take the
/// user who planted them nothing) would have a report read zeros for a minute. The file
/// position is left at the start.
fn sparse(f: &std::fs::File, len: u64) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let stored = f.metadata().map_or(len, |m| m.blocks().saturating_mul(512));
    let hole = rustix::fs::seek(f, rustix::fs::SeekFrom::Hole(0)).is_ok_and(|h| h < len);
    let _ = rustix::fs::seek(f, rustix::fs::SeekFrom::Start(0));
    stored < len / 2 && hole
}

/// More program headers than any real binary has.
const MAX_PHDRS: usize = 512;

/// One `PT_LOAD` segment: file bytes `[offset, offset + filesz)` live at `vaddr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Load {
    offset: u64,
    vaddr: u64,
    filesz: u64,
}

/// A debug file usable for a binary, and how to get from the binary's file offsets to
/// the virtual addresses its symbols are keyed by.
#[derive(Clone, Debug)]
pub(crate) struct DebugFile {
    pub(crate) path: PathBuf,
    loads: Vec<Load>,
}

impl DebugFile {
    /// The debug file for the binary `real` (mapped as `recorded`, build-id `id`) in `dirs`: by build-id,
    /// else by debug link (see the module documentation); `None` if there is none or the
    /// binary's load segments cannot be read.
    pub(crate) fn find(
        real: &Path,
        recorded: &Path,
        id: Option<&BuildId>,
        dirs: &[PathBuf],
    ) -> Option<DebugFile> {
        let path = id
            .and_then(|id| debug_file_path(id, dirs))
            .or_else(|| debug_link_path(real, recorded, dirs, id))?;
        Self::at(real, path)
    }

    /// `path` as the debug file of the binary `real` (already checked to belong to it).
    pub(crate) fn at(real: &Path, path: PathBuf) -> Option<DebugFile> {
        let loads = read_loads(real)?;
        Some(DebugFile { path, loads })
    }

    /// The virtual address of a file offset of the binary, if a load segment holds it.
    pub(crate) fn vaddr(&self, offset: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|l| offset >= l.offset && offset - l.offset < l.filesz)
            .and_then(|l| l.vaddr.checked_add(offset - l.offset))
    }
}

/// The separate debug file for `build_id` in one of `dirs` (each laid out as
/// `DIR/.build-id/XX/YYYY.debug`), if one exists and carries the same build-id: a debug file
/// left over from another build of the binary is never trusted.
pub fn debug_file_path(build_id: &BuildId, dirs: &[PathBuf]) -> Option<PathBuf> {
    if build_id.as_bytes().len() < 2 {
        return None;
    }
    let h = build_id.to_string();
    let path = dirs
        .iter()
        .map(|d| {
            d.join(".build-id")
                .join(&h[..2])
                .join(format!("{}.debug", &h[2..]))
        })
        .find(|p| p.is_file())?;
    (build_id_at(&path, DEBUG).ok()?.as_ref() == Some(build_id)).then_some(path)
}

/// The debug file named by the `.gnu_debuglink` of `real` (recorded as `recorded`) whose
/// CRC-32 matches, looked for next to the binary, in its `.debug/` subdirectory, then under
/// each of `dirs` by the binary's directory and directly. A link that is not a plain file
/// name is ignored, and so is a file with another build-id than the binary's `id`.
pub(crate) fn debug_link_path(
    real: &Path,
    recorded: &Path,
    dirs: &[PathBuf],
    id: Option<&BuildId>,
) -> Option<PathBuf> {
    let (name, crc) = read_debuglink(real)?;
    let bin_dir = real.parent()?;
    let rec_dir = recorded.parent().unwrap_or(Path::new("/"));
    let rec_rel = rec_dir.strip_prefix("/").unwrap_or(rec_dir);
    let mut candidates = vec![bin_dir.join(&name), bin_dir.join(".debug").join(&name)];
    for d in dirs {
        candidates.push(d.join(rec_rel).join(&name));
        candidates.push(d.join(&name));
    }
    candidates.into_iter().find(|c| {
        c.as_path() != real
            && file_crc32(c) == Some(crc)
            && match (id, build_id_at(c, DEBUG).ok().flatten()) {
                (Some(a), Some(b)) => *a == b,
                _ => true,
            }
    })
}

/// Sections by which an ELF file names another file that blazesym (the DWARF reader) opens
/// by itself, with the offset of the name in the section: the debug link's target, looked for
/// beside the file's real path, and the supplementary DWARF file (dwz's `.gnu_debugaltlink`,
/// DWARF 5's `.debug_sup`: version, flag, then the name), which may be any path.
const LINKS: [(&str, usize); 3] = [
    (".gnu_debuglink", 0),
    (".gnu_debugaltlink", 0),
    (".debug_sup", 3),
];

/// Why the ELF file open at `fd_path` must not be handed to the DWARF reader: it names another
/// file that blazesym would open on its own (see [`LINKS`]), without hood's checks (opened
/// blocking, so a FIFO hangs the report; mapped and checksummed whole, so a sparse file of
/// 16 GiB costs gigabytes and minutes), in a directory that another user can write (issue
/// 29). `None` when the file names none, or only files in directories that only root or the
/// caller can change.
pub(crate) fn unchecked_link(fd_path: &Path) -> Option<String> {
    use object::ReadRef as _;
    use std::os::unix::ffi::OsStrExt as _;
    let data = ReadCache::new(open(fd_path, DEBUG).ok()?);
    let elf = sections64(&data).ok()?;
    // What blazesym does with the path it is given.
    let real = std::fs::canonicalize(fd_path).ok()?;
    let dir = real.parent()?;
    for (section, at) in LINKS {
        let Some((_, sec)) = elf.table.section_by_name(elf.endian, section.as_bytes()) else {
            continue;
        };
        let Some((offset, size)) = sec.file_range(elf.endian) else {
            continue;
        };
        let bytes = data
            .read_bytes_at(offset, size.min(MAX_DEBUGLINK))
            .unwrap_or(&[]);
        let name = bytes.get(at..).unwrap_or(&[]);
        let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
        // As blazesym joins it: an absolute name stands for itself.
        let target = dir.join(std::ffi::OsStr::from_bytes(name));
        let parent = target.parent().unwrap_or(Path::new("/"));
        if let Some(who) = writable_by_others(parent) {
            return Some(format!(
                "{} names {} in its {section}, in {who}; the DWARF reader would open it \
                 unchecked (a FIFO there hangs the report, a sparse file costs gigabytes)",
                real.display(),
                target.display()
            ));
        }
    }
    None
}

/// The first directory from the root down to `dir` (or to its nearest existing ancestor)
/// that a user other than root and the caller owns or may write, described; `None` if there
/// is none. A sticky directory above it (`/tmp`) is fine: others cannot rename what it holds.
fn writable_by_others(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    let mut existing = dir;
    let real = loop {
        match std::fs::canonicalize(existing) {
            Ok(r) => break r,
            Err(_) => existing = existing.parent()?,
        }
    };
    for d in real.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let Ok(m) = std::fs::symlink_metadata(d) else {
            return Some(format!("{} (cannot be checked)", d.display()));
        };
        let sticky_above = m.mode() & 0o1000 != 0 && d != real;
        if (m.uid() != 0 && m.uid() != me) || (m.mode() & 0o022 != 0 && !sticky_above) {
            return Some(format!(
                "{} (owner uid {}, mode {:o})",
                d.display(),
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    None
}

/// The file name and CRC-32 of the `.gnu_debuglink` section of a 64-bit ELF file.
fn read_debuglink(path: &Path) -> Option<(String, u32)> {
    let data = ReadCache::new(open(path, BINARY).ok()?);
    let elf = sections64(&data).ok()?;
    let (_, sec) = elf.table.section_by_name(elf.endian, b".gnu_debuglink")?;
    let (_, size) = sec.file_range(elf.endian)?;
    if size > MAX_DEBUGLINK {
        return None;
    }
    parse_debuglink(sec.data(elf.endian, &data).ok()?, elf.endian)
}

/// `NAME\0`, padding to a multiple of 4, the CRC in the file's byte order. Only plain file
/// names are taken: a link holding `/` or `..` could point anywhere.
fn parse_debuglink(bytes: &[u8], endian: Endianness) -> Option<(String, u32)> {
    let nul = bytes.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&bytes[..nul]).ok()?;
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return None;
    }
    let at = (nul + 1).next_multiple_of(4);
    let crc: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    let crc = match endian {
        Endianness::Little => u32::from_le_bytes(crc),
        Endianness::Big => u32::from_be_bytes(crc),
    };
    Some((name.to_string(), crc))
}

/// The CRC-32 (the debug link's, zlib's) of a regular file of bounded size, not sparse.
fn file_crc32(path: &Path) -> Option<u32> {
    let mut f = open(path, DEBUG).ok()?;
    let len = f.metadata().ok()?.len();
    if len > MAX_DEBUG_FILE || (len > SPARSE_CHECKED && sparse(&f, len)) {
        return None;
    }
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Some(h.finalize()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Whether a 64-bit ELF file carries DWARF itself (a `.debug_info` with contents).
pub(crate) fn has_dwarf(path: &Path) -> bool {
    let Ok(file) = open(path, DEBUG) else {
        return false;
    };
    let data = ReadCache::new(file);
    let Ok(elf) = sections64(&data) else {
        return false;
    };
    elf.table
        .section_by_name(elf.endian, b".debug_info")
        .is_some_and(|(_, s)| s.sh_type(elf.endian) != SHT_NOBITS && s.sh_size(elf.endian) > 0)
}

/// The `PT_LOAD` headers of a 64-bit ELF file; `None` for anything else, anything
/// truncated, or more program headers than any real binary has.
fn read_loads(path: &Path) -> Option<Vec<Load>> {
    let data = ReadCache::new(open(path, BINARY).ok()?);
    let header = Elf64::parse(&data).ok()?;
    let endian = header.endian().ok()?;
    if header.phnum(endian, &data).ok()? > MAX_PHDRS {
        return None;
    }
    let loads: Vec<Load> = header
        .program_headers(endian, &data)
        .ok()?
        .iter()
        .filter(|p| p.p_type(endian) == PT_LOAD)
        .map(|p| Load {
            offset: p.p_offset(endian),
            vaddr: p.p_vaddr(endian),
            filesz: p.p_filesz(endian),
        })
        .collect();
    (!loads.is_empty()).then_some(loads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debuglink_names_must_be_plain() {
        let link = |name: &[u8]| {
            let mut b = name.to_vec();
            b.push(0);
            while !b.len().is_multiple_of(4) {
                b.push(0);
            }
            b.extend(0x1234_5678u32.to_le_bytes());
            parse_debuglink(&b, Endianness::Little)
        };
        assert_eq!(
            link(b"prog.debug"),
            Some(("prog.debug".into(), 0x1234_5678))
        );
        assert_eq!(link(b"abc"), Some(("abc".into(), 0x1234_5678)));
        assert_eq!(link(b"../../etc/shadow"), None);
        assert_eq!(link(b".."), None);
        assert_eq!(link(b""), None);
        assert_eq!(parse_debuglink(b"prog.debug\0\0", Endianness::Little), None);
    }

    #[test]
    fn a_directory_others_can_write_is_named_and_a_private_one_is_not() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Under the sticky /tmp, in a directory of the caller's only.
        assert_eq!(writable_by_others(&private), None);
        // Where the named file would be: a directory not made yet is checked at its parent.
        assert_eq!(writable_by_others(&private.join("not-yet")), None);
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = writable_by_others(&open).unwrap();
        assert!(
            why.contains(&open.display().to_string()) && why.contains("mode 777"),
            "{why}"
        );
        // Sticky does not help the directory the file itself would be planted in.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(writable_by_others(&open).is_some());
        assert!(writable_by_others(&open.join("sub")).is_some());
    }

    #[test]
    fn a_sparse_debug_link_candidate_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let sparse = dir.path().join("sparse.debug");
        let f = std::fs::File::create(&sparse).unwrap();
        // What the attacker planted (issue 29): gigabytes that take no disk.
        f.set_len(4 << 30).unwrap();
        assert_eq!(file_crc32(&sparse), None);
        // A small sparse file and a whole one are read: their CRC is zlib's.
        let small = dir.path().join("small.debug");
        std::fs::File::create(&small)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        assert_eq!(
            file_crc32(&small),
            Some(crc32fast::hash(&vec![0u8; 1 << 20]))
        );
        let whole = dir.path().join("whole.debug");
        std::fs::write(&whole, b"debug info").unwrap();
        assert_eq!(file_crc32(&whole), Some(crc32fast::hash(b"debug info")));
    }
}
