//! Appending chunks to a recording.

use std::fs::File;
use std::io::{BufWriter, Write};
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
    /// Create (or truncate) `path` and write the file header.
    pub fn create(path: &Path, kind: FileKind) -> Result<Self, FormatError> {
        let file = File::create(path).map_err(|source| FormatError::Io {
            path: path.to_owned(),
            source,
        })?;
        Writer::new(BufWriter::with_capacity(1 << 20, file), path, kind)
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
