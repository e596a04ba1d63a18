//! The kernel's limits on perf samples that a recording depends on, read from `/proc/sys`.

/// Where the kernel's limit on call-chain frames is set.
pub const MAX_STACK_PATH: &str = "/proc/sys/kernel/perf_event_max_stack";

/// `kernel.perf_event_max_stack`: the most frames the kernel puts in a sample's call chain
/// (the frame-pointer chain that continues user stacks deeper than the stack copy stops
/// there). `None` when it cannot be read.
pub fn max_stack() -> Option<u32> {
    std::fs::read_to_string(MAX_STACK_PATH)
        .ok()?
        .trim()
        .parse()
        .ok()
}
