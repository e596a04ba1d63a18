//! Samples that carry user registers and a copy of the user stack (`PERF_SAMPLE_REGS_USER |
//! PERF_SAMPLE_STACK_USER`): taking them apart for unwinding, and writing them back as plain
//! call-chain samples once unwound, so a recording stores the chain (a few hundred bytes)
//! instead of the stack copy (8 KB or more).
//!
//! Untrusted bytes: every length is checked against the record before it is used.

use crate::attr::{sample, Attr};
use crate::records::{parse_sample, SampleParts};

/// x86-64 register numbers in perf's user register sets (`perf_regs.h`).
pub mod reg {
    /// Frame pointer.
    pub const BP: u32 = 6;
    /// Stack pointer.
    pub const SP: u32 = 7;
    /// Instruction pointer.
    pub const IP: u32 = 8;
}

/// Take apart the body of a sample record written under `attr` for unwinding; `None` if the
/// attribute does not ask for both user registers and a user stack copy, or the sample does
/// not parse.
pub fn parse<'a>(attr: &Attr, body: &'a [u8]) -> Option<SampleParts<'a>> {
    let both = sample::REGS_USER | sample::STACK_USER;
    if attr.sample_type & both != both {
        return None;
    }
    parse_sample(attr, body)
}

/// Append a sample record (header and body) made of `head` (the fields before the call chain,
/// as [`parse`] returned them), `chain` and `raw_field` (the raw field as parsed, empty when the
/// samples carry none); `false` (nothing written) if it would not fit a record's 16-bit size.
pub fn write(misc: u16, head: &[u8], chain: &[u64], raw_field: &[u8], out: &mut Vec<u8>) -> bool {
    let size = 8 + head.len() + 8 + chain.len() * 8 + raw_field.len();
    let Ok(size16) = u16::try_from(size) else {
        return false;
    };
    out.extend_from_slice(&crate::records::kind::SAMPLE.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&size16.to_le_bytes());
    out.extend_from_slice(head);
    out.extend_from_slice(&(chain.len() as u64).to_le_bytes());
    for a in chain {
        out.extend_from_slice(&a.to_le_bytes());
    }
    out.extend_from_slice(raw_field);
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
            branch_sample_type: 0,
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
            (
                s.user_reg(reg::BP),
                s.user_reg(reg::SP),
                s.user_reg(reg::IP)
            ),
            (Some(0xb), Some(0x5), Some(0x1))
        );
        assert_eq!(s.user_reg(0), None);
        assert_eq!(s.stack, &stack[..40]);
        let mut out = Vec::new();
        assert!(write(2, s.head, &[9, 8, 7], s.raw_field, &mut out));
        assert_eq!(out.len(), 8 + 48 + 8 + 24);
        assert_eq!(u16::from_le_bytes([out[6], out[7]]) as usize, out.len());
        let plain = attr(ST & !(sample::REGS_USER | sample::STACK_USER));
        let mut d = crate::records::Decoded::default();
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
