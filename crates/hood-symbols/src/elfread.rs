//! The one ELF reader of this crate: every header, table, note and section read from an ELF
//! file or image goes through the `object` crate, which checks each offset and size against
//! the bytes really there. What is read is untrusted (hood runs as root over any file a
//! profiled process mapped), so the helpers here add hood's own bounds: no header table or
//! note area larger than [`MAX_TABLE`] is read, whatever the headers claim, and only the
//! parts asked for are read (a file is read through a positioned-read cache, never whole).
//!
//! Build-ids come from the notes of `SHT_NOTE` sections, or of `PT_NOTE` segments when the
//! sections give none (an image loaded without its section headers).

use std::fs::File;
use std::path::Path;

use object::elf::{FileHeader32, FileHeader64, ELFCLASS32, ELFCLASS64, ELFMAG};
use object::elf::{NT_GNU_BUILD_ID, PT_NOTE, SHT_NOTE};
use object::read::elf::SectionTable;
use object::read::elf::{FileHeader, NoteIterator, ProgramHeader as _, SectionHeader as _};
use object::read::ReadCache;
use object::{Endianness, ReadRef};

use crate::{BuildId, SymbolError};

/// Upper bound on the header tables and note areas read (4 MiB: tens of thousands of
/// section headers).
pub(crate) const MAX_TABLE: u64 = 4 << 20;

/// The header of the 64-bit ELF files this crate reads sections of.
pub(crate) type Elf64 = FileHeader64<Endianness>;

/// A 64-bit ELF file's header, byte order and section table, read through `data`.
pub(crate) struct Sections64<'a, R: ReadRef<'a>> {
    pub(crate) header: &'a Elf64,
    pub(crate) endian: Endianness,
    pub(crate) table: SectionTable<'a, Elf64, R>,
}

/// The header and section table of the 64-bit ELF file in `data`, or why not: not 64-bit
/// ELF, or a section table outside the file or over [`MAX_TABLE`].
pub(crate) fn sections64<'a, R: ReadRef<'a>>(data: R) -> Result<Sections64<'a, R>, &'static str> {
    let header = Elf64::parse(data).map_err(|_| "not a 64-bit ELF file header")?;
    let endian = header.endian().map_err(|_| "unknown byte order")?;
    let table = bounded_sections(header, endian, data)?;
    Ok(Sections64 {
        header,
        endian,
        table,
    })
}

/// The section table, if it is no larger than [`MAX_TABLE`] and lies in the file.
fn bounded_sections<'a, Elf: FileHeader, R: ReadRef<'a>>(
    header: &'a Elf,
    endian: Elf::Endian,
    data: R,
) -> Result<SectionTable<'a, Elf, R>, &'static str> {
    let n = header.shnum(endian, data).map_err(|_| "no section count")? as u64;
    if n.saturating_mul(u64::from(header.e_shentsize(endian))) > MAX_TABLE {
        return Err("a section header table larger than any real one");
    }
    header
        .sections(endian, data)
        .map_err(|_| "section headers outside the file")
}

/// Returns the GNU build-id of the ELF file at `path`, `Ok(None)` if the
/// file has no build-id note.
///
/// Errors: the file cannot be opened ([`SymbolError::Io`]) or is not ELF
/// ([`SymbolError::NotElf`]).
/// The file is opened as a binary at the path it was mapped from: a regular file, never through
/// a symbolic link ([`SymbolError::Refused`] otherwise).
pub fn read_build_id(path: &Path) -> Result<Option<BuildId>, SymbolError> {
    build_id_at(path, crate::open::BINARY)
}

/// [`read_build_id`] of a file opened under `policy`.
pub(crate) fn build_id_at(
    path: &Path,
    policy: crate::open::Policy,
) -> Result<Option<BuildId>, SymbolError> {
    build_id_of_file(crate::open::open(path, policy)?, path)
}

/// [`read_build_id`] of a file already opened (`path` names it in errors).
pub(crate) fn build_id_of_file(file: File, path: &Path) -> Result<Option<BuildId>, SymbolError> {
    build_id_in(&ReadCache::new(file)).map_err(|reason| SymbolError::NotElf {
        what: path.display().to_string(),
        reason,
    })
}

/// Returns the GNU build-id of an ELF image held in memory (for example
/// the `[vdso]` bytes), `Ok(None)` if it has no build-id note.
pub fn build_id_from_bytes(image: &[u8]) -> Result<Option<BuildId>, SymbolError> {
    build_id_in(image).map_err(|reason| SymbolError::NotElf {
        what: "in-memory image".to_string(),
        reason,
    })
}

/// The GNU build-id in a raw little-endian note area such as /sys/kernel/notes (the running
/// kernel's notes), or `None` when there is none.
pub fn build_id_from_notes(notes: &[u8]) -> Option<BuildId> {
    let notes = NoteIterator::<Elf64>::new(Endianness::Little, 4, notes).ok()?;
    gnu_build_id::<Elf64>(notes, Endianness::Little)
}

/// The running kernel's build-id, from /sys/kernel/notes; `None` when unreadable or absent.
pub fn kernel_build_id() -> Option<BuildId> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    build_id_from_notes(&notes)
}

/// The build-id of the ELF file or image in `data`, 32- or 64-bit, either byte order.
fn build_id_in<'a, R: ReadRef<'a>>(data: R) -> Result<Option<BuildId>, &'static str> {
    // The 32-bit header is the shorter one: enough to read the identification bytes.
    let ident = &data
        .read_at::<FileHeader32<Endianness>>(0)
        .map_err(|_| "file shorter than an ELF header")?
        .e_ident;
    if ident.magic != ELFMAG {
        return Err("no ELF magic number");
    }
    match ident.class {
        ELFCLASS32 => build_id_of::<FileHeader32<Endianness>, R>(data),
        ELFCLASS64 => build_id_of::<Elf64, R>(data),
        _ => Err("unknown ELF class"),
    }
}

fn build_id_of<'a, Elf, R>(data: R) -> Result<Option<BuildId>, &'static str>
where
    Elf: FileHeader<Endian = Endianness>,
    R: ReadRef<'a>,
{
    let header = Elf::parse(data).map_err(|_| "truncated or unsupported ELF header")?;
    let endian = header.endian().map_err(|_| "unknown ELF byte order")?;
    // Section headers first (they survive in most files); program headers as the fallback
    // (sections can be stripped from an image).
    if let Ok(sections) = bounded_sections(header, endian, data) {
        for s in sections.iter() {
            if s.sh_type(endian) != SHT_NOTE || Into::<u64>::into(s.sh_size(endian)) > MAX_TABLE {
                continue;
            }
            if let Ok(Some(notes)) = s.notes(endian, data) {
                if let Some(id) = gnu_build_id::<Elf>(notes, endian) {
                    return Ok(Some(id));
                }
            }
        }
    }
    let phnum = header.phnum(endian, data).unwrap_or(0) as u64;
    if phnum.saturating_mul(u64::from(header.e_phentsize(endian))) > MAX_TABLE {
        return Ok(None);
    }
    for p in header.program_headers(endian, data).unwrap_or(&[]) {
        if p.p_type(endian) != PT_NOTE || Into::<u64>::into(p.p_filesz(endian)) > MAX_TABLE {
            continue;
        }
        if let Ok(Some(notes)) = p.notes(endian, data) {
            if let Some(id) = gnu_build_id::<Elf>(notes, endian) {
                return Ok(Some(id));
            }
        }
    }
    Ok(None)
}

/// The descriptor of the first GNU build-id note of a note area; `None` when there is none,
/// or when it is empty or longer than a [`BuildId`] holds.
fn gnu_build_id<Elf: FileHeader>(
    mut notes: NoteIterator<'_, Elf>,
    endian: Elf::Endian,
) -> Option<BuildId> {
    while let Ok(Some(note)) = notes.next() {
        if note.name() == b"GNU" && note.n_type(endian) == NT_GNU_BUILD_ID {
            return BuildId::from_bytes(note.desc());
        }
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
        assert!(id.as_bytes().len() >= 8, "build-id {id} too short");
    }

    /// An image whose section headers are gone, or whose note section claims more than any
    /// real one, still gives its build-id, from its `PT_NOTE` segment.
    #[test]
    fn program_headers_are_the_fallback() {
        let exe = std::env::current_exe().expect("current_exe");
        let bytes = std::fs::read(&exe).expect("read exe");
        let id = build_id_from_bytes(&bytes).expect("parse").expect("id");
        let mut no_sections = bytes.clone();
        no_sections[0x28..0x30].fill(0);
        no_sections[0x3c..0x3e].fill(0);
        assert_eq!(build_id_from_bytes(&no_sections).expect("parse"), Some(id));
        let s = sections64(&bytes[..]).expect("sections");
        let shoff = s.header.e_shoff(s.endian) as usize;
        let mut huge = bytes.clone();
        for (i, sh) in s.table.iter().enumerate() {
            if sh.sh_type(s.endian) == SHT_NOTE {
                // sh_size of an Elf64_Shdr is at byte 32.
                let at = shoff + i * 64 + 32;
                huge[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            }
        }
        assert_eq!(build_id_from_bytes(&huge).expect("parse"), Some(id));
        // Neither sections nor segments: no build-id, and no error.
        let mut none = no_sections;
        none[0x20..0x28].fill(0);
        assert_eq!(build_id_from_bytes(&none).expect("parse"), None);
    }
}
