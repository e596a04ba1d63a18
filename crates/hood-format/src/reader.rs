//! Reading chunks back, surviving truncation and naming the offset of any damage.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::FormatError;
use crate::header::{
    ChunkHeader, FileHeader, FileKind, CHUNK_HEADER_LEN, FILE_HEADER_LEN, FLAG_ZSTD, FORMAT_VERSION,
};
use crate::writer::MAX_PAYLOAD;

/// Chunk payloads handed out by every reader of this process (checked, and decompressed where
/// stored compressed); a payload [`Reader::defer`] left in the file counts once it is read.
static PAYLOADS_READ: AtomicU64 = AtomicU64::new(0);

/// How many chunk payloads the readers of this process have read (checked, and decompressed
/// where stored compressed) so far: what `HOOD_TIMING` reports, so that a file read twice
/// shows.
pub fn payloads_read() -> u64 {
    PAYLOADS_READ.load(Ordering::Relaxed)
}

/// One chunk, payload decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// What the payload is (see [`crate::tags`]).
    pub tag: u32,
    /// Byte offset of the chunk header in the file.
    pub offset: u64,
    /// The payload.
    pub data: Vec<u8>,
}

/// Where a chunk read by [`Reader::next_chunk_into`] sits and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo {
    /// What the payload is (see [`crate::tags`]).
    pub tag: u32,
    /// Byte offset of the chunk header in the file.
    pub offset: u64,
    /// Set when the payload was left in the file (a tag given to [`Reader::defer`]): the
    /// payload is empty, and [`Reader::read_deferred`] reads it.
    pub deferred: Option<Deferred>,
}

/// Where a payload left in the file by [`Reader::defer`] is, and what it must check out as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deferred {
    /// Byte offset of the chunk header (for messages).
    offset: u64,
    /// Byte offset of the payload.
    at: u64,
    stored_len: u64,
    raw_len: u64,
    crc: u32,
    zstd: bool,
}

/// Input a reader can also skip through.
trait Input: Read + Seek + Send {}
impl<T: Read + Seek + Send> Input for T {}

/// Reads a recording chunk by chunk.
pub struct Reader {
    input: Box<dyn Input>,
    /// Stored (compressed) bytes of the chunk being read, reused from chunk to chunk.
    stored: Vec<u8>,
    /// One zstd context for the whole file (created on the first compressed chunk).
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    path: PathBuf,
    header: FileHeader,
    len: u64,
    pos: u64,
    done: bool,
    chunks_read: u64,
    warnings: Vec<String>,
    /// Tags whose payloads are left in the file until asked for.
    lazy: Vec<u32>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("pos", &self.pos)
            .finish()
    }
}

impl Reader {
    /// Open `path` (a regular file, see [`crate::untrusted`]) and check its header.
    pub fn open(path: &Path) -> Result<Self, FormatError> {
        let io = |source| FormatError::Io {
            path: path.to_owned(),
            source,
        };
        let file = crate::untrusted::open(path, crate::untrusted::Policy::NAMED)?;
        let len = file.metadata().map_err(io)?.len();
        // Chunk headers and small payloads come through the buffer; a payload larger than
        // it is read straight into its own buffer.
        Reader::new(
            Box::new(BufReader::with_capacity(64 << 10, file)),
            len,
            path,
        )
    }

    /// Read from memory (tests, fuzzing); `name` is used in messages.
    pub fn from_bytes(bytes: Vec<u8>, name: &str) -> Result<Self, FormatError> {
        let len = bytes.len() as u64;
        Reader::new(Box::new(std::io::Cursor::new(bytes)), len, Path::new(name))
    }

    fn new(mut input: Box<dyn Input>, len: u64, path: &Path) -> Result<Self, FormatError> {
        let mut hb = [0u8; FILE_HEADER_LEN];
        if len < FILE_HEADER_LEN as u64 {
            let mut head = vec![0u8; len as usize];
            let _ = input.read_exact(&mut head);
            return Err(not_hood_or_short(path, &head));
        }
        input
            .read_exact(&mut hb)
            .map_err(|source| FormatError::Io {
                path: path.to_owned(),
                source,
            })?;
        let header = checked_header(path, &hb)?;
        Ok(Reader {
            input,
            stored: Vec::new(),
            zstd: None,
            path: path.to_owned(),
            header,
            len,
            pos: FILE_HEADER_LEN as u64,
            done: false,
            chunks_read: 0,
            warnings: Vec::new(),
            lazy: Vec::new(),
        })
    }

    /// Leave the payloads of chunks tagged `tag` in the file, so that a caller that may not
    /// need them pays no decompressing or keeping them (their stored bytes are still read and
    /// checked, so a damaged file is reported either way);
    /// [`ChunkInfo::deferred`] says where one is, and [`read_deferred`](Self::read_deferred)
    /// reads it.
    pub fn defer(&mut self, tag: u32) {
        self.lazy.push(tag);
    }

    /// The first `n` bytes (fewer when it is shorter) of the payload of a chunk
    /// [`defer`](Self::defer) left in the file, without decompressing the rest: its stored
    /// bytes are read and checked, and only the first zstd block(s) that hold those bytes are
    /// decompressed. For a caller that must learn what a chunk is about before reading it
    /// whole (once) later. Not counted in [`payloads_read`]: the payload itself is not read.
    pub fn read_deferred_prefix(&mut self, d: &Deferred, n: usize) -> Result<Vec<u8>, FormatError> {
        let mut stored = Vec::new();
        self.read_stored(d, &mut stored)?;
        if !d.zstd {
            stored.truncate(n);
            return Ok(stored);
        }
        let bad = |e: std::io::Error| format!("zstd payload does not decompress: {e}");
        let mut out = Vec::with_capacity(n.min(d.raw_len as usize));
        zstd::stream::read::Decoder::with_buffer(&stored[..])
            .and_then(|dec| dec.take(n as u64).read_to_end(&mut out))
            .map_err(|e| self.corrupt(d.offset, bad(e)))?;
        Ok(out)
    }

    /// The stored (maybe compressed) bytes of a deferred chunk, checked; the reader's place
    /// in its walk of the file is kept.
    fn read_stored(&mut self, d: &Deferred, stored: &mut Vec<u8>) -> Result<(), FormatError> {
        crate::memory::check(&self.path, d.offset)?;
        let pos = self.pos;
        let read = match self.input.seek(SeekFrom::Start(d.at)) {
            Ok(_) => self.read_checked(d.offset, d.stored_len, d.crc, stored),
            Err(e) => Err(FormatError::Io {
                path: self.path.clone(),
                source: e,
            }),
        };
        self.pos = pos;
        if let Err(e) = self.input.seek(SeekFrom::Start(pos)) {
            return Err(FormatError::Io {
                path: self.path.clone(),
                source: e,
            });
        }
        read
    }

    /// The payload of a chunk [`defer`](Self::defer) left in the file: read, checked and
    /// decompressed now.
    pub fn read_deferred(&mut self, d: &Deferred) -> Result<Vec<u8>, FormatError> {
        let mut stored = Vec::new();
        self.read_stored(d, &mut stored)?;
        PAYLOADS_READ.fetch_add(1, Ordering::Relaxed);
        if !d.zstd {
            return Ok(stored);
        }
        let mut out = Vec::new();
        self.decompress(d.offset, &stored, d.raw_len, &mut out)?;
        Ok(out)
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// What the file holds.
    pub fn kind(&self) -> FileKind {
        self.header.kind
    }

    /// The file's path (or name given to [`Reader::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Warnings so far (a cut-off end of file).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The next chunk; `Ok(None)` at the end (or at a cut-off end, with a warning).
    pub fn next_chunk(&mut self) -> Result<Option<Chunk>, FormatError> {
        let mut data = Vec::new();
        Ok(self
            .next_chunk_into(&mut data)?
            .map(|ChunkInfo { tag, offset, .. }| Chunk { tag, offset, data }))
    }

    /// Like [`next_chunk`](Self::next_chunk), but the payload replaces the contents of `data`,
    /// so one buffer serves a whole file (large recordings: no fresh pages per chunk).
    pub fn next_chunk_into(
        &mut self,
        data: &mut Vec<u8>,
    ) -> Result<Option<ChunkInfo>, FormatError> {
        data.clear();
        if self.done {
            return Ok(None);
        }
        let offset = self.pos;
        crate::memory::check(&self.path, offset)?;
        let left = self.len - self.pos;
        if left == 0 {
            self.done = true;
            return Ok(None);
        }
        if left < CHUNK_HEADER_LEN as u64 {
            return self.truncated(offset);
        }
        let mut hb = [0u8; CHUNK_HEADER_LEN];
        self.read_exact(&mut hb)?;
        let header = ChunkHeader::decode(&hb).map_err(|what| self.corrupt(offset, what))?;
        if header.stored_len > MAX_PAYLOAD || header.raw_len > MAX_PAYLOAD {
            return Err(self.corrupt(
                offset,
                format!("impossible payload length {}", header.stored_len),
            ));
        }
        if header.stored_len > self.len - self.pos {
            return self.truncated(offset);
        }
        let zstd = header.flags & FLAG_ZSTD != 0;
        if !zstd && header.raw_len != header.stored_len {
            return Err(self.corrupt(
                offset,
                "uncompressed chunk with two different lengths".into(),
            ));
        }
        if self.lazy.contains(&header.tag) {
            let deferred = Deferred {
                offset,
                at: self.pos,
                stored_len: header.stored_len,
                raw_len: header.raw_len,
                crc: header.payload_crc,
                zstd,
            };
            // Its bytes are still read and checked (cheap next to decompressing and
            // parsing them), so damage anywhere in the file is reported whether or not the
            // caller ends up needing this payload.
            let mut stored = std::mem::take(&mut self.stored);
            let checked =
                self.read_checked(offset, header.stored_len, header.payload_crc, &mut stored);
            self.stored = stored;
            checked?;
            self.chunks_read += 1;
            return Ok(Some(ChunkInfo {
                tag: header.tag,
                offset,
                deferred: Some(deferred),
            }));
        }
        // An uncompressed payload is read straight into `data`; a compressed one into the
        // reader's own buffer first.
        let mut stored = if zstd {
            std::mem::take(&mut self.stored)
        } else {
            std::mem::take(data)
        };
        let checked = self.read_checked(offset, header.stored_len, header.payload_crc, &mut stored);
        if !zstd {
            *data = stored;
            checked?;
        } else {
            let out = checked.and_then(|()| self.decompress(offset, &stored, header.raw_len, data));
            self.stored = stored;
            out?;
        }
        PAYLOADS_READ.fetch_add(1, Ordering::Relaxed);
        self.chunks_read += 1;
        Ok(Some(ChunkInfo {
            tag: header.tag,
            offset,
            deferred: None,
        }))
    }

    fn decompress(
        &mut self,
        offset: u64,
        stored: &[u8],
        raw_len: u64,
        data: &mut Vec<u8>,
    ) -> Result<(), FormatError> {
        let bad = |e: std::io::Error| format!("zstd payload does not decompress: {e}");
        if self.zstd.is_none() {
            let d = zstd::bulk::Decompressor::new().map_err(|e| self.corrupt(offset, bad(e)))?;
            self.zstd = Some(d);
        }
        data.reserve(raw_len as usize);
        let result = match self.zstd.as_mut() {
            Some(dctx) => dctx.decompress_to_buffer(stored, data),
            None => Ok(0),
        };
        let n = result.map_err(|e| self.corrupt(offset, bad(e)))?;
        if n as u64 != raw_len || data.len() as u64 != raw_len {
            return Err(self.corrupt(offset, "decompressed length differs from header".into()));
        }
        Ok(())
    }

    /// Iterate over the remaining chunks. After an `Err` the iterator ends.
    pub fn chunks(&mut self) -> impl Iterator<Item = Result<Chunk, FormatError>> + '_ {
        std::iter::from_fn(move || match self.next_chunk() {
            Ok(Some(c)) => Some(Ok(c)),
            Ok(None) => None,
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        })
    }

    /// Reads the next `len` bytes (checked against the file's length by the caller) into
    /// `buf`, replacing its contents without zeroing it first.
    /// Read the `len` stored bytes of the chunk at `offset` into `buf` and check them against
    /// the chunk's checksum `crc`.
    fn read_checked(
        &mut self,
        offset: u64,
        len: u64,
        crc: u32,
        buf: &mut Vec<u8>,
    ) -> Result<(), FormatError> {
        self.read_payload(len, buf)?;
        if crc32c::crc32c(buf) != crc {
            return Err(self.corrupt(offset, "payload checksum mismatch".into()));
        }
        Ok(())
    }

    fn read_payload(&mut self, len: u64, buf: &mut Vec<u8>) -> Result<(), FormatError> {
        buf.clear();
        buf.reserve(len as usize);
        let n = (&mut self.input)
            .take(len)
            .read_to_end(buf)
            .map_err(|source| FormatError::Io {
                path: self.path.clone(),
                source,
            })?;
        if n as u64 != len {
            return Err(FormatError::Io {
                path: self.path.clone(),
                source: std::io::ErrorKind::UnexpectedEof.into(),
            });
        }
        self.pos += len;
        Ok(())
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), FormatError> {
        self.input
            .read_exact(buf)
            .map_err(|source| FormatError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn corrupt(&self, offset: u64, what: String) -> FormatError {
        FormatError::CorruptChunk {
            path: self.path.clone(),
            offset,
            what,
        }
    }

    fn truncated(&mut self, offset: u64) -> Result<Option<ChunkInfo>, FormatError> {
        self.done = true;
        self.warnings.push(format!(
            "{}: file ends inside the chunk at byte offset {offset} of {} (the recording was cut short, e.g. the recorder was killed); using the {} whole chunks before it",
            self.path.display(),
            self.len,
            self.chunks_read
        ));
        Ok(None)
    }
}

/// The header of the file at `path` whose first bytes (up to [`FILE_HEADER_LEN`], fewer when
/// the file is shorter) are `head`, with the errors [`Reader::open`] gives for them: not a
/// hood file (a perf.data file named as such), cut short, damaged, or of a newer format.
pub fn header_of(path: &Path, head: &[u8]) -> Result<FileHeader, FormatError> {
    match head.first_chunk::<FILE_HEADER_LEN>() {
        Some(hb) => checked_header(path, hb),
        None => Err(not_hood_or_short(path, head)),
    }
}

fn checked_header(path: &Path, hb: &[u8; FILE_HEADER_LEN]) -> Result<FileHeader, FormatError> {
    let header = FileHeader::decode(hb).map_err(|what| {
        if what == "bad magic" {
            not_hood_or_short(path, hb)
        } else {
            FormatError::BadHeader {
                path: path.to_owned(),
                what,
            }
        }
    })?;
    if header.version > FORMAT_VERSION {
        return Err(FormatError::UnsupportedVersion {
            path: path.to_owned(),
            found: header.version,
            supported: FORMAT_VERSION,
        });
    }
    Ok(header)
}

fn not_hood_or_short(path: &Path, head: &[u8]) -> FormatError {
    // (An empty file first: every magic starts with no bytes.)
    let hint = if head.is_empty() {
        " (the file is empty)".to_string()
    } else if head.starts_with(b"PERFILE2") {
        " (it is a perf.data file written by `perf record`; use `perf report` on it)".to_string()
    } else if head.len() < FILE_HEADER_LEN
        && (head.starts_with(&crate::header::MAGIC) || crate::header::MAGIC.starts_with(head))
    {
        format!(
            " (only {} bytes: the recording was cut before its header was written)",
            head.len()
        )
    } else {
        String::new()
    };
    FormatError::NotHood {
        path: path.to_owned(),
        hint,
    }
}

/// Check that `reader` holds `expected`; otherwise an error naming the command that reads it.
pub fn expect_kind(
    reader: &Reader,
    expected: FileKind,
    _this_command: &str,
) -> Result<(), FormatError> {
    let found = reader.kind();
    if found == expected {
        return Ok(());
    }
    Err(FormatError::WrongKind {
        path: reader.path().to_owned(),
        found,
        expected,
        reader: found.reader_command(),
    })
}
