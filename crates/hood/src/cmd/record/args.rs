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
    #[arg(short = 'F', long = "freq", default_value_t = hood_record::DEFAULT_FREQ_HZ)]
    pub freq: u64,
    /// Event to sample: cpu-clock, task-clock, cycles, instructions.
    #[arg(short = 'e', long = "event", default_value = hood_record::DEFAULT_EVENT)]
    pub event: String,
    /// Record call chains (the default).
    #[arg(short = 'g', overrides_with = "no_call_graph")]
    pub g: bool,
    /// How user call stacks are obtained: `auto` (the default) copies the top of the stack
    /// with each sample (8 KiB) and unwinds it with the binaries' DWARF call frame
    /// information, continuing with frame pointers where that runs out; `dwarf[,BYTES]` the
    /// same without the frame-pointer chain (BYTES: stack copied per sample, up to 65528);
    /// `fp` follows frame pointers only (cheapest; stacks of code built without them stop
    /// early). Kernel stacks always come from the kernel.
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
    /// default 1024, or 4096 when samples carry stack copies.
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
        let (user_stack, note) = hood_record::parse_call_graph(&self.call_graph)?;
        if let Some(note) = note {
            eprintln!("hood: {note}");
        }
        let pages = hood_record::ring_pages(self.ring_kb, user_stack);
        let sampling = SamplingConfig {
            event,
            freq_hz: self.freq,
            callchain: !self.no_call_graph,
            user_stack,
            ring_pages: pages,
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
        };
        Ok((cfg, keys))
    }
}
