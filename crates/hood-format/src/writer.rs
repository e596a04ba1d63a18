//! Appending chunks to a recording.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::FormatError;
use crate::header::{ChunkHeader, FileHeader, FileKind, FLAG_ZSTD, FORMAT_VERSION};

/// Largest payload a chunk may carry (before or after compression).
pub const MAX_PAYLOAD: u64 = 1 << 30;

/// Writes a recording: the file header at creation, then one chunk per call.
///
/// Every chunk is complete on disk once [`Writer::flush`] returns, so a reader (or a crash)
/// sees whole chunks only, plus at most one cut one at the end.
pub struct Writer<W: Write> {
    out: W,
    path: PathBuf,
    bytes: u64,
    level: i32,
    scratch: Vec<u8>,
}

impl Writer<BufWriter<File>> {
    /// Create `path` and write the file header. The file is created mode 0600 (as perf
    /// does): recordings hold kernel addresses and other users' command lines.
    ///
    /// A new or existing regular file is never truncated in place: the header is written to a
    /// new file in the same directory (created exclusively, so nothing planted under that
    /// name is followed), synced and renamed over `path`. A crash therefore leaves either the
    /// old file or a valid new recording, never a half-replaced one. A `path` naming a pipe,
    /// terminal or other special file (`/dev/null`, `>(cmd)`) is written in place; a symbolic
    /// link is followed only if the caller or root owns it (another user's link is refused).
    pub fn create(path: &Path, kind: FileKind) -> Result<Self, FormatError> {
        Self::place(path, kind, |_| Ok(()))
    }

    /// Write a whole file with `body` (after the file header) and only then put it in place
    /// of `path`, so that `path` always holds a complete file: the old one until the new one
    /// is complete, synced and renamed over it. For files rewritten while a recorder runs
    /// (a snapshot each second), whose reader must never see a half-written one. Returns the
    /// bytes written. `path` is resolved as in [`Writer::create`]; a special file (a pipe,
    /// `/dev/stdout`) is written in place.
    pub fn replace_whole(
        path: &Path,
        kind: FileKind,
        body: impl FnOnce(&mut Self) -> Result<(), FormatError>,
    ) -> Result<u64, FormatError> {
        Self::place(path, kind, body).map(|w| w.bytes)
    }

    /// The file header and `body` written to a new file beside `path`, synced and renamed
    /// over it (a special file is written in place); the writer, to append more.
    fn place(
        path: &Path,
        kind: FileKind,
        body: impl FnOnce(&mut Self) -> Result<(), FormatError>,
    ) -> Result<Self, FormatError> {
        let (file, temp, target) = open_output(path)?;
        let Some(temp) = temp else {
            let mut w = Writer::new(BufWriter::with_capacity(1 << 20, file), path, kind)?;
            body(&mut w)?;
            w.flush()?;
            return Ok(w);
        };
        let placed =
            Writer::new(BufWriter::with_capacity(1 << 20, file), path, kind).and_then(|mut w| {
                body(&mut w)?;
                w.sync()?;
                std::fs::rename(&temp, &target).map_err(|source| FormatError::Io {
                    path: path.to_owned(),
                    source,
                })?;
                Ok(w)
            });
        if placed.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        placed
    }

    /// Flush and ask the kernel to write the file to disk.
    pub fn sync(&mut self) -> Result<(), FormatError> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(|source| FormatError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

impl<W: Write> Writer<W> {
    /// Wrap any writer; `path` is only used in error messages.
    pub fn new(mut out: W, path: &Path, kind: FileKind) -> Result<Self, FormatError> {
        let created_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let header = FileHeader {
            version: FORMAT_VERSION,
            kind,
            created_unix_ns,
        };
        let bytes = header.encode();
        out.write_all(&bytes).map_err(|source| FormatError::Io {
            path: path.to_owned(),
            source,
        })?;
        Ok(Writer {
            out,
            path: path.to_owned(),
            bytes: bytes.len() as u64,
            level: 1,
            scratch: Vec::new(),
        })
    }

    /// zstd level for compressed chunks (default 1: fast enough for live recording).
    pub fn set_compression_level(&mut self, level: i32) {
        self.level = level;
    }

    /// Append one chunk. With `compress`, the payload is zstd-compressed unless that does not
    /// make it smaller.
    pub fn write_chunk(
        &mut self,
        tag: u32,
        payload: &[u8],
        compress: bool,
    ) -> Result<(), FormatError> {
        let raw_len = payload.len() as u64;
        if raw_len > MAX_PAYLOAD {
            return Err(FormatError::TooLarge(raw_len));
        }
        let mut flags = 0;
        let mut stored: &[u8] = payload;
        if compress && !payload.is_empty() {
            let bound = zstd::zstd_safe::compress_bound(payload.len());
            self.scratch.resize(bound, 0);
            if let Ok(n) =
                zstd::bulk::compress_to_buffer(payload, &mut self.scratch[..], self.level)
            {
                if n < payload.len() {
                    flags |= FLAG_ZSTD;
                    stored = &self.scratch[..n];
                }
            }
        }
        let header = ChunkHeader {
            tag,
            flags,
            stored_len: stored.len() as u64,
            raw_len,
            payload_crc: crc32c::crc32c(stored),
        };
        let hb = header.encode();
        let io = |source| FormatError::Io {
            path: self.path.clone(),
            source,
        };
        self.out.write_all(&hb).map_err(io)?;
        self.out
            .write_all(stored)
            .map_err(|source| FormatError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.bytes += (hb.len() + stored.len()) as u64;
        Ok(())
    }

    /// Push buffered bytes to the file.
    pub fn flush(&mut self) -> Result<(), FormatError> {
        self.out.flush().map_err(|source| FormatError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Bytes written so far (headers included).
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// The path given at creation.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush and return the inner writer.
    pub fn finish(mut self) -> Result<W, FormatError> {
        self.flush()?;
        Ok(self.out)
    }
}

/// Open the output `path` stands for: a special file (pipe, terminal, `/dev/null`) in place, a
/// directory refused, anything else as a new exclusive 0600 file beside it to be renamed over
/// it. Returns the file, the temporary path (None: written in place) and the target.
fn open_output(path: &Path) -> Result<(File, Option<PathBuf>, PathBuf), FormatError> {
    let io = |source| FormatError::Io {
        path: path.to_owned(),
        source,
    };
    let target = resolve_output(path)?;
    match std::fs::metadata(&target) {
        Ok(md) if md.is_dir() => Err(io(std::io::Error::from(std::io::ErrorKind::IsADirectory))),
        Ok(md) if !md.is_file() => {
            let file = OpenOptions::new().write(true).open(&target).map_err(io)?;
            Ok((file, None, target))
        }
        _ => {
            let (file, temp) = create_temp_beside(&target).map_err(io)?;
            Ok((file, Some(temp), target))
        }
    }
}

/// The file `path` stands for: `path` itself unless it is a symbolic link owned by the caller
/// or root (`/dev/stdout`), which is followed. Another user's link is refused: in a shared
/// directory such as /tmp it could point anywhere.
fn resolve_output(path: &Path) -> Result<PathBuf, FormatError> {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_symlink() => {
            let me = rustix::process::geteuid().as_raw();
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

/// The directory and file name of `target`, as temporary files beside it use them.
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

impl Writer<BufWriter<File>> {
    /// Remove the temporary files a writer of `path` left beside it when it was killed while
    /// writing (`.NAME.PID-….tmp` of a process that is gone, regular files of the caller's
    /// own); the paths removed, for the caller to name.
    pub fn remove_stale_temps(path: &Path) -> Vec<PathBuf> {
        let (dir, name) = dir_and_name(path);
        let prefix = format!(".{name}.");
        let me = rustix::process::geteuid().as_raw();
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for e in rd.flatten() {
            let file = e.file_name();
            let Some(rest) = file
                .to_str()
                .and_then(|f| f.strip_prefix(&prefix))
                .and_then(|r| r.strip_suffix(".tmp"))
            else {
                continue;
            };
            let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
                continue;
            };
            let ours = e
                .path()
                .symlink_metadata()
                .is_ok_and(|m| m.is_file() && m.uid() == me);
            if ours
                && !Path::new(&format!("/proc/{pid}")).exists()
                && std::fs::remove_file(e.path()).is_ok()
            {
                removed.push(e.path());
            }
        }
        removed
    }
}

/// A new file (mode 0600) in the directory of `target`, created exclusively.
fn create_temp_beside(target: &Path) -> std::io::Result<(File, PathBuf)> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let (dir, name) = dir_and_name(target);
    loop {
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let temp = dir.join(format!(".{name}.{}-{seq}-{nanos}.tmp", std::process::id()));
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

/// A report's output file (text, JSON), created like recordings: mode 0600, written to a new
/// file beside the target (created exclusively, so nothing planted under that name is
/// followed) and renamed over it by [`OutputFile::commit`], so a failed or interrupted report
/// leaves the old file (or none), never half a report. Another user's symbolic link at the
/// path is refused; a pipe or other special file (`/dev/stdout`) is written in place.
pub struct OutputFile {
    out: BufWriter<File>,
    temp: Option<PathBuf>,
    target: PathBuf,
    path: PathBuf,
}

impl OutputFile {
    /// Start writing `path`.
    pub fn create(path: &Path) -> Result<Self, FormatError> {
        let (file, temp, target) = open_output(path)?;
        Ok(OutputFile {
            out: BufWriter::with_capacity(1 << 16, file),
            temp,
            target,
            path: path.to_owned(),
        })
    }

    /// Flush and put the file in place.
    pub fn commit(mut self) -> Result<(), FormatError> {
        let io = |source| FormatError::Io {
            path: self.path.clone(),
            source,
        };
        self.out.flush().map_err(io)?;
        if let Some(temp) = self.temp.take() {
            if let Err(e) = std::fs::rename(&temp, &self.target) {
                let _ = std::fs::remove_file(&temp);
                return Err(io(e));
            }
        }
        Ok(())
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}
