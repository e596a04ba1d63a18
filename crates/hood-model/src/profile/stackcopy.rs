//! Samples that carry user registers and a copy of the user stack (`PERF_SAMPLE_REGS_USER |
//! PERF_SAMPLE_STACK_USER`): taking them apart for unwinding, and writing them back as plain
//! call-chain samples once unwound, so a recording stores the chain (a few hundred bytes)
//! instead of the stack copy (8 KB or more).
//!
//! Untrusted bytes: every length is checked against the record before it is used.

use super::attr::{sample, Attr};

/// The parts of a raw sample record (its body, after the 8-byte header) that unwinding needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSample<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Timestamp.
    pub time: u64,
    /// The body bytes before the call chain, kept as they are when the record is rewritten.
    pub head: &'a [u8],
    /// The call chain the kernel recorded (its kernel part, and with a frame-pointer chain
    /// also its user part), as raw little-endian words.
    pub chain: &'a [u8],
    /// User registers in the attribute's mask order (x86-64: bp, sp, ip); empty for a kernel
    /// thread, which has no user context.
    pub regs: &'a [u8],
    /// The copied stack bytes (only the part the kernel could copy).
    pub stack: &'a [u8],
}

impl StackSample<'_> {
    /// The `i`-th call-chain entry.
    pub fn chain_at(&self, i: usize) -> Option<u64> {
        word(self.chain, i)
    }

    /// Number of call-chain entries.
    pub fn chain_len(&self) -> usize {
        self.chain.len() / 8
    }

    /// The `i`-th user register in mask order.
    pub fn reg(&self, i: usize) -> Option<u64> {
        word(self.regs, i)
    }
}

fn word(b: &[u8], i: usize) -> Option<u64> {
    let s = b.get(i.checked_mul(8)?..i.checked_mul(8)?.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// Take apart the body of a sample record written under `attr`; `None` if the sample carries
/// no stack copy or does not parse.
pub fn parse<'a>(attr: &Attr, body: &'a [u8]) -> Option<StackSample<'a>> {
    let st = attr.sample_type;
    let has = |bit| st & bit != 0;
    if !has(sample::REGS_USER) || !has(sample::STACK_USER) || has(sample::READ) {
        return None;
    }
    let mut c = Cursor { b: body, at: 0 };
    if has(sample::IDENTIFIER) {
        c.take(8)?;
    }
    if has(sample::IP) {
        c.take(8)?;
    }
    let (pid, tid) = if has(sample::TID) {
        let b = c.take(8)?;
        (
            u32::from_le_bytes(b[..4].try_into().ok()?),
            u32::from_le_bytes(b[4..].try_into().ok()?),
        )
    } else {
        (0, 0)
    };
    let time = if has(sample::TIME) { c.u64()? } else { 0 };
    for bit in [
        sample::ADDR,
        sample::ID,
        sample::STREAM_ID,
        sample::CPU,
        sample::PERIOD,
    ] {
        if has(bit) {
            c.take(8)?;
        }
    }
    let head_end = c.at;
    let chain = if has(sample::CALLCHAIN) {
        let nr = usize::try_from(c.u64()?).ok()?;
        c.take(nr.checked_mul(8)?)?
    } else {
        &[]
    };
    if has(sample::RAW) {
        let n = u32::from_le_bytes(c.take(4)?.try_into().ok()?) as usize;
        c.take(n)?;
    }
    if has(sample::BRANCH_STACK) {
        return None;
    }
    let abi = c.u64()?;
    let regs = if abi == 0 {
        &[][..]
    } else {
        c.take(attr.sample_regs_user.count_ones() as usize * 8)?
    };
    let size = usize::try_from(c.u64()?).ok()?;
    let stack = if size == 0 {
        &[][..]
    } else {
        let data = c.take(size)?;
        let dyn_size = usize::try_from(c.u64()?).ok()?;
        data.get(..dyn_size.min(size))?
    };
    Some(StackSample {
        pid,
        tid,
        time,
        head: body.get(..head_end)?,
        chain,
        regs,
        stack,
    })
}

/// Append a sample record (header and body) made of `head` (the fields before the call chain,
/// as [`parse`] returned them) and `chain`; `false` (nothing written) if it would not fit a
/// record's 16-bit size.
pub fn write(misc: u16, head: &[u8], chain: &[u64], out: &mut Vec<u8>) -> bool {
    let size = 8 + head.len() + 8 + chain.len() * 8;
    let Ok(size16) = u16::try_from(size) else {
        return false;
    };
    out.extend_from_slice(&super::records::kind::SAMPLE.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&size16.to_le_bytes());
    out.extend_from_slice(head);
    out.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for a in chain {
        out.extend_from_slice(&a.to_le_bytes());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(st: u64) -> Attr {
        Attr {
            type_: 1,
            config: 0,
            sample_period_or_freq: 999,
            sample_type: st,
            read_format: 0,
            flags: 1 << 18,
            sample_regs_user: (1 << 6) | (1 << 7) | (1 << 8),
        }
    }

    const ST: u64 = sample::IDENTIFIER
        | sample::IP
        | sample::TID
        | sample::TIME
        | sample::CPU
        | sample::PERIOD
        | sample::CALLCHAIN
        | sample::REGS_USER
        | sample::STACK_USER;

    fn body(chain: &[u64], regs: Option<[u64; 3]>, stack: &[u8], copied: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [7u64, 0x1000, (42u64 << 32) | 41, 5_000, 1, 10_000] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
        for a in chain {
            b.extend_from_slice(&a.to_le_bytes());
        }
        match regs {
            Some(r) => {
                b.extend_from_slice(&2u64.to_le_bytes());
                for w in r {
                    b.extend_from_slice(&w.to_le_bytes());
                }
            }
            None => b.extend_from_slice(&0u64.to_le_bytes()),
        }
        b.extend_from_slice(&(stack.len() as u64).to_le_bytes());
        if !stack.is_empty() {
            b.extend_from_slice(stack);
            b.extend_from_slice(&(copied as u64).to_le_bytes());
        }
        b
    }

    #[test]
    fn parts_are_found_and_the_rewrite_is_a_plain_chain_sample() {
        let stack: Vec<u8> = (0..64u8).collect();
        let b = body(&[1, 2], Some([0xb, 0x5, 0x1]), &stack, 40);
        let s = parse(&attr(ST), &b).unwrap();
        assert_eq!((s.pid, s.tid, s.time), (41, 42, 5_000));
        assert_eq!(s.head.len(), 48);
        assert_eq!((s.chain_len(), s.chain_at(1)), (2, Some(2)));
        assert_eq!(
            (s.reg(0), s.reg(1), s.reg(2)),
            (Some(0xb), Some(0x5), Some(0x1))
        );
        assert_eq!(s.stack, &stack[..40]);
        let mut out = Vec::new();
        assert!(write(2, s.head, &[9, 8, 7], &mut out));
        assert_eq!(out.len(), 8 + 48 + 8 + 24);
        assert_eq!(u16::from_le_bytes([out[6], out[7]]) as usize, out.len());
        let plain = attr(ST & !(sample::REGS_USER | sample::STACK_USER));
        let mut d = super::super::records::Decoded::default();
        d.push_chunk(&plain, 0, &out);
        assert_eq!(d.malformed, 0);
        assert_eq!(d.chains, vec![9, 8, 7]);
    }

    #[test]
    fn kernel_threads_have_no_registers_and_bad_lengths_are_refused() {
        let b = body(&[], None, &[], 0);
        let s = parse(&attr(ST), &b).unwrap();
        assert!(s.regs.is_empty() && s.stack.is_empty());
        let good = body(&[1], Some([1, 2, 3]), &[0; 16], 16);
        for cut in 0..good.len() {
            assert_eq!(parse(&attr(ST), &good[..cut]), None, "cut at {cut}");
        }
        let mut lying = good.clone();
        lying[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(parse(&attr(ST), &lying), None);
        assert_eq!(parse(&attr(ST & !sample::STACK_USER), &good), None);
    }
}
