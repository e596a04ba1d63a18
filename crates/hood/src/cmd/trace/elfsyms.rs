//! Function symbols of an ELF64 little-endian file (.symtab and .dynsym), for resolving
//! `--filter/--exclude` globs to address ranges before the traced program starts. Every
//! offset read from the file is bounds-checked; a malformed file yields an error, never a panic.

use std::path::Path;

/// One function symbol: unrelocated start address, size (0 = unknown), name.
pub struct FuncSym {
    pub addr: u64,
    pub size: u64,
    pub name: String,
}

fn get<const N: usize>(b: &[u8], o: u64) -> Option<[u8; N]> {
    let o = usize::try_from(o).ok()?;
    b.get(o..o.checked_add(N)?)?.try_into().ok()
}
fn u16_at(b: &[u8], o: u64) -> Option<u16> {
    get::<2>(b, o).map(u16::from_le_bytes)
}
fn u32_at(b: &[u8], o: u64) -> Option<u32> {
    get::<4>(b, o).map(u32::from_le_bytes)
}
fn u64_at(b: &[u8], o: u64) -> Option<u64> {
    get::<8>(b, o).map(u64::from_le_bytes)
}

/// Read the function symbols of `path`.
pub fn functions(path: &Path) -> Result<Vec<FuncSym>, String> {
    let b = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&b).ok_or_else(|| {
        format!(
            "{} is not a readable ELF64 little-endian file",
            path.display()
        )
    })
}

fn parse(b: &[u8]) -> Option<Vec<FuncSym>> {
    if b.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let shoff = u64_at(b, 0x28)?;
    let shentsize = u16_at(b, 0x3A)? as u64;
    let shnum = u16_at(b, 0x3C)? as u64;
    if shentsize < 64 {
        return None;
    }
    let sh = |i: u64| shoff.checked_add(i.checked_mul(shentsize)?);
    let mut out = Vec::new();
    for i in 0..shnum {
        let s = sh(i)?;
        let ty = u32_at(b, s + 4)?;
        if ty != 2 && ty != 11 {
            continue;
        }
        let (off, size, link) = (
            u64_at(b, s + 0x18)?,
            u64_at(b, s + 0x20)?,
            u32_at(b, s + 0x28)?,
        );
        let st = sh(link as u64)?;
        let (str_off, str_size) = (u64_at(b, st + 0x18)?, u64_at(b, st + 0x20)?);
        let strtab = b.get(
            usize::try_from(str_off).ok()?..usize::try_from(str_off.checked_add(str_size)?).ok()?,
        )?;
        for k in 0..size / 24 {
            let e = off.checked_add(k * 24)?;
            let name_off = u32_at(b, e)? as usize;
            let info = *b.get(usize::try_from(e + 4).ok()?)?;
            let shndx = u16_at(b, e + 6)?;
            let value = u64_at(b, e + 8)?;
            let sz = u64_at(b, e + 16)?;
            if !matches!(info & 0xf, 2 | 10) || shndx == 0 || value == 0 {
                continue;
            }
            let Some(rest) = strtab.get(name_off..) else {
                continue;
            };
            let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
            let name = String::from_utf8_lossy(&rest[..end]);
            let name = name.split('@').next().unwrap_or("").to_string();
            out.push(FuncSym {
                addr: value,
                size: sz,
                name,
            });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn own_binary_has_main_and_garbage_is_rejected() {
        let exe = std::env::current_exe().unwrap();
        let f = super::functions(&exe).unwrap();
        assert!(f.iter().any(|s| s.name == "main"));
        assert!(super::parse(b"\x7fELF\x02\x01garbage").is_none());
        let mut x = 7u64;
        for n in 0..300 {
            let mut g: Vec<u8> = b"\x7fELF\x02\x01".to_vec();
            g.extend((0..n).map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                (x >> 33) as u8
            }));
            let _ = super::parse(&g);
        }
    }
}
