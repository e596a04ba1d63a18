//! Owns the system monitor's model (`hood top`, `ps`, `uptime`, `info`, serve's `/metrics`):
//! raw cumulative snapshots of the system as read from /proc ([`raw`]), the derived `system.*`
//! view with rates over an interval ([`view`], [`mod@derive`]), the `hood info` tree
//! ([`tree`]), task sorting and filtering ([`sort`]), the modes of `hood top` and what each
//! must read ([`mode`]), the sampler's [`Source`] trait and the store reader's [`Recorded`]
//! trait, and times as users write them ([`when`]). May depend on serde only: no hood
//! crate, and never on the kernel.
//!
//! Everything here is pure data: no /proc access. `hood-procfs` fills [`raw::Snapshot`];
//! [`derive()`](derive::derive) turns two snapshots into a [`view::SystemView`], which renderers and the
//! TUI consume and which is serialized as the documented JSON (docs/monitor.md).
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod derive;
pub mod mode;
pub mod raw;
pub mod sort;
pub mod source;
pub mod tree;
pub mod view;
pub mod when;

pub use derive::{derive, whole_counts};
pub use mode::{scan_needs, Mode};
pub use raw::{
    CgroupRaw, CpuRaw, CpuTicks, CtxSwitches, DiskRaw, ExitRaw, ExitsRaw, HandlerTime, IoCounters,
    IrqLine, IrqTimeRaw, LoadAvg, MemInfo, NetRaw, PressureRaw, PsiLine, PsiRaw, ScanOptions,
    Snapshot, TaskRaw, WholeCounts,
};
pub use sort::{arrange, filter_tasks, sort_tasks, SortKey};
pub use source::{Recorded, Seek, Source};
pub use view::{SystemView, TaskView, SCHEMA_VERSION};
