//! The recorder's unwinding stage: raw ring bytes in, the same records out, with every stack
//! copy replaced by the call chain it unwinds to.
//!
//! Records of all CPUs drained in one round are taken in time order, so a sample is unwound
//! against the mappings its process had when it was taken, even when the mmap, fork or exec
//! record came through another CPU's ring.
//!
//! In an off-CPU recording ([`Rewriter::set_off_cpu`]) a thread's switch-out sample is held
//! back until the thread is seen running again: a wait shorter than `--off-cpu-min` is stored
//! without its user stack (the report shows such waits as one pseudo frame, never their
//! stacks), and so is a wake-up that ends a wait shorter than that. Only the waits a report
//! shows are unwound, which is most of the recorder's work in a context-switch storm. Nothing
//! is guessed: a wait is called short only when the thread was seen running again within
//! the minimum, so a stack is never dropped from a wait the report shows.

use hood_raw::attr::{clear_sample_bits, sample, Attr};
use hood_raw::frames::for_each_frame;
use std::collections::HashMap;

use hood_raw::records::{
    kind, trace_flags, Decoded, Event, SchedLayout, SchedRaw, Truncation, CONTEXT_MAX, CONTEXT_USER,
};
use hood_raw::stackcopy;

use crate::{Options, Stats, Unwinder, UserRegs};

/// Kernel-side limit of frame-pointer chains (`kernel.perf_event_max_stack`'s default).
const KERNEL_MAX_STACK: usize = 127;
/// Switch-out samples held back at most (bytes of records, about 7,500 waiting threads with
/// 8 KiB stack copies); past this every held sample is unwound and stored at once.
const MAX_HELD_BYTES: usize = 64 << 20;

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
    /// Off-CPU switch-outs and wake-ups of waits shorter than the minimum, stored without
    /// their user stack (not unwound).
    pub short_waits: u64,
    /// Wake-ups by hard interrupts and NMIs whose user stack (the interrupted task's) was
    /// dropped without unwinding.
    pub irq_user_stacks: u64,
}

/// The off-CPU state of [`Rewriter::set_off_cpu`].
struct Gate {
    layout: SchedLayout,
    min_ns: u64,
    /// Switch-out samples held until their thread runs again, by thread id.
    held: HashMap<u32, Held>,
    held_bytes: usize,
}

/// A switch-out sample waiting for its thread to run again.
struct Held {
    /// When the thread left the CPU.
    time: u64,
    /// The ring whose output it goes to.
    ring: usize,
    rec: Vec<u8>,
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
    gate: Option<Gate>,
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
            gate: None,
        })
    }

    /// The samples include the off-CPU tracepoints laid out as `layout`; waits shorter than
    /// `min_ns` are stored without user stacks (module notes). With `min_ns` 0 every stack is
    /// unwound.
    pub fn set_off_cpu(&mut self, layout: SchedLayout, min_ns: u64) {
        self.gate = (min_ns > 0).then(|| Gate {
            layout,
            min_ns,
            held: HashMap::new(),
            held_bytes: 0,
        });
    }

    /// Unwind and store every switch-out sample still held (their threads were not seen
    /// running again): call once, after the last round, with the same outputs.
    pub fn release_all(&mut self, output: &mut [Vec<u8>]) {
        let Some(g) = self.gate.as_mut() else {
            return;
        };
        let mut held: Vec<Held> = g.held.drain().map(|(_, h)| h).collect();
        g.held_bytes = 0;
        held.sort_by_key(|h| h.time);
        for h in held {
            if let Some(out) = output.get_mut(h.ring) {
                self.sample(&h.rec, out, false);
            }
        }
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

    /// Rewrite one round: each input is `(o, bytes)`, whole records drained from the ring of
    /// the CPU whose rewritten records are appended to `output[o]`. A CPU's records may come
    /// in several consecutive inputs (a ring whose unread bytes wrap).
    pub fn rewrite(&mut self, input: &[(usize, &[u8])], output: &mut [Vec<u8>]) {
        self.order.clear();
        // Side-band records are decoded once, here (for their time); the event is applied in
        // time order below. `NO_EVENT` marks samples and records that decode to nothing.
        self.decoded.events.clear();
        for (ring, (_, bytes)) in input.iter().enumerate() {
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
        for &(time, part, at, len, event) in &order {
            let (ring, bytes) = input[part];
            let rec = &bytes[at..at + len];
            if ring >= output.len() {
                continue;
            }
            if event != NO_EVENT {
                let ev = &self.decoded.events[event].event;
                hood_raw::replay::follow_event(&mut self.unwinder, ev);
                // A task session's switch-in record: the thread runs again.
                if let Event::Switch {
                    tid, out: false, ..
                } = *ev
                {
                    self.resolve(tid, time, output);
                }
            }
            let ty = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
            if ty == kind::SAMPLE {
                self.gated_sample(time, ring, rec, output);
            } else {
                output[ring].extend_from_slice(rec);
            }
        }
        self.order = order;
    }

    /// Route one sample through the off-CPU gate (module notes), or unwind it at once.
    fn gated_sample(&mut self, time: u64, ring: usize, rec: &[u8], output: &mut [Vec<u8>]) {
        let Some(g) = self.gate.as_ref() else {
            self.sample(rec, &mut output[ring], false);
            return;
        };
        let Some(s) = stackcopy::parse(&self.attr, &rec[8..]) else {
            self.sample(rec, &mut output[ring], false);
            return;
        };
        let (tid, has_stack) = (s.tid, s.stack_size > 0);
        let sched = g.layout.read(s.raw());
        // The sampled thread is on a CPU: whatever wait it had is over.
        self.resolve(tid, time, output);
        match sched {
            Some(SchedRaw::Switch {
                prev_tid, next_tid, ..
            }) => {
                // Whole-system sessions: the incoming thread's wait ends here.
                self.resolve(next_tid, time, output);
                if has_stack && prev_tid != 0 {
                    self.hold(prev_tid, time, ring, rec, output);
                } else {
                    self.sample(rec, &mut output[ring], false);
                }
            }
            Some(SchedRaw::Waking { wakee, flags }) => {
                let g = self.gate.as_ref().expect("gate checked above");
                let long = g
                    .held
                    .get(&wakee)
                    .is_some_and(|h| time.saturating_sub(h.time) >= g.min_ns);
                // A hard interrupt's or an NMI's user frames are those of whatever task it
                // interrupted: reports never show them.
                let in_irq = flags & (trace_flags::HARDIRQ | trace_flags::NMI) != 0;
                if has_stack && long && in_irq {
                    self.stats.irq_user_stacks += 1;
                } else if has_stack && !long {
                    self.stats.short_waits += 1;
                }
                self.sample(rec, &mut output[ring], has_stack && (!long || in_irq));
            }
            None => self.sample(rec, &mut output[ring], false),
        }
    }

    /// Hold `tid`'s switch-out sample until the thread runs again.
    fn hold(&mut self, tid: u32, time: u64, ring: usize, rec: &[u8], output: &mut [Vec<u8>]) {
        let Some(g) = self.gate.as_mut() else {
            return;
        };
        g.held_bytes += rec.len();
        if let Some(old) = g.held.insert(
            tid,
            Held {
                time,
                ring,
                rec: rec.to_vec(),
            },
        ) {
            // Cannot happen once the thread's samples are resolved first; keep it all the same.
            g.held_bytes -= old.rec.len();
            if let Some(out) = output.get_mut(old.ring) {
                self.sample(&old.rec, out, false);
            }
        }
        if self
            .gate
            .as_ref()
            .is_some_and(|g| g.held_bytes > MAX_HELD_BYTES)
        {
            self.release_all(output);
        }
    }

    /// `tid` was seen running at `time`: store its held switch-out, with its user stack
    /// unwound only if the wait lasted at least the minimum.
    fn resolve(&mut self, tid: u32, time: u64, output: &mut [Vec<u8>]) {
        if tid == 0 {
            return;
        }
        let Some(g) = self.gate.as_mut() else {
            return;
        };
        let Some(h) = g.held.remove(&tid) else {
            return;
        };
        g.held_bytes -= h.rec.len();
        let short = time.saturating_sub(h.time) < g.min_ns;
        if short {
            self.stats.short_waits += 1;
        }
        if let Some(out) = output.get_mut(h.ring) {
            self.sample(&h.rec, out, short);
        }
    }

    /// Unwind one sample and write it back without its registers and stack copy; with
    /// `short`, keep only its kernel frames (an off-CPU wait shorter than the minimum, or a
    /// wake-up's interrupted user context).
    fn sample(&mut self, rec: &[u8], out: &mut Vec<u8>, short: bool) {
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
        let wants_user = s.stack_size > 0 && !short;
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
        } else if !short {
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

#[cfg(test)]
mod tests {
    use super::*;
    use hood_raw::attr::sample;
    use hood_raw::records::CONTEXT_KERNEL;

    const SWITCH_ID: u16 = 372;
    const WAKING_ID: u16 = 375;
    const MIN: u64 = 10_000;

    fn formats() -> Vec<String> {
        let common = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
             \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
        vec![
            format!(
                "name: sched_switch\nID: {SWITCH_ID}\nformat:\n{common}\
                 \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
                 \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
                 \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
                 \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
                 \tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
            ),
            format!(
                "name: sched_waking\nID: {WAKING_ID}\nformat:\n{common}\
                 \tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
                 \tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\
                 \tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
            ),
        ]
    }

    fn attr_bytes() -> Vec<u8> {
        let mut a = vec![0u8; 128];
        a[4..8].copy_from_slice(&128u32.to_le_bytes());
        let st = sample::TID
            | sample::TIME
            | sample::CALLCHAIN
            | sample::RAW
            | sample::REGS_USER
            | sample::STACK_USER;
        a[24..32].copy_from_slice(&st.to_le_bytes());
        let regs: u64 =
            (1 << stackcopy::reg::BP) | (1 << stackcopy::reg::SP) | (1 << stackcopy::reg::IP);
        a[80..88].copy_from_slice(&regs.to_le_bytes());
        a
    }

    enum Kind {
        Timer,
        Switch { next: u32 },
        Waking { wakee: u32 },
        IrqWaking { wakee: u32 },
    }

    /// A sample of `tid` at `time` with a kernel frame, user registers and a 64-byte stack
    /// copy (or none with `stack` false).
    fn rec(tid: u32, time: u64, kind: Kind, stack: bool) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&time.to_le_bytes());
        b.extend_from_slice(&2u64.to_le_bytes());
        b.extend_from_slice(&CONTEXT_KERNEL.to_le_bytes());
        b.extend_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
        let mut raw = vec![0u8; 64];
        match kind {
            Kind::Timer => raw.clear(),
            Kind::Switch { next } => {
                raw[..2].copy_from_slice(&SWITCH_ID.to_le_bytes());
                raw[24..28].copy_from_slice(&tid.to_le_bytes());
                raw[32..40].copy_from_slice(&1u64.to_le_bytes());
                raw[56..60].copy_from_slice(&next.to_le_bytes());
            }
            Kind::Waking { wakee } => {
                raw[..2].copy_from_slice(&WAKING_ID.to_le_bytes());
                raw[24..28].copy_from_slice(&wakee.to_le_bytes());
            }
            Kind::IrqWaking { wakee } => {
                raw[..2].copy_from_slice(&WAKING_ID.to_le_bytes());
                raw[2] = trace_flags::HARDIRQ;
                raw[24..28].copy_from_slice(&wakee.to_le_bytes());
            }
        }
        b.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        b.extend_from_slice(&raw);
        b.extend_from_slice(&2u64.to_le_bytes());
        for r in [0x7ffd_0000u64, 0x7ffd_0000, 0x40_1000] {
            b.extend_from_slice(&r.to_le_bytes());
        }
        if stack {
            b.extend_from_slice(&64u64.to_le_bytes());
            b.extend_from_slice(&[0u8; 64]);
            b.extend_from_slice(&64u64.to_le_bytes());
        } else {
            b.extend_from_slice(&0u64.to_le_bytes());
        }
        let mut r = Vec::new();
        r.extend_from_slice(&kind::SAMPLE.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((b.len() + 8) as u16).to_le_bytes());
        r.extend_from_slice(&b);
        r
    }

    fn rewriter() -> Rewriter {
        let mut rw = Rewriter::new(&attr_bytes(), Options::default()).expect("stack samples");
        let layout = SchedLayout::from_formats(&formats()).expect("layout");
        rw.set_off_cpu(layout, MIN);
        rw
    }

    #[test]
    fn only_waits_the_report_shows_are_unwound() {
        let mut rw = rewriter();
        let cpu0: Vec<u8> = [
            // Thread 10 leaves at 1 µs and runs again at 3 µs: short, no user stack.
            rec(10, 1_000, Kind::Switch { next: 0 }, true),
            rec(10, 3_000, Kind::Timer, true),
            // Thread 11 leaves at 4 µs, is woken at 20 µs and comes in at 21 µs: long.
            rec(11, 4_000, Kind::Switch { next: 0 }, true),
            // A wake-up of a thread not waiting: nothing to show.
            rec(12, 5_000, Kind::Waking { wakee: 99 }, true),
        ]
        .concat();
        let cpu1: Vec<u8> = [
            rec(12, 20_000, Kind::Waking { wakee: 11 }, true),
            rec(12, 21_000, Kind::Switch { next: 11 }, true),
            // A wake-up by another process's thread, kernel stack only: kept as it is.
            rec(13, 22_000, Kind::Waking { wakee: 12 }, false),
        ]
        .concat();
        let mut out = vec![Vec::new(), Vec::new()];
        rw.rewrite(&[(0, &cpu0), (1, &cpu1)], &mut out);
        // 10's switch-out and the wake-up of 99 are short; 12's switch-out still waits.
        assert_eq!(rw.stats().short_waits, 2);
        // The timer sample, 11's switch-out and its wake-up.
        assert_eq!(rw.stats().unwound, 3);
        rw.release_all(&mut out);
        assert_eq!(
            rw.stats().unwound,
            4,
            "a wait still open at the end keeps its stack"
        );
        let count = |b: &[u8]| {
            let mut n = 0;
            for_each_frame(b, |_| n += 1).expect("whole records");
            n
        };
        assert_eq!(count(&out[0]) + count(&out[1]), 7, "every record is stored");
    }

    #[test]
    fn without_a_minimum_every_stack_is_unwound() {
        let mut rw = Rewriter::new(&attr_bytes(), Options::default()).expect("stack samples");
        rw.set_off_cpu(SchedLayout::from_formats(&formats()).expect("layout"), 0);
        let cpu0: Vec<u8> = [
            rec(10, 1_000, Kind::Switch { next: 0 }, true),
            rec(10, 3_000, Kind::Timer, true),
        ]
        .concat();
        let mut out = vec![Vec::new()];
        rw.rewrite(&[(0, &cpu0)], &mut out);
        assert_eq!((rw.stats().short_waits, rw.stats().unwound), (0, 2));
    }

    #[test]
    fn an_interrupts_user_context_is_not_unwound() {
        let mut rw = rewriter();
        let cpu0: Vec<u8> = [
            rec(10, 1_000, Kind::Switch { next: 0 }, true),
            // A timer interrupt in thread 20 ends 10's long sleep.
            rec(20, 50_000, Kind::IrqWaking { wakee: 10 }, true),
            rec(20, 51_000, Kind::Switch { next: 10 }, true),
        ]
        .concat();
        let mut out = vec![Vec::new()];
        rw.rewrite(&[(0, &cpu0)], &mut out);
        assert_eq!(rw.stats().irq_user_stacks, 1);
        assert_eq!(rw.stats().short_waits, 0);
        // 10's switch-out only (20's is still held).
        assert_eq!(rw.stats().unwound, 1);
    }
}
