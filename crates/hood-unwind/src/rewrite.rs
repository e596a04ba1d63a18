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
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use hood_raw::records::{
    kind, trace_flags, Decoded, Event, SampleParts, SchedLayout, SchedRaw, Truncation, CONTEXT_MAX,
    CONTEXT_USER, TASK_REPORT_PREEMPTED,
};
use hood_raw::stackcopy;

use crate::{Options, Stats, Unwinder, UserRegs};

/// Kernel-side limit of call chains (`kernel.perf_event_max_stack`'s default), unless the
/// recorder says otherwise ([`Rewriter::set_kernel_max_stack`]).
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
    /// Deferred stacks ([`Rewriter::set_deferred`]): user stacks the kernel copied on a
    /// thread's way back to user space, at a switch or at a wake-up, joined to their switch
    /// or wake-up.
    pub deferred_joined: u64,
    /// Waits at least the minimum long that got no deferred user stack: in neither a system
    /// call nor a page fault, or the copy was lost.
    pub deferred_missing: u64,
    /// Deferred copies with no switch or wake-up to join (another process's thread, a wait
    /// that began before the recording).
    pub deferred_orphans: u64,
    /// Deferred kernel stacks (taken when a thread came back from a long wait) joined to
    /// their switch-outs.
    pub kernel_stacks_joined: u64,
    /// Waits at least the minimum long whose deferred kernel stack never came (lost, or the
    /// wait was just under the kernel side's threshold).
    pub kernel_stacks_missing: u64,
    /// Samples kept with their raw registers and stack copy, to be unwound at report time
    /// ([`Rewriter::keep_raw`]: their ring was filling faster than it was unwound).
    pub kept_raw: u64,
}

/// The off-CPU state of [`Rewriter::set_off_cpu`].
struct Gate {
    layout: SchedLayout,
    min_ns: u64,
    /// Switch-out samples held until their thread runs again, by thread id.
    held: HashMap<u32, Held>,
    held_bytes: usize,
    /// Buffers of held switch-outs already stored, kept for the next ones: a storm holds
    /// and stores one per switch, and an allocation and a free each time were a few
    /// percent of the recorder's CPU.
    spare: Vec<Vec<u8>>,
}

/// Spare buffers kept at most, and the largest kept (a switch-out without a stack copy is
/// a few hundred bytes; one with a copy is not worth keeping).
const SPARE_BUFFERS: usize = 256;
const SPARE_BYTES: usize = 1024;

/// A switch-out sample waiting for its thread to run again.
struct Held {
    /// When the thread left the CPU.
    time: u64,
    /// The ring whose output it goes to.
    ring: usize,
    rec: Vec<u8>,
    /// Where its user stack comes from.
    user: UserFrom,
    /// Where its kernel stack comes from.
    kernel: KernelFrom,
}

/// Where a held switch-out's kernel stack comes from.
enum KernelFrom {
    /// Its own call chain (or its deferred user copy's, for a copy taken at the switch).
    Own,
    /// The deferred kernel stack taken when the thread is switched back in.
    Awaited,
    /// That stack, as a call chain (`PERF_CONTEXT_KERNEL`, then the addresses).
    Got(Vec<u64>),
    /// None came.
    Missing,
}

/// Where a held switch-out's user stack comes from.
enum UserFrom {
    /// Its own stack copy (or none: a kernel thread).
    Own,
    /// A deferred copy already joined (one taken at the switch).
    Joined(Vec<u8>),
    /// The deferred copy taken on its way back to user space from the system call or page
    /// fault it waits in.
    Later,
    /// None will come: a wait in neither.
    Missing,
    /// `Later` or `Missing`, as its kernel stack (still to come) says.
    Undecided,
}

/// The deferred stacks of [`Rewriter::set_deferred`].
struct Deferred {
    /// Ids of the output events.
    ids: HashSet<u64>,
    /// The kernel's entry code of system calls and page faults, as address ranges.
    entry_code: Vec<(u64, u64)>,
    /// Long waits whose user stack comes on their thread's way back to user space, by
    /// thread.
    awaiting: HashMap<u32, Vec<Held>>,
    /// Switch and wake-up samples of this round joined to the output next to them in their
    /// ring: (input, offset) of the sample -> (input, offset, length) of the output.
    pairs: HashMap<(usize, usize), (usize, usize, usize)>,
    /// Ids of a task session's wake-up outputs ([`Rewriter::set_wake_outputs`]).
    wake_ids: HashSet<u64>,
    /// The kernel code that tells a waker's context ([`Rewriter::set_wake_outputs`]).
    irq_code: Vec<(u64, u64, u8)>,
    /// A wake-up record being patched.
    scratch: Vec<u8>,
    /// Outputs joined this round.
    paired: HashSet<(usize, usize)>,
}

impl Deferred {
    /// The interrupt bits of `common_flags` for a waker whose kernel call chain is `chain`
    /// (innermost first): those of the innermost frame in interrupt code, else 0.
    fn wake_flags(&self, chain: impl Iterator<Item = u64>) -> u8 {
        chain
            .take_while(|&a| a != CONTEXT_USER)
            .find_map(|a| {
                self.irq_code
                    .iter()
                    .find(|&&(lo, hi, _)| a >= lo && a < hi)
                    .map(|&(.., f)| f)
            })
            .unwrap_or(0)
    }

    /// Whether a kernel call chain runs through system call or page fault entry code.
    fn through_entry(&self, chain: &[u64]) -> bool {
        chain
            .iter()
            .take_while(|&&a| a != CONTEXT_USER)
            .any(|&a| self.entry_code.iter().any(|&(lo, hi)| a >= lo && a < hi))
    }
}

/// What a record of the round is, for joining deferred copies to the samples beside them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Other,
    SwitchOut(u32),
    Waking(u32),
    SwitchCopy(u32),
    WakerCopy(u32),
}

/// `PERF_RECORD_MISC_USER`: a sample taken in user mode.
const MISC_USER: u16 = 2;

/// Kinds of a deferred copy's raw record (hood-perf's `DEFERRED_*`; hood-perf's tests check
/// both agree).
pub const DEFERRED_RETURN: u64 = 1;
/// A copy taken at a switch-out (a preemption, or a thread with no rseq area blocking).
pub const DEFERRED_AT_SWITCH: u64 = 2;
/// A waker's copy.
pub const DEFERRED_WAKER: u64 = 3;
/// A kernel stack taken when its thread came back from a long wait (raw record `u64 kind,
/// u64 start, u64 tid`, then the addresses).
pub const DEFERRED_KSTACK: u64 = 4;

/// A sample body parsed by its event's own layout when `layouts` has one (its first word is
/// PERF_SAMPLE_IDENTIFIER), else as the session's `attr` with a stack copy.
fn parse_body<'a>(
    attr: &Attr,
    layouts: &HashMap<u64, Attr>,
    body: &'a [u8],
) -> Option<SampleParts<'a>> {
    if !layouts.is_empty() {
        let id = body
            .get(..8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
        if let Some(a) = id.and_then(|id| layouts.get(&id)) {
            return hood_raw::records::parse_sample(a, body);
        }
    }
    stackcopy::parse(attr, body)
}

/// `(kind, start)` of a deferred copy's raw record.
fn deferred_kind(raw: &[u8]) -> Option<(u64, u64)> {
    let w = |i: usize| Some(u64::from_ne_bytes(raw.get(i..i + 8)?.try_into().ok()?));
    Some((w(0)?, w(8)?))
}

/// Whether a switch-out's `prev_state` leaves the thread runnable (preempted, or switched
/// out at a return to user space or a yield): the kernel copied its stack at the switch.
fn runnable(state: u64) -> bool {
    state == 0 || state & TASK_REPORT_PREEMPTED != 0
}

/// Bytes a held switch-out counts against the cap.
fn held_len(h: &Held) -> usize {
    h.rec.len()
        + match &h.user {
            UserFrom::Joined(u) => u.len(),
            _ => 0,
        }
        + match &h.kernel {
            KernelFrom::Got(k) => k.len() * 8,
            _ => 0,
        }
}

/// Whether a held switch-out has every stack it will get.
fn ready(h: &Held) -> bool {
    !matches!(h.kernel, KernelFrom::Awaited)
        && !matches!(h.user, UserFrom::Later | UserFrom::Undecided)
}

/// The user stack record joined to a held switch-out, if any.
fn joined_user(h: &Held) -> Option<&[u8]> {
    match &h.user {
        UserFrom::Joined(u) => Some(&u[..]),
        _ => None,
    }
}

/// The kernel frames a held switch-out is stored with.
fn got_kernel(h: &Held) -> Kernel<'_> {
    match &h.kernel {
        KernelFrom::Own => Kernel::Own,
        KernelFrom::Got(k) => Kernel::Given(k),
        KernelFrom::Awaited | KernelFrom::Missing => Kernel::Without,
    }
}

/// The kernel frames [`Rewriter::sample`] stores.
#[derive(Clone, Copy)]
enum Kernel<'a> {
    /// The sample's own call chain; a sample without one takes its deferred copy's (a
    /// waker's or a preempted thread's kernel frames, copied in the same tracepoint hit).
    Own,
    /// A deferred kernel stack.
    Given(&'a [u64]),
    /// None (the copy's kernel frames are from another moment: the way back to user space).
    Without,
}

/// No decoded side-band event for a record.
const NO_EVENT: usize = usize::MAX;

/// Rewrites drained ring bytes; see the module notes.
pub struct Rewriter {
    /// Events whose samples have their own layout ([`Rewriter::set_layouts`]), by id.
    layouts: HashMap<u64, Attr>,
    attr: Attr,
    stored_attr: Vec<u8>,
    unwinder: Unwinder,
    stats: RewriteStats,
    decoded: Decoded,
    /// (time, ring, offset, length, index of its decoded side-band event or `NO_EVENT`).
    /// Per record of a round: time, input, offset, length, decoded side-band event (or
    /// `NO_EVENT`), and the index of its parsed sample (or `NO_EVENT`).
    order: Vec<(u64, usize, usize, usize, usize, usize)>,
    chain: Vec<u64>,
    user: Vec<u64>,
    gate: Option<Gate>,
    deferred: Option<Deferred>,
    kernel_max_stack: usize,
    /// Stacks stored cut by a full stack copy, per (pid, copy size), since
    /// [`Rewriter::take_copy_cuts`].
    copy_cuts: HashMap<(u32, u64), u32>,
    /// Per output: this round's samples with stack copies are kept raw, not unwound
    /// ([`Rewriter::keep_raw`]), and appended to `raw_out` of the same index.
    keep_raw: Vec<bool>,
    raw_out: Vec<Vec<u8>>,
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
            deferred: None,
            kernel_max_stack: KERNEL_MAX_STACK,
            copy_cuts: HashMap::default(),
            keep_raw: Vec::new(),
            raw_out: Vec::new(),
            layouts: HashMap::default(),
        })
    }

    /// Samples of the events `layouts` names by id are laid out by their own attribute (as
    /// bytes), not the session's: hood-perf's off-CPU tracepoints with deferred stacks carry
    /// no user registers or stack copy size. They are rewritten into the stored layout all the
    /// same. An attribute that does not parse, or that lacks PERF_SAMPLE_IDENTIFIER or the
    /// session's fields before the call chain, is left out (its samples then fail to parse as
    /// the session's and are counted malformed).
    pub fn set_layouts(&mut self, layouts: &[(u64, Vec<u8>)]) {
        let head = sample::IDENTIFIER
            | sample::IP
            | sample::TID
            | sample::TIME
            | sample::ADDR
            | sample::ID
            | sample::STREAM_ID
            | sample::CPU
            | sample::PERIOD
            | sample::READ;
        for (id, bytes) in layouts {
            let Ok(a) = Attr::parse(bytes) else {
                continue;
            };
            if a.sample_type & sample::IDENTIFIER != 0
                && a.sample_type & head == self.attr.sample_type & head
                && a.read_format == self.attr.read_format
            {
                self.layouts.insert(*id, a);
            }
        }
    }

    /// The raw-copy fallback: in the next rounds, the samples of output `o` with
    /// `keep[o]` set are not unwound but kept verbatim (registers and stack copy, under the
    /// attribute the kernel got) for [`Rewriter::take_raw`]; their side-band records still
    /// go to the output. Only CPU samples are kept: an off-CPU recording's switches and
    /// wake-ups go through the gate as before.
    pub fn keep_raw(&mut self, keep: &[bool]) {
        self.keep_raw.clear();
        self.keep_raw.extend_from_slice(keep);
    }

    /// The samples of output `o` kept raw (records as the kernel wrote them) since the caller
    /// last emptied this buffer.
    pub fn take_raw(&mut self, o: usize) -> Option<&mut Vec<u8>> {
        self.raw_out.get_mut(o)
    }

    /// The stacks stored `[truncated: stack copy too small]` since the last call whose copy
    /// the kernel filled to its size (a bigger copy would have held more of the stack; not
    /// the interrupted code of a handler on another stack), per pid and copy size.
    pub fn take_copy_cuts(&mut self) -> Vec<(u32, u64, u32)> {
        self.copy_cuts
            .drain()
            .map(|((pid, size), n)| (pid, size, n))
            .collect()
    }

    /// The samples include the off-CPU tracepoints laid out as `layout`; waits shorter than
    /// `min_ns` are stored without user stacks (module notes). With `min_ns` 0 every stack is
    /// unwound.
    pub fn set_off_cpu(&mut self, layout: SchedLayout, min_ns: u64) {
        self.gate = (min_ns > 0).then(|| Gate {
            layout,
            min_ns,
            held: HashMap::default(),
            held_bytes: 0,
            spare: Vec::new(),
        });
    }

    /// The kernel's limit on call-chain entries (`kernel.perf_event_max_stack`) this machine
    /// has: a frame-pointer chain as long as that was cut by it.
    pub fn set_kernel_max_stack(&mut self, frames: u32) {
        self.kernel_max_stack = (frames as usize).max(1);
    }

    /// The switch and wake-up samples carry no user stack: the kernel copies it only for
    /// waits at least the minimum long, in samples of the events `output_ids` (hood-perf's
    /// deferred stacks: raw record `u64 kind, u64 start`). Each copy is joined here to the
    /// switch-out or wake-up it belongs to. `entry_code`: address ranges of the kernel's entry
    /// code of system calls and page faults, which tell a wait inside a system call or a
    /// fault (whose copy comes on the thread's way back to user space) from one that is in
    /// neither. Call after [`Rewriter::set_off_cpu`].
    pub fn set_deferred(&mut self, output_ids: &[u64], entry_code: Vec<(u64, u64)>) {
        self.deferred = Some(Deferred {
            ids: output_ids.iter().copied().collect(),
            entry_code,
            awaiting: HashMap::default(),
            pairs: HashMap::default(),
            paired: HashSet::default(),
            wake_ids: HashSet::default(),
            irq_code: Vec::new(),
            scratch: Vec::new(),
        });
    }

    /// A task session's wake-ups come in samples of the events `ids`: `sched_waking` records
    /// written by hood-perf's BPF program (the waker's kernel call chain, `common_flags` 0).
    /// Each is stored with the interrupt bits of `common_flags` set as the tracepoint would
    /// have set them, found in the waker's kernel stack: its innermost frame in one of
    /// `irq_code`'s ranges `(start, end, flags)` gives the flags (a soft interrupt's handler
    /// loop, a hard interrupt's or an NMI's entry code); none, a thread woke. Call after
    /// [`Rewriter::set_deferred`].
    pub fn set_wake_outputs(&mut self, ids: &[u64], irq_code: Vec<(u64, u64, u8)>) {
        if let Some(d) = self.deferred.as_mut() {
            d.wake_ids = ids.iter().copied().collect();
            d.irq_code = irq_code;
        }
    }

    /// Unwind and store every switch-out sample still held (their threads were not seen
    /// running again): call once, after the last round, with the same outputs.
    pub fn release_all(&mut self, output: &mut [Vec<u8>]) {
        let Some(g) = self.gate.as_mut() else {
            return;
        };
        let mut held: Vec<Held> = g.held.drain().map(|(_, h)| h).collect();
        g.held_bytes = 0;
        if let Some(d) = self.deferred.as_mut() {
            for (_, mut v) in d.awaiting.drain() {
                for h in &mut v {
                    // Long waits (they were resolved): count what never came.
                    if matches!(h.user, UserFrom::Later | UserFrom::Undecided) {
                        self.stats.deferred_missing += 1;
                        h.user = UserFrom::Missing;
                    }
                    if matches!(h.kernel, KernelFrom::Awaited) {
                        self.stats.kernel_stacks_missing += 1;
                        h.kernel = KernelFrom::Missing;
                    }
                }
                held.extend(v);
            }
        }
        held.sort_by_key(|h| h.time);
        for h in held {
            if let Some(out) = output.get_mut(h.ring) {
                self.sample(&h.rec, joined_user(&h), got_kernel(&h), out, false);
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
        // Each sample is parsed once, here; the steps below take the parts.
        let mut parsed: Vec<SampleParts<'_>> = Vec::with_capacity(self.order.capacity());
        // And its switch or wake-up fields read once (off-CPU recordings).
        let mut sched: Vec<Option<SchedRaw>> = Vec::with_capacity(self.order.capacity());
        let layout = self.gate.as_ref().map(|g| &g.layout);
        // Deferred copies in this round: in a storm most rounds have none, and then there is
        // nothing to join.
        let copy_ids = self.deferred.as_ref().map(|d| &d.ids);
        let mut copies = 0usize;
        for (ring, (_, bytes)) in input.iter().enumerate() {
            let broken = for_each_frame(bytes, |f| {
                let mut sample = NO_EVENT;
                let (time, event) = if f.ty == kind::SAMPLE {
                    let parts = f
                        .bytes
                        .get(8..)
                        .and_then(|b| parse_body(&self.attr, &self.layouts, b));
                    let t = parts.as_ref().map_or(0, |s| s.time);
                    if let Some(p) = parts {
                        if let (Some(ids), Some(id)) = (copy_ids, p.id) {
                            copies += usize::from(ids.contains(&id));
                        }
                        sample = parsed.len();
                        sched.push(layout.and_then(|l| l.read(p.raw())));
                        parsed.push(p);
                    }
                    (t, NO_EVENT)
                } else {
                    let before = self.decoded.events.len();
                    self.decoded.push_chunk(&self.attr, 0, f.bytes);
                    match self.decoded.events.get(before) {
                        Some(e) => (e.time, before),
                        None => (0, NO_EVENT),
                    }
                };
                self.order
                    .push((time, ring, f.at, f.bytes.len(), event, sample));
            });
            if broken.is_err() {
                self.stats.malformed += 1;
            }
        }
        match (copies, self.deferred.as_mut()) {
            (0, Some(d)) => {
                d.pairs.clear();
                d.paired.clear();
            }
            _ => self.join_neighbours(&parsed, &sched),
        }
        self.order
            .sort_by_key(|&(time, ring, at, ..)| (time, ring, at));
        let order = std::mem::take(&mut self.order);
        for &(time, part, at, len, event, sample) in &order {
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
            if ty != kind::SAMPLE {
                output[ring].extend_from_slice(rec);
                continue;
            }
            let mut joined = None;
            if let Some(d) = self.deferred.as_ref().filter(|d| !d.pairs.is_empty()) {
                if d.paired.contains(&(part, at)) {
                    continue;
                }
                if let Some(&(p, a, l)) = d.pairs.get(&(part, at)) {
                    joined = Some(&input[p].1[a..a + l]);
                }
            }
            let parts = parsed.get(sample);
            if self.keep_raw.get(ring) == Some(&true)
                && self.gate.is_none()
                && parts.is_some_and(|p| p.stack_size > 0)
            {
                if self.raw_out.len() < output.len() {
                    self.raw_out.resize_with(output.len(), Vec::new);
                }
                self.raw_out[ring].extend_from_slice(rec);
                self.stats.kept_raw += 1;
                continue;
            }
            if self.deferred_copy(time, parts, output) {
                continue;
            }
            let raw = sched.get(sample).copied().flatten();
            if let Some((buf, raw)) = self.patched_wakeup(rec, parts, raw) {
                let parts = parse_body(&self.attr, &self.layouts, &buf[8..]);
                self.gated_sample(time, ring, &buf, parts.as_ref(), Some(raw), joined, output);
                if let Some(d) = self.deferred.as_mut() {
                    d.scratch = buf;
                }
                continue;
            }
            self.gated_sample(time, ring, rec, parts, raw, joined, output);
        }
        self.order = order;
    }

    /// A wake-up written by the BPF program ([`Rewriter::set_wake_outputs`]): a copy of
    /// `rec` with its `common_flags` set from the waker's kernel stack, and what it says.
    fn patched_wakeup(
        &mut self,
        rec: &[u8],
        s: Option<&SampleParts<'_>>,
        raw: Option<SchedRaw>,
    ) -> Option<(Vec<u8>, SchedRaw)> {
        let (s, Some(SchedRaw::Waking { wakee, .. })) = (s?, raw) else {
            return None;
        };
        let g = self.gate.as_ref()?;
        let d = self.deferred.as_mut()?;
        if !s.id.is_some_and(|id| d.wake_ids.contains(&id)) {
            return None;
        }
        let flags = d.wake_flags((0..s.chain_len()).filter_map(|i| s.chain_at(i)));
        // The raw field lies inside the record: its data starts after its size word.
        let at = (s.raw_field.as_ptr() as usize).checked_sub(rec.as_ptr() as usize)?
            + 4
            + g.layout.common_flags_offset();
        let mut buf = std::mem::take(&mut d.scratch);
        buf.clear();
        buf.extend_from_slice(rec);
        *buf.get_mut(at)? = flags;
        Some((buf, SchedRaw::Waking { wakee, flags }))
    }

    /// The class of a sample record for joining deferred copies.
    fn class(&self, s: &SampleParts<'_>, sched: Option<SchedRaw>) -> Class {
        let (Some(_), Some(d)) = (self.gate.as_ref(), self.deferred.as_ref()) else {
            return Class::Other;
        };
        if s.id.is_some_and(|id| d.ids.contains(&id)) {
            return match deferred_kind(s.raw()) {
                Some((DEFERRED_AT_SWITCH, _)) => Class::SwitchCopy(s.tid),
                Some((DEFERRED_WAKER, _)) => Class::WakerCopy(s.tid),
                _ => Class::Other,
            };
        }
        match sched {
            Some(SchedRaw::Switch { prev_tid, .. }) if prev_tid != 0 => Class::SwitchOut(prev_tid),
            Some(SchedRaw::Waking { .. }) => Class::Waking(s.tid),
            _ => Class::Other,
        }
    }

    /// Join each copy taken at a switch-out and each waker's to the switch or wake-up sample of the
    /// same thread next to it in its ring (the kernel writes both in one tracepoint hit).
    fn join_neighbours(&mut self, parsed: &[SampleParts<'_>], sched: &[Option<SchedRaw>]) {
        if self.deferred.is_none() {
            return;
        }
        let mut pairs = Vec::new();
        let mut prev: Option<(usize, usize, usize, Class)> = None;
        for &(_, part, at, len, _, sample) in &self.order {
            let class = parsed.get(sample).map_or(Class::Other, |s| {
                self.class(s, sched.get(sample).copied().flatten())
            });
            if let Some((pp, pa, pl, pc)) = prev.filter(|p| p.0 == part) {
                let copy_first = matches!(
                    (pc, class),
                    (Class::SwitchCopy(a), Class::SwitchOut(b)) | (Class::WakerCopy(a), Class::Waking(b)) if a == b
                );
                let copy_after = matches!(
                    (pc, class),
                    (Class::SwitchOut(a), Class::SwitchCopy(b)) | (Class::Waking(a), Class::WakerCopy(b)) if a == b
                );
                if copy_first {
                    pairs.push(((part, at), (pp, pa, pl)));
                    prev = None;
                    continue;
                }
                if copy_after {
                    pairs.push(((pp, pa), (part, at, len)));
                    prev = None;
                    continue;
                }
            }
            prev = Some((part, at, len, class));
        }
        let d = self.deferred.as_mut().expect("checked above");
        d.pairs.clear();
        d.paired.clear();
        for (sample, copy) in pairs {
            d.paired.insert((copy.0, copy.1));
            d.pairs.insert(sample, copy);
        }
    }

    /// A deferred copy met in time order: a thread's way back to user space joins the
    /// long waits of its thread waiting for it, a kernel stack the wait it was taken for;
    /// joined neighbours were handled with their samples. Returns whether the sample was a
    /// deferred copy (never stored itself).
    fn deferred_copy(
        &mut self,
        time: u64,
        s: Option<&SampleParts<'_>>,
        output: &mut [Vec<u8>],
    ) -> bool {
        let Some(d) = self.deferred.as_ref() else {
            return false;
        };
        let Some(s) = s else {
            return false;
        };
        if !s.id.is_some_and(|id| d.ids.contains(&id)) {
            return false;
        }
        let tid = s.tid;
        match deferred_kind(s.raw()) {
            // The thread's way back to user space.
            Some((DEFERRED_RETURN, _)) => {}
            Some((DEFERRED_KSTACK, start)) => {
                let raw = s.raw();
                let word = |i: usize| {
                    raw.get(i..i + 8)
                        .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
                };
                match word(16) {
                    Some(t) => {
                        let ips = raw[24..]
                            .chunks_exact(8)
                            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
                            .take_while(|&a| a != 0);
                        let mut chain = vec![hood_raw::records::CONTEXT_KERNEL];
                        chain.extend(ips.take(self.kernel_max_stack));
                        self.kernel_stack(t as u32, time, start, chain, output);
                    }
                    None => self.stats.malformed += 1,
                }
                return true;
            }
            Some(_) => {
                self.stats.deferred_orphans += 1;
                return true;
            }
            None => {
                self.stats.malformed += 1;
                return true;
            }
        }
        // The thread returns from its system call or fault: it runs.
        self.resolve(tid, time, output);
        let waits = self
            .deferred
            .as_mut()
            .and_then(|d| d.awaiting.remove(&tid))
            .unwrap_or_default();
        if waits.is_empty() {
            self.stats.deferred_orphans += 1;
        }
        for h in waits {
            if let Some(g) = self.gate.as_mut() {
                g.held_bytes = g.held_bytes.saturating_sub(held_len(&h));
            }
            if matches!(h.kernel, KernelFrom::Awaited) {
                self.stats.kernel_stacks_missing += 1;
            }
            if let Some(out) = output.get_mut(h.ring) {
                self.stats.deferred_joined += 1;
                self.sample_from(&h.rec, Some(s), got_kernel(&h), out);
            }
        }
        true
    }

    /// `tid`'s kernel stack, taken when it was switched back in at `time` after a wait that
    /// began at `start` (the kernel side's clock): join it to that wait's switch-out, still
    /// held or already awaiting, and decide where its user stack comes from.
    fn kernel_stack(
        &mut self,
        tid: u32,
        time: u64,
        start: u64,
        chain: Vec<u64>,
        output: &mut [Vec<u8>],
    ) {
        let Some(g) = self.gate.as_mut() else {
            return;
        };
        let in_entry = self
            .deferred
            .as_ref()
            .is_some_and(|d| d.through_entry(&chain));
        let decide = |h: &mut Held, chain: Vec<u64>| {
            h.kernel = KernelFrom::Got(chain);
            if matches!(h.user, UserFrom::Undecided) {
                h.user = if in_entry {
                    UserFrom::Later
                } else {
                    UserFrom::Missing
                };
            }
        };
        // Not resolved yet (the copy came before the switch that names the thread).
        if let Some(h) = g
            .held
            .get_mut(&tid)
            .filter(|h| h.time <= time && matches!(h.kernel, KernelFrom::Awaited))
        {
            g.held_bytes += chain.len() * 8;
            decide(h, chain);
            self.stats.kernel_stacks_joined += 1;
            return;
        }
        let Some(waits) = self
            .deferred
            .as_mut()
            .and_then(|d| d.awaiting.get_mut(&tid))
        else {
            self.stats.deferred_orphans += 1;
            return;
        };
        let Some(i) = waits
            .iter()
            .enumerate()
            .filter(|(_, h)| matches!(h.kernel, KernelFrom::Awaited))
            .min_by_key(|(_, h)| h.time.abs_diff(start))
            .map(|(i, _)| i)
        else {
            self.stats.deferred_orphans += 1;
            return;
        };
        self.stats.kernel_stacks_joined += 1;
        decide(&mut waits[i], chain);
        if !ready(&waits[i]) {
            return;
        }
        let h = waits.remove(i);
        if waits.is_empty() {
            if let Some(d) = self.deferred.as_mut() {
                d.awaiting.remove(&tid);
            }
        }
        self.store_resolved(h, output);
    }

    /// Store a long wait that has every stack it will get.
    fn store_resolved(&mut self, h: Held, output: &mut [Vec<u8>]) {
        if let Some(g) = self.gate.as_mut() {
            g.held_bytes = g.held_bytes.saturating_sub(held_len(&h));
        }
        match h.user {
            UserFrom::Joined(_) => self.stats.deferred_joined += 1,
            UserFrom::Missing => self.stats.deferred_missing += 1,
            _ => {}
        }
        if let Some(out) = output.get_mut(h.ring) {
            self.sample(&h.rec, joined_user(&h), got_kernel(&h), out, false);
        }
        self.recycle(h.rec);
    }

    /// Keep a stored switch-out's buffer for the next one held.
    fn recycle(&mut self, buf: Vec<u8>) {
        if let Some(g) = self.gate.as_mut() {
            if g.spare.len() < SPARE_BUFFERS && buf.capacity() <= SPARE_BYTES {
                g.spare.push(buf);
            }
        }
    }

    /// Route one sample through the off-CPU gate (module notes), or unwind it at once.
    /// `sched`: its switch or wake-up fields; `joined`: the deferred copy of its user stack
    /// found next to it.
    #[allow(clippy::too_many_arguments)]
    fn gated_sample(
        &mut self,
        time: u64,
        ring: usize,
        rec: &[u8],
        s: Option<&SampleParts<'_>>,
        sched: Option<SchedRaw>,
        joined: Option<&[u8]>,
        output: &mut [Vec<u8>],
    ) {
        let (Some(_), Some(s)) = (self.gate.as_ref(), s) else {
            match s {
                Some(s) => self.unwound(rec, s, None, Kernel::Own, &mut output[ring], false),
                None => self.sample(rec, None, Kernel::Own, &mut output[ring], false),
            }
            return;
        };
        let deferred = self.deferred.is_some();
        let (tid, has_stack) = (s.tid, s.stack_size > 0);
        // The sampled thread is on a CPU: whatever wait it had is over.
        self.resolve(tid, time, output);
        match sched {
            Some(SchedRaw::Switch {
                prev_tid,
                next_tid,
                state,
            }) => {
                // Whole-system sessions: the incoming thread's wait ends here.
                self.resolve(next_tid, time, output);
                if prev_tid == 0 || !(has_stack || deferred) {
                    self.unwound(rec, s, None, Kernel::Own, &mut output[ring], false);
                    return;
                }
                // A switch sample without a call chain: the kernel stack of a long wait
                // comes when the thread is switched back in.
                let kernel = match deferred && s.chain_len() == 0 && !runnable(state) {
                    true => KernelFrom::Awaited,
                    false => KernelFrom::Own,
                };
                let in_entry = || {
                    let chain: Vec<u64> =
                        (0..s.chain_len()).filter_map(|i| s.chain_at(i)).collect();
                    self.deferred
                        .as_ref()
                        .is_some_and(|d| d.through_entry(&chain))
                };
                let user = if !deferred || s.regs.is_empty() {
                    UserFrom::Own
                } else if let Some(j) = joined {
                    UserFrom::Joined(j.to_vec())
                } else if runnable(state) {
                    UserFrom::Missing
                } else if matches!(kernel, KernelFrom::Awaited) {
                    UserFrom::Undecided
                } else if in_entry() {
                    UserFrom::Later
                } else {
                    UserFrom::Missing
                };
                // Earlier waits of this thread still awaiting a kernel stack will not get
                // one: it would have come before this switch-out.
                self.kernel_never_comes(prev_tid, output);
                self.hold(prev_tid, time, ring, rec, user, kernel, output);
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
                if let Some(j) = joined {
                    // The copy brings the waker's kernel frames, and its user frames unless
                    // an interrupt woke.
                    if in_irq {
                        self.stats.irq_user_stacks += 1;
                    } else {
                        self.stats.deferred_joined += 1;
                    }
                    self.sample(rec, Some(j), Kernel::Own, &mut output[ring], in_irq);
                    return;
                }
                if has_stack && in_irq && long {
                    self.stats.irq_user_stacks += 1;
                } else if has_stack && !long {
                    self.stats.short_waits += 1;
                }
                let short = has_stack && (!long || in_irq);
                self.unwound(rec, s, None, Kernel::Own, &mut output[ring], short);
            }
            None => {
                // A sample in user mode: its thread's system call has returned, so a copy
                // still awaited for it was lost.
                let misc = u16::from_le_bytes([rec[4], rec[5]]);
                if deferred && misc & 7 == MISC_USER {
                    self.give_up_awaiting(tid, output);
                }
                self.unwound(rec, s, None, Kernel::Own, &mut output[ring], false);
            }
        }
    }

    /// `tid` left the CPU again: its waits still awaiting a kernel stack get none, and are
    /// stored if nothing else is awaited for them.
    fn kernel_never_comes(&mut self, tid: u32, output: &mut [Vec<u8>]) {
        let Some(waits) = self
            .deferred
            .as_mut()
            .and_then(|d| d.awaiting.get_mut(&tid))
        else {
            return;
        };
        let mut missing = 0;
        for h in waits.iter_mut() {
            if matches!(h.kernel, KernelFrom::Awaited) {
                h.kernel = KernelFrom::Missing;
                if matches!(h.user, UserFrom::Undecided) {
                    h.user = UserFrom::Missing;
                }
                missing += 1;
            }
        }
        self.stats.kernel_stacks_missing += missing;
        let (done, rest): (Vec<Held>, Vec<Held>) =
            std::mem::take(waits).into_iter().partition(ready);
        if rest.is_empty() {
            if let Some(d) = self.deferred.as_mut() {
                d.awaiting.remove(&tid);
            }
        } else {
            *waits = rest;
        }
        for h in done {
            self.store_resolved(h, output);
        }
    }

    /// Store `tid`'s waits still awaiting a system call's copy without a user stack.
    fn give_up_awaiting(&mut self, tid: u32, output: &mut [Vec<u8>]) {
        let Some(waits) = self.deferred.as_mut().and_then(|d| d.awaiting.remove(&tid)) else {
            return;
        };
        for mut h in waits {
            if matches!(h.kernel, KernelFrom::Awaited) {
                self.stats.kernel_stacks_missing += 1;
            }
            if !matches!(h.user, UserFrom::Joined(_)) {
                h.user = UserFrom::Missing;
            }
            self.store_resolved(h, output);
        }
    }

    /// Hold `tid`'s switch-out sample until the thread runs again.
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &mut self,
        tid: u32,
        time: u64,
        ring: usize,
        rec: &[u8],
        user: UserFrom,
        kernel: KernelFrom,
        output: &mut [Vec<u8>],
    ) {
        let Some(g) = self.gate.as_mut() else {
            return;
        };
        let mut buf = g.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(rec);
        let h = Held {
            time,
            ring,
            rec: buf,
            user,
            kernel,
        };
        g.held_bytes += held_len(&h);
        if let Some(old) = g.held.insert(tid, h) {
            // Cannot happen once the thread's samples are resolved first; keep it all the same.
            g.held_bytes = g.held_bytes.saturating_sub(held_len(&old));
            if let Some(out) = output.get_mut(old.ring) {
                self.sample(&old.rec, joined_user(&old), got_kernel(&old), out, false);
            }
            self.recycle(old.rec);
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
    /// unwound only if the wait lasted at least the minimum; a long wait still awaiting a
    /// stack waits for it.
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
        let short = time.saturating_sub(h.time) < g.min_ns;
        if short {
            g.held_bytes = g.held_bytes.saturating_sub(held_len(&h));
            self.stats.short_waits += 1;
            if let Some(out) = output.get_mut(h.ring) {
                self.sample(&h.rec, None, Kernel::Own, out, true);
            }
            self.recycle(h.rec);
            return;
        }
        if ready(&h) {
            self.store_resolved(h, output);
        } else if let Some(d) = self.deferred.as_mut() {
            // Still held (its bytes stay counted) until what it awaits comes.
            d.awaiting.entry(tid).or_default().push(h);
        }
    }

    /// Unwind one sample and write it back without its registers and stack copy; with
    /// `short`, keep only its kernel frames (an off-CPU wait shorter than the minimum, or a
    /// wake-up's interrupted user context). `user`: the record whose user registers and stack
    /// copy to unwind instead of the sample's own (a deferred copy).
    fn sample(
        &mut self,
        rec: &[u8],
        user: Option<&[u8]>,
        kernel: Kernel<'_>,
        out: &mut Vec<u8>,
        short: bool,
    ) {
        let (attr, layouts) = (&self.attr, &self.layouts);
        let Some(s) = rec.get(8..).and_then(|b| parse_body(attr, layouts, b)) else {
            self.stats.malformed += 1;
            out.extend_from_slice(rec);
            return;
        };
        let u = user.map(|u| u.get(8..).and_then(|b| parse_body(attr, layouts, b)));
        if matches!(u, Some(None)) {
            self.stats.malformed += 1;
        }
        self.unwound(rec, &s, u.flatten().as_ref(), kernel, out, short);
    }

    /// [`Rewriter::sample`] of `rec` (a held switch-out) with the user stack of the parsed
    /// deferred copy `user`.
    fn sample_from(
        &mut self,
        rec: &[u8],
        user: Option<&SampleParts<'_>>,
        kernel: Kernel<'_>,
        out: &mut Vec<u8>,
    ) {
        let Some(s) = rec
            .get(8..)
            .and_then(|b| parse_body(&self.attr, &self.layouts, b))
        else {
            self.stats.malformed += 1;
            out.extend_from_slice(rec);
            return;
        };
        self.unwound(rec, &s, user, kernel, out, false);
    }

    /// [`Rewriter::sample`] of the sample `rec` parsed as `s`.
    fn unwound(
        &mut self,
        rec: &[u8],
        s: &SampleParts<'_>,
        user: Option<&SampleParts<'_>>,
        kernel: Kernel<'_>,
        out: &mut Vec<u8>,
        short: bool,
    ) {
        let misc = u16::from_le_bytes([rec[4], rec[5]]);
        let u = user.unwrap_or(s);
        self.stats.stack_bytes += u.stack.len() as u64;
        // The kernel part of the chain stays; the user part is what unwinding finds. A wake-up
        // sample without a chain takes the kernel frames of its copy (the waker's), a
        // switch-out its deferred kernel stack.
        self.chain.clear();
        self.user.clear();
        if let Kernel::Given(k) = kernel {
            self.chain.extend_from_slice(k);
        } else if matches!(kernel, Kernel::Own) && s.chain_len() == 0 && user.is_some() {
            for i in 0..u.chain_len() {
                match u.chain_at(i) {
                    Some(a) if a == CONTEXT_USER => break,
                    Some(a) => self.chain.push(a),
                    None => break,
                }
            }
        }
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
        let wants_user = u.stack_size > 0 && !short;
        if let (true, Some(bp), Some(sp), Some(ip)) = (
            wants_user,
            u.user_reg(stackcopy::reg::BP),
            u.user_reg(stackcopy::reg::SP),
            u.user_reg(stackcopy::reg::IP),
        ) {
            self.chain.push(CONTEXT_USER);
            let from = self.chain.len();
            let regs = UserRegs { ip, sp, bp };
            let mut t = self.unwinder.unwind(s.pid, regs, u.stack, &mut self.chain);
            if t == Some(Truncation::StackCopyTooSmall) && self.splice(from) {
                self.stats.spliced += 1;
                // The kernel's limit counts its own frames and the user frames together.
                let kernel = self.chain[..from]
                    .iter()
                    .filter(|&&a| a < CONTEXT_MAX)
                    .count();
                t = (self.user.len() + kernel >= self.kernel_max_stack)
                    .then_some(Truncation::TooDeep);
            }
            match t {
                Some(t) => {
                    if t == Truncation::StackCopyTooSmall
                        && u.stack.len() as u64 == u.stack_size
                        && self.unwinder.signal_stack_switch().is_none()
                        && self.copy_cuts.len() < 4096
                    {
                        *self.copy_cuts.entry((s.pid, u.stack_size)).or_default() += 1;
                    }
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
    /// frame-pointer chain past the deepest frame both agree on. After a signal frame whose
    /// interrupted code's stack was not copied (Go's handlers run on an alternate signal
    /// stack), that is the frame above the trampoline: the kernel's chain goes from there
    /// into the interrupted code's callers, after the trampoline and interrupted instruction.
    fn splice(&mut self, from: usize) -> bool {
        // The kernel's entries after `a` (its first, the sample's ip, is never matched).
        let after = |user: &[u64], a: u64| user.iter().skip(1).position(|&x| x == a).map(|j| j + 2);
        let start = match self.unwinder.signal_stack_switch() {
            Some(t) if t >= from && t < self.chain.len() => {
                // Past the unwound frame `k`: the sample's own instruction is the kernel's
                // first entry.
                let past = |k: usize| {
                    if k == from {
                        (self.user.first() == self.chain.get(from)).then_some(1)
                    } else {
                        after(&self.user, self.chain[k])
                    }
                };
                if t == from {
                    // The sample itself is in the trampoline (the handler has returned): the
                    // kernel's chain goes on from there into the interrupted code's callers.
                    past(from)
                } else {
                    // The kernel's chain steps through the trampoline's frame as any other
                    // (`restorer` is its return address, stored plus one here): past it, or
                    // past the frame above it when the chain holds no trampoline.
                    let restorer = self.chain[t].wrapping_sub(1);
                    after(&self.user, restorer).or_else(|| {
                        let j = past(t - 1)?;
                        Some(j + usize::from(self.user.get(j) == Some(&restorer)))
                    })
                }
            }
            _ if self.chain.len() - from >= 2 => {
                after(&self.user, self.chain[self.chain.len() - 1])
            }
            _ => None,
        };
        let Some(rest) = start.and_then(|j| self.user.get(j..)) else {
            return false;
        };
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
        hood_raw::records::example_sched_formats(SWITCH_ID, WAKING_ID)
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
        sample_record(
            None,
            tid,
            time,
            &[CONTEXT_KERNEL, 0xffff_ffff_8100_0000],
            &raw,
            stack,
            0,
        )
    }

    /// A sample record (event id first when `id` is given) of `tid` at `time`: call chain
    /// `chain`, raw record `raw`, user registers, a 64-byte stack copy when `stack`.
    fn sample_record(
        id: Option<u64>,
        tid: u32,
        time: u64,
        chain: &[u64],
        raw: &[u8],
        stack: bool,
        misc: u16,
    ) -> Vec<u8> {
        let mut b = Vec::new();
        if let Some(id) = id {
            b.extend_from_slice(&id.to_le_bytes());
        }
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&time.to_le_bytes());
        b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
        for a in chain {
            b.extend_from_slice(&a.to_le_bytes());
        }
        b.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        b.extend_from_slice(raw);
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
        r.extend_from_slice(&misc.to_le_bytes());
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
    fn samples_of_a_ring_kept_raw_come_out_verbatim_and_the_others_unwound() {
        let mut rw = Rewriter::new(&attr_bytes(), Options::default()).expect("stack samples");
        let (a, b) = (
            rec(7, 100, Kind::Timer, true),
            rec(8, 200, Kind::Timer, true),
        );
        let mut out = vec![Vec::new(), Vec::new()];
        rw.keep_raw(&[false, true]);
        rw.rewrite(&[(0, &a[..]), (1, &b[..])], &mut out);
        assert_eq!(rw.take_raw(1).map(std::mem::take), Some(b.clone()));
        assert!(rw.take_raw(0).is_some_and(|r| r.is_empty()));
        assert!(
            out[1].is_empty(),
            "a sample kept raw is not also stored unwound"
        );
        assert!(
            !out[0].is_empty() && out[0].len() < a.len(),
            "ring 0's sample is stored without its copy"
        );
        assert_eq!((rw.stats().kept_raw, rw.stats().unwound), (1, 1));
        // The next round unwinds both again.
        rw.keep_raw(&[false, false]);
        out.iter_mut().for_each(Vec::clear);
        rw.rewrite(&[(0, &a[..]), (1, &b[..])], &mut out);
        assert!(!out[1].is_empty());
        assert_eq!(rw.stats().kept_raw, 1);
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

    /// A switch sample of `tid` at `time` to `next` in the trimmed layout of hood-perf's
    /// deferred tracepoints: id, tid, time, raw record, user ABI and IP; no chain, no stack.
    fn trimmed_switch(id: u64, tid: u32, time: u64, next: u32) -> Vec<u8> {
        let raw = switch_raw(tid, 1, next);
        let mut b = Vec::new();
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&time.to_le_bytes());
        b.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        b.extend_from_slice(&raw);
        b.extend_from_slice(&2u64.to_le_bytes());
        b.extend_from_slice(&0x40_1000u64.to_le_bytes());
        let mut r = Vec::new();
        r.extend_from_slice(&kind::SAMPLE.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((b.len() + 8) as u16).to_le_bytes());
        r.extend_from_slice(&b);
        r
    }

    #[test]
    fn samples_of_their_own_layout_are_stored_as_the_sessions_are() {
        let with_id = |bytes: &mut Vec<u8>, st: u64, regs: u64| {
            bytes[24..32].copy_from_slice(&(st | sample::IDENTIFIER).to_le_bytes());
            bytes[80..88].copy_from_slice(&regs.to_le_bytes());
        };
        let mut session = attr_bytes();
        let st = u64::from_le_bytes(session[24..32].try_into().unwrap());
        let regs = u64::from_le_bytes(session[80..88].try_into().unwrap());
        with_id(&mut session, st, regs);
        let mut own = session.clone();
        with_id(
            &mut own,
            st & !(sample::CALLCHAIN | sample::STACK_USER),
            1 << stackcopy::reg::IP,
        );
        let make = |layouts: &[(u64, Vec<u8>)]| {
            let mut rw = Rewriter::new(&session, Options::default()).expect("stack samples");
            rw.set_off_cpu(SchedLayout::from_formats(&formats()).expect("layout"), MIN);
            // Deferred stacks (no copy comes in these rounds), as hood-perf trims only then.
            rw.set_deferred(&[77], Vec::new());
            rw.set_layouts(layouts);
            rw
        };
        let raw_switch = |tid: u32, time: u64, next: u32| {
            sample_record(Some(5), tid, time, &[], &switch_raw(tid, 1, next), false, 0)
        };
        let timer =
            |tid, time| sample_record(Some(9), tid, time, &[CONTEXT_KERNEL, 1], &[], true, 0);
        // Thread 10's short wait (1 µs to 3 µs) and thread 11's long one (4 µs to 40 µs),
        // each ended by a timer sample of the thread: in the session's layout, then in the
        // trimmed one.
        let rounds = |switch: &dyn Fn(u32, u64, u32) -> Vec<u8>| -> Vec<u8> {
            [
                switch(10, 1_000, 0),
                timer(10, 3_000),
                switch(11, 4_000, 0),
                timer(11, 40_000),
            ]
            .concat()
        };
        let mut a = make(&[]);
        let mut out_a = vec![Vec::new()];
        a.rewrite(&[(0, &rounds(&raw_switch)[..])], &mut out_a);
        a.release_all(&mut out_a);
        let mut b = make(&[(5, own.clone())]);
        let mut out_b = vec![Vec::new()];
        b.rewrite(
            &[(0, &rounds(&|t, time, n| trimmed_switch(5, t, time, n))[..])],
            &mut out_b,
        );
        b.release_all(&mut out_b);
        assert_eq!(b.stats().malformed, 0);
        assert_eq!(b.stats().short_waits, a.stats().short_waits);
        assert_eq!(a.stats().short_waits, 1);
        assert_eq!(out_a, out_b, "the same records stored");
        // Without the layout, the trimmed samples do not parse as the session's.
        let mut c = make(&[]);
        let mut out_c = vec![Vec::new()];
        c.rewrite(
            &[(0, &rounds(&|t, time, n| trimmed_switch(5, t, time, n))[..])],
            &mut out_c,
        );
        assert_eq!(c.stats().malformed, 2);
        // A layout that does not keep the session's fields before the call chain is refused.
        let mut d = make(&[]);
        let mut bad = own.clone();
        with_id(&mut bad, st & !sample::TIME, 1 << stackcopy::reg::IP);
        d.set_layouts(&[(5, bad)]);
        assert!(d.layouts.is_empty());
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

    /// Deferred stacks: an attribute whose samples carry their event id first.
    fn deferred_attr() -> Vec<u8> {
        let mut a = attr_bytes();
        let st = u64::from_le_bytes(a[24..32].try_into().unwrap()) | sample::IDENTIFIER;
        a[24..32].copy_from_slice(&st.to_le_bytes());
        a
    }

    const SAMPLES: u64 = 1;
    const COPIES: u64 = 2;
    const SYSCALL_PC: u64 = 0xffff_ffff_8100_0010;
    const FAULT_PC: u64 = 0xffff_ffff_8100_0c60;
    const OTHER_PC: u64 = 0xffff_ffff_8200_0000;

    /// A sample of event `id`: kernel frame `pc`, raw record `raw`, user registers, and a
    /// 64-byte stack copy when `stack`.
    fn drec(id: u64, tid: u32, time: u64, pc: u64, raw: Vec<u8>, stack: bool) -> Vec<u8> {
        // In user mode (misc 2), as a timer sample after a return from the kernel is.
        sample_record(Some(id), tid, time, &[CONTEXT_KERNEL, pc], &raw, stack, 2)
    }

    /// A sample of event `id` without a call chain or a stack copy (a switch sample or a
    /// kernel stack record of a session whose stacks are deferred).
    fn krec(id: u64, tid: u32, time: u64, raw: Vec<u8>) -> Vec<u8> {
        sample_record(Some(id), tid, time, &[], &raw, false, 1)
    }

    fn kstack_raw(start: u64, tid: u32, stack: &[u64]) -> Vec<u8> {
        let mut raw = [DEFERRED_KSTACK, start, u64::from(tid)]
            .iter()
            .chain(stack)
            .flat_map(|w| w.to_ne_bytes())
            .collect::<Vec<u8>>();
        // The kernel pads a raw record to 8 bytes after its 4-byte size.
        raw.extend_from_slice(&[0; 4]);
        raw
    }

    fn switch_raw(tid: u32, state: u64, next: u32) -> Vec<u8> {
        let mut raw = vec![0u8; 64];
        raw[..2].copy_from_slice(&SWITCH_ID.to_le_bytes());
        raw[24..28].copy_from_slice(&tid.to_le_bytes());
        raw[32..40].copy_from_slice(&state.to_le_bytes());
        raw[56..60].copy_from_slice(&next.to_le_bytes());
        raw
    }

    fn waking_raw(wakee: u32) -> Vec<u8> {
        let mut raw = vec![0u8; 64];
        raw[..2].copy_from_slice(&WAKING_ID.to_le_bytes());
        raw[24..28].copy_from_slice(&wakee.to_le_bytes());
        raw
    }

    fn copy_raw(kind: u64, start: u64) -> Vec<u8> {
        [kind.to_ne_bytes(), start.to_ne_bytes()].concat()
    }

    /// A task session's wake-ups written by the BPF program (`common_flags` 0) are stored
    /// with the interrupt bits their waker's kernel stack shows: the innermost frame in
    /// interrupt code decides. A wake-up of another event keeps its flags.
    #[test]
    fn bpf_wakeups_get_their_interrupt_context_from_the_wakers_kernel_stack() {
        const WAKES: u64 = 3;
        const SOFT: u64 = 0xffff_ffff_8100_2000;
        const HARD: u64 = 0xffff_ffff_8100_3000;
        let mut rw = Rewriter::new(&deferred_attr(), Options::default()).expect("stack samples");
        rw.set_off_cpu(SchedLayout::from_formats(&formats()).expect("layout"), MIN);
        rw.set_deferred(&[COPIES], Vec::new());
        rw.set_wake_outputs(
            &[WAKES],
            vec![
                (SOFT, SOFT + 0x100, trace_flags::SOFTIRQ),
                (HARD, HARD + 0x100, trace_flags::HARDIRQ),
            ],
        );
        let wake = |id: u64, wakee: u32, chain: &[u64]| {
            let chain: Vec<u64> = [CONTEXT_KERNEL].iter().chain(chain).copied().collect();
            sample_record(
                Some(id),
                20,
                1_000 + u64::from(wakee),
                &chain,
                &waking_raw(wakee),
                false,
                1,
            )
        };
        let cpu0: Vec<u8> = [
            // A thread in a system call.
            wake(WAKES, 1, &[OTHER_PC, SYSCALL_PC]),
            // A timer interrupt on the way.
            wake(WAKES, 2, &[OTHER_PC, HARD + 8, SYSCALL_PC]),
            // A soft interrupt run on a hard interrupt's exit.
            wake(WAKES, 3, &[OTHER_PC, SOFT + 4, HARD + 8]),
            // A hard interrupt inside a soft interrupt.
            wake(WAKES, 4, &[HARD + 8, SOFT + 4]),
            // The same stack in a wake-up of another event: the kernel's flags stay.
            wake(SAMPLES, 5, &[OTHER_PC, HARD + 8]),
        ]
        .concat();
        let mut out = vec![Vec::new()];
        rw.rewrite(&[(0, &cpu0)], &mut out);
        rw.release_all(&mut out);
        let stored = Attr::parse(rw.stored_attr()).unwrap();
        let mut flags = std::collections::BTreeMap::new();
        let _ = for_each_frame(&out[0], |f| {
            if f.ty == kind::SAMPLE {
                let s = hood_raw::records::parse_sample(&stored, &f.bytes[8..]).unwrap();
                let raw = s.raw();
                let wakee = u32::from_le_bytes(raw[24..28].try_into().unwrap());
                flags.insert(wakee, raw[2]);
            }
        });
        use trace_flags::{HARDIRQ, SOFTIRQ};
        assert_eq!(
            flags.into_iter().collect::<Vec<_>>(),
            vec![(1, 0), (2, HARDIRQ), (3, SOFTIRQ), (4, HARDIRQ), (5, 0)]
        );
    }

    #[test]
    fn deferred_copies_join_the_waits_they_belong_to() {
        let mut rw = Rewriter::new(&deferred_attr(), Options::default()).expect("stack samples");
        rw.set_off_cpu(SchedLayout::from_formats(&formats()).expect("layout"), MIN);
        rw.set_deferred(
            &[COPIES],
            vec![
                (SYSCALL_PC - 0x10, SYSCALL_PC + 0x100),
                (FAULT_PC, FAULT_PC + 0x40),
            ],
        );
        let cpu0: Vec<u8> = [
            // 10 blocks in a system call at 1 µs.
            drec(SAMPLES, 10, 1_000, SYSCALL_PC, switch_raw(10, 1, 0), false),
            // 20 wakes it at 50 µs; the kernel copies 20's stack beside the wake-up.
            drec(SAMPLES, 20, 50_000, SYSCALL_PC, waking_raw(10), false),
            drec(COPIES, 20, 50_001, 0, copy_raw(DEFERRED_WAKER, 1_000), true),
            // 20 blocks and 10 comes in: a long wait, whose stack comes at the call's return.
            drec(
                SAMPLES,
                20,
                51_000,
                SYSCALL_PC,
                switch_raw(20, 1, 10),
                false,
            ),
            drec(
                COPIES,
                10,
                52_000,
                0,
                copy_raw(DEFERRED_RETURN, 1_000),
                true,
            ),
            // 11 is preempted: its copy comes just before the switch.
            drec(
                COPIES,
                11,
                59_999,
                0,
                copy_raw(DEFERRED_AT_SWITCH, 59_999),
                true,
            ),
            drec(
                SAMPLES,
                11,
                60_000,
                FAULT_PC,
                switch_raw(11, TASK_REPORT_PREEMPTED, 0),
                false,
            ),
            drec(SAMPLES, 11, 80_000, FAULT_PC, Vec::new(), false),
            // 12 waits in a minor page fault: no copy comes.
            drec(SAMPLES, 12, 90_000, OTHER_PC, switch_raw(12, 2, 0), false),
            drec(SAMPLES, 12, 200_000, OTHER_PC, Vec::new(), false),
            // 13 waits in a page fault: its copy comes on its way back to user space.
            drec(SAMPLES, 13, 100_000, FAULT_PC, switch_raw(13, 2, 0), false),
            drec(SAMPLES, 14, 150_000, OTHER_PC, switch_raw(14, 0, 13), false),
            drec(
                COPIES,
                13,
                151_000,
                0,
                copy_raw(DEFERRED_RETURN, 100_000),
                true,
            ),
            // 15 has no rseq area: it blocks with its copy taken just after the switch.
            drec(
                SAMPLES,
                15,
                160_000,
                SYSCALL_PC,
                switch_raw(15, 1, 0),
                false,
            ),
            drec(
                COPIES,
                15,
                160_001,
                0,
                copy_raw(DEFERRED_AT_SWITCH, 160_000),
                true,
            ),
            drec(SAMPLES, 16, 190_000, OTHER_PC, switch_raw(16, 0, 15), false),
            // A system call's copy of a thread this recording does not follow.
            drec(COPIES, 99, 210_000, 0, copy_raw(DEFERRED_RETURN, 5), true),
        ]
        .concat();
        let mut out = vec![Vec::new()];
        rw.rewrite(&[(0, &cpu0)], &mut out);
        let st = rw.stats().clone();
        assert_eq!(
            (st.deferred_joined, st.deferred_missing, st.deferred_orphans),
            (5, 1, 1),
            "{st:?}"
        );
        assert_eq!(st.unwound, 5, "only the joined copies are unwound");
        rw.release_all(&mut out);
        let mut n = 0;
        let stored = Attr::parse(rw.stored_attr()).expect("stored attribute");
        for_each_frame(&out[0], |f| {
            n += 1;
            let s = hood_raw::records::parse_sample(&stored, &f.bytes[8..]).expect("a sample");
            assert_eq!(s.id, Some(SAMPLES), "no copy is stored");
        })
        .expect("whole records");
        assert_eq!(n, 11, "every switch, wake-up and timer sample is stored");
    }

    const KSTACKS: u64 = 3;
    const SCHED_PC: u64 = 0xffff_ffff_8300_0000;

    #[test]
    fn deferred_kernel_stacks_join_their_waits() {
        let mut rw = Rewriter::new(&deferred_attr(), Options::default()).expect("stack samples");
        rw.set_off_cpu(SchedLayout::from_formats(&formats()).expect("layout"), MIN);
        rw.set_deferred(
            &[COPIES, KSTACKS],
            vec![(SYSCALL_PC - 0x10, SYSCALL_PC + 0x100)],
        );
        let cpu0: Vec<u8> = [
            // 10 blocks in a system call at 1 µs: the switch sample has no stack at all.
            krec(SAMPLES, 10, 1_000, switch_raw(10, 1, 0)),
            // 20 switches 10 back in at 60 µs; the kernel stack comes just before the switch.
            krec(
                KSTACKS,
                20,
                60_000,
                kstack_raw(1_000, 10, &[SCHED_PC, SYSCALL_PC]),
            ),
            krec(SAMPLES, 20, 60_001, switch_raw(20, 1, 10)),
            // 10's system call returns: its user stack.
            drec(
                COPIES,
                10,
                61_000,
                0,
                copy_raw(DEFERRED_RETURN, 1_000),
                true,
            ),
            // 30 blocks outside a system call; its kernel stack comes after the switch.
            krec(SAMPLES, 30, 62_000, switch_raw(30, 1, 0)),
            krec(SAMPLES, 31, 90_000, switch_raw(31, 0, 30)),
            krec(
                KSTACKS,
                31,
                90_001,
                kstack_raw(62_000, 30, &[SCHED_PC, OTHER_PC]),
            ),
            // 20's kernel stack is lost: it comes back at 100 µs and leaves again.
            krec(SAMPLES, 40, 100_000, switch_raw(40, 1, 20)),
            krec(SAMPLES, 20, 100_500, switch_raw(20, 1, 0)),
            // 40 is back within the minimum: a short wait, no stack asked for.
            krec(SAMPLES, 50, 101_000, switch_raw(50, 0, 40)),
        ]
        .concat();
        let mut out = vec![Vec::new()];
        rw.rewrite(&[(0, &cpu0)], &mut out);
        let st = rw.stats().clone();
        assert_eq!(
            (st.kernel_stacks_joined, st.kernel_stacks_missing),
            (2, 1),
            "{st:?}"
        );
        assert_eq!(
            (st.deferred_joined, st.deferred_missing, st.deferred_orphans),
            (1, 2, 0),
            "{st:?}"
        );
        assert_eq!(st.short_waits, 1, "{st:?}");
        rw.release_all(&mut out);
        let stored = Attr::parse(rw.stored_attr()).expect("stored attribute");
        let layout = SchedLayout::from_formats(&formats()).expect("layout");
        let mut kernel = HashMap::default();
        let mut n = 0;
        for_each_frame(&out[0], |f| {
            n += 1;
            let s = hood_raw::records::parse_sample(&stored, &f.bytes[8..]).expect("a sample");
            assert_eq!(s.id, Some(SAMPLES), "no copy is stored");
            if let Some(SchedRaw::Switch { prev_tid, .. }) = layout.read(s.raw()) {
                let chain: Vec<u64> = (0..s.chain_len()).filter_map(|i| s.chain_at(i)).collect();
                kernel.entry(prev_tid).or_insert_with(Vec::new).push(chain);
            }
        })
        .expect("whole records");
        assert_eq!(n, 7, "every switch is stored");
        // 10: the deferred kernel stack, then the user frames unwound from its copy.
        let ten = &kernel[&10][0];
        assert_eq!(ten[..3], [CONTEXT_KERNEL, SCHED_PC, SYSCALL_PC], "{ten:x?}");
        assert_eq!(ten.get(3), Some(&CONTEXT_USER), "{ten:x?}");
        assert_eq!(kernel[&30][0], [CONTEXT_KERNEL, SCHED_PC, OTHER_PC]);
        // 20's first wait lost its kernel stack; it is stored without frames, not with
        // another moment's.
        assert!(kernel[&20][0].is_empty(), "{:x?}", kernel[&20]);
    }
}
