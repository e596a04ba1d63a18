//! One ELF section's bytes, decompressed where the file compresses it.
//!
//! Linkers and Go's compiler compress debug sections: `SHF_COMPRESSED` with a zlib or zstd
//! stream after an `Elf64_Chdr` (`--compress-debug-sections`, Go's `.debug_frame`), or the
//! older GNU form, a `.zdebug_NAME` section that starts with `ZLIB` and the big-endian size.
//! Readers that want the bytes (the unwinder's `.debug_frame`, `.eh_frame`) get them here
//! either way. The file is untrusted: the size a header claims only bounds the output (never
//! sizes an allocation), the stream must produce exactly that many bytes, and nothing bigger
//! than the caller's limit is produced.

use std::borrow::Cow;
use std::io::Read;

use object::{CompressionFormat, Object as _, ObjectSection as _, ReadRef};

/// The bytes of section `name` of `file` and the address the file gives it: decompressed
/// when compressed, looked up also as `.zdebug_*` for a `.debug_*` name. `None` when the
/// section is absent, empty, has no bytes in the file, uses an unknown compression, would be
/// bigger than `max` bytes, or does not decompress to exactly the size its header claims.
pub fn section_data<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    name: &str,
    max: u64,
) -> Option<(u64, Cow<'d, [u8]>)> {
    let section = file.section_by_name(name).or_else(|| {
        let rest = name.strip_prefix(".debug_")?;
        file.section_by_name(&format!(".zdebug_{rest}"))
    })?;
    let packed = section.compressed_data().ok()?;
    // A decompression bomb is refused by the one DWARF check, whatever `max` allows.
    if packed.format != CompressionFormat::None
        && !crate::unpacked::claim_ok(packed.data.len() as u64, packed.uncompressed_size)
    {
        return None;
    }
    let data = match packed.format {
        CompressionFormat::None => {
            if packed.data.len() as u64 > max {
                return None;
            }
            Cow::Borrowed(packed.data)
        }
        CompressionFormat::Zlib => Cow::Owned(inflate(
            flate2::read::ZlibDecoder::new(packed.data),
            packed.uncompressed_size,
            max,
        )?),
        CompressionFormat::Zstandard => Cow::Owned(inflate(
            zstd::stream::read::Decoder::new(packed.data).ok()?,
            packed.uncompressed_size,
            max,
        )?),
        _ => return None,
    };
    if data.is_empty() {
        return None;
    }
    Some((section.address(), data))
}

/// Reads `r` to its end if it holds exactly `claimed` bytes and `claimed <= max`. The
/// buffer grows with what the stream really produces, one byte past the claim at most.
fn inflate(r: impl Read, claimed: u64, max: u64) -> Option<Vec<u8>> {
    if claimed > max {
        return None;
    }
    let mut out = Vec::new();
    r.take(claimed.saturating_add(1))
        .read_to_end(&mut out)
        .ok()?;
    (out.len() as u64 == claimed).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn inflate_takes_exactly_the_claimed_size() {
        let data = vec![7u8; 5000];
        let z = zlib(&data);
        let d = || flate2::read::ZlibDecoder::new(&z[..]);
        assert!(inflate(d(), 5000, 1 << 20) == Some(data));
        // A claim shorter or longer than the stream, or above the limit, is refused.
        assert_eq!(inflate(d(), 4999, 1 << 20), None);
        assert_eq!(inflate(d(), 5001, 1 << 20), None);
        assert_eq!(inflate(d(), 5000, 4096), None);
        // Garbage is not a stream.
        let bad = flate2::read::ZlibDecoder::new(&b"not zlib at all"[..]);
        assert_eq!(inflate(bad, 15, 1 << 20), None);
    }
}
