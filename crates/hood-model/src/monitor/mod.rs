//! System monitor model (issue 3): raw cumulative snapshots of the system as read from /proc
//! ([`raw`]), the derived `system.*` view with rates over an interval ([`view`], [`mod@derive`]),
//! the `hood info` tree ([`tree`]) and task sorting and filtering ([`sort`]).
//!
//! Everything here is pure data: no /proc access. `hood-procfs` fills [`raw::Snapshot`];
//! [`derive()`](derive::derive) turns two snapshots into a [`view::SystemView`], which renderers and the
//! TUI consume and which is serialized as the documented JSON (docs/monitor.md).

pub mod derive;
pub mod raw;
pub mod sort;
pub mod tree;
pub mod view;

pub use derive::derive;
pub use raw::{
    CpuRaw, CpuTicks, CtxSwitches, HandlerTime, IoCounters, IrqLine, IrqTimeRaw, LoadAvg, MemInfo,
    ScanOptions, Snapshot, TaskRaw,
};
pub use sort::{filter_tasks, sort_tasks, SortKey};
pub use view::{SystemView, TaskView, SCHEMA_VERSION};
