//! Call-path profiles (`hood calls`): the per-process tables collected from hood-rt segments,
//! their file encoding, and the analysis behind `hood calls report` (per path, per function,
//! merged over threads or per thread). Pure: no kernel, no files.

mod analysis;
mod build;
mod codec;
mod diff;

pub use analysis::{
    function_rows, node_name, path_rows, path_size, path_totals, sort_rows, PathSize, PathTotal,
    Row, SortKey,
};
pub use build::ThreadBuilder;
pub use codec::{decode_process, encode_process, CallsMeta, PAYLOAD_VERSION};
pub use diff::{
    calls_diff, calls_side, CallsBy, CallsDiff, CallsDiffRow, CallsDiffSide, CallsSide, Tally,
    TraceCalls, NOISE_Z,
};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One profiled process (one hood-rt segment).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessCalls {
    /// Process id.
    pub pid: u32,
    /// Parent pid at segment creation.
    pub ppid: u32,
    /// Executable path.
    pub exe: String,
    /// Timestamp ticks per second recorded by the runtime.
    pub ticks_per_sec: u64,
    /// The clock of the timestamps (`tsc` or `monotonic`).
    pub clock: crate::Clock,
    /// Overhead compensation was on.
    pub compensate: bool,
    /// Calibrated per-call self compensation (ticks).
    pub comp_self_ticks: u64,
    /// Calibrated per-child compensation (ticks).
    pub comp_child_ticks: u64,
    /// Overrun and mismatch flags (hood_abi FLAG_* bits).
    pub flags: u32,
    /// Limits in force: paths per thread, stack depth, path length, threads.
    pub limits: Limits,
    /// State at collection.
    pub state: crate::ProcessState,
    /// Wall-clock ns (CLOCK_MONOTONIC) covered by the table, from start/reset to exit/collection.
    pub span_ns: u64,
    /// Per-thread tables.
    pub threads: Vec<ThreadCalls>,
    /// Function address → name (resolved at collection time).
    pub symbols: BTreeMap<u64, String>,
    /// Collection notes (e.g. symbolization problems, pending resets).
    pub notes: Vec<String>,
}

/// Limits the runtime ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Limits {
    /// Path nodes per thread.
    pub max_paths: u32,
    /// Stack depth.
    pub max_depth: u32,
    /// Path length.
    pub max_path_len: u32,
    /// Thread slots.
    pub max_threads: u32,
}

/// One thread's table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadCalls {
    /// Kernel thread id.
    pub tid: u32,
    /// The thread had exited at collection.
    pub exited: bool,
    /// Exits that did not match the stack (longjmp, exceptions), repaired.
    pub mismatched: u64,
    /// Calls not measured (stack or thread overrun).
    pub lost_calls: u64,
    /// Calls deeper than the path length limit, counted on folded paths (their first
    /// `max_path_len - 1` functions and the called one).
    #[serde(default)]
    pub folded_calls: u64,
    /// Times a call path grew past the limit (files of older hoods: 0).
    #[serde(default)]
    pub folded_paths: u64,
    /// FLAG_* bits seen by this thread.
    pub flags: u32,
    /// The thread had not yet honoured a requested reset (its numbers predate the reset).
    pub reset_pending: bool,
    /// Path table; `parent` indexes into this vector. Entry 0 is the lost-paths node.
    pub paths: Vec<PathEntry>,
}

impl ThreadCalls {
    /// The table of a thread that ended with path table `paths`, nothing lost, folded,
    /// mismatched or flagged (synthetic tables: tests, generated inputs).
    pub fn ended(tid: u32, paths: Vec<PathEntry>) -> ThreadCalls {
        ThreadCalls {
            tid,
            exited: true,
            mismatched: 0,
            lost_calls: 0,
            folded_calls: 0,
            folded_paths: 0,
            flags: 0,
            reset_pending: false,
            paths,
        }
    }
}

/// One unique call path of a thread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PathEntry {
    /// Parent path index, or None at the top.
    pub parent: Option<u32>,
    /// Function address at the end of the path (0 for the lost node).
    pub func: u64,
    /// Calls counted at entry (running calls included).
    pub calls: u64,
    /// Own-body ticks of completed calls (may be slightly negative after compensation).
    pub own_ticks: i64,
    /// Own-body ticks so far of calls still running at collection.
    pub running_ticks: i64,
    /// A call of this path was still running at collection.
    pub running: bool,
}

impl PathEntry {
    /// Entry 0 of every path table, before anything is counted in it: the lost-paths node.
    pub const LOST: PathEntry = PathEntry {
        parent: None,
        func: 0,
        calls: 0,
        own_ticks: 0,
        running_ticks: 0,
        running: false,
    };
}

/// Flag bit meaning: paths longer than the limit were folded.
pub const FLAG_PATH_OVERRUN: u32 = 0x1;
/// Flag bit meaning: stack deeper than the limit.
pub const FLAG_STACK_OVERRUN: u32 = 0x2;
/// Flag bit meaning: path table full.
pub const FLAG_TABLE_OVERRUN: u32 = 0x4;
/// Flag bit meaning: too many threads.
pub const FLAG_THREAD_OVERRUN: u32 = 0x8;
/// Flag bit meaning: mismatched exits repaired.
pub const FLAG_MISMATCH: u32 = 0x10;

impl ProcessCalls {
    /// Ticks → milliseconds.
    pub fn ticks_to_ms(&self, ticks: i64) -> f64 {
        if self.ticks_per_sec == 0 {
            return 0.0;
        }
        ticks as f64 * 1000.0 / self.ticks_per_sec as f64
    }

    /// Name of a function address ("0x…" when unresolved).
    pub fn name(&self, func: u64) -> String {
        self.symbols
            .get(&func)
            .cloned()
            .unwrap_or_else(|| format!("{func:#x}"))
    }

    /// Short process name: the executable's file name.
    pub fn comm(&self) -> &str {
        self.exe.rsplit('/').next().unwrap_or(&self.exe)
    }

    /// Human-readable explanations of the flags: what was lost and which variable raises the
    /// limit.
    pub fn flag_notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        let l = &self.limits;
        if self.flags & FLAG_PATH_OVERRUN != 0 {
            let calls: u64 = self.threads.iter().map(|t| t.folded_calls).sum();
            let paths: u64 = self.threads.iter().map(|t| t.folded_paths).sum();
            v.push(format!(
                "{paths} call paths grew longer than {} functions and were folded: their {calls} \
                 deeper calls are counted on paths cut to the first {} functions and the called \
                 one (per-function totals stay exact; raise HOOD_MAX_PATH_LEN for full paths)",
                l.max_path_len,
                l.max_path_len.saturating_sub(1)
            ));
        }
        if self.flags & FLAG_STACK_OVERRUN != 0 {
            let lost: u64 = self.threads.iter().map(|t| t.lost_calls).sum();
            v.push(format!("call stack deeper than {} frames: {lost} calls not measured (raise HOOD_MAX_DEPTH)", l.max_depth));
        }
        if self.flags & FLAG_TABLE_OVERRUN != 0 {
            v.push(format!("path table full ({} paths per thread): new paths were charged to <lost paths> (raise HOOD_MAX_PATHS)", l.max_paths));
        }
        if self.flags & FLAG_THREAD_OVERRUN != 0 {
            v.push(format!(
                "more than {} threads: extra threads were not measured (raise HOOD_MAX_THREADS)",
                l.max_threads
            ));
        }
        if self.flags & FLAG_MISMATCH != 0 {
            let n: u64 = self.threads.iter().map(|t| t.mismatched).sum();
            v.push(format!(
                "{n} exits did not match the call stack (longjmp, exceptions) and were repaired"
            ));
        }
        v
    }
}
