//! Raw cumulative snapshot types: what one pass over /proc returns, unconverted (ticks, pages,
//! kB, counters since boot). Rates are never stored here; they come from two snapshots.

use serde::{Deserialize, Serialize};

/// What a scan should read beyond the cheap defaults. Reading every `/proc/PID/status` triples
/// the cost of a refresh, so each view asks only for what it shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanOptions {
    /// Read `/proc/PID/status` for context switches and the owning uid.
    pub status: bool,
    /// Owner uid from the `/proc/PID` directory (one `stat` call, much cheaper than `status`).
    pub owner: bool,
    /// Read `/proc/PID/io` for read/write syscall counts and bytes (own or root only).
    pub io: bool,
    /// Read `/proc/PID/cmdline`.
    pub cmdline: bool,
    /// Also scan every thread (`/proc/PID/task/TID/...`).
    pub threads: bool,
    /// Only scan the threads of this process (implies `threads` for it alone).
    pub threads_of: Option<u32>,
    /// Read the per-CPU clock from `/proc/cpuinfo`.
    pub cpu_mhz: bool,
    /// Read `/proc/interrupts` and `/proc/softirqs`.
    pub exceptions: bool,
    /// Read `/proc/PID/cgroup` (the cgroup v2 path of each process).
    #[serde(default)]
    pub cgroup: bool,
    /// With `cgroup`: also read the cgroups' own files (CPU, memory, I/O, pressure) for
    /// `system.cgroups`.
    #[serde(default)]
    pub cgroup_tree: bool,
}

impl ScanOptions {
    /// Everything (used by `hood info` and `--json` outputs).
    pub fn all() -> Self {
        ScanOptions {
            status: true,
            owner: true,
            io: true,
            cmdline: true,
            threads: true,
            threads_of: None,
            cpu_mhz: true,
            exceptions: true,
            cgroup: true,
            cgroup_tree: true,
        }
    }
}

/// CPU time split as in `/proc/stat`, in clock ticks (`USER_HZ`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    /// User mode, including nice and guest time.
    pub user: u64,
    /// User mode at positive nice.
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle while waiting for I/O.
    pub iowait: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts.
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

impl CpuTicks {
    /// Ticks spent idle (idle + iowait).
    pub fn idle_all(&self) -> u64 {
        self.idle.saturating_add(self.iowait)
    }
    /// Ticks spent doing anything but idling.
    pub fn busy(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
            .saturating_add(self.steal)
    }
    /// All ticks.
    pub fn total(&self) -> u64 {
        self.busy().saturating_add(self.idle_all())
    }
}

/// One CPU as read from `/proc/stat` (and `/proc/cpuinfo` for the clock).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuRaw {
    /// CPU number.
    pub id: u32,
    /// Cumulative times.
    pub ticks: CpuTicks,
    /// Current clock in MHz, where the kernel exposes it.
    pub mhz: Option<f64>,
}

/// `/proc/loadavg`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadAvg {
    /// 1-minute load average.
    pub one: f64,
    /// 5-minute load average.
    pub five: f64,
    /// 15-minute load average.
    pub fifteen: f64,
    /// Runnable scheduling entities (threads) right now.
    pub runnable: u32,
    /// All scheduling entities (threads).
    pub total: u32,
}

/// `/proc/meminfo`, in kB as the kernel prints it. Missing lines read as `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInfo {
    /// MemTotal.
    pub total_kb: u64,
    /// MemFree.
    pub free_kb: u64,
    /// MemAvailable (kernel's estimate).
    pub available_kb: Option<u64>,
    /// Buffers.
    pub buffers_kb: u64,
    /// Cached (page cache).
    pub cached_kb: u64,
    /// SReclaimable (reclaimable slab, counted as cache like `free` does).
    pub sreclaimable_kb: u64,
    /// SwapTotal.
    pub swap_total_kb: u64,
    /// SwapFree.
    pub swap_free_kb: u64,
}

/// Voluntary and involuntary context switches (`/proc/PID/status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CtxSwitches {
    /// Switches because the task blocked (waited for something).
    pub voluntary: u64,
    /// Switches because the task was preempted.
    pub involuntary: u64,
}

/// `/proc/PID/io` counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCounters {
    /// Bytes passed to read-like syscalls.
    pub rchar: u64,
    /// Bytes passed to write-like syscalls.
    pub wchar: u64,
    /// Read-like syscalls.
    pub syscr: u64,
    /// Write-like syscalls.
    pub syscw: u64,
    /// Bytes fetched from storage.
    pub read_bytes: u64,
    /// Bytes sent to storage.
    pub write_bytes: u64,
}

/// One process or thread.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskRaw {
    /// Process id, or thread id for a thread.
    pub pid: u32,
    /// Owning process (thread group) id; equals `pid` for a process.
    pub tgid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Name (`comm`, at most 15 bytes, may contain spaces and parentheses).
    pub name: String,
    /// Command line arguments, when read; empty for kernel threads.
    pub cmdline: Option<Vec<String>>,
    /// Owning uid, when read.
    pub uid: Option<u32>,
    /// Owning user name, when known.
    pub user: Option<String>,
    /// Single-letter state (R, S, D, Z, T, t, X, I, ...).
    pub state: char,
    /// Threads in the process.
    pub num_threads: u32,
    /// Kernel priority as in `stat` field 18.
    pub priority: i64,
    /// Nice value.
    pub nice: i64,
    /// Virtual memory size in bytes.
    pub vsize: u64,
    /// Resident set size in pages.
    pub rss_pages: u64,
    /// User CPU time in clock ticks.
    pub utime: u64,
    /// Kernel CPU time in clock ticks.
    pub stime: u64,
    /// Start time after boot in clock ticks (tells a reused pid apart).
    pub start_time: u64,
    /// CPU it last ran on.
    pub processor: i32,
    /// Context switches, when `status` was read.
    pub ctx: Option<CtxSwitches>,
    /// Read/write syscall counters, when `io` was read and readable.
    pub io: Option<IoCounters>,
    /// cgroup v2 path (`/system.slice/cron.service`), when read.
    #[serde(default)]
    pub cgroup: Option<String>,
}

/// One line of `/proc/interrupts` or `/proc/softirqs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqLine {
    /// Line id: an IRQ number, a name such as `LOC`, or a softirq type such as `NET_RX`.
    pub id: String,
    /// Count per CPU since boot.
    pub per_cpu: Vec<u64>,
    /// The rest of the line: controller, type and device names.
    pub description: String,
}

/// Time measured in one irq or softirq handler while `--irq-time` tracing runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandlerTime {
    /// `irq` or `softirq`.
    pub kind: String,
    /// IRQ number or softirq vector number.
    pub number: u32,
    /// Handler (device) name or softirq type.
    pub name: String,
    /// Completed handler runs seen since tracing started.
    pub count: u64,
    /// Total time inside the handler, in nanoseconds.
    pub total_ns: u64,
}

/// The `--irq-time` measurement state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqTimeRaw {
    /// Cumulative handler times since tracing started; empty when unavailable.
    pub handlers: Vec<HandlerTime>,
    /// Why the measurement is unavailable, if it is.
    pub unavailable: Option<String>,
    /// Trace events received so far.
    pub events: u64,
    /// Events the kernel reported lost (buffer overruns).
    pub lost: u64,
    /// CPU time hood spent reading and parsing trace events, in nanoseconds (measuring cost).
    pub cost_ns: u64,
}

/// One line of a `/proc/pressure/*` file: `some` (at least one task stalled) or `full` (all
/// non-idle tasks stalled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    /// Share of time stalled over the last 10 s, percent (the kernel's average).
    pub avg10: f64,
    /// ... over the last 60 s.
    pub avg60: f64,
    /// ... over the last 300 s.
    pub avg300: f64,
    /// Microseconds stalled since boot.
    pub total_us: u64,
}

/// One `/proc/pressure/{cpu,memory,io}` file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiRaw {
    /// The `some` line.
    pub some: Option<PsiLine>,
    /// The `full` line (absent for cpu before Linux 5.13).
    pub full: Option<PsiLine>,
}

/// Pressure stall information (`/proc/pressure/*`, Linux 4.20+ with PSI enabled).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PressureRaw {
    /// CPU.
    pub cpu: Option<PsiRaw>,
    /// Memory.
    pub memory: Option<PsiRaw>,
    /// I/O.
    pub io: Option<PsiRaw>,
}

/// One block device of `/proc/diskstats` (counters since boot).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskRaw {
    /// Device name (`vda`, `vda1`, `dm-0`, `nvme0n1`).
    pub name: String,
    /// Reads completed.
    pub reads: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Writes completed.
    pub writes: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// I/Os in progress now.
    pub in_flight: u64,
    /// Milliseconds the device had I/O in progress.
    pub io_ms: u64,
}

/// One network interface of `/proc/net/dev` (counters since it came up).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetRaw {
    /// Interface name.
    pub name: String,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Receive errors.
    pub rx_errs: u64,
    /// Received packets dropped.
    pub rx_drop: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Send errors.
    pub tx_errs: u64,
    /// Packets dropped on sending.
    pub tx_drop: u64,
}

/// One task (a process's thread, or a single-threaded process) that ended, as the kernel's
/// exit accounting (taskstats) reported it: totals over the task's whole life.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitRaw {
    /// Thread id (equals `tgid` for a process's main thread).
    pub pid: u32,
    /// Process (thread group) id.
    pub tgid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Name (`comm`).
    pub name: String,
    /// Real uid.
    pub uid: u32,
    /// Owning user name, when known.
    #[serde(default)]
    pub user: Option<String>,
    /// Start time, seconds since the Unix epoch.
    pub start_s: u64,
    /// Time from start to exit, microseconds.
    pub elapsed_us: u64,
    /// User CPU time, microseconds.
    pub utime_us: u64,
    /// Kernel CPU time, microseconds.
    pub stime_us: u64,
    /// Time on CPU measured by the scheduler, nanoseconds (`utime_us` and `stime_us` are
    /// sampled at timer ticks, so a short task's can be off by a few ticks; /proc shows this
    /// total split in their ratio). 0 when the kernel does not report it.
    #[serde(default)]
    pub runtime_ns: u64,
    /// Nice value.
    pub nice: i64,
    /// Context switches.
    pub ctx: CtxSwitches,
    /// Read/write syscall counters.
    pub io: IoCounters,
    /// The kernel marked this task the last of its process to end (taskstats' `AGROUP`;
    /// kernels before taskstats version 12 name no thread groups, and every report is marked).
    #[serde(default, skip_serializing_if = "is_false")]
    pub group_end: bool,
    /// Not one task: the sum of the reports of this process's threads that ended at earlier
    /// snapshots (while the process lived on), added when the process ends so that its
    /// whole-life total is known. A process's /proc times include its ended threads, so the
    /// interval's time of a multi-threaded process that ends is that total less what /proc
    /// said at the previous snapshot. Threads that ended before hood listened are missing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub earlier_threads: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Tasks that ended since the previous snapshot (`hood top`, the monitor store), so processes
/// that started and ended between two snapshots are still accounted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitsRaw {
    /// Every task that ended, in the order the kernel reported them.
    pub tasks: Vec<ExitRaw>,
    /// Times the kernel found the receive buffer full and dropped reports since the previous
    /// snapshot (each time one or more tasks are missing).
    pub overruns: u64,
    /// Reports received but not kept, beyond the bound per snapshot.
    pub dropped: u64,
    /// Why ended tasks are not known, when they are not.
    pub unavailable: Option<String>,
}

/// One cgroup v2 directory (counters since it was created).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupRaw {
    /// Path below the cgroup v2 root (`/` for the root).
    pub path: String,
    /// `cpu.stat` `usage_usec`.
    pub usage_us: u64,
    /// `cpu.stat` `user_usec`.
    pub user_us: u64,
    /// `cpu.stat` `system_usec`.
    pub system_us: u64,
    /// `memory.current`, bytes, when the memory controller is on.
    pub memory_bytes: Option<u64>,
    /// `io.stat` bytes read and written (all devices), when the io controller is on.
    pub io_bytes: Option<(u64, u64)>,
    /// `cpu.pressure`, `memory.pressure`, `io.pressure`.
    pub pressure: PressureRaw,
}

/// One cumulative snapshot of the system.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Monotonic time the snapshot was taken, in nanoseconds (any fixed origin).
    pub taken_ns: u64,
    /// Wall-clock time, seconds since the Unix epoch.
    pub wall_time_s: i64,
    /// Local time zone offset east of UTC in seconds, for display.
    pub utc_offset_s: i32,
    /// Seconds since boot (`/proc/uptime`).
    pub uptime_s: f64,
    /// Clock ticks per second (`USER_HZ`).
    pub clk_tck: u64,
    /// Page size in bytes.
    pub page_size: u64,
    /// Load averages.
    pub load: LoadAvg,
    /// All CPUs together (`cpu` line).
    pub cpu_total: CpuTicks,
    /// Per CPU.
    pub cpus: Vec<CpuRaw>,
    /// Context switches since boot, all CPUs.
    pub ctxt: u64,
    /// Processes created since boot.
    pub forks: u64,
    /// Memory.
    pub mem: MemInfo,
    /// Processes.
    pub tasks: Vec<TaskRaw>,
    /// Threads, when scanned.
    pub threads: Option<Vec<TaskRaw>>,
    /// Interrupt lines, when scanned.
    pub interrupts: Vec<IrqLine>,
    /// Softirq types, when scanned.
    pub softirqs: Vec<IrqLine>,
    /// Handler times from `--irq-time`.
    pub irq_time: Option<IrqTimeRaw>,
    /// Pressure stall information, when read (the monitor store records it).
    #[serde(default)]
    pub pressure: Option<PressureRaw>,
    /// Block devices, when read (the monitor store records them).
    #[serde(default)]
    pub disks: Option<Vec<DiskRaw>>,
    /// Network interfaces, when read (the monitor store records them).
    #[serde(default)]
    pub nets: Option<Vec<NetRaw>>,
    /// Tasks that ended since the previous snapshot, when listened for.
    #[serde(default)]
    pub exits: Option<ExitsRaw>,
    /// The cgroups that hold the snapshot's processes, and their ancestors, when read.
    #[serde(default)]
    pub cgroups: Option<Vec<CgroupRaw>>,
    /// The counts over all the machine's processes, when `tasks` holds only some of them (a
    /// replay of a few processes from the monitor store's per-process index); `None` when
    /// `tasks` is every process, as read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<WholeCounts>,
}

/// What a view counts over all of a snapshot's processes ([`crate::derive::whole_counts`]),
/// kept beside a snapshot that holds only some of them so that its view counts the same.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WholeCounts {
    /// Processes.
    pub tasks: u32,
    /// Processes by single-letter state.
    pub tasks_by_state: std::collections::BTreeMap<String, u32>,
    /// Threads (sum of each process's thread count).
    pub threads: u32,
    /// Processes in each of `cgroups` (in its order) or below it.
    pub cgroup_tasks: Vec<u32>,
    /// Processes that ended during the interval (`exits`' tasks by process, less those still
    /// alive).
    pub ended: u32,
}
