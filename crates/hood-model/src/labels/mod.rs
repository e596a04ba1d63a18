//! Process-labeled kernel profiling (Nishioka et al., `hood record --labels`): decode the raw
//! tracefs pages stored next to the samples, rebuild each CPU's irq/softirq contexts, follow
//! asynchronous work (received packets, block requests) to the process that consumes it, and
//! charge every sample to the process it served.
//!
//! Join keys (verified on the target kernel, see docs/labels.md):
//! - network receive: `net:netif_receive_skb` (skb) inside a NET_RX softirq → `sock:sk_data_ready`
//!   (socket) → the first task-context `skb:skb_copy_datagram_iovec` / `skb:consume_skb` of that
//!   skb, else the first task-context `sock:sock_recv_length` (ret > 0) on that socket; a TCP segment
//!   without data (`tcp:tcp_probe` data_len 0: an ACK) serves the socket's last sender or reader
//!   (`sock:sock_send_length` / `sock_recv_length` in task context);
//! - block I/O: `block:block_rq_complete` (dev, sector) inside a hardirq or BLOCK softirq →
//!   the `sched:sched_waking` that follows it in the same handler, else the task that issued
//!   the request (`block:block_rq_issue` in task context).

pub mod attribute;
pub mod events;
pub mod load;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use attribute::{attribute, AsyncKind, Attribution, Charge, TagCounts};
pub use events::{decode_all, Decoder, EvKind, Event};
pub use load::{CpuEventCheck, Labeled, LabelsChunks, LabelsRecording};

/// Name prefix of hood's private tracefs instances (`hood-labels-<pid>`).
pub const INSTANCE_PREFIX: &str = "hood-labels-";

/// The tracepoints `--labels` asks for, as `(sys, name)`; those the kernel lacks are skipped.
pub const EVENTS: &[(&str, &str)] = &[
    ("irq", "irq_handler_entry"),
    ("irq", "irq_handler_exit"),
    ("irq", "softirq_entry"),
    ("irq", "softirq_exit"),
    ("net", "netif_receive_skb"),
    ("sock", "sk_data_ready"),
    ("skb", "skb_copy_datagram_iovec"),
    ("skb", "consume_skb"),
    ("sock", "sock_recv_length"),
    ("tcp", "tcp_probe"),
    ("sock", "sock_send_length"),
    ("block", "block_rq_issue"),
    ("block", "block_rq_complete"),
    ("sched", "sched_waking"),
];

/// One traced event as recorded: its id this boot and its `format` text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TracedEvent {
    /// Subsystem, e.g. `irq`.
    pub sys: String,
    /// Event name, e.g. `softirq_entry`.
    pub name: String,
    /// Raw text of `events/<sys>/<name>/format`.
    pub format: String,
}

/// The `LABELS_META` chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelsMeta {
    /// The tracefs instance used (removed when recording ended).
    pub instance: String,
    /// Size of one raw page in `LABELS_PAGES` chunks.
    pub page_size: usize,
    /// Raw text of `events/header_page` (where the commit word and data sit).
    pub header_page: String,
    /// Ring buffer size per CPU, KiB.
    pub buffer_kb: usize,
    /// Events enabled.
    pub events: Vec<TracedEvent>,
    /// Events asked for that this kernel lacks, `sys:name`.
    pub missing: Vec<String>,
    /// Kernel threads (PF_KTHREAD) found at start: their task-context work is `[kernel]`.
    pub kthreads: Vec<u32>,
}

/// The `LABELS_STATS` chunk, written at stop after the last drain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelsStats {
    /// Raw text of `per_cpu/cpuN/stats` by CPU.
    pub cpu_stats: BTreeMap<u32, String>,
    /// Pages read per CPU.
    pub pages: BTreeMap<u32, u64>,
    /// Kernel threads found at stop.
    pub kthreads: Vec<u32>,
    /// Cost control: the event budget (events/s, 0 = none) and the CLOCK_MONOTONIC windows
    /// `[start, end)` during which the per-packet events ([`PER_PACKET`]) were switched off.
    pub budget: Budget,
}

/// Cost control of `--labels`: per-packet events duty-cycled to stay near a budget.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// Events per second allowed (0: unlimited).
    pub events_per_s: u64,
    /// Windows with the per-packet events off, CLOCK_MONOTONIC ns `[start, end)`.
    pub off: Vec<(u64, u64)>,
    /// Nanoseconds recorded with them on and off.
    pub on_ns: u64,
    /// See `on_ns`.
    pub off_ns: u64,
}

/// The per-packet events (`(sys, name)`) that cost control switches off part of the time:
/// the seven of [`EVENTS`] after the four irq ones, from `netif_receive_skb` to
/// `sock_send_length`.
pub const PER_PACKET: &[(&str, &str)] = EVENTS.split_at(4).1.split_at(7).0;

/// The kernel's counters of one CPU's buffer, parsed from its `stats` text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KernelCounts {
    /// Events still in the buffer (unread).
    pub entries: u64,
    /// Events overwritten before being read.
    pub overrun: u64,
    /// Events dropped (buffer full, or a write raced).
    pub dropped: u64,
    /// Events read by the consumer.
    pub read: u64,
}

impl KernelCounts {
    /// Parse a `stats` file (`entries: N`, `overrun: N`, `dropped events: N`, `read events: N`).
    pub fn parse(text: &str) -> KernelCounts {
        let mut k = KernelCounts::default();
        for line in text.lines() {
            let Some((key, val)) = line.split_once(':') else {
                continue;
            };
            let Ok(v) = val.trim().parse::<u64>() else {
                continue;
            };
            match key.trim() {
                "entries" => k.entries = v,
                "overrun" => k.overrun = v,
                "dropped events" => k.dropped = v,
                "read events" => k.read = v,
                _ => {}
            }
        }
        k
    }

    /// Events the kernel wrote into the buffer.
    pub fn written(&self) -> u64 {
        self.read + self.entries + self.overrun + self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::{EVENTS, PER_PACKET};

    /// The per-packet events are the ones from the packet's arrival to its send.
    #[test]
    fn the_per_packet_events_are_the_seven_from_arrival_to_send() {
        assert_eq!(PER_PACKET.len(), 7);
        assert_eq!(PER_PACKET.first(), Some(&("net", "netif_receive_skb")));
        assert_eq!(PER_PACKET.last(), Some(&("sock", "sock_send_length")));
        assert!(PER_PACKET.iter().all(|e| EVENTS.contains(e)));
        assert!(!PER_PACKET
            .iter()
            .any(|(sys, _)| *sys == "irq" || *sys == "sched"));
    }
}
