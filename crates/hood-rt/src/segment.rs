//! Creating and mapping a segment file (cold path: process start, fork child).

use core::ptr;
use core::sync::atomic::Ordering;

use hood_abi::{SegmentHeader, SlotLayout, HEADER_AREA_SIZE, MAPS_AREA_SIZE};

use crate::clock;
use crate::config::Config;

/// Small fixed buffer for building NUL-terminated paths without allocating.
pub struct PathBuf {
    buf: [u8; 1100],
    len: usize,
}

impl PathBuf {
    /// Empty buffer.
    pub fn new() -> Self {
        PathBuf {
            buf: [0; 1100],
            len: 0,
        }
    }
    /// Append bytes (silently truncated at capacity; creation then fails cleanly).
    pub fn push(&mut self, s: &[u8]) {
        for &b in s {
            if self.len + 1 < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
    }
    /// Append a decimal number.
    pub fn push_u64(&mut self, mut v: u64) {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        loop {
            i -= 1;
            tmp[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&tmp[i..]);
    }
    /// NUL-terminated pointer.
    pub fn as_ptr(&mut self) -> *const libc::c_char {
        self.buf[self.len] = 0;
        self.buf.as_ptr() as *const libc::c_char
    }
}

/// Create, size and map a new segment for the current pid; returns the mapped header or null.
/// The header is fully written with `magic` stored last.
pub fn create(cfg: &Config, clock_kind: u32, ticks_per_sec: u64) -> *mut SegmentHeader {
    let slot_size = if cfg.trace {
        hood_abi::trace_slot_size(cfg.trace_capacity)
    } else {
        SlotLayout::new(cfg.max_depth, cfg.max_paths, cfg.hash_size).map(|s| s.slot_size)
    };
    let Some(slot_size) = slot_size else {
        return ptr::null_mut();
    };
    let tags_area = if cfg.trace {
        hood_abi::TAGS_AREA_SIZE + hood_abi::FUNCS_AREA_SIZE
    } else {
        0
    };
    let threads_offset = HEADER_AREA_SIZE + MAPS_AREA_SIZE + tags_area;
    let Some(total) = slot_size
        .checked_mul(cfg.max_threads as u64)
        .and_then(|s| s.checked_add(threads_offset))
    else {
        return ptr::null_mut();
    };
    // SAFETY: getpid/getppid cannot fail.
    let (pid, ppid) = unsafe { (libc::getpid(), libc::getppid()) };
    let (start_ticks, start_mono) = clock::pair();
    let mut path = PathBuf::new();
    path.push(cfg.dir());
    path.push(b"/");
    path.push(hood_abi::SEGMENT_PREFIX.as_bytes());
    path.push_u64(pid as u64);
    path.push(b"-");
    path.push_u64(start_mono);
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
    // SAFETY: path is NUL terminated; open has no other preconditions.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return ptr::null_mut();
    }
    // SAFETY: fd is a file we just created; ftruncate/mmap/close on it are sound.
    let base = unsafe {
        if libc::ftruncate(fd, total as libc::off_t) != 0 {
            libc::unlink(path.as_ptr());
            libc::close(fd);
            return ptr::null_mut();
        }
        let p = libc::mmap(
            ptr::null_mut(),
            total as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        libc::close(fd);
        if p == libc::MAP_FAILED {
            libc::unlink(path.as_ptr());
            return ptr::null_mut();
        }
        p as *mut SegmentHeader
    };
    // SAFETY: `base` maps `total` >= HEADER_AREA_SIZE zeroed bytes, suitably aligned (page).
    let h = unsafe { &mut *base };
    h.version = hood_abi::LAYOUT_VERSION;
    h.mode = if cfg.trace {
        hood_abi::MODE_TRACE
    } else {
        hood_abi::MODE_CALLS
    };
    if cfg.trace {
        h.trace_capacity = cfg.trace_capacity;
        h.trace_full = cfg.trace_full;
        h.tags_offset = HEADER_AREA_SIZE + MAPS_AREA_SIZE;
        h.funcs_offset = h.tags_offset + hood_abi::TAGS_AREA_SIZE;
        h.max_funcs = hood_abi::MAX_FUNCS;
    }
    h.pid = pid as u32;
    h.ppid = ppid as u32;
    h.state.store(hood_abi::STATE_RUNNING, Ordering::Relaxed);
    h.clock = clock_kind;
    h.ticks_per_sec.store(ticks_per_sec, Ordering::Relaxed);
    h.start_ticks = start_ticks;
    h.start_mono_ns = start_mono;
    h.start_realtime_ns = clock::realtime_ns();
    h.compensate = cfg.compensate as u32;
    h.max_threads = cfg.max_threads;
    h.max_depth = cfg.max_depth;
    h.max_paths = cfg.max_paths;
    h.max_path_len = cfg.max_path_len;
    h.hash_size = cfg.hash_size;
    h.maps_offset = HEADER_AREA_SIZE;
    h.threads_offset = threads_offset;
    h.thread_slot_size = slot_size;
    h.total_size = total;
    let mut exe = PathBuf::new();
    exe.push(b"/proc/self/exe");
    // SAFETY: exe is NUL terminated; exe_path is a writable buffer of the given length.
    let n = unsafe {
        libc::readlink(
            exe.as_ptr(),
            h.exe_path.as_mut_ptr() as *mut libc::c_char,
            h.exe_path.len(),
        )
    };
    h.exe_path_len = if n > 0 { n as u32 } else { 0 };
    copy_maps(h);
    h.magic.store(hood_abi::MAGIC, Ordering::Release);
    base
}

/// Copy /proc/self/maps into the maps area (cold path: start and exit).
pub fn copy_maps(h: &SegmentHeader) {
    let mut p = PathBuf::new();
    p.push(b"/proc/self/maps");
    // SAFETY: p is NUL terminated.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return;
    }
    let area = (h as *const SegmentHeader as *mut u8).wrapping_add(h.maps_offset as usize);
    let mut len = 0usize;
    while len < MAPS_AREA_SIZE as usize {
        // SAFETY: the maps area has MAPS_AREA_SIZE bytes inside the mapping at `area`.
        let n = unsafe {
            libc::read(
                fd,
                area.add(len) as *mut libc::c_void,
                MAPS_AREA_SIZE as usize - len,
            )
        };
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    // SAFETY: fd was opened above.
    unsafe { libc::close(fd) };
    h.maps_len.store(len as u64, Ordering::Release);
}

/// Unmap a segment mapping (fork child dropping the parent's).
pub fn unmap(h: *mut SegmentHeader) {
    if h.is_null() {
        return;
    }
    // SAFETY: `h` is a live mapping created by `create` of `total_size` bytes.
    unsafe {
        let total = (*h).total_size as usize;
        libc::munmap(h as *mut libc::c_void, total);
    }
}
