//! One perf.data record, as parsed by linux-perf-data, turned into hood's decoded [`Event`].
//!
//! The records are untrusted bytes: everything that could make the parser panic is checked
//! here first, and a record that does not parse is counted as malformed, never followed.

use linux_perf_data::linux_perf_event_reader::{
    CpuMode, EventRecord, Mmap2FileId, RawEventRecord, RecordType,
};

use crate::profile::records::{Decoded, Event, Mapping, Timed};

/// PERF_RECORD_MISC_MMAP_BUILD_ID: the MMAP2 record carries a build-id.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// Byte offset of the build-id length in an MMAP2 body (pid, tid, addr, len, pgoff).
const MMAP2_BUILD_ID_LEN_AT: usize = 32;
/// Longest build-id the kernel emits.
const MAX_BUILD_ID: u8 = 20;

/// hood's numeric cpumode (the `misc & 7` value) for linux-perf-data's enum.
pub fn cpumode_code(mode: CpuMode) -> u8 {
    match mode {
        CpuMode::Unknown => 0,
        CpuMode::Kernel => 1,
        CpuMode::User => 2,
        CpuMode::Hypervisor => 3,
        CpuMode::GuestKernel => 4,
        CpuMode::GuestUser => 5,
        _ => 0,
    }
}

fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Whether parsing `rec` could trip an assertion inside the parser (a build-id longer than
/// 20 bytes in an MMAP2 record).
fn would_panic(rec: &RawEventRecord) -> bool {
    if rec.record_type != RecordType::MMAP2 || rec.misc & MISC_MMAP_BUILD_ID == 0 {
        return false;
    }
    match rec
        .data
        .get(MMAP2_BUILD_ID_LEN_AT..MMAP2_BUILD_ID_LEN_AT + 1)
    {
        Some(b) => b.as_slice().first().is_none_or(|&n| n > MAX_BUILD_ID),
        None => true,
    }
}

/// What one record contributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// A sample on this CPU (0 when the file did not record CPUs).
    Sample(u32),
    /// Samples lost.
    Lost(u64),
    /// Another record hood uses.
    Other,
    /// A record type hood does not use.
    Skipped,
    /// The record did not parse.
    Malformed,
}

/// Stack copies of `perf record --call-graph dwarf` samples, kept until they are unwound.
#[derive(Debug, Default)]
pub struct StackCopies {
    /// (index of the sample in the decoded events, ip, sp, bp, range in `bytes`).
    pub samples: Vec<(usize, [u64; 3], std::ops::Range<usize>)>,
    /// The copied stack bytes of every sample, one after the other.
    pub bytes: Vec<u8>,
    /// Largest copy size asked for.
    pub max_size: usize,
}

/// x86-64 register numbers in perf's user register sets.
const REG_BP: u64 = 6;
const REG_SP: u64 = 7;
const REG_IP: u64 = 8;

/// Decode `rec` into `out`; a sample's user stack copy goes to `stacks`.
pub fn push(out: &mut Decoded, rec: &RawEventRecord, stacks: &mut StackCopies) -> Pushed {
    if would_panic(rec) || !super::check::sample(rec) {
        return Pushed::Malformed;
    }
    let time = rec.timestamp().unwrap_or(0);
    let ring_cpu = rec.common_data().ok().and_then(|c| c.cpu).unwrap_or(0);
    let Ok(parsed) = rec.parse() else {
        return Pushed::Malformed;
    };
    let mut result = Pushed::Other;
    let event = match parsed {
        EventRecord::Sample(s) => {
            let begin = out.chains.len() as u32;
            if let Some(chain) = &s.callchain {
                out.chains
                    .extend((0..chain.len()).filter_map(|i| chain.get(i)));
            }
            let end = out.chains.len() as u32;
            if let (Some(regs), Some((data, dyn_size))) = (&s.user_regs, &s.user_stack) {
                if let (Some(ip), Some(sp), Some(bp)) =
                    (regs.get(REG_IP), regs.get(REG_SP), regs.get(REG_BP))
                {
                    let copied = usize::try_from(*dyn_size).unwrap_or(0).min(data.len());
                    let from = stacks.bytes.len();
                    if let Some(d) = data.get(0..copied) {
                        stacks.bytes.extend_from_slice(&d.as_slice());
                    }
                    stacks.max_size = stacks.max_size.max(data.len());
                    stacks
                        .samples
                        .push((out.events.len(), [ip, sp, bp], from..stacks.bytes.len()));
                }
            }
            let cpu = s.cpu.unwrap_or(ring_cpu);
            result = Pushed::Sample(cpu);
            Event::Sample {
                pid: s.pid.unwrap_or(-1) as u32,
                tid: s.tid.unwrap_or(-1) as u32,
                cpu,
                ip: s.ip.unwrap_or(0),
                period: s.period.unwrap_or(1),
                cpumode: cpumode_code(s.cpu_mode),
                chain: (begin, end),
            }
        }
        EventRecord::Mmap(m) => Event::Mmap(Box::new(Mapping {
            pid: m.pid as u32,
            start: m.address,
            len: m.length,
            pgoff: m.page_offset,
            filename: text(&m.path.as_slice()),
            build_id: None,
        })),
        EventRecord::Mmap2(m) => Event::Mmap(Box::new(Mapping {
            pid: m.pid as u32,
            start: m.address,
            len: m.length,
            pgoff: m.page_offset,
            filename: text(&m.path.as_slice()),
            build_id: match m.file_id {
                Mmap2FileId::BuildId(b) => Some(b),
                Mmap2FileId::InodeAndVersion(_) => None,
            },
        })),
        EventRecord::Comm(c) => Event::Comm {
            pid: c.pid as u32,
            tid: c.tid as u32,
            comm: text(&c.name.as_slice()),
            exec: c.is_execve,
        },
        EventRecord::Fork(f) => Event::Fork {
            pid: f.pid as u32,
            ppid: f.ppid as u32,
            tid: f.tid as u32,
        },
        EventRecord::Exit(e) => Event::Exit {
            pid: e.pid as u32,
            tid: e.tid as u32,
        },
        EventRecord::Lost(l) => {
            result = Pushed::Lost(l.count);
            Event::Lost { count: l.count }
        }
        EventRecord::Throttle(_) => Event::Throttle,
        EventRecord::Raw(r) if r.record_type == RecordType::LOST_SAMPLES => {
            let count = r
                .data
                .get(0..8)
                .map(|d| d.as_slice())
                .and_then(|b| b.as_ref().try_into().ok())
                .map(u64::from_le_bytes);
            match count {
                Some(count) => {
                    result = Pushed::Lost(count);
                    Event::Lost { count }
                }
                None => return Pushed::Malformed,
            }
        }
        _ => return Pushed::Skipped,
    };
    out.events.push(Timed {
        time,
        ring_cpu,
        event,
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use linux_perf_data::linux_perf_event_reader::{
        BranchSampleFormat, Endianness, RawData, ReadFormat, RecordIdParseInfo, RecordParseInfo,
        SampleFormat,
    };

    /// Samples with IP, TID and TIME; no sample_id trailer on other records.
    fn parse_info() -> RecordParseInfo {
        RecordParseInfo {
            endian: Endianness::LittleEndian,
            sample_format: SampleFormat::IP | SampleFormat::TID | SampleFormat::TIME,
            branch_sample_format: BranchSampleFormat::empty(),
            read_format: ReadFormat::empty(),
            common_data_offset_from_end: None,
            sample_regs_user: 0,
            user_regs_count: 0,
            sample_regs_intr: 0,
            intr_regs_count: 0,
            id_parse_info: RecordIdParseInfo {
                nonsample_record_id_offset_from_end: None,
                sample_record_id_offset_from_start: None,
            },
            nonsample_record_time_offset_from_end: None,
            sample_record_time_offset_from_start: Some(16),
        }
    }

    #[test]
    fn oversized_build_id_is_malformed_not_a_panic() {
        let mut body = [0u8; 32 + 24 + 8 + 2];
        body[MMAP2_BUILD_ID_LEN_AT] = 200;
        let rec = RawEventRecord::new(
            RecordType::MMAP2,
            MISC_MMAP_BUILD_ID,
            RawData::from(&body[..]),
            parse_info(),
        );
        let mut d = Decoded::default();
        assert_eq!(
            push(&mut d, &rec, &mut StackCopies::default()),
            Pushed::Malformed
        );
        assert!(d.events.is_empty());
    }

    #[test]
    fn sample_without_callchain_decodes_pid_tid_ip() {
        let mut body = Vec::new();
        body.extend_from_slice(&0x401000u64.to_le_bytes());
        body.extend_from_slice(&42i32.to_le_bytes());
        body.extend_from_slice(&43i32.to_le_bytes());
        body.extend_from_slice(&7u64.to_le_bytes());
        let rec = RawEventRecord::new(
            RecordType::SAMPLE,
            2,
            RawData::from(&body[..]),
            parse_info(),
        );
        let mut d = Decoded::default();
        assert_eq!(
            push(&mut d, &rec, &mut StackCopies::default()),
            Pushed::Sample(0)
        );
        assert_eq!(d.events.len(), 1);
        assert_eq!(d.events[0].time, 7);
        match &d.events[0].event {
            Event::Sample {
                pid,
                tid,
                ip,
                cpumode,
                period,
                ..
            } => {
                assert_eq!(
                    (*pid, *tid, *ip, *cpumode, *period),
                    (42, 43, 0x401000, 2, 1)
                );
            }
            other => panic!("not a sample: {other:?}"),
        }
        // A truncated sample is malformed.
        let short = RawEventRecord::new(
            RecordType::SAMPLE,
            2,
            RawData::from(&body[..10]),
            parse_info(),
        );
        assert_eq!(
            push(&mut d, &short, &mut StackCopies::default()),
            Pushed::Malformed
        );
    }
}
