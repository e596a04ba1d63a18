//! `hood record` / `hood start` arguments and their conversion into a [`RecordConfig`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use hood_perf::{EventKind, SamplingConfig};

/// Arguments of `hood record` (and `hood start`).
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Profile the whole system: every CPU, kernel and user, idle included.
    #[arg(short = 'a', long = "all-cpus", conflicts_with_all = ["pid", "command"])]
    pub all: bool,
    /// Attach to running processes (all their threads), comma-separated.
    #[arg(
        short = 'p',
        long = "pid",
        value_delimiter = ',',
        conflicts_with = "command"
    )]
    pub pid: Vec<i32>,
    /// Sampling frequency in Hz.
    #[arg(short = 'F', long = "freq", default_value_t = 999)]
    pub freq: u64,
    /// Event to sample: cpu-clock, task-clock, cycles, instructions.
    #[arg(short = 'e', long = "event", default_value = "cpu-clock")]
    pub event: String,
    /// Record call chains (the default; kernel chains always, user chains by frame pointer).
    #[arg(short = 'g', long = "call-graph", overrides_with = "no_call_graph")]
    pub call_graph: bool,
    /// Record only the sampled instruction, no call chains.
    #[arg(long = "no-call-graph")]
    pub no_call_graph: bool,
    /// Output file.
    #[arg(short = 'o', long = "output", default_value = "hood.data")]
    pub output: PathBuf,
    /// Stop after this many seconds.
    #[arg(short = 'd', long = "duration")]
    pub duration: Option<f64>,
    /// Ring buffer size per CPU in KiB (rounded up to a power-of-two number of pages).
    #[arg(long = "ring-kb", default_value_t = 1024)]
    pub ring_kb: usize,
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
    /// Where a detached recorder (`hood start`) writes its outcome.
    #[arg(long = "detached-status", hide = true)]
    pub detached_status: Option<PathBuf>,
    /// Command to profile, with its arguments (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

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

/// Everything the recorder needs, free of clap.
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
    /// Whether terminal keys are read.
    pub keys: bool,
    /// Sleep between drains (testing aid).
    pub drain_delay: Duration,
    /// Record the events of process-labeled kernel profiling.
    pub labels: bool,
    /// Events per second before per-packet events are duty-cycled (0: never).
    pub labels_budget: u64,
}

impl RecordArgs {
    /// Validate and convert.
    pub fn to_config(&self) -> anyhow::Result<RecordConfig> {
        let who = if self.all {
            Who::System
        } else if !self.pid.is_empty() {
            for &p in &self.pid {
                if p <= 0 {
                    bail!("invalid pid {p}: pids are positive numbers");
                }
            }
            Who::Pids(self.pid.clone())
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
        let page = 4096;
        let pages = (self.ring_kb * 1024)
            .div_ceil(page)
            .max(1)
            .next_power_of_two();
        let sampling = SamplingConfig {
            event,
            freq_hz: self.freq,
            callchain: !self.no_call_graph,
            ring_pages: pages,
            ..SamplingConfig::default()
        };
        Ok(RecordConfig {
            keys: !matches!(who, Who::Command(_)),
            who,
            sampling,
            requested_event: self.event.clone(),
            output: self.output.clone(),
            duration,
            drain_delay: Duration::from_millis(self.drain_delay_ms),
            labels: self.labels,
            labels_budget: self.labels_budget,
        })
    }
}
