//! The scrape's /proc reader: a full snapshot (as `hood top`'s) that skips re-reading
//! `/proc/PID/stat` of processes that provably did not change.
//!
//! `/proc/PID/stat` is the expensive file (the kernel walks the thread group and formats 52
//! fields); `/proc/PID/schedstat` is a few times cheaper and holds the main thread's time on
//! CPU and its count of times scheduled. A single-threaded process whose schedstat is
//! unchanged has not run since the last read, so its CPU times, state, thread count, name,
//! owner and command line are unchanged too (changing any of them takes running). Such a
//! process keeps its last stat record; every other process (multi-threaded, scheduled since,
//! new, or exported with per-process series) has its stat re-read. The only field that can go
//! stale is the resident size of a sleeping process (reclaim), which a scrape uses only to
//! order processes of equal CPU; exported processes are always re-read.
//!
//! Both descriptors of a process are held across scrapes and re-read with `pread` from offset
//! 0; a descriptor of a task that has gone reads as an error, and the pid is opened afresh.
//! At most `max_held` processes are held (the server's share of its file-descriptor limit,
//! so connections always find descriptors); the others are opened and read anew each scan.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use hood_model::monitor::{Snapshot, TaskRaw};
use hood_procfs::parse;

/// A process's held descriptors and its last record.
struct Entry {
    sched: File,
    stat: File,
    /// Last schedstat: (ns on CPU, times scheduled) of the main thread.
    last: (u64, u64),
    raw: TaskRaw,
    /// Scan generation that last saw it.
    seen: u64,
}

/// What a scan needs besides stat.
#[derive(Debug, Clone, Copy, Default)]
pub struct LeanNeeds {
    /// Owner uid and user name (for `--process-filter`).
    pub owner: bool,
    /// Command line (for `--process-filter`).
    pub cmdline: bool,
}

/// Counts of the last scan, for tests and measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeanCounts {
    /// Processes whose stat was read.
    pub stat_read: usize,
    /// Processes kept from the previous scan (schedstat unchanged).
    pub kept: usize,
    /// /proc was listed (some fork happened since the last listing).
    pub listed: bool,
}

/// The reader; keep one across scrapes.
pub struct LeanReader {
    entries: HashMap<u32, Entry>,
    buf: Vec<u8>,
    epoch: Instant,
    clk_tck: u64,
    page_size: u64,
    generation: u64,
    /// Most processes whose descriptors are held.
    max_held: usize,
    users: Option<HashMap<u32, String>>,
    /// Forks since boot at the last listing of /proc (`processes` of /proc/stat), and the pids
    /// listed: with no fork since, no process can have appeared, and the listing is skipped.
    listed: Option<(u64, Vec<u32>)>,
    /// Counts of the last scan.
    pub counts: LeanCounts,
}

/// `pread` the whole (small) file from offset 0 into `buf`; the length read.
fn pread(f: &File, buf: &mut Vec<u8>) -> io::Result<usize> {
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut len = 0;
    loop {
        let n = f.read_at(&mut buf[len..], len as u64)?;
        len += n;
        if n == 0 || len < buf.len() {
            return Ok(len);
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// `ns_on_cpu wait_ns times_scheduled` → (ns on CPU, times scheduled).
fn parse_schedstat(b: &[u8]) -> Option<(u64, u64)> {
    let s = std::str::from_utf8(b).ok()?;
    let mut it = s.split_ascii_whitespace();
    let run = it.next()?.parse().ok()?;
    let _wait = it.next()?;
    let count = it.next()?.parse().ok()?;
    Some((run, count))
}

/// Re-read the stat (and owner, command line) of `pid` into `raw`; false if it vanished.
fn read_stat(
    buf: &mut Vec<u8>,
    pid: u32,
    stat: &File,
    raw: &mut TaskRaw,
    needs: LeanNeeds,
) -> bool {
    let Ok(n) = pread(stat, buf) else {
        return false;
    };
    if n == 0 || parse::parse_stat(&buf[..n], raw).is_none() {
        return false;
    }
    raw.pid = pid;
    raw.tgid = pid;
    if needs.owner {
        raw.uid = std::fs::metadata(format!("/proc/{pid}"))
            .ok()
            .map(|m| m.uid());
    }
    if needs.cmdline {
        raw.cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .ok()
            .map(|b| parse::parse_cmdline(&b));
    }
    true
}

impl LeanReader {
    /// A reader; `clk_tck` and `page_size` as the system's (from a first full snapshot);
    /// holding the descriptors of at most `max_held` processes.
    pub fn new(clk_tck: u64, page_size: u64, max_held: usize) -> LeanReader {
        LeanReader {
            entries: HashMap::new(),
            buf: vec![0; 4096],
            epoch: Instant::now(),
            clk_tck,
            page_size,
            generation: 0,
            max_held,
            users: None,
            listed: None,
            counts: LeanCounts::default(),
        }
    }

    fn sys(&mut self, name: &str) -> io::Result<String> {
        std::fs::read_to_string(format!("/proc/{name}"))
    }

    /// Take a snapshot of the system and every process; `always` are re-read regardless
    /// (the exported processes).
    pub fn snapshot(&mut self, needs: LeanNeeds, always: &HashSet<u32>) -> io::Result<Snapshot> {
        self.generation += 1;
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
        s.uptime_s = parse::parse_uptime(&self.sys("uptime")?).unwrap_or(0.0);
        s.load = parse::parse_loadavg(&self.sys("loadavg")?).unwrap_or_default();
        let stat = parse::parse_proc_stat(&self.sys("stat")?);
        s.cpu_total = stat.total;
        s.cpus = stat.cpus;
        s.ctxt = stat.ctxt;
        s.forks = stat.processes;
        s.mem = parse::parse_meminfo(&self.sys("meminfo")?);
        if let Ok(t) = self.sys("interrupts") {
            s.interrupts = parse::parse_irq_table(&t);
        }
        if let Ok(t) = self.sys("softirqs") {
            s.softirqs = parse::parse_irq_table(&t);
        }
        self.counts = LeanCounts::default();
        let pids = match self.listed.take() {
            Some((forks, pids)) if forks == s.forks => pids,
            _ => {
                self.counts.listed = true;
                let mut pids: Vec<u32> = std::fs::read_dir("/proc")?
                    .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect();
                pids.sort_unstable();
                pids
            }
        };
        let mut tasks = Vec::with_capacity(pids.len());
        for &pid in &pids {
            if let Some(t) = self.task(pid, needs, always.contains(&pid)) {
                tasks.push(t);
            }
        }
        // Gone processes drop out of the list (a listing would not show them either).
        self.listed = Some((s.forks, tasks.iter().map(|t| t.pid).collect()));
        let generation = self.generation;
        self.entries.retain(|_, e| e.seen == generation);
        if needs.owner {
            self.fill_users(&mut tasks);
        }
        s.tasks = tasks;
        Ok(s)
    }

    /// The record of `pid`: kept when its schedstat is unchanged and it is single-threaded,
    /// else read. `None` when it vanished.
    fn task(&mut self, pid: u32, needs: LeanNeeds, always: bool) -> Option<TaskRaw> {
        let generation = self.generation;
        if let Some(e) = self.entries.get_mut(&pid) {
            let now = pread(&e.sched, &mut self.buf)
                .ok()
                .and_then(|n| parse_schedstat(&self.buf[..n]));
            if let Some(now) = now {
                let unchanged = now == e.last && e.raw.num_threads <= 1 && !always;
                if unchanged {
                    self.counts.kept += 1;
                }
                if unchanged || read_stat(&mut self.buf, pid, &e.stat, &mut e.raw, needs) {
                    if !unchanged {
                        self.counts.stat_read += 1;
                    }
                    e.last = now;
                    e.seen = generation;
                    return Some(e.raw.clone());
                }
            }
            // Gone, or the pid now names another process: open afresh.
            self.entries.remove(&pid);
        }
        let sched = File::open(format!("/proc/{pid}/schedstat")).ok()?;
        let stat = File::open(format!("/proc/{pid}/stat")).ok()?;
        let last = pread(&sched, &mut self.buf)
            .ok()
            .and_then(|n| parse_schedstat(&self.buf[..n]))?;
        let mut raw = TaskRaw::default();
        if !read_stat(&mut self.buf, pid, &stat, &mut raw, needs) {
            return None;
        }
        self.counts.stat_read += 1;
        if self.entries.len() >= self.max_held {
            return Some(raw);
        }
        let t = raw.clone();
        self.entries.insert(
            pid,
            Entry {
                sched,
                stat,
                last,
                raw,
                seen: generation,
            },
        );
        Some(t)
    }

    fn fill_users(&mut self, tasks: &mut [TaskRaw]) {
        let users = self.users.get_or_insert_with(|| {
            std::fs::read_to_string("/etc/passwd")
                .map(|t| parse::parse_passwd(&t).into_iter().collect())
                .unwrap_or_default()
        });
        for t in tasks {
            t.user = t
                .uid
                .map(|u| users.get(&u).cloned().unwrap_or_else(|| u.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_fields() {
        assert_eq!(
            parse_schedstat(b"195255049 25843476 641\n"),
            Some((195255049, 641))
        );
        assert_eq!(parse_schedstat(b"1 2"), None);
        assert_eq!(parse_schedstat(b""), None);
    }

    /// A sleeping child is kept (not re-read) once seen, unless asked for; a busy one is
    /// re-read every time; the records agree with a full read.
    #[test]
    fn sleepers_are_kept_and_runners_reread() {
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let spid = sleeper.id();
        let mut r = LeanReader::new(100, 4096, usize::MAX);
        let none = HashSet::new();
        let first = r.snapshot(LeanNeeds::default(), &none).unwrap();
        assert!(first.tasks.iter().any(|t| t.pid == spid));
        assert_eq!(r.counts.kept, 0);
        // Let the child settle into its sleep, then scan twice: the second keeps it.
        std::thread::sleep(std::time::Duration::from_millis(100));
        r.snapshot(LeanNeeds::default(), &none).unwrap();
        let s = r.snapshot(LeanNeeds::default(), &none).unwrap();
        let t = s.tasks.iter().find(|t| t.pid == spid).expect("sleeper");
        assert_eq!(t.name, "sleep");
        assert_eq!(t.state, 'S');
        assert!(r.counts.kept > 0, "{:?}", r.counts);
        // Asked for, it is re-read (and still right).
        let s = r
            .snapshot(LeanNeeds::default(), &HashSet::from([spid]))
            .unwrap();
        let t = s.tasks.iter().find(|t| t.pid == spid).expect("sleeper");
        assert_eq!((t.name.as_str(), t.state), ("sleep", 'S'));
        // Our own process is multi-threaded (the test harness) or running: always read.
        let me = std::process::id();
        assert!(s.tasks.iter().any(|t| t.pid == me));
        // A process started since is listed (a fork changes /proc/stat's `processes`).
        let mut late = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let s = r.snapshot(LeanNeeds::default(), &none).unwrap();
        assert!(r.counts.listed);
        assert!(s.tasks.iter().any(|t| t.pid == late.id()));
        late.kill().unwrap();
        late.wait().unwrap();
        // A killed sleeper disappears.
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        let s = r.snapshot(LeanNeeds::default(), &none).unwrap();
        assert!(!s.tasks.iter().any(|t| t.pid == spid));
    }
}
