//! Walking the raw bytes of a perf ring: records framed by an 8-byte header (type u32,
//! misc u16, size u16, little-endian), stored verbatim by every hood recorder.

/// One whole record.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// Byte offset of the record in the walked bytes.
    pub at: usize,
    /// `PERF_RECORD_*` type.
    pub ty: u32,
    /// The header's misc bits.
    pub misc: u16,
    /// The record, header included (`bytes.len()` is the header's size, at least 8).
    pub bytes: &'a [u8],
}

/// Where the framing broke: the bytes from there on are not records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A header whose size is below 8 or runs past the end.
    BadSize {
        /// Offset of the header.
        at: usize,
        /// The size it states.
        size: usize,
        /// Bytes left from `at`.
        left: usize,
    },
    /// Fewer than 8 bytes after the last whole record.
    Trailing(usize),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::BadSize { at, size, left } => {
                write!(f, "record at byte {at} has size {size} ({left} bytes left)")
            }
            FrameError::Trailing(n) => write!(f, "{n} trailing bytes"),
        }
    }
}

/// Calls `f` for each whole record of `b` in order; stops at the first broken header.
pub fn for_each_frame<'a>(b: &'a [u8], mut f: impl FnMut(Frame<'a>)) -> Result<(), FrameError> {
    let mut at = 0usize;
    while at + 8 <= b.len() {
        let ty = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let misc = u16::from_le_bytes([b[at + 4], b[at + 5]]);
        let size = usize::from(u16::from_le_bytes([b[at + 6], b[at + 7]]));
        if size < 8 || at + size > b.len() {
            return Err(FrameError::BadSize {
                at,
                size,
                left: b.len() - at,
            });
        }
        f(Frame {
            at,
            ty,
            misc,
            bytes: &b[at..at + size],
        });
        at += size;
    }
    match b.len() - at {
        0 => Ok(()),
        n => Err(FrameError::Trailing(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ty: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut v = ty.to_le_bytes().to_vec();
        v.extend(misc.to_le_bytes());
        v.extend(((8 + body.len()) as u16).to_le_bytes());
        v.extend(body);
        v
    }

    #[test]
    fn whole_records_then_the_break() {
        let mut b = rec(9, 2, &[1; 8]);
        b.extend(rec(2, 0, &[]));
        let mut seen = Vec::new();
        assert_eq!(
            for_each_frame(&b, |f| seen.push((f.at, f.ty, f.misc, f.bytes.len()))),
            Ok(())
        );
        assert_eq!(seen, [(0, 9, 2, 16), (16, 2, 0, 8)]);
        b.extend([0; 3]);
        assert_eq!(for_each_frame(&b, |_| {}), Err(FrameError::Trailing(3)));
        b.truncate(24);
        b.extend(rec(9, 0, &[0; 4])[..10].iter().copied());
        assert_eq!(
            for_each_frame(&b, |_| {}),
            Err(FrameError::BadSize {
                at: 24,
                size: 12,
                left: 10
            })
        );
    }
}
