//! Debug info kept decompressed in a private cache.
//!
//! Distributions compress the DWARF of their debug files (Debian's `-dbgsym` packages and
//! `libc6-dbg` with zlib, others with zstd): every report that reads file:line and inlined
//! frames from libc's debug file inflated ~15 MB of DWARF again, most of a report's time.
//! The first report that needs such a file writes a copy with its DWARF decompressed to the
//! cache (`$XDG_CACHE_HOME/hood/dwarf`, else `~/.cache/hood/dwarf`; `HOOD_DWARF_CACHE=DIR`
//! moves it, `HOOD_DWARF_CACHE=off` turns it off), named by build-id and size; later
//! reports read the copy in place. This is what perf's `~/.debug` build-id cache does for
//! its own reasons.
//!
//! The copy is the original file byte for byte, followed by the decompressed sections and a
//! new section header table that points at them (every other section, and the program
//! headers, keep their offsets). Sizes are never taken on trust: a copy larger than the
//! cache's budget is not written, and each section must decompress to exactly the size its
//! header claims, which [`claim_ok`] bounds by a ratio to its compressed size and an absolute
//! size; a file with a section over them is not decompressed at all (nor its DWARF read).
//! The cache is trimmed to its budget, least recently used first. A file that
//! cannot be unpacked (big-endian, 32-bit, an unknown compression, a cache refused) is read
//! as before.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use object::elf::{ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD, SHF_COMPRESSED, SHT_NOBITS};
use object::read::elf::{FileHeader as _, SectionHeader as _};
use object::read::ReadCache;
use object::Endianness;

use crate::cache::{cached_ok, touch, trim, CheckedDir};
use crate::elfread::build_id_at;
use crate::elfread::sections64;

/// Most bytes a compressed debug section may claim per compressed byte, beyond
/// [`RATIO_FLOOR`]. Real DWARF compresses 2-35 times (Debian's and Ubuntu's debug files; a
/// small `.debug_abbrev` up to 84 times, under the floor); a decompression bomb, 1,000
/// times (zlib) or more (zstd).
pub(crate) const MAX_RATIO: u64 = 64;
/// A section may claim this much whatever its ratio.
pub(crate) const RATIO_FLOOR: u64 = 1 << 20;
/// Most bytes any one debug section may decompress to.
pub(crate) const MAX_SECTION: u64 = 1 << 30;

/// Whether a section of `packed` compressed bytes may be decompressed to the `unpacked`
/// bytes its header claims: within [`MAX_SECTION`] and [`MAX_RATIO`] times its size (or
/// [`RATIO_FLOOR`]). Everything that decompresses DWARF (the DWARF cache, the start-line
/// reader, and blazesym, which is not handed a file failing this) is bounded by it.
pub(crate) fn claim_ok(packed: u64, unpacked: u64) -> bool {
    unpacked <= MAX_SECTION && unpacked <= packed.saturating_mul(MAX_RATIO).max(RATIO_FLOOR)
}

/// Why the DWARF of `path` must not be decompressed, when one of its compressed debug
/// sections claims more than [`claim_ok`] allows (a decompression bomb planted in a binary
/// or served by debuginfod).
pub(crate) fn oversized(path: &Path) -> Option<String> {
    let plan = Plan::read(path).ok().flatten()?;
    let s = plan
        .sections
        .iter()
        .find(|s| !claim_ok(s.size, s.unpacked))?;
    Some(format!(
        "its compressed section {} claims {} bytes from {} (hood decompresses at most {} times \
         a section's size, and at most {} MiB)",
        s.name,
        s.unpacked,
        s.size,
        MAX_RATIO,
        MAX_SECTION >> 20
    ))
}

/// Default budget of the cache: the copies of a few dozen libraries' debug files.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;
/// Size of `Elf64_Shdr`.
const SHDR_SIZE: u64 = 64;
/// Offset of `e_shoff` in the ELF64 header.
const E_SHOFF: u64 = 0x28;
/// Name prefix of copies being written.
const TEMP_PREFIX: &str = ".unpacking-";

/// Where unpacked copies are kept and how much room they may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DwarfCacheConfig {
    /// The cache directory (created `0700` if missing).
    pub dir: PathBuf,
    /// Most bytes the copies may take together; older ones are removed beyond it.
    pub max_bytes: u64,
    /// The user chose `dir` (`HOOD_DWARF_CACHE`): a directory that cannot be used is
    /// warned about. The default one is skipped quietly (a user without a writable home, or
    /// one whose `HOME` still names root's, gets no warning on every report).
    pub explicit: bool,
}

impl DwarfCacheConfig {
    /// The cache the environment asks for: `HOOD_DWARF_CACHE` unset or empty gives the
    /// default directory, `off` (or `0`) none, anything else is the directory.
    pub fn from_env() -> Option<DwarfCacheConfig> {
        let (dir, explicit) = crate::cache::dir_from_env("HOOD_DWARF_CACHE", "dwarf")?;
        Some(DwarfCacheConfig {
            dir,
            max_bytes: DEFAULT_MAX_BYTES,
            explicit,
        })
    }
}

/// Hands out, for each ELF file, the file to read its DWARF from.
pub(crate) struct Unpacker {
    cfg: DwarfCacheConfig,
    /// The cache directory's check, made once.
    dir: CheckedDir,
    /// File → the file to read its DWARF from (itself, or its unpacked copy).
    done: HashMap<PathBuf, PathBuf>,
}

impl Unpacker {
    pub(crate) fn new(cfg: DwarfCacheConfig) -> Unpacker {
        Unpacker {
            cfg,
            dir: CheckedDir::new("DWARF cache", "HOOD_DWARF_CACHE"),
            done: HashMap::new(),
        }
    }

    /// The file to read `file`'s DWARF from: an unpacked copy if `file` has compressed
    /// DWARF sections and the cache holds or takes one, else `file`. Problems worth saying
    /// (a refused cache) go to `warn` with a key, once.
    pub(crate) fn dwarf_path(
        &mut self,
        file: &Path,
        warn: &mut dyn FnMut(String, String),
    ) -> PathBuf {
        if let Some(p) = self.done.get(file) {
            return p.clone();
        }
        let chosen = self
            .find_or_make(file, warn)
            .unwrap_or_else(|| file.to_path_buf());
        self.done.insert(file.to_path_buf(), chosen.clone());
        chosen
    }

    fn find_or_make(
        &mut self,
        file: &Path,
        warn: &mut dyn FnMut(String, String),
    ) -> Option<PathBuf> {
        let plan = Plan::read(file).ok().flatten()?;
        let id = build_id_at(file, crate::open::DEBUG)
            .ok()
            .flatten()
            .filter(|id| id.as_bytes().len() >= 2)?;
        if plan.unpacked_size > self.cfg.max_bytes {
            return None;
        }
        let dir = match self.cache_dir() {
            Ok(d) => d,
            Err(why) => {
                if self.cfg.explicit {
                    warn("dwarf-cache".into(), why);
                }
                return None;
            }
        };
        let dst = dir.join(format!("{id}.{}.debug", plan.file_size));
        if cached_ok(&dst, &id) {
            touch(&dst);
            return Some(dst);
        }
        match plan.write(file, &dir, &dst) {
            Ok(()) if cached_ok(&dst, &id) => {
                trim(&dir, self.cfg.max_bytes, &dst, TEMP_PREFIX, ".debug");
                Some(dst)
            }
            Ok(()) => None,
            Err(e) => {
                warn(
                    format!("dwarf-cache {}", dir.display()),
                    format!(
                        "DWARF cache {}: could not keep a decompressed copy of {} ({e}); its \
                         debug info is decompressed on every report instead",
                        dir.display(),
                        file.display()
                    ),
                );
                None
            }
        }
    }

    fn cache_dir(&mut self) -> Result<PathBuf, String> {
        self.dir.get(&self.cfg.dir)
    }
}

/// One compressed section of a file: its index, where its bytes are and what they claim.
#[derive(Debug, Clone)]
struct Packed {
    index: usize,
    name: String,
    offset: u64,
    size: u64,
    kind: u32,
    unpacked: u64,
    align: u64,
}

/// What unpacking a file takes.
#[derive(Debug)]
struct Plan {
    file_size: u64,
    shoff: u64,
    shnum: usize,
    sections: Vec<Packed>,
    /// The copy's size, computed from the claims (checked as it is written).
    unpacked_size: u64,
}

impl Plan {
    /// The compressed DWARF sections of `path`; `None` if it has none this module can
    /// unpack (or is not a 64-bit little-endian ELF file).
    fn read(path: &Path) -> io::Result<Option<Plan>> {
        let f = crate::open::open(path, crate::open::DEBUG).map_err(io::Error::other)?;
        let file_size = f.metadata()?.len();
        let cache = ReadCache::new(&f);
        let Ok(elf) = sections64(&cache) else {
            return Ok(None);
        };
        let (header, endian, table) = (elf.header, elf.endian, elf.table);
        if endian != Endianness::Little || header.e_shentsize(endian) as u64 != SHDR_SIZE {
            return Ok(None);
        }
        let mut sections = Vec::new();
        let mut end = file_size;
        for (index, sh) in table.iter().enumerate() {
            let flags = sh.sh_flags(endian);
            if flags & u64::from(SHF_COMPRESSED) == 0 || sh.sh_type(endian) == SHT_NOBITS {
                continue;
            }
            let Ok(name) = table.section_name(endian, sh) else {
                continue;
            };
            if !name.starts_with(b".debug") {
                continue;
            }
            // The compression header, and the compressed bytes after it within the file.
            let Ok(Some((chdr, offset, size))) = sh.compression(endian, &cache) else {
                return Ok(None);
            };
            if offset.checked_add(size).is_none_or(|e| e > file_size) {
                return Ok(None);
            }
            let kind = chdr.ch_type.get(endian);
            let unpacked = chdr.ch_size.get(endian);
            if kind != ELFCOMPRESS_ZLIB && kind != ELFCOMPRESS_ZSTD {
                return Ok(None);
            }
            let align = chdr.ch_addralign.get(endian).clamp(1, 4096);
            end = align_up(end, align).saturating_add(unpacked);
            sections.push(Packed {
                index,
                name: String::from_utf8_lossy(name).into_owned(),
                offset,
                size,
                kind,
                unpacked,
                align,
            });
        }
        if sections.is_empty() {
            return Ok(None);
        }
        let shnum = table.len();
        let unpacked_size = align_up(end, 8).saturating_add(shnum as u64 * SHDR_SIZE);
        Ok(Some(Plan {
            file_size,
            shoff: header.e_shoff(endian),
            shnum,
            sections,
            unpacked_size,
        }))
    }

    /// Writes the unpacked copy of `src` to `dst` through a private temporary file in `dir`.
    fn write(&self, src: &Path, dir: &Path, dst: &Path) -> io::Result<()> {
        let mut from = crate::open::open(src, crate::open::DEBUG).map_err(io::Error::other)?;
        if from.metadata()?.len() != self.file_size {
            return Err(io::Error::other("the file changed while it was read"));
        }
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(dir)?;
        let out = tmp.as_file_mut();
        let copied = io::copy(&mut (&mut from).take(self.file_size), out)?;
        if copied != self.file_size {
            return Err(io::Error::other("the file was cut while it was copied"));
        }
        let mut pos = copied;
        let mut placed: HashMap<usize, (u64, u64, u64)> = HashMap::new();
        for s in &self.sections {
            let at = align_up(pos, s.align);
            write_zeros(out, at - pos)?;
            from.seek(SeekFrom::Start(s.offset))?;
            let packed = (&mut from).take(s.size);
            let n = match s.kind {
                ELFCOMPRESS_ZLIB => {
                    copy_exact(flate2::read::ZlibDecoder::new(packed), s.unpacked, out)?
                }
                _ => copy_exact(zstd::stream::read::Decoder::new(packed)?, s.unpacked, out)?,
            };
            if n != s.unpacked {
                return Err(io::Error::other(format!(
                    "section {} decompressed to {n} bytes, its header says {}",
                    s.index, s.unpacked
                )));
            }
            placed.insert(s.index, (at, s.unpacked, s.align));
            pos = at + n;
        }
        let shoff = align_up(pos, 8);
        write_zeros(out, shoff - pos)?;
        let mut shdr = [0u8; SHDR_SIZE as usize];
        for i in 0..self.shnum {
            from.read_exact_at(&mut shdr, self.shoff + i as u64 * SHDR_SIZE)?;
            if let Some(&(off, size, align)) = placed.get(&i) {
                let flags = u64::from_le_bytes(shdr[8..16].try_into().unwrap_or_default());
                shdr[8..16].copy_from_slice(&(flags & !u64::from(SHF_COMPRESSED)).to_le_bytes());
                shdr[24..32].copy_from_slice(&off.to_le_bytes());
                shdr[32..40].copy_from_slice(&size.to_le_bytes());
                shdr[48..56].copy_from_slice(&align.to_le_bytes());
            }
            out.write_all(&shdr)?;
        }
        out.write_all_at(&shoff.to_le_bytes(), E_SHOFF)?;
        out.sync_data()?;
        tmp.persist(dst).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Copies at most `limit` bytes of `r` to `w`, and one more if there is one (so that a
/// section longer than its claim is noticed); the count copied.
fn copy_exact(r: impl Read, limit: u64, w: &mut File) -> io::Result<u64> {
    io::copy(&mut r.take(limit.saturating_add(1)), w)
}

fn write_zeros(w: &mut File, n: u64) -> io::Result<()> {
    io::copy(&mut io::repeat(0).take(n), w).map(|_| ())
}

fn align_up(v: u64, align: u64) -> u64 {
    v.div_ceil(align).saturating_mul(align)
}
