//! Names for PLT stubs (`memcmp@plt`), which no symbol table covers: blazesym would charge
//! them to whatever symbol precedes `.plt` (usually `_init`).
//!
//! A stub's target is the symbol of its relocation in `.rela.plt`: the linker lays the
//! stubs out in relocation order, so stub *i* of `.plt.sec` (x86-64 with IBT) belongs to
//! relocation *i*, and stub *i* of `.plt` to relocation *i − 1* (after the resolver stub
//! PLT0). Only the ELF headers, `.rela.plt` and `.dynsym` are read, not the whole file.

use std::fs::File;
use std::path::Path;

use object::elf::{EM_AARCH64, EM_X86_64};
use object::read::elf::{FileHeader as _, SectionHeader as _, Sym as _};
use object::read::ReadCache;
use object::SectionIndex;

use crate::elfread::sections64;
use crate::Sym;

/// One PLT section: file range, header (PLT0) size, stub size and the first relocation index.
#[derive(Clone, Debug)]
struct Stubs {
    start: u64,
    end: u64,
    header: u64,
    entry: u64,
}

/// The PLT stubs of one ELF file, by file offset.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plt {
    sections: Vec<Stubs>,
    /// `name@plt` per `.rela.plt` entry; `None` for relocations without a symbol (IRELATIVE).
    names: Vec<Option<String>>,
}

impl Plt {
    /// Reads the PLT layout of `path`. Files that are not 64-bit x86-64/AArch64 ELF, or
    /// whose stub count does not match `.rela.plt`, give an empty table: better no name
    /// than a wrong one.
    pub(crate) fn read(path: &Path) -> Plt {
        let Ok(file) = crate::open::open(path, crate::open::BINARY) else {
            return Plt::default();
        };
        let cache = ReadCache::new(file);
        read_elf(&cache).unwrap_or_default()
    }

    /// The stub covering `file_offset`, if any.
    pub(crate) fn lookup(&self, file_offset: u64) -> Option<Sym> {
        let s = self
            .sections
            .iter()
            .find(|s| (s.start..s.end).contains(&file_offset))?;
        let rel = file_offset - s.start;
        let index = rel.checked_sub(s.header)? / s.entry;
        let name = self.names.get(usize::try_from(index).ok()?)?.clone()?;
        Some(Sym {
            name,
            offset: (rel - s.header) % s.entry,
            size: Some(s.entry),
            ..Sym::default()
        })
    }
}

fn read_elf(data: &ReadCache<File>) -> Option<Plt> {
    let elf = sections64(data).ok()?;
    let (endian, sections) = (elf.endian, elf.table);
    let machine = elf.header.e_machine(endian);
    // (PLT0 size, stub size) of `.plt`; `.plt.sec` has no PLT0.
    let plt0 = match machine {
        EM_X86_64 => 16,
        EM_AARCH64 => 32,
        _ => return None,
    };
    let (_, rela_plt) = sections.section_by_name(endian, b".rela.plt")?;
    let (relocs, link) = rela_plt.rela(endian, data).ok()??;
    let symbols = sections
        .symbol_table_by_index(endian, data, SectionIndex(link.0))
        .ok()?;
    let names: Vec<Option<String>> = relocs
        .iter()
        .map(|r| {
            let index = r.r_sym(endian, false);
            if index == 0 {
                return None;
            }
            let sym = symbols.symbol(object::SymbolIndex(index as usize)).ok()?;
            let name = sym.name(endian, symbols.strings()).ok()?;
            let name = std::str::from_utf8(name).ok()?;
            (!name.is_empty()).then(|| format!("{name}@plt"))
        })
        .collect();
    let n = names.len() as u64;
    let mut found = Vec::new();
    for (name, header_size) in [(&b".plt"[..], plt0), (b".plt.sec", 0)] {
        let Some((_, sec)) = sections.section_by_name(endian, name) else {
            continue;
        };
        let Some((start, size)) = sec.file_range(endian) else {
            continue;
        };
        // Each stub is 16 bytes on both machines; anything else is a layout we do not know.
        let entry = 16;
        if size < header_size || (size - header_size) != n * entry {
            continue;
        }
        found.push(Stubs {
            start,
            end: start + size,
            header: header_size,
            entry,
        });
    }
    Some(Plt {
        sections: found,
        names,
    })
}
