//! Probed functions (`--probe`): entry and return events of functions in programs nobody
//! rebuilt, from the kernel's uprobes (hood-perf's [`UprobeRecorder`](hood_perf::UprobeRecorder),
//! which says why they are tracefs uprobe events), for a command hood
//! starts or for processes already running. The events become what an instrumented program's
//! runtime would have written: a trace file `hood trace report` reads unchanged (the runtime's
//! 8-byte event words, one EVENTS chunk per thread and round, on a 1 GHz CLOCK_MONOTONIC
//! clock), or call-path tables `hood calls report` reads unchanged.
//!
//! Each CPU's ring is drained every few milliseconds; hits of all CPUs are put in time order
//! (a thread moves between CPUs) and handed on once no CPU can still deliver an older one. The
//! probes are placed in a program only while hood's events are open: however hood ends, the
//! kernel takes them out of the program, and an attached process runs on unchanged (the
//! inert definitions a SIGKILLed hood leaves in tracefs are removed by the next one).
//!
//! The rooms: `select` (the specs resolved into functions), `calibrate` (what a probed call
//! costs here), `hits` (the rings' records and their time order), `follow` (processes that
//! exec or load a library), `outputs` (a trace file or call-path tables) and `run` (the
//! session: open → start → rounds until a stop → finish).

use std::path::PathBuf;
use std::time::Duration;

mod calibrate;
mod follow;
mod hits;
mod outputs;
mod run;
mod select;

pub use calibrate::{calibrate, Calibration};
pub use hits::{decode_hits, Hit};
pub use run::record;
pub use select::select;

/// What one probe hit costs the probed program, measured on the machine the docs were written
/// on (bench/probe: an entry and a return, each a breakpoint trap into the kernel and a perf
/// sample): the first estimate of a selection's cost, said before it is paid.
pub const COST_PER_CALL_NS: u64 = 10_000;

/// Whose calls are probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeRun {
    /// A command hood starts (`-- CMD`): probed from its exec, with its children.
    Command(Vec<String>),
    /// Running processes (`-p`), with the threads and children they start.
    Pids(Vec<u32>),
}

/// What the events become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutput {
    /// A trace file (`hood trace record --probe`).
    Trace(PathBuf),
    /// A Calls file (`hood calls run|record --probe`).
    Calls(PathBuf),
}

/// A probe recording.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// `--probe` specs.
    pub specs: Vec<String>,
    /// Go ahead with more than [`CONFIRM_ABOVE`](hood_symbols::probe::CONFIRM_ABOVE) functions
    /// (`--yes`).
    pub yes: bool,
    /// Whose calls.
    pub run: ProbeRun,
    /// Stop after this long (attached processes run on).
    pub duration: Option<Duration>,
    /// Record context switches (traces).
    pub sched: bool,
    /// Where to.
    pub output: ProbeOutput,
}

/// How a probe recording ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOutcome {
    /// The command's exit status as a shell reports it (0 for attached processes).
    pub status: i32,
    /// Probe hits recorded (entries and returns).
    pub events: u64,
    /// Hits the kernel lost (rings full).
    pub lost: u64,
    /// The error that ended the recording early (a ring that could not be read, a write
    /// that failed): a command started was killed, and the file holds what was recorded
    /// before (logged).
    pub error: Option<String>,
}

/// Ring pages per CPU: 1 MiB, 26,000 hits, drained every few milliseconds.
pub(crate) const RING_PAGES: usize = 256;
/// A hit is handed on once every ring has been drained past its time by this much.
pub(crate) const SETTLE_NS: u64 = 1_000_000;
