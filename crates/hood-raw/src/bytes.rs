//! The one reader of little-endian integers in untrusted bytes: every read is bounds-checked
//! and gives `None` when the bytes are too short (never a panic, never a wrapped offset).

/// The `u16` at byte `at` of `b`, if `b` holds it.
pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// The `u32` at byte `at` of `b`, if `b` holds it.
pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The `u64` at byte `at` of `b`, if `b` holds it.
pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Reads fields one after the other; a read past the end gives `None` and does not move.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `b`.
    pub fn new(b: &'a [u8]) -> Cursor<'a> {
        Cursor { b, at: 0 }
    }

    /// A cursor at byte `at` of `b` (past the end: every read gives `None`).
    pub fn starting_at(b: &'a [u8], at: usize) -> Cursor<'a> {
        Cursor { b, at }
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    /// The next `u64`.
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    /// The next `u32`.
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    /// Step over `n` bytes.
    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_huge_offsets_give_none() {
        let b = [1u8, 0, 0, 0, 2, 0, 0, 0];
        assert_eq!(u32_at(&b, 4), Some(2));
        assert_eq!(u64_at(&b, 0), Some(0x2_0000_0001));
        assert_eq!(u16_at(&b, 7), None);
        assert_eq!(u32_at(&b, 5), None);
        assert_eq!(u64_at(&b, usize::MAX - 3), None);
        let mut c = Cursor::new(&b);
        assert_eq!(c.u32(), Some(1));
        assert_eq!(c.u64(), None);
        assert_eq!(c.position(), 4);
        assert_eq!(c.u32(), Some(2));
        assert_eq!(c.skip(1), None);
    }
}
