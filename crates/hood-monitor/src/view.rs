//! The derived `system.*` view: units converted, percentages and rates over the interval
//! between two snapshots. This is what `--json` prints (docs/monitor.md, versioned by
//! [`SCHEMA_VERSION`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the JSON schema of [`SystemView`]; bump on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole `system` tree.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemView {
    /// JSON schema version.
    pub schema_version: u32,
    /// Seconds between the two snapshots rates were derived from; `None` for a single snapshot.
    pub interval_s: Option<f64>,
    /// `system.uptime`.
    pub uptime: UptimeView,
    /// `system.load`.
    pub load: LoadView,
    /// `system.cpus`.
    pub cpus: CpusView,
    /// `system.physmem`.
    pub physmem: MemView,
    /// `system.counts`: tasks and threads by state.
    pub counts: CountsView,
    /// `system.tasks`.
    pub tasks: Vec<TaskView>,
    /// `system.threads`, when scanned.
    pub threads: Option<Vec<TaskView>>,
    /// `system.exceptions`.
    pub exceptions: ExceptionsView,
    /// `system.pressure`: pressure stall information; null unless read (the monitor store
    /// records it).
    #[serde(default)]
    pub pressure: Option<PressureView>,
    /// `system.disks`: block devices; null unless read (the monitor store records them).
    #[serde(default)]
    pub disks: Option<Vec<DiskView>>,
    /// `system.nets`: network interfaces; null unless read (the monitor store records them).
    #[serde(default)]
    pub nets: Option<Vec<NetView>>,
    /// `system.exits`: how processes that ended during the interval were accounted; null
    /// unless listened for (`hood top` and the monitor store, as root).
    #[serde(default)]
    pub exits: Option<ExitsView>,
    /// `system.cgroups`: the cgroup v2 tree of the processes, with CPU, memory, I/O and
    /// pressure; null unless read.
    #[serde(default)]
    pub cgroups: Option<Vec<CgroupView>>,
}

/// One cgroup (`system.cgroups[]`, addressed by `path`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupView {
    /// Path below the cgroup v2 root.
    pub path: String,
    /// What the path says it is: `docker:ID`, `podman:ID`, `kubepods:POD`, `service:NAME`, or
    /// the last component.
    pub name: String,
    /// Depth below the root (0 for `/`).
    pub depth: u32,
    /// Processes in it and below it in this snapshot.
    pub tasks: u32,
    /// CPU time since creation, ms.
    pub cpu_time_ms: u64,
    /// CPU over the interval, percent of one CPU (it and below).
    pub cpu_percent: Option<f64>,
    /// User part.
    pub user_percent: Option<f64>,
    /// Kernel part.
    pub kernel_percent: Option<f64>,
    /// Memory in use (`memory.current`), when the memory controller is on.
    pub memory_bytes: Option<u64>,
    /// Bytes read per second (`io.stat`), when the io controller is on.
    pub read_bytes_per_s: Option<f64>,
    /// Bytes written per second.
    pub write_bytes_per_s: Option<f64>,
    /// Its `*.pressure` files.
    pub pressure: PressureView,
}

/// `system.exits`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExitsView {
    /// Processes that ended during the interval (listed in `tasks` with `exited`).
    pub processes: u32,
    /// Times the kernel dropped exit reports because hood's receive buffer was full (each time
    /// one or more ended tasks are missing).
    pub overruns: u64,
    /// Exit reports received but not kept (beyond the bound per interval).
    pub dropped: u64,
    /// Why ended processes are not shown, when they are not.
    pub unavailable: Option<String>,
}

/// One PSI line (`some` or `full`) with the share of the interval stalled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLineView {
    /// The kernel's 10 s average, percent.
    pub avg10: f64,
    /// The kernel's 60 s average, percent.
    pub avg60: f64,
    /// The kernel's 300 s average, percent.
    pub avg300: f64,
    /// Microseconds stalled since boot.
    pub total_us: u64,
    /// Percent of the interval stalled (from `total_us`); null without an interval.
    pub percent: Option<f64>,
}

/// One resource's pressure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiView {
    /// Some task stalled.
    pub some: Option<PsiLineView>,
    /// All non-idle tasks stalled.
    pub full: Option<PsiLineView>,
}

/// `system.pressure`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PressureView {
    /// CPU.
    pub cpu: Option<PsiView>,
    /// Memory.
    pub memory: Option<PsiView>,
    /// I/O.
    pub io: Option<PsiView>,
}

/// One block device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskView {
    /// Device name.
    pub name: String,
    /// Reads completed since boot.
    pub reads: u64,
    /// Writes completed since boot.
    pub writes: u64,
    /// Bytes read since boot.
    pub read_bytes: u64,
    /// Bytes written since boot.
    pub write_bytes: u64,
    /// I/Os in progress.
    pub in_flight: u64,
    /// Reads per second over the interval.
    pub reads_per_s: Option<f64>,
    /// Writes per second.
    pub writes_per_s: Option<f64>,
    /// Bytes read per second.
    pub read_bytes_per_s: Option<f64>,
    /// Bytes written per second.
    pub write_bytes_per_s: Option<f64>,
    /// Percent of the interval the device had I/O in progress.
    pub busy_percent: Option<f64>,
}

/// One network interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetView {
    /// Interface name.
    pub name: String,
    /// Bytes received since it came up.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Receive errors plus drops.
    pub rx_errors: u64,
    /// Send errors plus drops.
    pub tx_errors: u64,
    /// Bytes received per second over the interval.
    pub rx_bytes_per_s: Option<f64>,
    /// Bytes sent per second.
    pub tx_bytes_per_s: Option<f64>,
    /// Packets received per second.
    pub rx_packets_per_s: Option<f64>,
    /// Packets sent per second.
    pub tx_packets_per_s: Option<f64>,
}

/// `system.uptime`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UptimeView {
    /// Seconds since boot.
    pub seconds: f64,
    /// Wall clock, seconds since the Unix epoch.
    pub wall_time_s: i64,
    /// Local time zone offset east of UTC in seconds.
    pub utc_offset_s: i32,
}

/// `system.load`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadView {
    /// 1-minute load average.
    pub one: f64,
    /// 5-minute load average.
    pub five: f64,
    /// 15-minute load average.
    pub fifteen: f64,
    /// Runnable threads now.
    pub runnable: u32,
    /// All threads now.
    pub total: u32,
}

/// Cumulative CPU times in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuTimesMs {
    /// Busy (everything but idle and iowait).
    pub busy: u64,
    /// Idle including iowait.
    pub idle: u64,
    /// User (including nice).
    pub user: u64,
    /// Nice part of user.
    pub nice: u64,
    /// Kernel.
    pub system: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts.
    pub softirq: u64,
    /// Hypervisor steal.
    pub steal: u64,
    /// Waiting for I/O.
    pub iowait: u64,
}

/// Percent of the interval, same fields as [`CpuTimesMs`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPercent {
    /// Busy.
    pub busy: f64,
    /// Idle including iowait.
    pub idle: f64,
    /// User (including nice).
    pub user: f64,
    /// Nice.
    pub nice: f64,
    /// Kernel.
    pub system: f64,
    /// Hard interrupts.
    pub irq: f64,
    /// Soft interrupts.
    pub softirq: f64,
    /// Hypervisor steal.
    pub steal: f64,
    /// Waiting for I/O.
    pub iowait: f64,
}

/// One CPU (or all together).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuView {
    /// CPU number; `None` for the all-CPU line.
    pub id: Option<u32>,
    /// Current clock, when exposed.
    pub mhz: Option<f64>,
    /// Cumulative times since boot.
    pub time_ms: CpuTimesMs,
    /// Percentages over the interval; `None` for a single snapshot.
    pub percent: Option<CpuPercent>,
}

/// `system.cpus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpusView {
    /// All CPUs together (percent of all CPUs' time).
    pub total: CpuView,
    /// Per CPU.
    pub per_cpu: Vec<CpuView>,
    /// Context switches since boot.
    pub context_switches: u64,
    /// Context switches per second over the interval.
    pub context_switches_per_s: Option<f64>,
}

/// `system.physmem`, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemView {
    /// Total usable RAM.
    pub total: u64,
    /// Used = total - free - buffers - cache (as `free` computes it).
    pub used: u64,
    /// Completely unused.
    pub free: u64,
    /// Block device buffers.
    pub buffers: u64,
    /// Page cache plus reclaimable slab.
    pub cache: u64,
    /// Kernel's estimate of memory available for new work.
    pub available: u64,
    /// Swap size.
    pub swap_total: u64,
    /// Swap in use.
    pub swap_used: u64,
    /// Swap free.
    pub swap_free: u64,
}

/// `system.counts`: tasks and threads by state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CountsView {
    /// Processes.
    pub tasks: u32,
    /// Processes by single-letter state.
    pub tasks_by_state: BTreeMap<String, u32>,
    /// Threads (sum of each process's thread count).
    pub threads: u32,
    /// Threads runnable now (from the load line).
    pub threads_running: u32,
    /// Threads by state, when threads were scanned.
    pub threads_by_state: Option<BTreeMap<String, u32>>,
}

/// Context switches of one task with rates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CtxView {
    /// Voluntary switches since start (the task blocked: waits, I/O, messages).
    pub voluntary: u64,
    /// Involuntary switches since start (preempted).
    pub involuntary: u64,
    /// Voluntary per second over the interval.
    pub voluntary_per_s: Option<f64>,
    /// Involuntary per second over the interval.
    pub involuntary_per_s: Option<f64>,
}

/// Read/write syscall activity of one task with rates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IoView {
    /// Read-like syscalls since start.
    pub syscr: u64,
    /// Write-like syscalls since start.
    pub syscw: u64,
    /// Bytes read through syscalls.
    pub rchar: u64,
    /// Bytes written through syscalls.
    pub wchar: u64,
    /// Bytes read from storage.
    pub read_bytes: u64,
    /// Bytes written to storage.
    pub write_bytes: u64,
    /// Read syscalls per second.
    pub syscr_per_s: Option<f64>,
    /// Write syscalls per second.
    pub syscw_per_s: Option<f64>,
    /// Bytes read per second.
    pub rchar_per_s: Option<f64>,
    /// Bytes written per second.
    pub wchar_per_s: Option<f64>,
}

/// One process (`system.tasks.PID`) or thread (`system.threads.TID`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskView {
    /// Process id, or thread id for a thread.
    pub pid: u32,
    /// Owning process id (equals `pid` for a process).
    pub tgid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Name.
    pub name: String,
    /// Command line joined by spaces, when read (empty for kernel threads).
    pub cmdline: Option<String>,
    /// Owning uid, when read.
    pub uid: Option<u32>,
    /// Owning user name, when known.
    pub user: Option<String>,
    /// Single-letter state.
    pub state: String,
    /// Threads.
    pub threads: u32,
    /// Kernel priority.
    pub priority: i64,
    /// Nice.
    pub nice: i64,
    /// Virtual memory in bytes.
    pub virt_bytes: u64,
    /// Resident memory in bytes.
    pub res_bytes: u64,
    /// Resident memory as percent of RAM.
    pub mem_percent: f64,
    /// User CPU time since start, ms.
    pub user_time_ms: u64,
    /// Kernel CPU time since start, ms.
    pub kernel_time_ms: u64,
    /// CPU over the interval, percent of one CPU (user + kernel; may exceed 100 with threads).
    pub cpu_percent: Option<f64>,
    /// User part of `cpu_percent`.
    pub user_percent: Option<f64>,
    /// Kernel part of `cpu_percent`.
    pub kernel_percent: Option<f64>,
    /// CPU it last ran on.
    pub processor: i32,
    /// Context switches, when read.
    pub ctx_switches: Option<CtxView>,
    /// Read/write syscalls, when readable.
    pub io: Option<IoView>,
    /// The process ended during the interval (state `X`): its times are its totals at exit,
    /// its percentages what it used of the interval, its memory 0.
    #[serde(default)]
    pub exited: bool,
    /// cgroup v2 path, when read.
    #[serde(default)]
    pub cgroup: Option<String>,
    /// Start time in clock ticks after boot (`/proc/PID/stat` field 22), which with the pid
    /// names one process for good (`hood top`'s `k` and `n` check it); not in the JSON.
    #[serde(skip)]
    pub start_ticks: u64,
}

/// One interrupt line or softirq type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqView {
    /// Id (IRQ number, `LOC`, `NET_RX`, ...).
    pub id: String,
    /// Controller/device description.
    pub description: String,
    /// Per-CPU counts since boot.
    pub per_cpu: Vec<u64>,
    /// Sum over CPUs.
    pub total: u64,
    /// Per-CPU rates per second over the interval.
    pub per_cpu_per_s: Option<Vec<f64>>,
    /// All-CPU rate per second over the interval.
    pub per_s: Option<f64>,
}

/// Handler time of one irq/softirq (`--irq-time`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HandlerView {
    /// `irq` or `softirq`.
    pub kind: String,
    /// IRQ or vector number.
    pub number: u32,
    /// Handler name.
    pub name: String,
    /// Runs since tracing started.
    pub count: u64,
    /// Runs in the interval.
    pub count_interval: Option<u64>,
    /// Average µs per run (over the interval when there were runs, else overall).
    pub avg_us: f64,
    /// Percent of all CPUs' time in this handler over the interval.
    pub cpu_percent: Option<f64>,
    /// Total ns since tracing started.
    pub total_ns: u64,
}

/// `system.exceptions.irq_time`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IrqTimeView {
    /// Handlers sorted by time spent, most first.
    pub handlers: Vec<HandlerView>,
    /// Why it is unavailable, if it is.
    pub unavailable: Option<String>,
    /// Trace events received.
    pub events: u64,
    /// Events lost by the kernel buffer.
    pub lost: u64,
    /// hood's own CPU time reading the trace, ms since start (the measuring cost).
    pub cost_ms: f64,
    /// That cost as percent of one CPU over the interval.
    pub cost_percent: Option<f64>,
}

/// `system.exceptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExceptionsView {
    /// `/proc/interrupts` lines.
    pub interrupts: Vec<IrqView>,
    /// `/proc/softirqs` types.
    pub softirqs: Vec<IrqView>,
    /// Handler times (`--irq-time`), when requested.
    pub irq_time: Option<IrqTimeView>,
}
