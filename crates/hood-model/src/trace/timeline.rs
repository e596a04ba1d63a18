//! Lines of the code-path trace, produced by the analysis per thread.

use serde::Serialize;

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
