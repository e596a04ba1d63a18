//! The tracepoint events of an off-CPU session (`hood record --off-cpu`): every context switch
//! and every wake-up of the sampled tasks, sampled with the same layout as the timer samples
//! (call chain, user registers and stack copy, plus the tracepoint's raw record), so the stack a
//! thread had when it left the CPU, and the stack of whoever woke it, are unwound like any
//! other sample.
//!
//! - `sched:sched_switch` fires in the task that leaves the CPU: its sample carries that task's
//!   stack, and the raw record its state (`prev_state`: sleeping, in D state, or preempted) and
//!   the task that comes in (`next_pid`).
//! - `sched:sched_waking` fires in the waker (a thread, or an interrupt on whatever the CPU was
//!   running): its sample carries the waker's stack, and the raw record the wakee (`pid`).
//!
//! Whole-system sessions open both per CPU. Task sessions open both per task (following new
//! threads and children, as the timer event does), ask the switch event for the kernel's
//! switch-in/out records (`context_switch`, which give the time a task comes back), and add one
//! whole-CPU `sched_waking` event per CPU without a user stack, so wake-ups by interrupts and
//! other processes are seen too (kernel stack, pid and name of the waker only).

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::{tracefs, PerfError};

/// The tracepoints an off-CPU session records, as `(subsystem, event)`.
pub const OFF_CPU_TRACEPOINTS: [(&str, &str); 2] =
    [("sched", "sched_switch"), ("sched", "sched_waking")];

/// The tracepoints of an off-CPU session found on this kernel: ids and `format` texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffCpuTracepoints {
    /// Id of `sched:sched_switch` (its records' `common_type`).
    pub switch_id: u64,
    /// Id of `sched:sched_waking`.
    pub waking_id: u64,
    /// The `format` file text of each of [`OFF_CPU_TRACEPOINTS`], in that order (a recording
    /// stores them: field offsets are read from them, never assumed).
    pub formats: Vec<String>,
}

impl OffCpuTracepoints {
    /// Look the tracepoints up under the mounted tracefs.
    pub fn find() -> Result<OffCpuTracepoints, PerfError> {
        let root = tracefs::mount_point()?;
        let mut ids = Vec::new();
        let mut formats = Vec::new();
        for (sys, name) in OFF_CPU_TRACEPOINTS {
            ids.push(tracefs::tracepoint_id_in(&root, sys, name)?);
            formats.push(tracefs::event_format(&root, sys, name)?);
        }
        Ok(OffCpuTracepoints {
            switch_id: ids[0],
            waking_id: ids[1],
            formats,
        })
    }
}

/// The attribute of one tracepoint event, made from the session's sampling attribute `base`:
/// the same sample layout and clock, one sample per event, no side-band records (the timer
/// event of the same task and CPU brings those).
pub(crate) fn tracepoint(base: &perf_event_attr, id: u64) -> perf_event_attr {
    every_event(base, b::PERF_TYPE_TRACEPOINT, id)
}

/// Event `type_`/`config` with `base`'s sample layout and clock, a sample per event, no
/// side-band records, kernel hits kept (it fires in the kernel; the task's user context is
/// still in the sample).
pub(crate) fn every_event(base: &perf_event_attr, type_: u32, config: u64) -> perf_event_attr {
    let mut a = *base;
    a.type_ = type_;
    a.config = config;
    a.set_freq(0);
    a.sample_period = 1;
    a.set_mmap(0);
    a.set_mmap2(0);
    a.set_comm(0);
    a.set_comm_exec(0);
    a.set_task(0);
    a.set_build_id(0);
    a.set_exclude_kernel(0);
    a
}

/// The switch event of a task session: also emits the kernel's switch records, whose
/// switch-in times end each off-CPU interval.
pub(crate) fn task_switch(base: &perf_event_attr, id: u64) -> perf_event_attr {
    let mut a = tracepoint(base, id);
    a.set_context_switch(1);
    a
}

/// The whole-CPU wake-up event beside a task session: the waker's kernel stack, no user
/// stack (a wake-up by another process or an interrupt; its user context is not the
/// recording's to copy), enabled at once (it cannot follow the child's exec).
pub(crate) fn cpu_wakeups(base: &perf_event_attr, id: u64) -> perf_event_attr {
    let mut a = tracepoint(base, id);
    a.set_inherit(0);
    a.set_enable_on_exec(0);
    a.set_disabled(0);
    a.set_exclude_callchain_user(1);
    if a.sample_type & u64::from(b::PERF_SAMPLE_STACK_USER) != 0 {
        // Zero bytes: the record says "0 copied", which readers take as no user stack.
        a.sample_stack_user = 0;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::{build, AttrOpts};
    use crate::{EventKind, SamplingConfig, UserStack};

    fn base() -> perf_event_attr {
        let cfg = SamplingConfig {
            user_stack: UserStack::AUTO,
            off_cpu: true,
            ..Default::default()
        };
        build(
            &cfg,
            EventKind::CpuClock,
            AttrOpts {
                sideband: true,
                build_id: true,
                inherit: true,
                enable_on_exec: true,
            },
        )
    }

    #[test]
    fn tracepoints_share_the_sample_layout_and_sample_every_event() {
        let base = base();
        assert_ne!(base.sample_type & u64::from(b::PERF_SAMPLE_RAW), 0);
        let t = task_switch(&base, 372);
        assert_eq!((t.type_, t.config), (b::PERF_TYPE_TRACEPOINT, 372));
        assert_eq!(t.sample_type, base.sample_type);
        assert_eq!((t.freq(), t.sample_period), (0, 1));
        assert_eq!((t.mmap(), t.comm(), t.task()), (0, 0, 0));
        assert_eq!((t.context_switch(), t.inherit()), (1, 1));
        assert_eq!(t.clockid, base.clockid);
        let w = cpu_wakeups(&base, 375);
        assert_eq!(w.sample_type, base.sample_type);
        assert_eq!((w.inherit(), w.disabled(), w.enable_on_exec()), (0, 0, 0));
        assert_eq!((w.exclude_callchain_user(), w.sample_stack_user), (1, 0));
    }
}
