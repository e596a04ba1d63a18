//! Pre-faulting the traced threads' event buffers from the recorder, on the other CPU.
//!
//! A fresh page of a /dev/shm buffer costs the traced program ~2.7 µs of CPU here when its hook
//! first writes it: ~1 µs for tmpfs to allocate and zero the page and ~1.5–2 µs for the page
//! fault that maps it (measured; fault-around does not apply to these faults). This thread
//! watches every thread's write position in the segment files and, ahead of it, faults the
//! next pages *into the traced process's page tables* by reading one byte of each page with
//! `process_vm_readv` (the kernel's remote read faults the page in the target's address space,
//! allocating it; the mapping is shared and writable, so the later writes take no fault). The
//! cost moves to the recorder's CPU; it is reported, not hidden. Where the kernel refuses the
//! remote read (another user's setuid program, ptrace restrictions) the recorder falls back to
//! `fallocate` on the segment file, which still takes the allocation off the traced program.
//!
//! How far ahead: the pages the thread would fill in the next ~20 ms at its observed rate,
//! between 256 KiB and 32 MiB, so idle threads cost little memory and busy ones rarely catch up.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hood_abi::{HeaderView, ThreadHeader, SEGMENT_PREFIX, STATE_EXITED, THREAD_HEADER_SIZE};

const PAGE: u64 = 4096;
const MIN_LEAD: u64 = 256 << 10;
const MAX_LEAD: u64 = 32 << 20;
/// Pages faulted per system call (IOV_MAX).
const BATCH: usize = 1024;
/// Look-ahead time the lead is sized for.
const LEAD_MS: u64 = 20;

/// What the pre-faulter did, for the recorder's summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Pages faulted into traced processes.
    pub pages: u64,
    /// Pages only allocated (`fallocate` fallback).
    pub allocated: u64,
}

/// The running pre-faulter; [`Prefaulter::stop`] ends it.
pub struct Prefaulter {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Stats>>,
}

impl Prefaulter {
    /// Start watching `dir` (the private segment directory) in a background thread.
    pub fn start(dir: &Path) -> Prefaulter {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let dir = dir.to_owned();
        let handle = std::thread::Builder::new()
            .name("hood-prefault".into())
            .spawn(move || run(&dir, &flag))
            .ok();
        Prefaulter { stop, handle }
    }

    /// Stop and return what was done.
    pub fn stop(mut self) -> Stats {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

/// One watched thread slot.
#[derive(Default)]
struct ThreadState {
    /// Segment-file offset up to which pages are faulted.
    done: u64,
    /// Write offset at the previous look, and when.
    last_off: u64,
    last_at: Option<Instant>,
    lead: u64,
}

/// One watched segment.
struct Seg {
    file: File,
    header: HeaderView,
    event_size: u64,
    pid: i32,
    /// Address of the segment's mapping in the traced process (None: use `fallocate`).
    base: Option<u64>,
    threads: Vec<ThreadState>,
}

fn run(dir: &Path, stop: &AtomicBool) -> Stats {
    let mut stats = Stats::default();
    let mut segs: HashMap<PathBuf, Option<Seg>> = HashMap::new();
    let mut last_scan: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        if last_scan.is_none_or(|t| t.elapsed() >= Duration::from_millis(10)) {
            scan(dir, &mut segs);
            last_scan = Some(Instant::now());
        }
        let mut busy = false;
        for seg in segs.values_mut() {
            let Some(s) = seg else { continue };
            match step(s, &mut stats) {
                Ok(moved) => busy |= moved,
                Err(()) => *seg = None,
            }
        }
        std::thread::sleep(Duration::from_millis(if busy { 1 } else { 5 }));
    }
    stats
}

/// Pick up new segments (a segment whose header or mapping is not ready yet is retried).
fn scan(dir: &Path, segs: &mut HashMap<PathBuf, Option<Seg>>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for ent in rd.flatten() {
        let path = ent.path();
        if segs.contains_key(&path)
            || !ent
                .file_name()
                .to_string_lossy()
                .starts_with(SEGMENT_PREFIX)
        {
            continue;
        }
        if let Some(s) = open(&path) {
            segs.insert(path, Some(s));
        }
    }
}

fn open(path: &Path) -> Option<Seg> {
    let file = File::open(path).ok()?;
    let mut head = vec![0u8; hood_abi::HEADER_AREA_SIZE as usize];
    file.read_exact_at(&mut head, 0).ok()?;
    let header = HeaderView::parse(&head).ok()?;
    if header.mode != hood_abi::MODE_TRACE {
        return None;
    }
    let base = mapping_base(header.pid, path);
    Some(Seg {
        file,
        event_size: hood_abi::TRACE_EVENT_SIZE,
        pid: header.pid as i32,
        base,
        threads: Vec::new(),
        header,
    })
}

/// Start address of `path`'s mapping at offset 0 in process `pid`, from /proc/PID/maps.
fn mapping_base(pid: u32, path: &Path) -> Option<u64> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let want = path.to_string_lossy();
    maps.lines()
        .filter_map(hood_model::profile::maps::parse_maps_line)
        .find(|m| m.path == want && m.offset == 0)
        .map(|m| m.start)
}

/// One look at a segment: fault pages ahead of every thread. Ok(true) when some thread moved;
/// Err when the segment is finished (process exited or gone).
fn step(s: &mut Seg, stats: &mut Stats) -> Result<bool, ()> {
    let mut b4 = [0u8; 4];
    s.file
        .read_exact_at(&mut b4, hood_abi::parse::STATE_OFFSET as u64)
        .map_err(|_| ())?;
    if u32::from_le_bytes(b4) == STATE_EXITED {
        return Err(());
    }
    s.file
        .read_exact_at(&mut b4, hood_abi::parse::THREADS_USED_OFFSET as u64)
        .map_err(|_| ())?;
    let used = u32::from_le_bytes(b4).min(s.header.max_threads) as usize;
    s.threads.resize_with(used, ThreadState::default);
    let mut moved = false;
    for i in 0..used {
        let slot = s.header.slot_offset(i as u32);
        let mut th = [0u8; THREAD_HEADER_SIZE];
        if s.file.read_exact_at(&mut th, slot).is_err() {
            continue;
        }
        let at = |o: usize| u64::from_le_bytes(th[o..o + 8].try_into().unwrap_or([0; 8]));
        let written = at(core::mem::offset_of!(ThreadHeader, trace_written));
        let cap = s.header.trace_capacity;
        let events = slot + THREAD_HEADER_SIZE as u64;
        let end = events + cap * s.event_size;
        let off = events + written.min(cap) * s.event_size;
        let t = &mut s.threads[i];
        let now = Instant::now();
        if let Some(then) = t.last_at {
            let dt = now.duration_since(then).as_micros().max(1) as u64;
            let rate = off.saturating_sub(t.last_off) * 1000 / dt; // bytes per ms
            t.lead = (rate * LEAD_MS).clamp(MIN_LEAD, MAX_LEAD).max(t.lead / 2);
        } else {
            t.lead = MIN_LEAD;
        }
        moved |= off != t.last_off;
        t.last_off = off;
        t.last_at = Some(now);
        // Leave the page being written to the thread; start past it.
        let from = t.done.max((off & !(PAGE - 1)) + PAGE);
        let to = (off + t.lead).min(end);
        if from >= to {
            continue;
        }
        let n = fault(s.pid, s.base, &s.file, from, to, stats)?;
        t.done = from + n * PAGE;
    }
    Ok(moved)
}

/// Fault (or allocate) the pages of segment offsets `[from, to)`; returns the pages done.
fn fault(
    pid: i32,
    base: Option<u64>,
    file: &File,
    from: u64,
    to: u64,
    stats: &mut Stats,
) -> Result<u64, ()> {
    let pages = (to - from).div_ceil(PAGE);
    let Some(base) = base else {
        // SAFETY: fallocate on an open file descriptor we own; no memory is passed.
        unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                from as libc::off_t,
                (pages * PAGE) as libc::off_t,
            )
        };
        stats.allocated += pages;
        return Ok(pages);
    };
    let mut sink = [0u8; BATCH];
    let mut done = 0;
    while done < pages {
        let n = ((pages - done) as usize).min(BATCH);
        let local: Vec<libc::iovec> = sink[..n]
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: (b as *mut u8).cast(),
                iov_len: 1,
            })
            .collect();
        let remote: Vec<libc::iovec> = (0..n as u64)
            .map(|k| libc::iovec {
                iov_base: (base + from + (done + k) * PAGE) as *mut libc::c_void,
                iov_len: 1,
            })
            .collect();
        // SAFETY: `local` describes `n` one-byte buffers inside `sink`, which outlives the
        // call; the remote addresses are only read by the kernel in process `pid` (a bad one
        // fails the call with EFAULT, it does not touch our memory).
        let r = unsafe {
            libc::process_vm_readv(
                pid,
                local.as_ptr(),
                n as libc::c_ulong,
                remote.as_ptr(),
                n as libc::c_ulong,
                0,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::EPERM) {
                // Not allowed to read that process: allocate only.
                return fault(pid, None, file, from + done * PAGE, to, stats).map(|p| done + p);
            }
            // ESRCH (gone), EFAULT (unmapped: exec'd or exiting): the segment is finished.
            return Err(());
        }
        let r = r as u64;
        stats.pages += r;
        done += r;
        if r < n as u64 {
            return Err(());
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    #[test]
    fn finds_own_mapping_base() {
        let dir = std::env::temp_dir();
        let p = dir.join(format!("hood-prefault-test-{}", std::process::id()));
        std::fs::write(&p, vec![0u8; 8192]).unwrap();
        let f = std::fs::File::open(&p).unwrap();
        // SAFETY: mapping a file we own read-only (std has no mmap); unmapped below.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED);
        let base = super::mapping_base(std::process::id(), &p);
        // SAFETY: unmapping the mapping created above.
        unsafe { libc::munmap(addr, 8192) };
        std::fs::remove_file(&p).unwrap();
        assert_eq!(base, Some(addr as u64));
    }

    /// Resident KiB of the mapping starting at `addr` in this process (/proc/self/smaps).
    fn rss_kib(addr: u64) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{addr:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        lines.next().expect("mapping in smaps");
        lines
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn pages_are_faulted_into_the_target_or_only_allocated() {
        use std::os::unix::fs::MetadataExt;
        const LEN: usize = 1 << 20;
        let dir = std::path::Path::new("/dev/shm");
        let dir = if dir.is_dir() {
            dir.to_owned()
        } else {
            std::env::temp_dir()
        };
        for remote in [true, false] {
            let p = dir.join(format!("hood-prefault-{}-{remote}", std::process::id()));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&p)
                .unwrap();
            f.set_len(LEN as u64).unwrap();
            // SAFETY: a shared mapping of our own file (std has no mmap); unmapped below.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    LEN,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    f.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(addr, libc::MAP_FAILED);
            assert_eq!(rss_kib(addr as u64), 0);
            let mut stats = super::Stats::default();
            let base = remote.then_some(addr as u64);
            // Ourselves as the "traced process": the kernel path is the same.
            let n = super::fault(
                std::process::id() as i32,
                base,
                &f,
                4096,
                LEN as u64,
                &mut stats,
            )
            .unwrap();
            assert_eq!(n, (LEN / 4096 - 1) as u64);
            let blocks = f.metadata().unwrap().blocks() * 512;
            let rss = rss_kib(addr as u64);
            // SAFETY: unmapping the mapping created above.
            unsafe { libc::munmap(addr, LEN) };
            std::fs::remove_file(&p).unwrap();
            assert_eq!(
                blocks,
                (LEN - 4096) as u64,
                "pages allocated (remote {remote})"
            );
            if remote {
                assert_eq!((stats.pages, rss), (n, (LEN as u64 - 4096) / 1024));
            } else {
                assert_eq!((stats.allocated, rss), (n, 0));
            }
        }
    }
}
