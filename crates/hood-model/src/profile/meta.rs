//! Metadata chunks written by the recorder and read by every report: how the recording was
//! made (`RecordMeta`, first chunk) and what happened (`RecordStats`, last chunk).

use std::collections::BTreeMap;

use hood_raw::BuildId;
use serde::{Deserialize, Serialize};

/// What a recording sampled ([`RecordMeta::mode`]), stored as its word in the file and
/// the JSON report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordMode {
    /// `hood record -a`: every CPU.
    #[serde(rename = "system")]
    System,
    /// `hood record -p`: processes attached to.
    #[serde(rename = "pids")]
    Pids,
    /// `hood record -- CMD`: a command the recorder started.
    #[serde(rename = "command")]
    Command,
    /// A perf.data file read by hood.
    #[serde(rename = "perf record")]
    PerfRecord,
    /// None stored, or a word this hood does not know (a newer hood's file).
    #[default]
    #[serde(rename = "", other)]
    Unknown,
}

/// How a sampled recording was made. Stored as JSON in the `profile::META` chunk.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RecordMeta {
    /// Version of hood that wrote the file.
    pub hood_version: String,
    /// What was sampled: stored as `system`, `pids`, `command` or `perf record`.
    pub mode: RecordMode,
    /// The profiled command line (`command` mode).
    pub command: Vec<String>,
    /// Attached pids (`pids` mode).
    pub pids: Vec<u32>,
    /// Event that was sampled (after any fallback).
    pub event: String,
    /// Event the user asked for.
    pub requested_event: String,
    /// Sampling frequency in Hz.
    pub freq_hz: u64,
    /// Whether call chains were recorded.
    pub callchain: bool,
    /// How user stacks were obtained, in `--call-graph`'s words (`fp`, `dwarf,8192`,
    /// `auto,8192`); empty in files from before the choice existed (frame pointers).
    pub call_graph: String,
    /// Host name of the recording machine.
    pub hostname: String,
    /// `uname -r` of the recording machine.
    pub kernel_release: String,
    /// Kernel build-id of the recording machine, when readable (hex in the file; one that
    /// is not a build-id is read as none).
    #[serde(deserialize_with = "hood_raw::build_id::deserialize_option")]
    pub kernel_build_id: Option<BuildId>,
    /// CPU number of each ring, in ring order.
    pub cpus: Vec<u32>,
    /// CLOCK_MONOTONIC at the start, ns (the clock of every sample timestamp).
    pub start_monotonic_ns: u64,
    /// Wall clock at the start, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// Notes the recorder printed (fallbacks and the like).
    pub notes: Vec<String>,
    /// The recorder writes a `KALLSYMS_USED` chunk when it finishes, so a reader may leave
    /// the whole kallsyms text unread (false in files from before it did).
    pub kallsyms_used_at_end: bool,
    /// Off-CPU recording (`hood record --off-cpu`): switches and wake-ups were recorded.
    pub off_cpu: Option<OffCpuMeta>,
    /// `kernel.perf_event_max_stack` while recording: the kernel's call chains, which
    /// continue user stacks deeper than the stack copy, stop at this many frames (`None` in
    /// files from before it was stored, and in imported perf.data files).
    pub perf_event_max_stack: Option<u32>,
}

/// How off-CPU time was recorded ([`RecordMeta::off_cpu`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct OffCpuMeta {
    /// The `format` file texts of `sched:sched_switch` and `sched:sched_waking` on the
    /// recording machine (the samples' raw records are read with them).
    pub formats: Vec<String>,
    /// Off-CPU intervals shorter than this many ns are counted, not shown with their stack
    /// (`--off-cpu-min`).
    pub min_ns: u64,
    /// Wake-ups by interrupts and other processes were recorded too (a task session's
    /// whole-CPU wake-up events; always in a whole-system recording).
    pub all_wakeups: bool,
    /// At most this many takings of one thread's stacks a second (`--off-cpu-rate`; 0: no
    /// bound, every long wait has its own): a long wait without stacks in a recording with a
    /// bound is charged to its thread's previous ones.
    pub stack_rate: u32,
}

/// Per-CPU counters kept by the recorder.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CpuCounts {
    /// Sample records received.
    pub samples: u64,
    /// Samples the kernel dropped (sum of PERF_RECORD_LOST and LOST_SAMPLES counts).
    pub lost: u64,
    /// PERF_RECORD_THROTTLE records (the kernel lowered the rate).
    pub throttled: u64,
    /// Raw ring bytes written.
    pub bytes: u64,
}

/// What happened during a recording. Stored as JSON in the `profile::STATS` chunk at
/// finalization; a file without it was cut short.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RecordStats {
    /// CLOCK_MONOTONIC at the end, ns.
    pub end_monotonic_ns: u64,
    /// Time sampling was paused, ns.
    pub paused_ns: u64,
    /// Counters per CPU number.
    pub per_cpu: BTreeMap<u32, CpuCounts>,
    /// Why recording stopped: `command exited`, `all attached processes exited`, `duration
    /// reached`, `stopped by user`; after an error (then in [`RecordStats::error`]) `write
    /// error`, `labels error`, `poll error`, `pause error` or `error` (reading the rings);
    /// `perf record` for an imported perf.data file.
    pub stop_reason: String,
    /// The profiled command's exit status (`command` mode).
    pub exit_status: Option<i32>,
    /// An error that ended the recording early, if any.
    pub error: Option<String>,
    /// The user stack copy in bytes the recorder grew to while stacks were cut by it (0: not
    /// grown; the copy asked for is in [`RecordMeta::call_graph`]).
    pub stack_copy_grown_to: u32,
    /// Samples stored with their raw registers and stack copy (`RAW_SAMPLES` chunks), to be
    /// unwound at report time: the recorder's unwinding fell behind the rings (or
    /// `HOOD_KEEP_STACK_COPIES=1`). Older files lack it.
    pub raw_stacks: u64,
    /// Every sample's copy was kept raw because `HOOD_KEEP_STACK_COPIES=1` asked for it, not
    /// because the unwinding fell behind.
    pub raw_stacks_asked: bool,
}

impl RecordStats {
    // The counts come from the file: summed without wrapping (or panicking) on absurd values.

    /// Total samples over all CPUs.
    pub fn samples(&self) -> u64 {
        self.per_cpu
            .values()
            .fold(0u64, |n, c| n.saturating_add(c.samples))
    }

    /// Total lost samples over all CPUs.
    pub fn lost(&self) -> u64 {
        self.per_cpu
            .values()
            .fold(0u64, |n, c| n.saturating_add(c.lost))
    }

    /// Total throttle events over all CPUs.
    pub fn throttled(&self) -> u64 {
        self.per_cpu
            .values()
            .fold(0u64, |n, c| n.saturating_add(c.throttled))
    }
}

/// One process as found in /proc when recording started.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ProcSnapshot {
    /// Process id.
    pub pid: u32,
    /// Short name (/proc/PID/comm).
    pub comm: String,
    /// Raw lines of /proc/PID/maps: its executable mappings, as many as fit in
    /// [`MAX_SNAPSHOT_MAPS`] bytes and in the process's share of the recorder's cap over all
    /// processes (files of older hoods: every line).
    pub maps: String,
    /// Threads: (tid, comm).
    pub threads: Vec<(u32, String)>,
    /// Executable mappings left out of `maps` past either cap: samples in them are not
    /// named.
    pub maps_dropped: u64,
    /// /proc/PID/maps was longer than the recorder reads (4 MiB): the executable mappings
    /// past that were neither kept nor counted in `maps_dropped`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub maps_unread: bool,
}

/// Bytes of executable-mapping lines a snapshot keeps per process: about 16,000 mappings of
/// ordinary paths. A process of a user's can have 65,530 mappings of 4 KiB paths each (250 MB
/// of text); this bounds what root's recorder holds and stores for it.
pub const MAX_SNAPSHOT_MAPS: usize = 2 << 20;

/// The `profile::PROC_SNAPSHOT` chunk: processes at start plus build-ids of their files.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ProcSnapshotChunk {
    /// Processes.
    pub processes: Vec<ProcSnapshot>,
    /// Build-id by file path, for files named in `maps` (hex in the file; entries that are
    /// not a build-id are left out).
    #[serde(deserialize_with = "hood_raw::build_id::deserialize_map")]
    pub build_ids: BTreeMap<String, BuildId>,
}

impl ProcSnapshotChunk {
    /// The chunk's JSON. Serialized here rather than by the recorder: this crate is built
    /// optimized even in debug builds, and a snapshot may hold tens of MiB of mappings.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_is_stored_as_the_words_files_have_always_held() {
        for (mode, word) in [
            (RecordMode::System, "system"),
            (RecordMode::Pids, "pids"),
            (RecordMode::Command, "command"),
            (RecordMode::PerfRecord, "perf record"),
            (RecordMode::Unknown, ""),
        ] {
            let m = RecordMeta {
                mode,
                ..RecordMeta::default()
            };
            let v: serde_json::Value = serde_json::to_value(&m).unwrap();
            assert_eq!(v["mode"], word);
            let back: RecordMeta = serde_json::from_value(v).unwrap();
            assert_eq!(back.mode, mode);
        }
        // A file without the field, or with a word of a newer hood, still reads.
        let m: RecordMeta = serde_json::from_str(r#"{"hood_version": "0.1.0"}"#).unwrap();
        assert_eq!(m.mode, RecordMode::Unknown);
        let m: RecordMeta = serde_json::from_str(r#"{"mode": "cgroup"}"#).unwrap();
        assert_eq!(m.mode, RecordMode::Unknown);
    }
}
