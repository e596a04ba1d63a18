//! The interpreted, symbolized profile every renderer works from.

use std::collections::BTreeMap;

use serde::Serialize;

use super::meta::{RecordMeta, RecordStats};

/// Index into [`Profile::funcs`].
pub type FuncId = u32;
/// Index into [`Profile::stacks`].
pub type StackId = u32;

/// Where the CPU was when sampled, or for an off-CPU interval, why the thread was not on one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// User code.
    User,
    /// Kernel code on behalf of a task.
    Kernel,
    /// The idle task (pid 0).
    Idle,
    /// Off CPU, blocked: sleeping or in D state until something woke it
    /// ([`Profile::off_cpu`]).
    Blocked,
    /// Off CPU, runnable: preempted, or woken and waiting for a CPU ([`Profile::off_cpu`]).
    Runnable,
}

impl Mode {
    /// Whether this is off-CPU time rather than a CPU sample.
    pub fn off_cpu(self) -> bool {
        matches!(self, Mode::Blocked | Mode::Runnable)
    }
}

/// Where a waker ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum WakeContext {
    /// A thread (its stack is the waker's).
    Thread,
    /// A hardware interrupt (a timer, a device) on whatever the CPU ran.
    HardIrq,
    /// A soft interrupt (network receive, block I/O completion, timers).
    SoftIrq,
    /// A non-maskable interrupt.
    Nmi,
}

/// Who ended a blocked interval ([`Profile::wakers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Waker {
    /// Process id of the waker (for an interrupt: of the task it interrupted).
    pub pid: u32,
    /// Thread id of the waker.
    pub tid: u32,
    /// When it woke the thread (CLOCK_MONOTONIC ns).
    pub time: u64,
    /// Where it ran.
    pub context: WakeContext,
    /// Its stack, leaf first (kernel frames of the wake-up itself trimmed).
    pub stack: StackId,
    /// The same stack by code location.
    #[serde(skip)]
    pub locs: StackId,
}

/// One thread's time in an off-CPU recording: its lifetime in the recording split into time
/// on a CPU, blocked and runnable ([`Profile::thread_times`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ThreadTime {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// From the start of the recording (or the thread's creation) to its end (or the
    /// thread's exit), ns.
    pub lifetime_ns: u64,
    /// On a CPU (the lifetime less the off-CPU time), ns.
    pub on_cpu_ns: u64,
    /// Blocked, ns.
    pub blocked_ns: u64,
    /// Runnable but not running (preempted, woken and waiting for a CPU, or new and waiting
    /// for its first CPU), ns.
    pub runnable_ns: u64,
    /// Off-CPU intervals.
    pub intervals: u64,
    /// Off-CPU time before the thread's first switch in the recording, whose stack is unknown,
    /// ns (included in `blocked_ns`).
    pub before_first_switch_ns: u64,
}

/// A function (or an unresolved location standing in for one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Func {
    /// Symbol name, or `dso+0xOFFSET` / `[unknown]` when unresolved.
    pub name: String,
    /// Short name of the file it lives in (`[kernel.kallsyms]` for the kernel).
    pub dso: String,
    /// Kernel code.
    pub kernel: bool,
    /// Whether a symbol was found.
    pub resolved: bool,
    /// This frame is a function inlined into its caller (the frame below it in a stack):
    /// no call happened, the compiler copied its code there.
    pub inlined: bool,
    /// The line where the function starts, from debug info: of its first instruction, or for
    /// an inlined function the line its definition is declared on;
    /// 0 when unknown.
    pub start_line: u32,
}

impl Func {
    /// The name as text reports print it: `name (inlined)` for an inlined frame.
    pub fn label(&self) -> std::borrow::Cow<'_, str> {
        if self.inlined {
            format!("{} (inlined)", self.name).into()
        } else {
            self.name.as_str().into()
        }
    }
}

/// One function at a [`Location`], with the source line the location is at in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameLine {
    /// The function (an inlined one has [`Func::inlined`] set).
    pub func: FuncId,
    /// Its source file: index into [`Profile::source_files`]; `None` without debug info.
    pub file: Option<u32>,
    /// 1-based line in that file (0: unknown).
    pub line: u32,
}

/// The file behind a [`Func::dso`] name, for outputs that describe mappings (pprof).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DsoFile {
    /// Full path or pseudo-name as the recording named it.
    pub path: String,
    /// Build-id when known (lower-case hex in JSON).
    pub build_id: Option<hood_raw::BuildId>,
}

/// A thread seen in the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Thread {
    /// Thread id.
    pub tid: u32,
    /// Its last name.
    pub comm: String,
}

/// A process seen in the recording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Process {
    /// Process id (0: the idle task).
    pub pid: u32,
    /// Its last name (after exec, the new program's).
    pub comm: String,
    /// Threads, by tid.
    pub threads: Vec<Thread>,
}

/// One sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU.
    pub cpu: u32,
    /// CLOCK_MONOTONIC ns.
    pub time: u64,
    /// Event count this sample stands for.
    pub period: u64,
    /// Where the CPU was.
    pub mode: Mode,
    /// Call stack, leaf first.
    pub stack: StackId,
    /// The same stack by code location: index into [`Profile::loc_stacks`] (0, the empty
    /// stack, when the profile keeps no locations, as in hand-built profiles).
    #[serde(skip)]
    pub locs: StackId,
}

/// Index into [`Profile::locations`].
pub type LocId = u32;

/// A sampled code address and the function it belongs to (outputs that show addresses:
/// pprof).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Its function.
    pub func: FuncId,
    /// The address as sampled (for callers, the return address minus one): in the process's
    /// address space, or the kernel's; 0 for pseudo-frames.
    pub address: u64,
    /// The mapping it lies in (index into [`Profile::code_maps`]); `None` for kernel code,
    /// anonymous memory and pseudo-frames.
    pub map: Option<u32>,
    /// Its functions and lines, innermost inlined function first and `func` last:
    /// `Profile::lines[lines.0..lines.1]` (see [`Profile::lines_of`]).
    pub lines: (u32, u32),
}

/// A file mapped into a process's memory, as far as sampled locations lie in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeMap {
    /// The file's short name, the key of [`Profile::dso_files`].
    pub dso: String,
    /// First address of the mapping.
    pub start: u64,
    /// One past its last address.
    pub limit: u64,
    /// File offset mapped at `start`.
    pub offset: u64,
}

/// A symbolized profile.
#[derive(Debug, Default)]
pub struct Profile {
    /// How it was recorded.
    pub meta: RecordMeta,
    /// What happened while recording (`None`: not finalized).
    pub stats: Option<RecordStats>,
    /// Warnings to show in report headers.
    pub warnings: Vec<String>,
    /// Processes, by pid.
    pub processes: Vec<Process>,
    /// Functions.
    pub funcs: Vec<Func>,
    /// Stacks of functions, leaf first. Stack 0 is the empty stack.
    pub stacks: Vec<Vec<FuncId>>,
    /// Samples in time order.
    pub samples: Vec<Sample>,
    /// Lost samples counted from the records themselves.
    pub lost_in_stream: u64,
    /// Throttle records in the stream.
    pub throttles_in_stream: u64,
    /// The file behind each `Func::dso` short name that appears in `funcs`.
    pub dso_files: BTreeMap<String, DsoFile>,
    /// Sampled code locations (one per unique file offset, kernel or anonymous address).
    pub locations: Vec<Location>,
    /// Stacks of locations, leaf first ([`Sample::locs`]). Stack 0 is the empty stack.
    pub loc_stacks: Vec<Vec<LocId>>,
    /// The mappings [`Location::map`] points into.
    pub code_maps: Vec<CodeMap>,
    /// The functions and lines of every location ([`Location::lines`]).
    pub lines: Vec<FrameLine>,
    /// Source file paths [`FrameLine::file`] points into.
    pub source_files: Vec<String>,
    /// Off-CPU time (`hood record --off-cpu`), in time order: one entry per blocked or
    /// runnable stretch of a thread, with [`Sample::period`] its length in ns, [`Sample::time`]
    /// its start, [`Sample::mode`] [`Mode::Blocked`] or [`Mode::Runnable`], and the thread's
    /// stack when it left the CPU (the scheduler's own frames trimmed).
    pub off_cpu: Vec<Sample>,
    /// For each entry of [`off_cpu`](Self::off_cpu), the index of its waker in
    /// [`wakers`](Self::wakers) (`None`: not woken, or the waker was not seen).
    pub off_cpu_waker: Vec<Option<u32>>,
    /// Who woke blocked threads.
    pub wakers: Vec<Waker>,
    /// The (function, location) stack of the "waker not seen" pseudo-frame.
    pub unknown_waker: (StackId, StackId),
    /// Per-thread time of an off-CPU recording, by (pid, tid).
    pub thread_times: Vec<ThreadTime>,
    /// What the off-CPU derivation noticed (switch-ins never seen, intervals below the
    /// minimum shown without their stack).
    pub off_cpu_stats: OffCpuStats,
}

/// Counts of the off-CPU derivation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OffCpuStats {
    /// Off-CPU intervals.
    pub intervals: u64,
    /// Intervals whose switch-in was not seen, ended at the thread's next sign of running.
    pub unmatched: u64,
    /// Blocked intervals with a waker.
    pub woken: u64,
    /// Blocked intervals without one seen.
    pub waker_unknown: u64,
    /// Intervals shorter than the minimum, shown as one pseudo-frame per thread.
    pub short: u64,
    /// Their total time, ns.
    pub short_ns: u64,
    /// The minimum (ns).
    pub min_ns: u64,
    /// Long intervals left without stacks of their own by the recording's rate bound
    /// (`--off-cpu-rate`), charged to their thread's previous long interval's stack.
    pub inherited: u64,
    /// Their total time, ns.
    pub inherited_ns: u64,
    /// The recording's rate bound: stacks per thread per second (0: none).
    pub stack_rate: u32,
}

impl Profile {
    /// The functions and source lines at `loc`, innermost inlined function first and the
    /// function the code belongs to last (one entry when nothing is inlined there).
    pub fn lines_of(&self, loc: &Location) -> &[FrameLine] {
        self.lines
            .get(loc.lines.0 as usize..loc.lines.1 as usize)
            .unwrap_or(&[])
    }

    /// The file name of a [`FrameLine`], if known.
    pub fn source_file(&self, line: &FrameLine) -> Option<&str> {
        line.file
            .and_then(|f| self.source_files.get(f as usize))
            .map(String::as_str)
    }

    /// The last two components of a [`FrameLine`]'s file name (`src/main.rs`), as text
    /// reports show source lines, so that deep build paths do not eat the name column.
    pub fn short_source_file(&self, line: &FrameLine) -> Option<&str> {
        self.source_file(line).map(|path| {
            let mut cut = path.len();
            for _ in 0..2 {
                match path[..cut].rfind('/') {
                    Some(i) => cut = i,
                    None => return path,
                }
            }
            &path[cut + 1..]
        })
    }

    /// The process with `pid`.
    pub fn process(&self, pid: u32) -> Option<&Process> {
        self.processes
            .binary_search_by_key(&pid, |p| p.pid)
            .ok()
            .map(|i| &self.processes[i])
    }

    /// The display name of a process (`[idle]` for pid 0, `[pid N]` if never named).
    pub fn comm(&self, pid: u32) -> String {
        if pid == 0 {
            return "[idle]".into();
        }
        match self.process(pid) {
            Some(p) if !p.comm.is_empty() => p.comm.clone(),
            _ => format!("[pid {pid}]"),
        }
    }

    /// Lost samples: the recorder's counts when finalized, else those seen in the stream.
    pub fn lost(&self) -> u64 {
        match &self.stats {
            Some(s) => s.lost().max(self.lost_in_stream),
            None => self.lost_in_stream,
        }
    }

    /// Recording duration in ns, from metadata and stats, else from sample times.
    pub fn duration_ns(&self) -> u64 {
        if let Some(s) = &self.stats {
            if s.end_monotonic_ns > self.meta.start_monotonic_ns && self.meta.start_monotonic_ns > 0
            {
                return s.end_monotonic_ns - self.meta.start_monotonic_ns;
            }
        }
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => b.time.saturating_sub(a.time),
            _ => 0,
        }
    }
}
