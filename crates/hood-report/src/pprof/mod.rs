//! pprof output (`hood report --format pprof`): the `profile.proto` of the pprof project,
//! gzip-compressed, as `go tool pprof`, Grafana Pyroscope and Parca read it.
//!
//! Layout: two sample types, `samples/count` (the default, what hood's percentages count) and
//! the sampled event's total (`cpu/nanoseconds` for cpu-clock and task-clock); one location
//! and one function per hood function; one mapping per file (`[kernel.kallsyms]` for kernel
//! code) with its build-id when known; labels `pid`, `tid`, `comm` (process name), `thread`
//! (thread name) and `mode` (user/kernel/idle) on every sample. Samples with the same stack
//! and labels are merged into one pprof sample whose values are summed.
//!
//! With `--labels` ([`render_pprof_labeled`]) every sample also carries whom it is charged
//! to: `charged_comm` (the process name, or `[kernel]`, `[other]`, `[idle]`),
//! `charged_pid` (when a process) and `async` (`NET_RX`/`BLOCK`, for interrupt work done for
//! a process); irq and softirq work keeps only the handler's frames, as in the other labeled
//! outputs (the frames below belong to whichever task was interrupted).

pub mod calls;
pub mod proto;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use hood_model::labels::Charge;
use hood_model::profile::aggregate::Filter;
use hood_model::profile::{FuncId, Mode, Profile, Sample};
use prost::Message;

use crate::labels::stacks::charged_frames;
use crate::labels::{bucket, LabeledView};
use crate::profile::header::target;
use crate::profile::ReportOptions;
use crate::ReportError;

/// The string table under construction (entry 0 is "").
#[derive(Debug)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::User => "user",
        Mode::Kernel => "kernel",
        Mode::Idle => "idle",
    }
}

/// The event's value type: time-based software clocks count nanoseconds.
fn event_value_type(event: &str) -> (&str, &'static str) {
    match event {
        "cpu-clock" | "task-clock" | "" => ("cpu", "nanoseconds"),
        other => (other, "count"),
    }
}

/// Build the pprof message for the samples of `prof` that pass `filter`.
pub fn build(prof: &Profile, filter: &Filter) -> proto::Profile {
    build_from(prof, filter.samples(prof).map(|s| (s, None)))
}

/// Build the pprof message of a labeled profile: the samples `view` keeps, each with its
/// charge as labels.
pub fn build_labeled(view: &LabeledView<'_>) -> proto::Profile {
    build_from(view.prof, view.charged().map(|(s, c)| (s, Some(c))))
}

/// Merge key of a pprof sample.
type Key = (u32, u32, u32, Mode, Option<Charge>);

fn build_from<'a>(
    prof: &'a Profile,
    samples: impl Iterator<Item = (&'a Sample, Option<Charge>)>,
) -> proto::Profile {
    let mut st = Strings::new();
    let (ev_type, ev_unit) = event_value_type(prof.meta.event.split(':').next().unwrap_or(""));
    let sample_type = vec![
        proto::ValueType {
            r#type: st.id("samples"),
            unit: st.id("count"),
        },
        proto::ValueType {
            r#type: st.id(ev_type),
            unit: st.id(ev_unit),
        },
    ];
    // Merge samples with equal stack and labels: (stack, pid, tid, mode, charge) -> (count,
    // period, one sample for its charged frames).
    let mut merged: BTreeMap<Key, (i64, i64, &Sample)> = BTreeMap::new();
    for (s, charge) in samples {
        let e = merged
            .entry((s.stack, s.pid, s.tid, s.mode, charge))
            .or_insert((0, 0, s));
        e.0 += 1;
        e.1 = e.1.saturating_add(s.period.min(i64::MAX as u64) as i64);
    }
    // Locations and functions: one each per hood function used; mappings per dso.
    let mut loc_of: HashMap<FuncId, u64> = HashMap::new();
    let mut map_of: BTreeMap<&str, u64> = BTreeMap::new();
    let mut mapping = Vec::new();
    let mut location = Vec::new();
    let mut function = Vec::new();
    let mut thread_names: HashMap<(u32, u32), String> = HashMap::new();
    for p in &prof.processes {
        for t in &p.threads {
            thread_names.insert((p.pid, t.tid), t.comm.clone());
        }
    }
    let (k_pid, k_tid, k_comm, k_thread, k_mode) = (
        st.id("pid"),
        st.id("tid"),
        st.id("comm"),
        st.id("thread"),
        st.id("mode"),
    );
    let (k_cpid, k_ccomm, k_async) = (st.id("charged_pid"), st.id("charged_comm"), st.id("async"));
    let mut sample = Vec::with_capacity(merged.len());
    for (&(stack, pid, tid, mode, charge), &(count, period, first)) in &merged {
        let frames = match charge {
            Some(c) => charged_frames(prof, first, c),
            None => prof
                .stacks
                .get(stack as usize)
                .map(Vec::as_slice)
                .unwrap_or(&[]),
        };
        let mut location_id = Vec::with_capacity(frames.len());
        for &f in frames {
            let Some(func) = prof.funcs.get(f as usize) else {
                continue;
            };
            let id = *loc_of.entry(f).or_insert_with(|| {
                let next_map = mapping.len() as u64 + 1;
                let mapping_id = *map_of.entry(func.dso.as_str()).or_insert_with(|| {
                    let file = prof.dso_files.get(&func.dso);
                    let path = file.map_or(func.dso.as_str(), |d| d.path.as_str());
                    let build_id = file.and_then(|d| d.build_id.as_deref()).unwrap_or("");
                    mapping.push(proto::Mapping {
                        id: next_map,
                        filename: st.id(path),
                        build_id: st.id(build_id),
                        has_functions: true,
                        ..proto::Mapping::default()
                    });
                    next_map
                });
                let id = function.len() as u64 + 1;
                let name = st.id(&func.name);
                function.push(proto::Function {
                    id,
                    name,
                    system_name: name,
                    ..proto::Function::default()
                });
                location.push(proto::Location {
                    id,
                    mapping_id,
                    line: vec![proto::Line {
                        function_id: id,
                        ..proto::Line::default()
                    }],
                    ..proto::Location::default()
                });
                id
            });
            location_id.push(id);
        }
        let comm = prof.comm(pid);
        let thread = thread_names
            .get(&(pid, tid))
            .cloned()
            .unwrap_or_else(|| comm.clone());
        let mut label = vec![
            proto::Label {
                key: k_pid,
                num: pid as i64,
                ..proto::Label::default()
            },
            proto::Label {
                key: k_tid,
                num: tid as i64,
                ..proto::Label::default()
            },
            proto::Label {
                key: k_comm,
                str: st.id(&comm),
                ..proto::Label::default()
            },
            proto::Label {
                key: k_thread,
                str: st.id(&thread),
                ..proto::Label::default()
            },
            proto::Label {
                key: k_mode,
                str: st.id(mode_name(mode)),
                ..proto::Label::default()
            },
        ];
        if let Some(c) = charge {
            charge_labels(prof, c, &mut st, (k_cpid, k_ccomm, k_async), &mut label);
        }
        sample.push(proto::Sample {
            location_id,
            value: vec![count, period],
            label,
        });
    }
    let m = &prof.meta;
    let mut comments = vec![
        format!("hood {}: {}", env!("CARGO_PKG_VERSION"), target(prof)),
        format!("event {} at {} Hz", m.event, m.freq_hz),
    ];
    comments.extend(prof.warnings.iter().cloned());
    let comment = comments.iter().map(|c| st.id(c)).collect();
    let period = match ev_unit {
        "nanoseconds" => 1_000_000_000u64.checked_div(m.freq_hz).unwrap_or(0) as i64,
        _ => 0,
    };
    let period_type = Some(proto::ValueType {
        r#type: st.id(ev_type),
        unit: st.id(ev_unit),
    });
    let default_sample_type = st.id("samples");
    proto::Profile {
        sample_type,
        sample,
        mapping,
        location,
        function,
        time_nanos: m.start_unix_ns.min(i64::MAX as u64) as i64,
        duration_nanos: prof.duration_ns().min(i64::MAX as u64) as i64,
        period_type,
        period,
        comment,
        default_sample_type,
        string_table: st.table,
        ..proto::Profile::default()
    }
}

/// Append the labels of charge `c`: `charged_comm`, `charged_pid` when a process, `async`
/// for interrupt work.
fn charge_labels(
    prof: &Profile,
    c: Charge,
    st: &mut Strings,
    (k_cpid, k_ccomm, k_async): (i64, i64, i64),
    label: &mut Vec<proto::Label>,
) {
    let comm = match c.pid() {
        Some(p) => prof.comm(p),
        None => bucket(c).to_string(),
    };
    label.push(proto::Label {
        key: k_ccomm,
        str: st.id(&comm),
        ..proto::Label::default()
    });
    if let Some(p) = c.pid() {
        label.push(proto::Label {
            key: k_cpid,
            num: p as i64,
            ..proto::Label::default()
        });
    }
    if let Charge::Async(_, k) | Charge::Other(k) = c {
        label.push(proto::Label {
            key: k_async,
            str: st.id(k.name()),
            ..proto::Label::default()
        });
    }
}

/// Write the gzip-compressed pprof profile of `prof` (the samples `opts.filter` keeps).
pub fn render_pprof(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    write_gz(&build(prof, &opts.filter), out)
}

/// Write the gzip-compressed pprof profile of a labeled profile (`hood report --labels
/// --format pprof`): the samples `view` keeps, with their charges as labels.
pub fn render_pprof_labeled(
    view: &LabeledView<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    write_gz(&build_labeled(view), out)
}

/// Encode `msg` and gzip it at the fastest level, as Go's runtime/pprof does (the profile is
/// made once and read once; `hood serve` pays for compression on every request).
fn write_gz(msg: &proto::Profile, out: &mut dyn Write) -> Result<(), ReportError> {
    let bytes = msg.encode_to_vec();
    let mut gz = GzEncoder::new(out, Compression::fast());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
