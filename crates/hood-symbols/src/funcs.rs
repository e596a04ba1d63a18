//! The function symbols of an ELF file (`.symtab` and `.dynsym`), by unrelocated address: what
//! `hood trace record --filter/--exclude` resolves its name globs against before the traced
//! program starts. Only the headers and the symbol and string tables are read (through the
//! `object` crate, which checks every offset against the file), not the whole file.

use std::fs::File;
use std::path::Path;

use object::elf::{SHN_UNDEF, SHT_DYNSYM, SHT_SYMTAB, STT_FUNC, STT_GNU_IFUNC};
use object::read::elf::{SectionHeader as _, Sym as _, SymbolTable};
use object::read::ReadCache;

use crate::elfread::sections64;
use crate::SymbolError;

/// One function symbol of an ELF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSymbol {
    /// Start address as the file has it (unrelocated).
    pub addr: u64,
    /// Size in bytes (0: the symbol table does not say).
    pub size: u64,
    /// Name, without a version suffix (`memcpy@GLIBC_2.14` is `memcpy`); not demangled.
    pub name: String,
}

/// The defined function symbols (`STT_FUNC`, `STT_GNU_IFUNC`) of the 64-bit ELF file `path`,
/// `.symtab`'s and `.dynsym`'s in the order of their sections. A file that is not 64-bit ELF,
/// or whose headers or tables lie outside it, is an error.
pub fn function_symbols(path: &Path) -> Result<Vec<FunctionSymbol>, SymbolError> {
    function_symbols_of(crate::open::open(path, crate::open::DEBUG)?, path)
}

/// [`function_symbols`] of a file already opened (through [`hood_format::untrusted`]); `path`
/// names it in errors.
pub fn function_symbols_of(file: File, path: &Path) -> Result<Vec<FunctionSymbol>, SymbolError> {
    let data = ReadCache::new(file);
    read(&data).map_err(|reason| SymbolError::NotElf {
        what: path.display().to_string(),
        reason,
    })
}

fn read(data: &ReadCache<File>) -> Result<Vec<FunctionSymbol>, &'static str> {
    let elf = sections64(data)?;
    let (endian, sections) = (elf.endian, elf.table);
    let mut out = Vec::new();
    for (index, section) in sections.enumerate() {
        if !matches!(section.sh_type(endian), SHT_SYMTAB | SHT_DYNSYM) {
            continue;
        }
        let table = SymbolTable::parse(endian, data, &sections, index, section)
            .map_err(|_| "a symbol table or its string table outside the file")?;
        for sym in table.symbols() {
            if !matches!(sym.st_type(), STT_FUNC | STT_GNU_IFUNC)
                || sym.st_shndx(endian) == SHN_UNDEF
                || sym.st_value(endian) == 0
            {
                continue;
            }
            let Ok(name) = sym.name(endian, table.strings()) else {
                continue;
            };
            let name = String::from_utf8_lossy(name);
            out.push(FunctionSymbol {
                addr: sym.st_value(endian),
                size: sym.st_size(endian),
                name: name.split('@').next().unwrap_or("").to_string(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::function_symbols;
    use crate::SymbolError;

    #[test]
    fn own_binary_has_main_and_garbage_is_rejected() {
        let exe = std::env::current_exe().unwrap();
        let f = function_symbols(&exe).unwrap();
        assert!(f.iter().any(|s| s.name == "main"));
        assert!(f.iter().all(|s| s.addr != 0 && !s.name.contains('@')));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("garbage");
        std::fs::write(&p, b"\x7fELF\x02\x01garbage").unwrap();
        assert!(matches!(
            function_symbols(&p),
            Err(SymbolError::NotElf { .. })
        ));
        let mut x = 7u64;
        for n in 0..300 {
            let mut g: Vec<u8> = b"\x7fELF\x02\x01".to_vec();
            g.extend((0..n).map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                (x >> 33) as u8
            }));
            std::fs::write(&p, &g).unwrap();
            let _ = function_symbols(&p);
        }
        assert!(matches!(
            function_symbols(&dir.path().join("missing")),
            Err(SymbolError::Io { .. })
        ));
    }
}
