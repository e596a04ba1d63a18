//! The few fields of a raw `perf_event_attr` that decoding needs, read from the stored bytes.

use crate::RawError;

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
    /// Branch stack.
    pub const BRANCH_STACK: u64 = 1 << 11;
    /// User registers.
    pub const REGS_USER: u64 = 1 << 12;
    /// A copy of the top of the user stack.
    pub const STACK_USER: u64 = 1 << 13;
    /// Identifier at a fixed position.
    pub const IDENTIFIER: u64 = 1 << 16;
}

/// PERF_FORMAT_* bits of `read_format`: what a sample's READ field holds.
pub mod read {
    /// Time the event was enabled.
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// Time the event was running.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// The event id beside each value.
    pub const ID: u64 = 1 << 2;
    /// Values of the whole group.
    pub const GROUP: u64 = 1 << 3;
    /// Lost records beside each value.
    pub const LOST: u64 = 1 << 4;
}

/// PERF_SAMPLE_BRANCH_HW_INDEX: branch stacks start with the hardware index word.
pub const BRANCH_HW_INDEX: u64 = 1 << 17;

/// Decoded attribute fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
    /// Which user registers samples carry (0 when the stored attribute is too short to say).
    pub sample_regs_user: u64,
    /// PERF_SAMPLE_BRANCH_* bits (0 when the stored attribute is too short to say).
    pub branch_sample_type: u64,
}

/// Byte offset of `sample_type` in a `perf_event_attr`.
const SAMPLE_TYPE_AT: usize = 24;
/// Byte offset of `branch_sample_type`.
const BRANCH_TYPE_AT: usize = 72;
/// Byte offset of `sample_regs_user`.
const REGS_USER_AT: usize = 80;

/// The attribute bytes with the given `sample_type` bits cleared: what describes samples
/// the recorder rewrote after taking those fields out (a stack copy it already unwound).
pub fn clear_sample_bits(bytes: &[u8], bits: u64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    if let Some(b) = out.get_mut(SAMPLE_TYPE_AT..SAMPLE_TYPE_AT + 8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        b.copy_from_slice(&(u64::from_le_bytes(w) & !bits).to_le_bytes());
    }
    out
}

impl Attr {
    /// Parse the stored bytes (at least the first 48).
    pub fn parse(bytes: &[u8]) -> Result<Attr, RawError> {
        if bytes.len() < 48 {
            return Err(RawError::Malformed(format!(
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
            sample_type: u64_at(SAMPLE_TYPE_AT),
            read_format: u64_at(32),
            flags: u64_at(40),
            sample_regs_user: if bytes.len() >= REGS_USER_AT + 8 {
                u64_at(REGS_USER_AT)
            } else {
                0
            },
            branch_sample_type: if bytes.len() >= BRANCH_TYPE_AT + 8 {
                u64_at(BRANCH_TYPE_AT)
            } else {
                0
            },
        };
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

    /// Size in bytes of a sample's READ field (0 without PERF_SAMPLE_READ); `None` for a group
    /// read, whose size depends on the count stored in the sample.
    fn read_size(&self) -> Option<usize> {
        let per_value = [
            read::TOTAL_TIME_ENABLED,
            read::TOTAL_TIME_RUNNING,
            read::ID,
            read::LOST,
        ]
        .iter()
        .filter(|&&b| self.read_format & b != 0)
        .count();
        if self.sample_type & sample::READ == 0 {
            Some(0)
        } else if self.read_format & read::GROUP != 0 {
            None
        } else {
            Some(8 + 8 * per_value)
        }
    }

    /// Size of the READ field of a group read holding `nr` values.
    fn group_read_size(&self, nr: usize) -> Option<usize> {
        let head = [read::TOTAL_TIME_ENABLED, read::TOTAL_TIME_RUNNING]
            .iter()
            .filter(|&&b| self.read_format & b != 0)
            .count();
        let per = 1 + [read::ID, read::LOST]
            .iter()
            .filter(|&&b| self.read_format & b != 0)
            .count();
        8usize
            .checked_add(8 * head)?
            .checked_add(nr.checked_mul(8 * per)?)
    }

    /// Byte size of the READ field at the start of `rest` (the bytes from its position on).
    pub(crate) fn read_field_size(&self, rest: &[u8]) -> Option<usize> {
        match self.read_size() {
            Some(n) => Some(n),
            None => {
                let nr = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
                self.group_read_size(usize::try_from(nr).ok()?)
            }
        }
    }
}
