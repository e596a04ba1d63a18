//! Plain configuration types: which event, how often, and whom to sample.

use std::fmt;
use std::str::FromStr;

use crate::PerfError;

/// The sampling event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// Software timer per CPU (`cpu-clock`); works everywhere, including VMs without a PMU.
    CpuClock,
    /// Software timer per task (`task-clock`).
    TaskClock,
    /// Hardware CPU cycles (`cycles`); needs a PMU.
    Cycles,
    /// Hardware retired instructions (`instructions`); needs a PMU.
    Instructions,
}

impl EventKind {
    /// The perf-style name, e.g. `cpu-clock`.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::CpuClock => "cpu-clock",
            EventKind::TaskClock => "task-clock",
            EventKind::Cycles => "cycles",
            EventKind::Instructions => "instructions",
        }
    }

    /// Whether this event needs a hardware PMU.
    pub fn is_hardware(self) -> bool {
        matches!(self, EventKind::Cycles | EventKind::Instructions)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EventKind {
    type Err = PerfError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu-clock" => Ok(EventKind::CpuClock),
            "task-clock" => Ok(EventKind::TaskClock),
            "cycles" | "cpu-cycles" => Ok(EventKind::Cycles),
            "instructions" => Ok(EventKind::Instructions),
            other => Err(PerfError::InvalidConfig(format!(
                "unknown event {other:?}; choose one of cpu-clock, task-clock, cycles, instructions"
            ))),
        }
    }
}

/// How user-space call stacks are obtained (kernel stacks always come from the kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserStack {
    /// The kernel follows frame pointers (`--call-graph fp`): cheapest, but stacks of code
    /// built without frame pointers stop at their first frame.
    FramePointer,
    /// Each sample carries the user registers and a copy of the top `bytes` of the user stack
    /// (`--call-graph dwarf,BYTES`), for unwinding with call frame information. With
    /// `fp_chain` the kernel's frame-pointer chain comes too, to continue stacks deeper than
    /// the copy where the code keeps frame pointers (`auto`).
    Copy {
        /// Bytes of stack copied per sample: a multiple of 8, at most [`MAX_STACK_COPY`].
        bytes: u32,
        /// Also record the kernel's frame-pointer chain.
        fp_chain: bool,
    },
}

/// The largest stack copy a sample can carry (a perf record's size is 16 bits).
pub const MAX_STACK_COPY: u32 = 65_528;
/// The default stack copy (what `perf record --call-graph dwarf` copies).
pub const DEFAULT_STACK_COPY: u32 = 8_192;

impl UserStack {
    /// The default: a stack copy plus the frame-pointer chain.
    pub const AUTO: UserStack = UserStack::Copy {
        bytes: DEFAULT_STACK_COPY,
        fp_chain: true,
    };

    /// Whether samples carry registers and a stack copy.
    pub fn copies_stack(self) -> bool {
        matches!(self, UserStack::Copy { .. })
    }
}

/// How to sample. Build with [`SamplingConfig::default`] and adjust fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingConfig {
    /// The event to sample on.
    pub event: EventKind,
    /// Target sampling frequency in Hz (`attr.freq = 1`, `sample_freq`).
    pub freq_hz: u64,
    /// Record call chains (kernel chains, and user stacks as [`user_stack`](Self::user_stack)
    /// says).
    pub callchain: bool,
    /// How user stacks are obtained when `callchain` is on.
    pub user_stack: UserStack,
    /// Sample while in the kernel (`exclude_kernel = !include_kernel`).
    pub include_kernel: bool,
    /// Sample while in user space.
    pub include_user: bool,
    /// Data pages per CPU ring; must be a power of two.
    pub ring_pages: usize,
    /// Bytes in a ring before poll() wakes the reader; 0 means a quarter of the
    /// ring, and values above half the ring are capped at half.
    pub wakeup_watermark: u32,
    /// Also record every context switch and wake-up of the sampled tasks (off-CPU time):
    /// see [`crate::OFF_CPU_TRACEPOINTS`].
    pub off_cpu: bool,
    /// With `off_cpu`: above 0, and with stack copies, the kernel copies user stacks only for
    /// waits at least this long (deferred stacks, loaded as BPF programs; see
    /// [`crate::DEFERRED_RETURN`]). 0 (this type's default; `hood record` sets it unless
    /// `HOOD_OFF_CPU_BPF=0`): every switch and wake-up copies its stack, which costs a
    /// context-switch storm about three times as much.
    pub off_cpu_min_ns: u64,
    /// With deferred stacks: the least time between two takings of one thread's off-CPU
    /// stacks (a rate bound, as `freq_hz` bounds CPU samples); a long wait within it gets
    /// none, and the report charges it to the thread's previous stacks. 0: no bound.
    pub off_cpu_stack_gap_ns: u64,
    /// With deferred stacks: keep the programs' per-thread state in LRU hashes from the
    /// start, as a kernel that refuses task-local storage gets them (`hood record` sets it
    /// for `HOOD_OFF_CPU_BPF=hash`, so that path is tested on kernels that take task storage).
    pub off_cpu_hash_tables: bool,
    /// With deferred stacks, in a task session: the program on `sched_waking` writes a
    /// wake-up record (the tracepoint's layout, the waker's kernel call chain) for each
    /// wake-up of a traced thread, instead of whole-CPU `sched_waking` events that sample
    /// every wake-up of the machine. Their `common_flags` are 0: the reader sets the
    /// interrupt bits from the waker's kernel stack (`hood record` sets this when it knows
    /// the kernel's interrupt entry code from kallsyms). See [`crate::Session::wake_output_ids`].
    pub off_cpu_bpf_wakeups: bool,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            event: EventKind::CpuClock,
            freq_hz: 999,
            callchain: true,
            user_stack: UserStack::FramePointer,
            include_kernel: true,
            include_user: true,
            ring_pages: 256,
            wakeup_watermark: 0,
            off_cpu: false,
            off_cpu_min_ns: 0,
            off_cpu_stack_gap_ns: 0,
            off_cpu_hash_tables: false,
            off_cpu_bpf_wakeups: false,
        }
    }
}

impl SamplingConfig {
    /// Checks the fields for values the kernel would reject or that make no sense.
    pub fn validate(&self) -> Result<(), PerfError> {
        if self.freq_hz == 0 {
            return Err(PerfError::InvalidConfig(
                "sampling frequency must be at least 1 Hz".into(),
            ));
        }
        if self.ring_pages == 0 || !self.ring_pages.is_power_of_two() {
            return Err(PerfError::InvalidConfig(format!(
                "ring_pages must be a power of two, got {}",
                self.ring_pages
            )));
        }
        if let UserStack::Copy { bytes, .. } = self.user_stack {
            if bytes == 0 || bytes % 8 != 0 || bytes > MAX_STACK_COPY {
                return Err(PerfError::InvalidConfig(format!(
                    "a stack copy of {bytes} bytes: it must be a multiple of 8 between 8 and {MAX_STACK_COPY}"
                )));
            }
        }
        if !self.include_kernel && !self.include_user {
            return Err(PerfError::InvalidConfig(
                "neither kernel nor user samples requested".into(),
            ));
        }
        Ok(())
    }
}

/// Whom to sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Every task on every online CPU (`pid = -1`), the idle task (pid 0) included.
    System,
    /// Running processes: every current thread of each pid (from /proc/PID/task);
    /// threads and children created later are followed (`inherit = 1`).
    Tasks(Vec<i32>),
    /// A forked child stopped before exec: sampling starts at its exec
    /// (`enable_on_exec = 1`) and follows its descendants (`inherit = 1`).
    Child(i32),
}
