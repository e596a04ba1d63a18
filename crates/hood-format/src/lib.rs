//! Owns the file container of every hood recording (header, CRC-checked chunks, zstd, atomic
//! output files) and the one door through which hood opens files it did not create
//! ([`untrusted`]: no blocking, regular files only, no links where none belong, bounded reads).
//! May depend on zstd, crc32c and rustix; no hood crate.
//!
//! The on-disk container shared by every kind of hood recording.
//!
//! A file is a fixed 32-byte [`FileHeader`] followed by chunks. Each chunk has a 40-byte header
//! (its own CRC, a tag saying what the payload is, lengths, a payload CRC) and a payload that
//! may be zstd-compressed. Because each chunk stands alone, a file whose writer was killed is
//! readable up to the last whole chunk; the reader reports the cut as a warning. A chunk whose
//! bytes were damaged is an error naming its offset. The layout is documented in
//! `docs/format.md`.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod error;
mod header;
pub mod memory;
mod output;
mod prefetch;
mod reader;
pub mod tags;
pub mod untrusted;
mod writer;

pub use error::FormatError;
pub use header::{
    ChunkHeader, FileHeader, FileKind, CHUNK_HEADER_LEN, FILE_HEADER_LEN, FORMAT_VERSION,
};
pub use output::{
    left_by_killed_writers, read_command, size_words, wrote_line, OutputFile, Placed, Stale,
};
pub use prefetch::Prefetch;
pub use reader::{expect_kind, header_of, payloads_read, Chunk, ChunkInfo, Deferred, Reader};
pub use writer::Writer;
