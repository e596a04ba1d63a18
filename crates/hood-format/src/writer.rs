//! Appending chunks to a recording.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::FormatError;
use crate::header::{ChunkHeader, FileHeader, FileKind, FLAG_ZSTD, FORMAT_VERSION};
use crate::output::{OutputFile, Placed, Stale};

/// Largest payload a chunk may carry (before or after compression).
pub const MAX_PAYLOAD: u64 = 1 << 30;

/// Writes a recording: the file header at creation, then one chunk per call.
///
/// Every chunk is complete on disk once [`Writer::flush`] returns, so a reader (or a crash)
/// sees whole chunks only, plus at most one cut one at the end.
pub struct Writer<W: Write> {
    out: W,
    path: PathBuf,
    kind: FileKind,
    bytes: u64,
    level: i32,
    scratch: Vec<u8>,
    /// One zstd context for every chunk (making one per chunk cost a live recorder more
    /// than compressing: a context is about a megabyte to allocate and clear).
    compressor: Option<zstd::bulk::Compressor<'static>>,
    /// Set by the first failed write: the bytes of the whole chunks before it. Nothing is
    /// written after that (a later write that succeeds, e.g. once a full disk has room
    /// again, would put a chunk after a gap and damage the one cut short).
    broken: Option<u64>,
}

impl Writer<OutputFile> {
    /// Start a recording for `path` and write its file header. The file is created mode 0600
    /// (as perf does): recordings hold kernel addresses and other users' command lines.
    ///
    /// The recording is written beside `path` ([`OutputFile::file_path`], readable while it
    /// grows) and replaces `path` only at [`Writer::commit`] or [`Writer::put_in_place`]: a
    /// writer dropped before that (a run that could not start) leaves `path` as it was. A
    /// recorder killed meanwhile leaves its file beside `path`, and the next writer of `path`
    /// keeps it under a visible name ([`Writer::stale`]). `path` is checked as
    /// [`OutputFile::create`] checks it.
    pub fn create(path: &Path, kind: FileKind) -> Result<Self, FormatError> {
        Writer::new(OutputFile::create(path)?, path, kind)
    }

    /// Replace everything written so far with a file header and `body`, atomically for a
    /// reader of [`Writer::file_path`]: the new content is written to another new file,
    /// synced, then renamed over it. For recorders that write a snapshot every second (a
    /// reader, or a recorder killed meanwhile, sees the previous complete snapshot or this
    /// one). The bytes of the new content. An output written in place cannot be rewritten.
    pub fn rewrite(
        &mut self,
        body: impl FnOnce(&mut Writer<BufWriter<File>>) -> Result<(), FormatError>,
    ) -> Result<u64, FormatError> {
        let Some((part, part_path)) = self.out.new_part()? else {
            return Err(FormatError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(
                    "a file written in place (a pipe, /dev/null) cannot be rewritten",
                ),
            });
        };
        let written = (|| {
            let mut w = Writer::new(
                BufWriter::with_capacity(1 << 20, part),
                &self.path,
                self.kind,
            )?;
            w.level = self.level;
            w.compressor = self.compressor.take();
            body(&mut w)?;
            w.flush()?;
            self.compressor = w.compressor.take();
            let bytes = w.bytes;
            let file = w.out.into_inner().map_err(|e| FormatError::Io {
                path: self.path.clone(),
                source: e.into_error(),
            })?;
            Ok((file, bytes))
        })();
        match written {
            Ok((file, bytes)) => {
                self.out.adopt(file, &part_path)?;
                self.bytes = bytes;
                Ok(bytes)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&part_path);
                Err(e)
            }
        }
    }

    /// Put the complete file in place of its path (flushed, synced, renamed over it); the
    /// bytes written. Any failure leaves the path as it was.
    pub fn commit(self) -> Result<u64, FormatError> {
        let bytes = self.bytes;
        self.out.commit()?;
        Ok(bytes)
    }

    /// Put the recording in place as far as it was written, also after a failed write (see
    /// [`OutputFile::put_in_place`]).
    pub fn put_in_place(mut self) -> Placed {
        let cut = match self.broken {
            Some(len) => self.out.cut_at(len).err(),
            None => None,
        };
        let mut placed = self.out.put_in_place();
        if let Some(e) = cut {
            placed.error.get_or_insert(e);
        }
        placed
    }

    /// Flush and ask the kernel to write the file to disk.
    pub fn sync(&mut self) -> Result<(), FormatError> {
        self.out.sync()
    }

    /// Where the recording is until it is put in place (see [`OutputFile::file_path`]).
    pub fn file_path(&self) -> &Path {
        self.out.file_path()
    }

    /// Whether the output is written in place (see [`OutputFile::in_place_output`]).
    pub fn in_place_output(&self) -> bool {
        self.out.in_place_output()
    }

    /// Files that killed writers of the same output left, and what was done with them.
    pub fn stale(&self) -> &[Stale] {
        self.out.stale()
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
            kind,
            bytes: bytes.len() as u64,
            level: 1,
            scratch: Vec::new(),
            compressor: None,
            broken: None,
        })
    }

    /// zstd level for compressed chunks (default 1: fast enough for live recording).
    pub fn set_compression_level(&mut self, level: i32) {
        self.level = level;
        self.compressor = None;
    }

    /// Append one chunk. With `compress`, the payload is zstd-compressed unless that does not
    /// make it smaller.
    pub fn write_chunk(
        &mut self,
        tag: u32,
        payload: &[u8],
        compress: bool,
    ) -> Result<(), FormatError> {
        self.whole()?;
        let raw_len = payload.len() as u64;
        if raw_len > MAX_PAYLOAD {
            return Err(FormatError::TooLarge(raw_len));
        }
        let mut flags = 0;
        let mut stored: &[u8] = payload;
        if compress && !payload.is_empty() {
            let bound = zstd::zstd_safe::compress_bound(payload.len());
            if self.scratch.len() < bound {
                self.scratch.resize(bound, 0);
            }
            if self.compressor.is_none() {
                self.compressor = zstd::bulk::Compressor::new(self.level).ok();
            }
            let done = match self.compressor.as_mut() {
                Some(c) => c.compress_to_buffer(payload, &mut self.scratch[..bound]),
                None => {
                    zstd::bulk::compress_to_buffer(payload, &mut self.scratch[..bound], self.level)
                }
            };
            if let Ok(n) = done {
                if n < payload.len() {
                    flags |= FLAG_ZSTD;
                    stored = &self.scratch[..n];
                }
            }
        }
        let header = ChunkHeader::of(tag, flags, raw_len, stored);
        let hb = header.encode();
        let written = self
            .out
            .write_all(&hb)
            .and_then(|()| self.out.write_all(stored));
        if let Err(source) = written {
            self.broken = Some(self.bytes);
            return Err(FormatError::Io {
                path: self.path.clone(),
                source,
            });
        }
        self.bytes += (hb.len() + stored.len()) as u64;
        Ok(())
    }

    /// Push buffered bytes to the file.
    pub fn flush(&mut self) -> Result<(), FormatError> {
        self.whole()?;
        self.out.flush().map_err(|source| {
            self.broken = Some(self.bytes);
            FormatError::Io {
                path: self.path.clone(),
                source,
            }
        })
    }

    /// Refuse to write after a failed write.
    fn whole(&self) -> Result<(), FormatError> {
        match self.broken {
            None => Ok(()),
            Some(_) => Err(FormatError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(
                    "an earlier write to this file failed, so nothing more is written to it",
                ),
            }),
        }
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
