//! Fixed-size headers: encoding and decoding, little-endian.

use std::fmt;

/// Magic bytes at the start of every hood recording.
pub const MAGIC: [u8; 8] = *b"HOODREC\0";
/// Magic bytes at the start of every chunk header.
pub const CHUNK_MAGIC: [u8; 4] = *b"CHNK";
/// The format version this build writes and the newest it reads.
pub const FORMAT_VERSION: u16 = 1;
/// Bytes in the file header.
pub const FILE_HEADER_LEN: usize = 32;
/// Bytes in a chunk header.
pub const CHUNK_HEADER_LEN: usize = 40;
/// Chunk flag: the payload is zstd-compressed.
pub const FLAG_ZSTD: u32 = 1;

/// What a recording holds; each kind is read by its own command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// Sampled profile (`hood record`).
    Profile,
    /// Call-path tables (`hood calls`).
    Calls,
    /// Event-tag trace (`hood trace record`).
    Trace,
    /// A segment of a monitor store (`hood top --record`).
    Monitor,
    /// A kind written by a newer hood.
    Unknown(u16),
}

impl FileKind {
    /// The numeric code stored in the header.
    pub fn code(self) -> u16 {
        match self {
            FileKind::Profile => 1,
            FileKind::Calls => 2,
            FileKind::Trace => 3,
            FileKind::Monitor => 4,
            FileKind::Unknown(c) => c,
        }
    }

    /// Decode a header code.
    pub fn from_code(code: u16) -> Self {
        match code {
            1 => FileKind::Profile,
            2 => FileKind::Calls,
            3 => FileKind::Trace,
            4 => FileKind::Monitor,
            c => FileKind::Unknown(c),
        }
    }

    /// The command that reads this kind of file.
    pub fn reader_command(self) -> &'static str {
        match self {
            FileKind::Profile => "hood report",
            FileKind::Calls => "hood calls report",
            FileKind::Trace => "hood trace report",
            FileKind::Monitor => "hood top --replay DIR",
            FileKind::Unknown(_) => "a newer hood",
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileKind::Profile => f.write_str("sampled-profile"),
            FileKind::Calls => f.write_str("call-path"),
            FileKind::Trace => f.write_str("event-trace"),
            FileKind::Monitor => f.write_str("monitor-store segment"),
            FileKind::Unknown(c) => write!(f, "unknown (kind {c})"),
        }
    }
}

/// The file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Format version of the file.
    pub version: u16,
    /// What the file holds.
    pub kind: FileKind,
    /// Wall-clock creation time, nanoseconds since the Unix epoch.
    pub created_unix_ns: u64,
}

impl FileHeader {
    /// Encode to bytes.
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut b = [0u8; FILE_HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10..12].copy_from_slice(&self.kind.code().to_le_bytes());
        b[12..14].copy_from_slice(&(FILE_HEADER_LEN as u16).to_le_bytes());
        b[16..24].copy_from_slice(&self.created_unix_ns.to_le_bytes());
        let crc = crc32c::crc32c(&b[..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decode from bytes; `Err` carries a description of what is wrong.
    pub fn decode(b: &[u8; FILE_HEADER_LEN]) -> Result<Self, String> {
        if b[..8] != MAGIC {
            return Err("bad magic".into());
        }
        let crc = u32::from_le_bytes(take4(b, 28));
        if crc != crc32c::crc32c(&b[..28]) {
            return Err("header checksum mismatch".into());
        }
        Ok(FileHeader {
            version: u16::from_le_bytes([b[8], b[9]]),
            kind: FileKind::from_code(u16::from_le_bytes([b[10], b[11]])),
            created_unix_ns: u64::from_le_bytes(take8(b, 16)),
        })
    }
}

/// A chunk header as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// What the payload is (see [`crate::tags`]).
    pub tag: u32,
    /// Flags (bit 0: the payload is zstd-compressed).
    pub flags: u32,
    /// Payload bytes on disk.
    pub stored_len: u64,
    /// Payload bytes after decompression.
    pub raw_len: u64,
    /// CRC-32C of the stored payload.
    pub payload_crc: u32,
}

impl ChunkHeader {
    /// The header of a chunk whose payload, as stored, is `stored` (its length and checksum
    /// taken from it), `raw_len` bytes once decompressed.
    pub fn of(tag: u32, flags: u32, raw_len: u64, stored: &[u8]) -> ChunkHeader {
        ChunkHeader {
            tag,
            flags,
            stored_len: stored.len() as u64,
            raw_len,
            payload_crc: crc32c::crc32c(stored),
        }
    }

    /// Encode to bytes (the header CRC is computed here).
    pub fn encode(&self) -> [u8; CHUNK_HEADER_LEN] {
        let mut b = [0u8; CHUNK_HEADER_LEN];
        b[0..4].copy_from_slice(&CHUNK_MAGIC);
        b[4..8].copy_from_slice(&self.tag.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[16..24].copy_from_slice(&self.stored_len.to_le_bytes());
        b[24..32].copy_from_slice(&self.raw_len.to_le_bytes());
        b[32..36].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = header_crc(&b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decode from bytes; `Err` carries a description of what is wrong.
    pub fn decode(b: &[u8; CHUNK_HEADER_LEN]) -> Result<Self, String> {
        if b[0..4] != CHUNK_MAGIC {
            return Err("bad chunk magic".into());
        }
        if u32::from_le_bytes(take4(b, 12)) != header_crc(b) {
            return Err("chunk header checksum mismatch".into());
        }
        Ok(ChunkHeader {
            tag: u32::from_le_bytes(take4(b, 4)),
            flags: u32::from_le_bytes(take4(b, 8)),
            stored_len: u64::from_le_bytes(take8(b, 16)),
            raw_len: u64::from_le_bytes(take8(b, 24)),
            payload_crc: u32::from_le_bytes(take4(b, 32)),
        })
    }
}

/// CRC over the chunk header with its own CRC field left out.
fn header_crc(b: &[u8; CHUNK_HEADER_LEN]) -> u32 {
    let crc = crc32c::crc32c(&b[0..12]);
    crc32c::crc32c_append(crc, &b[16..])
}

fn take4(b: &[u8], at: usize) -> [u8; 4] {
    let mut out = [0u8; 4];
    out.copy_from_slice(&b[at..at + 4]);
    out
}

fn take8(b: &[u8], at: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&b[at..at + 8]);
    out
}
