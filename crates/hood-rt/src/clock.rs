//! Timestamps: the TSC where it is invariant, else the vDSO CLOCK_MONOTONIC; and the
//! calibration of the TSC rate against CLOCK_MONOTONIC.

use core::sync::atomic::{AtomicBool, Ordering};

static USE_TSC: AtomicBool = AtomicBool::new(false);

/// Read the current timestamp (TSC ticks or monotonic ns). Never fails, never panics.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if USE_TSC.load(Ordering::Relaxed) {
            // SAFETY: rdtsc has no memory effects; availability was checked by `init`.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
    }
    mono_ns()
}

/// The TSC, for callers that checked [`using_tsc`]; 0 on other architectures.
#[inline(always)]
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no memory effects; `using_tsc` (checked by the caller) means
        // `init` found an invariant TSC. No lfence: events of one thread stay in program
        // order without serialising, and the hooks do not time single instructions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// CLOCK_MONOTONIC in ns (vDSO, no syscall on Linux x86_64/aarch64).
pub fn mono_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// A (timestamp, CLOCK_MONOTONIC ns) pair read at one instant: the timestamp is read between
/// two clock reads, and the tightest of a few tries is kept (its monotonic time is their
/// midpoint). On a loaded machine the thread can be preempted between two plain reads, which
/// would shift every converted timestamp of the process by a time slice.
pub fn pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let m0 = mono_ns();
        let t = now();
        let m1 = mono_ns();
        let gap = m1.wrapping_sub(m0);
        if gap < best.0 {
            best = (gap, t, m0.wrapping_add(gap / 2));
            if gap < 1_000 {
                break;
            }
        }
    }
    (best.1, best.2)
}

/// True when the CPU reports an invariant TSC (CPUID 0x8000_0007 EDX bit 8).
fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let max_ext = core::arch::x86_64::__cpuid(0x8000_0000).eax;
        if max_ext >= 0x8000_0007 {
            let r = core::arch::x86_64::__cpuid(0x8000_0007);
            return r.edx & (1 << 8) != 0;
        }
    }
    false
}

/// Choose the clock (unless `force_mono`) and return (clock kind, ticks per second). The TSC
/// rate is measured by spinning ~2 ms against CLOCK_MONOTONIC; [`refine`] improves it later.
pub fn init(force_mono: bool) -> (u32, u64) {
    if force_mono || !invariant_tsc() {
        USE_TSC.store(false, Ordering::Relaxed);
        return (hood_abi::CLOCK_MONOTONIC_NS, 1_000_000_000);
    }
    USE_TSC.store(true, Ordering::Relaxed);
    let (t0, m0) = pair();
    let mut m1 = m0;
    while m1.wrapping_sub(m0) < 2_000_000 {
        m1 = mono_ns();
    }
    let (t1, m1) = pair();
    (
        hood_abi::CLOCK_TSC,
        rate(t0, m0, t1, m1).unwrap_or(1_000_000_000),
    )
}

/// Ticks per second from two (ticks, monotonic ns) pairs, if the interval is usable.
pub fn rate(t0: u64, m0: u64, t1: u64, m1: u64) -> Option<u64> {
    let dm = m1.checked_sub(m0)?;
    let dt = t1.checked_sub(t0)?;
    if dm < 1_000_000 {
        return None;
    }
    Some(((dt as u128 * 1_000_000_000u128) / dm as u128) as u64)
}

/// True when timestamps are TSC ticks.
pub fn using_tsc() -> bool {
    USE_TSC.load(Ordering::Relaxed)
}
