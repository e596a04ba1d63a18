//! Hard-irq and softirq entries/exits of the traced threads (chunk IRQS): raw perf ring records
//! of the `irq:*` tracepoints, decoded with the tracepoints' `format` texts stored in META.
//! Field offsets, tracepoint ids and softirq names all come from those texts.

use serde::{Deserialize, Serialize};

use crate::bytes::{u32_at, u64_at};
use crate::frames::{for_each_frame, FrameError};
use crate::tracefs::format::{EventFormat, Field};

/// PERF_RECORD_LOST.
const RECORD_LOST: u32 = 2;
/// PERF_RECORD_SAMPLE.
const RECORD_SAMPLE: u32 = 9;

/// One recorded tracepoint: `sys:name`, id and `format` text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqTracepointMeta {
    /// `sys:name`, e.g. `irq:softirq_entry`.
    pub name: String,
    /// Tracepoint id (the raw record's `common_type`).
    pub id: u64,
    /// The tracefs `format` file text.
    pub format: String,
}

/// How irq entries/exits were recorded (in META).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqMeta {
    /// perf `sample_type` of the samples (TID | TIME | CPU | RAW).
    pub sample_type: u64,
    /// The tracepoints.
    pub tracepoints: Vec<IrqTracepointMeta>,
}

/// What an irq record says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqKind {
    /// `irq_handler_entry`.
    HardEntry,
    /// `irq_handler_exit`.
    HardExit,
    /// `softirq_entry`.
    SoftEntry,
    /// `softirq_exit`.
    SoftExit,
}

impl IrqKind {
    /// Entry (else exit).
    pub fn is_entry(self) -> bool {
        matches!(self, IrqKind::HardEntry | IrqKind::SoftEntry)
    }
    /// A softirq (else a hard irq).
    pub fn is_soft(self) -> bool {
        matches!(self, IrqKind::SoftEntry | IrqKind::SoftExit)
    }
}

/// One irq entry or exit in a traced thread's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Irq {
    /// Process id of the interrupted task.
    pub pid: u32,
    /// Its thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    /// CPU.
    pub cpu: u32,
    /// Entry/exit, hard/soft.
    pub kind: IrqKind,
    /// Irq number or softirq vector.
    pub num: u32,
    /// Handler name (hard irq entries) or softirq name (`NET_RX`); empty when unknown.
    pub name: String,
}

/// Irq records decoded from one CPU's ring bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IrqDecode {
    /// Entries and exits.
    pub irqs: Vec<Irq>,
    /// Records the kernel reported lost.
    pub lost: u64,
    /// Samples of an unknown tracepoint or too short for their fields.
    pub skipped: u64,
    /// Why decoding stopped early, if it did.
    pub malformed: Option<String>,
}

struct Tp {
    id: u64,
    kind: IrqKind,
    /// `irq` or `vec`.
    num: Option<Field>,
    /// `name` (`__data_loc char[]`), hard irq entries only.
    name: Option<Field>,
}

/// Decodes irq samples with the layouts of [`IrqMeta`].
pub struct IrqDecoder {
    common_type: Option<Field>,
    tps: Vec<Tp>,
    /// Softirq vector → name, from `__print_symbolic` in the softirq format.
    soft_names: Vec<(u32, String)>,
    sample_type: u64,
}

/// `{ 3, "NET_RX" }` pairs of a `__print_symbolic(...)` in a print fmt line.
fn symbolic_pairs(format: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Some(line) = format
        .lines()
        .find(|l| l.trim_start().starts_with("print fmt:"))
    else {
        return out;
    };
    for part in line.split('{').skip(1) {
        let Some((inner, _)) = part.split_once('}') else {
            continue;
        };
        let Some((n, name)) = inner.split_once(',') else {
            continue;
        };
        if let Ok(n) = n.trim().parse::<u32>() {
            out.push((n, name.trim().trim_matches('"').to_string()));
        }
    }
    out
}

impl IrqDecoder {
    /// A decoder for the tracepoints of `meta`.
    pub fn new(meta: &IrqMeta) -> IrqDecoder {
        let mut d = IrqDecoder {
            common_type: None,
            tps: Vec::new(),
            soft_names: Vec::new(),
            sample_type: meta.sample_type,
        };
        for t in &meta.tracepoints {
            let f = EventFormat::parse(&t.format);
            let kind = match t.name.rsplit(':').next().unwrap_or("") {
                "irq_handler_entry" => IrqKind::HardEntry,
                "irq_handler_exit" => IrqKind::HardExit,
                "softirq_entry" => IrqKind::SoftEntry,
                "softirq_exit" => IrqKind::SoftExit,
                _ => continue,
            };
            if d.common_type.is_none() {
                d.common_type = f.field("common_type").cloned();
            }
            if kind.is_soft() && d.soft_names.is_empty() {
                d.soft_names = symbolic_pairs(&t.format);
            }
            d.tps.push(Tp {
                id: t.id,
                kind,
                num: f.field(if kind.is_soft() { "vec" } else { "irq" }).cloned(),
                name: (kind == IrqKind::HardEntry)
                    .then(|| f.field("name").cloned())
                    .flatten(),
            });
        }
        d
    }

    /// Name of softirq vector `vec` (`vec N` when the format does not list it).
    pub fn softirq_name(&self, vec: u32) -> String {
        self.soft_names
            .iter()
            .find(|(n, _)| *n == vec)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| format!("vec {vec}"))
    }

    /// Decode one sample's body (after the 8-byte header); `None` when it is not one of ours.
    fn sample(&self, body: &[u8]) -> Option<Irq> {
        // TID | TIME | CPU | RAW, in the kernel's field order.
        if self.sample_type != SAMPLE_TYPE {
            return None;
        }
        let pid = u32_at(body, 0)?;
        let tid = u32_at(body, 4)?;
        let time_ns = u64_at(body, 8)?;
        let cpu = u32_at(body, 16)?;
        let size = u32_at(body, 24)? as usize;
        let raw = body.get(28..28usize.checked_add(size)?)?;
        let ty = self.common_type.as_ref()?.read(raw)?;
        let tp = self.tps.iter().find(|t| t.id == ty)?;
        let num = tp.num.as_ref()?.read(raw)? as u32;
        let name = match (&tp.name, tp.kind.is_soft()) {
            (_, true) => self.softirq_name(num),
            (Some(f), false) => data_loc_str(f, raw).unwrap_or_default(),
            (None, false) => String::new(),
        };
        Some(Irq {
            pid,
            tid,
            time_ns,
            cpu,
            kind: tp.kind,
            num,
            name,
        })
    }

    /// Decode the raw records of CPU `cpu`'s irq ring.
    pub fn decode(&self, cpu: u32, b: &[u8]) -> IrqDecode {
        let mut out = IrqDecode::default();
        let framed = for_each_frame(b, |f| match f.ty {
            RECORD_SAMPLE => match self.sample(&f.bytes[8..]) {
                Some(i) => out.irqs.push(i),
                None => out.skipped += 1,
            },
            RECORD_LOST if f.bytes.len() >= 24 => {
                out.lost = out.lost.saturating_add(u64_at(f.bytes, 16).unwrap_or(0))
            }
            _ => {}
        });
        out.malformed = framed.err().map(|e| match e {
            FrameError::BadSize { .. } => format!("CPU {cpu}: irq {e}"),
            FrameError::Trailing(_) => format!("CPU {cpu}: {e}"),
        });
        out
    }
}

/// The sample type the decoder understands (perf's TID | TIME | CPU | RAW bits).
pub const SAMPLE_TYPE: u64 = (1 << 1) | (1 << 2) | (1 << 7) | (1 << 10);

/// A `__data_loc` string: the field holds `length << 16 | offset` into the record.
fn data_loc_str(f: &Field, raw: &[u8]) -> Option<String> {
    let v = f.read(raw)? as u32;
    let (off, len) = ((v & 0xffff) as usize, (v >> 16) as usize);
    let s = raw.get(off..off.checked_add(len)?)?;
    let s = s.split(|&c| c == 0).next().unwrap_or(s);
    Some(String::from_utf8_lossy(s).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRY: &str = "name: irq_handler_entry\nID: 225\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\nprint fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)\n";
    const SOFT: &str = "name: softirq_entry\nID: 223\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n\nprint fmt: \"vec=%u [action=%s]\", REC->vec, __print_symbolic(REC->vec, { 0, \"HI\" }, { 3, \"NET_RX\" }, { 9, \"RCU\" })\n";

    fn meta() -> IrqMeta {
        IrqMeta {
            sample_type: SAMPLE_TYPE,
            tracepoints: vec![
                IrqTracepointMeta {
                    name: "irq:irq_handler_entry".into(),
                    id: 225,
                    format: ENTRY.into(),
                },
                IrqTracepointMeta {
                    name: "irq:softirq_entry".into(),
                    id: 223,
                    format: SOFT.into(),
                },
            ],
        }
    }

    fn sample(raw: &[u8], tid: u32, t: u64) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&7u32.to_le_bytes());
        body.extend_from_slice(&tid.to_le_bytes());
        body.extend_from_slice(&t.to_le_bytes());
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        body.extend_from_slice(raw);
        while (body.len() + 8) % 8 != 0 {
            body.push(0);
        }
        let mut rec = Vec::new();
        rec.extend_from_slice(&RECORD_SAMPLE.to_le_bytes());
        rec.extend_from_slice(&0u16.to_le_bytes());
        rec.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        rec.extend(body);
        rec
    }

    #[test]
    fn decodes_hard_and_soft_entries_with_names_from_the_formats() {
        let d = IrqDecoder::new(&meta());
        let mut hard = vec![0u8; 16];
        hard[0..2].copy_from_slice(&225u16.to_le_bytes());
        hard[8..12].copy_from_slice(&11i32.to_le_bytes());
        hard[12..16].copy_from_slice(&((6u32 << 16) | 16).to_le_bytes());
        hard.extend_from_slice(b"virtio\0\0");
        let mut soft = vec![0u8; 12];
        soft[0..2].copy_from_slice(&223u16.to_le_bytes());
        soft[8..12].copy_from_slice(&3u32.to_le_bytes());
        let mut b = sample(&hard, 8, 100);
        b.extend(sample(&soft, 8, 200));
        let mut lost = vec![0u8; 24];
        lost[0..4].copy_from_slice(&RECORD_LOST.to_le_bytes());
        lost[6..8].copy_from_slice(&24u16.to_le_bytes());
        lost[16..24].copy_from_slice(&5u64.to_le_bytes());
        b.extend(lost);
        let out = d.decode(1, &b);
        assert_eq!(out.malformed, None);
        assert_eq!(out.lost, 5);
        assert_eq!(out.irqs.len(), 2);
        assert_eq!(
            (out.irqs[0].kind, out.irqs[0].num, out.irqs[0].name.as_str()),
            (IrqKind::HardEntry, 11, "virtio")
        );
        assert_eq!(
            (
                out.irqs[1].kind,
                out.irqs[1].name.as_str(),
                out.irqs[1].time_ns
            ),
            (IrqKind::SoftEntry, "NET_RX", 200)
        );
        assert_eq!(d.softirq_name(4), "vec 4");
    }

    #[test]
    fn garbage_never_panics() {
        let d = IrqDecoder::new(&meta());
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..400 {
            let mut g: Vec<u8> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if g.len() >= 8 {
                g[0..4].copy_from_slice(&RECORD_SAMPLE.to_le_bytes());
            }
            let _ = d.decode(0, &g);
        }
    }
}
