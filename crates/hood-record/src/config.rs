//! What to record, free of any command line.

use std::path::PathBuf;
use std::time::Duration;

use hood_perf::{EventKind, SamplingConfig, UserStack, DEFAULT_STACK_COPY, MAX_STACK_COPY};

use crate::RecordError;

/// The sampling frequency when none is asked for, in Hz.
pub const DEFAULT_FREQ_HZ: u64 = 999;
/// The event sampled when none is asked for.
pub const DEFAULT_EVENT: &str = "cpu-clock";

/// Whom to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// The whole system.
    System,
    /// Running processes.
    Pids(Vec<i32>),
    /// A command to start.
    Command(Vec<String>),
}

/// Everything the recorder needs.
#[derive(Debug, Clone)]
pub struct RecordConfig {
    /// Whom to record.
    pub who: Who,
    /// Sampling settings for hood-perf.
    pub sampling: SamplingConfig,
    /// The event the user asked for (before any fallback).
    pub requested_event: String,
    /// Output path.
    pub output: PathBuf,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Sleep between drains (testing aid).
    pub drain_delay: Duration,
    /// Record the events of process-labeled kernel profiling.
    pub labels: bool,
    /// Events per second before per-packet events are duty-cycled (0: never).
    pub labels_budget: u64,
    /// With `sampling.off_cpu`: off-CPU intervals shorter than this are shown together, as one
    /// pseudo-frame per thread, not with their stacks (`--off-cpu-min`).
    pub off_cpu_min: Duration,
    /// With `sampling.off_cpu` and deferred stacks: at most this many takings of one thread's
    /// stacks a second (`--off-cpu-rate`; 0: no bound). A long wait past the bound gets no
    /// stacks of its own, and the report charges it to its thread's previous ones.
    pub off_cpu_rate: u32,
    /// The user stack copy may grow up to this many bytes while stacks are cut by it
    /// (doubling; bounded too by what the ring holds): `--call-graph auto|dwarf` without a
    /// size. At most the copy asked for: a fixed copy.
    pub max_stack_copy: u32,
}

/// `--off-cpu-min`'s default: shorter waits are the scheduler's ordinary churn.
pub const DEFAULT_OFF_CPU_MIN: Duration = Duration::from_micros(10);

/// `--off-cpu-rate`'s default: stacks a thread's waits may take per second, as many as the
/// CPU samples a busy thread gets at the default `-F`.
pub const DEFAULT_OFF_CPU_RATE: u32 = 1000;

impl RecordConfig {
    /// What `hood record` records without options: `DEFAULT_EVENT` at `DEFAULT_FREQ_HZ`
    /// with call chains (`--call-graph auto`), until stopped, into `output`.
    pub fn new(who: Who, output: PathBuf) -> RecordConfig {
        let user_stack = default_user_stack();
        RecordConfig {
            who,
            sampling: SamplingConfig {
                event: EventKind::CpuClock,
                freq_hz: DEFAULT_FREQ_HZ,
                callchain: true,
                user_stack,
                ring_pages: ring_pages(None, user_stack, DEFAULT_FREQ_HZ, 1, 1),
                ..SamplingConfig::default()
            },
            requested_event: DEFAULT_EVENT.into(),
            output,
            duration: None,
            drain_delay: Duration::ZERO,
            labels: false,
            labels_budget: 500_000,
            off_cpu_min: DEFAULT_OFF_CPU_MIN,
            off_cpu_rate: DEFAULT_OFF_CPU_RATE,
            max_stack_copy: MAX_STACK_COPY,
        }
    }
}

/// `--call-graph auto`: stack copies of `DEFAULT_STACK_COPY` bytes unwound with the binaries'
/// call frame information, continued by frame pointers; frame pointers only where stack
/// copies are not unwound (other than x86-64).
pub fn default_user_stack() -> UserStack {
    if cfg!(target_arch = "x86_64") {
        UserStack::Copy {
            bytes: DEFAULT_STACK_COPY,
            fp_chain: true,
        }
    } else {
        UserStack::FramePointer
    }
}

/// Pages of each CPU's ring for `ring_kb` KiB, rounded up to a power of two; without
/// `ring_kb`, `default_ring_kb` for `freq_hz`, `cpus` CPUs and `threads` threads to sample.
pub fn ring_pages(
    ring_kb: Option<usize>,
    user_stack: UserStack,
    freq_hz: u64,
    cpus: usize,
    threads: usize,
) -> usize {
    let ring_kb = ring_kb.unwrap_or_else(|| default_ring_kb(user_stack, freq_hz, cpus, threads));
    let page = 4096;
    (ring_kb.saturating_mul(1024))
        .div_ceil(page)
        .max(1)
        .next_power_of_two()
}

/// The least ring per CPU, KiB: 1 MiB, or 4 MiB when samples carry stack copies.
const MIN_RING_KB: [usize; 2] = [1024, 4096];
/// The most a default ring per CPU takes, KiB (16 MiB: no sample lost with 64 busy threads
/// on 2 CPUs at 999 Hz).
const MAX_RING_KB: usize = 16 << 10;
/// The most the default rings of all CPUs take together, KiB (locked memory).
const MAX_RINGS_KB: usize = 256 << 10;

/// The least ring per CPU, KiB (1 MiB, or 4 MiB with stack copies): the default of a
/// recorder that is not root, whose locked memory is `kernel.perf_event_mlock_kb` and
/// `ulimit -l`.
pub fn least_ring_kb(user_stack: UserStack) -> usize {
    MIN_RING_KB[usize::from(user_stack.copies_stack())]
}

/// The ring per CPU, KiB, of an off-CPU recording when `--ring-kb` is not given: the most a
/// default ring takes (16 MiB, and 256 MiB over all CPUs). Every context switch and wake-up
/// writes into the rings too, at a rate the sampling rate says nothing about (100,000 a
/// second per CPU in a context-switch storm).
pub fn off_cpu_ring_kb(cpus: usize) -> usize {
    MAX_RING_KB
        .min(MAX_RINGS_KB / cpus.max(1))
        .max(MIN_RING_KB[1])
}

/// [`off_cpu_ring_kb`] in pages for this machine's online CPUs.
pub fn off_cpu_ring_pages(user_stack: UserStack) -> usize {
    let cpus = hood_perf::online_cpus().map_or(1, |c| c.len());
    ring_pages(Some(off_cpu_ring_kb(cpus)), user_stack, 0, cpus, 1)
}

/// The ring per CPU, KiB, when `--ring-kb` is not given: what the CPU's samples fill in the
/// time the recorder may wait for its turn. A CPU takes at most `freq_hz` samples a second
/// of `sample bytes` each (the stack copy plus 256 bytes of header, registers and kernel
/// chain; 512 without a copy); the recorder may wait half a second, and longer the more
/// threads share each CPU with it (0.5 s × threads per CPU, at most 2 s). Then at least 1 MiB
/// (4 MiB with stack copies), at most 16 MiB, and all CPUs' rings together at most 256 MiB
/// unless the least needs more.
pub fn default_ring_kb(user_stack: UserStack, freq_hz: u64, cpus: usize, threads: usize) -> usize {
    let (copy, min) = match user_stack {
        UserStack::Copy { bytes, .. } => (bytes as u64 + 256, MIN_RING_KB[1]),
        _ => (512, MIN_RING_KB[0]),
    };
    let cpus = cpus.max(1) as u64;
    // Half-seconds of waiting: 1 per thread per CPU, 1 to 4.
    let halves = (threads as u64).div_ceil(cpus).clamp(1, 4);
    let want_kb = freq_hz.saturating_mul(copy).saturating_mul(halves) / 2 / 1024;
    let cap = MAX_RING_KB.min(MAX_RINGS_KB / cpus as usize).max(min);
    (want_kb.min(usize::MAX as u64) as usize).clamp(min, cap)
}

/// The largest stack copy a recording may grow to with rings of `ring_pages` pages at
/// `freq_hz`: the ring holds a quarter of a second of one thread's samples (copy plus 256
/// bytes), and never more than `max` or [`MAX_STACK_COPY`].
pub fn stack_copy_cap(max: u32, ring_pages: usize, freq_hz: u64) -> u32 {
    let ring = (ring_pages as u64).saturating_mul(4096);
    let fits = (ring.saturating_mul(4) / freq_hz.max(1)).saturating_sub(256) / 8 * 8;
    fits.min(u64::from(max.min(MAX_STACK_COPY))) as u32
}

/// Whether `--call-graph`'s text `s` names a size (a fixed copy, never grown).
pub fn call_graph_has_size(s: &str) -> bool {
    s.contains(',')
}

/// How `stack` reads in `--call-graph`'s words (stored in the recording's metadata).
pub fn call_graph_name(stack: UserStack) -> String {
    match stack {
        UserStack::FramePointer => "fp".into(),
        UserStack::Copy {
            bytes,
            fp_chain: false,
        } => format!("dwarf,{bytes}"),
        UserStack::Copy {
            bytes,
            fp_chain: true,
        } => format!("auto,{bytes}"),
    }
}

/// Parse `--call-graph fp|dwarf[,BYTES]|auto[,BYTES]`, with a note to show the user when the
/// choice cannot be honoured here (stack copies are unwound on x86-64 only: frame pointers
/// instead).
pub fn parse_call_graph(s: &str) -> Result<(UserStack, Option<String>), RecordError> {
    let (mode, size) = match s.split_once(',') {
        Some((m, b)) => (m, Some(b)),
        None => (s, None),
    };
    let bytes = match size {
        None => DEFAULT_STACK_COPY,
        Some(b) => {
            let n: u32 = b.trim().parse().map_err(|e| {
                RecordError::Option(format!(
                    "--call-graph {s}: the stack copy size {b:?} is not a number of bytes: {e}"
                ))
            })?;
            if n == 0 || n > MAX_STACK_COPY {
                return Err(RecordError::Option(format!(
                    "--call-graph {s}: the stack copy must be between 8 and {MAX_STACK_COPY} bytes"
                )));
            }
            // The kernel copies whole 8-byte words.
            n.div_ceil(8) * 8
        }
    };
    let stack = match mode {
        "fp" if size.is_none() => UserStack::FramePointer,
        "dwarf" => UserStack::Copy {
            bytes,
            fp_chain: false,
        },
        "auto" => UserStack::Copy {
            bytes,
            fp_chain: true,
        },
        _ => {
            return Err(RecordError::Option(format!(
                "--call-graph {s}: choose fp, dwarf, dwarf,BYTES, auto or auto,BYTES \
                 (e.g. --call-graph dwarf,16384 for deeper stacks)"
            )))
        }
    };
    if stack.copies_stack() && !cfg!(target_arch = "x86_64") {
        return Ok((
            UserStack::FramePointer,
            Some(format!(
                "--call-graph {s}: stack copies are unwound on x86-64 only; using frame pointers"
            )),
        ));
    }
    Ok((stack, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_are_powers_of_two_pages() {
        let fp = UserStack::FramePointer;
        assert_eq!(ring_pages(None, fp, 999, 2, 1), 256);
        assert_eq!(off_cpu_ring_kb(2), 16 << 10);
        assert_eq!(off_cpu_ring_kb(64), 4 << 10);
        assert_eq!(off_cpu_ring_kb(1024), 4 << 10);
        assert_eq!(ring_pages(Some(1), fp, 999, 2, 1), 1);
        assert_eq!(ring_pages(Some(5), fp, 999, 2, 1), 2);
        assert_eq!(ring_pages(Some(0), fp, 999, 2, 1), 1);
    }

    #[test]
    fn default_rings_follow_rate_cpus_and_threads() {
        let copy = UserStack::Copy {
            bytes: 8192,
            fp_chain: true,
        };
        // 999 Hz x 8448 bytes x 0.5 s = 4120 KiB, just past 4 MiB: 8 MiB of pages.
        assert_eq!(default_ring_kb(copy, 999, 2, 1), 4120);
        assert_eq!(ring_pages(None, copy, 999, 2, 1), 2048);
        // 64 threads on 2 CPUs: 2 s of waiting, 16 MiB.
        assert_eq!(default_ring_kb(copy, 999, 2, 64), 16 << 10);
        // 4999 Hz: past the cap of 16 MiB per CPU.
        assert_eq!(default_ring_kb(copy, 4999, 2, 1), 16 << 10);
        // 64 CPUs: 256 MiB over all of them, 4 MiB each (the least).
        assert_eq!(default_ring_kb(copy, 4999, 64, 64), 4096);
        // 128 CPUs: the least still, 4 MiB each, though the total passes 256 MiB.
        assert_eq!(default_ring_kb(copy, 4999, 128, 1), 4096);
        // Frame pointers: 999 x 512 x 0.5 s = 250 KiB; the least, 1 MiB.
        assert_eq!(default_ring_kb(UserStack::FramePointer, 999, 2, 1), 1024);
        // Never a zero-sized answer, whatever the rate.
        assert_eq!(default_ring_kb(UserStack::FramePointer, 0, 0, 0), 1024);
    }

    #[test]
    fn grown_copies_fit_the_ring() {
        // 16 MiB at 999 Hz holds a quarter second of 64 KiB copies.
        assert_eq!(stack_copy_cap(MAX_STACK_COPY, 4096, 999), MAX_STACK_COPY);
        // 4 MiB (an unprivileged recorder's): 16,536 bytes.
        assert_eq!(stack_copy_cap(MAX_STACK_COPY, 1024, 999), 16536);
        // A fixed copy stays what it was.
        assert_eq!(stack_copy_cap(8192, 4096, 999), 8192);
        assert_eq!(stack_copy_cap(MAX_STACK_COPY, 1, 100_000), 0);
    }

    #[test]
    fn call_graph_names() {
        assert_eq!(call_graph_name(UserStack::FramePointer), "fp");
        let copy = |fp_chain| UserStack::Copy {
            bytes: 8192,
            fp_chain,
        };
        assert_eq!(call_graph_name(copy(false)), "dwarf,8192");
        assert_eq!(call_graph_name(copy(true)), "auto,8192");
    }

    #[test]
    fn defaults_match_the_documented_ones() {
        let c = RecordConfig::new(Who::System, "x".into());
        assert_eq!(c.sampling.freq_hz, 999);
        assert!(c.sampling.callchain);
        assert_eq!(c.requested_event, "cpu-clock");
        assert_eq!(c.sampling.event.to_string(), "cpu-clock");
    }
}
