//! One process's state under /proc as the recorders read it: its mappings, name, threads,
//! owner, executable, environment and kernel-thread flag, the list of processes, and hood's
//! own mappings and `[vdso]` image. The monitor's
//! [`ProcReader`](crate::ProcReader) reads the same files for `hood top`; this is the door for
//! everyone else, so that no recorder parses /proc by hand.
//!
//! The files are written by the kernel but hold what users chose (a path, a name, an
//! environment): each is opened without following a symlink at its last component, read up
//! to a bound, and a process that ends while it is read gives `None`, never an error.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// The longest line of /proc/PID/maps kept: its fields and a path of up to PATH_MAX bytes.
/// A longer line cannot come from the kernel; it is skipped.
const MAX_MAPS_LINE: usize = 4096 + 256;

/// The most bytes of one /proc/PID/maps read. The kernel writes that text as it is read, and a
/// process of a user's can make it a quarter of a gigabyte (65,530 mappings of 4 KiB paths),
/// which takes the kernel seconds to write (its cost grows with the bytes: long paths are
/// slow to name); 4 MiB holds 40,000 mappings of ordinary paths (about 100 bytes a line).
pub const MAX_MAPS_READ: u64 = 4 << 20;

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

/// Each line of `pid`'s /proc/PID/maps in turn (without its newline), read line by line: a
/// process can have 65,530 mappings of 4 KiB paths, a quarter of a gigabyte of text, and none
/// of it is held here; the lines past the first [`MAX_MAPS_READ`] bytes are not read. `f`
/// returns `false` to stop. An error when the file cannot be opened (the process has ended,
/// or hood may not read it).
pub fn for_each_maps_line(pid: u32, f: impl FnMut(&str) -> bool) -> std::io::Result<()> {
    maps_lines_at(&format!("/proc/{pid}/maps"), f).map(|_| ())
}

/// Each line of hood's own /proc/self/maps in turn, as [`for_each_maps_line`] reads a
/// process's (through `self`: hood's pid may be another in the pid namespace of /proc).
pub fn for_each_own_maps_line(f: impl FnMut(&str) -> bool) -> std::io::Result<()> {
    maps_lines_at("/proc/self/maps", f).map(|_| ())
}

/// The lines of the maps file at `path`, up to [`MAX_MAPS_READ`] bytes; `Ok(false)` when
/// lines past that were left unread.
fn maps_lines_at(path: &str, mut f: impl FnMut(&str) -> bool) -> std::io::Result<bool> {
    // One byte past the bound tells a file of exactly that size from a longer one. Large
    // reads: fewer calls into the kernel, which finds its place in the mappings on each.
    let mut r = BufReader::with_capacity(128 << 10, open(path)?.take(MAX_MAPS_READ + 1));
    let mut line = Vec::new();
    let mut read = 0u64;
    loop {
        line.clear();
        match (&mut r)
            .take(MAX_MAPS_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return Ok(true),
            Ok(n) => read += n as u64,
        }
        if read > MAX_MAPS_READ {
            // This line runs past the bound: it and the rest are not read.
            return Ok(false);
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_MAPS_LINE {
            // Not a line the kernel writes: skip to its end.
            read += r.skip_until(b'\n').unwrap_or(0) as u64;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if !f(text.trim_end_matches('\n')) {
            return Ok(true);
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
    let mut out = ExecMaps::default();
    let whole = maps_lines_at(&format!("/proc/{pid}/maps"), |text| {
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
    Some(out)
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
