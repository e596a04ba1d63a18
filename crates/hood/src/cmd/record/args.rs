//! `hood record` / `hood start` arguments and their conversion into the recorder's
//! [`RecordConfig`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use hood_perf::{EventKind, SamplingConfig};
use hood_record::{RecordConfig, Who};

/// Arguments of `hood record` (and `hood start`).
#[derive(Debug, Clone, Args)]
#[command(mut_arg("pid", |a| a.conflicts_with("command").help(
    "Attach to running processes (all their threads), comma-separated"
)))]
pub struct RecordArgs {
    /// Profile the whole system: every CPU, kernel and user, idle included.
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "command"])]
    pub all: bool,
    /// `-p/--pid` (help line set above).
    #[command(flatten)]
    pub pids: crate::cmd::select::Pids<i32>,
    /// Sampling frequency in Hz.
    #[arg(short = 'F', long = "freq", default_value_t = hood_record::DEFAULT_FREQ_HZ)]
    pub freq: u64,
    /// Event to sample: cpu-clock, task-clock, cycles, instructions.
    #[arg(short = 'e', long = "event", default_value = hood_record::DEFAULT_EVENT)]
    pub event: String,
    /// Record call chains (the default).
    #[arg(short = 'g', overrides_with = "no_call_graph")]
    pub g: bool,
    /// How user call stacks are obtained: `auto` (the default) copies the top of the stack
    /// with each sample (8 KiB, doubled up to 64 KiB while stacks are cut by it) and unwinds
    /// it with the binaries' DWARF call frame information, continuing with frame pointers
    /// where that runs out; `dwarf` the same without the frame-pointer chain; `auto,BYTES`,
    /// `dwarf,BYTES`: a fixed copy of BYTES per sample (up to 65528); `fp` follows frame
    /// pointers only (cheapest; stacks of code built without them stop early). Kernel stacks
    /// always come from the kernel.
    #[arg(
        long = "call-graph",
        value_name = "MODE",
        default_value = "auto",
        overrides_with = "no_call_graph"
    )]
    pub call_graph: String,
    /// Record only the sampled instruction, no call chains.
    #[arg(long = "no-call-graph")]
    pub no_call_graph: bool,
    /// Output file.
    #[arg(short = 'o', long = "output", default_value = "hood.data")]
    pub output: PathBuf,
    /// Stop after this many seconds.
    #[arg(short = 'd', long = "duration", value_name = "SECS", value_parser = crate::cmd::values::record_secs)]
    pub duration: Option<f64>,
    /// Ring buffer size per CPU in KiB (rounded up to a power-of-two number of pages);
    /// default: what -F's samples fill in the time the recorder may wait (0.5 s, up to 2 s
    /// with many threads per CPU): 4-16 MiB with stack copies, 1-16 MiB without.
    #[arg(long = "ring-kb")]
    pub ring_kb: Option<usize>,
    /// Testing aid: sleep this long between ring drains (provokes lost samples).
    #[arg(long = "drain-delay-ms", hide = true, default_value_t = 0)]
    pub drain_delay_ms: u64,
    /// Also trace the irq, softirq, network and block events that tell which process each
    /// kernel sample served (`hood report --labels`); needs root.
    #[arg(long = "labels")]
    pub labels: bool,
    /// With --labels: events per second allowed before the per-packet network events are
    /// duty-cycled (their share extrapolated, and said so in the report); 0 = no limit.
    #[arg(long = "labels-budget", default_value_t = 500_000, requires = "labels")]
    pub labels_budget: u64,
    /// Also record where threads wait: every context switch with the stack the thread left
    /// the CPU with (blocked or preempted), and every wake-up with the waker's stack, so
    /// `hood report --wall` shows all of a thread's time and `--by waker` who ended each wait.
    /// Costs a sample with a stack copy per switch and wake-up (see the README's "Off-CPU
    /// time").
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
    /// With --off-cpu: waits shorter than this are reported together per thread instead of
    /// by stack, and their user stacks are not unwound (a number with a unit: 10us, 1ms; a
    /// bare number is microseconds).
    #[arg(
        long = "off-cpu-min",
        value_name = "TIME",
        default_value = "10us",
        requires = "off_cpu",
        value_parser = parse_short_duration
    )]
    pub off_cpu_min: Duration,
    /// With --off-cpu: take one thread's stacks at most this many times a second (0: no
    /// bound). A long wait past the bound gets no stacks of its own; the report charges it
    /// to the same thread's previous stacks, as a CPU sample stands for the time around it.
    /// It keeps a context-switch storm from paying for a stack at every switch.
    #[arg(
        long = "off-cpu-rate",
        value_name = "HZ",
        default_value_t = hood_record::DEFAULT_OFF_CPU_RATE,
        requires = "off_cpu",
        value_parser = clap::value_parser!(u32).range(0..=1_000_000)
    )]
    pub off_cpu_rate: u32,
    /// Where a detached recorder (`hood start`) writes its outcome.
    #[arg(long = "detached-status", hide = true)]
    pub detached_status: Option<PathBuf>,
    /// Command to profile, with its arguments (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl RecordArgs {
    /// Validate and convert; also whether the terminal keys are to be read (not when a
    /// command to profile owns the terminal).
    pub fn to_config(&self) -> anyhow::Result<(RecordConfig, bool)> {
        let who = if self.all {
            Who::System
        } else if !self.pids.pid.is_empty() {
            for &p in &self.pids.pid {
                if p <= 0 {
                    bail!("invalid pid {p}: pids are positive numbers");
                }
            }
            Who::Pids(self.pids.pid.clone())
        } else if !self.command.is_empty() {
            Who::Command(self.command.clone())
        } else {
            bail!("nothing to record: give a command after `--`, `-p PID` or `-a` (see `hood record --help`)");
        };
        if self.freq == 0 || self.freq > 100_000 {
            bail!(
                "-F {}: the sampling frequency must be between 1 and 100000 Hz",
                self.freq
            );
        }
        let event: EventKind = self
            .event
            .parse()
            .with_context(|| format!("-e {}", self.event))?;
        let duration = match self.duration {
            Some(d) if !(d > 0.0 && d.is_finite()) => {
                bail!("-d {d}: the duration must be a positive number of seconds")
            }
            Some(d) => Some(Duration::from_secs_f64(d)),
            None => None,
        };
        let (user_stack, note) = hood_record::parse_call_graph(&self.call_graph)?;
        if let Some(note) = note {
            errln!("hood: {}", crate::cmd::clean(note));
        }
        // Rings sized from the rate, the CPUs and the threads known at the start (those of
        // -p's processes; a command starts with one, -a counts the CPUs only).
        let cpus = hood_perf::online_cpus().map_or(1, |c| c.len());
        let threads = match &who {
            Who::Pids(pids) => pids
                .iter()
                .map(|&p| hood_perf::threads_of(p).map_or(1, |t| t.len()))
                .sum(),
            _ => 1,
        };
        // An ordinary user's locked memory holds the least rings only.
        let least =
            (!hood_proc::usage::running_as_root()).then(|| hood_record::least_ring_kb(user_stack));
        let off_cpu = self.off_cpu.then(|| hood_record::off_cpu_ring_kb(cpus));
        // A copy without a size grows while stacks are cut by it (not with --off-cpu): the
        // rings are sized for the largest.
        let max_stack_copy = match user_stack {
            hood_perf::UserStack::Copy { fp_chain, .. }
                if !self.off_cpu && !hood_record::call_graph_has_size(&self.call_graph) =>
            {
                let max = hood_perf::MAX_STACK_COPY;
                (
                    max,
                    hood_perf::UserStack::Copy {
                        bytes: max,
                        fp_chain,
                    },
                )
            }
            hood_perf::UserStack::Copy { bytes, .. } => (bytes, user_stack),
            hood_perf::UserStack::FramePointer => (0, user_stack),
        };
        let (max_stack_copy, ring_stack) = max_stack_copy;
        let pages = hood_record::ring_pages(
            self.ring_kb.or(least).or(off_cpu),
            ring_stack,
            self.freq,
            cpus,
            threads,
        );
        let sampling = SamplingConfig {
            event,
            freq_hz: self.freq,
            callchain: !self.no_call_graph,
            user_stack,
            ring_pages: pages,
            off_cpu: self.off_cpu,
            ..SamplingConfig::default()
        };
        let keys = !matches!(who, Who::Command(_));
        let cfg = RecordConfig {
            who,
            sampling,
            requested_event: self.event.clone(),
            output: self.output.clone(),
            duration,
            drain_delay: Duration::from_millis(self.drain_delay_ms),
            labels: self.labels,
            labels_budget: self.labels_budget,
            off_cpu_min: self.off_cpu_min,
            off_cpu_rate: self.off_cpu_rate,
            max_stack_copy,
        };
        Ok((cfg, keys))
    }
}

/// A short duration: a number and a unit (`ns`, `us`, `µs`, `ms`, `s`); a bare number is in
/// microseconds. At most one hour.
pub fn parse_short_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration: write a number and a unit, e.g. 10us"))?;
    let ns_per = match unit.trim() {
        "ns" => 1.0,
        "" | "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {s:?}: use ns, us, ms or s"
            ))
        }
    };
    let ns = n * ns_per;
    if !(ns.is_finite() && (0.0..=3.6e12).contains(&ns)) {
        return Err(format!("{s:?}: the duration must be between 0 and 1 hour"));
    }
    Ok(Duration::from_nanos(ns as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_durations_parse_with_units_and_refuse_nonsense() {
        assert_eq!(parse_short_duration("10us"), Ok(Duration::from_micros(10)));
        assert_eq!(parse_short_duration("10"), Ok(Duration::from_micros(10)));
        assert_eq!(
            parse_short_duration("1.5ms"),
            Ok(Duration::from_micros(1500))
        );
        assert_eq!(parse_short_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_short_duration("250ns"), Ok(Duration::from_nanos(250)));
        for bad in ["", "x", "10 parsecs", "1e30", "2h", "-1us", "nan"] {
            assert!(parse_short_duration(bad).is_err(), "{bad}");
        }
    }
}
