//! Building the `perf_event_attr` hood samples with.

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::{EventKind, SamplingConfig, UserStack};

/// The sample fields every hood sample carries (CALLCHAIN is added on request).
pub const BASE_SAMPLE_TYPE: u64 = (b::PERF_SAMPLE_IDENTIFIER
    | b::PERF_SAMPLE_IP
    | b::PERF_SAMPLE_TID
    | b::PERF_SAMPLE_TIME
    | b::PERF_SAMPLE_CPU
    | b::PERF_SAMPLE_PERIOD) as u64;

/// The user registers a stack-copy sample carries, in the kernel's x86-64 numbering: BP (6),
/// SP (7), IP (8) — what unwinding starts from. They appear in the record in this order.
pub const USER_REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);

/// The user instruction pointer alone (`PERF_REG_X86_IP`), for events that need no unwinding
/// but whose samples should still say whether the task has a user context.
pub const USER_IP_MASK: u64 = 1 << 8;

/// Per-open choices that are not part of the user's configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttrOpts {
    /// Emit side-band records (MMAP/MMAP2, COMM, FORK/EXIT).
    pub sideband: bool,
    /// Ask for build ids in MMAP2 records.
    pub build_id: bool,
    /// Follow new threads and children.
    pub inherit: bool,
    /// Start counting at exec.
    pub enable_on_exec: bool,
}

/// Builds the attribute for `event` under `cfg`; `disabled = 1`, frequency mode,
/// CLOCK_MONOTONIC timestamps, watermark wakeups.
pub(crate) fn build(cfg: &SamplingConfig, event: EventKind, opts: AttrOpts) -> perf_event_attr {
    let (ty, config) = match event {
        EventKind::CpuClock => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_CPU_CLOCK as u64),
        EventKind::TaskClock => (b::PERF_TYPE_SOFTWARE, b::PERF_COUNT_SW_TASK_CLOCK as u64),
        EventKind::Cycles => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_CPU_CYCLES as u64),
        EventKind::Instructions => (b::PERF_TYPE_HARDWARE, b::PERF_COUNT_HW_INSTRUCTIONS as u64),
    };
    let mut attr = perf_event_attr {
        type_: ty,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config,
        ..Default::default()
    };
    attr.sample_freq = cfg.freq_hz;
    attr.set_freq(1);
    let mut st = BASE_SAMPLE_TYPE;
    if cfg.callchain {
        st |= b::PERF_SAMPLE_CALLCHAIN as u64;
        if let UserStack::Copy { bytes, fp_chain } = cfg.user_stack {
            // The register numbering above is x86-64's.
            if cfg.include_user && cfg!(target_arch = "x86_64") {
                st |= (b::PERF_SAMPLE_REGS_USER | b::PERF_SAMPLE_STACK_USER) as u64;
                attr.sample_regs_user = USER_REGS_MASK;
                attr.sample_stack_user = bytes;
                attr.set_exclude_callchain_user(u64::from(!fp_chain));
            }
        }
    }
    if cfg.off_cpu {
        // Every event of an off-CPU session shares this sample layout (but with deferred
        // stacks the tracepoints drop the stack copy: `Session::layouts`): the tracepoints'
        // raw records say which switch or wake-up a sample is (a timer sample's raw part is
        // the kernel's empty placeholder, 8 bytes).
        st |= b::PERF_SAMPLE_RAW as u64;
    }
    attr.sample_type = st;
    attr.set_disabled(1);
    attr.set_exclude_kernel(u64::from(!cfg.include_kernel));
    attr.set_exclude_hv(u64::from(!cfg.include_kernel));
    attr.set_exclude_user(u64::from(!cfg.include_user));
    attr.set_sample_id_all(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    attr.set_watermark(1);
    let ring_bytes = cfg.ring_pages.saturating_mul(crate::sys::page_size());
    // A watermark at or past the ring size would never wake us before data is lost.
    let quarter = u32::try_from(ring_bytes / 4).unwrap_or(u32::MAX);
    let half = u32::try_from(ring_bytes / 2).unwrap_or(u32::MAX);
    attr.wakeup_watermark = if cfg.wakeup_watermark == 0 {
        quarter
    } else {
        cfg.wakeup_watermark.min(half)
    };
    if opts.sideband {
        attr.set_mmap(1);
        attr.set_mmap2(1);
        attr.set_comm(1);
        attr.set_comm_exec(1);
        attr.set_task(1);
        attr.set_build_id(u64::from(opts.build_id));
    }
    attr.set_inherit(u64::from(opts.inherit));
    attr.set_enable_on_exec(u64::from(opts.enable_on_exec));
    attr
}

/// The attribute's bytes as the kernel sees them (`size` bytes, native endian).
pub(crate) fn to_bytes(attr: &perf_event_attr) -> Vec<u8> {
    const _: () = assert!(std::mem::size_of::<perf_event_attr>() == 144);
    let len = (attr.size as usize).min(std::mem::size_of::<perf_event_attr>());
    // SAFETY: perf_event_attr is a #[repr(C)] kernel ABI struct without padding
    // (its fields tile 144 bytes exactly, asserted above); every value here was
    // created zero-filled by `Default` and then written field by field, so all
    // `len` <= size_of bytes are initialized.
    let bytes =
        unsafe { std::slice::from_raw_parts((attr as *const perf_event_attr).cast::<u8>(), len) };
    bytes.to_vec()
}

/// A tracepoint event of a traced task (`hood trace`'s irq and uprobe events): every hit a
/// sample of `sample_type`, created disabled and following new threads and children,
/// enabled at the child's exec with `enable_on_exec`, on CLOCK_MONOTONIC, waking the reader
/// every 64 KiB. Kernel hits are kept: a tracepoint fires in the kernel.
pub(crate) fn task_tracepoint(id: u64, sample_type: u64, enable_on_exec: bool) -> perf_event_attr {
    let mut a = perf_event_attr {
        type_: b::PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<perf_event_attr>() as u32,
        config: id,
        sample_type,
        ..Default::default()
    };
    a.__bindgen_anon_1.sample_period = 1;
    a.set_disabled(1);
    a.set_enable_on_exec(u64::from(enable_on_exec));
    a.set_inherit(1);
    on_trace_clock(&mut a, 1 << 16);
    a
}

/// What every event of a trace shares: records carry their sample id (`sample_id_all`), the
/// hypervisor is left out, times are CLOCK_MONOTONIC (as the trace's other records), and the
/// reader is woken when `watermark` bytes are waiting.
pub(crate) fn on_trace_clock(a: &mut perf_event_attr, watermark: u32) {
    a.set_sample_id_all(1);
    a.set_exclude_hv(1);
    a.set_use_clockid(1);
    a.clockid = libc::CLOCK_MONOTONIC;
    a.set_watermark(1);
    a.wakeup_watermark = watermark;
}
