//! Owns every perf_event_open and bpf system call (the off-CPU programs are assembled here) and
//! the tracefs instances. May depend on libc and perf-event-open-sys; no hood crate.
//!
//! The kernel interface of hood's statistical profiler: `perf_event_open`
//! sampling sessions over per-CPU ring buffers, handing out the raw ring bytes
//! (collect raw → store raw; a pure decoder elsewhere parses them), plus small
//! tracefs helpers.
//!
//! # What the rings contain
//!
//! Every event of a session shares one attribute ([`Session::attr_bytes`]), except the
//! off-CPU tracepoints with deferred stacks, which drop the stack copy ([`Session::layouts`]):
//! `sample_type` = IDENTIFIER | IP | TID | TIME | CPU | PERIOD (+ CALLCHAIN when
//! asked), `sample_id_all = 1`, timestamps from CLOCK_MONOTONIC, frequency mode.
//! Side-band records (MMAP, MMAP2 with build ids when the kernel has them, COMM
//! with the exec flag, FORK, EXIT), LOST and THROTTLE records arrive in the same
//! per-CPU streams. [`Session::drain`] hands each CPU's stream over as raw bytes;
//! concatenated per CPU they are a sequence of whole records (`u32 type, u16 misc,
//! u16 size` headers), one slice boundary possibly falling inside a record where
//! the ring wrapped.
//!
//! All `unsafe` of the perf interface lives in this crate, each block behind a
//! safe wrapper and preceded by a `// SAFETY:` comment.
//!
//! ```no_run
//! use hood_perf::{Readiness, SamplingConfig, Session, Target};
//! # fn main() -> Result<(), hood_perf::PerfError> {
//! let mut session = Session::open(&SamplingConfig::default(), &Target::System)?;
//! session.enable()?;
//! loop {
//!     let r = session.wait(std::time::Duration::from_millis(100))?;
//!     session.drain(&mut |cpu, bytes| {
//!         println!("{} bytes from CPU {cpu}", bytes.len());
//!         Ok(())
//!     })?;
//!     if r == Readiness::Hangup { break; }
//! #   break;
//! }
//! # Ok(()) }
//! ```
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod attr;
mod bpf;
mod btf;
mod config;
mod cpus;
mod error;
mod grow;
mod irq;
pub mod limits;
mod offcpu;
mod offcpu_bpf;
mod open;
mod ring;
mod session;
mod switches;
mod sys;
pub mod tracefs;
mod uprobe;
pub mod uprobe_cost;
mod wakeups;

pub use attr::{BASE_SAMPLE_TYPE, USER_REGS_MASK};
pub use config::{
    EventKind, SamplingConfig, Target, UserStack, DEFAULT_STACK_COPY, MAX_STACK_COPY,
};
pub use cpus::{online_cpus, parse_cpu_list, threads_of};
pub use error::{kallsyms_hidden_reason, paranoid_level, PerfError};
pub use grow::Grown;
pub use irq::{IrqRecorder, IrqTracepoint, IRQ_SAMPLE_TYPE, IRQ_TRACEPOINTS};
pub use offcpu::{OffCpuTracepoints, OFF_CPU_TRACEPOINTS};
pub use offcpu_bpf::{DEFERRED_AT_SWITCH, DEFERRED_KSTACK, DEFERRED_RETURN, DEFERRED_WAKER};
pub use session::{Readiness, RingBytes, Session};
pub use switches::{SwitchRecorder, SWITCH_SAMPLE_TYPE};
pub use uprobe::{
    remove_stale_probes, UprobeId, UprobePoint, UprobeRecorder, UprobeTarget, GROUP_PREFIX,
    UPROBE_SAMPLE_TYPE,
};
pub use wakeups::{WakeupRecorder, WAKE_SAMPLE_TYPE};

// The recorder may move a session to its own thread.
const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Session>();
};
