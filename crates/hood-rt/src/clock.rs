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
///
/// With the `bench-clockless` feature it is a counter instead, so that `bench/calls/real.sh`
/// can measure what the hooks cost without their clock reads (the times such a runtime
/// records mean nothing).
#[inline(always)]
pub fn tsc() -> u64 {
    #[cfg(feature = "bench-clockless")]
    {
        // Not a read-modify-write: one load and one store, as cheap as the hooks' own work.
        let v = BENCH_TICKS.load(Ordering::Relaxed).wrapping_add(1);
        BENCH_TICKS.store(v, Ordering::Relaxed);
        v
    }
    #[cfg(all(target_arch = "x86_64", not(feature = "bench-clockless")))]
    {
        // SAFETY: rdtsc has no memory effects; `using_tsc` (checked by the caller) means
        // `init` found an invariant TSC. No lfence: events of one thread stay in program
        // order without serialising, and the hooks do not time single instructions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(all(not(target_arch = "x86_64"), not(feature = "bench-clockless")))]
    {
        0
    }
}

/// The counter [`tsc`] returns with the `bench-clockless` feature.
#[cfg(feature = "bench-clockless")]
static BENCH_TICKS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

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
/// rate is `given` (a recorder's measurement, `HOOD_TSC_HZ`) when not 0, else measured by
/// spinning ~2 ms against CLOCK_MONOTONIC; the process's exit improves it over its whole run.
pub fn init(force_mono: bool, given: u64) -> (u32, u64) {
    if force_mono || !invariant_tsc() {
        USE_TSC.store(false, Ordering::Relaxed);
        return (hood_abi::CLOCK_MONOTONIC_NS, 1_000_000_000);
    }
    USE_TSC.store(true, Ordering::Relaxed);
    if given != 0 {
        return (hood_abi::CLOCK_TSC, given);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_ticks_per_second_over_a_usable_interval() {
        // 3 GHz: 3e6 ticks in 1 ms.
        assert_eq!(rate(100, 1_000, 3_000_100, 1_001_000), Some(3_000_000_000));
        // 2.5 ticks per ns over 2 s.
        assert_eq!(
            rate(0, 0, 5_000_000_000, 2_000_000_000),
            Some(2_500_000_000)
        );
        // Shorter than 1 ms: too coarse to calibrate from.
        assert_eq!(rate(0, 0, 1_000_000, 999_999), None);
        // Either clock going backwards (a TSC reset, a bad pair).
        assert_eq!(rate(10, 0, 5, 2_000_000), None);
        assert_eq!(rate(0, 2_000_000, 10, 0), None);
    }

    /// One test for what the process-global clock choice changes: tests run in parallel.
    #[test]
    fn the_clock_choice_holds_and_a_pair_is_read_at_one_instant() {
        let (kind, hz) = init(true, 0);
        assert_eq!((kind, hz), (hood_abi::CLOCK_MONOTONIC_NS, 1_000_000_000));
        assert!(!using_tsc());
        let m0 = mono_ns();
        let (t, m) = pair();
        let m1 = mono_ns();
        // Monotonic nanoseconds: the timestamp is a monotonic read between the two.
        assert!(m0 <= t && t <= m1, "{m0} <= {t} <= {m1}");
        assert!(m0 <= m && m <= m1, "{m0} <= {m} <= {m1}");
        assert!(now() >= t);
        let (kind, hz) = init(false, 0);
        if kind == hood_abi::CLOCK_TSC {
            assert!(using_tsc());
            // A calibrated TSC of some real CPU: between 100 MHz and 10 GHz.
            assert!((100_000_000..10_000_000_000).contains(&hz), "{hz} Hz");
            let m0 = mono_ns();
            let (_, m) = pair();
            assert!(m0 <= m && m <= mono_ns());
        } else {
            assert_eq!(kind, hood_abi::CLOCK_MONOTONIC_NS);
        }
        // A recorder's rate is taken as it is, without a spin.
        if kind == hood_abi::CLOCK_TSC {
            assert_eq!(
                init(false, 2_100_000_000),
                (hood_abi::CLOCK_TSC, 2_100_000_000)
            );
        }
        init(true, 0);
    }
}
