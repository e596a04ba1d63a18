//! Event traces (`hood trace`): per-thread entry/exit/mark events from the hood-rt
//! trace mode, the kernel's context switches, their file encoding, and the analysis behind
//! `hood trace report` (McRae's function summary and code-path trace). Pure: no kernel.

mod analysis;
mod codec;
mod timeline;
mod wake;

pub use analysis::{
    analyze, tag_listing, Analysis, AnalysisOptions, Analyzer, CallRec, Ended, FunctionRow, NoSink,
    Probe, Sink, ThreadSummary, TraceFilter, LINES_HELD,
};
pub use codec::{
    decode_events, decode_raw, decode_switches, decode_words, encode_events, encode_raw,
    events_header, for_each_events, for_each_events_in, last_ticks, load, load_readers, scan,
    scan_reader, Events, SwitchDecode, ThreadIndex, TraceHead, EVENTS_HEADER,
};
pub use timeline::{PathItem, PathLine, Waker, WakerKind};
pub use wake::{
    decode_wakeups, waker_queries, TaskName, WakeDecode, WakeDecoder, WakeMeta, WakerFunctions,
    WakerTops, Wakeup,
};

use std::collections::BTreeMap;

use hood_raw::irq::{Irq, IrqDecoder, IrqKind, IrqMeta};

use serde::{Deserialize, Serialize};

/// Version of the JSON payloads (META, PROCESS) and of the EVENTS encoding; readers refuse
/// newer ones. 1: EVENTS hold 16-byte (address, ticks << 2 | kind) events; 2: EVENTS hold the
/// runtime's 8-byte event words as varint timestamp steps, functions named by index into
/// [`ProcessTrace::funcs`]; 3: EVENTS hold the runtime's event words as they lie in its
/// buffers ([`events_header`]), so a recorder moves them to the file with no work per event.
pub const PAYLOAD_VERSION: u32 = 3;

/// Most events a recorder puts in one EVENTS chunk. A report decodes a chunk at a time, so
/// this bounds its memory: 262,144 events decode to ~8 MB.
pub const MAX_EVENTS_PER_CHUNK: usize = 1 << 18;

/// How the trace was recorded (chunk META).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// [`PAYLOAD_VERSION`].
    pub version: u32,
    /// The traced command.
    pub argv: Vec<String>,
    /// Events per thread buffer.
    pub buffer: u64,
    /// "stop" or "wrap".
    pub full: String,
    /// `--filter` globs.
    pub filters: Vec<String>,
    /// `--exclude` globs.
    pub excludes: Vec<String>,
    /// Context switches were recorded.
    pub sched: bool,
    /// CLOCK_REALTIME ns when the file was written.
    pub collected_realtime_ns: u64,
    /// Irq entries/exits were recorded (chunks IRQS) with these tracepoints; `None` when they
    /// were not (no privilege, `--no-sched`, or a file of an earlier hood).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq: Option<IrqMeta>,
    /// Wake-ups of the traced threads were recorded (chunks WAKEUPS) with these tracepoints;
    /// `None` when they were not (no privilege, `--no-sched`, `HOOD_TRACE_WAKE=0`, or a file
    /// of an earlier hood).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake: Option<WakeMeta>,
}

/// One traced process (one hood-rt trace segment), chunk PROCESS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessTrace {
    /// Process id.
    pub pid: u32,
    /// Parent pid at segment creation.
    pub ppid: u32,
    /// Executable path.
    pub exe: String,
    /// The clock of the timestamps (`tsc` or `monotonic`).
    pub clock: crate::Clock,
    /// Timestamp ticks per second (calibrated against CLOCK_MONOTONIC by the runtime).
    pub ticks_per_sec: u64,
    /// Timestamp at segment creation...
    pub start_ticks: u64,
    /// ...and CLOCK_MONOTONIC ns at the same instant.
    pub start_mono_ns: u64,
    /// What became of the process by the end of the recording.
    pub state: crate::ProcessState,
    /// hood-abi FLAG_* bits (buffer full, wrapped, tag overrun).
    pub flags: u32,
    /// Events per thread buffer.
    pub capacity: u64,
    /// "stop" or "wrap".
    pub full: String,
    /// Threads with their counts.
    pub threads: Vec<ThreadInfo>,
    /// Function address → name (resolved at record time).
    pub symbols: BTreeMap<u64, String>,
    /// Inline tag index → label.
    pub tags: BTreeMap<u64, String>,
    /// Function table (payload version 2): function address per event index (0 = unknown).
    #[serde(default)]
    pub funcs: Vec<u64>,
    /// Collection notes.
    pub notes: Vec<String>,
    /// Probed functions (`--probe`): what a probed call was measured to cost at the start,
    /// taken out of the times the analysis derives; `None` for instrumented programs and
    /// uncompensated probe traces. With [`ProcessTrace::probe_cost_stepped`], the cost of a
    /// function whose first instruction the kernel emulates (a push, a nop, a jump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_cost: Option<ProbeCost>,
    /// What a probed call costs where the kernel single-steps the function's first
    /// instruction (most instructions: `sub`, `mov`, `endbr64`, `ret`), several times the
    /// emulated kind's cost; `None` (traces of earlier hoods): [`ProcessTrace::probe_cost`]
    /// for every function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_cost_stepped: Option<ProbeCost>,
    /// The functions (event addresses, sorted) whose first instruction the kernel
    /// single-steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_stepped: Vec<u64>,
}

impl ProcessTrace {
    /// What a probed call of `func` cost (zero for instrumented programs and uncompensated
    /// probe traces).
    pub fn probe_cost_of(&self, func: u64) -> ProbeCost {
        cost_of(
            self.probe_cost.unwrap_or_default(),
            self.probe_cost.and(self.probe_cost_stepped),
            &self.probe_stepped,
            func,
        )
    }
}

/// What a probed call costs, by how the kernel runs the probed function's first instruction:
/// emulated (a push, a nop, a jump: one trap) or single-stepped out of line (a second trap).
/// Measured by the recorder at its start on two functions of its own, one of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeCosts {
    /// A call of a function whose first instruction the kernel emulates; of every function
    /// when `stepped` is `None`.
    pub emulated: ProbeCost,
    /// A call of a function in `stepped_funcs`.
    pub stepped: Option<ProbeCost>,
    /// The functions whose first instruction the kernel single-steps, sorted.
    pub stepped_funcs: Vec<u64>,
}

impl ProbeCosts {
    /// One cost for every function.
    pub fn uniform(cost: ProbeCost) -> ProbeCosts {
        ProbeCosts {
            emulated: cost,
            stepped: None,
            stepped_funcs: Vec::new(),
        }
    }

    /// `func` (a function probed late) is of the single-stepped kind.
    pub fn mark_stepped(&mut self, func: u64) {
        if let Err(i) = self.stepped_funcs.binary_search(&func) {
            self.stepped_funcs.insert(i, func);
        }
    }

    /// A process's costs as its trace holds them (zero when it holds none).
    pub fn of_process(p: &ProcessTrace) -> ProbeCosts {
        ProbeCosts {
            emulated: p.probe_cost.unwrap_or_default(),
            stepped: p.probe_cost.and(p.probe_cost_stepped),
            stepped_funcs: p.probe_stepped.clone(),
        }
    }

    /// What a call of `func` costs. (A list not sorted, which hood never writes, only
    /// misplaces some functions between the two figures.)
    pub fn of(&self, func: u64) -> ProbeCost {
        cost_of(self.emulated, self.stepped, &self.stepped_funcs, func)
    }
}

/// `stepped` for a function of the sorted list `stepped_funcs`, else `emulated`.
fn cost_of(
    emulated: ProbeCost,
    stepped: Option<ProbeCost>,
    stepped_funcs: &[u64],
    func: u64,
) -> ProbeCost {
    match stepped {
        Some(s) if stepped_funcs.binary_search(&func).is_ok() => s,
        _ => emulated,
    }
}

/// What one call of a probed function costs the program (two kernel traps), measured by the
/// recorder at its start on a function that does nothing, in ns. A probed call's elapsed time
/// holds `self_ns` of it (from its entry event's time to the end of the entry trap, and the
/// return trap up to its event's time), and its caller's time the rest, `child_ns` per call.
/// The times derived from probe events are compensated as hood-rt compensates its hooks: a
/// call's own (net) time less `self_ns` and `child_ns` per call it made, its elapsed time less
/// `self_ns` and `self_ns + child_ns` per call made below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeCost {
    /// ns of a call's cost inside its own entry-to-return span.
    pub self_ns: u64,
    /// ns of a call's cost outside that span (charged to its caller).
    pub child_ns: u64,
}

impl ProbeCost {
    /// The whole cost of one probed call.
    pub fn per_call_ns(&self) -> u64 {
        self.self_ns.saturating_add(self.child_ns)
    }

    /// What to take out of the own time of a call that made `kids` probed calls.
    pub fn own(&self, kids: u64) -> u64 {
        self.self_ns
            .saturating_add(kids.saturating_mul(self.child_ns))
    }

    /// What to take out of the elapsed time of a call with `below` probed calls under it.
    pub fn elapsed(&self, below: u64) -> u64 {
        self.self_ns
            .saturating_add(below.saturating_mul(self.per_call_ns()))
    }
}

/// Per-thread counts of a traced process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// Kernel thread id.
    pub tid: u32,
    /// Exit timestamp (ticks), when the thread exited.
    pub exit_ticks: Option<u64>,
    /// Events appended (kept + overwritten).
    pub written: u64,
    /// Events dropped because the buffer was full (`--full stop`).
    pub dropped: u64,
    /// Events overwritten by newer ones (`--full wrap`).
    pub overwritten: u64,
}

/// Kind of a raw event (hood-abi KIND_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Function entry.
    Entry,
    /// Function exit.
    Exit,
    /// Inline mark.
    Mark,
    /// Tracing switched off (`addr` 0) or on (1).
    Control,
}

/// One raw event as the runtime wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent {
    /// Function address, tag index or control code.
    pub addr: u64,
    /// Ticks << 2 | kind.
    pub ticks_kind: u64,
}

impl RawEvent {
    /// The event's kind.
    pub fn kind(&self) -> Kind {
        match self.ticks_kind & 3 {
            0 => Kind::Entry,
            1 => Kind::Exit,
            2 => Kind::Mark,
            _ => Kind::Control,
        }
    }
    /// The timestamp in ticks.
    pub fn ticks(&self) -> u64 {
        self.ticks_kind >> 2
    }
}

/// One thread's events (chunk EVENTS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadEvents {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC start of the process segment the events belong to (0 in files of
    /// payload version 1): with the pid it names the program image, since an exec keeps the
    /// pid and starts a new segment.
    pub start_mono_ns: u64,
    /// Events, oldest first.
    pub events: Vec<RawEvent>,
}

impl ThreadEvents {
    /// The thread of one program image these events belong to.
    pub fn key(&self) -> ThreadKey {
        ThreadKey {
            pid: self.pid,
            start_mono_ns: self.start_mono_ns,
            tid: self.tid,
        }
    }
}

/// A thread of one program image: a thread keeps its pid and tid across an exec, but the new
/// image has its own segment (start time), function addresses and names, so its calls are
/// walked apart from the old image's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadKey {
    /// Process id.
    pub pid: u32,
    /// CLOCK_MONOTONIC start of the image's segment ([`ProcessTrace::start_mono_ns`]).
    pub start_mono_ns: u64,
    /// Thread id.
    pub tid: u32,
}

/// A context switch of a traced thread (PERF_RECORD_SWITCH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    /// Switched out (else in).
    pub out: bool,
    /// Switched out while runnable (preempted) rather than blocking.
    pub preempt: bool,
    /// CPU whose ring carried it.
    pub cpu: u32,
}

/// A whole trace file.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// META, if present.
    pub meta: Option<TraceMeta>,
    /// Processes.
    pub processes: Vec<ProcessTrace>,
    /// Per-thread events.
    pub events: Vec<ThreadEvents>,
    /// Context switches, in no particular order.
    pub switches: Vec<Switch>,
    /// Switch records the kernel reported lost (PERF_RECORD_LOST).
    pub lost_switches: u64,
    /// Hard-irq and softirq entries/exits in the traced threads' context, in no particular
    /// order.
    pub irqs: Vec<Irq>,
    /// Irq records the kernel reported lost (PERF_RECORD_LOST).
    pub lost_irqs: u64,
    /// Reader warnings (truncation, malformed records skipped).
    pub warnings: Vec<String>,
}

impl ProcessTrace {
    /// CLOCK_MONOTONIC ns of a timestamp of this process.
    pub fn ns(&self, ticks: u64) -> u64 {
        let d = ticks as i128 - self.start_ticks as i128;
        let ns = self.start_mono_ns as i128 + d * 1_000_000_000 / self.ticks_per_sec.max(1) as i128;
        ns.clamp(0, u64::MAX as i128) as u64
    }

    /// Name of a function address (hex when unresolved).
    pub fn name(&self, addr: u64) -> String {
        self.symbols
            .get(&addr)
            .cloned()
            .unwrap_or_else(|| format!("{addr:#x}"))
    }
}
