//! Charging samples to the process they served.
//!
//! Each CPU's hard irq and softirq handler runs are rebuilt from entry/exit events. A sample
//! outside them is synchronous work of its task. Inside a NET_RX softirq it belongs to the
//! packet (skb) being received at that moment; inside a hard irq or BLOCK softirq that
//! completed block requests, to the request completed. Packets and requests are tags that a
//! later consumer claims; unclaimed tags go to `[other]`; every other handler run (timers, RCU,
//! scheduler, ...) and kernel threads go to `[kernel]`.

use std::collections::{HashMap, HashSet, VecDeque};

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

#[derive(Debug)]
struct Tag {
    kind: AsyncKind,
    time: u64,
    consumer: Option<u32>,
    /// A TCP segment without data for this socket: serves the socket's owner.
    ack_sk: Option<u64>,
}

/// A handler run on one CPU: `[start, end)`, with the tags it worked on (time, tag index).
#[derive(Debug)]
struct Run {
    start: u64,
    end: u64,
    vec: Option<u32>,
    tags: Vec<(u64, usize)>,
}

#[derive(Default)]
struct CpuState {
    hard: Vec<Run>,
    soft: Vec<Run>,
    in_hard: bool,
    in_soft: bool,
}

impl CpuState {
    fn innermost(&mut self) -> Option<&mut Run> {
        if self.in_hard {
            self.hard.last_mut()
        } else if self.in_soft {
            self.soft.last_mut()
        } else {
            None
        }
    }
}

/// Charge each of `samples` given the decoded `events` (sorted by time), the pids of kernel
/// threads, and the windows (CLOCK_MONOTONIC `[start, end)`) during which the per-packet events
/// were off (cost control; empty when all was traced).
pub fn attribute(
    events: &[Event],
    samples: &[Sample],
    kthreads: &HashSet<u32>,
    off: &[(u64, u64)],
) -> Attribution {
    let mut cpus: HashMap<u32, CpuState> = HashMap::new();
    let mut tags: Vec<Tag> = Vec::new();
    let mut counts = TagCounts::default();
    let mut by_skb: HashMap<u64, usize> = HashMap::new();
    let mut by_sk: HashMap<u64, VecDeque<usize>> = HashMap::new();
    let mut last_net: HashMap<u32, usize> = HashMap::new();
    let mut issuer: HashMap<(u64, u64), u32> = HashMap::new();
    let mut waiting_block: HashMap<u32, Vec<usize>> = HashMap::new();
    // The last task that sent or received on each socket.
    let mut owner: HashMap<u64, u32> = HashMap::new();
    for e in events {
        let st = cpus.entry(e.cpu).or_default();
        match e.kind {
            EvKind::IrqEntry { .. } => {
                st.hard.push(Run {
                    start: e.time,
                    end: u64::MAX,
                    vec: None,
                    tags: Vec::new(),
                });
                st.in_hard = true;
            }
            EvKind::IrqExit => {
                if st.in_hard {
                    if let Some(r) = st.hard.last_mut() {
                        r.end = e.time;
                    }
                }
                st.in_hard = false;
                waiting_block.remove(&e.cpu);
            }
            EvKind::SoftEntry { vec } => {
                st.soft.push(Run {
                    start: e.time,
                    end: u64::MAX,
                    vec: Some(vec),
                    tags: Vec::new(),
                });
                st.in_soft = true;
            }
            EvKind::SoftExit { .. } => {
                if st.in_soft {
                    if let Some(r) = st.soft.last_mut() {
                        r.end = e.time;
                    }
                }
                st.in_soft = false;
                waiting_block.remove(&e.cpu);
                last_net.remove(&e.cpu);
            }
            EvKind::NetRx { skb } => {
                let t = tags.len();
                tags.push(Tag {
                    kind: AsyncKind::NetRx,
                    time: e.time,
                    consumer: None,
                    ack_sk: None,
                });
                counts.net += 1;
                by_skb.insert(skb, t);
                last_net.insert(e.cpu, t);
                if let Some(r) = st.innermost() {
                    r.tags.push((e.time, t));
                }
            }
            EvKind::SkReady { sk } => {
                if let Some(&t) = last_net.get(&e.cpu) {
                    by_sk.entry(sk).or_default().push_back(t);
                }
            }
            EvKind::SkbCopy { skb } | EvKind::SkbConsume { skb } if !e.in_irq => {
                if let Some(t) = by_skb.remove(&skb) {
                    if tags[t].consumer.is_none() && e.pid != 0 {
                        tags[t].consumer = Some(e.pid);
                    }
                }
            }
            EvKind::TcpProbe { skb, sk, len } => {
                if let Some(&t) = by_skb.get(&skb) {
                    if len == 0 {
                        tags[t].ack_sk = Some(sk);
                        by_skb.remove(&skb);
                    } else {
                        let q = by_sk.entry(sk).or_default();
                        if q.back() != Some(&t) {
                            q.push_back(t);
                        }
                    }
                }
            }
            EvKind::SendLen { sk, ret } if !e.in_irq && ret > 0 && e.pid != 0 => {
                owner.insert(sk, e.pid);
            }
            EvKind::RecvLen { sk, ret } if !e.in_irq && ret > 0 => {
                owner.insert(sk, e.pid);
                if let Some(q) = by_sk.get_mut(&sk) {
                    while let Some(t) = q.pop_front() {
                        if tags[t].consumer.is_none() {
                            tags[t].consumer = Some(e.pid);
                            break;
                        }
                    }
                }
            }
            EvKind::RqIssue { dev, sector } if !e.in_irq && e.pid != 0 => {
                issuer.insert((dev, sector), e.pid);
            }
            EvKind::RqComplete { dev, sector } => {
                let t = tags.len();
                tags.push(Tag {
                    kind: AsyncKind::Block,
                    time: e.time,
                    consumer: issuer.remove(&(dev, sector)),
                    ack_sk: None,
                });
                counts.block += 1;
                if let Some(r) = st.innermost() {
                    r.tags.push((e.time, t));
                    waiting_block.entry(e.cpu).or_default().push(t);
                }
            }
            EvKind::Waking { pid } => {
                // The first wake-up after a completion, in the same handler run, is its waiter.
                if let Some(list) = waiting_block.get_mut(&e.cpu) {
                    if !list.is_empty() && pid != 0 && !kthreads.contains(&pid) {
                        let t = list.remove(0);
                        tags[t].consumer = Some(pid);
                    }
                }
            }
            _ => {}
        }
    }
    for t in &mut tags {
        if let (None, Some(sk)) = (t.consumer, t.ack_sk) {
            t.consumer = owner.get(&sk).copied();
        }
    }
    counts.net_consumed = tags
        .iter()
        .filter(|t| t.kind == AsyncKind::NetRx && t.consumer.is_some())
        .count() as u64;
    counts.block_consumed = tags
        .iter()
        .filter(|t| t.kind == AsyncKind::Block && t.consumer.is_some())
        .count() as u64;
    let mut charges: Vec<Option<Charge>> = samples
        .iter()
        .map(|s| charge(s, &cpus, &tags, kthreads, off))
        .collect();
    counts.extrapolated = extrapolate(&mut charges, samples);
    Attribution {
        charges: charges
            .into_iter()
            .map(|c| c.unwrap_or(Charge::Other(AsyncKind::NetRx)))
            .collect(),
        tags: counts,
    }
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

fn find(runs: &[Run], t: u64) -> Option<&Run> {
    let i = runs.partition_point(|r| r.start <= t);
    let r = runs.get(i.checked_sub(1)?)?;
    (t < r.end).then_some(r)
}

fn tag_at(run: &Run, t: u64) -> Option<usize> {
    let i = run.tags.partition_point(|&(time, _)| time <= t);
    let j = if i == 0 { 0 } else { i - 1 };
    run.tags.get(j).map(|&(_, tag)| tag)
}

/// `None`: NET_RX work whose packet was not traced (cost control); extrapolated later.
fn charge(
    s: &Sample,
    cpus: &HashMap<u32, CpuState>,
    tags: &[Tag],
    kthreads: &HashSet<u32>,
    off: &[(u64, u64)],
) -> Option<Charge> {
    if let Some(st) = cpus.get(&s.cpu) {
        let run = find(&st.hard, s.time).or_else(|| find(&st.soft, s.time));
        if let Some(run) = run {
            let kind_ok = match run.vec {
                None => true,
                Some(v) => v == NET_RX_SOFTIRQ || v == BLOCK_SOFTIRQ,
            };
            let untraced_rx = run.vec == Some(NET_RX_SOFTIRQ) && in_windows(off, s.time);
            return match tag_at(run, s.time).filter(|_| kind_ok) {
                Some(t) => match tags[t].consumer {
                    Some(pid) => Some(Charge::Async(pid, tags[t].kind)),
                    None if tags[t].kind == AsyncKind::NetRx
                        && off_soon_after(off, tags[t].time) =>
                    {
                        None
                    }
                    None => Some(Charge::Other(tags[t].kind)),
                },
                None if untraced_rx => None,
                None => Some(Charge::Kernel),
            };
        }
    }
    Some(if s.pid == 0 || s.mode == Mode::Idle {
        Charge::Idle
    } else if kthreads.contains(&s.pid) {
        Charge::Kernel
    } else {
        Charge::Sync(s.pid)
    })
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
}
