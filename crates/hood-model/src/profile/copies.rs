//! User stack copies kept in a recording to be unwound when it is read: perf.data's
//! `--call-graph dwarf` samples, and hood's own samples the recorder kept raw when its
//! unwinding fell behind (`RAW_SAMPLES` chunks). Each is unwound by the caller's
//! [`StackUnwinder`] (hood-unwind's, so this crate stays pure) while the side-band records are
//! replayed in time order.

use hood_raw::attr::Attr;
use hood_raw::frames::for_each_frame;
use hood_raw::records::{Decoded, Event, CONTEXT_USER};
use hood_raw::replay::{follow_event, StackUnwinder};
use hood_raw::stackcopy;

/// Stack copies of samples, kept until they are unwound.
#[derive(Debug, Default)]
pub struct StackCopies {
    /// (index of the sample in the decoded events, ip, sp, bp, range in `bytes`).
    pub(crate) samples: Vec<(usize, [u64; 3], std::ops::Range<usize>)>,
    /// The copied stack bytes of every sample, one after the other.
    pub(crate) bytes: Vec<u8>,
    /// Largest copy size seen.
    pub(crate) max_size: usize,
}

impl StackCopies {
    /// Samples whose copy waits to be unwound.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Keep the copy of the sample just decoded as event `at` from `body` (its record after
    /// the header, under `attr`), if it has one.
    pub(crate) fn keep(&mut self, at: usize, attr: &Attr, body: &[u8]) {
        let Some(s) = stackcopy::parse(attr, body) else {
            return;
        };
        let regs = [
            s.user_reg(stackcopy::reg::IP),
            s.user_reg(stackcopy::reg::SP),
            s.user_reg(stackcopy::reg::BP),
        ];
        if let [Some(ip), Some(sp), Some(bp)] = regs {
            let from = self.bytes.len();
            self.bytes.extend_from_slice(s.stack);
            self.max_size = self.max_size.max(s.stack.len());
            self.samples
                .push((at, [ip, sp, bp], from..self.bytes.len()));
        }
    }

    /// Decode the records of `cpu`'s ring in `bytes` (written under `attr`, with registers
    /// and stack copies) into `decoded`, keeping each sample's copy.
    pub(crate) fn push_chunk(
        &mut self,
        decoded: &mut Decoded,
        attr: &Attr,
        cpu: u32,
        bytes: &[u8],
    ) {
        let mut bad = 0;
        let framed = for_each_frame(bytes, |f| {
            let at = decoded.events.len();
            let body = &f.bytes[8..];
            if decoded
                .push_record(attr, Some(cpu), f.ty, f.misc, body)
                .is_none()
            {
                bad += 1;
                return;
            }
            if matches!(
                decoded.events.get(at).map(|e| &e.event),
                Some(Event::Sample { .. })
            ) {
                self.keep(at, attr, body);
            }
        });
        decoded.malformed += bad + u64::from(framed.is_err());
    }

    /// The events were put in `order` (old index of each new place): follow them.
    pub(crate) fn reorder(&mut self, order: &[usize]) {
        let mut new_at = vec![0usize; order.len()];
        for (k, &i) in order.iter().enumerate() {
            if let Some(n) = new_at.get_mut(i) {
                *n = k;
            }
        }
        for s in &mut self.samples {
            s.0 = new_at.get(s.0).copied().unwrap_or(usize::MAX);
        }
    }
}

/// Replace the user part of every sample in `decoded` that has a copy in `stacks` with the
/// chain `u` unwinds it to; the side-band records are replayed to `u` in time order.
pub(crate) fn unwind_copies(
    decoded: &mut Decoded,
    stacks: &StackCopies,
    u: &mut dyn StackUnwinder,
) {
    let events = &decoded.events;
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| (events[i].time, i));
    let mut copy_of: rustc_hash::FxHashMap<usize, usize> = rustc_hash::FxHashMap::default();
    for (n, (i, ..)) in stacks.samples.iter().enumerate() {
        copy_of.insert(*i, n);
    }
    let mut chain = Vec::new();
    let mut updates = Vec::new();
    for i in order {
        match &decoded.events[i].event {
            Event::Sample { pid, chain: c, .. } => {
                let Some(&n) = copy_of.get(&i) else {
                    continue;
                };
                let (_, regs, range) = &stacks.samples[n];
                chain.clear();
                let old = decoded
                    .chains
                    .get(c.0 as usize..c.1 as usize)
                    .unwrap_or(&[]);
                chain.extend(old.iter().copied().take_while(|&a| a != CONTEXT_USER));
                chain.push(CONTEXT_USER);
                let stack = stacks.bytes.get(range.clone()).unwrap_or(&[]);
                if let Some(t) = u.unwind(*pid, *regs, stack, &mut chain) {
                    chain.push(t.marker());
                }
                let begin = decoded.chains.len() as u32;
                decoded.chains.extend_from_slice(&chain);
                updates.push((i, (begin, decoded.chains.len() as u32)));
            }
            other => follow_event(u, other),
        }
    }
    for (i, range) in updates {
        if let Event::Sample { chain, .. } = &mut decoded.events[i].event {
            *chain = range;
        }
    }
}
