//! One process's state under /proc as the recorders read it: its mappings, name, threads,
//! owner, executable, environment and kernel-thread flag, the list of processes, and hood's
//! own mappings and `[vdso]` image. The monitor's
//! [`ProcReader`](crate::ProcReader) reads the same files for `hood top`; this is the door for
//! everyone else, so that no recorder parses /proc by hand.
//!
//! The files are written by the kernel but hold what users chose (a path, a name, an
//! environment): each is opened without following a symlink at its last component, read up
//! to a bound, and a process that ends while it is read gives `None`, never an error.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The longest line of /proc/PID/maps kept: its fields and a path of up to PATH_MAX bytes.
/// A longer line cannot come from the kernel; it is skipped.
const MAX_MAPS_LINE: usize = 4096 + 256;

/// The most bytes of one /proc/PID/maps read. The kernel writes that text as it is read, and a
/// process of a user's can make it a quarter of a gigabyte (65,530 mappings of 4 KiB paths),
/// which takes the kernel seconds to write (its cost grows with the bytes: long paths are
/// slow to name); 4 MiB holds 40,000 mappings of ordinary paths (about 100 bytes a line).
pub const MAX_MAPS_READ: u64 = 4 << 20;

/// The most bytes of /proc/PID/maps one recording reads over all its processes (its snapshot
/// at the start, processes found later, and the unwinder's re-reads), [`MapsBudget`]'s
/// default. A machine's ordinary processes take a few hundred KiB together (about 100 bytes
/// a line, tens of lines each); without it, a user's many processes, each at
/// [`MAX_MAPS_READ`], would cost root's recorder the kernel's time for every one of them.
pub const MAPS_READ_BUDGET: u64 = 32 << 20;

/// The executable lines of /proc/PID/maps the hook recorders keep per process (as many as a
/// profile's snapshot keeps): ordinary processes need a few hundred lines of ~100 bytes.
pub const MAX_EXEC_MAPS_BYTES: usize = 2 << 20;

/// The most bytes of /proc/PID/comm or a thread's comm read (the kernel's names have 16).
const MAX_COMM: u64 = 64;

/// The most bytes of the `[vdso]` image read (the kernel's is two pages).
const MAX_VDSO: u64 = 1 << 20;

fn open(path: &str) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

/// Up to `max` bytes of `/proc/{rel}`; `None` when it cannot be opened or read.
fn read_bounded(rel: &str, max: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    open(&format!("/proc/{rel}"))
        .ok()?
        .take(max)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// The numeric entries of a /proc directory (pids, or a process's tids), unsorted.
fn numeric_entries(dir: &str) -> Vec<u32> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Pids of the processes running now (unsorted).
pub fn pids() -> Vec<u32> {
    numeric_entries("/proc")
}

/// Tids of `pid`'s threads, in order; empty when it has ended.
pub fn tids(pid: u32) -> Vec<u32> {
    let mut t = numeric_entries(&format!("/proc/{pid}/task"));
    t.sort_unstable();
    t
}

fn comm_at(rel: &str) -> Option<String> {
    let b = read_bounded(rel, MAX_COMM)?;
    Some(String::from_utf8_lossy(&b).trim_end().to_string())
}

/// `pid`'s name (/proc/PID/comm, trailing newline left out); `None` when it has ended.
pub fn comm(pid: u32) -> Option<String> {
    comm_at(&format!("{pid}/comm"))
}

/// The name of thread `tid` of `pid`; `None` when it has ended.
pub fn thread_comm(pid: u32, tid: u32) -> Option<String> {
    comm_at(&format!("{pid}/task/{tid}/comm"))
}

/// The user `pid` runs as (the owner of /proc/PID); `None` when it has ended.
pub fn uid(pid: u32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|m| m.uid())
}

/// The executable of `pid` as the kernel names it (` (deleted)` when replaced); `None` when
/// it has ended or may not be read.
pub fn exe(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

/// `NAME`'s value in the environment `pid` started with (its first 1 MiB), when hood may
/// read it.
pub fn environ_var(pid: u32, name: &str) -> Option<String> {
    let env = read_bounded(&format!("{pid}/environ"), 1 << 20)?;
    env.split(|&b| b == 0).find_map(|kv| {
        let kv = std::str::from_utf8(kv).ok()?;
        kv.strip_prefix(name)?.strip_prefix('=').map(str::to_string)
    })
}

/// Whether `pid` is a kernel thread (PF_KTHREAD in /proc/PID/stat); `false` when it ended.
pub fn is_kernel_thread(pid: u32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Some(stat) = read_bounded(&format!("{pid}/stat"), 4096) else {
        return false;
    };
    // The name may hold spaces and parentheses: the fields go on after the last `)`.
    let stat = String::from_utf8_lossy(&stat);
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(6))
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|f| f & PF_KTHREAD != 0)
}

/// Pids of the kernel threads running now.
pub fn kernel_threads() -> Vec<u32> {
    pids()
        .into_iter()
        .filter(|&p| is_kernel_thread(p))
        .collect()
}

/// How many processes whose maps were cut short for want of budget are named in
/// [`MapsBudget::take_note`]; the rest are counted.
const NAMED_SHORT: usize = 3;

/// What one recording may still read of /proc/PID/maps, shared by every reader of the run
/// (clones share it): each read is bounded by [`MAX_MAPS_READ`] and by what is left, and
/// what it read is charged. A process whose maps were not read whole (too long, or the
/// budget spent) is not read again in the run: its later mappings come from the kernel's
/// records of mappings made while it is recorded.
#[derive(Debug, Clone)]
pub struct MapsBudget(Arc<Mutex<Spent>>);

#[derive(Debug, Default)]
struct Spent {
    left: u64,
    total: u64,
    /// Processes whose maps were read only in part, or not at all, for want of budget: the
    /// first few, and all of them.
    short_named: Vec<u32>,
    short: HashSet<u32>,
    /// Processes not to read again: their maps were not read whole.
    cut: HashSet<u32>,
    said: bool,
}

impl Default for MapsBudget {
    fn default() -> Self {
        MapsBudget::new(MAPS_READ_BUDGET)
    }
}

impl MapsBudget {
    /// A budget of `bytes` over all the reads that share it.
    pub fn new(bytes: u64) -> Self {
        MapsBudget(Arc::new(Mutex::new(Spent {
            left: bytes,
            total: bytes,
            ..Spent::default()
        })))
    }

    fn spent(&self) -> std::sync::MutexGuard<'_, Spent> {
        // A reader that panicked left only counts behind: they stay usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes read so far.
    pub fn used(&self) -> u64 {
        let s = self.spent();
        s.total - s.left
    }

    /// Processes read only in part, or not at all, for want of budget.
    pub fn short(&self) -> u64 {
        self.spent().short.len() as u64
    }

    /// Whether `pid`'s maps were cut short for want of budget (rather than for their own
    /// length).
    pub fn short_of(&self, pid: u32) -> bool {
        self.spent().short.contains(&pid)
    }

    /// The bound of the next read of `pid`: `None` when it is not to be read (cut before,
    /// or nothing left, which is counted).
    fn begin(&self, pid: u32) -> Option<u64> {
        let mut s = self.spent();
        if s.cut.contains(&pid) {
            return None;
        }
        if s.left == 0 {
            s.cut.insert(pid);
            s.note_short(pid);
            return None;
        }
        Some(s.left.min(MAX_MAPS_READ))
    }

    /// Charge a read of `pid` that took `bytes` of a bound of `limit`, whole or not.
    fn end(&self, pid: u32, limit: u64, bytes: u64, whole: bool) {
        let mut s = self.spent();
        s.left = s.left.saturating_sub(bytes);
        if !whole {
            s.cut.insert(pid);
            if limit < MAX_MAPS_READ {
                s.note_short(pid);
            }
        }
    }

    /// The exec lines of `pid`'s maps, as [`exec_maps_of`] reads them, within the budget:
    /// `None` when the process has ended; empty and `unread` when it is not read (the budget
    /// is spent, or its maps were cut short before in this run).
    pub fn exec_maps(&self, pid: u32, max_bytes: usize) -> Option<ExecMaps> {
        let Some(limit) = self.begin(pid) else {
            // Gone, or there: a process that has ended is left out as an unread one would be.
            std::fs::metadata(format!("/proc/{pid}")).ok()?;
            return Some(ExecMaps {
                unread: true,
                ..ExecMaps::default()
            });
        };
        let (maps, read) = exec_maps_within(pid, max_bytes, limit)?;
        self.end(pid, limit, read, !maps.unread);
        Some(maps)
    }

    /// Each line of `pid`'s maps, as [`for_each_maps_line`] reads them, within the budget;
    /// `false` when it was not read (the process has ended, its maps were cut short before
    /// in this run, or the budget is spent).
    pub fn for_each_line(&self, pid: u32, f: impl FnMut(&str) -> bool) -> bool {
        let Some(limit) = self.begin(pid) else {
            return false;
        };
        match maps_lines_at(&format!("/proc/{pid}/maps"), limit, f) {
            Ok((whole, read)) => {
                self.end(pid, limit, read, whole);
                true
            }
            Err(_) => false,
        }
    }

    /// The one warning of a run whose budget cut some processes' maps short, naming the
    /// first few; `None` when none was, or once it was said.
    pub fn take_note(&self) -> Option<String> {
        let mut s = self.spent();
        let short = s.short.len();
        if short == 0 || s.said {
            return None;
        }
        s.said = true;
        let mut named: Vec<String> = s.short_named.iter().map(u32::to_string).collect();
        if short > named.len() {
            named.push(format!("{} more", short - named.len()));
        }
        Some(format!(
            "/proc/PID/maps of {} processes read only in part or not at all (pids {}): hood \
             reads at most {} of maps in one recording, and {} MiB per process; mappings \
             past that are known only if made while recorded, so samples in older ones stay \
             unnamed. Record the processes that matter with -p, or fewer at a time",
            short,
            named.join(", "),
            match s.total >= 1 << 20 {
                true => format!("{} MiB", s.total >> 20),
                false => format!("{} bytes", s.total),
            },
            MAX_MAPS_READ >> 20
        ))
    }
}

impl Spent {
    fn note_short(&mut self, pid: u32) {
        if self.short.insert(pid) && self.short_named.len() < NAMED_SHORT {
            self.short_named.push(pid);
        }
    }
}

/// Each line of `pid`'s /proc/PID/maps in turn (without its newline), read line by line: a
/// process can have 65,530 mappings of 4 KiB paths, a quarter of a gigabyte of text, and none
/// of it is held here; the lines past the first [`MAX_MAPS_READ`] bytes are not read. `f`
/// returns `false` to stop. An error when the file cannot be opened (the process has ended,
/// or hood may not read it).
pub fn for_each_maps_line(pid: u32, f: impl FnMut(&str) -> bool) -> std::io::Result<()> {
    maps_lines_at(&format!("/proc/{pid}/maps"), MAX_MAPS_READ, f).map(|_| ())
}

/// Each line of hood's own /proc/self/maps in turn, as [`for_each_maps_line`] reads a
/// process's (through `self`: hood's pid may be another in the pid namespace of /proc).
pub fn for_each_own_maps_line(f: impl FnMut(&str) -> bool) -> std::io::Result<()> {
    maps_lines_at("/proc/self/maps", MAX_MAPS_READ, f).map(|_| ())
}

/// The lines of the maps file at `path`, up to `limit` bytes, and the bytes the kernel
/// wrote for the read; `whole` (the first) `false` when lines past the limit were left
/// unread.
fn maps_lines_at(
    path: &str,
    limit: u64,
    mut f: impl FnMut(&str) -> bool,
) -> std::io::Result<(bool, u64)> {
    // One byte past the bound tells a file of exactly that size from a longer one. Large
    // reads (but not past the bound): fewer calls into the kernel, which finds its place in
    // the mappings on each.
    let buf = (128u64 << 10).min(limit + 1) as usize;
    let mut r = BufReader::with_capacity(buf, open(path)?.take(limit + 1));
    let mut line = Vec::new();
    let mut read = 0u64;
    let fetched = |r: &BufReader<std::io::Take<File>>| limit + 1 - r.get_ref().limit();
    loop {
        line.clear();
        match (&mut r)
            .take(MAX_MAPS_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return Ok((true, fetched(&r))),
            Ok(n) => read += n as u64,
        }
        if read > limit {
            // This line runs past the bound: it and the rest are not read.
            return Ok((false, fetched(&r)));
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_MAPS_LINE {
            // Not a line the kernel writes: skip to its end.
            read += r.skip_until(b'\n').unwrap_or(0) as u64;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if !f(text.trim_end_matches('\n')) {
            return Ok((true, fetched(&r)));
        }
    }
}

/// The executable lines of `pid`'s /proc/PID/maps, as many as fit in `max_bytes`, and how
/// many executable lines did not fit; `None` when it cannot be read (the process has ended).
pub fn exec_maps(pid: u32, max_bytes: usize) -> Option<(String, u64)> {
    exec_maps_of(pid, max_bytes).map(|m| (m.text, m.dropped))
}

/// What [`exec_maps_of`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecMaps {
    /// The executable lines kept, each with its newline.
    pub text: String,
    /// Executable lines read that did not fit.
    pub dropped: u64,
    /// The file was longer than [`MAX_MAPS_READ`]: its lines past that were not read, and
    /// executable ones among them are not counted in `dropped`.
    pub unread: bool,
}

/// [`exec_maps`], saying also whether the file was read to its end.
pub fn exec_maps_of(pid: u32, max_bytes: usize) -> Option<ExecMaps> {
    exec_maps_within(pid, max_bytes, MAX_MAPS_READ).map(|(m, _)| m)
}

/// [`exec_maps_of`] reading at most `limit` bytes of the file, and the bytes read.
fn exec_maps_within(pid: u32, max_bytes: usize, limit: u64) -> Option<(ExecMaps, u64)> {
    let mut out = ExecMaps::default();
    let (whole, read) = maps_lines_at(&format!("/proc/{pid}/maps"), limit, |text| {
        if hood_raw::maps::parse_maps_line(text).is_some_and(|m| m.is_exec()) {
            if out.text.len() + text.len() < max_bytes {
                out.text.push_str(text);
                out.text.push('\n');
            } else {
                out.dropped += 1;
            }
        }
        true
    })
    .ok()?;
    out.unread = !whole;
    Some((out, read))
}

/// The `[vdso]` ELF image of hood's own process (the same for every process on this
/// kernel), read from /proc/self/mem; `None` without one, or one larger than 1 MiB.
pub fn own_vdso() -> Option<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut range = None;
    for_each_own_maps_line(|l| match hood_raw::maps::parse_maps_line(l) {
        Some(m) if m.path == "[vdso]" => {
            range = Some((m.start, m.end));
            false
        }
        _ => true,
    })
    .ok()?;
    let (start, end) = range?;
    let len = end - start;
    if len > MAX_VDSO {
        return None;
    }
    let mut mem = open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = vec![0u8; len as usize];
    mem.read_exact(&mut buf).ok()?;
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29's 4 x 30,000 long mappings, in small: one budget over a run's reads is
    /// spent as they read, a process past it is read in part or not at all and not again,
    /// each counted, and said once naming them.
    #[test]
    fn the_maps_budget_of_a_run_is_enforced_and_counted() {
        let mut kids: Vec<std::process::Child> = (0..4)
            .map(|_| {
                std::process::Command::new("sleep")
                    .arg("60")
                    .spawn()
                    .unwrap()
            })
            .collect();
        let pids: Vec<u32> = kids.iter().map(|k| k.id()).collect();
        // The kernel writes a process's maps at its exec: wait for all four.
        let size = |pid: u32| {
            let (mut n, mut whole) = (0u64, false);
            for _ in 0..100 {
                let mut text = Vec::new();
                open(&format!("/proc/{pid}/maps"))
                    .unwrap()
                    .read_to_end(&mut text)
                    .unwrap();
                whole = String::from_utf8_lossy(&text).contains("sleep");
                n = text.len() as u64;
                if whole {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            assert!(whole, "pid {pid} did not exec sleep");
            n
        };
        let sizes: Vec<u64> = pids.iter().map(|&p| size(p)).collect();
        // Room for the first whole and half the second.
        let budget = MapsBudget::new(sizes[0] + sizes[1] / 2);
        let first = budget.exec_maps(pids[0], 1 << 20).unwrap();
        assert!(!first.unread && !first.text.is_empty(), "{first:?}");
        assert!(!budget.short_of(pids[0]));
        let second = budget.exec_maps(pids[1], 1 << 20).unwrap();
        assert!(second.unread, "{second:?}");
        let third = budget.exec_maps(pids[2], 1 << 20).unwrap();
        assert!(third.unread && third.text.is_empty(), "{third:?}");
        // The unwinder's re-read of a process cut short reads nothing more, and neither
        // does a first read once the budget is spent.
        let mut lines = 0;
        assert!(!budget.for_each_line(pids[1], |_| {
            lines += 1;
            true
        }));
        assert!(!budget.for_each_line(pids[3], |_| {
            lines += 1;
            true
        }));
        assert_eq!(lines, 0);
        // Spent to the byte (the kernel's text of one read may pass its bound by the byte
        // that tells a longer file), counted per process.
        assert!(
            budget.used() >= sizes[0] + sizes[1] / 2,
            "{}",
            budget.used()
        );
        assert!(
            budget.used() <= sizes[0] + sizes[1] / 2 + 1,
            "{}",
            budget.used()
        );
        assert_eq!(budget.short(), 3);
        assert!(pids[1..].iter().all(|&p| budget.short_of(p)));
        // Said once, naming them.
        let note = budget.take_note().expect("a note");
        assert!(
            note.contains("of 3 processes")
                && note.contains(&format!("pids {}, {}, {}", pids[1], pids[2], pids[3]))
                && note.contains(&format!(
                    "at most {} bytes of maps",
                    sizes[0] + sizes[1] / 2
                ))
                && note.contains("with -p"),
            "{note}"
        );
        assert_eq!(budget.take_note(), None);
        // A clone is the same budget.
        assert_eq!(budget.clone().short(), 3);
        for k in &mut kids {
            let _ = k.kill();
            let _ = k.wait();
        }
        // A run within its budget says nothing.
        let whole = MapsBudget::default();
        assert!(whole.exec_maps(std::process::id(), 1 << 20).is_some());
        assert_eq!(whole.short(), 0);
        assert_eq!(whole.take_note(), None);
    }

    /// This test's own process: its maps hold its executable, its name and threads are
    /// read, and a pid that does not exist gives nothing.
    #[test]
    fn reads_this_process_and_nothing_of_a_missing_one() {
        let me = std::process::id();
        let me_exe = std::env::current_exe().unwrap();
        let (maps, dropped) = exec_maps(me, 2 << 20).unwrap();
        assert_eq!(dropped, 0);
        assert!(
            maps.lines().any(|l| l.ends_with(me_exe.to_str().unwrap())),
            "{maps}"
        );
        let (small, dropped) = exec_maps(me, 1).unwrap();
        assert!(small.is_empty() && dropped > 0);
        assert!(tids(me).contains(&me));
        assert_eq!(thread_comm(me, me), comm(me));
        assert!(comm(me).is_some_and(|c| !c.is_empty() && !c.ends_with('\n')));
        assert!(pids().contains(&me));
        assert_eq!(exe(me).as_deref(), Some(me_exe.as_path()));
        assert!(!is_kernel_thread(me));
        assert_eq!(uid(me), Some(rustix::process::geteuid().as_raw()));
        let mut own = 0;
        for_each_own_maps_line(|l| {
            own += usize::from(l.ends_with(me_exe.to_str().unwrap()));
            true
        })
        .unwrap();
        assert!(own > 0);
        // An ELF image, the size of its mapping.
        let vdso = own_vdso().unwrap();
        assert!(
            vdso.starts_with(b"\x7fELF") && vdso.len().is_multiple_of(4096),
            "{}",
            vdso.len()
        );
        // Pids stop at the kernel's pid_max (at most 2^22).
        let gone = u32::MAX - 1;
        assert_eq!(comm(gone), None);
        assert_eq!(uid(gone), None);
        assert_eq!(exec_maps(gone, 1 << 20), None);
        assert!(tids(gone).is_empty());
        assert!(for_each_maps_line(gone, |_| true).is_err());
    }

    /// kthreadd, the parent of every kernel thread, is one; this process is not.
    #[test]
    fn kthreadd_is_a_kernel_thread() {
        let k = kernel_threads();
        let kthreadd = pids()
            .into_iter()
            .find(|&p| comm(p).as_deref() == Some("kthreadd"));
        match kthreadd {
            Some(p) => assert!(k.contains(&p), "{p} not in {k:?}"),
            // A pid namespace of its own (a container) shows no kernel thread.
            None => assert!(k.is_empty(), "{k:?}"),
        }
        assert!(!k.contains(&std::process::id()));
    }
}
