//! The recorder's unwinding stage: raw ring bytes in, the same records out, with every stack
//! copy replaced by the call chain it unwinds to.
//!
//! Records of all CPUs drained in one round are taken in time order, so a sample is unwound
//! against the mappings its process had when it was taken, even when the mmap, fork or exec
//! record came through another CPU's ring.

use hood_raw::attr::{clear_sample_bits, sample, Attr};
use hood_raw::frames::for_each_frame;
use hood_raw::records::{kind, Decoded, Truncation, CONTEXT_MAX, CONTEXT_USER};
use hood_raw::stackcopy;

use crate::{Options, Stats, Unwinder, UserRegs};

/// Kernel-side limit of frame-pointer chains (`kernel.perf_event_max_stack`'s default).
const KERNEL_MAX_STACK: usize = 127;

/// Counts of the stage's own work, beside the unwinder's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewriteStats {
    /// Samples whose stack copy was unwound.
    pub unwound: u64,
    /// Samples without a user context (kernel threads).
    pub no_user: u64,
    /// Truncated DWARF stacks continued by the kernel's frame-pointer chain.
    pub spliced: u64,
    /// Records that did not parse (copied as they were).
    pub malformed: u64,
    /// Bytes of stack copies dropped.
    pub stack_bytes: u64,
    /// Stacks stored complete (after splicing).
    pub complete: u64,
    /// Stacks stored truncated, per reason (indexed by [`Truncation::code`], after splicing).
    pub truncated: [u64; 5],
}

/// No decoded side-band event for a record.
const NO_EVENT: usize = usize::MAX;

/// Rewrites drained ring bytes; see the module notes.
pub struct Rewriter {
    attr: Attr,
    stored_attr: Vec<u8>,
    unwinder: Unwinder,
    stats: RewriteStats,
    decoded: Decoded,
    /// (time, ring, offset, length, index of its decoded side-band event or `NO_EVENT`).
    order: Vec<(u64, usize, usize, usize, usize)>,
    chain: Vec<u64>,
    user: Vec<u64>,
}

impl Rewriter {
    /// A stage for samples written under the attribute `attr_bytes` (as the kernel got it);
    /// `None` when those samples carry no stack copy (nothing to rewrite).
    pub fn new(attr_bytes: &[u8], opts: Options) -> Option<Rewriter> {
        let attr = Attr::parse(attr_bytes).ok()?;
        let copy = sample::REGS_USER | sample::STACK_USER;
        if attr.sample_type & copy != copy {
            return None;
        }
        Some(Rewriter {
            attr,
            stored_attr: clear_sample_bits(attr_bytes, copy),
            unwinder: Unwinder::new(opts),
            stats: RewriteStats::default(),
            decoded: Decoded::default(),
            order: Vec::new(),
            chain: Vec::new(),
            user: Vec::new(),
        })
    }

    /// The attribute bytes that describe the rewritten records (no registers, no stack copy):
    /// what the recording must store.
    pub fn stored_attr(&self) -> &[u8] {
        &self.stored_attr
    }

    /// The unwinder, to seed it (vDSO image, processes running at start).
    pub fn unwinder(&mut self) -> &mut Unwinder {
        &mut self.unwinder
    }

    /// What the unwinder did.
    pub fn unwind_stats(&self) -> &Stats {
        self.unwinder.stats()
    }

    /// What the stage did.
    pub fn stats(&self) -> &RewriteStats {
        &self.stats
    }

    /// Rewrite one round: `input[i]` holds the bytes drained from CPU `i`'s ring (whole
    /// records); the rewritten records of that CPU are appended to `output[i]`.
    pub fn rewrite(&mut self, input: &[&[u8]], output: &mut [Vec<u8>]) {
        self.order.clear();
        // Side-band records are decoded once, here (for their time); the event is applied in
        // time order below. `NO_EVENT` marks samples and records that decode to nothing.
        self.decoded.events.clear();
        for (ring, bytes) in input.iter().enumerate() {
            let broken = for_each_frame(bytes, |f| {
                let (time, event) = if f.ty == kind::SAMPLE {
                    let t = stackcopy::parse(&self.attr, &f.bytes[8..]).map_or(0, |s| s.time);
                    (t, NO_EVENT)
                } else {
                    let before = self.decoded.events.len();
                    self.decoded.push_chunk(&self.attr, 0, f.bytes);
                    match self.decoded.events.get(before) {
                        Some(e) => (e.time, before),
                        None => (0, NO_EVENT),
                    }
                };
                self.order.push((time, ring, f.at, f.bytes.len(), event));
            });
            if broken.is_err() {
                self.stats.malformed += 1;
            }
        }
        self.order
            .sort_by_key(|&(time, ring, at, ..)| (time, ring, at));
        let order = std::mem::take(&mut self.order);
        for &(_, ring, at, len, event) in &order {
            let rec = &input[ring][at..at + len];
            let Some(out) = output.get_mut(ring) else {
                continue;
            };
            if event != NO_EVENT {
                hood_raw::replay::follow_event(
                    &mut self.unwinder,
                    &self.decoded.events[event].event,
                );
            }
            let ty = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
            if ty == kind::SAMPLE {
                self.sample(rec, out);
            } else {
                out.extend_from_slice(rec);
            }
        }
        self.order = order;
    }

    /// Unwind one sample and write it back without its registers and stack copy.
    fn sample(&mut self, rec: &[u8], out: &mut Vec<u8>) {
        let misc = u16::from_le_bytes([rec[4], rec[5]]);
        let Some(s) = stackcopy::parse(&self.attr, &rec[8..]) else {
            self.stats.malformed += 1;
            out.extend_from_slice(rec);
            return;
        };
        self.stats.stack_bytes += s.stack.len() as u64;
        // The kernel part of the chain stays; the user part is what unwinding finds.
        self.chain.clear();
        self.user.clear();
        let mut in_user = false;
        for i in 0..s.chain_len() {
            let a = s.chain_at(i).unwrap_or(0);
            if a == CONTEXT_USER {
                in_user = true;
            } else if in_user {
                if a >= CONTEXT_MAX {
                    break;
                }
                self.user.push(a);
            } else {
                self.chain.push(a);
            }
        }
        let wants_user = s.stack_size > 0;
        if let (true, Some(bp), Some(sp), Some(ip)) = (
            wants_user,
            s.user_reg(stackcopy::reg::BP),
            s.user_reg(stackcopy::reg::SP),
            s.user_reg(stackcopy::reg::IP),
        ) {
            self.chain.push(CONTEXT_USER);
            let from = self.chain.len();
            let regs = UserRegs { ip, sp, bp };
            let mut t = self.unwinder.unwind(s.pid, regs, s.stack, &mut self.chain);
            if t == Some(Truncation::StackCopyTooSmall) && self.splice(from) {
                self.stats.spliced += 1;
                t = (self.user.len() >= KERNEL_MAX_STACK).then_some(Truncation::TooDeep);
            }
            match t {
                Some(t) => {
                    self.chain.push(t.marker());
                    self.stats.truncated[t.code() as usize] += 1;
                }
                None => self.stats.complete += 1,
            }
            self.stats.unwound += 1;
        } else {
            self.stats.no_user += 1;
        }
        if !stackcopy::write(misc, s.head, &self.chain, s.raw_field, out) {
            self.stats.malformed += 1;
        }
    }

    /// Continue the unwound user frames (from `chain[from..]`) with the kernel's
    /// frame-pointer chain past the deepest frame both agree on.
    fn splice(&mut self, from: usize) -> bool {
        let Some(&last) = self.chain[from..].last() else {
            return false;
        };
        if self.chain.len() - from < 2 {
            return false;
        }
        let Some(j) = self.user.iter().skip(1).position(|&a| a == last) else {
            return false;
        };
        let rest = &self.user[j + 2..];
        if rest.is_empty() {
            return false;
        }
        self.chain.extend_from_slice(rest);
        true
    }
}
