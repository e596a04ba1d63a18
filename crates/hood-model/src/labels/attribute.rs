//! Charging samples to the process they served.
//!
//! Each CPU's hard irq and softirq handler runs are rebuilt from entry/exit events. A sample
//! outside them is synchronous work of its task. Inside a NET_RX softirq it belongs to the
//! packet (skb) being received at that moment; inside a hard irq or BLOCK softirq that
//! completed block requests, to the request completed. Packets and requests are tags that a
//! later consumer claims; unclaimed tags go to `[other]`; every other handler run (timers, RCU,
//! scheduler, ...) and kernel threads go to `[kernel]`.

use std::collections::{HashMap, HashSet, VecDeque};

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::events::{EvKind, Event};
use crate::profile::{Mode, Sample};

/// Softirq vector numbers (include/linux/interrupt.h).
pub const NET_RX_SOFTIRQ: u32 = 3;
/// Softirq vector of block completions.
pub const BLOCK_SOFTIRQ: u32 = 4;

/// Kind of asynchronous work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum AsyncKind {
    /// Network receive (NET_RX softirq).
    NetRx,
    /// Block I/O completion.
    Block,
}

impl AsyncKind {
    /// Display name: `NET_RX`, `BLOCK`.
    pub fn name(self) -> &'static str {
        match self {
            AsyncKind::NetRx => "NET_RX",
            AsyncKind::Block => "BLOCK",
        }
    }
}

/// Whom a sample is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Charge {
    /// The idle task.
    Idle,
    /// Kernel-wide work: timers, RCU, kernel threads, irqs serving no traced work.
    Kernel,
    /// Synchronous work of the sample's own process.
    Sync(u32),
    /// Asynchronous work consumed by this process.
    Async(u32, AsyncKind),
    /// Asynchronous work nobody consumed (drops, unread sockets, recording ended first).
    Other(AsyncKind),
}

impl Charge {
    /// The charged process, if any.
    pub fn pid(self) -> Option<u32> {
        match self {
            Charge::Sync(p) | Charge::Async(p, _) => Some(p),
            _ => None,
        }
    }
}

/// How the tags fared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TagCounts {
    /// Packets seen entering the stack.
    pub net: u64,
    /// Of those, claimed by a reader.
    pub net_consumed: u64,
    /// Block requests completed.
    pub block: u64,
    /// Of those, with a waiter or issuer found.
    pub block_consumed: u64,
    /// NET_RX samples whose packet was not traced (per-packet events off, cost control):
    /// charged like the nearest traced NET_RX sample.
    pub extrapolated: u64,
}

/// The result: one charge per sample, plus tag counts.
#[derive(Debug, Clone, Default)]
pub struct Attribution {
    /// Parallel to the samples given.
    pub charges: Vec<Charge>,
    /// Tag statistics.
    pub tags: TagCounts,
}

/// Joins kept at most: packets by skb, sockets' owners, requests' issuers (each), and packets
/// queued per socket. Past a cap the older half is forgotten (its packets count as not
/// consumed), so a flood of packets nobody reads costs the report a bounded table.
const MAX_JOIN: usize = 1 << 18;
/// Packets queued on one socket, at most (see [`MAX_JOIN`]).
const MAX_QUEUED: usize = 1 << 16;

/// A packet or block request being followed to its consumer. It lives while something can
/// still name it (a join table, its handler run) and is then settled: counted, and the
/// samples that waited on it charged.
#[derive(Debug)]
struct Tag {
    kind: AsyncKind,
    time: u64,
    consumer: Option<u32>,
    /// A TCP segment without data for this socket: serves the socket's owner.
    ack_sk: Option<u64>,
    /// Holders of this tag's id (join tables, handler runs).
    refs: u32,
    /// Samples charged by this tag (indices into the samples).
    waiters: Vec<usize>,
}

/// The handler run open on one CPU, `[start, ...)`: its vector (`None`: a hard irq), the
/// last tag it worked on, and the samples inside it before its first tag (with whether
/// their NET_RX work was untraced).
#[derive(Debug)]
struct Run {
    vec: Option<u32>,
    ended: bool,
    last_tag: Option<u64>,
    before_first: Vec<(usize, bool)>,
}

#[derive(Default)]
struct CpuState {
    hard: Option<Run>,
    soft: Option<Run>,
    /// The last packet that entered the stack on this CPU, until its softirq ends.
    last_net: Option<u64>,
    /// Block requests completed in the open handler run, waiting for their waiter's wake-up.
    waiting_block: Vec<u64>,
}

/// The hasher of the join tables, whose keys come from the recording (socket and packet
/// addresses, devices and sectors, written by a kernel an attacker may have steered, or by a
/// crafted file): foldhash, seeded at random per table, so they cannot be chosen to collide
/// the way a fixed hash's could, at a fraction of SipHash's cost per packet.
type Keyed = foldhash::fast::RandomState;

/// Packets settled without a consumer on one socket, and the samples waiting on them (with
/// their "off soon" flag).
type AckWaiters = (u64, Vec<(usize, bool)>);

/// CPU numbers a kernel gives are below this (x86's largest `NR_CPUS`): their state is found
/// by index. A crafted file's larger numbers go to a map.
const DENSE_CPUS: u32 = 8192;

/// Per-CPU state, by CPU number.
struct PerCpu<T> {
    dense: Vec<Option<T>>,
    other: HashMap<u32, T, Keyed>,
}

impl<T: Default> PerCpu<T> {
    fn new() -> Self {
        PerCpu {
            dense: Vec::new(),
            other: HashMap::default(),
        }
    }

    fn get_mut(&mut self, cpu: u32) -> Option<&mut T> {
        match cpu < DENSE_CPUS {
            true => self.dense.get_mut(cpu as usize)?.as_mut(),
            false => self.other.get_mut(&cpu),
        }
    }

    fn entry(&mut self, cpu: u32) -> &mut T {
        if cpu >= DENSE_CPUS {
            return self.other.entry(cpu).or_default();
        }
        let i = cpu as usize;
        if i >= self.dense.len() {
            self.dense.resize_with(i + 1, || None);
        }
        self.dense[i].get_or_insert_with(T::default)
    }

    /// Every CPU that has state, and it, taken out.
    fn drain(&mut self) -> Vec<T> {
        let mut all: Vec<T> = self.dense.drain(..).flatten().collect();
        all.extend(self.other.drain().map(|(_, v)| v));
        all
    }
}

fn open(run: &mut Option<Run>) -> Option<&mut Run> {
    run.as_mut().filter(|r| !r.ended)
}

/// A sample's charge as it is decided.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Waiting on a tag or a run.
    Wait,
    /// Decided.
    Charged(Charge),
    /// NET_RX work whose packet was not traced (cost control); extrapolated at the end.
    Untraced,
}

/// Charges samples while the events stream past in time order: [`Attributor::event`] for
/// each event, [`Attributor::sample`] for each sample once every event up to its time was
/// given, [`Attributor::finish`] at the end. What it holds is bounded by the samples and
/// by what can still be joined (open handler runs, packets not yet consumed, up to
/// 262,144 per join table), not by the number of events.
pub struct Attributor<'a> {
    samples: &'a [Sample],
    kthreads: &'a HashSet<u32>,
    off: &'a [(u64, u64)],
    slots: Vec<Slot>,
    cpus: PerCpu<CpuState>,
    /// Tags by id. The ids are this attributor's own counter, never the recording's: a fixed
    /// fast hash is safe here.
    tags: FxHashMap<u64, Tag>,
    next_tag: u64,
    counts: TagCounts,
    by_skb: HashMap<u64, u64, Keyed>,
    by_sk: HashMap<u64, VecDeque<u64>, Keyed>,
    issuer: HashMap<(u64, u64), (u64, u32), Keyed>,
    /// The last task that sent or received on each socket (with the event's sequence).
    owner: HashMap<u64, (u64, u32), Keyed>,
    /// Packets settled without a consumer that were TCP ACKs on a socket: charged to its
    /// owner at the end. By socket: (packets, waiting samples with their "off soon" flag).
    acks: HashMap<u64, AckWaiters, Keyed>,
    seq: u64,
}

impl<'a> Attributor<'a> {
    /// Ready to charge `samples`, given the pids of kernel threads and the windows
    /// (CLOCK_MONOTONIC `[start, end)`) during which the per-packet events were off.
    pub fn new(samples: &'a [Sample], kthreads: &'a HashSet<u32>, off: &'a [(u64, u64)]) -> Self {
        Attributor {
            samples,
            kthreads,
            off,
            slots: vec![Slot::Wait; samples.len()],
            cpus: PerCpu::new(),
            tags: FxHashMap::default(),
            next_tag: 0,
            counts: TagCounts::default(),
            by_skb: HashMap::default(),
            by_sk: HashMap::default(),
            issuer: HashMap::default(),
            owner: HashMap::default(),
            acks: HashMap::default(),
            seq: 0,
        }
    }

    fn hold(&mut self, id: u64) {
        if let Some(t) = self.tags.get_mut(&id) {
            t.refs += 1;
        }
    }

    fn release(&mut self, id: u64) {
        let Some(t) = self.tags.get_mut(&id) else {
            return;
        };
        t.refs = t.refs.saturating_sub(1);
        if t.refs > 0 {
            return;
        }
        let Some(t) = self.tags.remove(&id) else {
            return;
        };
        let soon = t.kind == AsyncKind::NetRx && off_soon_after(self.off, t.time);
        match (t.consumer, t.ack_sk) {
            (None, Some(sk)) => {
                let a = self.acks.entry(sk).or_default();
                a.0 += 1;
                a.1.extend(t.waiters.iter().map(|&w| (w, soon)));
            }
            (consumer, _) => {
                if consumer.is_some() {
                    match t.kind {
                        AsyncKind::NetRx => self.counts.net_consumed += 1,
                        AsyncKind::Block => self.counts.block_consumed += 1,
                    }
                }
                let slot = match consumer {
                    Some(pid) => Slot::Charged(Charge::Async(pid, t.kind)),
                    None if soon => Slot::Untraced,
                    None => Slot::Charged(Charge::Other(t.kind)),
                };
                for &w in &t.waiters {
                    self.slots[w] = slot;
                }
            }
        }
    }

    fn new_tag(&mut self, kind: AsyncKind, time: u64, consumer: Option<u32>) -> u64 {
        let id = self.next_tag;
        self.next_tag += 1;
        self.tags.insert(
            id,
            Tag {
                kind,
                time,
                consumer,
                ack_sk: None,
                refs: 0,
                waiters: Vec::new(),
            },
        );
        id
    }

    /// Give tag `id` to the innermost open run of `cpu` (its samples waiting for a first
    /// tag take this one). Whether there was such a run.
    fn tag_run(&mut self, cpu: u32, id: u64) -> bool {
        let Some(st) = self.cpus.get_mut(cpu) else {
            return false;
        };
        let in_hard = open(&mut st.hard).is_some();
        let run = match in_hard {
            true => open(&mut st.hard),
            false => open(&mut st.soft),
        };
        let Some(run) = run else {
            return false;
        };
        let old = run.last_tag.replace(id);
        let waiting: Vec<usize> = run.before_first.drain(..).map(|(w, _)| w).collect();
        if let Some(t) = self.tags.get_mut(&id) {
            t.refs += 1;
            t.waiters.extend(waiting);
        }
        if let Some(old) = old {
            self.release(old);
        }
        true
    }

    /// A run is over (ended or replaced): samples that waited for a first tag get none.
    fn close(&mut self, run: Run) {
        for (w, untraced) in run.before_first {
            self.slots[w] = match untraced {
                true => Slot::Untraced,
                false => Slot::Charged(Charge::Kernel),
            };
        }
        if let Some(id) = run.last_tag {
            self.release(id);
        }
    }

    fn end_run(&mut self, cpu: u32, hard: bool) {
        let st = self.cpus.entry(cpu);
        let slot = if hard { &mut st.hard } else { &mut st.soft };
        if let Some(r) = open(slot) {
            r.ended = true;
            let before_first = std::mem::take(&mut r.before_first);
            let last = r.last_tag.take();
            self.close(Run {
                vec: None,
                ended: true,
                last_tag: last,
                before_first,
            });
        }
        let list = std::mem::take(&mut self.cpus.entry(cpu).waiting_block);
        for id in list {
            self.release(id);
        }
    }

    fn start_run(&mut self, cpu: u32, vec: Option<u32>) {
        let st = self.cpus.entry(cpu);
        let slot = if vec.is_none() {
            &mut st.hard
        } else {
            &mut st.soft
        };
        let old = slot.replace(Run {
            vec,
            ended: false,
            last_tag: None,
            before_first: Vec::new(),
        });
        if let Some(old) = old {
            self.close(old);
        }
    }

    fn set_skb(&mut self, skb: u64, id: u64) {
        self.hold(id);
        if let Some(old) = self.by_skb.insert(skb, id) {
            self.release(old);
        }
        if self.by_skb.len() > MAX_JOIN {
            // Forget the older half (tag ids grow with time).
            let mut ids: Vec<u64> = self.by_skb.values().copied().collect();
            let mid = ids.len() / 2;
            let cut = *ids.select_nth_unstable(mid).1;
            let old: Vec<u64> = self
                .by_skb
                .iter()
                .filter(|&(_, &t)| t < cut)
                .map(|(&k, _)| k)
                .collect();
            for k in old {
                if let Some(t) = self.by_skb.remove(&k) {
                    self.release(t);
                }
            }
        }
    }

    fn queue_on(&mut self, sk: u64, id: u64) {
        self.hold(id);
        let q = self.by_sk.entry(sk).or_default();
        q.push_back(id);
        let over = (q.len() > MAX_QUEUED).then(|| q.pop_front()).flatten();
        if let Some(old) = over {
            self.release(old);
        }
        if self.by_sk.len() > MAX_JOIN {
            // Forget the sockets whose newest packet is oldest.
            let mut newest: Vec<u64> = self
                .by_sk
                .values()
                .map(|q| q.back().copied().unwrap_or(0))
                .collect();
            let mid = newest.len() / 2;
            let cut = *newest.select_nth_unstable(mid).1;
            let old: Vec<u64> = self
                .by_sk
                .iter()
                .filter(|(_, q)| q.back().copied().unwrap_or(0) < cut)
                .map(|(&k, _)| k)
                .collect();
            for k in old {
                for t in self.by_sk.remove(&k).unwrap_or_default() {
                    self.release(t);
                }
            }
        }
    }

    fn set_owner(&mut self, sk: u64, pid: u32) {
        self.seq += 1;
        self.owner.insert(sk, (self.seq, pid));
        forget_older_half(&mut self.owner);
    }

    /// One event; events must come in time order.
    pub fn event(&mut self, e: &Event) {
        self.cpus.entry(e.cpu);
        match e.kind {
            EvKind::IrqEntry { .. } => self.start_run(e.cpu, None),
            EvKind::IrqExit => self.end_run(e.cpu, true),
            EvKind::SoftEntry { vec } => self.start_run(e.cpu, Some(vec)),
            EvKind::SoftExit { .. } => {
                self.end_run(e.cpu, false);
                if let Some(t) = self.cpus.entry(e.cpu).last_net.take() {
                    self.release(t);
                }
            }
            EvKind::NetRx { skb } => {
                let t = self.new_tag(AsyncKind::NetRx, e.time, None);
                self.counts.net += 1;
                self.set_skb(skb, t);
                self.hold(t);
                if let Some(old) = self.cpus.entry(e.cpu).last_net.replace(t) {
                    self.release(old);
                }
                self.tag_run(e.cpu, t);
            }
            EvKind::SkReady { sk } => {
                if let Some(t) = self.cpus.entry(e.cpu).last_net {
                    self.queue_on(sk, t);
                }
            }
            EvKind::SkbCopy { skb } | EvKind::SkbConsume { skb } if !e.in_irq => {
                if let Some(t) = self.by_skb.remove(&skb) {
                    if let Some(tag) = self.tags.get_mut(&t) {
                        if tag.consumer.is_none() && e.pid != 0 {
                            tag.consumer = Some(e.pid);
                        }
                    }
                    self.release(t);
                }
            }
            EvKind::TcpProbe { skb, sk, len } => {
                if let Some(&t) = self.by_skb.get(&skb) {
                    if len == 0 {
                        if let Some(tag) = self.tags.get_mut(&t) {
                            tag.ack_sk = Some(sk);
                        }
                        self.by_skb.remove(&skb);
                        self.release(t);
                    } else if self.by_sk.get(&sk).and_then(|q| q.back()) != Some(&t) {
                        self.queue_on(sk, t);
                    }
                }
            }
            EvKind::SendLen { sk, ret } if !e.in_irq && ret > 0 && e.pid != 0 => {
                self.set_owner(sk, e.pid);
            }
            EvKind::RecvLen { sk, ret } if !e.in_irq && ret > 0 => {
                self.set_owner(sk, e.pid);
                let mut popped = Vec::new();
                if let Some(q) = self.by_sk.get_mut(&sk) {
                    while let Some(t) = q.pop_front() {
                        popped.push(t);
                        if let Some(tag) = self.tags.get_mut(&t) {
                            if tag.consumer.is_none() {
                                tag.consumer = Some(e.pid);
                                break;
                            }
                        }
                    }
                    if q.is_empty() {
                        self.by_sk.remove(&sk);
                    }
                }
                for t in popped {
                    self.release(t);
                }
            }
            EvKind::RqIssue { dev, sector } if !e.in_irq && e.pid != 0 => {
                self.seq += 1;
                self.issuer.insert((dev, sector), (self.seq, e.pid));
                forget_older_half(&mut self.issuer);
            }
            EvKind::RqComplete { dev, sector } => {
                let consumer = self.issuer.remove(&(dev, sector)).map(|(_, p)| p);
                let t = self.new_tag(AsyncKind::Block, e.time, consumer);
                self.counts.block += 1;
                self.hold(t);
                if self.tag_run(e.cpu, t) {
                    self.hold(t);
                    self.cpus.entry(e.cpu).waiting_block.push(t);
                }
                self.release(t);
            }
            // The first wake-up after a completion, in the same handler run, is its waiter.
            // (Most wake-ups follow no completion: the CPU's list is looked at first, the
            // kernel threads' set only when a request waits.)
            EvKind::Waking { pid }
                if pid != 0
                    && self
                        .cpus
                        .get_mut(e.cpu)
                        .is_some_and(|st| !st.waiting_block.is_empty())
                    && !self.kthreads.contains(&pid) =>
            {
                let first = self
                    .cpus
                    .get_mut(e.cpu)
                    .map(|st| &mut st.waiting_block)
                    .and_then(|l| (!l.is_empty()).then(|| l.remove(0)));
                if let Some(t) = first {
                    if let Some(tag) = self.tags.get_mut(&t) {
                        tag.consumer = Some(pid);
                    }
                    self.release(t);
                }
            }
            _ => {}
        }
    }

    /// Sample `i`, once every event up to its time was given.
    pub fn sample(&mut self, i: usize) {
        let s = &self.samples[i];
        if let Some(st) = self.cpus.get_mut(s.cpu) {
            let in_hard = open(&mut st.hard).is_some();
            let run = match in_hard {
                true => open(&mut st.hard),
                false => open(&mut st.soft),
            };
            if let Some(run) = run {
                let kind_ok = match run.vec {
                    None => true,
                    Some(v) => v == NET_RX_SOFTIRQ || v == BLOCK_SOFTIRQ,
                };
                let untraced_rx = run.vec == Some(NET_RX_SOFTIRQ) && in_windows(self.off, s.time);
                self.slots[i] = match (kind_ok, run.last_tag) {
                    (true, Some(t)) => {
                        if let Some(tag) = self.tags.get_mut(&t) {
                            tag.waiters.push(i);
                        }
                        Slot::Wait
                    }
                    (true, None) => {
                        // Charged by the run's first packet or request, when it comes.
                        run.before_first.push((i, untraced_rx));
                        Slot::Wait
                    }
                    (false, _) if untraced_rx => Slot::Untraced,
                    (false, _) => Slot::Charged(Charge::Kernel),
                };
                return;
            }
        }
        self.slots[i] = Slot::Charged(if s.pid == 0 || s.mode == Mode::Idle {
            Charge::Idle
        } else if self.kthreads.contains(&s.pid) {
            Charge::Kernel
        } else {
            Charge::Sync(s.pid)
        });
    }

    /// All events and samples given: settle what is left and charge the rest.
    pub fn finish(mut self) -> Attribution {
        let cpus = self.cpus.drain();
        let mut per_cpu_held = Vec::new();
        for st in cpus {
            for r in [st.hard, st.soft].into_iter().flatten() {
                self.close(r);
            }
            per_cpu_held.extend(st.last_net);
            per_cpu_held.extend(st.waiting_block);
        }
        let held: Vec<u64> = self
            .by_skb
            .drain()
            .map(|(_, t)| t)
            .chain(self.by_sk.drain().flat_map(|(_, q)| q))
            .chain(per_cpu_held)
            .collect();
        for t in held {
            self.release(t);
        }
        for (sk, (n, waiters)) in std::mem::take(&mut self.acks) {
            let owner = self.owner.get(&sk).map(|&(_, p)| p);
            if owner.is_some() {
                self.counts.net_consumed += n;
            }
            for (w, soon) in waiters {
                self.slots[w] = match owner {
                    Some(pid) => Slot::Charged(Charge::Async(pid, AsyncKind::NetRx)),
                    None if soon => Slot::Untraced,
                    None => Slot::Charged(Charge::Other(AsyncKind::NetRx)),
                };
            }
        }
        let mut charges: Vec<Option<Charge>> = self
            .slots
            .iter()
            .map(|s| match s {
                Slot::Charged(c) => Some(*c),
                Slot::Untraced => None,
                // Not reached: every run and tag was settled above.
                Slot::Wait => Some(Charge::Other(AsyncKind::NetRx)),
            })
            .collect();
        let mut counts = self.counts;
        counts.extrapolated = extrapolate(&mut charges, self.samples);
        Attribution {
            charges: charges
                .into_iter()
                .map(|c| c.unwrap_or(Charge::Other(AsyncKind::NetRx)))
                .collect(),
            tags: counts,
        }
    }
}

/// Past [`MAX_JOIN`] entries, forget the older half (by the sequence number kept with each).
fn forget_older_half<K: Copy + Eq + std::hash::Hash, V>(map: &mut HashMap<K, (u64, V), Keyed>) {
    if map.len() <= MAX_JOIN {
        return;
    }
    let mut seqs: Vec<u64> = map.values().map(|v| v.0).collect();
    let mid = seqs.len() / 2;
    let cut = *seqs.select_nth_unstable(mid).1;
    map.retain(|_, v| v.0 >= cut);
}

/// Charge each of `samples` given the decoded `events` (sorted by time), the pids of kernel
/// threads, and the windows (CLOCK_MONOTONIC `[start, end)`) during which the per-packet events
/// were off (cost control; empty when all was traced): an [`Attributor`] over a slice.
pub fn attribute(
    events: &[Event],
    samples: &[Sample],
    kthreads: &HashSet<u32>,
    off: &[(u64, u64)],
) -> Attribution {
    let mut a = Attributor::new(samples, kthreads, off);
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by_key(|&i| samples[i].time);
    let mut next = order.into_iter().peekable();
    for e in events {
        while let Some(i) = next.next_if(|&i| samples[i].time < e.time) {
            a.sample(i);
        }
        a.event(e);
    }
    for i in next {
        a.sample(i);
    }
    a.finish()
}

/// Charge untraced NET_RX samples (`None`) like the nearest traced NET_RX sample in time.
fn extrapolate(charges: &mut [Option<Charge>], samples: &[Sample]) -> u64 {
    let mut traced: Vec<(u64, Charge)> = samples
        .iter()
        .zip(charges.iter())
        .filter_map(|(s, c)| match c {
            Some(c @ (Charge::Async(_, AsyncKind::NetRx) | Charge::Other(AsyncKind::NetRx))) => {
                Some((s.time, *c))
            }
            _ => None,
        })
        .collect();
    traced.sort_by_key(|&(t, _)| t);
    let mut n = 0;
    for (s, c) in samples.iter().zip(charges.iter_mut()) {
        if c.is_some() {
            continue;
        }
        n += 1;
        let i = traced.partition_point(|&(t, _)| t < s.time);
        let before = i.checked_sub(1).and_then(|j| traced.get(j));
        let after = traced.get(i);
        *c = match (before, after) {
            (Some(b), Some(a)) if s.time - b.0 <= a.0 - s.time => Some(b.1),
            (_, Some(a)) => Some(a.1),
            (Some(b), None) => Some(b.1),
            (None, None) => Some(Charge::Other(AsyncKind::NetRx)),
        };
    }
    n
}

fn in_windows(off: &[(u64, u64)], t: u64) -> bool {
    let i = off.partition_point(|&(s, _)| s <= t);
    i > 0 && t < off[i - 1].1
}

/// Whether an off window starts within a second after `t` (a packet traced just before the
/// events went off may have been consumed unseen).
fn off_soon_after(off: &[(u64, u64)], t: u64) -> bool {
    let i = off.partition_point(|&(s, _)| s <= t);
    off.get(i).is_some_and(|&(s, _)| s - t < 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, cpu: u32, pid: u32, in_irq: bool, kind: EvKind) -> Event {
        Event {
            time,
            cpu,
            pid,
            in_irq,
            kind,
        }
    }

    fn sample(time: u64, cpu: u32, pid: u32) -> Sample {
        Sample {
            pid,
            tid: pid,
            cpu,
            time,
            period: 1,
            mode: Mode::Kernel,
            stack: 0,
            locs: 0,
        }
    }

    #[test]
    fn receive_softirq_goes_to_the_reader() {
        // Sender 10 on CPU 0 runs the NET_RX softirq for a packet reader 20 takes on CPU 1.
        let events = vec![
            ev(100, 0, 10, true, EvKind::SoftEntry { vec: 3 }),
            ev(110, 0, 10, true, EvKind::NetRx { skb: 0xa }),
            ev(120, 0, 10, true, EvKind::SkReady { sk: 0x5 }),
            ev(130, 0, 10, true, EvKind::NetRx { skb: 0xb }),
            ev(140, 0, 10, true, EvKind::SkReady { sk: 0x6 }),
            ev(150, 0, 10, true, EvKind::SoftExit { vec: 3 }),
            ev(200, 1, 20, false, EvKind::SkbCopy { skb: 0xa }),
            ev(210, 1, 20, false, EvKind::RecvLen { sk: 0x5, ret: 64 }),
        ];
        let samples = [
            sample(105, 0, 10),
            sample(125, 0, 10),
            sample(135, 0, 10),
            sample(160, 0, 10),
            sample(205, 1, 20),
            sample(50, 0, 0),
        ];
        let a = attribute(&events, &samples, &HashSet::new(), &[]);
        assert_eq!(
            a.charges,
            vec![
                Charge::Async(20, AsyncKind::NetRx),
                Charge::Async(20, AsyncKind::NetRx),
                Charge::Other(AsyncKind::NetRx),
                Charge::Sync(10),
                Charge::Sync(20),
                Charge::Idle,
            ]
        );
        assert_eq!((a.tags.net, a.tags.net_consumed), (2, 1));
    }

    #[test]
    fn block_completion_goes_to_the_waiter_and_timers_to_kernel() {
        let events = vec![
            ev(5, 1, 30, false, EvKind::RqIssue { dev: 8, sector: 64 }),
            ev(100, 0, 0, true, EvKind::IrqEntry { irq: 25 }),
            ev(110, 0, 0, true, EvKind::RqComplete { dev: 8, sector: 64 }),
            ev(120, 0, 0, true, EvKind::Waking { pid: 40 }),
            ev(130, 0, 0, true, EvKind::IrqExit),
            ev(200, 0, 7, true, EvKind::SoftEntry { vec: 1 }),
            ev(300, 0, 7, true, EvKind::SoftExit { vec: 1 }),
        ];
        let samples = [sample(115, 0, 0), sample(250, 0, 7), sample(400, 0, 9)];
        let kthreads: HashSet<u32> = [9].into_iter().collect();
        let a = attribute(&events, &samples, &kthreads, &[]);
        assert_eq!(
            a.charges,
            vec![
                Charge::Async(40, AsyncKind::Block),
                Charge::Kernel,
                Charge::Kernel
            ]
        );
    }

    #[test]
    fn untraced_receive_work_is_charged_like_the_nearest_traced() {
        // Per-packet events were off in [300, 500): the run at 350 has no packet tag.
        let events = vec![
            ev(100, 0, 10, true, EvKind::SoftEntry { vec: 3 }),
            ev(110, 0, 10, true, EvKind::NetRx { skb: 0xa }),
            ev(150, 0, 10, true, EvKind::SoftExit { vec: 3 }),
            ev(200, 1, 20, false, EvKind::SkbCopy { skb: 0xa }),
            ev(350, 0, 10, true, EvKind::SoftEntry { vec: 3 }),
            ev(390, 0, 10, true, EvKind::SoftExit { vec: 3 }),
        ];
        let samples = [sample(120, 0, 10), sample(360, 0, 10)];
        let a = attribute(&events, &samples, &HashSet::new(), &[(300, 500)]);
        assert_eq!(
            a.charges,
            vec![
                Charge::Async(20, AsyncKind::NetRx),
                Charge::Async(20, AsyncKind::NetRx)
            ]
        );
        assert_eq!(a.tags.extrapolated, 1);
        // Without the window, the same run is kernel-wide NET_RX work nobody asked for.
        let b = attribute(&events, &samples, &HashSet::new(), &[]);
        assert_eq!(b.charges[1], Charge::Kernel);
    }

    #[test]
    fn tcp_acks_serve_the_sockets_sender() {
        // Sender 10 sends on socket 0x7; the ACK (data_len 0) for it arrives in a softirq.
        let events = vec![
            ev(50, 0, 10, false, EvKind::SendLen { sk: 0x7, ret: 1024 }),
            ev(100, 1, 20, true, EvKind::SoftEntry { vec: 3 }),
            ev(110, 1, 20, true, EvKind::NetRx { skb: 0xc }),
            ev(
                115,
                1,
                20,
                true,
                EvKind::TcpProbe {
                    skb: 0xc,
                    sk: 0x7,
                    len: 0,
                },
            ),
            ev(150, 1, 20, true, EvKind::SoftExit { vec: 3 }),
        ];
        let a = attribute(&events, &[sample(120, 1, 20)], &HashSet::new(), &[]);
        assert_eq!(a.charges, vec![Charge::Async(10, AsyncKind::NetRx)]);
    }

    /// Receive a packet into `skb` in a NET_RX softirq of its own at `t`.
    fn packet(a: &mut Attributor, t: u64, skb: u64) {
        a.event(&ev(t, 0, 10, true, EvKind::SoftEntry { vec: 3 }));
        a.event(&ev(t + 1, 0, 10, true, EvKind::NetRx { skb }));
        a.event(&ev(t + 2, 0, 10, true, EvKind::SoftExit { vec: 3 }));
    }

    #[test]
    fn packets_nobody_reads_are_let_go_of_when_their_skb_is_reused() {
        // A flood into 1,000 recycled skbs that no one consumes: what is held is the 1,000
        // packets that can still be claimed, not the 200,000 seen.
        let kthreads = HashSet::new();
        let mut a = Attributor::new(&[], &kthreads, &[]);
        let mut most = 0;
        for i in 0..200_000u64 {
            packet(&mut a, i * 10, i % 1000);
            most = most.max(a.tags.len());
        }
        assert!(most <= 1001, "{most} packets held");
        let r = a.finish();
        assert_eq!((r.tags.net, r.tags.net_consumed), (200_000, 0));
    }

    #[test]
    fn distinct_unclaimed_packets_are_held_up_to_the_cap() {
        let kthreads = HashSet::new();
        let mut a = Attributor::new(&[], &kthreads, &[]);
        let n = MAX_JOIN as u64 + 50_000;
        let mut most = 0;
        for i in 0..n {
            packet(&mut a, i * 10, 0x1000 + i);
            most = most.max(a.tags.len());
        }
        assert!(most <= MAX_JOIN + 1, "{most} packets held");
        // The newest can still be claimed.
        a.event(&ev(
            n * 10,
            1,
            20,
            false,
            EvKind::SkbCopy {
                skb: 0x1000 + n - 1,
            },
        ));
        let r = a.finish();
        assert_eq!((r.tags.net, r.tags.net_consumed), (n, 1));
    }
}
