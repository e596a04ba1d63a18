//! Typed events decoded from raw tracepoint records, fields located by the format files.

use hood_raw::tracefs::format::{EventFormat, Field};
use hood_raw::tracefs::page::{decode_page, PageInfo, PageLayout};

use super::LabelsMeta;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvKind {
    /// A hard irq handler started.
    IrqEntry {
        /// Irq number.
        irq: u32,
    },
    /// A hard irq handler returned.
    IrqExit,
    /// A softirq vector started.
    SoftEntry {
        /// Vector (3 = NET_RX, 4 = BLOCK, ...).
        vec: u32,
    },
    /// A softirq vector finished.
    SoftExit {
        /// Vector.
        vec: u32,
    },
    /// A packet entered the network stack.
    NetRx {
        /// skb address.
        skb: u64,
    },
    /// A socket was told data arrived.
    SkReady {
        /// Socket address.
        sk: u64,
    },
    /// A packet's data was copied to a reader (`skb_copy_datagram_iovec`).
    SkbCopy {
        /// skb address.
        skb: u64,
    },
    /// A packet was freed after use (`consume_skb`).
    SkbConsume {
        /// skb address.
        skb: u64,
    },
    /// A receive call returned on a socket.
    RecvLen {
        /// Socket address.
        sk: u64,
        /// Bytes returned (negative: error).
        ret: i64,
    },
    /// A TCP segment reached an established socket (`tcp_probe`).
    TcpProbe {
        /// skb address.
        skb: u64,
        /// Socket address.
        sk: u64,
        /// Payload bytes (0: a pure ACK).
        len: u64,
    },
    /// A send call returned on a socket.
    SendLen {
        /// Socket address.
        sk: u64,
        /// Bytes sent (negative: error).
        ret: i64,
    },
    /// A block request was issued.
    RqIssue {
        /// Device number.
        dev: u64,
        /// First sector.
        sector: u64,
    },
    /// A block request completed.
    RqComplete {
        /// Device number.
        dev: u64,
        /// First sector.
        sector: u64,
    },
    /// A task is being woken.
    Waking {
        /// The woken task's id.
        pid: u32,
    },
}

/// One decoded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_MONOTONIC ns (`trace_clock mono`, the clock of the perf samples).
    pub time: u64,
    /// CPU.
    pub cpu: u32,
    /// The task current on the CPU (`common_pid`; the interrupted one in irq context).
    pub pid: u32,
    /// Recorded in hard or soft irq context (`common_flags`).
    pub in_irq: bool,
    /// What happened.
    pub kind: EvKind,
}

/// The traced events the decoder knows, told apart once when the formats are read rather
/// than by name for each record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    IrqEntry,
    IrqExit,
    SoftEntry,
    SoftExit,
    NetRx,
    SkbCopy,
    SkbConsume,
    SkReady,
    RecvLen,
    RqIssue,
    RqComplete,
    Waking,
    TcpProbe,
    SendLen,
}

#[derive(Debug, Clone)]
struct Shape {
    id: u64,
    which: Which,
    a: Option<Field>,
    b: Option<Field>,
    c: Option<Field>,
}

/// Turns raw records into [`Event`]s using the recorded format files.
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    /// The known events by their recorded type id: a dozen at most, looked up by a scan (no
    /// hashing per record, and nothing a crafted file's ids could make collide).
    shapes: Vec<Shape>,
    common_type: Option<Field>,
    common_pid: Option<Field>,
    common_flags: Option<Field>,
    layout: PageLayout,
}

/// `common_flags` bits: TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ.
const IRQ_FLAGS: u64 = 0x08 | 0x10;

impl Decoder {
    /// Build from a recording's metadata. Events whose format lacks a needed field are left
    /// out (their records are counted as unknown).
    pub fn new(meta: &LabelsMeta) -> Decoder {
        let mut d = Decoder {
            layout: PageLayout::from_header_page(&meta.header_page),
            ..Decoder::default()
        };
        for ev in &meta.events {
            let f = EventFormat::parse(&ev.format);
            if d.common_type.is_none() {
                d.common_type = f.field("common_type").cloned();
                d.common_pid = f.field("common_pid").cloned();
                d.common_flags = f.field("common_flags").cloned();
            }
            let (which, a, b) = match ev.name.as_str() {
                "tcp_probe" => (Which::TcpProbe, "skbaddr", "skaddr"),
                "sock_send_length" => (Which::SendLen, "sk", "ret"),
                "irq_handler_entry" => (Which::IrqEntry, "irq", ""),
                "irq_handler_exit" => (Which::IrqExit, "irq", ""),
                "softirq_entry" => (Which::SoftEntry, "vec", ""),
                "softirq_exit" => (Which::SoftExit, "vec", ""),
                "netif_receive_skb" => (Which::NetRx, "skbaddr", ""),
                "skb_copy_datagram_iovec" => (Which::SkbCopy, "skbaddr", ""),
                "consume_skb" => (Which::SkbConsume, "skbaddr", ""),
                "sk_data_ready" => (Which::SkReady, "skaddr", ""),
                "sock_recv_length" => (Which::RecvLen, "sk", "ret"),
                "block_rq_issue" => (Which::RqIssue, "dev", "sector"),
                "block_rq_complete" => (Which::RqComplete, "dev", "sector"),
                "sched_waking" => (Which::Waking, "pid", ""),
                _ => continue,
            };
            let a = f.field(a).cloned();
            let b = (!b.is_empty()).then(|| f.field(b).cloned()).flatten();
            let c = (ev.name == "tcp_probe")
                .then(|| f.field("data_len").cloned())
                .flatten();
            if a.is_none() || f.id == 0 {
                continue;
            }
            // One shape per event and per id, the later format taking the place of the earlier
            // (the kernel has one of each; a crafted file's repeats cannot grow the scan).
            d.shapes.retain(|s| s.id != f.id && s.which != which);
            d.shapes.push(Shape {
                id: f.id,
                which,
                a,
                b,
                c,
            });
        }
        d
    }

    /// The page layout in use.
    pub fn layout(&self) -> PageLayout {
        self.layout
    }

    /// Decode one record; `None` for unknown ids or short records.
    pub fn decode(&self, cpu: u32, time: u64, rec: &[u8]) -> Option<Event> {
        let id = self.common_type.as_ref()?.read(rec)?;
        let s = self.shapes.iter().find(|s| s.id == id)?;
        let a = s.a.as_ref()?.read(rec)?;
        let b = s.b.as_ref().and_then(|f| f.read(rec));
        let need_b = || b;
        let kind = match s.which {
            Which::IrqEntry => EvKind::IrqEntry { irq: a as u32 },
            Which::IrqExit => EvKind::IrqExit,
            Which::SoftEntry => EvKind::SoftEntry { vec: a as u32 },
            Which::SoftExit => EvKind::SoftExit { vec: a as u32 },
            Which::NetRx => EvKind::NetRx { skb: a },
            Which::SkbCopy => EvKind::SkbCopy { skb: a },
            Which::SkbConsume => EvKind::SkbConsume { skb: a },
            Which::SkReady => EvKind::SkReady { sk: a },
            Which::RecvLen => EvKind::RecvLen {
                sk: a,
                ret: need_b()? as i64,
            },
            Which::RqIssue => EvKind::RqIssue {
                dev: a,
                sector: need_b()?,
            },
            Which::RqComplete => EvKind::RqComplete {
                dev: a,
                sector: need_b()?,
            },
            Which::Waking => EvKind::Waking { pid: a as u32 },
            Which::TcpProbe => EvKind::TcpProbe {
                skb: a,
                sk: need_b()?,
                len: s.c.as_ref().and_then(|f| f.read(rec))?,
            },
            Which::SendLen => EvKind::SendLen {
                sk: a,
                ret: need_b()? as i64,
            },
        };
        let pid = self
            .common_pid
            .as_ref()
            .and_then(|f| f.read(rec))
            .unwrap_or(0) as u32;
        let flags = self
            .common_flags
            .as_ref()
            .and_then(|f| f.read(rec))
            .unwrap_or(0);
        Some(Event {
            time,
            cpu,
            pid,
            in_irq: flags & IRQ_FLAGS != 0,
            kind,
        })
    }
}

/// Totals of decoding every page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeCounts {
    /// Data events found per CPU (all ids).
    pub received: std::collections::BTreeMap<u32, u64>,
    /// Events the pages say were lost before them (count stored by the kernel).
    pub missed_in_pages: u64,
    /// Pages that flagged lost events.
    pub pages_with_loss: u64,
    /// Pages that did not decode to their end.
    pub malformed_pages: u64,
    /// Records whose id the decoder does not know or that were too short.
    pub unknown: u64,
}

/// Decode one page of CPU `cpu` into `out` (appended, in the page's order) and count it.
pub fn decode_page_into(
    dec: &Decoder,
    cpu: u32,
    page: &[u8],
    out: &mut Vec<Event>,
    counts: &mut DecodeCounts,
) {
    let mut unknown = 0;
    let info: PageInfo = decode_page(
        page,
        dec.layout,
        &mut |t, rec| match dec.decode(cpu, t, rec) {
            Some(e) => out.push(e),
            None => unknown += 1,
        },
    );
    counts.unknown += unknown;
    *counts.received.entry(cpu).or_default() += info.events;
    if let Some(m) = info.missed {
        counts.pages_with_loss += 1;
        counts.missed_in_pages += m;
    }
    if info.malformed {
        counts.malformed_pages += 1;
    }
}

/// Decode all pages (`(cpu, page bytes)`) into events sorted by time. Holds every event:
/// for tests and small inputs; a recording is streamed ([`super::LabelsRecording::analyze`]).
pub fn decode_all<'a>(
    dec: &Decoder,
    pages: impl Iterator<Item = (u32, &'a [u8])>,
) -> (Vec<Event>, DecodeCounts) {
    let mut out = Vec::new();
    let mut counts = DecodeCounts::default();
    for (cpu, page) in pages {
        decode_page_into(dec, cpu, page, &mut out, &mut counts);
    }
    out.sort_by_key(|e| (e.time, e.cpu));
    (out, counts)
}
