//! The snapshot reader.
//!
//! Per-task files are opened relative to a held descriptor of the procfs root (`openat`), so
//! no absolute path is built or walked per file. On a real procfs the descriptor of each
//! `/proc/PID/stat` is also kept across refreshes and re-read from offset 0 (procfs regenerates
//! the text on every read from the start, and a descriptor of a task that has gone reads as
//! `ESRCH`, after which the path is opened afresh): a refresh then costs one `pread` per task
//! instead of open + read + close. The number of held descriptors stays within half the
//! open-file limit; tasks beyond it are opened per refresh. A fake tree (tests) holds none, as
//! regular files would keep showing deleted or replaced content.
//!
//! With [`IdleSkip`] on, processes that did not run since the previous snapshot are not read
//! again. `/proc/PID/stat` is the expensive file (the kernel walks the thread group and formats
//! 52 fields); `/proc/PID/schedstat` is a few times cheaper and holds the main thread's time on
//! CPU and its count of times scheduled. A single-threaded process whose schedstat is unchanged
//! has not run, so its CPU times, state, thread count, name, owner, context switches, I/O
//! counters and command line are unchanged too (changing any of them takes running): it keeps
//! its last record. Every other process (multi-threaded, scheduled since, new, named by
//! [`ProcReader::reread`], or due for its periodic re-read) is read in full. What can change
//! without running is the resident size (reclaim) and the nice value (set by another process);
//! [`IdleSkip::Every`] bounds how old those may get. Both descriptors of a kept process are held
//! (within the descriptor budget; a process whose descriptors are not held is always read), so
//! a reused pid is never mistaken for the process it replaced. The listing of the root is
//! skipped as well when no process was forked since the last one (`processes` of /proc/stat
//! unchanged): no process can have appeared.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hood_monitor::{IrqTimeRaw, ScanOptions, Snapshot, TaskRaw};
use rustc_hash::{FxHashMap, FxHashSet};
use rustix::fs::{AtFlags, Mode, OFlags, RawDir, SeekFrom};

use crate::cgroups::CgroupReader;
use crate::exits::ExitListener;
use crate::parse;
use crate::ProcError;

/// `statfs` magic of procfs.
const PROC_SUPER_MAGIC: i64 = 0x9fa0;

/// Reads snapshots from a procfs root (normally `/proc`). Keep one reader alive across
/// refreshes: it reuses its buffers, its open `stat` descriptors and its uid → name table.
#[derive(Debug)]
pub struct ProcReader {
    root: PathBuf,
    /// The root directory, or why it could not be opened.
    root_fd: Result<OwnedFd, io::ErrorKind>,
    passwd: PathBuf,
    users: Option<HashMap<u32, String>>,
    epoch: Instant,
    buf: Vec<u8>,
    /// getdents buffer.
    dirbuf: Vec<u8>,
    /// Path relative to the root (`PID/stat`, `PID/task/TID/io`, ...).
    path: String,
    pids: Vec<u32>,
    /// Owner uid per (pid, start time) from the previous scan: a process's owner is looked up
    /// once, not at every refresh.
    owners: FxHashMap<(u32, u64), u32>,
    owners_next: FxHashMap<(u32, u64), u32>,
    /// Held `stat` descriptors of processes (by pid) and threads (by tid), from the previous
    /// scan and for the next one.
    stat_fds: [FxHashMap<u32, OwnedFd>; 2],
    stat_fds_next: [FxHashMap<u32, OwnedFd>; 2],
    /// How many `stat` descriptors may be held (0 on a fake tree).
    fd_budget: usize,
    /// Task records of an old snapshot handed back by [`ProcReader::recycle`], reused so a
    /// refresh does not allocate names anew.
    spare: Vec<TaskRaw>,
    clk_tck: u64,
    page_size: u64,
    /// Whether processes that did not run are kept rather than read.
    idle_skip: IdleSkip,
    /// With `idle_skip` on: per process (by pid) whose descriptors are held, its `schedstat`
    /// descriptor, last schedstat and last record; from the previous scan and for the next one.
    idle: FxHashMap<u32, Held>,
    idle_next: FxHashMap<u32, Held>,
    /// Processes read in full at every snapshot whatever their schedstat says.
    always: FxHashSet<u32>,
    /// With `idle_skip` on: forks since boot at the last listing of the root, and the pids
    /// seen since (gone ones drop out).
    listed: Option<(u64, Vec<u32>)>,
    /// The options of the previous scan: a kept record holds what they asked for.
    last_opts: Option<ScanOptions>,
    /// Snapshots taken.
    generation: u64,
    counts: ScanCounts,
    /// With [`ProcReader::with_exit_accounting`]: the listener for tasks that end, or why
    /// there is none.
    exits: Option<Result<ExitListener, String>>,
    /// The listener knows the threads that ended before it began (see [`ProcReader::snapshot`]).
    exits_seeded: bool,
    /// Read pressure, disks and network interfaces into every snapshot.
    system_io: bool,
    /// The cgroup v2 hierarchy, once looked for (`None` inside: there is none).
    cgroup_root: Option<Option<CgroupReader>>,
}

/// Whether [`ProcReader::snapshot`] re-reads processes that did not run since the previous
/// snapshot (see the module documentation of the reader).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdleSkip {
    /// Read every process at every snapshot.
    #[default]
    Off,
    /// Keep the record of a process that did not run, but read each one in full at least every
    /// this many snapshots (spread over the snapshots by pid), so a resident size or nice value
    /// changed from outside shows within that many refreshes.
    Every(u32),
    /// Keep the record of a process that did not run until it runs (or
    /// [`ProcReader::reread`] names it).
    UntilRun,
}

/// What the last snapshot did, for tests and measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanCounts {
    /// Processes whose `stat` was read.
    pub stat_read: usize,
    /// Processes kept from the previous snapshot (did not run).
    pub kept: usize,
    /// The root was listed (with [`IdleSkip`] on, only when a process was forked since).
    pub listed: bool,
}

/// A process whose descriptors are held while [`IdleSkip`] is on.
#[derive(Debug)]
struct Held {
    sched: OwnedFd,
    /// Last schedstat: (ns on CPU, times scheduled) of the main thread.
    last: (u64, u64),
    raw: TaskRaw,
}

/// Read a whole file from `fd` at offset 0 into `buf` and return its length. `buf` stays
/// initialized at its full length between calls (no clearing per read) and grows when a file
/// fills it. Per-task /proc files produce their whole content in the first read when it fits,
/// so a short read ends it.
fn pread_all(fd: &OwnedFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    pread_bounded(fd, buf, usize::MAX).map(|(n, _)| n)
}

/// The most of a task's `cmdline` read: the longest one argument can be (the kernel's
/// `MAX_ARG_STRLEN`). A process may have megabytes of arguments (a quarter of its stack
/// limit, up to 6 MiB); every process's would be kept in memory by the monitor.
pub(crate) const CMDLINE_MAX: usize = 128 << 10;

/// [`pread_all`], reading at most `max` bytes: (bytes read, whether the file had more).
fn pread_bounded(fd: &OwnedFd, buf: &mut Vec<u8>, max: usize) -> io::Result<(usize, bool)> {
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut len = 0;
    loop {
        let end = buf.len().min(max.saturating_add(1));
        let got = match rustix::io::pread(fd, &mut buf[len..end], len as u64) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        let room = end - len;
        len += got;
        if len > max {
            // One byte past the cap was asked for, to tell "exactly max" from "more".
            return Ok((max, true));
        }
        if got == 0 || got < room {
            return Ok((len, false));
        }
        let new_len = buf.len() * 2;
        buf.resize(new_len, 0);
    }
}

/// Open `path` (relative to `dir`) for reading.
fn open_at(dir: &OwnedFd, path: &str) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?)
}

/// Read `path` (relative to `dir`) into `buf`; returns the length.
fn read_at(dir: &OwnedFd, path: &str, buf: &mut Vec<u8>) -> io::Result<usize> {
    pread_all(&open_at(dir, path)?, buf)
}

/// Append the numeric entries of the directory `fd` (read from its start) to `out`, sorted.
fn list_numeric(fd: &OwnedFd, dirbuf: &mut Vec<u8>, out: &mut Vec<u32>) -> io::Result<()> {
    out.clear();
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    if dirbuf.capacity() < 32 * 1024 {
        dirbuf.reserve(32 * 1024);
    }
    let mut dir = RawDir::new(fd, dirbuf.spare_capacity_mut());
    while let Some(e) = dir.next() {
        let e = e?;
        if let Some(n) = parse_id(e.file_name().to_bytes()) {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(())
}

/// A decimal task id (`"123"`); `None` for anything else (`self`, `sys`, overflow).
fn parse_id(name: &[u8]) -> Option<u32> {
    if name.is_empty() || name.len() > 10 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in name {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    u32::try_from(v).ok()
}

impl ProcReader {
    /// A reader of `/proc`.
    pub fn new() -> Self {
        Self::with_root("/proc")
    }

    /// A reader of a procfs tree at `root` (a fake tree in tests). User names come from
    /// `/etc/passwd` unless [`ProcReader::with_passwd`] says otherwise.
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root_fd = rustix::fs::open(
            &root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io::Error::from(e).kind());
        let mut buf = vec![0; 4096];
        let (hz, page) = match root_fd
            .as_ref()
            .map(|fd| read_at(fd, "self/auxv", &mut buf))
        {
            Ok(Ok(n)) => parse::parse_auxv(&buf[..n]),
            _ => (None, None),
        };
        // `f_type`'s width differs between architectures.
        #[allow(clippy::unnecessary_cast)]
        let is_procfs = root_fd.as_ref().is_ok_and(|fd| {
            rustix::fs::fstatfs(fd).is_ok_and(|st| st.f_type as i64 == PROC_SUPER_MAGIC)
        });
        let fd_limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(1024);
        ProcReader {
            root,
            root_fd,
            passwd: PathBuf::from("/etc/passwd"),
            users: None,
            epoch: Instant::now(),
            buf,
            dirbuf: Vec::new(),
            path: String::with_capacity(64),
            pids: Vec::new(),
            owners: FxHashMap::default(),
            owners_next: FxHashMap::default(),
            stat_fds: Default::default(),
            stat_fds_next: Default::default(),
            fd_budget: if is_procfs {
                usize::try_from(fd_limit / 2).unwrap_or(usize::MAX)
            } else {
                0
            },
            spare: Vec::new(),
            clk_tck: hz.unwrap_or(100),
            page_size: page.unwrap_or(4096),
            idle_skip: IdleSkip::Off,
            idle: FxHashMap::default(),
            idle_next: FxHashMap::default(),
            always: FxHashSet::default(),
            listed: None,
            last_opts: None,
            generation: 0,
            counts: ScanCounts::default(),
            exits: None,
            exits_seeded: false,
            system_io: false,
            cgroup_root: None,
        }
    }

    /// Keep processes that did not run since the previous snapshot rather than read them
    /// (see [`IdleSkip`]).
    pub fn with_idle_skip(mut self, skip: IdleSkip) -> Self {
        self.idle_skip = skip;
        self
    }

    /// Hold at most `n` descriptors across snapshots (by default half the open-file limit;
    /// none on a tree that is not procfs).
    pub fn with_fd_budget(mut self, n: usize) -> Self {
        if self.fd_budget > 0 {
            self.fd_budget = n;
        }
        self
    }

    /// Read these processes in full at every following snapshot, whether they ran or not
    /// (replaces the previous set).
    pub fn reread(&mut self, pids: impl IntoIterator<Item = u32>) {
        self.always.clear();
        self.always.extend(pids);
    }

    /// What the last snapshot read and kept.
    pub fn counts(&self) -> ScanCounts {
        self.counts
    }

    /// Use another passwd file for uid → name.
    pub fn with_passwd(mut self, path: impl Into<PathBuf>) -> Self {
        self.passwd = path.into();
        self.users = None;
        self
    }

    /// Also report, in each snapshot's `exits`, the tasks that ended since the previous one
    /// (the kernel's exit accounting; root), or why they cannot be. The first snapshot holds
    /// those that ended since this call.
    pub fn with_exit_accounting(mut self) -> Self {
        let cpus = fs::read_to_string("/sys/devices/system/cpu/possible")
            .map_err(|e| {
                format!(
                    "processes that ended between refreshes are not shown: cannot read \
                     /sys/devices/system/cpu/possible: {e} (is sysfs mounted?)"
                )
            })
            .and_then(|c| ExitListener::start(&c));
        self.exits = Some(cpus);
        self
    }

    /// Also read pressure stall information, block devices and network interfaces into every
    /// snapshot ([`ProcReader::read_system_io`]).
    pub fn with_system_io(mut self) -> Self {
        self.system_io = true;
        self
    }

    /// The procfs root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Hand back a snapshot that is no longer needed: its task records are reused by the next
    /// [`ProcReader::snapshot`], which then allocates nothing new for tasks seen before.
    pub fn recycle(&mut self, old: Snapshot) {
        self.spare.extend(old.tasks);
        self.spare.extend(old.threads.into_iter().flatten());
    }

    fn root_fd(&self) -> Result<&OwnedFd, ProcError> {
        self.root_fd.as_ref().map_err(|&kind| ProcError::Read {
            path: self.root.clone(),
            source: kind.into(),
        })
    }

    fn sys_file(&mut self, name: &str) -> Result<String, ProcError> {
        let read = match &self.root_fd {
            Ok(fd) => read_at(fd, name, &mut self.buf),
            Err(kind) => Err((*kind).into()),
        };
        match read {
            Ok(n) => Ok(String::from_utf8_lossy(&self.buf[..n]).into_owned()),
            Err(source) => Err(ProcError::Read {
                path: self.root.join(name),
                source,
            }),
        }
    }

    /// Pressure stall information, block devices and network interfaces into `s` (the monitor
    /// store records them): each left `None` when its file is missing or unreadable.
    pub fn read_system_io(&mut self, s: &mut Snapshot) {
        let mut pressure = hood_monitor::PressureRaw::default();
        let mut any = false;
        for (name, slot) in [
            ("pressure/cpu", &mut pressure.cpu),
            ("pressure/memory", &mut pressure.memory),
            ("pressure/io", &mut pressure.io),
        ] {
            if let Ok(t) = self.sys_file(name) {
                *slot = Some(parse::parse_psi(&t));
                any = true;
            }
        }
        s.pressure = any.then_some(pressure);
        s.disks = self
            .sys_file("diskstats")
            .ok()
            .map(|t| parse::parse_diskstats(&t));
        s.nets = self
            .sys_file("net/dev")
            .ok()
            .map(|t| parse::parse_net_dev(&t));
    }

    /// Take one snapshot. `irq_time` is attached as given (the tracer lives elsewhere).
    pub fn snapshot(&mut self, opts: &ScanOptions) -> Result<Snapshot, ProcError> {
        self.root_fd()?;
        self.generation += 1;
        self.counts = ScanCounts::default();
        // Before the scan: a task that ends during it is reported at the next snapshot, which
        // then knows it was in this one.
        let mut exits = self.exits.as_mut().map(|l| match l {
            Ok(l) => l.drain(),
            Err(why) => hood_monitor::ExitsRaw {
                unavailable: Some(why.clone()),
                ..Default::default()
            },
        });
        let mut s = Snapshot {
            taken_ns: self.epoch.elapsed().as_nanos() as u64,
            wall_time_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0),
            clk_tck: self.clk_tck,
            page_size: self.page_size,
            ..Snapshot::default()
        };
        let uptime = self.sys_file("uptime")?;
        s.uptime_s = parse::parse_uptime(&uptime).ok_or_else(|| ProcError::Parse {
            path: self.root.join("uptime"),
            what: "no seconds value".into(),
        })?;
        let load = self.sys_file("loadavg")?;
        s.load = parse::parse_loadavg(&load).unwrap_or_default();
        let stat = parse::parse_proc_stat(&self.sys_file("stat")?);
        s.cpu_total = stat.total;
        s.cpus = stat.cpus;
        s.ctxt = stat.ctxt;
        s.forks = stat.processes;
        s.mem = parse::parse_meminfo(&self.sys_file("meminfo")?);
        if opts.cpu_mhz {
            if let Ok(info) = self.sys_file("cpuinfo") {
                for (id, mhz) in parse::parse_cpuinfo_mhz(&info) {
                    if let Some(c) = s.cpus.iter_mut().find(|c| c.id == id) {
                        c.mhz = Some(mhz);
                    }
                }
            }
        }
        if opts.exceptions {
            // Optional files: a kernel without them just shows none.
            if let Ok(t) = self.sys_file("interrupts") {
                s.interrupts = parse::parse_irq_table(&t);
            }
            if let Ok(t) = self.sys_file("softirqs") {
                s.softirqs = parse::parse_irq_table(&t);
            }
        }
        self.owners_next.clear();
        s.tasks = self.scan_tasks(opts, s.forks)?;
        if opts.threads || opts.threads_of.is_some() {
            let mut threads = Vec::new();
            let owners: Vec<u32> = match opts.threads_of {
                Some(pid) => vec![pid],
                None => s.tasks.iter().map(|t| t.pid).collect(),
            };
            for pid in owners {
                self.scan_threads(pid, opts, &mut threads);
            }
            s.threads = Some(threads);
        }
        if !self.exits_seeded && matches!(self.exits, Some(Ok(_))) {
            self.exits_seeded = true;
            self.seed_ended_threads(&s.tasks, opts);
        }
        std::mem::swap(&mut self.owners, &mut self.owners_next);
        // Descriptors of tasks not seen in this scan are closed here.
        for (held, next) in self.stat_fds.iter_mut().zip(&mut self.stat_fds_next) {
            std::mem::swap(held, next);
            next.clear();
        }
        std::mem::swap(&mut self.idle, &mut self.idle_next);
        self.idle_next.clear();
        self.last_opts = Some(*opts);
        if opts.status || opts.owner {
            self.fill_users(&mut s.tasks);
            if let Some(th) = s.threads.as_mut() {
                self.fill_users(th);
            }
        }
        if let Some(ex) = exits.as_mut() {
            let users = self.users_table();
            for e in &mut ex.tasks {
                e.user = Some(
                    users
                        .get(&e.uid)
                        .cloned()
                        .unwrap_or_else(|| e.uid.to_string()),
                );
            }
        }
        s.exits = exits;
        if let Some(Ok(l)) = self.exits.as_mut() {
            let alive: FxHashSet<u32> = s.tasks.iter().map(|t| t.tgid).collect();
            l.retain(&|tgid| alive.contains(&tgid));
        }
        if self.system_io {
            self.read_system_io(&mut s);
        }
        if opts.cgroup && opts.cgroup_tree {
            self.read_cgroups(&mut s);
        }
        Ok(s)
    }

    /// The cgroups of the snapshot's processes and their ancestors into `s` (none when there
    /// is no cgroup v2 hierarchy, or on a fake tree).
    fn read_cgroups(&mut self, s: &mut Snapshot) {
        let root = self.cgroup_root.get_or_insert_with(|| {
            if self.root != Path::new("/proc") {
                return None;
            }
            let mi = fs::read_to_string("/proc/self/mountinfo").ok()?;
            CgroupReader::open(&crate::cgroups::cgroup2_mount(&mi)?)
        });
        if let Some(r) = root.as_mut() {
            s.cgroups = Some(r.read_tree(s.tasks.iter().filter_map(|t| t.cgroup.as_deref())));
        }
    }

    /// Attach an `--irq-time` state to a snapshot (convenience for callers).
    pub fn attach_irq_time(s: &mut Snapshot, it: Option<IrqTimeRaw>) {
        s.irq_time = it;
    }

    /// The processes; `forks` is the fork count of this snapshot's /proc/stat.
    fn scan_tasks(&mut self, opts: &ScanOptions, forks: u64) -> Result<Vec<TaskRaw>, ProcError> {
        let skipping = self.idle_skip != IdleSkip::Off;
        let pids = match self.listed.take() {
            // No fork since the last listing: no process can have appeared.
            Some((f, pids)) if skipping && f == forks => pids,
            _ => {
                let listed = match &self.root_fd {
                    Ok(fd) => list_numeric(fd, &mut self.dirbuf, &mut self.pids),
                    Err(kind) => Err((*kind).into()),
                };
                listed.map_err(|source| ProcError::Read {
                    path: self.root.clone(),
                    source,
                })?;
                self.counts.listed = true;
                std::mem::take(&mut self.pids)
            }
        };
        let same_opts = self.last_opts.as_ref() == Some(opts);
        let mut out = Vec::with_capacity(pids.len());
        for &pid in &pids {
            self.path.clear();
            let _ = write!(self.path, "{pid}");
            // A task that vanished since the listing is skipped.
            let t = if skipping {
                self.read_process_unless_idle(pid, opts, same_opts)
            } else {
                self.read_task(pid, pid, 0, opts)
            };
            if let Some(t) = t {
                out.push(t);
            }
        }
        if skipping {
            // Gone processes drop out of the list (a listing would not show them either).
            let mut seen = pids;
            seen.clear();
            seen.extend(out.iter().map(|t| t.pid));
            self.listed = Some((forks, seen));
        } else {
            self.pids = pids;
        }
        Ok(out)
    }

    /// Descriptors held for the next scan.
    fn held_fds(&self) -> usize {
        self.stat_fds_next[0].len() + self.stat_fds_next[1].len() + self.idle_next.len()
    }

    /// Read process `pid` (directory in `self.path`), or keep its last record when it did not
    /// run since the previous scan (see [`IdleSkip`]). `same_opts`: the previous scan asked
    /// for the same files, so a kept record holds what this one asks for.
    fn read_process_unless_idle(
        &mut self,
        pid: u32,
        opts: &ScanOptions,
        same_opts: bool,
    ) -> Option<TaskRaw> {
        // schedstat through the held descriptor: an error means the process is gone (or the
        // pid names another one), and its record with it.
        let mut prev = self.idle.remove(&pid);
        let mut now = prev.as_ref().and_then(|p| {
            let n = pread_all(&p.sched, &mut self.buf).ok()?;
            parse::parse_schedstat(&self.buf[..n])
        });
        if now.is_none() {
            prev = None;
        }
        let mut fresh = None;
        if prev.is_none() {
            if let Some(fd) = self.open_task_file("schedstat") {
                now = pread_all(&fd, &mut self.buf)
                    .ok()
                    .and_then(|n| parse::parse_schedstat(&self.buf[..n]));
                fresh = Some(fd);
            }
        }
        let due = match self.idle_skip {
            IdleSkip::Every(n) if n > 0 => {
                (self.generation + u64::from(pid)).is_multiple_of(u64::from(n))
            }
            IdleSkip::Every(_) => true,
            IdleSkip::Off => true,
            IdleSkip::UntilRun => false,
        };
        if let (Some(p), Some(now)) = (prev.as_ref(), now) {
            // A count of 0 means the kernel does not keep it (or the process never ran):
            // nothing tells that it did not run.
            let idle = now == p.last && now.1 > 0 && p.raw.num_threads <= 1;
            if idle && same_opts && !due && !self.always.contains(&pid) {
                if let Some(fd) = self.stat_fds[0].remove(&pid) {
                    self.stat_fds_next[0].insert(pid, fd);
                }
                let mut t = self.spare.pop().unwrap_or_default();
                t.clone_from(&p.raw);
                if let Some(uid) = t.uid {
                    self.owners_next.insert((pid, t.start_time), uid);
                }
                self.counts.kept += 1;
                if let Some(p) = prev {
                    self.idle_next.insert(pid, p);
                }
                return Some(t);
            }
        }
        let t = self.read_task(pid, pid, 0, opts)?;
        let Some(now) = now else {
            return Some(t);
        };
        let held = match prev {
            Some(mut p) => {
                p.last = now;
                p.raw.clone_from(&t);
                Some(p)
            }
            None => match fresh {
                Some(sched) if self.held_fds() < self.fd_budget => Some(Held {
                    sched,
                    last: now,
                    raw: t.clone(),
                }),
                _ => None,
            },
        };
        if let Some(h) = held {
            self.idle_next.insert(pid, h);
        }
        Some(t)
    }

    /// Once, at the first snapshot with exit accounting: the threads of each process that
    /// ended before hood began to listen are in the process's /proc times and in no exit
    /// report, so they are counted as its times less its live threads' and handed to the
    /// listener as the start of the process's sum of ended threads. Without them a process
    /// older than hood that ends while hood runs would show less than it used in its last
    /// interval. One read of every thread's `stat`, at the start only: processes started
    /// later have every ended thread reported.
    fn seed_ended_threads(&mut self, tasks: &[TaskRaw], opts: &ScanOptions) {
        let hz = self.clk_tck.max(1);
        let us = |ticks: u64| ticks.saturating_mul(1_000_000) / hz;
        let mut threads = Vec::new();
        let mut seeds = Vec::new();
        for t in tasks {
            // No CPU time at all: no ended thread had any either (most kernel threads and
            // idle daemons), so its threads need not be read.
            if t.utime.saturating_add(t.stime) == 0 {
                continue;
            }
            threads.clear();
            self.scan_threads(t.pid, opts, &mut threads);
            if threads.is_empty() {
                continue;
            }
            let (u, k) = threads.iter().fold((0u64, 0u64), |(u, k), th| {
                (u.saturating_add(th.utime), k.saturating_add(th.stime))
            });
            let dead = t
                .utime
                .saturating_add(t.stime)
                .saturating_sub(u.saturating_add(k));
            if dead > 0 {
                let user = t.utime.saturating_sub(u).min(dead);
                seeds.push((t.tgid, us(user), us(dead - user)));
            }
        }
        if let Some(Ok(l)) = self.exits.as_mut() {
            for (tgid, user_us, kernel_us) in seeds {
                l.seed(tgid, user_us, kernel_us);
            }
        }
    }

    fn scan_threads(&mut self, pid: u32, opts: &ScanOptions, out: &mut Vec<TaskRaw>) {
        let Ok(root) = &self.root_fd else { return };
        let dir = match open_at(root, &format!("{pid}/task")) {
            Ok(d) => d,
            Err(_) => return, // vanished or unreadable: no threads
        };
        if list_numeric(&dir, &mut self.dirbuf, &mut self.pids).is_err() {
            return;
        }
        let tids = std::mem::take(&mut self.pids);
        for &tid in &tids {
            self.path.clear();
            let _ = write!(self.path, "{pid}/task/{tid}");
            if let Some(t) = self.read_task(tid, pid, 1, opts) {
                out.push(t);
            }
        }
        self.pids = tids;
    }

    /// Read the `stat` of task `id` (directory in `self.path`) into `self.buf`, through its
    /// held descriptor when there is one (`kind` 0: processes, 1: threads). Returns the length.
    fn read_stat(&mut self, id: u32, kind: usize) -> Option<usize> {
        if let Some(fd) = self.stat_fds[kind].remove(&id) {
            if let Ok(n) = pread_all(&fd, &mut self.buf) {
                if n > 0 {
                    self.stat_fds_next[kind].insert(id, fd);
                    return Some(n);
                }
            }
            // Gone (ESRCH), or the pid now names another task: open afresh below.
        }
        let fd = self.open_task_file("stat")?;
        let n = pread_all(&fd, &mut self.buf).ok()?;
        if self.held_fds() < self.fd_budget {
            self.stat_fds_next[kind].insert(id, fd);
        }
        Some(n)
    }

    /// Open the per-task file `name` of the task whose directory is in `self.path`.
    fn open_task_file(&mut self, name: &str) -> Option<OwnedFd> {
        let dir_len = self.path.len();
        self.path.push('/');
        self.path.push_str(name);
        let fd = self
            .root_fd
            .as_ref()
            .ok()
            .and_then(|r| open_at(r, &self.path).ok());
        self.path.truncate(dir_len);
        fd
    }

    /// Read an optional per-task file `name` of the task whose directory is in `self.path`.
    fn read_task_file(&mut self, name: &str) -> Option<usize> {
        let fd = self.open_task_file(name)?;
        pread_all(&fd, &mut self.buf).ok()
    }

    /// Read one task whose directory (relative to the root) is in `self.path`. `None` when it
    /// vanished or its stat is unreadable or malformed.
    fn read_task(
        &mut self,
        id: u32,
        tgid: u32,
        kind: usize,
        opts: &ScanOptions,
    ) -> Option<TaskRaw> {
        let n = self.read_stat(id, kind)?;
        let mut t = self.spare.pop().unwrap_or_default();
        if parse::parse_stat(&self.buf[..n], &mut t).is_none() {
            self.spare.push(t);
            return None;
        }
        if kind == 0 {
            self.counts.stat_read += 1;
        }
        t.pid = id;
        t.tgid = tgid;
        t.uid = None;
        t.ctx = None;
        t.io = None;
        t.cmdline = None;
        if !opts.cgroup {
            t.cgroup = None;
        }
        if !(opts.status || opts.owner) {
            t.user = None;
        }
        if opts.status {
            if let Some(n) = self.read_task_file("status") {
                let st = parse::parse_status(&String::from_utf8_lossy(&self.buf[..n]));
                t.uid = st.uid;
                t.ctx = st.ctx;
            }
        }
        if opts.owner && t.uid.is_none() {
            let key = (id, t.start_time);
            t.uid = self.owners.get(&key).copied().or_else(|| {
                let root = self.root_fd.as_ref().ok()?;
                rustix::fs::statat(root, &self.path, AtFlags::empty())
                    .ok()
                    .map(|st| st.st_uid)
            });
        }
        if let Some(uid) = t.uid {
            self.owners_next.insert((id, t.start_time), uid);
        }
        if opts.io {
            // Other users' io is unreadable without privileges: show what is readable.
            if let Some(n) = self.read_task_file("io") {
                t.io = parse::parse_io(&String::from_utf8_lossy(&self.buf[..n]));
            }
        }
        if opts.cgroup {
            let n = self.read_task_file("cgroup");
            let text = n.map(|n| String::from_utf8_lossy(&self.buf[..n]));
            match (
                text.as_deref().and_then(crate::cgroups::parse_proc_cgroup),
                t.cgroup.as_mut(),
            ) {
                (Some(p), Some(c)) if c == p => {}
                (Some(p), Some(c)) => {
                    c.clear();
                    c.push_str(p);
                }
                (Some(p), None) => t.cgroup = Some(p.to_string()),
                (None, _) => t.cgroup = None,
            }
        }
        if opts.cmdline {
            if let Some(fd) = self.open_task_file("cmdline") {
                if let Ok((n, more)) = pread_bounded(&fd, &mut self.buf, CMDLINE_MAX) {
                    let mut args = parse::parse_cmdline(&self.buf[..n]);
                    if more {
                        // Cut: the last argument shown ends with an ellipsis, as ps cuts.
                        match args.last_mut() {
                            Some(last) => last.push('…'),
                            None => args.push("…".to_string()),
                        }
                    }
                    t.cmdline = Some(args);
                }
            }
        }
        Some(t)
    }

    /// uid → user name, read once.
    fn users_table(&mut self) -> &HashMap<u32, String> {
        self.users.get_or_insert_with(|| {
            fs::read_to_string(&self.passwd)
                .map(|t| parse::parse_passwd(&t).into_iter().collect())
                .unwrap_or_default()
        })
    }

    fn fill_users(&mut self, tasks: &mut [TaskRaw]) {
        let users = self.users_table();
        let mut num = String::new();
        for t in tasks {
            let Some(uid) = t.uid else {
                t.user = None;
                continue;
            };
            let name = match users.get(&uid) {
                Some(n) => n.as_str(),
                None => {
                    num.clear();
                    let _ = write!(num, "{uid}");
                    num.as_str()
                }
            };
            // Reuse a recycled record's buffer rather than allocating a name per task.
            match t.user.as_mut() {
                Some(u) if u == name => {}
                Some(u) => {
                    u.clear();
                    u.push_str(name);
                }
                None => t.user = Some(name.to_string()),
            }
        }
    }
}

impl Default for ProcReader {
    fn default() -> Self {
        Self::new()
    }
}
