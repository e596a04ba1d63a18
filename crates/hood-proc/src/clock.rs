//! The clock of hood's recordings.

/// CLOCK_MONOTONIC now, in nanoseconds: the clock perf events are stamped with
/// (`use_clockid`), so recorder times and event times compare directly.
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
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
}
