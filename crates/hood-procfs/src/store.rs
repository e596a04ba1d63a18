//! The monitor store: `hood top --record DIR` appends one raw [`Snapshot`] per interval, and
//! `hood top --replay DIR`, `hood ps --at`, `hood info --at` derive views from it later.
//!
//! Layout (docs/monitor.md, "Record and replay"): DIR holds segment files
//! `top-<UNIX-MS>.seg`, named by the time their recorder opened them. A segment is hood's
//! container (docs/format.md): the 32-byte file header of kind 4 and CRC-checked chunks, one
//! per interval, each payload the snapshot's wall-clock time (i64 ms, LE) and a zstd frame of
//! its JSON. A `KEY` chunk is compressed alone; the next `DELTA` chunks are compressed with the
//! last key's JSON as the zstd dictionary (most of a snapshot repeats the one before), and a
//! new key starts every [`KEY_EVERY`] intervals and every segment, so reading any interval
//! reads at most two chunks. The time index is the chunk headers themselves: a segment's
//! headers and times are read with one positioned read per chunk, never its payloads.
//!
//! The per-process index: before each key (and when a segment ends or the recorder stops
//! cleanly) a `SERIES` chunk holds the intervals since the last one process by process
//! (`store/series.rs`), so one process's history reads one small frame per key period rather than
//! every snapshot whole ([`Store::window_pids`]). It duplicates what the intervals hold, so a
//! store without it (written before it existed, or the last minutes of a killed recorder)
//! reads the same, only slower.
//!
//! Crash safety: a chunk is one write, followed by `fdatasync`; a recorder that is killed or
//! loses power leaves at most a cut last chunk, which readers stop at with a warning naming
//! the file and offset. A recorder never appends to an old segment. A damaged chunk (checksum,
//! length, a payload that does not decompress to a snapshot) is reported the same way, and
//! the intervals around it still read.
//!
//! Bounds: `--keep` removes segments last written longer ago than the age, `--max-size`
//! removes the oldest segments while the store is larger (a segment is cut at an eighth of the
//! size, so the store stays within it), checked when a segment starts and every key interval.
//!
//! Files: DIR is created mode 0700 and refused (with the reason and a fix) when it is a
//! symbolic link, not a directory, another user's or open to group or others; segments are
//! created exclusively (`O_EXCL|O_NOFOLLOW`, 0600) through the held directory descriptor, and a
//! lock file held with `flock` keeps a second recorder out. Readers open segments without
//! following links, read only what a chunk header claims after checking it against the file's
//! length and [`MAX_STORED`], and decompress no more than [`MAX_SNAPSHOT`] bytes.

mod series;

use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use hood_format::tags::monitor::{DELTA, KEY, SERIES};
use hood_format::{ChunkHeader, FileHeader, FileKind, CHUNK_HEADER_LEN, FILE_HEADER_LEN};
use hood_monitor::{derive, Recorded, ScanOptions, Seek, Snapshot, SystemView};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};

use crate::{ProcError, ProcReader};

/// A new key snapshot every this many intervals (5 minutes at the default 5 s).
pub const KEY_EVERY: u32 = 60;
/// A segment holds at most this much time (then the next begins).
pub const SEGMENT_SECS: i64 = 3600;
/// The largest stored payload a reader accepts (a 600-process snapshot is ~30 KB stored).
pub const MAX_STORED: u64 = 64 << 20;
/// The largest snapshot a reader decompresses (~200 KB per 600 processes as JSON).
pub const MAX_SNAPSHOT: u64 = 256 << 20;
/// zstd level of the recorder (level 3 is zstd's default; higher costs CPU every interval).
const LEVEL: i32 = 3;
/// zstd level of the per-process index: written once per key period, so a higher level costs
/// little CPU (tens of ms per 5 minutes) and makes it about a fifth smaller.
const INDEX_LEVEL: i32 = 9;
const FLAG_ZSTD: u32 = 1;
/// Chunk flag: compressed against the segment's last key (see [`DELTA`]).
const FLAG_DICT: u32 = 2;
const PREFIX: &str = "top-";
const SUFFIX: &str = ".seg";
const LOCK: &str = ".lock";

/// What a monitor store records: everything a view can show, without threads.
pub fn record_scan() -> ScanOptions {
    ScanOptions {
        threads: false,
        ..ScanOptions::all()
    }
}

fn err(path: &Path, what: impl Into<String>) -> ProcError {
    ProcError::Store {
        path: path.to_owned(),
        what: what.into(),
    }
}

fn io_err(path: &Path, doing: &str, e: impl std::fmt::Display) -> ProcError {
    err(path, format!("{doing}: {e}"))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The time a segment's name says it was started, in ms (`top-<ms>.seg`).
fn segment_start(name: &str) -> Option<i64> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// How large and how old a store may grow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreLimits {
    /// Remove segments whose every interval is older than this many seconds.
    pub keep_s: Option<u64>,
    /// Remove the oldest segments while the store is larger than this many bytes.
    pub max_bytes: Option<u64>,
}

/// Open (creating it 0700 when `create`) the store directory as a descriptor, refusing a link,
/// a non-directory, another user's directory and, to record, one open to group or others.
fn open_dir(dir: &Path, create: bool) -> Result<OwnedFd, ProcError> {
    use std::os::unix::fs::DirBuilderExt;
    if create {
        match std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
        {
            Ok(()) => {}
            // A link or a file in the way: the checks below name it.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err(dir, "cannot create the store directory", e)),
        }
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => err(
            dir,
            "no such directory (record one with `hood top --record DIR`)",
        ),
        _ => io_err(dir, "cannot read the store directory", e),
    })?;
    if meta.file_type().is_symlink() {
        return Err(err(
            dir,
            "is a symbolic link; a store directory must be a real directory \
             (give the path it points to, if that is yours)",
        ));
    }
    if !meta.is_dir() {
        return Err(err(
            dir,
            "is not a directory; give a monitor store directory",
        ));
    }
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(dir, "cannot open the store directory", e))?;
    if create {
        let st = rustix::fs::fstat(&fd).map_err(|e| io_err(dir, "cannot stat", e))?;
        let me = rustix::process::geteuid().as_raw();
        if st.st_uid != me {
            return Err(err(
                dir,
                format!(
                    "belongs to uid {}, not to you (uid {me}); record into a directory of \
                     your own (hood creates it mode 0700)",
                    st.st_uid
                ),
            ));
        }
        let mode = st.st_mode & 0o777;
        if mode & 0o077 != 0 {
            return Err(err(
                dir,
                format!(
                    "is open to group or others (mode {mode:04o}) and a store holds every \
                     process's command line; `chmod 700 {}`",
                    dir.display()
                ),
            ));
        }
    }
    Ok(fd)
}

/// Names of the segments in `dirfd`, oldest first, with their start times.
fn list_segments(dirfd: &OwnedFd, dir: &Path) -> Result<(Vec<(i64, String)>, usize), ProcError> {
    let mut out = Vec::new();
    let mut others = 0usize;
    let d = rustix::fs::Dir::read_from(dirfd)
        .map_err(|e| io_err(dir, "cannot list the store directory", e))?;
    for ent in d {
        let ent = ent.map_err(|e| io_err(dir, "cannot list the store directory", e))?;
        let name = ent.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." || name == LOCK {
            continue;
        }
        match segment_start(&name) {
            Some(ms) => out.push((ms, name)),
            None => others += 1,
        }
    }
    out.sort();
    Ok((out, others))
}

/// What one recorded interval cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Appended {
    /// Bytes written to the store (chunk header and payload).
    pub bytes: u64,
    /// Whether this interval is a key (compressed alone).
    pub key: bool,
    /// Segments removed by `--keep` and `--max-size` at this interval.
    pub removed: usize,
}

struct OpenSegment {
    file: File,
    path: PathBuf,
    len: u64,
    started_ms: i64,
}

/// The recorder side of a store: appends snapshots, starts segments, removes old ones.
pub struct StoreWriter {
    dir: PathBuf,
    dirfd: OwnedFd,
    _lock: OwnedFd,
    limits: StoreLimits,
    seg: Option<OpenSegment>,
    key: Option<zstd::bulk::Compressor<'static>>,
    since_key: u32,
    /// The per-process index of the intervals written since the last `SERIES` chunk.
    series: series::Builder,
    /// Whether to write the per-process index (off only to make stores as older hoods did).
    index: bool,
    /// Write the index in layout 1, as hoods before layout 2 did (tests of old stores).
    layout1: bool,
    /// The file offset and JSON of the segment's last key: the dictionary of the key's
    /// intervals and of their `SERIES` chunk.
    key_json: Option<(u64, Vec<u8>)>,
}

impl std::fmt::Debug for StoreWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreWriter")
            .field("dir", &self.dir)
            .finish()
    }
}

impl StoreWriter {
    /// Open `dir` for recording (created 0700 if missing), checked as the module says, and
    /// take its lock.
    pub fn create(dir: &Path, limits: StoreLimits) -> Result<Self, ProcError> {
        let dirfd = open_dir(dir, true)?;
        let lock = rustix::fs::openat(
            &dirfd,
            LOCK,
            OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| io_err(&dir.join(LOCK), "cannot open the store's lock", e))?;
        let st = rustix::fs::fstat(&lock).map_err(|e| io_err(&dir.join(LOCK), "cannot stat", e))?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(err(&dir.join(LOCK), "is not a regular file; remove it"));
        }
        match rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(err(
                    dir,
                    "another `hood top --record` is recording into this store; stop it or \
                     record into another directory",
                ))
            }
            Err(e) => return Err(io_err(&dir.join(LOCK), "cannot lock the store", e)),
        }
        Ok(StoreWriter {
            dir: dir.to_owned(),
            dirfd,
            _lock: lock,
            limits,
            seg: None,
            key: None,
            since_key: 0,
            series: series::Builder::default(),
            index: true,
            layout1: false,
            key_json: None,
        })
    }

    /// Write no per-process index, as hoods before it did (tests of old stores).
    #[doc(hidden)]
    pub fn without_index(mut self) -> Self {
        self.index = false;
        self
    }

    /// Write the per-process index in layout 1, as hoods before layout 2 did (tests of old
    /// stores).
    #[doc(hidden)]
    pub fn index_layout_1(mut self) -> Self {
        self.layout1 = true;
        self.series.layout1 = true;
        self
    }

    /// Write the per-process index of the intervals not yet indexed; call it before a
    /// recorder stops (a killed one leaves its last key period unindexed: those intervals
    /// read whole). Returns the bytes written.
    pub fn finish(&mut self) -> u64 {
        self.flush_series()
    }

    /// Append the pending `SERIES` chunk to the open segment. The index only repeats what the
    /// intervals hold, so a failure loses nothing: it is truncated away and not retried.
    fn flush_series(&mut self) -> u64 {
        if self.series.len() == 0 {
            return 0;
        }
        let Some(seg) = self.seg.as_mut() else {
            self.series = series::Builder::new(self.layout1);
            return 0;
        };
        let key = match &self.key_json {
            Some((off, json)) if !self.layout1 => Some((*off, json.as_slice())),
            _ => None,
        };
        let flags = if key.is_some() {
            FLAG_ZSTD | FLAG_DICT
        } else {
            FLAG_ZSTD
        };
        let Ok(Some((payload, raw_len))) = self.series.take(INDEX_LEVEL, key) else {
            return 0;
        };
        let chunk = framed(SERIES, flags, raw_len, &payload);
        let written = seg
            .file
            .write_all(&chunk)
            .and_then(|_| rustix::fs::fdatasync(&seg.file).map_err(Into::into));
        if written.is_err() {
            let _ = seg.file.set_len(seg.len);
            return 0;
        }
        seg.len += chunk.len() as u64;
        chunk.len() as u64
    }

    /// The largest a segment may grow before the next one starts.
    fn segment_limit(&self) -> u64 {
        match self.limits.max_bytes {
            Some(m) => (m / 8).clamp(8 << 10, 1 << 30),
            None => 1 << 30,
        }
    }

    fn new_segment(&mut self, at_ms: i64) -> Result<(), ProcError> {
        let mut ms = at_ms;
        let (fd, name) = loop {
            let name = format!("{PREFIX}{ms:013}{SUFFIX}");
            match rustix::fs::openat(
                &self.dirfd,
                &name,
                OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::WRONLY
                    | OFlags::APPEND
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => break (fd, name),
                Err(rustix::io::Errno::EXIST) => ms += 1,
                Err(e) => {
                    return Err(io_err(
                        &self.dir.join(&name),
                        "cannot create a store segment",
                        e,
                    ))
                }
            }
        };
        let path = self.dir.join(&name);
        let mut file = File::from(fd);
        let header = FileHeader {
            version: hood_format::FORMAT_VERSION,
            kind: FileKind::Monitor,
            created_unix_ns: (at_ms.max(0) as u64).saturating_mul(1_000_000),
        };
        file.write_all(&header.encode())
            .map_err(|e| io_err(&path, "cannot write", e))?;
        // The new name must survive a power cut with its first chunk.
        rustix::fs::fsync(&self.dirfd).map_err(|e| io_err(&self.dir, "cannot sync", e))?;
        self.seg = Some(OpenSegment {
            file,
            path,
            len: FILE_HEADER_LEN as u64,
            started_ms: at_ms,
        });
        self.key = None;
        self.key_json = None;
        Ok(())
    }

    /// Read one snapshot with `reader` (at [`record_scan`]'s depth) and append it.
    pub fn record(&mut self, reader: &mut ProcReader) -> Result<Appended, ProcError> {
        let mut snap = reader.snapshot(&record_scan())?;
        reader.read_system_io(&mut snap);
        // Rates across recorder restarts need a clock that does not restart with hood.
        if let Ok(t) = rustix::time::clock_gettime_dynamic(rustix::time::DynamicClockId::Boottime) {
            snap.taken_ns = (t.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(t.tv_nsec as u64);
        }
        let at = now_ms();
        let res = self.append(&snap, at);
        reader.recycle(snap);
        res
    }

    /// Append `snap`, taken at `wall_ms`, and make it durable.
    pub fn append(&mut self, snap: &Snapshot, wall_ms: i64) -> Result<Appended, ProcError> {
        let mut removed = 0;
        let mut index_bytes = 0;
        let rotate = match &self.seg {
            None => true,
            Some(s) => {
                wall_ms.saturating_sub(s.started_ms) >= SEGMENT_SECS * 1000
                    || wall_ms < s.started_ms
                    || s.len >= self.segment_limit()
            }
        };
        if rotate {
            index_bytes += self.flush_series();
            self.new_segment(wall_ms)?;
            removed = self.prune(wall_ms)?;
        } else if self.since_key + 1 >= KEY_EVERY {
            removed = self.prune(wall_ms)?;
        }
        let json = serde_json::to_vec(snap)
            .map_err(|e| err(&self.dir, format!("cannot encode a snapshot: {e}")))?;
        let raw_len = json.len() as u64;
        let seg_path = self
            .seg
            .as_ref()
            .map(|s| s.path.clone())
            .unwrap_or_default();
        let key = self.key.is_none() || self.since_key + 1 >= KEY_EVERY;
        if key || self.series.bytes() >= series::MAX_PENDING {
            index_bytes += self.flush_series();
        }
        let (tag, flags, packed) = if key {
            let packed = zstd::bulk::compress(&json, LEVEL)
                .map_err(|e| io_err(&seg_path, "cannot compress", e))?;
            self.key = Some(
                zstd::bulk::Compressor::with_dictionary(LEVEL, &json)
                    .map_err(|e| io_err(&seg_path, "cannot compress", e))?,
            );
            let at = self.seg.as_ref().map_or(0, |s| s.len);
            self.key_json = Some((at, json));
            self.since_key = 0;
            (KEY, FLAG_ZSTD, packed)
        } else {
            let c = self.key.as_mut().expect("a key precedes every delta");
            let packed = c
                .compress(&json)
                .map_err(|e| io_err(&seg_path, "cannot compress", e))?;
            self.since_key += 1;
            (DELTA, FLAG_ZSTD | FLAG_DICT, packed)
        };
        let mut payload = Vec::with_capacity(8 + packed.len());
        payload.extend_from_slice(&wall_ms.to_le_bytes());
        payload.extend_from_slice(&packed);
        let chunk = framed(tag, flags, raw_len, &payload);
        let seg = self.seg.as_mut().expect("a segment was opened above");
        let written = seg
            .file
            .write_all(&chunk)
            .and_then(|_| rustix::fs::fdatasync(&seg.file).map_err(Into::into));
        if let Err(e) = written {
            // Leave no half chunk behind a full disk: readers would stop at it.
            let _ = seg.file.set_len(seg.len);
            let hint = if e.raw_os_error() == Some(libc::ENOSPC) {
                " (the disk is full: free space or lower --max-size)"
            } else {
                ""
            };
            let path = seg.path.clone();
            // The next interval starts a fresh key in a fresh segment.
            self.seg = None;
            self.key = None;
            self.key_json = None;
            self.series = series::Builder::new(self.layout1);
            return Err(io_err(&path, &format!("cannot write an interval{hint}"), e));
        }
        seg.len += chunk.len() as u64;
        if self.index {
            self.series.add(snap, wall_ms);
        }
        Ok(Appended {
            bytes: chunk.len() as u64 + index_bytes,
            key,
            removed,
        })
    }

    /// Remove segments older than `--keep` and, oldest first, beyond `--max-size`; never the
    /// segment being written.
    fn prune(&mut self, now_ms: i64) -> Result<usize, ProcError> {
        if self.limits.keep_s.is_none() && self.limits.max_bytes.is_none() {
            return Ok(0);
        }
        let (segs, _) = list_segments(&self.dirfd, &self.dir)?;
        let current = self
            .seg
            .as_ref()
            .and_then(|s| s.path.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        // (size, last write in ms) of each segment.
        let mut stats: Vec<(u64, i64)> = Vec::with_capacity(segs.len());
        for (_, name) in &segs {
            let st = rustix::fs::statat(&self.dirfd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| {
                    let mtime = st
                        .st_mtime
                        .saturating_mul(1000)
                        .saturating_add((st.st_mtime_nsec / 1_000_000) as i64);
                    (st.st_size as u64, mtime)
                })
                .unwrap_or((0, i64::MAX));
            stats.push(st);
        }
        let mut total: u64 = stats.iter().map(|s| s.0).sum();
        let mut removed = 0;
        for (i, (_, name)) in segs.iter().enumerate() {
            if current.as_deref() == Some(name.as_str()) {
                break;
            }
            // A segment's last interval was written at its last modification.
            let ends_ms = stats[i].1;
            let too_old = self
                .limits
                .keep_s
                .is_some_and(|k| ends_ms < now_ms.saturating_sub((k as i64).saturating_mul(1000)));
            let too_big = self.limits.max_bytes.is_some_and(|m| total > m);
            if !(too_old || too_big) {
                break;
            }
            match rustix::fs::unlinkat(&self.dirfd, name.as_str(), AtFlags::empty()) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => {
                    total = total.saturating_sub(stats[i].0);
                    removed += 1;
                }
                Err(e) => {
                    return Err(io_err(
                        &self.dir.join(name),
                        "cannot remove an old segment",
                        e,
                    ))
                }
            }
        }
        Ok(removed)
    }
}

/// One recorded interval as the time index knows it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    wall_ms: i64,
    offset: u64,
    head: ChunkHeader,
    /// Index of the key this entry is read with (itself for a key).
    key: Option<usize>,
    /// The `SERIES` chunk that indexes this interval, and the interval's place in it.
    series: Option<(usize, usize)>,
}

/// What reading a segment's chunk headers found.
#[derive(Debug)]
struct Scanned {
    /// The segment, to read payloads from (`None` when it could not be opened).
    file: Option<File>,
    /// Its intervals, in order.
    entries: Vec<Entry>,
    /// Its `SERIES` chunks: offset, header, and the key of the first interval it indexes.
    series: Vec<(u64, ChunkHeader, Option<usize>)>,
}

#[derive(Debug)]
struct Seg {
    name: String,
    start_ms: i64,
    /// Scanned lazily.
    scanned: Option<Scanned>,
}

/// A position in a store: segment and entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    seg: usize,
    idx: usize,
}

/// The reader side of a store.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    segs: Vec<Seg>,
    warnings: Vec<String>,
    said: HashSet<String>,
    /// The key JSON last decompressed: (segment, entry, bytes).
    key_cache: Option<(usize, usize, Vec<u8>)>,
    /// The snapshot last decoded, for the next interval's rates.
    last: Option<(Pos, Snapshot)>,
    /// The `SERIES` chunk last read for [`Store::window_pids`]: (segment, chunk, its
    /// intervals with the wanted processes; empty when damaged).
    series_cache: Option<(usize, usize, series::Intervals)>,
    /// The interval last read for [`Store::window_pids`], for the next one's rates.
    last_pids: Option<(Pos, Snapshot)>,
    /// Snapshots decoded whole so far.
    decoded: u64,
}

impl Store {
    /// Open a store for reading: `dir` must be a directory holding segments.
    pub fn open(dir: &Path) -> Result<Store, ProcError> {
        let dirfd = open_dir(dir, false)?;
        let (names, others) = list_segments(&dirfd, dir)?;
        if names.is_empty() {
            return Err(err(
                dir,
                if others == 0 {
                    "is empty: no recording yet (record with `hood top --record DIR`)".to_string()
                } else {
                    format!(
                        "is not a monitor store: none of its {others} files is a segment \
                         (top-<ms>.seg, written by `hood top --record`)"
                    )
                },
            ));
        }
        Ok(Store {
            dir: dir.to_owned(),
            segs: names
                .into_iter()
                .map(|(start_ms, name)| Seg {
                    name,
                    start_ms,
                    scanned: None,
                })
                .collect(),
            warnings: Vec::new(),
            said: HashSet::new(),
            key_cache: None,
            last: None,
            series_cache: None,
            last_pids: None,
            decoded: 0,
        })
    }

    /// How many intervals were decoded whole so far (those the per-process index did not
    /// answer).
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn warn(&mut self, w: String) {
        if self.said.insert(w.clone()) {
            self.warnings.push(w);
        }
    }

    /// What was found damaged or cut since the last call, each said once.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn seg_path(&self, s: usize) -> PathBuf {
        self.dir.join(&self.segs[s].name)
    }

    /// Read segment `s`'s index (chunk headers and times) once.
    fn scan(&mut self, s: usize) -> &[Entry] {
        if self.segs[s].scanned.is_none() {
            let path = self.seg_path(s);
            let (scanned, warning) = scan_segment(&path);
            if let Some(w) = warning {
                self.warn(w);
            }
            self.segs[s].scanned = Some(scanned);
        }
        &self.segs[s]
            .scanned
            .as_ref()
            .expect("scanned above")
            .entries
    }

    fn len(&mut self, s: usize) -> usize {
        self.scan(s).len()
    }

    fn entry(&mut self, p: Pos) -> Entry {
        self.scan(p.seg)[p.idx]
    }

    /// The first recorded interval, if any segment holds one.
    pub fn first(&mut self) -> Option<Pos> {
        (0..self.segs.len()).find_map(|s| (self.len(s) > 0).then_some(Pos { seg: s, idx: 0 }))
    }

    /// The last recorded interval.
    pub fn last(&mut self) -> Option<Pos> {
        (0..self.segs.len()).rev().find_map(|s| {
            let n = self.len(s);
            (n > 0).then(|| Pos { seg: s, idx: n - 1 })
        })
    }

    /// The interval after `p`.
    pub fn next(&mut self, p: Pos) -> Option<Pos> {
        if p.idx + 1 < self.len(p.seg) {
            return Some(Pos {
                seg: p.seg,
                idx: p.idx + 1,
            });
        }
        (p.seg + 1..self.segs.len())
            .find_map(|s| (self.len(s) > 0).then_some(Pos { seg: s, idx: 0 }))
    }

    /// The interval before `p`.
    pub fn prev(&mut self, p: Pos) -> Option<Pos> {
        if p.idx > 0 {
            return Some(Pos {
                seg: p.seg,
                idx: p.idx - 1,
            });
        }
        (0..p.seg).rev().find_map(|s| {
            let n = self.len(s);
            (n > 0).then(|| Pos { seg: s, idx: n - 1 })
        })
    }

    /// The interval before `p` when `dir` is negative, after it otherwise.
    fn step(&mut self, p: Pos, dir: i64) -> Option<Pos> {
        if dir < 0 {
            self.prev(p)
        } else {
            self.next(p)
        }
    }

    /// When the interval at `p` ended (ms since the Unix epoch).
    pub fn time_ms(&mut self, p: Pos) -> i64 {
        self.entry(p).wall_ms
    }

    /// "FIRST to LAST" of the whole store, for messages.
    pub fn span_text(&mut self, offset_s: i32) -> String {
        match (self.first(), self.last()) {
            (Some(a), Some(b)) => {
                let (a, b) = (self.time_ms(a), self.time_ms(b));
                format!(
                    "{} to {}",
                    hood_monitor::when::format_time(a.div_euclid(1000), offset_s),
                    hood_monitor::when::format_time(b.div_euclid(1000), offset_s)
                )
            }
            _ => "nothing readable".into(),
        }
    }

    /// The typical interval near `p`, in ms (at least 1 s).
    fn interval_near(&mut self, p: Pos) -> i64 {
        let t = self.time_ms(p);
        let gap = match self.prev(p) {
            Some(q) => t - self.time_ms(q),
            None => match self.next(p) {
                Some(q) => self.time_ms(q) - t,
                None => 0,
            },
        };
        gap.max(1000)
    }

    /// The interval that ended at or last before `t_s` (seconds since the Unix epoch). Outside
    /// the recording it is an error that says what the store covers.
    pub fn locate(&mut self, t_s: i64, offset_s: i32) -> Result<Pos, ProcError> {
        let t_ms = t_s.saturating_mul(1000).saturating_add(999);
        let when = hood_monitor::when::format_time(t_s, offset_s);
        let Some(first) = self.first() else {
            return Err(err(
                &self.dir,
                "holds no readable interval (every segment is empty or damaged)",
            ));
        };
        if t_ms < self.time_ms(first) {
            let span = self.span_text(offset_s);
            return Err(ProcError::Time(format!(
                "{when} is before the store's first interval ({} holds {span})",
                self.dir.display()
            )));
        }
        let mut s = self.segs.partition_point(|g| g.start_ms <= t_ms).max(1) - 1;
        loop {
            let entries = self.scan(s);
            let j = entries.partition_point(|e| e.wall_ms <= t_ms);
            if j > 0 {
                let p = Pos { seg: s, idx: j - 1 };
                let last = self.last().expect("the store has a first interval");
                if p == last && t_ms - self.time_ms(p) > 2 * self.interval_near(p) + 1000 {
                    let span = self.span_text(offset_s);
                    return Err(ProcError::Time(format!(
                        "{when} is after the store's last interval ({} holds {span})",
                        self.dir.display()
                    )));
                }
                return Ok(p);
            }
            if s == 0 {
                return Ok(first);
            }
            s -= 1;
        }
    }

    /// The first interval at or after `t_s`.
    pub fn locate_from(&mut self, t_s: i64) -> Option<Pos> {
        let t_ms = t_s.saturating_mul(1000);
        let mut s = self.segs.partition_point(|g| g.start_ms <= t_ms).max(1) - 1;
        while s < self.segs.len() {
            let entries = self.scan(s);
            let j = entries.partition_point(|e| e.wall_ms < t_ms);
            if j < entries.len() {
                return Some(Pos { seg: s, idx: j });
            }
            s += 1;
        }
        None
    }

    /// Decompress and decode the snapshot at `p`; `Err` is the warning that says why not.
    fn decode(&mut self, p: Pos) -> Result<Snapshot, String> {
        self.decoded += 1;
        let e = self.entry(p);
        let json = if e.head.flags & FLAG_DICT != 0 {
            let Some(k) = e.key else {
                return Err(format!(
                    "{}: the interval at offset {} has no key before it; skipped",
                    self.seg_path(p.seg).display(),
                    e.offset
                ));
            };
            let cached = matches!(&self.key_cache, Some((s, i, _)) if *s == p.seg && *i == k);
            if !cached {
                let kj = self.payload_json(Pos { seg: p.seg, idx: k }, None)?;
                self.key_cache = Some((p.seg, k, kj));
            }
            let dict = self.key_cache.take().expect("cached above");
            let out = self.payload_json(p, Some(&dict.2));
            self.key_cache = Some(dict);
            out?
        } else {
            self.payload_json(p, None)?
        };
        serde_json::from_slice(&json).map_err(|x| {
            format!(
                "{}: the interval at offset {} is damaged (not a snapshot: {x}); skipped",
                self.seg_path(p.seg).display(),
                e.offset
            )
        })
    }

    /// The JSON of the chunk at `p`, checked against its header.
    fn payload_json(&mut self, p: Pos, dict: Option<&[u8]>) -> Result<Vec<u8>, String> {
        let e = self.entry(p);
        let path = self.seg_path(p.seg);
        let damaged = |what: &str| {
            format!(
                "{}: the interval at offset {} is damaged ({what}); skipped",
                path.display(),
                e.offset
            )
        };
        let Some(Scanned {
            file: Some(file), ..
        }) = &self.segs[p.seg].scanned
        else {
            return Err(damaged("unreadable"));
        };
        // The scan checked stored_len against MAX_STORED and the file's length.
        let mut payload = vec![0u8; e.head.stored_len as usize];
        file.read_exact_at(&mut payload, e.offset + CHUNK_HEADER_LEN as u64)
            .map_err(|x| damaged(&format!("cannot read: {x}")))?;
        if crc32c::crc32c(&payload) != e.head.payload_crc {
            return Err(damaged("checksum mismatch"));
        }
        if e.head.raw_len > MAX_SNAPSHOT {
            return Err(damaged("claims a snapshot larger than 256 MiB"));
        }
        let frame = &payload[8..];
        let mut out = Vec::new();
        let read = match dict {
            Some(d) => zstd::stream::read::Decoder::with_dictionary(frame, d)
                .and_then(|dec| dec.take(e.head.raw_len + 1).read_to_end(&mut out)),
            None => zstd::stream::read::Decoder::with_buffer(frame)
                .and_then(|dec| dec.take(e.head.raw_len + 1).read_to_end(&mut out)),
        };
        match read {
            Ok(n) if n as u64 == e.head.raw_len => Ok(out),
            Ok(n) => Err(damaged(&format!(
                "{n} bytes decompressed where the header says {}",
                e.head.raw_len
            ))),
            Err(x) => Err(damaged(&format!("does not decompress: {x}"))),
        }
    }

    /// The raw snapshot at `p` (damage is a warning and `None`).
    pub fn snapshot(&mut self, p: Pos) -> Option<Snapshot> {
        if let Some((q, s)) = &self.last {
            if *q == p {
                return Some(s.clone());
            }
        }
        match self.decode(p) {
            Ok(s) => Some(s),
            Err(w) => {
                self.warn(w);
                None
            }
        }
    }

    /// The view of the interval that ended at `p`, with rates from the interval before it
    /// (none for the first, after a gap in the recording or a reboot). `None` when `p` is
    /// damaged (a warning says so).
    pub fn view(&mut self, p: Pos) -> Option<SystemView> {
        let cur = self.snapshot(p)?;
        let prev_pos = self.prev(p);
        let prev = match prev_pos {
            Some(q) => {
                let from_last = match self.last.take() {
                    Some((lp, s)) if lp == q => Some(s),
                    _ => None,
                };
                from_last.or_else(|| self.snapshot(q))
            }
            None => None,
        };
        let prev = prev.filter(|pr| self.rates_from(p, &cur, prev_pos, pr));
        let v = self.derive_at(p, prev.as_ref(), &cur);
        self.last = Some((p, cur));
        Some(v)
    }

    /// Whether the snapshot `prev` at `q` (the interval before `p`) is the base of `cur`'s
    /// rates: the same boot, and no recording gap longer than a few intervals.
    fn rates_from(&mut self, p: Pos, cur: &Snapshot, q: Option<Pos>, prev: &Snapshot) -> bool {
        let Some(q) = q else { return false };
        let wall = self.time_ms(p) - self.time_ms(q);
        let mono = cur.taken_ns as i128 - prev.taken_ns as i128;
        mono > 0
            && (wall as i128 * 1_000_000 - mono).abs() < 2_000_000_000
            && wall <= 4 * self.interval_near(q).max(1000) + 2000
    }

    fn derive_at(&mut self, p: Pos, prev: Option<&Snapshot>, cur: &Snapshot) -> SystemView {
        let t = self.time_ms(p);
        let mut v = derive(prev, cur);
        if v.uptime.wall_time_s != t.div_euclid(1000) {
            v.uptime.wall_time_s = t.div_euclid(1000);
        }
        v
    }

    /// The interval at `p` with only the processes `pids` (and, with `system`, every system
    /// figure and the counts over all processes): from the per-process index when it covers
    /// `p`, else from the whole snapshot. `None` when neither reads (a warning says so).
    fn pids_snapshot(&mut self, p: Pos, pids: &[u32], system: bool) -> Option<Snapshot> {
        let e = self.entry(p);
        if let Some((k, i)) = e.series {
            // Layout 1 holds no system figures: those dumps read its intervals whole.
            let usable = !system || self.series_layout2(p.seg, k);
            let cached = matches!(&self.series_cache, Some((s, c, _)) if *s == p.seg && *c == k);
            if usable && !cached {
                let got = match self.read_series(p.seg, k, pids, system) {
                    Ok(v) => v,
                    Err(w) => {
                        self.warn(w);
                        Vec::new()
                    }
                };
                self.series_cache = Some((p.seg, k, got));
            }
            let got = self
                .series_cache
                .as_ref()
                .filter(|_| usable)
                .and_then(|(_, _, v)| v.get(i))
                .filter(|(ms, _, _)| *ms == e.wall_ms)
                .map(|(_, s, ended)| (s.clone(), *ended));
            match got {
                // Tasks of `pids` ended in it: those are in the interval's own snapshot.
                Some((mut s, true)) => {
                    let whole = self.snapshot(p)?;
                    if let (Some(o), Some(x)) = (s.exits.as_mut(), whole.exits) {
                        o.tasks = x
                            .tasks
                            .into_iter()
                            .filter(|t| pids.contains(&t.tgid))
                            .collect();
                    }
                    return Some(s);
                }
                Some((s, false)) => return Some(s),
                None => {}
            }
        }
        let whole = self.snapshot(p)?;
        Some(series::only_pids(&whole, pids, system))
    }

    /// Whether the `k`th `SERIES` chunk of segment `s` is in layout 2 (system figures held,
    /// frames compressed against its intervals' key).
    fn series_layout2(&self, s: usize, k: usize) -> bool {
        self.segs[s]
            .scanned
            .as_ref()
            .and_then(|sc| sc.series.get(k))
            .is_some_and(|c| c.1.flags & FLAG_DICT != 0)
    }

    /// The intervals of the `k`th `SERIES` chunk of segment `s` with the processes `pids`
    /// (with `system`, with every system figure).
    fn read_series(
        &mut self,
        s: usize,
        k: usize,
        pids: &[u32],
        system: bool,
    ) -> Result<series::Intervals, String> {
        let path = self.seg_path(s);
        let Some(Scanned {
            file: Some(_),
            series: chunks,
            ..
        }) = &self.segs[s].scanned
        else {
            return Err(format!("{}: unreadable", path.display()));
        };
        let (off, head, key) = chunks[k];
        let damaged = |what: &str| {
            format!(
                "{}: the per-process index at offset {off} is damaged ({what}); its intervals \
                 are read whole",
                path.display()
            )
        };
        // Layout 2 is read with its intervals' key as the dictionary.
        let dict = if head.flags & FLAG_DICT != 0 {
            let Some(k) = key else {
                return Err(damaged("no key before its intervals"));
            };
            let cached = matches!(&self.key_cache, Some((c, i, _)) if *c == s && *i == k);
            if !cached {
                let kj = self.payload_json(Pos { seg: s, idx: k }, None)?;
                self.key_cache = Some((s, k, kj));
            }
            Some(self.entry(Pos { seg: s, idx: k }).offset)
        } else {
            None
        };
        let Some(Scanned {
            file: Some(file), ..
        }) = &self.segs[s].scanned
        else {
            return Err(format!("{}: unreadable", path.display()));
        };
        // The scan checked stored_len against MAX_STORED and the file's length.
        let mut payload = vec![0u8; head.stored_len as usize];
        file.read_exact_at(&mut payload, off + CHUNK_HEADER_LEN as u64)
            .map_err(|x| damaged(&format!("cannot read: {x}")))?;
        if crc32c::crc32c(&payload) != head.payload_crc {
            return Err(damaged("checksum mismatch"));
        }
        let key = match (dict, &self.key_cache) {
            (Some(at), Some((_, _, json))) => Some((at, json.as_slice())),
            _ => None,
        };
        series::read(&payload, pids, key, system).map_err(|w| damaged(&w))
    }

    /// The view of the interval that ended at `p` with only the processes `pids`: what
    /// [`Store::view`] shows of them, read from the per-process index where it covers `p`.
    /// With `system`, the machine's figures are those of [`Store::view`] too; without it, only
    /// what the processes' figures are derived with (an empty machine's figures otherwise).
    pub fn view_pids(&mut self, p: Pos, pids: &[u32], system: bool) -> Option<SystemView> {
        let cur = self.pids_snapshot(p, pids, system)?;
        let prev_pos = self.prev(p);
        let prev = match prev_pos {
            Some(q) => match self.last_pids.take() {
                Some((lp, s)) if lp == q => Some(s),
                _ => self.pids_snapshot(q, pids, system),
            },
            None => None,
        };
        let prev = prev.filter(|pr| self.rates_from(p, &cur, prev_pos, pr));
        let v = self.derive_at(p, prev.as_ref(), &cur);
        self.last_pids = Some((p, cur));
        Some(v)
    }

    /// [`Store::window`] of the processes `pids` only ([`Store::view_pids`]): a day of one
    /// process reads one small frame per key period instead of every interval.
    pub fn window_pids(
        &mut self,
        from_s: i64,
        to_s: i64,
        pids: &[u32],
        system: bool,
        mut each: impl FnMut(SystemView) -> bool,
    ) {
        self.series_cache = None;
        self.last_pids = None;
        let to_ms = to_s.saturating_mul(1000).saturating_add(999);
        let mut p = self.locate_from(from_s);
        while let Some(q) = p {
            if self.time_ms(q) > to_ms {
                break;
            }
            if let Some(v) = self.view_pids(q, pids, system) {
                if !each(v) {
                    break;
                }
            }
            p = self.next(q);
        }
    }

    /// The views of every interval from `from_s` to `to_s` (inclusive), in time order.
    pub fn window(&mut self, from_s: i64, to_s: i64, mut each: impl FnMut(SystemView) -> bool) {
        let to_ms = to_s.saturating_mul(1000).saturating_add(999);
        let mut p = self.locate_from(from_s);
        while let Some(q) = p {
            if self.time_ms(q) > to_ms {
                break;
            }
            if let Some(v) = self.view(q) {
                if !each(v) {
                    break;
                }
            }
            p = self.next(q);
        }
    }
}

/// Read a segment's header and chunk headers. Returns the file (to read payloads from), the
/// entries, and a warning when the segment is cut or damaged (reading stops there).
fn scan_segment(path: &Path) -> (Scanned, Option<String>) {
    let (file, entries, series, warning) = scan_chunks(path);
    (
        Scanned {
            file,
            entries,
            series,
        },
        warning,
    )
}

type ScanResult = (
    Option<File>,
    Vec<Entry>,
    Vec<(u64, ChunkHeader, Option<usize>)>,
    Option<String>,
);

fn scan_chunks(path: &Path) -> ScanResult {
    let policy = hood_format::untrusted::Policy::NO_LINK;
    let file = match hood_format::untrusted::open(path, policy) {
        Ok(f) => f,
        Err(e) => {
            return (
                None,
                Vec::new(),
                Vec::new(),
                Some(format!("{e}; segment skipped")),
            )
        }
    };
    let len = match file.metadata() {
        Ok(m) => m.len(),
        Err(e) => {
            let w = format!("{}: cannot stat: {e}; segment skipped", path.display());
            return (None, Vec::new(), Vec::new(), Some(w));
        }
    };
    let mut hb = [0u8; FILE_HEADER_LEN];
    if len < FILE_HEADER_LEN as u64 || file.read_exact_at(&mut hb, 0).is_err() {
        let w = format!(
            "{}: cut before the end of its header ({len} bytes; the recorder was stopped as \
             it started the segment); segment skipped",
            path.display()
        );
        return (None, Vec::new(), Vec::new(), Some(w));
    }
    match FileHeader::decode(&hb) {
        Ok(h) if h.kind == FileKind::Monitor => {}
        Ok(h) => {
            let w = format!(
                "{}: is a {} file, not a monitor store segment; skipped",
                path.display(),
                h.kind
            );
            return (None, Vec::new(), Vec::new(), Some(w));
        }
        Err(what) => {
            let w = format!(
                "{}: not a monitor store segment ({what} at offset 0); skipped",
                path.display()
            );
            return (None, Vec::new(), Vec::new(), Some(w));
        }
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut series: Vec<(u64, ChunkHeader, Option<usize>)> = Vec::new();
    // The first interval no `SERIES` chunk covers yet.
    let mut unindexed = 0usize;
    let mut key: Option<usize> = None;
    let mut off = FILE_HEADER_LEN as u64;
    let mut warning = None;
    let mut buf = [0u8; CHUNK_HEADER_LEN + 8];
    while off < len {
        let cut = |off: u64| {
            Some(format!(
                "{}: cut at offset {off} of {len} bytes (the recorder was stopped while \
                 writing; the intervals before it read)",
                path.display()
            ))
        };
        if len - off < buf.len() as u64 {
            warning = cut(off);
            break;
        }
        if let Err(e) = file.read_exact_at(&mut buf, off) {
            warning = Some(format!(
                "{}: cannot read at offset {off}: {e}",
                path.display()
            ));
            break;
        }
        let mut hb = [0u8; CHUNK_HEADER_LEN];
        hb.copy_from_slice(&buf[..CHUNK_HEADER_LEN]);
        let head = match ChunkHeader::decode(&hb) {
            Ok(h) => h,
            Err(what) => {
                warning = Some(format!(
                    "{}: damaged at offset {off} ({what}); the {} intervals before it read, \
                     the rest of this segment is skipped",
                    path.display(),
                    entries.len()
                ));
                break;
            }
        };
        if head.stored_len < 8 || head.stored_len > MAX_STORED {
            warning = Some(format!(
                "{}: damaged at offset {off} (a chunk of {} bytes); the rest of this segment \
                 is skipped",
                path.display(),
                head.stored_len
            ));
            break;
        }
        let end = off + CHUNK_HEADER_LEN as u64 + head.stored_len;
        if end > len {
            warning = cut(off);
            break;
        }
        let mut tb = [0u8; 8];
        tb.copy_from_slice(&buf[CHUNK_HEADER_LEN..]);
        let wall_ms = i64::from_le_bytes(tb);
        match head.tag {
            KEY => {
                key = Some(entries.len());
                entries.push(Entry {
                    wall_ms,
                    offset: off,
                    head,
                    key,
                    series: None,
                });
            }
            DELTA => entries.push(Entry {
                wall_ms,
                offset: off,
                head,
                key,
                series: None,
            }),
            // It indexes the intervals since the last one.
            SERIES => {
                let k = series.len();
                series.push((off, head, entries.get(unindexed).and_then(|e| e.key)));
                for (i, e) in entries[unindexed..].iter_mut().enumerate() {
                    e.series = Some((k, i));
                }
                unindexed = entries.len();
            }
            // A newer hood's chunk: skipped, as the container's rule says.
            _ => {}
        }
        off = end;
    }
    (Some(file), entries, series, warning)
}

/// Recorded time as `hood top --replay` walks it.
#[derive(Debug)]
pub struct Replay {
    store: Store,
    pos: Option<Pos>,
    offset_s: i32,
}

impl Replay {
    /// Walk `store`, reading times in the zone `offset_s` east of UTC.
    pub fn new(store: Store, offset_s: i32) -> Self {
        Replay {
            store,
            pos: None,
            offset_s,
        }
    }

    /// The view at `p`, or the nearest readable one in direction `dir` (+1/-1).
    fn readable_from(&mut self, mut p: Pos, dir: i64) -> Result<SystemView, ProcError> {
        loop {
            if let Some(v) = self.store.view(p) {
                self.pos = Some(p);
                return Ok(v);
            }
            match self.store.step(p, dir) {
                Some(q) => p = q,
                None => {
                    return Err(err(
                        &self.store.dir,
                        "no readable interval in that direction (see the warnings)",
                    ))
                }
            }
        }
    }
}

impl Recorded for Replay {
    type Error = ProcError;

    fn seek(&mut self, to: Seek) -> Result<SystemView, ProcError> {
        match to {
            Seek::Last => {
                let p = self
                    .store
                    .last()
                    .ok_or_else(|| err(&self.store.dir, "holds no readable interval"))?;
                self.readable_from(p, -1)
            }
            Seek::At(t) => {
                let p = self.store.locate(t, self.offset_s)?;
                self.readable_from(p, -1)
            }
            Seek::Step(n) => {
                let Some(mut p) = self.pos else {
                    return self.seek(Seek::Last);
                };
                let dir = n.signum();
                for _ in 0..n.unsigned_abs() {
                    match self.store.step(p, dir) {
                        Some(q) => p = q,
                        None => break,
                    }
                }
                self.readable_from(p, if dir == 0 { -1 } else { dir })
            }
        }
    }

    fn warnings(&mut self) -> Vec<String> {
        self.store.take_warnings()
    }

    fn utc_offset_s(&self) -> i32 {
        self.offset_s
    }
}

/// A whole chunk: its header (with the payload's length and checksum), then the payload.
fn framed(tag: u32, flags: u32, raw_len: u64, payload: &[u8]) -> Vec<u8> {
    let head = ChunkHeader::of(tag, flags, raw_len, payload);
    let mut chunk = Vec::with_capacity(CHUNK_HEADER_LEN + payload.len());
    chunk.extend_from_slice(&head.encode());
    chunk.extend_from_slice(payload);
    chunk
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(t: u64, tasks: u32) -> Snapshot {
        let mut s = Snapshot {
            taken_ns: t * 1_000_000_000,
            wall_time_s: t as i64,
            clk_tck: 100,
            ..Default::default()
        };
        for pid in 1..=tasks {
            s.tasks.push(hood_monitor::TaskRaw {
                pid,
                tgid: pid,
                name: format!("task{pid}"),
                utime: t * pid as u64,
                state: 'S',
                ..Default::default()
            });
        }
        s
    }

    /// Each interval's views of `pids`, through the whole snapshots and through the index.
    fn both_ways(dir: &Path, pids: &[u32]) -> (Vec<SystemView>, Vec<SystemView>, Vec<String>) {
        both_ways_decoding(dir, pids, false).0
    }

    /// [`both_ways`] (with `system`, the machine's figures too), and how many snapshots the
    /// index way decoded whole.
    #[allow(clippy::type_complexity)]
    fn both_ways_decoding(
        dir: &Path,
        pids: &[u32],
        system: bool,
    ) -> ((Vec<SystemView>, Vec<SystemView>, Vec<String>), u64) {
        let mut st = Store::open(dir).unwrap();
        let mut whole = Vec::new();
        st.window(0, i64::MAX / 1000, |mut v| {
            v.tasks.retain(|t| pids.contains(&t.pid));
            whole.push(v);
            true
        });
        let mut warnings = st.take_warnings();
        let mut st = Store::open(dir).unwrap();
        let mut indexed = Vec::new();
        st.window_pids(0, i64::MAX / 1000, pids, system, |v| {
            indexed.push(v);
            true
        });
        warnings.extend(st.take_warnings());
        ((whole, indexed, warnings), st.decoded())
    }

    fn tasks_of(vs: &[SystemView]) -> Vec<(i64, Vec<hood_monitor::TaskView>)> {
        vs.iter()
            .map(|v| (v.uptime.wall_time_s, v.tasks.clone()))
            .collect()
    }

    /// How a test store is indexed: not at all (as hoods before the index), in layout 1 (as
    /// hoods before layout 2) or as this hood writes it.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Index {
        None,
        Layout1,
        Layout2,
    }

    /// A recording where pid 3 is busy, pid 4 is gone for a while, and pid 9 starts and ends
    /// between two intervals, with CPUs, interrupts, pressure, disks, networks and cgroups
    /// (pids 3 and 4 in `/busy`) changing; indexed as `index` says.
    fn record_mixed(dir: &Path, n: u64, index: Index, finish: bool) {
        let mut w = StoreWriter::create(dir, StoreLimits::default()).unwrap();
        match index {
            Index::None => w = w.without_index(),
            Index::Layout1 => w = w.index_layout_1(),
            Index::Layout2 => {}
        }
        for t in 1..=n {
            let mut s = snap(t, 6);
            if (40..50).contains(&t) {
                s.tasks.retain(|x| x.pid != 4);
            }
            s.tasks[2].cmdline = Some(vec![format!("busy --round {}", t / 7)]);
            for x in s.tasks.iter_mut() {
                x.state = if x.pid == 3 && t % 3 == 0 { 'R' } else { 'S' };
                x.num_threads = x.pid;
                x.cgroup = Some(if x.pid == 3 || x.pid == 4 {
                    "/busy".into()
                } else {
                    "/idle.service".into()
                });
            }
            s.cpus = (0..2)
                .map(|id| hood_monitor::CpuRaw {
                    id,
                    ticks: hood_monitor::CpuTicks {
                        user: t * (id as u64 + 3),
                        idle: t * 50,
                        ..Default::default()
                    },
                    mhz: None,
                })
                .collect();
            s.cpu_total.user = t * 7;
            s.cpu_total.idle = t * 100;
            s.interrupts = vec![hood_monitor::IrqLine {
                id: "LOC".into(),
                per_cpu: vec![t * 11, t * 13],
                description: "Local timer interrupts".into(),
            }];
            s.pressure = Some(hood_monitor::PressureRaw::default());
            s.disks = Some(vec![hood_monitor::DiskRaw {
                name: "vda".into(),
                ..Default::default()
            }]);
            s.cgroups = Some(
                ["/", "/busy", "/idle.service"]
                    .iter()
                    .enumerate()
                    .map(|(i, p)| hood_monitor::CgroupRaw {
                        path: p.to_string(),
                        usage_us: t * 1000 * (i as u64 + 1),
                        ..Default::default()
                    })
                    .collect(),
            );
            s.exits = Some(hood_monitor::ExitsRaw::default());
            if t == 77 {
                s.exits.as_mut().unwrap().tasks.push(hood_monitor::ExitRaw {
                    pid: 9,
                    tgid: 9,
                    name: "brief".into(),
                    utime_us: 200_000,
                    ..Default::default()
                });
            }
            w.append(&s, t as i64 * 1000).unwrap();
        }
        if finish {
            w.finish();
        }
    }

    #[test]
    fn one_process_reads_the_same_from_the_index_as_from_the_snapshots() {
        let n = KEY_EVERY as u64 * 2 + 17;
        for (index, finish) in [
            (Index::Layout2, true),
            (Index::Layout2, false),
            (Index::Layout1, true),
            (Index::None, false),
        ] {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("store");
            record_mixed(&dir, n, index, finish);
            for pids in [&[3u32][..], &[4], &[9], &[2, 4], &[77]] {
                for system in [false, true] {
                    let ((whole, indexed, warnings), decoded) =
                        both_ways_decoding(&dir, pids, system);
                    let what = format!("{pids:?} {index:?} finish {finish} system {system}");
                    assert!(warnings.is_empty(), "{warnings:?} {what}");
                    // Only the intervals no index covers are decoded whole: none after a
                    // clean stop, the last key period's after a kill, all of a store without
                    // the index, and with the machine's figures all of a layout 1 store.
                    let unindexed = match (index, finish) {
                        (Index::None, _) => n,
                        (Index::Layout1, _) if system => n,
                        (_, true) => 0,
                        (_, false) => 17,
                    };
                    // Layout 2 reads pid 9's ended task from its interval's snapshot.
                    let unindexed =
                        unindexed + u64::from(index == Index::Layout2 && pids.contains(&9));
                    assert_eq!(decoded, unindexed, "{what}");
                    assert_eq!(whole.len() as u64, n);
                    assert_eq!(tasks_of(&whole), tasks_of(&indexed), "{what}");
                    if system {
                        // Every figure of the machine, counts over all its processes included.
                        for (w, i) in whole.iter().zip(&indexed) {
                            assert_eq!(w, i, "{what}");
                        }
                        let v = &indexed[KEY_EVERY as usize + 5];
                        assert_eq!(v.counts.tasks, 6);
                        assert_eq!(v.counts.threads, 21);
                        let busy = v.cgroups.as_ref().unwrap();
                        assert_eq!(busy[1].path, "/busy");
                        assert_eq!(busy[1].tasks, 2);
                        assert_eq!(indexed[76].exits.as_ref().unwrap().processes, 1);
                    }
                }
            }
            let (whole, _, _) = both_ways(&dir, &[9]);
            assert_eq!(whole.iter().map(|v| v.tasks.len()).sum::<usize>(), 1);
            let (whole, _, _) = both_ways(&dir, &[4]);
            assert_eq!(
                whole.iter().map(|v| v.tasks.len()).sum::<usize>(),
                n as usize - 10
            );
        }
    }

    #[test]
    fn a_damaged_index_is_said_and_its_intervals_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("store");
        record_mixed(&dir, KEY_EVERY as u64 * 2 + 3, Index::Layout2, true);
        let mut st = Store::open(&dir).unwrap();
        st.scan(0);
        let (off, head, _) = st.segs[0].scanned.as_ref().unwrap().series[1];
        let name = dir.join(&st.segs[0].name);
        drop(st);
        let mut bytes = std::fs::read(&name).unwrap();
        let at = (off + CHUNK_HEADER_LEN as u64 + head.stored_len / 2) as usize;
        bytes[at] ^= 0x55;
        std::fs::write(&name, &bytes).unwrap();
        let (whole, indexed, warnings) = both_ways(&dir, &[3]);
        assert_eq!(tasks_of(&whole), tasks_of(&indexed));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains(&format!("per-process index at offset {off} is damaged")),
            "{warnings:?}"
        );
    }

    #[test]
    fn segment_names_are_read_strictly() {
        assert_eq!(
            segment_start("top-0001795702925000.seg"),
            Some(1_795_702_925_000)
        );
        for bad in [
            "top-.seg",
            "top-12a.seg",
            "top-1.seg.tmp",
            "x-1.seg",
            "top--1.seg",
        ] {
            assert_eq!(segment_start(bad), None, "{bad}");
        }
    }

    #[test]
    fn written_intervals_read_back_with_rates_across_keys() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("store");
        let mut w = StoreWriter::create(&dir, StoreLimits::default()).unwrap();
        let n = KEY_EVERY as u64 * 2 + 5;
        let mut keys = 0;
        for t in 1..=n {
            let a = w.append(&snap(t, 5), t as i64 * 1000).unwrap();
            keys += a.key as u64;
        }
        assert_eq!(keys, 3);
        let mut st = Store::open(&dir).unwrap();
        let mut count = 0;
        st.window(0, n as i64, |v| {
            count += 1;
            let t = v.uptime.wall_time_s as u64;
            assert_eq!(v.tasks.len(), 5);
            if t > 1 {
                // utime grows by pid ticks per second at 100 Hz: pid percent of a CPU.
                let cpu = v.tasks[2].cpu_percent.unwrap();
                assert!((cpu - 3.0).abs() < 1e-6, "{t}: {cpu}");
            } else {
                assert!(v.tasks[2].cpu_percent.is_none());
            }
            true
        });
        assert_eq!(count, n);
        assert!(st.take_warnings().is_empty());
        let p = st.locate(70, 0).unwrap();
        assert_eq!(st.time_ms(p), 70_000);
        assert!(st.locate(0, 0).is_err());
        assert!(st.locate(n as i64 + 60, 0).is_err());
        // A second recorder is kept out while the first holds the lock.
        let e = StoreWriter::create(&dir, StoreLimits::default()).unwrap_err();
        assert!(e.to_string().contains("another"), "{e}");
    }
}
