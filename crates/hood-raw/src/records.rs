//! Decoding the raw perf ring records stored verbatim by the recorder.
//!
//! Untrusted bytes: every read is bounds-checked and a malformed record ends the chunk with a
//! counted error rather than a panic.

use crate::attr::{sample, Attr};
use crate::bytes::Cursor;
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
    /// A task switched in or out (`context_switch`).
    pub const SWITCH: u32 = 14;
}

/// misc bit of a SWITCH record: the task switched out.
pub const MISC_SWITCH_OUT: u16 = 1 << 13;
/// misc bit of a SWITCH-out record: the task was preempted (still runnable).
pub const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;

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
    /// A thread left a CPU (`sched:sched_switch`, sampled in that thread): the sample's call
    /// chain is its stack at that moment.
    SwitchOut {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// CPU it left.
        cpu: u32,
        /// The kernel's `prev_state`: 0 or [`TASK_REPORT_PREEMPTED`] when still runnable, else
        /// why it sleeps (`TASK_*` bits).
        state: u64,
        /// The thread that takes the CPU (0: idle).
        next_tid: u32,
        /// Range of the call chain in [`Decoded::chains`].
        chain: (u32, u32),
    },
    /// A wake-up (`sched:sched_waking`, sampled in the waker: a thread, or an interrupt on
    /// whatever the CPU ran): the sample's call chain is the waker's stack.
    Waking {
        /// Process id of the waker (of the interrupted task, for an interrupt).
        pid: u32,
        /// Thread id of the waker.
        tid: u32,
        /// CPU.
        cpu: u32,
        /// The thread woken.
        wakee: u32,
        /// Where the waker ran: the tracepoint's `common_flags` (hard irq, soft irq, NMI).
        flags: u8,
        /// Range of the call chain in [`Decoded::chains`].
        chain: (u32, u32),
    },
    /// A thread switched in or out (`PERF_RECORD_SWITCH` of a task session).
    Switch {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Switched out (else in).
        out: bool,
        /// Switched out while runnable.
        preempt: bool,
    },
}

/// `prev_state` of a task switched out while runnable, because it was preempted
/// (`TASK_REPORT_MAX`, shown as `R+` by the kernel).
pub const TASK_REPORT_PREEMPTED: u64 = 0x100;
/// `prev_state` bit: uninterruptible sleep (`D`).
pub const TASK_UNINTERRUPTIBLE: u64 = 0x2;
/// `common_flags` bits of a tracepoint record: in an NMI, a hard irq, a soft irq.
pub mod trace_flags {
    /// Hard interrupt.
    pub const HARDIRQ: u8 = 0x08;
    /// Soft interrupt.
    pub const SOFTIRQ: u8 = 0x10;
    /// Non-maskable interrupt.
    pub const NMI: u8 = 0x40;
}

/// Where the fields of the off-CPU tracepoints sit, read from the `format` texts a recording
/// stores (never assumed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedLayout {
    switch_id: u64,
    waking_id: u64,
    common_flags: crate::tracefs::format::Field,
    prev_pid: crate::tracefs::format::Field,
    prev_state: crate::tracefs::format::Field,
    next_pid: crate::tracefs::format::Field,
    wakee: crate::tracefs::format::Field,
    /// Where a wake-up record written by hood's BPF program keeps the waker's `comm`: after
    /// the tracepoint's fields, at the next 8-byte boundary (the tracepoint's own records
    /// end before it).
    waker_comm_at: usize,
}

/// `format` texts of `sched:sched_switch` and `sched:sched_waking` as a 6.x kernel writes
/// them, with the event ids given: for tests of the code that reads off-CPU records (a
/// recording stores the recording machine's own texts).
#[doc(hidden)]
pub fn example_sched_formats(switch_id: u16, waking_id: u16) -> Vec<String> {
    let common = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
         \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
    vec![
        format!(
            "name: sched_switch\nID: {switch_id}\nformat:\n{common}\
             \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
             \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
             \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
             \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
             \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
             \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
             \tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
        ),
        format!(
            "name: sched_waking\nID: {waking_id}\nformat:\n{common}\
             \tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
             \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
             \tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\
             \tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
        ),
    ]
}

/// Where a wake-up record written by hood's BPF program (hood-perf, a task session's
/// wake-ups) keeps the waker's `comm`, 16 bytes: after the fields of `sched_waking`'s format
/// `waking`, at the next 8-byte boundary (40 on x86-64). The program writes it there, and
/// [`SchedLayout::waker_comm`] reads it; the tracepoint's own records end before it.
pub fn waker_comm_at(waking: &crate::tracefs::format::EventFormat) -> Option<usize> {
    waking
        .fields
        .iter()
        .map(|f| f.offset.saturating_add(f.size))
        .max()?
        .checked_next_multiple_of(8)
}

impl SchedLayout {
    /// The layout from the `format` texts of `sched:sched_switch` and `sched:sched_waking`;
    /// `None` if a field hood needs is missing.
    pub fn from_formats(texts: &[String]) -> Option<SchedLayout> {
        use crate::tracefs::format::EventFormat;
        let f: Vec<EventFormat> = texts.iter().map(|t| EventFormat::parse(t)).collect();
        let sw = f.iter().find(|e| e.name == "sched_switch")?;
        let wk = f.iter().find(|e| e.name == "sched_waking")?;
        Some(SchedLayout {
            switch_id: sw.id,
            waking_id: wk.id,
            common_flags: sw.field("common_flags")?.clone(),
            prev_pid: sw.field("prev_pid")?.clone(),
            prev_state: sw.field("prev_state")?.clone(),
            next_pid: sw.field("next_pid")?.clone(),
            wakee: wk.field("pid")?.clone(),
            waker_comm_at: waker_comm_at(wk)?,
        })
    }

    /// The waker's `comm` (up to its first NUL) that a wake-up record written by hood's BPF
    /// program carries after the tracepoint's fields (a task session's wake-ups: the waker
    /// may be a process the recording does not otherwise know). `None` for the tracepoint's
    /// own records.
    pub fn waker_comm<'r>(&self, raw: &'r [u8]) -> Option<&'r [u8]> {
        let c = raw.get(self.waker_comm_at..self.waker_comm_at.checked_add(16)?)?;
        Some(&c[..c.iter().position(|&b| b == 0).unwrap_or(16)])
    }

    /// Where `common_flags` lies in a record of either tracepoint (its byte offset).
    pub fn common_flags_offset(&self) -> usize {
        self.common_flags.offset
    }

    /// What the raw field of a sample (`SampleParts::raw`) says, when the sample is one of
    /// the off-CPU tracepoints.
    pub fn read(&self, raw: &[u8]) -> Option<SchedRaw> {
        let id = u64::from(u16::from_le_bytes([*raw.first()?, *raw.get(1)?]));
        let tid = |f: &crate::tracefs::format::Field| f.read(raw).map(|v| v as u32);
        if id == self.switch_id {
            Some(SchedRaw::Switch {
                prev_tid: tid(&self.prev_pid)?,
                state: self.prev_state.read(raw)?,
                next_tid: tid(&self.next_pid)?,
            })
        } else if id == self.waking_id {
            Some(SchedRaw::Waking {
                wakee: tid(&self.wakee)?,
                flags: self.common_flags.read(raw)? as u8,
            })
        } else {
            None
        }
    }
}

/// The fields of an off-CPU tracepoint's raw record that hood reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedRaw {
    /// `sched:sched_switch`.
    Switch {
        /// The thread leaving the CPU.
        prev_tid: u32,
        /// Its `prev_state`.
        state: u64,
        /// The thread taking the CPU (0: idle).
        next_tid: u32,
    },
    /// `sched:sched_waking`.
    Waking {
        /// The thread woken.
        wakee: u32,
        /// The record's `common_flags`.
        flags: u8,
    },
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
    pub build_id: Option<crate::BuildId>,
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
    /// The off-CPU tracepoints' layout, when the recording has them: their samples decode
    /// to [`Event::SwitchOut`] and [`Event::Waking`] instead of [`Event::Sample`].
    pub sched: Option<SchedLayout>,
    /// Wakers' names carried by wake-up records ([`SchedLayout::waker_comm`]), by thread id:
    /// the last one seen for each.
    pub waker_comms: std::collections::HashMap<u32, String>,
}

/// The fields of a sample record's body, found from the attribute's `sample_type` in the
/// order perf_event_open(2) lays them out. Fields the sample does not carry are 0 / empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleParts<'a> {
    /// The event id (PERF_SAMPLE_IDENTIFIER, else PERF_SAMPLE_ID).
    pub id: Option<u64>,
    /// Sampled instruction pointer.
    pub ip: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Timestamp.
    pub time: u64,
    /// CPU, when the sample carries it.
    pub cpu: Option<u32>,
    /// Period (1 when the sample does not carry it).
    pub period: u64,
    /// The body before the call chain (the fields a rewrite keeps as they are).
    pub head: &'a [u8],
    /// The call chain as raw little-endian words.
    pub chain: &'a [u8],
    /// The raw field as stored (its `u32` size, the tracepoint record and padding); empty
    /// without PERF_SAMPLE_RAW.
    pub raw_field: &'a [u8],
    /// User registers in the attribute's mask order; empty when the sample has no user
    /// context (a kernel thread) or does not carry them.
    pub regs: &'a [u8],
    /// The copied user stack (only the part the kernel could copy).
    pub stack: &'a [u8],
    /// The size of stack copy the event asked for (0: none, as for whole-CPU wake-ups, whose
    /// samples carry no user stack).
    pub stack_size: u64,
    /// Which registers `regs` holds (the attribute's `sample_regs_user`).
    pub regs_mask: u64,
}

impl SampleParts<'_> {
    /// The `i`-th call-chain entry.
    pub fn chain_at(&self, i: usize) -> Option<u64> {
        word(self.chain, i)
    }

    /// Number of call-chain entries.
    pub fn chain_len(&self) -> usize {
        self.chain.len() / 8
    }

    /// The user register numbered `n` in perf's register numbering (x86-64: 6 = bp,
    /// 7 = sp, 8 = ip); `None` if the sample does not carry it.
    pub fn user_reg(&self, n: u32) -> Option<u64> {
        let bit = 1u64.checked_shl(n)?;
        if self.regs_mask & bit == 0 {
            return None;
        }
        word(
            self.regs,
            (self.regs_mask & (bit - 1)).count_ones() as usize,
        )
    }
}

fn word(b: &[u8], i: usize) -> Option<u64> {
    let s = b.get(i.checked_mul(8)?..i.checked_mul(8)?.checked_add(8)?)?;
    Some(u64::from_le_bytes(s.try_into().ok()?))
}

/// Take apart the body (after the 8-byte header) of a sample record written under `attr`.
/// Fields past the user stack copy are not read. `None` if a length in the record does not
/// fit the record.
pub fn parse_sample<'a>(attr: &Attr, body: &'a [u8]) -> Option<SampleParts<'a>> {
    let st = attr.sample_type;
    let has = |bit| st & bit != 0;
    let mut c = Cursor::new(body);
    let mut id = None;
    if has(sample::IDENTIFIER) {
        id = Some(c.u64()?);
    }
    let ip = if has(sample::IP) { c.u64()? } else { 0 };
    let (pid, tid) = if has(sample::TID) {
        (c.u32()?, c.u32()?)
    } else {
        (0, 0)
    };
    let time = if has(sample::TIME) { c.u64()? } else { 0 };
    if has(sample::ADDR) {
        c.skip(8)?;
    }
    if has(sample::ID) {
        let v = c.u64()?;
        id = id.or(Some(v));
    }
    if has(sample::STREAM_ID) {
        c.skip(8)?;
    }
    let cpu = if has(sample::CPU) {
        let cpu = c.u32()?;
        c.skip(4)?;
        Some(cpu)
    } else {
        None
    };
    let period = if has(sample::PERIOD) { c.u64()? } else { 1 };
    if has(sample::READ) {
        let n = attr.read_field_size(body.get(c.position()..)?)?;
        c.skip(n)?;
    }
    let head = body.get(..c.position())?;
    let chain = if has(sample::CALLCHAIN) {
        let nr = usize::try_from(c.u64()?).ok()?;
        c.bytes(nr.checked_mul(8)?)?
    } else {
        &[]
    };
    let (mut regs, mut stack) = (&[][..], &[][..]);
    let mut stack_size = 0;
    let raw_at = c.position();
    if has(sample::RAW) {
        let n = c.u32()? as usize;
        c.skip(n)?;
    }
    let raw_field = body.get(raw_at..c.position())?;
    if has(sample::REGS_USER) || has(sample::STACK_USER) {
        if has(sample::BRANCH_STACK) {
            let nr = usize::try_from(c.u64()?).ok()?;
            if attr.branch_sample_type & crate::attr::BRANCH_HW_INDEX != 0 {
                c.skip(8)?;
            }
            c.skip(nr.checked_mul(24)?)?;
        }
        if has(sample::REGS_USER) {
            let abi = c.u64()?;
            if abi != 0 {
                regs = c.bytes(attr.sample_regs_user.count_ones() as usize * 8)?;
            }
        }
        if has(sample::STACK_USER) {
            let size = usize::try_from(c.u64()?).ok()?;
            stack_size = size as u64;
            if size != 0 {
                let data = c.bytes(size)?;
                let dyn_size = usize::try_from(c.u64()?).ok()?;
                stack = data.get(..dyn_size.min(size))?;
            }
        }
    }
    Some(SampleParts {
        id,
        ip,
        pid,
        tid,
        time,
        cpu,
        period,
        head,
        chain,
        raw_field,
        regs,
        stack,
        stack_size,
        regs_mask: attr.sample_regs_user,
    })
}

impl SampleParts<'_> {
    /// The tracepoint record of the raw field (empty without one).
    pub fn raw(&self) -> &[u8] {
        self.raw_field.get(4..).unwrap_or(&[])
    }
}

/// The `sample_id` trailer of a non-sample record (present when the attribute sets
/// `sample_id_all`); fields it does not carry are `None` / 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Timestamp (0 if none).
    pub time: u64,
    /// Event id (PERF_SAMPLE_IDENTIFIER, else PERF_SAMPLE_ID).
    pub id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
    /// Process and thread id, when the trailer carries them.
    pub tid: Option<(u32, u32)>,
}

/// Read the `sample_id` trailer at the end of a non-sample record's `body`.
pub fn sample_id(attr: &Attr, body: &[u8]) -> SampleId {
    let mut out = SampleId::default();
    if !attr.sample_id_all() {
        return out;
    }
    let st = attr.sample_type;
    let fields = [
        sample::TID,
        sample::TIME,
        sample::ID,
        sample::STREAM_ID,
        sample::CPU,
        sample::IDENTIFIER,
    ];
    let n = fields.iter().filter(|&&b| st & b != 0).count() * 8;
    let Some(start) = body.len().checked_sub(n) else {
        return out;
    };
    let mut c = Cursor::starting_at(body, start);
    for bit in fields {
        if st & bit == 0 {
            continue;
        }
        let Some(v) = c.u64() else {
            return out;
        };
        match bit {
            // pid then tid, as two u32 in one little-endian word.
            sample::TID => out.tid = Some((v as u32, (v >> 32) as u32)),
            sample::TIME => out.time = v,
            sample::ID | sample::IDENTIFIER => out.id = Some(v),
            sample::CPU => out.cpu = Some(v as u32),
            _ => {}
        }
    }
    out
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

impl Decoded {
    /// The call chain an event's `chain` range points at (empty if out of range).
    pub fn chain(&self, range: (u32, u32)) -> &[u64] {
        self.chains
            .get(range.0 as usize..range.1 as usize)
            .unwrap_or(&[])
    }

    /// Decode one chunk of raw records from the ring of `cpu`.
    pub fn push_chunk(&mut self, attr: &Attr, cpu: u32, bytes: &[u8]) {
        let mut bad = 0;
        let framed = for_each_frame(bytes, |f| {
            if self
                .push_record(attr, Some(cpu), f.ty, f.misc, &f.bytes[8..])
                .is_none()
            {
                bad += 1;
            }
        });
        self.malformed += bad + u64::from(framed.is_err());
    }

    /// Decode one record (its type, misc bits and body after the 8-byte header) written
    /// under `attr`. `ring_cpu` is the CPU whose ring it came from; without it, the CPU the
    /// record itself names (or 0). Record types hood does not use are counted in
    /// [`skipped`](Self::skipped); `None` means the record is malformed (the caller counts it).
    pub fn push_record(
        &mut self,
        attr: &Attr,
        ring_cpu: Option<u32>,
        typ: u32,
        misc: u16,
        body: &[u8],
    ) -> Option<()> {
        if typ == kind::SAMPLE {
            let s = parse_sample(attr, body)?;
            let ring_cpu = ring_cpu.or(s.cpu).unwrap_or(0);
            let begin = self.chains.len() as u32;
            self.chains.extend(
                s.chain
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8]))),
            );
            let end = self.chains.len() as u32;
            let cpu = s.cpu.unwrap_or(ring_cpu);
            let event = match self.sched_event(&s, cpu, (begin, end)) {
                Some(e) => e,
                None => Event::Sample {
                    pid: s.pid,
                    tid: s.tid,
                    cpu,
                    ip: s.ip,
                    period: s.period,
                    cpumode: (misc & 7) as u8,
                    chain: (begin, end),
                },
            };
            self.events.push(Timed {
                time: s.time,
                ring_cpu,
                event,
            });
            return Some(());
        }
        let mut c = Cursor::new(body);
        let trailer = sample_id(attr, body);
        let mut time = trailer.time;
        let event = match typ {
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
                        build_id = crate::BuildId::from_bytes(&ids[4..4 + n]);
                    }
                    c.skip(8)?; // prot, flags
                }
                let filename = cstr(body.get(c.position()..)?);
                Event::Mmap(Box::new(Mapping {
                    pid,
                    start,
                    len,
                    pgoff,
                    filename,
                    build_id,
                }))
            }
            kind::COMM => {
                let pid = c.u32()?;
                let tid = c.u32()?;
                let comm = cstr(body.get(c.position()..)?);
                let exec = misc & MISC_COMM_EXEC != 0;
                Event::Comm {
                    pid,
                    tid,
                    comm,
                    exec,
                }
            }
            kind::FORK | kind::EXIT => {
                let pid = c.u32()?;
                let ppid = c.u32()?;
                let tid = c.u32()?;
                let _ptid = c.u32()?;
                time = c.u64()?;
                if typ == kind::FORK {
                    Event::Fork { pid, ppid, tid }
                } else {
                    Event::Exit { pid, tid }
                }
            }
            kind::LOST => {
                let _id = c.u64()?;
                Event::Lost { count: c.u64()? }
            }
            kind::LOST_SAMPLES => Event::Lost { count: c.u64()? },
            kind::THROTTLE => {
                time = c.u64()?;
                Event::Throttle
            }
            kind::SWITCH => {
                let (pid, tid) = trailer.tid?;
                Event::Switch {
                    pid,
                    tid,
                    out: misc & MISC_SWITCH_OUT != 0,
                    preempt: misc & MISC_SWITCH_OUT_PREEMPT != 0,
                }
            }
            _ => {
                self.skipped += 1;
                return Some(());
            }
        };
        self.events.push(Timed {
            time,
            ring_cpu: ring_cpu.or(trailer.cpu).unwrap_or(0),
            event,
        });
        Some(())
    }

    /// The switch or wake-up a sample stands for, when it is one of the off-CPU tracepoints.
    fn sched_event(&mut self, s: &SampleParts<'_>, cpu: u32, chain: (u32, u32)) -> Option<Event> {
        Some(match self.sched.as_ref()?.read(s.raw())? {
            SchedRaw::Switch {
                prev_tid,
                state,
                next_tid,
            } => Event::SwitchOut {
                pid: s.pid,
                tid: prev_tid,
                cpu,
                state,
                next_tid,
                chain,
            },
            SchedRaw::Waking { wakee, flags } => {
                let layout = self.sched.as_ref()?;
                if let Some(c) = layout.waker_comm(s.raw()).filter(|c| !c.is_empty()) {
                    if self.waker_comms.get(&s.tid).map(|n| n.as_bytes()) != Some(c) {
                        self.waker_comms
                            .insert(s.tid, String::from_utf8_lossy(c).into_owned());
                    }
                }
                Event::Waking {
                    pid: s.pid,
                    tid: s.tid,
                    cpu,
                    wakee,
                    flags,
                    chain,
                }
            }
        })
    }

    /// Sort events by time, keeping ring order among equal times.
    pub fn sort(&mut self) {
        self.events.sort_by_key(|e| e.time);
    }
}
