//! The clock of hood's recordings.

/// CLOCK_MONOTONIC now, in nanoseconds: the clock perf events are stamped with
/// (`use_clockid`), so recorder times and event times compare directly.
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The TSC's rate measured against CLOCK_MONOTONIC by a recorder once, without spinning, so
/// that the runtime it preloads into every program it starts need not measure it there (a
/// ~2 ms spin of CPU per process; the recorder hands the rate on in `HOOD_TSC_HZ`).
///
/// [`TscRate::start`] reads the first (TSC, monotonic) pair; [`TscRate::finish`] the second,
/// sleeping first if less than the interval asked for has passed. The recorder's own set-up
/// runs in between, so the wait is usually over before it is asked for.
#[derive(Debug, Clone, Copy)]
pub struct TscRate {
    ticks: u64,
    mono_ns: u64,
}

impl TscRate {
    /// The first pair, or `None` where there is no invariant TSC (the runtime then uses
    /// CLOCK_MONOTONIC and needs no rate).
    pub fn start() -> Option<TscRate> {
        if !invariant_tsc() {
            return None;
        }
        let (ticks, mono_ns) = tsc_pair()?;
        Some(TscRate { ticks, mono_ns })
    }

    /// Ticks per second over at least `min` since [`TscRate::start`], or `None` when the
    /// interval is unusable (a clock went backwards) or the rate is not a CPU's (outside
    /// 100 MHz – 10 GHz).
    pub fn finish(self, min: std::time::Duration) -> Option<u64> {
        let min_ns = u64::try_from(min.as_nanos()).unwrap_or(u64::MAX);
        let since = monotonic_ns().saturating_sub(self.mono_ns);
        if since < min_ns {
            std::thread::sleep(std::time::Duration::from_nanos(min_ns - since));
        }
        let (t1, m1) = tsc_pair()?;
        rate(self.ticks, self.mono_ns, t1, m1)
    }
}

/// Ticks per second from two (ticks, monotonic ns) pairs at least 1 ms apart, if it is a
/// CPU's TSC rate.
fn rate(t0: u64, m0: u64, t1: u64, m1: u64) -> Option<u64> {
    let dm = m1.checked_sub(m0).filter(|&d| d >= 1_000_000)?;
    let dt = t1.checked_sub(t0)?;
    let hz = (u128::from(dt) * 1_000_000_000 / u128::from(dm)) as u64;
    (100_000_000..=10_000_000_000).contains(&hz).then_some(hz)
}

/// True when the CPU says its TSC is invariant (CPUID 0x8000_0007 EDX bit 8), as the runtime
/// checks before it uses the TSC.
fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let max_ext = core::arch::x86_64::__cpuid(0x8000_0000).eax;
        if max_ext >= 0x8000_0007 {
            return core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0;
        }
    }
    false
}

/// A (TSC, monotonic ns) pair read at one instant: the TSC between two clock reads, the
/// tightest of a few tries, its time their midpoint (a preemption between two plain reads
/// would shift the pair by a time slice).
fn tsc_pair() -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..16 {
            let m0 = monotonic_ns();
            // SAFETY: rdtsc reads the time-stamp counter and touches no memory; every x86_64
            // CPU has it.
            let t = unsafe { core::arch::x86_64::_rdtsc() };
            let m1 = monotonic_ns();
            let gap = m1.saturating_sub(m0);
            if gap < best.0 {
                best = (gap, t, m0 + gap / 2);
                if gap < 1_000 {
                    break;
                }
            }
        }
        Some((best.1, best.2))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_never_goes_back_and_follows_sleep() {
        let a = super::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = super::monotonic_ns();
        assert!(b >= a + 20_000_000, "{a} then {b}");
    }

    #[test]
    fn a_rate_needs_a_usable_interval_and_a_cpus_frequency() {
        // 2.1 GHz over 10 ms.
        assert_eq!(
            super::rate(0, 0, 21_000_000, 10_000_000),
            Some(2_100_000_000)
        );
        // Under 1 ms, backwards, or no CPU's rate.
        assert_eq!(super::rate(0, 0, 2_100_000, 999_999), None);
        assert_eq!(super::rate(10, 0, 5, 10_000_000), None);
        assert_eq!(super::rate(0, 10_000_000, 5, 0), None);
        assert_eq!(super::rate(0, 0, 10, 10_000_000), None);
    }

    /// The rate measured while sleeping agrees with one measured over a longer interval by
    /// plain reads (0.1 %), and the wait asked for is kept.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_sleeping_measurement_agrees_with_a_long_one() {
        let Some(start) = super::TscRate::start() else {
            return; // no invariant TSC here: nothing to measure
        };
        let t0 = super::monotonic_ns();
        let hz = start.finish(std::time::Duration::from_millis(10)).unwrap();
        assert!(super::monotonic_ns() - t0 >= 9_000_000);
        let (a, m0) = super::tsc_pair().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (b, m1) = super::tsc_pair().unwrap();
        let long = super::rate(a, m0, b, m1).unwrap();
        let off = (hz as f64 - long as f64).abs() / long as f64;
        assert!(off < 1e-3, "{hz} Hz against {long} Hz over 300 ms");
    }
}
