//! Separate debug files (`/usr/lib/debug/.build-id/XX/YYYY.debug`, the layout Debian's
//! `-dbg`/`-dbgsym` packages and `objcopy --only-keep-debug` use). They hold the full symbol
//! table of a stripped binary (libc's local functions, a distribution's stripped tools), but
//! their program headers describe no file contents, so a file offset is first turned into a
//! virtual address with the binary's own `PT_LOAD` headers.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::{hex, read_build_id};

const PT_LOAD: u32 = 1;
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
    /// The debug file for the binary `real` in one of `dirs` (each laid out as
    /// `DIR/.build-id/XX/YYYY.debug`), if one exists with the same build-id and the
    /// binary's load segments can be read.
    pub(crate) fn find(real: &Path, dirs: &[PathBuf]) -> Option<DebugFile> {
        let id = read_build_id(real).ok()??;
        let path = debug_file_path(&id, dirs)?;
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
pub fn debug_file_path(build_id: &[u8], dirs: &[PathBuf]) -> Option<PathBuf> {
    if build_id.len() < 2 {
        return None;
    }
    let h = hex(build_id);
    let path = dirs
        .iter()
        .map(|d| {
            d.join(".build-id")
                .join(&h[..2])
                .join(format!("{}.debug", &h[2..]))
        })
        .find(|p| p.is_file())?;
    (read_build_id(&path).ok()?.as_deref() == Some(build_id)).then_some(path)
}

/// The `PT_LOAD` headers of a 64-bit little-endian ELF file; `None` for anything else
/// or anything truncated.
fn read_loads(path: &Path) -> Option<Vec<Load>> {
    let f = File::open(path).ok()?;
    let mut eh = [0u8; 64];
    f.read_exact_at(&mut eh, 0).ok()?;
    // 64-bit (class 2), little-endian (data 1).
    if &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
    let phoff = u64_at(&eh, 0x20);
    let phentsize = usize::from(u16_at(&eh, 0x36));
    let phnum = usize::from(u16_at(&eh, 0x38));
    if phentsize < 56 || phnum == 0 || phnum > MAX_PHDRS {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    f.read_exact_at(&mut table, phoff).ok()?;
    let loads: Vec<Load> = table
        .chunks_exact(phentsize)
        .filter(|p| u32_at(p, 0) == PT_LOAD)
        .map(|p| Load {
            offset: u64_at(p, 8),
            vaddr: u64_at(p, 16),
            filesz: u64_at(p, 32),
        })
        .collect();
    (!loads.is_empty()).then_some(loads)
}
