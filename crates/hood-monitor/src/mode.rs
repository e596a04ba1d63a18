//! What the task area of `hood top` shows, and what a scan must read for it.

use crate::raw::ScanOptions;
use crate::sort::SortKey;

/// What the task area of `hood top` shows (HelenOS's `top` views plus threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `t`: tasks with memory and CPU.
    Tasks,
    /// `i`: IPC-like activity: context switches, read/write syscalls and bytes.
    Ipc,
    /// `e`: interrupts, softirqs and handler times.
    Exceptions,
    /// `H`: threads.
    Threads,
    /// `o`: the cgroup v2 tree with CPU, memory, I/O and pressure per cgroup, and the
    /// processes in each.
    Cgroups,
}

/// What a scan must read for `mode` sorted by `key`: /proc/PID/stat and /proc/PID/cgroup for
/// the task view, status and io only for the IPC view or when sorting needs them, threads
/// only for `H`, the cgroups' own files only for the cgroup view.
pub fn scan_needs(mode: Mode, key: SortKey, irq_time: bool) -> ScanOptions {
    let ipc = mode == Mode::Ipc || matches!(key, SortKey::Ctx | SortKey::Syscalls | SortKey::Bytes);
    ScanOptions {
        status: ipc,
        owner: true,
        io: ipc,
        cmdline: false,
        threads: mode == Mode::Threads,
        threads_of: None,
        cpu_mhz: true,
        exceptions: mode == Mode::Exceptions || irq_time,
        cgroup: matches!(mode, Mode::Tasks | Mode::Cgroups),
        cgroup_tree: mode == Mode::Cgroups,
    }
}
