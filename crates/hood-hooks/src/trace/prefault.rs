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
//!
//! The remote reads and the fallback are [`hood_proc::remote::fault_pages`]; this module
//! decides which pages, when. Segments are opened through the checks of
//! [`hood_proc::shm::ShmFile`] (no links, no FIFOs, owner), like every segment hood reads.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hood_abi::{HeaderView, ThreadHeader, STATE_EXITED, THREAD_HEADER_SIZE};
use hood_proc::remote::{fault_pages, PAGE};
use hood_proc::shm::ShmFile;

/// What the pre-faulter did, for the recorder's summary: pages faulted into traced processes
/// and pages only allocated (`fallocate` fallback).
pub use hood_proc::remote::FaultStats as Stats;

const MIN_LEAD: u64 = 256 << 10;
const MAX_LEAD: u64 = 32 << 20;
/// Look-ahead time the lead is sized for.
const LEAD_MS: u64 = 20;

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
    file: ShmFile,
    header: HeaderView,
    event_size: u64,
    pid: i32,
    /// Address of the segment's mapping in the traced process (None: use `fallocate`).
    base: Option<u64>,
    threads: Vec<ThreadState>,
}

fn run(dir: &Path, stop: &AtomicBool) -> Stats {
    let mut stats = Stats::default();
    let mut segs: HashMap<OsString, Option<Seg>> = HashMap::new();
    // The newest segment of each pid (start time): an older one was left by an exec.
    let mut newest: HashMap<u32, u64> = HashMap::new();
    let mut watch = crate::segments::DirWatch::new(dir);
    let mut last_scan: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        if last_scan.is_none_or(|t| t.elapsed() >= Duration::from_millis(10)) && watch.changed() {
            if scan(dir, &mut segs, &mut newest) {
                watch.again();
            }
            last_scan = Some(Instant::now());
        }
        let mut busy = false;
        for seg in segs.values_mut() {
            let Some(s) = seg else { continue };
            // A segment its process left by exec is written no more, and the recorder gives
            // its pages back: faulting them in again would undo that.
            if newest.get(&s.header.pid) != Some(&s.header.start_mono_ns) {
                *seg = None;
                continue;
            }
            match step(s, &mut stats) {
                Ok(moved) => busy |= moved,
                Err(()) => *seg = None,
            }
        }
        std::thread::sleep(Duration::from_millis(if busy { 1 } else { 5 }));
    }
    stats
}

/// What a look at a new segment file found.
enum Found {
    /// A live trace segment to pre-fault.
    Ready(Box<Seg>),
    /// Not ready yet (header being written, or not mapped by its process yet; with its pid and
    /// start once the header reads): look again.
    Later(Option<(u32, u64)>),
    /// Never to be pre-faulted: not a trace segment, or its process exited or left it by exec.
    Never,
}

/// Pick up new segments; true when one was not ready (its header or mapping), to be looked at
/// again.
fn scan(
    dir: &Path,
    segs: &mut HashMap<OsString, Option<Seg>>,
    newest: &mut HashMap<u32, u64>,
) -> bool {
    let found: Vec<_> = crate::segments::new_segments(dir, |n| segs.contains_key(n))
        .into_iter()
        .map(|(name, path)| (name, open(&path)))
        .collect();
    // Every new segment's start first: of a fork's segment and the one its exec made, found
    // in the same look, only the second is live.
    for (_, f) in &found {
        if let Found::Ready(s) = f {
            let e = newest.entry(s.header.pid).or_insert(0);
            *e = (*e).max(s.header.start_mono_ns);
        }
    }
    let mut later = false;
    for (name, f) in found {
        match f {
            Found::Ready(s) => {
                segs.insert(name, Some(*s));
            }
            // Unmapped, and its pid has a newer segment: left by an exec, never to be mapped.
            Found::Later(Some((pid, start))) if newest.get(&pid).is_some_and(|&n| n > start) => {
                segs.insert(name, None);
            }
            Found::Never => {
                segs.insert(name, None);
            }
            Found::Later(_) => later = true,
        }
    }
    later
}

fn open(path: &Path) -> Found {
    // For writing: the `fallocate` fallback needs it.
    let Ok(file) = ShmFile::open(path, true, crate::segments::name_pid(path)) else {
        return Found::Later(None);
    };
    let Some(header) = file
        .read_fixed(0, hood_abi::HEADER_AREA_SIZE, "the header")
        .ok()
        .and_then(|head| HeaderView::parse(&head).ok())
    else {
        return Found::Later(None);
    };
    if header.mode != hood_abi::MODE_TRACE || header.state == STATE_EXITED {
        return Found::Never;
    }
    let alive = crate::segments::pid_alive(header.pid);
    let base = match mapping_base(header.pid, path) {
        Ok(Some(b)) => Some(b),
        // Its process does not map it yet (between the runtime's create and mmap, a moment),
        // or no more (it exec'd: `scan` sees the newer segment, if the new image made one).
        Ok(None) if alive && !settled(&header) => {
            return Found::Later(Some((header.pid, header.start_mono_ns)))
        }
        Ok(None) if alive => return Found::Never,
        // Gone: nothing will write it again (allocating its pages would only hold memory).
        Ok(None) | Err(()) if !alive => return Found::Never,
        // Its mappings cannot be read: the `fallocate` fallback.
        Ok(None) | Err(()) => None,
    };
    Found::Ready(Box::new(Seg {
        file,
        event_size: hood_abi::TRACE_EVENT_SIZE,
        pid: header.pid as i32,
        base,
        threads: Vec::new(),
        header,
    }))
}

/// True when the segment was made long enough ago that its process would map it by now (the
/// runtime maps it right after creating it): an unmapped one is then left behind, by an exec
/// into a program that made no segment of its own.
fn settled(h: &HeaderView) -> bool {
    hood_proc::clock::monotonic_ns().saturating_sub(h.start_mono_ns) > 100_000_000
}

/// Start address of `path`'s mapping at offset 0 in process `pid`, from /proc/PID/maps:
/// `Ok(None)` when the process does not map it, `Err` when its mappings cannot be read.
fn mapping_base(pid: u32, path: &Path) -> Result<Option<u64>, ()> {
    let want = path.to_string_lossy();
    let mut base = None;
    hood_procfs::process::for_each_maps_line(pid, |line| {
        base = hood_raw::maps::parse_maps_line(line)
            .filter(|m| m.path == want && m.offset == 0)
            .map(|m| m.start);
        base.is_none()
    })
    .map_err(|_| ())?;
    Ok(base)
}

/// One look at a segment: fault pages ahead of every thread. Ok(true) when some thread moved;
/// Err when the segment is finished (process exited or gone).
fn step(s: &mut Seg, stats: &mut Stats) -> Result<bool, ()> {
    let mut b4 = [0u8; 4];
    s.file
        .read_into(hood_abi::parse::STATE_OFFSET as u64, &mut b4, "the state")
        .map_err(|_| ())?;
    if u32::from_le_bytes(b4) == STATE_EXITED {
        return Err(());
    }
    s.file
        .read_into(
            hood_abi::parse::THREADS_USED_OFFSET as u64,
            &mut b4,
            "threads_used",
        )
        .map_err(|_| ())?;
    let used = u32::from_le_bytes(b4).min(s.header.max_threads) as usize;
    s.threads.resize_with(used, ThreadState::default);
    let mut moved = false;
    for i in 0..used {
        let slot = s.header.slot_offset(i as u32);
        let mut th = [0u8; THREAD_HEADER_SIZE];
        if s.file.read_into(slot, &mut th, "a thread header").is_err() {
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
        let n = fault_pages(s.pid, s.base, &s.file, from, to, stats).map_err(|_| ())?;
        t.done = from + n * PAGE;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    /// A function of this test binary, to find its code in the executable's mapping.
    fn here() {}

    #[test]
    fn finds_own_mapping_base() {
        let exe = std::env::current_exe().unwrap();
        let len = std::fs::metadata(&exe).unwrap().len();
        let base = super::mapping_base(std::process::id(), &exe)
            .unwrap()
            .expect("mapping at offset 0");
        // The executable is mapped from offset 0 at `base`; its code lies within the file's
        // length above it.
        let code = here as fn() as usize as u64;
        assert!(
            base <= code && code - base < len,
            "base {base:#x}, code {code:#x}, file {len} bytes"
        );
        let missing = exe.with_extension("not-mapped");
        assert_eq!(super::mapping_base(std::process::id(), &missing), Ok(None));
    }

    #[test]
    fn planted_files_do_not_hang_or_feed_the_prefaulter() {
        let d = tempfile::tempdir().unwrap();
        // Opening a FIFO nobody writes blocks unless it is refused first.
        crate::segments::tests::fifo(&d.path().join("hood-rt-4242-1"));
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("hood-rt-4243-1")).unwrap();
        let p = super::Prefaulter::start(d.path());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(p.stop()).unwrap());
        let stats = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the pre-faulter hung on a planted file");
        assert_eq!(stats, super::Stats::default());
    }
}
