//! pprof output of call-path recordings (`hood calls report --format pprof`).
//!
//! Each unique call path (per process, and per thread with `--threads`) becomes one sample
//! whose location stack is the path, leaf first. Two sample types:
//!
//! * `calls/count` — calls of the path's last function made on that path (counted at entry);
//! * `time/nanoseconds` (the default) — own-body time of the path's last function, overhead
//!   compensated, clamped at 0, running calls included so far.
//!
//! Inclusive time is not a third value: pprof derives it. A function's `cum` is the sum of the
//! samples whose stack contains it, i.e. its own-body time plus that of every path below it,
//! which is exactly the inclusive time (each sample counted once even under recursion). An
//! explicit inclusive value would be summed again by `cum` and mean nothing.
//!
//! One location per (process, function address), one function per (name, executable), one
//! mapping per executable with its build-id when the caller knows it. Call-path files record
//! no source lines, so functions carry names only. Labels: `pid`, `comm`, and `tid` with
//! per-thread samples.

use std::collections::HashMap;
use std::io::Write;

use hood_tracemodel::calls::{node_name, path_totals, ProcessCalls};

use super::{proto, Strings};
use crate::ReportError;

/// Options of the call-path pprof output (built by the binary).
#[derive(Debug, Clone, Default)]
pub struct CallsPprofOptions {
    /// One sample per path and thread (with a `tid` label) instead of per path.
    pub threads: bool,
    /// Executable path → build-id (hex), for the mappings.
    pub build_ids: HashMap<String, String>,
    /// Unix time (ns) of the collection, for `time_nanos` (0: unknown).
    pub collected_unix_ns: u64,
    /// Extra comments (e.g. where the build-ids came from).
    pub comments: Vec<String>,
}

/// Own-body ticks → nanoseconds, clamped at 0 (compensation can leave a path slightly
/// negative, as the text report clamps it).
fn ticks_to_ns(p: &ProcessCalls, ticks: i64) -> i64 {
    if p.ticks_per_sec == 0 || ticks <= 0 {
        return 0;
    }
    let ns = ticks as i128 * 1_000_000_000 / p.ticks_per_sec as i128;
    ns.min(i64::MAX as i128) as i64
}

/// Build the pprof message for the call-path tables of `procs`.
pub fn build_calls(procs: &[ProcessCalls], opts: &CallsPprofOptions) -> proto::Profile {
    let mut st = Strings::new();
    let sample_type = vec![
        proto::ValueType {
            r#type: st.id("calls"),
            unit: st.id("count"),
        },
        proto::ValueType {
            r#type: st.id("time"),
            unit: st.id("nanoseconds"),
        },
    ];
    let (k_pid, k_tid, k_comm) = (st.id("pid"), st.id("tid"), st.id("comm"));
    let mut mapping: Vec<proto::Mapping> = Vec::new();
    let mut map_of: HashMap<&str, u64> = HashMap::new();
    let mut function: Vec<proto::Function> = Vec::new();
    let mut func_of: HashMap<(String, u64), u64> = HashMap::new();
    let mut location: Vec<proto::Location> = Vec::new();
    let mut sample = Vec::new();
    let mut comments: Vec<String> = vec![format!(
        "hood {}: call paths of {} process(es); flat time = own body, cum = inclusive",
        env!("CARGO_PKG_VERSION"),
        procs.len()
    )];
    let mut span_ns = 0u64;
    for p in procs {
        span_ns = span_ns.max(p.span_ns);
        let mapping_id = *map_of.entry(p.exe.as_str()).or_insert_with(|| {
            let id = mapping.len() as u64 + 1;
            let build_id = opts.build_ids.get(&p.exe).map_or("", String::as_str);
            mapping.push(proto::Mapping {
                id,
                filename: st.id(&p.exe),
                build_id: st.id(build_id),
                has_functions: true,
                ..proto::Mapping::default()
            });
            id
        });
        let comm = st.id(p.comm());
        let mut loc_of: HashMap<u64, u64> = HashMap::new();
        for t in path_totals(p, opts.threads) {
            let mut location_id = Vec::with_capacity(t.funcs.len());
            for &f in t.funcs.iter().rev() {
                let id = *loc_of.entry(f).or_insert_with(|| {
                    let name = node_name(p, f);
                    let next = function.len() as u64 + 1;
                    let function_id =
                        *func_of
                            .entry((name.clone(), mapping_id))
                            .or_insert_with(|| {
                                let n = st.id(&name);
                                function.push(proto::Function {
                                    id: next,
                                    name: n,
                                    system_name: n,
                                    ..proto::Function::default()
                                });
                                next
                            });
                    let id = location.len() as u64 + 1;
                    location.push(proto::Location {
                        id,
                        mapping_id,
                        line: vec![proto::Line {
                            function_id,
                            ..proto::Line::default()
                        }],
                        ..proto::Location::default()
                    });
                    id
                });
                location_id.push(id);
            }
            let mut label = vec![
                proto::Label {
                    key: k_pid,
                    num: p.pid as i64,
                    ..proto::Label::default()
                },
                proto::Label {
                    key: k_comm,
                    str: comm,
                    ..proto::Label::default()
                },
            ];
            if let Some(tid) = t.tid {
                label.push(proto::Label {
                    key: k_tid,
                    num: tid as i64,
                    ..proto::Label::default()
                });
            }
            sample.push(proto::Sample {
                location_id,
                value: vec![t.calls.min(i64::MAX as u64) as i64, ticks_to_ns(p, t.ticks)],
                label,
            });
        }
        for n in p.flag_notes().into_iter().chain(p.notes.iter().cloned()) {
            comments.push(format!("pid {}: {n}", p.pid));
        }
    }
    comments.extend(opts.comments.iter().cloned());
    let comment = comments.iter().map(|c| st.id(c)).collect();
    let default_sample_type = st.id("time");
    proto::Profile {
        sample_type,
        sample,
        mapping,
        location,
        function,
        time_nanos: opts
            .collected_unix_ns
            .saturating_sub(span_ns)
            .min(i64::MAX as u64) as i64,
        duration_nanos: span_ns.min(i64::MAX as u64) as i64,
        comment,
        default_sample_type,
        string_table: st.table,
        ..proto::Profile::default()
    }
}

/// Write the gzip-compressed pprof profile of the call-path tables of `procs`.
pub fn render_calls_pprof(
    procs: &[ProcessCalls],
    opts: &CallsPprofOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    super::write_gz(&build_calls(procs, opts), out)
}

#[cfg(test)]
mod tests;
