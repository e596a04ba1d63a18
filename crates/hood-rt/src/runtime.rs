//! Process and thread set-up (cold paths): lazy process init on the first hook, thread slots,
//! overhead calibration, fork, thread exit and process exit handlers.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, Ordering};

use hood_abi::{SegmentHeader, ThreadHeader, FLAG_THREAD_OVERRUN, THREAD_EXITED, THREAD_LIVE};

use crate::config::Config;
use crate::hook::{self, Slot};
use crate::{clock, segment};

/// Runtime not initialised yet (first hook initialises).
pub const UNINIT: u32 = 0;
/// Some thread is initialising; hooks of other threads return at once.
pub const INITIALISING: u32 = 1;
/// Recording.
pub const READY: u32 = 2;
/// Off: disabled by environment, failed set-up, or `hood_disable()`.
pub const OFF: u32 = 3;

/// Hook flavour: call-path tables.
pub const CALLS: u32 = 0;
/// Hook flavour: trace mode, recording.
pub const TRACE_ON: u32 = 1;
/// Hook flavour: trace mode, `hood_trace_off()` (or `HOOD_TRACE_START=off`) in force.
pub const TRACE_OFF: u32 = 2;

/// [`MODE`] bit: the clock is the TSC (set during set-up, before [`READY`]).
pub const TSC: u32 = 1 << 16;
const STATE_MASK: u32 = 0xff;
const HOOKS_SHIFT: u32 = 8;
const HOOKS_MASK: u32 = 0xff << HOOKS_SHIFT;
/// [`MODE`] of a recording calls-mode runtime on the TSC: the calls hooks' common path.
pub const FAST_CALLS: u32 = READY | CALLS << HOOKS_SHIFT | TSC;
/// [`MODE`] of a recording trace-mode runtime on the TSC: the trace hooks' common path.
pub const FAST_TRACE: u32 = READY | TRACE_ON << HOOKS_SHIFT | TSC;

/// The runtime's state ([`UNINIT`], [`INITIALISING`], [`READY`], [`OFF`]; bits 0–7), which
/// hooks run ([`CALLS`], [`TRACE_ON`], [`TRACE_OFF`]; bits 8–15, set before [`READY`]) and
/// [`TSC`], in one word: a hook's first and only process-global load. It compares the word
/// with [`FAST_TRACE`] and [`FAST_CALLS`] (a disabled runtime costs this load and returns
/// before any thread-local access). Changed only by [`set_state`], [`set_state_if`] and
/// [`set_hooks_if`], which keep the other fields.
pub static MODE: AtomicU32 = AtomicU32::new(UNINIT);

/// The state field of a [`MODE`] value.
#[inline(always)]
pub const fn state_of(mode: u32) -> u32 {
    mode & STATE_MASK
}

/// The runtime's state.
#[inline(always)]
pub fn state() -> u32 {
    state_of(MODE.load(Ordering::Acquire))
}

/// Which hooks run.
#[inline(always)]
pub fn hooks() -> u32 {
    (MODE.load(Ordering::Relaxed) & HOOKS_MASK) >> HOOKS_SHIFT
}

/// Set the state, keeping the other fields.
fn set_state(to: u32) {
    let _ = MODE.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
        Some(m & !STATE_MASK | to)
    });
}

/// Move the state from `from` to `to`, keeping the other fields; false when it was not
/// `from`.
fn set_state_if(from: u32, to: u32) -> bool {
    MODE.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
        (state_of(m) == from).then_some(m & !STATE_MASK | to)
    })
    .is_ok()
}

/// Switch the hooks from `from` to `to`, keeping the other fields; false when they were not
/// `from`.
pub fn set_hooks_if(from: u32, to: u32) -> bool {
    MODE.fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
        ((m & HOOKS_MASK) >> HOOKS_SHIFT == from).then_some(m & !HOOKS_MASK | to << HOOKS_SHIFT)
    })
    .is_ok()
}
/// The process's segment.
pub static SEG: AtomicPtr<SegmentHeader> = AtomicPtr::new(ptr::null_mut());
static KEY: AtomicU32 = AtomicU32::new(u32::MAX);

/// Marker stored in the thread-local for threads that get no slot.
pub const NO_SLOT: usize = 1;

/// This thread's slot pointer (null = not yet set up, NO_SLOT = none).
#[inline(always)]
pub fn tls_get() -> *mut ThreadHeader {
    crate::tls::get()
}

fn tls_set(p: *mut ThreadHeader) {
    crate::tls::set(p)
}

/// Slot for this hook, setting up process and thread on first use; None = do nothing.
#[inline(always)]
pub fn slot() -> Option<Slot> {
    if state_of(MODE.load(Ordering::Relaxed)) != READY {
        return cold_slot();
    }
    let t = tls_get();
    if (t as usize) <= NO_SLOT {
        return cold_slot();
    }
    Some(Slot {
        h: SEG.load(Ordering::Relaxed),
        t,
    })
}

#[cold]
#[inline(never)]
fn cold_slot() -> Option<Slot> {
    // SAFETY: errno is thread-local; saved and restored around the set-up syscalls.
    let saved = unsafe { *libc::__errno_location() };
    let r = setup();
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
    r
}

fn setup() -> Option<Slot> {
    match state() {
        UNINIT => {
            if !set_state_if(UNINIT, INITIALISING) {
                return None;
            }
            let Some(compensate) = init_process() else {
                set_state(OFF);
                return None;
            };
            set_state(READY);
            if compensate {
                calibrate(SEG.load(Ordering::Acquire));
            }
        }
        READY => {}
        _ => return None,
    }
    let t = tls_get();
    if t as usize == NO_SLOT {
        return None;
    }
    let h = SEG.load(Ordering::Acquire);
    if t.is_null() {
        let t = init_thread(h);
        if t.is_null() {
            tls_set(NO_SLOT as *mut ThreadHeader);
            return None;
        }
        return Some(Slot { h, t });
    }
    Some(Slot { h, t })
}

/// Create the segment and register handlers; Some(compensate) on success.
fn init_process() -> Option<bool> {
    let cfg = Config::from_env();
    if cfg.disabled {
        return None;
    }
    let (kind, rate) = clock::init(cfg.force_mono, cfg.tsc_hz);
    let h = segment::create(&cfg, kind, rate);
    if h.is_null() {
        return None;
    }
    if cfg.trace {
        if !crate::index::init() {
            segment::unmap(h);
            return None;
        }
        if let Some(f) = cfg.filter_path() {
            crate::filter::load(f);
        }
        let hooks = if cfg.trace_start_off {
            TRACE_OFF
        } else {
            TRACE_ON
        };
        let _ = set_hooks_if(CALLS, hooks);
    }
    if clock::using_tsc() {
        MODE.fetch_or(TSC, Ordering::Relaxed);
    }
    SEG.store(h, Ordering::Release);
    crate::interpose::resolve_all();
    // SAFETY: registering handlers with valid extern "C" functions; key storage is local.
    unsafe {
        let mut key: libc::pthread_key_t = 0;
        if libc::pthread_key_create(&mut key, Some(thread_exit)) == 0 {
            KEY.store(key, Ordering::Relaxed);
        }
        libc::pthread_atfork(None, None, Some(fork_child));
        libc::atexit(process_exit);
    }
    Some(cfg.compensate && !cfg.trace)
}

/// A slot a recorder retired (its thread exited and everything in it was taken), claimed for
/// the calling thread; `None` when there is none.
///
/// # Safety
/// `h` is the live segment mapping (its header area holds the free-slot bytes).
unsafe fn reuse_slot(h: *mut SegmentHeader) -> Option<u32> {
    // SAFETY: `h` is the live segment header.
    let hd = unsafe { &*h };
    let n = hd
        .threads_used
        .load(Ordering::Relaxed)
        .min(hd.max_threads)
        .min(hood_abi::REUSABLE_SLOTS);
    // SAFETY: the free-slot bytes (REUSABLE_SLOTS of them) lie inside the header area at
    // FREE_SLOTS_OFFSET, which every segment maps.
    let free = unsafe {
        (h as *mut u8)
            .add(hood_abi::FREE_SLOTS_OFFSET as usize)
            .cast::<AtomicU8>()
    };
    for i in 0..n {
        // SAFETY: `i < n <= REUSABLE_SLOTS`: one of those bytes, accessed atomically (the
        // recorder writes them too).
        let b = unsafe { &*free.add(i as usize) };
        if b.load(Ordering::Relaxed) == hood_abi::SLOT_FREE
            && b.compare_exchange(hood_abi::SLOT_FREE, 0, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return Some(i);
        }
    }
    None
}

/// Claim and initialise a thread slot for the calling thread (a retired one first, then a
/// fresh one); null when none is left.
fn init_thread(h: *mut SegmentHeader) -> *mut ThreadHeader {
    // SAFETY: `h` is the live segment mapping; slots are within `total_size`.
    unsafe {
        let hd = &*h;
        let idx = match reuse_slot(h) {
            Some(i) => i,
            None => hd.threads_used.fetch_add(1, Ordering::Relaxed),
        };
        if idx >= hd.max_threads {
            hd.flags.fetch_or(FLAG_THREAD_OVERRUN, Ordering::Relaxed);
            return ptr::null_mut();
        }
        let t = (h as *mut u8)
            .add((hd.threads_offset + idx as u64 * hd.thread_slot_size) as usize)
            .cast::<ThreadHeader>();
        init_slot(h, t);
        t
    }
}

/// Initialise slot `t` for the calling thread and make it current. A reused slot still holds
/// its former thread's counters: the header is zeroed first (its `state` is 0 until the
/// release store below publishes the slot).
///
/// # Safety
/// `h` is the live segment and `t` a slot in it that the calling thread has just claimed (no
/// other thread uses it).
unsafe fn init_slot(h: *mut SegmentHeader, t: *mut ThreadHeader) {
    let s = Slot { h, t };
    // Kept: the calls table's clearing below needs to know how much of it was used.
    // SAFETY: `t` is a slot inside the mapping, claimed by this thread.
    let paths_used = unsafe { (*t).paths_used.load(Ordering::Relaxed) };
    // SAFETY: the thread header is the first THREAD_HEADER_SIZE bytes of the claimed slot,
    // and all-zero bytes are a valid `ThreadHeader` (integers and atomics).
    unsafe { ptr::write_bytes(t.cast::<u8>(), 0, hood_abi::THREAD_HEADER_SIZE) };
    // SAFETY: as above; from here on `th` is the only reference to the header.
    let th = unsafe { &mut *t };
    th.paths_used.store(paths_used, Ordering::Relaxed);
    // SAFETY: gettid takes no arguments and cannot fail.
    th.tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    th.depth.store(0, Ordering::Relaxed);
    th.overflow_depth = 0;
    th.busy = 0;
    // SAFETY: `h` is the live segment header.
    let hd = unsafe { &*h };
    th.seen_gen
        .store(hd.reset_gen.load(Ordering::Relaxed), Ordering::Relaxed);
    if hd.mode == hood_abi::MODE_TRACE {
        th.trace_pos.store(0, Ordering::Relaxed);
        th.trace_dropped.store(0, Ordering::Relaxed);
        th.trace_written.store(0, Ordering::Relaxed);
        th.trace_read.store(0, Ordering::Relaxed);
        th.lost_calls.store(0, Ordering::Relaxed);
        // Stream mode: the first event finds the ring's room through the general path.
        let stop = if hd.trace_full == hood_abi::TRACE_FULL_STREAM {
            0
        } else {
            hd.trace_capacity
        };
        th.trace_stop.store(stop, Ordering::Relaxed);
    } else {
        // SAFETY: `s` is this thread's calls-mode slot in the live segment; `clear_table`
        // needs no initialised nodes, and `paths_used` (kept above) bounds what it clears.
        unsafe { hook::clear_table(&s) };
    }
    th.reset_ticks.store(clock::now(), Ordering::Relaxed);
    th.state.store(THREAD_LIVE, Ordering::Release);
    let key = KEY.load(Ordering::Relaxed);
    if key != u32::MAX {
        // SAFETY: `key` was created by `pthread_key_create` and is never deleted; the value
        // is only handed back to `thread_exit`.
        unsafe { libc::pthread_setspecific(key, t as *const libc::c_void) };
    }
    tls_set(t);
}

/// Measure the hooks' own cost on this thread's fresh slot, then clear it. comp_self is the
/// mean raw own time of an empty function (end of entry hook to start of exit hook); comp_child
/// is the rest of one entry+exit pair, which the caller's timestamps do not see. It is measured
/// twice: repeating one callee (last-child cache hit) and alternating two callees (miss).
fn calibrate(h: *mut SegmentHeader) {
    let t = init_thread(h);
    if t.is_null() {
        return;
    }
    let s = Slot { h, t };
    let fast = measure(&s, false);
    let slow = measure(&s, true);
    // SAFETY: `t` is this thread's slot in the live segment `h`.
    unsafe {
        (*h).comp_self_ticks = fast.1;
        (*h).comp_child_ticks = fast.0.saturating_sub(fast.1);
        (*h).comp_child_slow_ticks = slow.0.saturating_sub(fast.1);
        hook::clear_table(&s);
        (*t).depth.store(0, Ordering::Relaxed);
        (*t).mismatched.store(0, Ordering::Relaxed);
        (*t).reset_ticks.store(clock::now(), Ordering::Relaxed);
    }
}

/// Best of 7 rounds: (ticks per entry+exit pair, mean raw own ticks of the empty callee).
fn measure(s: &Slot, alternate: bool) -> (u64, u64) {
    let enter: extern "C" fn(*mut libc::c_void, *mut libc::c_void) =
        core::hint::black_box(crate::enter_hook);
    let exit: extern "C" fn(*mut libc::c_void, *mut libc::c_void) =
        core::hint::black_box(crate::exit_hook_c);
    let parent = calibrate as *mut libc::c_void;
    let f1 = measure as *mut libc::c_void;
    let f2 = init_thread as *mut libc::c_void;
    const N: u64 = 1000;
    let mut best = (u64::MAX, u64::MAX);
    // SAFETY: `s` is this thread's slot; nodes 1.. are the calibration paths.
    unsafe {
        for _ in 0..7 {
            hook::clear_table(s);
            enter(parent, ptr::null_mut());
            let t0 = clock::now();
            for _ in 0..N {
                enter(f1, ptr::null_mut());
                exit(f1, ptr::null_mut());
                let f = if alternate { f2 } else { f1 };
                enter(f, ptr::null_mut());
                exit(f, ptr::null_mut());
            }
            let per_pair = clock::now().wrapping_sub(t0) / (2 * N);
            exit(parent, ptr::null_mut());
            let nodes = (s.t as *mut u8)
                .add(
                    hood_abi::THREAD_HEADER_SIZE + (*s.h).max_depth as usize * hood_abi::FRAME_SIZE,
                )
                .cast::<hood_abi::PathNode>();
            let own = (*nodes.add(2)).own_ticks.wrapping_add(if alternate {
                (*nodes.add(3)).own_ticks
            } else {
                0
            });
            // Each the least of the rounds: what slows a round (an interrupt, a cache miss,
            // a preemption) only adds, and the pair's and the own time's rounds need not be
            // the same (taking the own time from the fastest pair's round left it that
            // round's noise: up to 122 ns over 30 process starts, against 24.3–29.5 so).
            best = (best.0.min(per_pair), best.1.min(own / (2 * N)));
        }
    }
    best
}

extern "C" fn thread_exit(p: *mut libc::c_void) {
    let t = p as *mut ThreadHeader;
    if t.is_null() {
        return;
    }
    // SAFETY: the key value is this thread's slot in the live segment.
    unsafe {
        (*t).exit_ticks.store(clock::now(), Ordering::Relaxed);
        (*t).state.store(THREAD_EXITED, Ordering::Release);
    }
    // Hooks that run later in this exiting thread (other keys' destructors) record nothing:
    // once its recorder has taken the slot, it may belong to a new thread.
    tls_set(NO_SLOT as *mut ThreadHeader);
}

extern "C" fn process_exit() {
    let h = SEG.load(Ordering::Acquire);
    if h.is_null() {
        return;
    }
    // SAFETY: `h` is the live segment mapping of this process.
    let hd = unsafe { &*h };
    let (now, mono) = clock::pair();
    if clock::using_tsc() {
        if let Some(r) = clock::rate(hd.start_ticks, hd.start_mono_ns, now, mono) {
            if now.wrapping_sub(hd.start_ticks) > hd.ticks_per_sec.load(Ordering::Relaxed) / 20 {
                hd.ticks_per_sec.store(r, Ordering::Relaxed);
            }
        }
    }
    segment::copy_maps(hd);
    hd.exit_ticks.store(now, Ordering::Relaxed);
    hd.state.store(hood_abi::STATE_EXITED, Ordering::Release);
}

/// In the child after fork: a new segment for the new pid, with the forking thread's open calls
/// re-inserted (counts zero, times from the fork on). The parent's mapping is dropped.
extern "C" fn fork_child() {
    let old = SEG.load(Ordering::Acquire);
    let old_t = tls_get();
    if old.is_null() || state() != READY {
        return;
    }
    let cfg = Config::from_env();
    // SAFETY: `old` is the inherited mapping; its constants are valid.
    let (kind, rate) = unsafe { ((*old).clock, (*old).ticks_per_sec.load(Ordering::Relaxed)) };
    let h = segment::create(&cfg, kind, rate);
    if h.is_null() {
        set_state(OFF);
        segment::unmap(old);
        return;
    }
    // SAFETY: both mappings are live; the new segment has identical limits (same env).
    unsafe {
        (*h).compensate = (*old).compensate;
        (*h).comp_self_ticks = (*old).comp_self_ticks;
        (*h).comp_child_ticks = (*old).comp_child_ticks;
        if (*h).mode == hood_abi::MODE_TRACE && (*old).mode == hood_abi::MODE_TRACE {
            crate::index::copy_table(old, h);
        }
    }
    SEG.store(h, Ordering::Release);
    tls_set(ptr::null_mut());
    let t = init_thread(h);
    // SAFETY: `h` is the live new mapping.
    let calls = unsafe { (*h).mode } == hood_abi::MODE_CALLS;
    if calls && !t.is_null() && (old_t as usize) > NO_SLOT {
        // SAFETY: copy the open frames from the old slot into the new one, then rebuild paths.
        unsafe {
            let d = (*old_t).depth.load(Ordering::Relaxed).min((*h).max_depth);
            let src = (old_t as *const u8).add(hood_abi::THREAD_HEADER_SIZE);
            let dst = (t as *mut u8).add(hood_abi::THREAD_HEADER_SIZE);
            ptr::copy_nonoverlapping(src, dst, d as usize * hood_abi::FRAME_SIZE);
            (*t).depth.store(d, Ordering::Relaxed);
            (*t).overflow_depth = (*old_t).overflow_depth;
            hook::reset(&Slot { h, t });
        }
    }
    segment::unmap(old);
}

/// Turn recording off (`false`) or back on (`true`) for the whole process.
pub fn set_enabled(on: bool) {
    if on {
        if !SEG.load(Ordering::Acquire).is_null() {
            let _ = set_state_if(OFF, READY);
        }
    } else {
        let _ = set_state_if(READY, OFF);
    }
}

/// Refresh the maps copy and the TSC rate (e.g. after dlopen).
pub fn sync() {
    let h = SEG.load(Ordering::Acquire);
    if !h.is_null() {
        // SAFETY: live mapping.
        segment::copy_maps(unsafe { &*h });
    }
}
