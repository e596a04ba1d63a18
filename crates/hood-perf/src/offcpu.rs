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
//! switch-in/out records (`context_switch`, which give the time a task comes back), and see
//! the wake-ups of their threads by interrupts and other processes too (kernel stack, pid and
//! name of the waker only): with deferred stacks and
//! [`crate::SamplingConfig::off_cpu_bpf_wakeups`], hood's BPF program writes a record for each
//! wake-up of a traced thread ([`WakingLayout`], [`wake_output`]); otherwise one whole-CPU
//! `sched_waking` event per CPU without a user stack samples every wake-up of the machine.

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use hood_raw::tracefs::format::EventFormat;

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

/// Where the fields of a `sched_waking` record lie, from its `format` text: hood's BPF
/// program writes records of that layout for the wake-ups of a task session's threads
/// ([`crate::SamplingConfig::off_cpu_bpf_wakeups`]), so a recording holds the same records
/// either way. `(offset, size)` in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WakingLayout {
    pub id: u16,
    pub common_type: (u16, u16),
    pub common_flags: (u16, u16),
    pub common_pid: (u16, u16),
    pub comm: (u16, u16),
    pub pid: (u16, u16),
    pub prio: Option<(u16, u16)>,
    pub target_cpu: Option<(u16, u16)>,
    /// Where the waker's `comm` follows the fields (hood-raw's `waker_comm_at`, which reads
    /// it back): a task session's waker may be a process the recording does not otherwise
    /// know, and the tracepoint's own `comm` is the wakee's.
    pub waker_comm_at: u16,
}

/// The largest record hood's program writes: the tracepoint's fields (the kernel's are 36
/// bytes), then the waker's `comm`.
pub(crate) const WAKING_MAX: u16 = 64;

impl WakingLayout {
    /// The layout of `sched:sched_waking` (id `id`) from its `format` text (read by
    /// hood-raw's parser); `None` unless every field hood writes is there with the size it
    /// expects, aligned to it, and the record fits [`WAKING_MAX`].
    pub fn parse(id: u64, format: &str) -> Option<WakingLayout> {
        let f = EventFormat::parse(format);
        let field = |name: &str, size: u16| -> Option<(u16, u16)> {
            let x = f.field(name).filter(|x| x.size == usize::from(size))?;
            let off = u16::try_from(x.offset).ok()?;
            // Stores of each width must be aligned to it.
            (off % size.min(8) == 0).then_some((off, size))
        };
        let waker_comm_at = u16::try_from(hood_raw::records::waker_comm_at(&f)?).ok()?;
        let layout = WakingLayout {
            id: u16::try_from(id).ok()?,
            common_type: field("common_type", 2).filter(|&(o, _)| o == 0)?,
            common_flags: field("common_flags", 1)?,
            common_pid: field("common_pid", 4)?,
            comm: field("comm", 16)?,
            pid: field("pid", 4)?,
            prio: field("prio", 4),
            target_cpu: field("target_cpu", 4),
            waker_comm_at,
        };
        (layout.record_size() <= WAKING_MAX).then_some(layout)
    }

    /// Bytes of the record hood's program writes.
    pub fn record_size(&self) -> u16 {
        self.waker_comm_at + 16
    }
}

/// The attribute of a CPU's wake-up output of a task session whose wake-ups hood's BPF
/// program writes: a BPF output event laid out as [`cpu_wakeups`] (the waker's kernel call
/// chain, no user stack), one sample per record the program emits.
pub(crate) fn wake_output(base: &perf_event_attr) -> perf_event_attr {
    let mut a = cpu_wakeups(base, 0);
    a.type_ = b::PERF_TYPE_SOFTWARE;
    a.config = u64::from(b::PERF_COUNT_SW_BPF_OUTPUT);
    a
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
        let o = wake_output(&base);
        assert_eq!((o.type_, o.config), (b::PERF_TYPE_SOFTWARE, 10));
        assert_eq!(o.sample_type, w.sample_type);
        assert_eq!(
            (o.inherit(), o.disabled(), o.exclude_callchain_user()),
            (0, 0, 1)
        );
    }

    const WAKING: &str = "name: sched_waking\nID: 335\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\
        \tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\n\
        print fmt: \"comm=%s pid=%d\", REC->comm, REC->pid\n";

    #[test]
    fn the_waking_layout_comes_from_the_format_text() {
        let l = WakingLayout::parse(335, WAKING).expect("the kernel's layout");
        assert_eq!(l.id, 335);
        assert_eq!(
            (l.common_type, l.common_flags, l.common_pid),
            ((0, 2), (2, 1), (4, 4))
        );
        assert_eq!((l.comm, l.pid), ((8, 16), (24, 4)));
        assert_eq!((l.prio, l.target_cpu), (Some((28, 4)), Some((32, 4))));
        assert_eq!((l.waker_comm_at, l.record_size()), (40, 56));
        // A field hood writes that is missing or of another size: no layout (the session
        // records wake-ups with the tracepoint instead).
        assert_eq!(
            WakingLayout::parse(335, &WAKING.replace("pid_t pid;", "pid_t wakee;")),
            None
        );
        assert_eq!(
            WakingLayout::parse(
                335,
                &WAKING.replace(
                    "comm[16];\toffset:8;\tsize:16",
                    "comm[32];\toffset:8;\tsize:32"
                )
            ),
            None
        );
        assert_eq!(
            WakingLayout::parse(335, &WAKING.replace("offset:24", "offset:90")),
            None
        );
        // Room for the waker's name after the fields: a record up to 48 bytes.
        assert!(WakingLayout::parse(335, &WAKING.replace("offset:32", "offset:44")).is_some());
        assert_eq!(
            WakingLayout::parse(335, &WAKING.replace("offset:32", "offset:48")),
            None
        );
        assert_eq!(
            WakingLayout::parse(335, &WAKING.replace("offset:24", "offset:26")),
            None
        );
        assert_eq!(WakingLayout::parse(1 << 20, WAKING), None);
        // Optional fields may be missing.
        let l = WakingLayout::parse(335, &WAKING.replace("int target_cpu", "int other")).unwrap();
        assert_eq!((l.target_cpu, l.waker_comm_at), (None, 40));
        // The real kernel's format parses (when tracefs is there).
        if let Ok(tp) = OffCpuTracepoints::find() {
            assert!(
                WakingLayout::parse(tp.waking_id, &tp.formats[1]).is_some(),
                "{}",
                tp.formats[1]
            );
        }
    }
}
