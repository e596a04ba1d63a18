//! Kept answers: what the symbol tables and DWARF of a binary said about each file offset,
//! kept per build-id in a private cache so that later reports of the same binary answer
//! those offsets without opening its symbol tables or DWARF at all (perf keeps `~/.debug`
//! for the same reason).
//!
//! One file per binary and way of reading it (`$XDG_CACHE_HOME/hood/symbols`, else
//! `~/.cache/hood/symbols`; `HOOD_SYMBOL_CACHE=DIR` moves it, `HOOD_SYMBOL_CACHE=off` turns
//! it off), named by the binary's build-id, size and owner (a binary without a build-id, or
//! one that users other than its owner may write: its file's device, inode and times), the
//! size and owner of the separate debug file it was read with (0: none) and the options that
//! change answers (inlined functions on or off). A build-id is a claim the file makes, not a
//! proof: another user's copy of a binary with its build-id and size but renamed symbols
//! gets answers of its own, never the real binary's. A binary rebuilt
//! with another build-id, a stripped copy of it, or a debug file installed or removed since,
//! all get a file of their own. The answers are the raw ones:
//! names before demangling and shortening, so `--full-names` (or no demangling at all)
//! still derives late; beside them, the demangled form of each name per naming mode (a
//! memo only: demangling a large C++ library's names again is a good part of a report).
//! Offsets not yet kept are symbolized from the files and added.
//!
//! The directory is checked like the DWARF cache's (private, of the user hood runs as, no
//! symlinks), files are written under a temporary name and renamed into place, and the
//! cache is trimmed to its budget least recently used first. A kept file is untrusted
//! input: it starts with a magic and version, repeats its own key, ends with a CRC-32 of
//! everything before it, every count and length is checked against the bytes that are
//! really there, and nothing is allocated to a size the file claims. A file that fails any
//! check is ignored (with one warning) and written again.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::cache::{dir_from_env, my_uid, nofollow, touch, trim, CheckedDir};
use crate::{BuildId, InlinedFrame, Resolution, SourceLine, Sym, Unresolved};

/// Default budget of the cache: far more than the answers of every binary a machine runs.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;
/// A kept file larger than this is not read (nor written).
const MAX_FILE: u64 = 64 << 20;
/// Name suffix of kept files.
const SUFFIX: &str = ".answers";
/// Name prefix of files being written.
const TEMP_PREFIX: &str = ".writing-";
/// First bytes of a kept file.
const MAGIC: &[u8; 8] = b"hoodsym\0";
/// Version of the layout below; a file of another version is written again.
const VERSION: u32 = 2;
/// "None" in a string index or a size.
const NONE32: u32 = u32::MAX;
const NONE64: u64 = u64::MAX;

/// Where kept answers live and how much room they may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolCacheConfig {
    /// The cache directory (created `0700` if missing).
    pub dir: PathBuf,
    /// Most bytes the kept files may take together; older ones are removed beyond it.
    pub max_bytes: u64,
    /// The user chose `dir` (`HOOD_SYMBOL_CACHE`): a directory that cannot be used is
    /// warned about; the default one is skipped quietly.
    pub explicit: bool,
}

impl SymbolCacheConfig {
    /// The cache the environment asks for: `HOOD_SYMBOL_CACHE` unset or empty gives the
    /// default directory, `off` (or `0`) none, anything else is the directory.
    pub fn from_env() -> Option<SymbolCacheConfig> {
        let (dir, explicit) = dir_from_env("HOOD_SYMBOL_CACHE", "symbols")?;
        Some(SymbolCacheConfig {
            dir,
            max_bytes: DEFAULT_MAX_BYTES,
            explicit,
        })
    }
}

/// What the answers of the binary `real` (with build-id `build_id`, read with a debug file
/// of `debug_size` bytes, 0 for none) depend on: the file name of its kept answers. A binary
/// without a build-id (the Rust toolchain's, some Go programs) is known by its file's
/// identity instead: device, inode, size, and modification and change times to the
/// nanosecond (rewriting or replacing the file changes the change time, which no user can
/// set back). `None` if the file cannot be looked at.
pub(crate) fn key(
    real: &Path,
    build_id: Option<&BuildId>,
    debug: &str,
    inlined: bool,
) -> Option<String> {
    let m = fs::metadata(real).ok().filter(|m| m.is_file())?;
    let who = match build_id.filter(|id| id.as_bytes().len() >= 2) {
        Some(id) => format!("{id}.{}.{}", m.len(), owner(&m)),
        None => format!(
            "noid-{:x}-{}-{}-{}.{}-{}.{}",
            m.dev(),
            m.ino(),
            m.len(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec()
        ),
    };
    Some(format!(
        "{who}.{debug}.{}{SUFFIX}",
        if inlined { "i" } else { "n" }
    ))
}

/// Who could have written a file, for a key: its owner, and for a file others may write,
/// the file itself (device, inode, change time). A build-id and a size are no proof of
/// content: another user's copy of a binary with its build-id and size but renamed
/// symbols must not answer for the real one (nor a file anyone may rewrite for others).
fn owner(m: &fs::Metadata) -> String {
    if m.mode() & 0o022 != 0 {
        format!(
            "u{}-w{:x}-{}-{}.{}",
            m.uid(),
            m.dev(),
            m.ino(),
            m.ctime(),
            m.ctime_nsec()
        )
    } else {
        format!("u{}", m.uid())
    }
}

/// The separate debug file's part of a key: its size and who could have written it ("0":
/// none).
pub(crate) fn debug_tag(path: &Path) -> Option<String> {
    let m = fs::metadata(path).ok().filter(|m| m.is_file())?;
    Some(format!("{}.{}", m.len(), owner(&m)))
}

/// Demangled forms of raw names: (whole signatures, raw name) → demangled name.
pub(crate) type Demangled = HashMap<(bool, String), String>;

/// What a kept file holds: the answers by offset, and demangled names.
type Kept = (HashMap<u64, Resolution>, Demangled);

/// The answers of one binary: offset → raw answer (a symbol, or no symbol there), and the
/// demangled forms of their names met so far (demangling a large C++ library's names again
/// on every report would cost more than reading the answers).
#[derive(Default)]
pub(crate) struct Table {
    pub(crate) map: HashMap<u64, Resolution>,
    pub(crate) names: Demangled,
    /// The names were handed to this report's demangler.
    pub(crate) seeded: bool,
    /// Answers added since the table was read.
    dirty: bool,
}

/// The kept answers of every binary met so far in this report.
pub(crate) struct Answers {
    cfg: SymbolCacheConfig,
    /// The cache directory's check, made once.
    dir: CheckedDir,
    tables: HashMap<String, Table>,
}

impl Answers {
    pub(crate) fn new(cfg: SymbolCacheConfig) -> Answers {
        Answers {
            cfg,
            dir: CheckedDir::new("symbol cache", "HOOD_SYMBOL_CACHE"),
            tables: HashMap::new(),
        }
    }

    fn dir(&mut self) -> Result<PathBuf, String> {
        self.dir.get(&self.cfg.dir)
    }

    /// The table kept under `key`, read on first use (empty if there is none, or if the
    /// kept file is refused: then `warn` says why, once per file).
    pub(crate) fn table(
        &mut self,
        key: &str,
        warn: &mut dyn FnMut(String, String),
    ) -> Option<&mut Table> {
        if !self.tables.contains_key(key) {
            let dir = match self.dir() {
                Ok(d) => d,
                Err(why) => {
                    if self.cfg.explicit {
                        warn("symbol-cache".into(), why);
                    }
                    return None;
                }
            };
            let path = dir.join(key);
            let table = match read_table(&path, key) {
                Ok(Some((map, names))) => {
                    touch(&path);
                    Table {
                        map,
                        names,
                        ..Table::default()
                    }
                }
                Ok(None) => Table::default(),
                Err(why) => {
                    warn(
                        format!("symbol-cache {}", path.display()),
                        format!(
                            "symbol cache {}: {why}; ignored, and written again",
                            path.display()
                        ),
                    );
                    Table::default()
                }
            };
            self.tables.insert(key.to_string(), table);
        }
        self.tables.get_mut(key)
    }

    /// Adds answers to the table under `key` (which [`table`](Self::table) has read).
    /// Only symbols and "no symbol here" are kept: other failures may pass.
    pub(crate) fn add(&mut self, key: &str, offsets: &[u64], answers: &[Resolution]) {
        let Some(t) = self.tables.get_mut(key) else {
            return;
        };
        for (&o, r) in offsets.iter().zip(answers) {
            if matches!(r, Ok(_) | Err(Unresolved::NoSymbol)) {
                t.map.insert(o, r.clone());
                t.dirty = true;
            }
        }
    }

    /// Keeps the demangled forms of the names of the answers at `offsets` (added with
    /// [`add`](Self::add)), given as `demangled` (the same answers, names demangled with
    /// whole signatures or not, `full`).
    pub(crate) fn add_names<'a>(
        &mut self,
        key: &str,
        full: bool,
        offsets: &[u64],
        demangled: impl Iterator<Item = &'a Resolution>,
    ) {
        let Some(t) = self.tables.get_mut(key) else {
            return;
        };
        for (o, d) in offsets.iter().zip(demangled) {
            let (Some(Ok(raw)), Ok(d)) = (t.map.get(o), d) else {
                continue;
            };
            let pairs = std::iter::once((&raw.name, &d.name)).chain(
                raw.inlined
                    .iter()
                    .zip(&d.inlined)
                    .map(|(r, d)| (&r.name, &d.name)),
            );
            for (r, d) in pairs {
                if r != d && !t.names.contains_key(&(full, r.clone())) {
                    t.names.insert((full, r.clone()), d.clone());
                    t.dirty = true;
                }
            }
        }
    }

    /// Writes the table under `key` if answers were added; problems go to `warn`.
    pub(crate) fn save(&mut self, key: &str, warn: &mut dyn FnMut(String, String)) {
        let Ok(dir) = self.dir() else {
            return;
        };
        let Some(t) = self.tables.get_mut(key) else {
            return;
        };
        if !t.dirty {
            return;
        }
        t.dirty = false;
        let bytes = encode(key, &t.map, &t.names);
        if bytes.len() as u64 > MAX_FILE {
            return;
        }
        let path = dir.join(key);
        let written = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&dir)
            .and_then(|mut tmp| {
                tmp.write_all(&bytes)?;
                tmp.persist(&path).map_err(|e| e.error)?;
                Ok(())
            });
        match written {
            Ok(()) => trim(&dir, self.cfg.max_bytes, &path, TEMP_PREFIX, SUFFIX),
            Err(e) => warn(
                format!("symbol-cache-write {}", dir.display()),
                format!(
                    "symbol cache {}: cannot keep answers ({e}); reports read debug info \
                     every time instead",
                    dir.display()
                ),
            ),
        }
    }
}

/// Reads the kept table at `path`: `Ok(None)` if there is none, `Err` (in words) if the file
/// is there but not one to trust.
fn read_table(path: &Path, key: &str) -> Result<Option<Kept>, String> {
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(nofollow())
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open it ({e}; a symlink?)")),
    };
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.uid() != my_uid() {
        return Err("belongs to another user".into());
    }
    if meta.len() > MAX_FILE {
        return Err(format!(
            "{} bytes, more than a kept file may have",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    decode(&bytes, key).map(Some)
}

/// Strings are kept once each; an answer names them by index.
#[derive(Default)]
struct Strings<'a> {
    index: HashMap<&'a str, u32>,
    list: Vec<&'a str>,
}

impl<'a> Strings<'a> {
    fn id(&mut self, s: &'a str) -> u32 {
        let next = self.list.len() as u32;
        *self.index.entry(s).or_insert_with(|| {
            self.list.push(s);
            next
        })
    }
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The layout, all little-endian: magic, version, key (length, bytes), string count, strings
/// (length, bytes), answer count, answers, CRC-32 of all before it. An answer: offset, tag
/// (0 no symbol, 1 a symbol); a symbol: name, offset in it, size (`u64::MAX`: unknown),
/// file (`u32::MAX`: none), line, start line (0: unknown), inlined count, then per inlined
/// frame name, file, line and start line (0: unknown). Then the count of demangled names, and per name: the raw name,
/// 1 if demangled with whole signatures (else 0), the demangled name (length, bytes).
fn encode(key: &str, map: &HashMap<u64, Resolution>, names: &Demangled) -> Vec<u8> {
    fn code(c: &Option<SourceLine>) -> Option<(&str, u32)> {
        c.as_ref().map(|c| (c.file.as_str(), c.line))
    }
    let mut offsets: Vec<u64> = map.keys().copied().collect();
    offsets.sort_unstable();
    let mut strings = Strings::default();
    let mut body = Vec::new();
    for o in &offsets {
        put64(&mut body, *o);
        let Some(Ok(sym)) = map.get(o) else {
            body.push(0);
            continue;
        };
        body.push(1);
        put32(&mut body, strings.id(&sym.name));
        put64(&mut body, sym.offset);
        put64(&mut body, sym.size.unwrap_or(NONE64));
        let (file, line) = code(&sym.code).map_or((NONE32, 0), |(f, l)| (strings.id(f), l));
        put32(&mut body, file);
        put32(&mut body, line);
        put32(&mut body, sym.start_line.unwrap_or(0));
        put32(&mut body, sym.inlined.len() as u32);
        for f in &sym.inlined {
            put32(&mut body, strings.id(&f.name));
            let (file, line) = code(&f.code).map_or((NONE32, 0), |(f, l)| (strings.id(f), l));
            put32(&mut body, file);
            put32(&mut body, line);
            put32(&mut body, f.start_line.unwrap_or(0));
        }
    }
    let mut sorted: Vec<(&(bool, String), &String)> = names.iter().collect();
    sorted.sort();
    put32(&mut body, sorted.len() as u32);
    for ((full, raw), d) in sorted {
        put32(&mut body, strings.id(raw));
        body.push(u8::from(*full));
        put32(&mut body, d.len() as u32);
        body.extend_from_slice(d.as_bytes());
    }
    let mut out = Vec::with_capacity(body.len() + 64);
    out.extend_from_slice(MAGIC);
    put32(&mut out, VERSION);
    put32(&mut out, key.len() as u32);
    out.extend_from_slice(key.as_bytes());
    put32(&mut out, strings.list.len() as u32);
    for s in &strings.list {
        put32(&mut out, s.len() as u32);
        out.extend_from_slice(s.as_bytes());
    }
    put32(&mut out, offsets.len() as u32);
    out.extend_from_slice(&body);
    let crc = crc32fast::hash(&out);
    put32(&mut out, crc);
    out
}

/// Reads the bytes of a kept file, every claim checked against what is there.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or("truncated")?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let lo = u64::from(self.u32()?);
        let hi = u64::from(self.u32()?);
        Ok(lo | hi << 32)
    }

    fn str(&mut self) -> Result<&'a str, String> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| "a string is not UTF-8".to_string())
    }
}

fn decode(bytes: &[u8], key: &str) -> Result<Kept, String> {
    let Some(body_len) = bytes.len().checked_sub(4) else {
        return Err("truncated".into());
    };
    let (body, crc) = bytes.split_at(body_len);
    if body.get(..MAGIC.len()) != Some(MAGIC.as_slice()) {
        return Err("not a hood symbol cache file".into());
    }
    if crc32fast::hash(body) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err("its checksum does not match (cut short or damaged)".into());
    }
    let mut r = Reader {
        bytes: body,
        at: MAGIC.len(),
    };
    let version = r.u32()?;
    if version != VERSION {
        return Err(format!(
            "layout version {version}, this hood writes {VERSION}"
        ));
    }
    if r.str()? != key {
        return Err("it holds the answers of another binary".into());
    }
    // Each string takes at least its 4-byte length: a count beyond that is refused before
    // anything is allocated for it.
    let n_strings = r.u32()? as usize;
    if n_strings > (body.len() - r.at) / 4 {
        return Err("more strings than the file has room for".into());
    }
    let mut strings = Vec::with_capacity(n_strings);
    for _ in 0..n_strings {
        strings.push(r.str()?);
    }
    let string = |i: u32| -> Result<String, String> {
        strings
            .get(i as usize)
            .map(|s| s.to_string())
            .ok_or_else(|| "a string index out of range".to_string())
    };
    let code = |file: u32, line: u32| -> Result<Option<SourceLine>, String> {
        Ok(match file {
            NONE32 => None,
            f => Some(SourceLine {
                file: string(f)?,
                line,
            }),
        })
    };
    let n = r.u32()? as usize;
    // Each answer takes at least 9 bytes.
    if n > (body.len() - r.at) / 9 {
        return Err("more answers than the file has room for".into());
    }
    let mut map = HashMap::with_capacity(n);
    for _ in 0..n {
        let offset = r.u64()?;
        let answer = match r.u8()? {
            0 => Err(Unresolved::NoSymbol),
            1 => {
                let name = string(r.u32()?)?;
                let sym_offset = r.u64()?;
                let size = Some(r.u64()?).filter(|&s| s != NONE64);
                let (file, line) = (r.u32()?, r.u32()?);
                let start_line = Some(r.u32()?).filter(|&l| l != 0);
                let n_inlined = r.u32()?;
                let mut inlined = Vec::new();
                for _ in 0..n_inlined {
                    let name = string(r.u32()?)?;
                    let (file, line) = (r.u32()?, r.u32()?);
                    let start_line = Some(r.u32()?).filter(|&l| l != 0);
                    inlined.push(InlinedFrame {
                        name,
                        code: code(file, line)?,
                        start_line,
                    });
                }
                Ok(Sym {
                    name,
                    offset: sym_offset,
                    size,
                    code: code(file, line)?,
                    inlined,
                    start_line,
                })
            }
            t => return Err(format!("an answer of unknown kind {t}")),
        };
        map.insert(offset, answer);
    }
    // Each demangled name takes at least 9 bytes.
    let n = r.u32()? as usize;
    if n > (body.len() - r.at) / 9 {
        return Err("more demangled names than the file has room for".into());
    }
    let mut names = HashMap::with_capacity(n);
    for _ in 0..n {
        let raw = string(r.u32()?)?;
        let full = match r.u8()? {
            0 => false,
            1 => true,
            f => return Err(format!("a demangled name of unknown kind {f}")),
        };
        names.insert((full, raw), r.str()?.to_string());
    }
    if r.at != body.len() {
        return Err("bytes after the last demangled name".into());
    }
    Ok((map, names))
}

/// The size of `path` if it is a regular file (a part of keys).
#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> HashMap<u64, Resolution> {
        let mut m = HashMap::new();
        m.insert(0x10, Err(Unresolved::NoSymbol));
        m.insert(
            0x1234,
            Ok(Sym {
                name: "_ZN3foo3barE".into(),
                offset: 4,
                size: Some(40),
                code: Some(SourceLine {
                    file: "/src/a.rs".into(),
                    line: 7,
                }),
                inlined: vec![InlinedFrame {
                    name: "inner".into(),
                    code: Some(SourceLine {
                        file: "/src/a.rs".into(),
                        line: 3,
                    }),
                    start_line: Some(1),
                }],
                start_line: Some(2),
            }),
        );
        m.insert(
            0x2000,
            Ok(Sym {
                name: "plain".into(),
                ..Sym::default()
            }),
        );
        m
    }

    #[test]
    fn answers_read_back_as_written() {
        let m = sample();
        let mut names = Demangled::new();
        names.insert((false, "_ZN3foo3barE".into()), "foo::bar".into());
        let bytes = encode("k", &m, &names);
        assert_eq!(decode(&bytes, "k").unwrap(), (m, names));
        assert!(decode(&bytes, "other")
            .unwrap_err()
            .contains("another binary"));
    }

    #[test]
    fn every_cut_and_every_flipped_byte_is_refused_without_panic() {
        let mut names = Demangled::new();
        names.insert((true, "plain".into()), "x".into());
        let bytes = encode("k", &sample(), &names);
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], "k").is_err(), "cut at {n}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(decode(&b, "k").is_err(), "flip at {i}");
        }
    }

    #[test]
    fn huge_counts_with_a_right_checksum_are_refused() {
        // A file whose checksum is right but whose counts claim more than it holds.
        let mut body = Vec::new();
        body.extend_from_slice(MAGIC);
        put32(&mut body, VERSION);
        put32(&mut body, 1);
        body.push(b'k');
        put32(&mut body, u32::MAX - 1);
        let crc = crc32fast::hash(&body);
        put32(&mut body, crc);
        assert!(decode(&body, "k").unwrap_err().contains("room"));
        let mut body = Vec::new();
        body.extend_from_slice(MAGIC);
        put32(&mut body, VERSION);
        put32(&mut body, 1);
        body.push(b'k');
        put32(&mut body, 0);
        put32(&mut body, 1);
        put64(&mut body, 0x10);
        body.push(1);
        put32(&mut body, 0);
        let crc = crc32fast::hash(&body);
        put32(&mut body, crc);
        assert!(decode(&body, "k").is_err());
    }
}
