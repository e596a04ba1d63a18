//! Decoding the raw perf ring records stored verbatim by the recorder.
//!
//! Untrusted bytes: every read is bounds-checked and a malformed record ends the chunk with a
//! counted error rather than a panic.

use super::attr::{sample, Attr};
use crate::frames::for_each_frame;

/// PERF_RECORD_* types hood decodes.
pub mod kind {
    /// mmap of an executable region.
    pub const MMAP: u32 = 1;
    /// Samples lost by the kernel.
    pub const LOST: u32 = 2;
    /// Thread name change / exec.
    pub const COMM: u32 = 3;
    /// Thread exit.
    pub const EXIT: u32 = 4;
    /// Sampling throttled.
    pub const THROTTLE: u32 = 5;
    /// Sampling unthrottled.
    pub const UNTHROTTLE: u32 = 6;
    /// Fork / clone.
    pub const FORK: u32 = 7;
    /// A sample.
    pub const SAMPLE: u32 = 9;
    /// mmap with device/inode or build-id.
    pub const MMAP2: u32 = 10;
    /// Samples lost (counted in the ring's sample stream).
    pub const LOST_SAMPLES: u32 = 13;
}

/// misc bit: COMM record caused by exec.
pub const MISC_COMM_EXEC: u16 = 1 << 13;
/// misc bit: MMAP2 record carries a build-id instead of device/inode.
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// cpumode values in misc & 7.
pub const CPUMODE_KERNEL: u8 = 1;
/// User mode.
pub const CPUMODE_USER: u8 = 2;

/// First callchain marker value (`PERF_CONTEXT_MAX` = -4095 as u64).
pub const CONTEXT_MAX: u64 = (-4095i64) as u64;
/// Marker: the following frames are kernel frames.
pub const CONTEXT_KERNEL: u64 = (-128i64) as u64;
/// Marker: the following frames are user frames.
pub const CONTEXT_USER: u64 = (-512i64) as u64;

/// First of hood's own call-chain markers: `CONTEXT_TRUNCATED + code` ends a user stack that
/// could not be completed, with [`Truncation::code`] saying why. They sit inside perf's range of
/// context markers (at or above [`CONTEXT_MAX`]), where the kernel defines none.
pub const CONTEXT_TRUNCATED: u64 = (-3072i64) as u64;

/// Why a user stack stops before the program's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Truncation {
    /// The next frame lies beyond the copied part of the stack (`--call-graph dwarf,BYTES`
    /// with a bigger size reaches it).
    StackCopyTooSmall,
    /// The last frame's code has no call frame information and no frame pointer to follow.
    NoUnwindInfo,
    /// A return address lies outside every known mapping (or the sample's process is unknown).
    NotMapped,
    /// The call frame information or the stack contents led nowhere.
    Failed,
    /// More frames than hood keeps.
    TooDeep,
}

impl Truncation {
    /// Every reason, in code order.
    pub const ALL: [Truncation; 5] = [
        Truncation::StackCopyTooSmall,
        Truncation::NoUnwindInfo,
        Truncation::NotMapped,
        Truncation::Failed,
        Truncation::TooDeep,
    ];

    /// The small stable code stored in recordings.
    pub fn code(self) -> u64 {
        self as u64
    }

    /// The reason for a stored code.
    pub fn from_code(code: u64) -> Option<Truncation> {
        Truncation::ALL.get(usize::try_from(code).ok()?).copied()
    }

    /// The call-chain marker that stores this reason.
    pub fn marker(self) -> u64 {
        CONTEXT_TRUNCATED + self.code()
    }

    /// The reason a call-chain entry stores, if it is one of hood's truncation markers.
    pub fn from_marker(entry: u64) -> Option<Truncation> {
        Truncation::from_code(entry.checked_sub(CONTEXT_TRUNCATED)?)
    }
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A sample; its call chain is `chains[chain.0..chain.1]` of the decoder's buffer.
    Sample {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// CPU.
        cpu: u32,
        /// Sampled instruction pointer.
        ip: u64,
        /// Period (event count since the previous sample).
        period: u64,
        /// cpumode from misc.
        cpumode: u8,
        /// Range of the call chain in [`Decoded::chains`].
        chain: (u32, u32),
    },
    /// A new mapping (boxed: rare, and twice the size of a sample).
    Mmap(Box<Mapping>),
    /// A thread name change; `exec` when caused by exec.
    Comm {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// New name.
        comm: String,
        /// Caused by exec.
        exec: bool,
    },
    /// A fork or clone.
    Fork {
        /// New process id.
        pid: u32,
        /// Parent process id.
        ppid: u32,
        /// New thread id.
        tid: u32,
    },
    /// A thread exit.
    Exit {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
    },
    /// The kernel dropped `count` records.
    Lost {
        /// How many.
        count: u64,
    },
    /// Sampling was throttled.
    Throttle,
}

/// A new mapping of a file or pseudo-file into a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Process id.
    pub pid: u32,
    /// Start address.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// File name or pseudo-name.
    pub filename: String,
    /// Build-id when the kernel supplied it.
    pub build_id: Option<Vec<u8>>,
}

/// An event with its timestamp (CLOCK_MONOTONIC ns; 0 if unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timed {
    /// Timestamp.
    pub time: u64,
    /// CPU ring the record came from.
    pub ring_cpu: u32,
    /// The event.
    pub event: Event,
}

/// Decoded records of a whole recording.
#[derive(Debug, Default)]
pub struct Decoded {
    /// Events in ring order (sorted later).
    pub events: Vec<Timed>,
    /// Call chain entries of all samples.
    pub chains: Vec<u64>,
    /// Records that could not be decoded.
    pub malformed: u64,
    /// Record types seen but not used.
    pub skipped: u64,
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn u64(&mut self) -> Option<u64> {
        let s = self.b.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(u64::from_le_bytes(s.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        let s = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_le_bytes(s.try_into().ok()?))
    }
    fn skip(&mut self, n: usize) -> Option<()> {
        if self.at + n > self.b.len() {
            return None;
        }
        self.at += n;
        Some(())
    }
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at + n)?;
        self.at += n;
        Some(s)
    }
}

/// Where the `time` of a non-sample record sits in its sample_id trailer.
fn trailer_time(attr: &Attr, body: &[u8]) -> u64 {
    if !attr.sample_id_all() || attr.sample_type & sample::TIME == 0 {
        return 0;
    }
    let st = attr.sample_type;
    // Trailer fields after TIME: ID, STREAM_ID, CPU, IDENTIFIER (8 bytes each).
    let after = [
        sample::ID,
        sample::STREAM_ID,
        sample::CPU,
        sample::IDENTIFIER,
    ]
    .iter()
    .filter(|&&bit| st & bit != 0)
    .count()
        * 8;
    let end = body.len();
    if end < after + 8 {
        return 0;
    }
    let at = end - after - 8;
    u64::from_le_bytes(body[at..at + 8].try_into().unwrap_or([0; 8]))
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl Decoded {
    /// Decode one chunk of raw records from the ring of `cpu`.
    pub fn push_chunk(&mut self, attr: &Attr, cpu: u32, bytes: &[u8]) {
        let mut bad = 0;
        let framed = for_each_frame(bytes, |f| {
            if self
                .push_record(attr, cpu, f.ty, f.misc, &f.bytes[8..])
                .is_none()
            {
                bad += 1;
            }
        });
        self.malformed += bad + u64::from(framed.is_err());
    }

    fn push_record(
        &mut self,
        attr: &Attr,
        cpu: u32,
        typ: u32,
        misc: u16,
        body: &[u8],
    ) -> Option<()> {
        let mut c = Cursor { b: body, at: 0 };
        let (time, event) = match typ {
            kind::SAMPLE => {
                let mark = self.chains.len();
                let r = self.push_sample(attr, cpu, misc, body);
                if r.is_none() {
                    self.chains.truncate(mark);
                }
                return r;
            }
            kind::MMAP | kind::MMAP2 => {
                let pid = c.u32()?;
                let _tid = c.u32()?;
                let start = c.u64()?;
                let len = c.u64()?;
                let pgoff = c.u64()?;
                let mut build_id = None;
                if typ == kind::MMAP2 {
                    let ids = c.bytes(24)?;
                    if misc & MISC_MMAP_BUILD_ID != 0 {
                        let n = (ids[0] as usize).min(20);
                        build_id = Some(ids[4..4 + n].to_vec());
                    }
                    c.skip(8)?; // prot, flags
                }
                let filename = cstr(body.get(c.at..)?);
                let ev = Event::Mmap(Box::new(Mapping {
                    pid,
                    start,
                    len,
                    pgoff,
                    filename,
                    build_id,
                }));
                (trailer_time(attr, body), ev)
            }
            kind::COMM => {
                let pid = c.u32()?;
                let tid = c.u32()?;
                let comm = cstr(body.get(c.at..)?);
                let exec = misc & MISC_COMM_EXEC != 0;
                (
                    trailer_time(attr, body),
                    Event::Comm {
                        pid,
                        tid,
                        comm,
                        exec,
                    },
                )
            }
            kind::FORK | kind::EXIT => {
                let pid = c.u32()?;
                let ppid = c.u32()?;
                let tid = c.u32()?;
                let _ptid = c.u32()?;
                let time = c.u64()?;
                let ev = if typ == kind::FORK {
                    Event::Fork { pid, ppid, tid }
                } else {
                    Event::Exit { pid, tid }
                };
                (time, ev)
            }
            kind::LOST => {
                let _id = c.u64()?;
                let count = c.u64()?;
                (trailer_time(attr, body), Event::Lost { count })
            }
            kind::LOST_SAMPLES => {
                let count = c.u64()?;
                (trailer_time(attr, body), Event::Lost { count })
            }
            kind::THROTTLE => (c.u64()?, Event::Throttle),
            _ => {
                self.skipped += 1;
                return Some(());
            }
        };
        self.events.push(Timed {
            time,
            ring_cpu: cpu,
            event,
        });
        Some(())
    }

    fn push_sample(&mut self, attr: &Attr, ring_cpu: u32, misc: u16, body: &[u8]) -> Option<()> {
        let st = attr.sample_type;
        let mut c = Cursor { b: body, at: 0 };
        let has = |bit| st & bit != 0;
        if has(sample::IDENTIFIER) {
            c.skip(8)?;
        }
        let ip = if has(sample::IP) { c.u64()? } else { 0 };
        let (pid, tid) = if has(sample::TID) {
            (c.u32()?, c.u32()?)
        } else {
            (0, 0)
        };
        let time = if has(sample::TIME) { c.u64()? } else { 0 };
        for bit in [sample::ADDR, sample::ID, sample::STREAM_ID] {
            if has(bit) {
                c.skip(8)?;
            }
        }
        let cpu = if has(sample::CPU) {
            let cpu = c.u32()?;
            c.skip(4)?;
            cpu
        } else {
            ring_cpu
        };
        let period = if has(sample::PERIOD) { c.u64()? } else { 1 };
        let begin = self.chains.len() as u32;
        if has(sample::CALLCHAIN) {
            let nr = c.u64()?;
            if nr > 4096 {
                return None;
            }
            for _ in 0..nr {
                let a = c.u64()?;
                self.chains.push(a);
            }
        }
        let end = self.chains.len() as u32;
        self.events.push(Timed {
            time,
            ring_cpu,
            event: Event::Sample {
                pid,
                tid,
                cpu,
                ip,
                period,
                cpumode: (misc & 7) as u8,
                chain: (begin, end),
            },
        });
        Some(())
    }

    /// Sort events by time, keeping ring order among equal times.
    pub fn sort(&mut self) {
        self.events.sort_by_key(|e| e.time);
    }
}
