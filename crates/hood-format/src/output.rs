//! Output files: every file a hood command writes with `-o` (recordings and reports) is
//! written to a new file beside its target and put in place whole at the end, so an existing
//! file is only ever replaced by a complete new one.
//!
//! The rules, in the order they are checked:
//! - `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N` name a descriptor the caller
//!   handed over (a shell redirection or `>(cmd)`): written in place through it;
//! - `/dev/null` is written in place;
//! - a symbolic link is followed only if the caller or root owns it;
//! - a directory, a named pipe, a device or a socket is refused, and so is another user's file
//!   (hood runs as root: a FIFO planted at root's `-o` path in /tmp would read the recording);
//! - otherwise a lock `.NAME.lock` beside the target is taken (a second writer of the same path
//!   is refused while the first runs), files left beside it by writers that were killed are
//!   kept under a visible name (recordings) or removed (partial reports), and the bytes go to
//!   `.NAME.PID-….tmp` (created exclusively, mode 0600), renamed over the target by
//!   [`OutputFile::commit`]. Dropped without a commit, the temporary file is removed and the
//!   target is left as it was.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::OFlags;

use crate::error::FormatError;
use crate::header::{FileHeader, FileKind, FILE_HEADER_LEN};

/// A file being written for a command's `-o` (or its default output path).
pub struct OutputFile {
    out: BufWriter<File>,
    /// The path as the user gave it (messages).
    path: PathBuf,
    /// Where the bytes go until the commit, when not written in place.
    beside: Option<Beside>,
    stale: Vec<Stale>,
}

/// A temporary file beside its target, and the lock on that target.
struct Beside {
    temp: PathBuf,
    target: PathBuf,
    _lock: Lock,
}

/// What was put in place by [`OutputFile::put_in_place`].
#[derive(Debug)]
pub struct Placed {
    /// Where the file is now: the target, or (when the rename failed) the temporary file.
    pub at: PathBuf,
    /// The first failure while flushing, syncing or renaming.
    pub error: Option<FormatError>,
}

/// A file that a hood killed while writing the same output left beside it, and what was done
/// with it (when the next writer of that output started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stale {
    /// A recording cut short: readable, so kept under a visible name.
    Kept {
        /// The temporary file it was.
        from: PathBuf,
        /// Its new name.
        to: PathBuf,
        /// The killed writer.
        pid: u32,
        /// What it holds.
        kind: FileKind,
        /// The output it was written for.
        target: PathBuf,
    },
    /// A part of a report or of a snapshot: nothing to read, so removed.
    Removed {
        /// The file removed.
        path: PathBuf,
        /// The killed writer.
        pid: u32,
        /// The output it was written for.
        target: PathBuf,
    },
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stale::Kept {
                from,
                to,
                pid,
                kind,
                target,
            } => write!(
                f,
                "kept {} as {}: the {kind} recording of a hood (pid {pid}) killed while writing {}; read it with `{}`",
                from.display(),
                to.display(),
                target.display(),
                read_command(*kind, to)
            ),
            Stale::Removed { path, pid, target } => write!(
                f,
                "removed {}, a partial file left by a hood (pid {pid}) killed while writing {}",
                path.display(),
                target.display()
            ),
        }
    }
}

/// The command line that reads a recording of `kind` at `path`.
pub fn read_command(kind: FileKind, path: &Path) -> String {
    match kind {
        FileKind::Profile | FileKind::Calls | FileKind::Trace => {
            format!("{} -i {}", kind.reader_command(), path.display())
        }
        other => format!("{} {}", other.reader_command(), path.display()),
    }
}

/// A size as every recorder's summary line prints it: `532 bytes`, `1.5 KiB`, `12.0 MiB`,
/// `3.4 GiB` (powers of 1024, as `--max-size` and `--ring-kb` count).
pub fn size_words(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match bytes {
        n if n >= GIB => format!("{:.1} GiB", n as f64 / GIB as f64),
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n if n >= KIB => format!("{:.1} KiB", n as f64 / KIB as f64),
        1 => "1 byte".to_string(),
        n => format!("{n} bytes"),
    }
}

/// The one summary line of every recorder (`record`, `stop`, `calls run/record/get`, `trace
/// record`): `wrote FILE (SIZE): WHAT; read it with `COMMAND``, the caller adding its
/// `hood: `.
pub fn wrote_line(path: &Path, bytes: u64, kind: FileKind, what: &str) -> String {
    format!(
        "wrote {} ({}): {what}; read it with `{}`",
        path.display(),
        size_words(bytes),
        read_command(kind, path)
    )
}

impl OutputFile {
    /// Start writing `path` (see the module's rules).
    pub fn create(path: &Path) -> Result<Self, FormatError> {
        let io = |source| FormatError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(file) = inherited(path)? {
            return Ok(OutputFile::in_place(file, path));
        }
        let target = resolve_output(path)?;
        match std::fs::symlink_metadata(&target) {
            Ok(md) if md.is_dir() => {
                return Err(io(std::io::Error::from(std::io::ErrorKind::IsADirectory)))
            }
            Ok(md) if is_dev_null(&md) => {
                let file = OpenOptions::new()
                    .write(true)
                    .custom_flags(OFlags::NOFOLLOW.bits() as i32)
                    .open(&target)
                    .map_err(io)?;
                return Ok(OutputFile::in_place(file, path));
            }
            Ok(md) if !md.is_file() => {
                return Err(FormatError::NotRegularOutput {
                    path: path.to_owned(),
                    what: file_type_words(&md),
                })
            }
            Ok(md) if md.uid() != euid() => {
                return Err(FormatError::ForeignOutput {
                    path: path.to_owned(),
                    owner: md.uid(),
                })
            }
            _ => {}
        }
        let lock = Lock::take(&target, path)?;
        let stale = clear_stale(&target);
        let (file, temp) = create_beside(&target, "tmp").map_err(io)?;
        Ok(OutputFile {
            out: BufWriter::with_capacity(1 << 16, file),
            path: path.to_owned(),
            beside: Some(Beside {
                temp,
                target,
                _lock: lock,
            }),
            stale,
        })
    }

    fn in_place(file: File, path: &Path) -> Self {
        OutputFile {
            out: BufWriter::with_capacity(1 << 16, file),
            path: path.to_owned(),
            beside: None,
            stale: Vec::new(),
        }
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the bytes are until the commit: the temporary file, or the path itself when it
    /// is written in place. A reader of the output so far (the recorder's `p` key) reads this.
    pub fn file_path(&self) -> &Path {
        self.beside.as_ref().map_or(&self.path, |b| &b.temp)
    }

    /// Whether the output is written in place (a descriptor handed over, `/dev/null`): it
    /// cannot be rewritten, and a commit only flushes it.
    pub fn in_place_output(&self) -> bool {
        self.beside.is_none()
    }

    /// Files of killed writers of this output, found when it was opened.
    pub fn stale(&self) -> &[Stale] {
        &self.stale
    }

    /// Flush, sync and put the file in place of its target. Any failure leaves the target as
    /// it was and removes the temporary file: only a complete file replaces the old one.
    pub fn commit(mut self) -> Result<(), FormatError> {
        let path = self.path.clone();
        let io = |source| FormatError::Io {
            path: path.clone(),
            source,
        };
        self.out.flush().map_err(io)?;
        let Some(b) = self.beside.take() else {
            return Ok(());
        };
        let done = self
            .out
            .get_ref()
            .sync_data()
            .and_then(|()| std::fs::rename(&b.temp, &b.target));
        if let Err(e) = done {
            let _ = std::fs::remove_file(&b.temp);
            return Err(io(e));
        }
        sync_dir(&b.target);
        Ok(())
    }

    /// Put a recording in place as far as it was written, also after a failed write (a full
    /// disk): a recording cut short still replaces the old one, as a killed recorder's would
    /// be kept. When even the rename fails, the temporary file stays and [`Placed::at`] names
    /// it.
    pub fn put_in_place(mut self) -> Placed {
        let flushed = self.out.flush();
        if flushed.is_err() {
            // What the buffer still holds must never reach the file: the lock's removal
            // below frees space, and a later flush (the buffer's drop) would append it after
            // bytes that never made it, turning a cut file into a damaged one.
            self.drop_buffer();
        }
        let io = |source| FormatError::Io {
            path: self.path.clone(),
            source,
        };
        let mut error = flushed.err().map(io);
        let Some(b) = self.beside.take() else {
            return Placed {
                at: self.path.clone(),
                error,
            };
        };
        if let Err(e) = self.out.get_ref().sync_data() {
            error.get_or_insert(io(e));
        }
        match std::fs::rename(&b.temp, &b.target) {
            Ok(()) => {
                sync_dir(&b.target);
                Placed {
                    at: self.path.clone(),
                    error,
                }
            }
            Err(e) => {
                let at = b.temp.clone();
                // The temporary file is kept: dropping `b` only releases the lock.
                error.get_or_insert(FormatError::NotPlaced {
                    path: self.path.clone(),
                    temp: at.clone(),
                    source: e,
                });
                Placed { at, error }
            }
        }
    }

    /// A new, empty file in the target's directory that is to replace everything written so
    /// far ([`OutputFile::adopt`]); None when written in place.
    pub(crate) fn new_part(&self) -> Result<Option<(File, PathBuf)>, FormatError> {
        let Some(b) = &self.beside else {
            return Ok(None);
        };
        create_beside(&b.target, "part")
            .map(Some)
            .map_err(|source| FormatError::Io {
                path: self.path.clone(),
                source,
            })
    }

    /// Make the whole, synced `part` the file written from now on, renamed over the
    /// temporary file so that a reader of it sees the old or the new content, never a mix.
    pub(crate) fn adopt(&mut self, part: File, part_path: &Path) -> Result<(), FormatError> {
        let io = |source| FormatError::Io {
            path: self.path.clone(),
            source,
        };
        let Some(b) = &self.beside else {
            return Ok(());
        };
        let done = part
            .sync_data()
            .and_then(|()| std::fs::rename(part_path, &b.temp));
        if let Err(e) = done {
            let _ = std::fs::remove_file(part_path);
            return Err(io(e));
        }
        // What the old file's buffer still held belongs to the replaced content.
        let old = std::mem::replace(&mut self.out, BufWriter::with_capacity(1 << 16, part));
        let _ = old.into_parts();
        Ok(())
    }

    /// Forget what the buffer holds and cut the file to at most `len` bytes: after a failed
    /// write, the file then ends at the last whole chunk (or inside an earlier one, if a
    /// buffered part of it never reached the disk), never with bytes after a gap.
    pub(crate) fn cut_at(&mut self, len: u64) -> Result<(), FormatError> {
        self.drop_buffer();
        let file = self.out.get_ref();
        let now = file.metadata().map_err(|source| FormatError::Io {
            path: self.path.clone(),
            source,
        })?;
        if now.is_file() && now.len() > len {
            file.set_len(len).map_err(|source| FormatError::Io {
                path: self.path.clone(),
                source,
            })?;
        }
        Ok(())
    }

    /// Drop the buffered bytes without writing them (a `BufWriter` flushes on drop).
    fn drop_buffer(&mut self) {
        let Ok(dup) = self.out.get_ref().try_clone() else {
            return;
        };
        let old = std::mem::replace(&mut self.out, BufWriter::with_capacity(1 << 16, dup));
        let _ = old.into_parts();
    }

    /// Flush and ask the kernel to write the file to disk.
    pub fn sync(&mut self) -> Result<(), FormatError> {
        let io = |source| FormatError::Io {
            path: self.path.clone(),
            source,
        };
        self.out.flush().map_err(io)?;
        if self.beside.is_some() {
            self.out.get_ref().sync_data().map_err(io)?;
        }
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.out.write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(b) = self.beside.take() {
            let _ = std::fs::remove_file(&b.temp);
        }
    }
}

/// The recordings that writers of `path` killed while writing left beside it (not yet kept
/// under a visible name by a later writer), for a reader to point to.
pub fn left_by_killed_writers(path: &Path) -> Vec<PathBuf> {
    let target = resolve_output(path).unwrap_or_else(|_| path.to_owned());
    temps_of(&target)
        .into_iter()
        .filter(|t| !t.partial && !running(t.pid) && recording_kind(&t.path).is_some())
        .map(|t| t.path)
        .collect()
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn running(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A descriptor the caller handed over, named by `path`: standard output or error (the
/// descriptor itself, duplicated), or `/dev/fd/N` (reopened: a shell's `>(cmd)` pipe).
fn inherited(path: &Path) -> Result<Option<File>, FormatError> {
    use std::os::fd::AsFd;
    let Some(s) = path.to_str() else {
        return Ok(None);
    };
    let n: Option<u32> = match s {
        "/dev/stdout" | "/proc/self/fd/1" | "/dev/fd/1" => Some(1),
        "/dev/stderr" | "/proc/self/fd/2" | "/dev/fd/2" => Some(2),
        _ => s
            .strip_prefix("/dev/fd/")
            .or_else(|| s.strip_prefix("/proc/self/fd/"))
            .and_then(|n| n.parse().ok()),
    };
    let Some(n) = n else {
        return Ok(None);
    };
    let io = |source| FormatError::Io {
        path: path.to_owned(),
        source,
    };
    let dup = match n {
        1 => std::io::stdout().as_fd().try_clone_to_owned(),
        2 => std::io::stderr().as_fd().try_clone_to_owned(),
        _ => {
            // Opening a pipe through /proc reaches the same pipe; it has a reader already,
            // so the open does not wait, and O_NONBLOCK makes sure of it.
            let f = OpenOptions::new()
                .write(true)
                .custom_flags(OFlags::NONBLOCK.bits() as i32)
                .open(format!("/proc/self/fd/{n}"))
                .map_err(io)?;
            rustix::fs::fcntl_setfl(&f, OFlags::empty()).map_err(|e| io(e.into()))?;
            return Ok(Some(f));
        }
    };
    dup.map(|fd| Some(File::from(fd))).map_err(io)
}

fn is_dev_null(md: &std::fs::Metadata) -> bool {
    md.file_type().is_char_device() && md.rdev() == rustix::fs::makedev(1, 3)
}

fn file_type_words(md: &std::fs::Metadata) -> &'static str {
    let t = md.file_type();
    if t.is_fifo() {
        "a named pipe (FIFO)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The file `path` stands for: `path` itself unless it is a symbolic link owned by the caller
/// or root, which is followed. Another user's link is refused: in a shared directory such as
/// /tmp it could point anywhere.
fn resolve_output(path: &Path) -> Result<PathBuf, FormatError> {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_symlink() => {
            let me = euid();
            if md.uid() != me && md.uid() != 0 {
                return Err(FormatError::ForeignLink {
                    path: path.to_owned(),
                    owner: md.uid(),
                });
            }
            match std::fs::canonicalize(path) {
                Ok(p) => Ok(p),
                // A dangling link of ours: create the file it names.
                Err(_) => {
                    let dest = std::fs::read_link(path).map_err(|source| FormatError::Io {
                        path: path.to_owned(),
                        source,
                    })?;
                    Ok(path.parent().unwrap_or(Path::new(".")).join(dest))
                }
            }
        }
        _ => Ok(path.to_owned()),
    }
}

/// The directory and file name of `target`, as the files beside it use them.
fn dir_and_name(target: &Path) -> (&Path, String) {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "hood".into());
    (dir, name)
}

/// A new file (mode 0600) `.NAME.PID-SEQ-NANOS.EXT` in the directory of `target`, created
/// exclusively (nothing planted under that name is followed).
fn create_beside(target: &Path, ext: &str) -> std::io::Result<(File, PathBuf)> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let (_, name) = dir_and_name(target);
    loop {
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let temp = target.with_file_name(format!(
            ".{name}.{}-{seq}-{nanos}.{ext}",
            std::process::id()
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
        {
            Ok(f) => return Ok((f, temp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && seq % 64 != 63 => {}
            Err(e) => return Err(e),
        }
    }
}

/// Best effort: the rename reaches the disk with the directory.
fn sync_dir(target: &Path) {
    let (dir, _) = dir_and_name(target);
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// A lock on one output path, held from the start of a writer to its commit: `.NAME.lock`
/// beside it, created 0600, locked with flock, holding the writer's pid, removed when
/// released.
struct Lock {
    path: PathBuf,
    file: File,
}

impl Lock {
    fn take(target: &Path, shown: &Path) -> Result<Lock, FormatError> {
        let (_, name) = dir_and_name(target);
        let path = target.with_file_name(format!(".{name}.lock"));
        let bad = |what: String| FormatError::BadLock {
            path: path.clone(),
            output: shown.to_owned(),
            what,
        };
        // A writer releasing the lock removes the file: if the path names another file by
        // the time the lock is held, take the lock again (a few times at most).
        for _ in 0..8 {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC).bits() as i32)
                .open(&path)
                .map_err(|e| match e.raw_os_error() {
                    Some(40) => bad("it is a symbolic link".into()), // ELOOP
                    _ => FormatError::Io {
                        path: path.clone(),
                        source: e,
                    },
                })?;
            let md = file.metadata().map_err(|source| FormatError::Io {
                path: path.clone(),
                source,
            })?;
            if !md.is_file() {
                return Err(bad(file_type_words(&md).into()));
            }
            if md.uid() != euid() {
                return Err(bad(format!("it is owned by uid {}, not by you", md.uid())));
            }
            if md.nlink() != 1 {
                return Err(bad("it has other links".into()));
            }
            match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let mut text = String::new();
                    let _ = (&file).take(32).read_to_string(&mut text);
                    return Err(FormatError::Busy {
                        path: shown.to_owned(),
                        pid: text.trim().parse().ok(),
                    });
                }
                Err(e) => {
                    return Err(FormatError::Io {
                        path: path.clone(),
                        source: e.into(),
                    })
                }
            }
            let same = std::fs::symlink_metadata(&path)
                .is_ok_and(|now| now.dev() == md.dev() && now.ino() == md.ino());
            if !same {
                continue;
            }
            let pid = format!("{}\n", std::process::id());
            let _ = file.set_len(0);
            let _ = file.write_all_at(pid.as_bytes(), 0);
            return Ok(Lock { path, file });
        }
        Err(bad("it keeps being replaced".into()))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while held, and only if it is still this lock's file: a writer waiting on
        // the same file sees it gone and takes a new one.
        if let (Ok(now), Ok(mine)) = (std::fs::symlink_metadata(&self.path), self.file.metadata()) {
            if now.dev() == mine.dev() && now.ino() == mine.ino() {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// A file of a writer of some output, found beside it.
struct Temp {
    path: PathBuf,
    pid: u32,
    /// `.part`: a snapshot or report being assembled, never readable on its own.
    partial: bool,
}

/// The caller's own regular files `.NAME.PID-….tmp`/`.part` beside `target`, of other
/// processes than this one.
fn temps_of(target: &Path) -> Vec<Temp> {
    let (dir, name) = dir_and_name(target);
    let prefix = format!(".{name}.");
    let me = euid();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let file = e.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let (rest, partial) = match (rest.strip_suffix(".tmp"), rest.strip_suffix(".part")) {
            (Some(r), _) => (r, false),
            (None, Some(r)) => (r, true),
            _ => continue,
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let ours = e
            .path()
            .symlink_metadata()
            .is_ok_and(|m| m.is_file() && m.uid() == me);
        if ours && pid != std::process::id() {
            out.push(Temp {
                path: target.with_file_name(&file),
                pid,
                partial,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The kind of the hood recording at `path` if it holds one with at least one chunk (a file
/// of a header alone holds nothing to read).
fn recording_kind(path: &Path) -> Option<FileKind> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .ok()?;
    let md = f.metadata().ok()?;
    if !md.is_file() || md.len() <= FILE_HEADER_LEN as u64 {
        return None;
    }
    let mut head = [0u8; FILE_HEADER_LEN];
    f.read_exact(&mut head).ok()?;
    FileHeader::decode(&head).ok().map(|h| h.kind)
}

/// Called with the lock held: what writers of `target` that were killed left beside it.
/// Recordings are kept as `NAME.killed-PID` (never over an existing file), everything else is
/// removed. Files of processes still running are left alone (a hood without this lock).
fn clear_stale(target: &Path) -> Vec<Stale> {
    let (_, name) = dir_and_name(target);
    let mut done = Vec::new();
    for t in temps_of(target) {
        if running(t.pid) {
            continue;
        }
        match (t.partial, recording_kind(&t.path)) {
            (false, Some(kind)) => {
                for n in 0..100 {
                    let to = target.with_file_name(match n {
                        0 => format!("{name}.killed-{}", t.pid),
                        n => format!("{name}.killed-{}.{n}", t.pid),
                    });
                    match rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        &t.path,
                        rustix::fs::CWD,
                        &to,
                        rustix::fs::RenameFlags::NOREPLACE,
                    ) {
                        Ok(()) => {
                            done.push(Stale::Kept {
                                from: t.path.clone(),
                                to,
                                pid: t.pid,
                                kind,
                                target: target.to_owned(),
                            });
                            break;
                        }
                        Err(rustix::io::Errno::EXIST) => continue,
                        Err(_) => break,
                    }
                }
            }
            _ => {
                if std::fs::remove_file(&t.path).is_ok() {
                    done.push(Stale::Removed {
                        path: t.path,
                        pid: t.pid,
                        target: target.to_owned(),
                    });
                }
            }
        }
    }
    done
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    #[test]
    fn sizes_are_said_in_the_unit_that_fits() {
        assert_eq!(size_words(0), "0 bytes");
        assert_eq!(size_words(1), "1 byte");
        assert_eq!(size_words(1023), "1023 bytes");
        assert_eq!(size_words(1536), "1.5 KiB");
        assert_eq!(size_words(12 << 20), "12.0 MiB");
        assert_eq!(size_words(3 << 30), "3.0 GiB");
    }

    #[test]
    fn the_summary_line_names_the_file_its_size_and_its_reader() {
        let p = Path::new("t.data");
        assert_eq!(
            wrote_line(p, 2048, FileKind::Trace, "3 events"),
            "wrote t.data (2.0 KiB): 3 events; read it with `hood trace report -i t.data`"
        );
        assert_eq!(
            read_command(FileKind::Calls, p),
            "hood calls report -i t.data"
        );
    }
}
