//! GNU build-id notes of ELF files, read without trusting the input.
//!
//! The parser reads only the headers it needs (ELF header, section or
//! program headers, note contents) through a small positioned-read
//! callback, so a 100 MB binary costs a few small reads, and any
//! truncated or nonsensical field yields an error or `None`, never a panic.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::SymbolError;

const SHT_NOTE: u32 = 7;
const PT_NOTE: u32 = 4;
const NT_GNU_BUILD_ID: u32 = 3;
/// Upper bound on the header tables and note areas we are willing to read.
const MAX_TABLE: usize = 4 << 20;

/// Reads `len` bytes at `off`; `None` if they are not all available.
type ReadAt<'a> = dyn FnMut(u64, usize) -> Option<Cow<'a, [u8]>> + 'a;

/// Returns the GNU build-id of the ELF file at `path`, `Ok(None)` if the
/// file has no build-id note.
///
/// Errors: the file cannot be opened ([`SymbolError::Io`]) or is not ELF
/// ([`SymbolError::NotElf`]).
pub fn read_build_id(path: &Path) -> Result<Option<Vec<u8>>, SymbolError> {
    let file = File::open(path).map_err(|source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    build_id_of_file(file, path)
}

/// [`read_build_id`] of a file already opened (`path` names it in errors).
pub(crate) fn build_id_of_file(file: File, path: &Path) -> Result<Option<Vec<u8>>, SymbolError> {
    let mut read = move |off: u64, len: usize| -> Option<Cow<'static, [u8]>> {
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, off).ok()?;
        Some(Cow::Owned(buf))
    };
    find_build_id(&mut read).map_err(|reason| SymbolError::NotElf {
        what: path.display().to_string(),
        reason,
    })
}

/// Returns the GNU build-id of an ELF image held in memory (for example
/// the `[vdso]` bytes), `Ok(None)` if it has no build-id note.
pub fn build_id_from_bytes(image: &[u8]) -> Result<Option<Vec<u8>>, SymbolError> {
    let mut read = |off: u64, len: usize| -> Option<Cow<'_, [u8]>> {
        let start = usize::try_from(off).ok()?;
        image.get(start..start.checked_add(len)?).map(Cow::Borrowed)
    };
    find_build_id(&mut read).map_err(|reason| SymbolError::NotElf {
        what: "in-memory image".to_string(),
        reason,
    })
}

/// Lower-case hex of a build-id (or any byte string).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Byte order and word size of an ELF image.
#[derive(Clone, Copy)]
struct Layout {
    is64: bool,
    big: bool,
}

impl Layout {
    fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let a: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
        Some(if self.big {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        })
    }
    fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let a: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(if self.big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    }
    fn u64(self, b: &[u8], at: usize) -> Option<u64> {
        let a: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
        Some(if self.big {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        })
    }
    /// A word: 8 bytes in ELF64, 4 in ELF32.
    fn word(self, b: &[u8], at64: usize, at32: usize) -> Option<u64> {
        if self.is64 {
            self.u64(b, at64)
        } else {
            self.u32(b, at32).map(u64::from)
        }
    }
}

/// A note area: file offset, size and alignment.
struct NoteArea {
    off: u64,
    size: u64,
    align: u64,
}

fn find_build_id(read: &mut ReadAt<'_>) -> Result<Option<Vec<u8>>, &'static str> {
    let ehdr = read(0, 52).ok_or("file shorter than an ELF header")?;
    if ehdr.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("no ELF magic number");
    }
    let lay = Layout {
        is64: match ehdr[4] {
            1 => false,
            2 => true,
            _ => return Err("unknown ELF class"),
        },
        big: match ehdr[5] {
            1 => false,
            2 => true,
            _ => return Err("unknown ELF byte order"),
        },
    };
    let ehdr = if lay.is64 {
        read(0, 64).ok_or("truncated ELF header")?
    } else {
        ehdr
    };
    let bad = "truncated ELF header";
    let (shoff, shentsize, shnum) = if lay.is64 {
        (
            lay.u64(&ehdr, 0x28),
            lay.u16(&ehdr, 0x3a),
            lay.u16(&ehdr, 0x3c),
        )
    } else {
        (
            lay.u32(&ehdr, 0x20).map(u64::from),
            lay.u16(&ehdr, 0x2e),
            lay.u16(&ehdr, 0x30),
        )
    };
    let (phoff, phentsize, phnum) = if lay.is64 {
        (
            lay.u64(&ehdr, 0x20),
            lay.u16(&ehdr, 0x36),
            lay.u16(&ehdr, 0x38),
        )
    } else {
        (
            lay.u32(&ehdr, 0x1c).map(u64::from),
            lay.u16(&ehdr, 0x2a),
            lay.u16(&ehdr, 0x2c),
        )
    };
    let (shoff, shentsize, shnum) = (shoff.ok_or(bad)?, shentsize.ok_or(bad)?, shnum.ok_or(bad)?);
    let (phoff, phentsize, phnum) = (phoff.ok_or(bad)?, phentsize.ok_or(bad)?, phnum.ok_or(bad)?);

    // Section headers first (they survive in most files); program headers
    // as the fallback (sections can be stripped from the image).
    let mut areas = Vec::new();
    if let Some(table) = table(read, shoff, shentsize, shnum) {
        let ent = usize::from(shentsize);
        for i in 0..usize::from(shnum) {
            let b = &table[i * ent..];
            if lay.u32(b, 4) == Some(SHT_NOTE) {
                if let (Some(off), Some(size), Some(align)) = (
                    lay.word(b, 0x18, 0x10),
                    lay.word(b, 0x20, 0x14),
                    lay.word(b, 0x30, 0x20),
                ) {
                    areas.push(NoteArea { off, size, align });
                }
            }
        }
    }
    if areas.is_empty() {
        if let Some(table) = table(read, phoff, phentsize, phnum) {
            let ent = usize::from(phentsize);
            for i in 0..usize::from(phnum) {
                let b = &table[i * ent..];
                if lay.u32(b, 0) == Some(PT_NOTE) {
                    if let (Some(off), Some(size), Some(align)) = (
                        lay.word(b, 8, 4),
                        lay.word(b, 0x20, 0x10),
                        lay.word(b, 0x30, 0x1c),
                    ) {
                        areas.push(NoteArea { off, size, align });
                    }
                }
            }
        }
    }
    for area in areas {
        let Ok(size) = usize::try_from(area.size) else {
            continue;
        };
        if size > MAX_TABLE {
            continue;
        }
        if let Some(bytes) = read(area.off, size) {
            if let Some(id) = scan_notes(lay, &bytes, area.align) {
                return Ok(Some(id));
            }
        }
    }
    Ok(None)
}

/// Reads a header table of `num` entries of `entsize` bytes; `None` if it
/// is absent, implausible or truncated.
fn table<'a>(read: &mut ReadAt<'a>, off: u64, entsize: u16, num: u16) -> Option<Cow<'a, [u8]>> {
    if off == 0 || num == 0 || entsize < 0x20 {
        return None;
    }
    let len = usize::from(entsize) * usize::from(num);
    if len > MAX_TABLE {
        return None;
    }
    read(off, len)
}

/// The GNU build-id in a raw little-endian note area such as /sys/kernel/notes (the running
/// kernel's notes), or `None` when there is none.
pub fn build_id_from_notes(notes: &[u8]) -> Option<Vec<u8>> {
    scan_notes(
        Layout {
            is64: true,
            big: false,
        },
        notes,
        4,
    )
}

/// Walks the notes of one note area and returns the GNU build-id descriptor.
fn scan_notes(lay: Layout, bytes: &[u8], align: u64) -> Option<Vec<u8>> {
    let align: usize = if align == 8 { 8 } else { 4 };
    let pad = |n: usize| n.checked_add(align - 1).map(|v| v & !(align - 1));
    let mut pos = 0usize;
    while pos.checked_add(12)? <= bytes.len() {
        let namesz = usize::try_from(lay.u32(bytes, pos)?).ok()?;
        let descsz = usize::try_from(lay.u32(bytes, pos + 4)?).ok()?;
        let ntype = lay.u32(bytes, pos + 8)?;
        let name_at = pos + 12;
        let desc_at = name_at.checked_add(pad(namesz)?)?;
        let end = desc_at.checked_add(pad(descsz)?)?;
        let name = bytes.get(name_at..name_at.checked_add(namesz)?)?;
        if ntype == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return bytes
                .get(desc_at..desc_at.checked_add(descsz)?)
                .map(<[u8]>::to_vec);
        }
        pos = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_elf() {
        assert!(
            build_id_from_bytes(b"hello world, not an elf file at all....................")
                .is_err()
        );
        assert!(build_id_from_bytes(b"\x7fELF").is_err());
        assert!(build_id_from_bytes(&[]).is_err());
    }

    #[test]
    fn own_executable_has_a_build_id_in_file_and_bytes_alike() {
        let exe = std::env::current_exe().expect("current_exe");
        let from_file = read_build_id(&exe).expect("read");
        let bytes = std::fs::read(&exe).expect("read exe");
        let from_bytes = build_id_from_bytes(&bytes).expect("parse");
        assert_eq!(from_file, from_bytes);
        // rustc on Linux passes --build-id to the linker.
        let id = from_file.expect("rust test binaries carry a GNU build-id");
        assert!(id.len() >= 8, "build-id {} too short", hex(&id));
    }

    #[test]
    fn hex_formats_lower_case() {
        assert_eq!(hex(&[0xab, 0x01, 0xff]), "ab01ff");
    }
}
