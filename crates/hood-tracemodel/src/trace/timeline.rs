//! Lines of the code-path trace, produced by the analysis per thread.

use serde::Serialize;

fn is_false(b: &bool) -> bool {
    !*b
}

/// One line of the code-path trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PathItem {
    /// A call: `-> name (net, total)`; `total` is `None` for a leaf (no callees).
    Call {
        /// Nesting depth (0 = outermost recorded call).
        depth: usize,
        /// Function name.
        name: String,
        /// Net ns (elapsed minus callees minus own off-CPU time).
        net_ns: u64,
        /// Elapsed ns, when the call had callees.
        total_ns: Option<u64>,
        /// The call had not returned when the trace ended.
        unfinished: bool,
        /// The call was left by longjmp or an exception (no exit event): closed, and timed,
        /// up to the exit of a caller.
        repaired: bool,
        /// Entered before the `--from` window began and still running then: shown, at its
        /// entry time, ahead of the window's lines as the calls they are inside.
        #[serde(skip_serializing_if = "is_false")]
        before_window: bool,
    },
    /// A return shown after a context switch (`<- name`).
    Return {
        /// Depth of the returning call.
        depth: usize,
        /// Function name.
        name: String,
    },
    /// An inline mark (`== label`).
    Mark {
        /// Depth.
        depth: usize,
        /// Label.
        label: String,
    },
    /// The thread left the CPU.
    SwitchOut {
        /// Preempted while runnable (else it blocked).
        preempt: bool,
    },
    /// The thread got the CPU back after `off_ns`.
    SwitchIn {
        /// Time off-CPU.
        off_ns: u64,
        /// Of which blocked (sleeping until its wake-up), when wake-ups were recorded: 0 for
        /// a thread preempted; `None` when it blocked but no wake-up of it was recorded.
        #[serde(skip_serializing_if = "Option::is_none")]
        blocked_ns: Option<u64>,
        /// Of which runnable, waiting for a CPU (from its wake-up, or the whole interval for
        /// a thread preempted), when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        runnable_ns: Option<u64>,
        /// Who woke it, when it blocked and the wake-up was recorded.
        #[serde(skip_serializing_if = "Option::is_none")]
        waker: Option<Waker>,
    },
    /// A hard irq or softirq interrupted the thread (`---- irq 11 virtio0 in ----`).
    IrqIn {
        /// Depth of the interrupted call stack (one more for a hard irq inside a softirq).
        depth: usize,
        /// `irq N NAME` or `softirq NAME`.
        label: String,
    },
    /// It returned to the thread after `dur_ns` (`---- irq out (D us) ----`).
    IrqOut {
        /// Same depth as the entry.
        depth: usize,
        /// Same label as the entry.
        label: String,
        /// Time in the handler.
        dur_ns: u64,
    },
    /// `hood_trace_off()` / `hood_trace_on()`.
    Control {
        /// True for on.
        on: bool,
    },
    /// An exit with no matching entry (its entry was dropped, overwritten or before a fork).
    UnmatchedExit {
        /// Function name.
        name: String,
    },
}

/// A timestamped line of a thread's code-path trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathLine {
    /// ns since the start of the trace.
    pub t_ns: u64,
    /// What happened.
    #[serde(flatten)]
    pub item: PathItem,
}

/// What ended a traced thread's wait (`sched:sched_waking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WakerKind {
    /// A thread, in its own code (a write to a pipe, a futex wake, a signal...).
    Thread,
    /// A hard interrupt handler (a timer, a device), on the time of whatever the CPU ran.
    Hardirq,
    /// A softirq (network receive, timers, block completion), on the time of whatever ran.
    Softirq,
    /// A non-maskable interrupt.
    Nmi,
    /// An interrupt on an idle CPU, or the idle task itself.
    Idle,
}

/// Who woke a traced thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waker {
    /// What did it.
    pub kind: WakerKind,
    /// Process id of the waking thread (for an interrupt: of the task it interrupted; 0 on an
    /// idle CPU).
    pub pid: u32,
    /// Thread id of the same.
    pub tid: u32,
    /// Its name, when the recorder could read it (`/proc/PID/task/TID/comm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    /// CPU of the wake-up (left out of JSON when the kernel took no sample of it).
    #[serde(skip_serializing_if = "is_unknown_cpu")]
    pub cpu: u32,
    /// The traced function the waking thread was in (the call on top of its stack), when the
    /// waker is a traced thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// When the wake-up came, ns since the trace start.
    pub t_ns: u64,
}

fn is_unknown_cpu(cpu: &u32) -> bool {
    *cpu == UNKNOWN_CPU
}

/// [`Waker::cpu`] of a wake-up the kernel took no sample of (an interrupt on an idle CPU,
/// known only by the absence of any other).
pub const UNKNOWN_CPU: u32 = u32::MAX;

impl Waker {
    /// In words: `B pid 7 tid 9 in writer_fn`, `a hardware interrupt (CPU 1, in cc1 pid 40)`,
    /// `an interrupt on an idle CPU (CPU 0)`.
    pub fn describe(&self) -> String {
        let who = |w: &Waker| {
            let comm = w.comm.as_deref().unwrap_or("?");
            if w.pid == w.tid {
                format!("{comm} pid {}", w.pid)
            } else {
                format!("{comm} pid {} tid {}", w.pid, w.tid)
            }
        };
        match self.kind {
            WakerKind::Thread => match &self.function {
                Some(f) => format!("{} in {f}", who(self)),
                None => who(self),
            },
            WakerKind::Hardirq => format!(
                "a hardware interrupt (CPU {}, during {})",
                self.cpu,
                who(self)
            ),
            WakerKind::Softirq => {
                format!("a soft interrupt (CPU {}, during {})", self.cpu, who(self))
            }
            WakerKind::Nmi => format!(
                "a non-maskable interrupt (CPU {}, during {})",
                self.cpu,
                who(self)
            ),
            WakerKind::Idle if self.cpu == UNKNOWN_CPU => {
                "an interrupt on an idle CPU (not sampled by the kernel)".to_string()
            }
            WakerKind::Idle => format!("an interrupt on an idle CPU (CPU {})", self.cpu),
        }
    }
}
