//! The snapshot reader.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hood_model::monitor::{IrqTimeRaw, ScanOptions, Snapshot, TaskRaw};

use crate::parse;
use crate::ProcError;

/// Reads snapshots from a procfs root (normally `/proc`). Keep one reader alive across
/// refreshes: it reuses its buffers and its uid → name table.
#[derive(Debug)]
pub struct ProcReader {
    root: PathBuf,
    passwd: PathBuf,
    users: Option<HashMap<u32, String>>,
    epoch: Instant,
    buf: Vec<u8>,
    path: String,
    pids: Vec<u32>,
    /// Owner uid per (pid, start time) from the previous scan: a process's owner is looked up
    /// once, not at every refresh.
    owners: HashMap<(u32, u64), u32>,
    owners_next: HashMap<(u32, u64), u32>,
    clk_tck: u64,
    page_size: u64,
}

/// Read a whole file into `buf` (cleared first). Per-task /proc files produce their whole
/// content in the first `read` when it fits, so a short read ends it.
fn read_file(path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    let mut f = File::open(path)?;
    if buf.capacity() < 4096 {
        buf.reserve(4096);
    }
    loop {
        let len = buf.len();
        let spare = buf.capacity() - len;
        if spare == 0 {
            buf.reserve(len.max(4096));
            continue;
        }
        buf.resize(len + spare, 0);
        let n = match f.read(&mut buf[len..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(e) => {
                buf.truncate(len);
                return Err(e);
            }
        };
        buf.truncate(len + n);
        if n == 0 || n < spare {
            return Ok(());
        }
    }
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
        let mut buf = Vec::with_capacity(4096);
        let auxv = root.join("self/auxv");
        let (hz, page) = match read_file(&auxv.to_string_lossy(), &mut buf) {
            Ok(()) => parse::parse_auxv(&buf),
            Err(_) => (None, None),
        };
        ProcReader {
            root,
            passwd: PathBuf::from("/etc/passwd"),
            users: None,
            epoch: Instant::now(),
            buf,
            path: String::with_capacity(64),
            pids: Vec::new(),
            owners: HashMap::new(),
            owners_next: HashMap::new(),
            clk_tck: hz.unwrap_or(100),
            page_size: page.unwrap_or(4096),
        }
    }

    /// Use another passwd file for uid → name.
    pub fn with_passwd(mut self, path: impl Into<PathBuf>) -> Self {
        self.passwd = path.into();
        self.users = None;
        self
    }

    /// The procfs root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn sys_file(&mut self, name: &str) -> Result<String, ProcError> {
        let path = self.root.join(name);
        fs::read_to_string(&path).map_err(|source| ProcError::Read { path, source })
    }

    /// Take one snapshot. `irq_time` is attached as given (the tracer lives elsewhere).
    pub fn snapshot(&mut self, opts: &ScanOptions) -> Result<Snapshot, ProcError> {
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
            if let Ok(info) = fs::read_to_string(self.root.join("cpuinfo")) {
                for (id, mhz) in parse::parse_cpuinfo_mhz(&info) {
                    if let Some(c) = s.cpus.iter_mut().find(|c| c.id == id) {
                        c.mhz = Some(mhz);
                    }
                }
            }
        }
        if opts.exceptions {
            // Optional files: a kernel without them just shows none.
            if let Ok(t) = fs::read_to_string(self.root.join("interrupts")) {
                s.interrupts = parse::parse_irq_table(&t);
            }
            if let Ok(t) = fs::read_to_string(self.root.join("softirqs")) {
                s.softirqs = parse::parse_irq_table(&t);
            }
        }
        self.owners_next.clear();
        s.tasks = self.scan_tasks(opts)?;
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
        std::mem::swap(&mut self.owners, &mut self.owners_next);
        if opts.status || opts.owner {
            self.fill_users(&mut s.tasks);
            if let Some(th) = s.threads.as_mut() {
                self.fill_users(th);
            }
        }
        Ok(s)
    }

    /// Attach an `--irq-time` state to a snapshot (convenience for callers).
    pub fn attach_irq_time(s: &mut Snapshot, it: Option<IrqTimeRaw>) {
        s.irq_time = it;
    }

    fn list_numeric(&mut self, dir: &Path) -> io::Result<()> {
        self.pids.clear();
        for e in fs::read_dir(dir)? {
            let Ok(e) = e else { continue };
            if let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
                self.pids.push(pid);
            }
        }
        self.pids.sort_unstable();
        Ok(())
    }

    fn scan_tasks(&mut self, opts: &ScanOptions) -> Result<Vec<TaskRaw>, ProcError> {
        let root = self.root.clone();
        self.list_numeric(&root).map_err(|source| ProcError::Read {
            path: root.clone(),
            source,
        })?;
        let pids = std::mem::take(&mut self.pids);
        let mut out = Vec::with_capacity(pids.len());
        let base = root.to_string_lossy().into_owned();
        for &pid in &pids {
            self.path.clear();
            let _ = write!(self.path, "{base}/{pid}");
            // A task that vanished since the listing is skipped.
            if let Some(t) = self.read_task(pid, pid, opts) {
                out.push(t);
            }
        }
        self.pids = pids;
        Ok(out)
    }

    fn scan_threads(&mut self, pid: u32, opts: &ScanOptions, out: &mut Vec<TaskRaw>) {
        let dir = self.root.join(pid.to_string()).join("task");
        if self.list_numeric(&dir).is_err() {
            return; // vanished or unreadable: no threads
        }
        let tids = std::mem::take(&mut self.pids);
        let base = dir.to_string_lossy().into_owned();
        for &tid in &tids {
            self.path.clear();
            let _ = write!(self.path, "{base}/{tid}");
            if let Some(t) = self.read_task(tid, pid, opts) {
                out.push(t);
            }
        }
        self.pids = tids;
    }

    /// Read one task whose directory is in `self.path`. `None` when it vanished or its stat
    /// is unreadable or malformed.
    fn read_task(&mut self, id: u32, tgid: u32, opts: &ScanOptions) -> Option<TaskRaw> {
        let dir_len = self.path.len();
        let mut t = TaskRaw {
            tgid,
            ..TaskRaw::default()
        };
        self.path.push_str("/stat");
        read_file(&self.path, &mut self.buf).ok()?;
        parse::parse_stat(&self.buf, &mut t)?;
        t.pid = id;
        if opts.status {
            self.path.truncate(dir_len);
            self.path.push_str("/status");
            if read_file(&self.path, &mut self.buf).is_ok() {
                let st = parse::parse_status(&String::from_utf8_lossy(&self.buf));
                t.uid = st.uid;
                t.ctx = st.ctx;
            }
        }
        if opts.owner && t.uid.is_none() {
            let key = (id, t.start_time);
            t.uid = self.owners.get(&key).copied().or_else(|| {
                self.path.truncate(dir_len);
                fs::metadata(&self.path).ok().map(|m| m.uid())
            });
        }
        if let Some(uid) = t.uid {
            self.owners_next.insert((id, t.start_time), uid);
        }
        if opts.io {
            self.path.truncate(dir_len);
            self.path.push_str("/io");
            // Other users' io is unreadable without privileges: show what is readable.
            if read_file(&self.path, &mut self.buf).is_ok() {
                t.io = parse::parse_io(&String::from_utf8_lossy(&self.buf));
            }
        }
        if opts.cmdline {
            self.path.truncate(dir_len);
            self.path.push_str("/cmdline");
            if read_file(&self.path, &mut self.buf).is_ok() {
                t.cmdline = Some(parse::parse_cmdline(&self.buf));
            }
        }
        self.path.truncate(dir_len);
        Some(t)
    }

    fn fill_users(&mut self, tasks: &mut [TaskRaw]) {
        let users = self.users.get_or_insert_with(|| {
            fs::read_to_string(&self.passwd)
                .map(|t| parse::parse_passwd(&t).into_iter().collect())
                .unwrap_or_default()
        });
        for t in tasks {
            if let Some(uid) = t.uid {
                t.user = Some(users.get(&uid).cloned().unwrap_or_else(|| uid.to_string()));
            }
        }
    }
}

impl Default for ProcReader {
    fn default() -> Self {
        Self::new()
    }
}
