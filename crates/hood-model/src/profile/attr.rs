//! The few fields of a raw `perf_event_attr` that decoding needs, read from the stored bytes.

use crate::ModelError;

/// PERF_SAMPLE_* bits hood understands.
pub mod sample {
    /// Instruction pointer.
    pub const IP: u64 = 1 << 0;
    /// pid, tid.
    pub const TID: u64 = 1 << 1;
    /// Timestamp.
    pub const TIME: u64 = 1 << 2;
    /// Data address.
    pub const ADDR: u64 = 1 << 3;
    /// Read values.
    pub const READ: u64 = 1 << 4;
    /// Call chain.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// Event id.
    pub const ID: u64 = 1 << 6;
    /// CPU number.
    pub const CPU: u64 = 1 << 7;
    /// Period.
    pub const PERIOD: u64 = 1 << 8;
    /// Stream id.
    pub const STREAM_ID: u64 = 1 << 9;
    /// Raw tracepoint data.
    pub const RAW: u64 = 1 << 10;
    /// Identifier at a fixed position.
    pub const IDENTIFIER: u64 = 1 << 16;
}

/// Decoded attribute fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// PERF_TYPE_*.
    pub type_: u32,
    /// Event config.
    pub config: u64,
    /// Sample period or frequency.
    pub sample_period_or_freq: u64,
    /// PERF_SAMPLE_* bits.
    pub sample_type: u64,
    /// read_format bits.
    pub read_format: u64,
    /// Flag bits (disabled, inherit, ..., sample_id_all at bit 18).
    pub flags: u64,
}

impl Attr {
    /// Parse the stored bytes (at least the first 48).
    pub fn parse(bytes: &[u8]) -> Result<Attr, ModelError> {
        if bytes.len() < 48 {
            return Err(ModelError::Malformed(format!(
                "perf_event_attr chunk has {} bytes, need at least 48",
                bytes.len()
            )));
        }
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let attr = Attr {
            type_: u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            config: u64_at(8),
            sample_period_or_freq: u64_at(16),
            sample_type: u64_at(24),
            read_format: u64_at(32),
            flags: u64_at(40),
        };
        if attr.read_format != 0 && attr.sample_type & sample::READ != 0 {
            return Err(ModelError::Malformed(
                "samples with read values are not supported".into(),
            ));
        }
        Ok(attr)
    }

    /// Whether non-sample records carry the sample_id trailer.
    pub fn sample_id_all(&self) -> bool {
        self.flags & (1 << 18) != 0
    }

    /// Whether the attribute sampled by frequency.
    pub fn freq(&self) -> bool {
        self.flags & (1 << 10) != 0
    }
}
