//! Trace mode: the function index cache. An 8-byte event names its function by a 16-bit index
//! into the segment's function table (hood-abi `funcs_offset`); the first hook of a function
//! claims the next index, stores the address there, asks the `--filter` table for the verdict
//! ([`crate::filter::verdict`]), and publishes (address → verdict, index) in this process-
//! private, lock-free open-addressing hash. Later hooks of that function cost one probe.
//!
//! Two threads resolving the same function at once may both claim an index; the loser's index
//! stays in the table with the same address (harmless: readers name indices by address). A
//! full function table gives [`INDEX_UNKNOWN`] and sets `FLAG_FUNC_OVERRUN`.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use hood_abi::{SegmentHeader, FLAG_FUNC_OVERRUN, INDEX_UNKNOWN};

/// One cache entry: the function address (0 = free) and its value (0 = being resolved).
#[repr(C)]
struct Entry {
    key: AtomicU64,
    val: AtomicU64,
}

/// Entries (a power of two, twice the function table so probe chains stay short).
const SLOTS: usize = 1 << 17;
/// Probes the hot path makes before leaving the rest to [`resolve`].
const HOT_PROBES: usize = 8;
/// Value bit: published.
pub const VALID: u64 = 1 << 32;
/// Value bit: the function is traced (`--filter`/`--exclude` verdict).
pub const ALLOW: u64 = 1 << 33;

static CACHE: AtomicPtr<Entry> = AtomicPtr::new(ptr::null_mut());

/// Allocate the cache (process start, trace mode); false when memory is short.
pub fn init() -> bool {
    // SAFETY: anonymous private mapping; zero-filled on first touch, never unmapped.
    let c = unsafe {
        libc::mmap(
            ptr::null_mut(),
            SLOTS * core::mem::size_of::<Entry>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if c == libc::MAP_FAILED {
        return false;
    }
    CACHE.store(c.cast(), Ordering::Release);
    true
}

#[inline(always)]
fn bucket(addr: u64) -> usize {
    (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & (SLOTS - 1)
}

/// The published value of `addr` (`VALID | ALLOW? | index`), or None when it must be resolved.
#[inline(always)]
pub fn cached(addr: u64) -> Option<u64> {
    let c = CACHE.load(Ordering::Relaxed);
    if c.is_null() {
        return None;
    }
    let mut b = bucket(addr);
    for _ in 0..HOT_PROBES {
        // SAFETY: the cache has SLOTS entries; the index is masked.
        let e = unsafe { &*c.add(b) };
        let k = e.key.load(Ordering::Relaxed);
        if k == addr {
            let v = e.val.load(Ordering::Relaxed);
            return (v & VALID != 0).then_some(v);
        }
        if k == 0 {
            return None;
        }
        b = (b + 1) & (SLOTS - 1);
    }
    None
}

/// The value of `addr`, resolving it on first sight (cold path).
#[inline(always)]
pub fn get(h: *mut SegmentHeader, addr: u64) -> u64 {
    match cached(addr) {
        Some(v) => v,
        None => resolve(h, addr),
    }
}

/// Claim a function table index for `addr` and store the address there.
fn claim(h: *mut SegmentHeader, addr: u64) -> u64 {
    // SAFETY: `h` is the live trace segment; the table has `max_funcs` entries.
    unsafe {
        let hd = &*h;
        let i = hd.funcs_used.fetch_add(1, Ordering::Relaxed);
        if i >= hd.max_funcs {
            hd.flags.fetch_or(FLAG_FUNC_OVERRUN, Ordering::Relaxed);
            return INDEX_UNKNOWN;
        }
        let slot = (h as *mut u8)
            .add(hd.funcs_offset as usize)
            .cast::<AtomicU64>()
            .add(i as usize);
        (*slot).store(addr, Ordering::Release);
        i as u64
    }
}

#[cold]
#[inline(never)]
fn resolve(h: *mut SegmentHeader, addr: u64) -> u64 {
    let c = CACHE.load(Ordering::Acquire);
    let allow = crate::filter::verdict(addr);
    // Excluded functions need no index: their events are never written.
    let value = |allow: bool| {
        VALID
            | if allow {
                ALLOW | claim(h, addr)
            } else {
                INDEX_UNKNOWN
            }
    };
    if c.is_null() {
        return value(allow);
    }
    let mut b = bucket(addr);
    for _ in 0..SLOTS {
        // SAFETY: masked index into the SLOTS entries.
        let e = unsafe { &*c.add(b) };
        let mut k = e.key.load(Ordering::Acquire);
        if k == 0 {
            k = match e
                .key
                .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => addr,
                Err(other) => other,
            };
        }
        if k == addr {
            let v = e.val.load(Ordering::Acquire);
            if v & VALID != 0 {
                return v;
            }
            let new = value(allow);
            return match e
                .val
                .compare_exchange(0, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => new,
                Err(published) => published,
            };
        }
        b = (b + 1) & (SLOTS - 1);
    }
    // Cache full (more functions than the table holds): resolved every time, still correct.
    value(allow)
}

/// After fork: the child's new segment gets the parent's function table, so the inherited
/// cache stays valid (its indices are the same).
pub fn copy_table(from: *const SegmentHeader, to: *mut SegmentHeader) {
    // SAFETY: both are live trace segments with identical limits (same environment).
    unsafe {
        let n = (*from)
            .funcs_used
            .load(Ordering::Acquire)
            .min((*from).max_funcs);
        ptr::copy_nonoverlapping(
            (from as *const u8).add((*from).funcs_offset as usize),
            (to as *mut u8).add((*to).funcs_offset as usize),
            n as usize * 8,
        );
        (*to).funcs_used.store(n, Ordering::Release);
    }
}
