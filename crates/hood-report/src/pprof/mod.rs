//! pprof output (`hood report --format pprof`): the `profile.proto` of the pprof project,
//! gzip-compressed, as `go tool pprof`, Grafana Pyroscope and Parca read it.
//!
//! Layout: two sample types, `samples/count` (the default, what hood's percentages count) and
//! the sampled event's total (`cpu/nanoseconds` for cpu-clock and task-clock); one function
//! per hood function and one location per sampled address, with that address (for callers
//! the return address minus one) and its mapping: start, limit, file offset, path and
//! build-id as the process mapped the file (the profiled program's first, as pprof tools
//! expect; `[kernel.kallsyms]` spans the kernel addresses sampled). Where debug info gave
//! them, a location has one line per function at its address, innermost inlined function
//! first, each with its line number, and functions carry their source file: one pprof function
//! per hood function and source file, since a function's lines can lie in several files (a
//! Rust macro's body expanded in it carries the lines of the macro's file, as core's
//! `assert_unsafe_precondition!` does) and a pprof line names its file only through its
//! function; mappings then say
//! they have file names, line numbers and inline frames (`go tool pprof -lines`, `-list`).
//! Profiles without locations (hand-built ones) get one location per function, address 0. Labels `pid`,
//! `tid`, `comm` (process name), `thread` (thread name) and `mode` (user/kernel/idle) on every
//! sample. Samples with the same stack
//! and labels are merged into one pprof sample whose values are summed.
//!
//! With `--labels` ([`render_pprof_labeled`]) every sample also carries whom it is charged
//! to: `charged_comm` (the process name, or `[kernel]`, `[other]`, `[idle]`),
//! `charged_pid` (when a process) and `async` (`NET_RX`/`BLOCK`, for interrupt work done for
//! a process); irq and softirq work keeps only the handler's frames, as in the other labeled
//! outputs (the frames below belong to whichever task was interrupted).

pub mod calls;
pub mod diff;
pub mod proto;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use hood_model::labels::Charge;
use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::{FuncId, LocId, Mode, Profile, Sample};
use prost::Message;

use crate::labels::stacks::{charged_frames, charged_locs};
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
        Mode::Blocked => "blocked",
        Mode::Runnable => "runnable",
    }
}

/// The event's value type: time-based software clocks count nanoseconds.
fn event_value_type(event: &str) -> (&str, &'static str) {
    match event {
        "cpu-clock" | "task-clock" | "" => ("cpu", "nanoseconds"),
        other => (other, "count"),
    }
}

/// Build the pprof message for the samples of `prof` that pass `filter`. A recording with
/// off-CPU time gives it too, as the sample type `off_cpu/nanoseconds` beside the CPU samples
/// (`go tool pprof -sample_index=off_cpu`), unless the filter asks for CPU samples only.
pub fn build(prof: &Profile, filter: &Filter) -> proto::Profile {
    let mut f = filter.clone();
    if prof.meta.off_cpu.is_some() && f.measure == Measure::CpuSamples {
        f.measure = Measure::Wall;
    }
    build_from(prof, f.samples(prof).map(|s| (s, None)))
}

/// Build the pprof message of a labeled profile: the samples `view` keeps, each with its
/// charge as labels.
pub fn build_labeled(view: &LabeledView<'_>) -> proto::Profile {
    build_from(view.prof, view.charged().map(|(s, c)| (*s, Some(c))))
}

/// Merge key of a pprof sample: stack, location stack, pid, tid, mode, charge.
type Key = (u32, u32, u32, u32, Mode, Option<Charge>);

/// The mapping, location and function tables under construction.
struct Tables<'a> {
    prof: &'a Profile,
    mapping: Vec<proto::Mapping>,
    location: Vec<proto::Location>,
    function: Vec<proto::Function>,
    /// Mapping of a file or pseudo-file without a known address range, by dso name.
    dso_map: HashMap<&'a str, u64>,
    /// Mapping by index into `Profile::code_maps`.
    code_map: HashMap<u32, u64>,
    /// pprof function by hood function and source file (index into
    /// `Profile::source_files`).
    func_ids: HashMap<(FuncId, Option<u32>), u64>,
    /// Location standing for a whole function (no address known).
    func_loc: HashMap<FuncId, u64>,
    /// Location by `Profile::locations` index.
    loc_ids: HashMap<LocId, u64>,
    /// Lowest and one past the highest kernel address sampled: the kernel's mapping.
    kernel_range: (u64, u64),
    /// Some location has a source line (debug info was read).
    has_lines: bool,
}

impl<'a> Tables<'a> {
    fn new(prof: &'a Profile) -> Self {
        let kernel = prof.locations.iter().filter(|l| {
            l.map.is_none() && prof.funcs.get(l.func as usize).is_some_and(|f| f.kernel)
        });
        let kernel_range = kernel.fold((u64::MAX, 0), |(lo, hi), l| {
            (lo.min(l.address), hi.max(l.address.saturating_add(1)))
        });
        Tables {
            prof,
            mapping: Vec::new(),
            location: Vec::new(),
            function: Vec::new(),
            dso_map: HashMap::new(),
            code_map: HashMap::new(),
            func_ids: HashMap::new(),
            func_loc: HashMap::new(),
            loc_ids: HashMap::new(),
            kernel_range: if kernel_range.0 < kernel_range.1 {
                kernel_range
            } else {
                (0, 0)
            },
            has_lines: prof.lines.iter().any(|l| l.file.is_some()),
        }
    }

    /// A pprof mapping for `dso`, with the address range when known.
    fn new_mapping(&mut self, dso: &str, range: (u64, u64, u64), st: &mut Strings) -> u64 {
        let id = self.mapping.len() as u64 + 1;
        let file = self.prof.dso_files.get(dso);
        let path = file.map_or(dso, |d| d.path.as_str());
        let build_id = file
            .and_then(|d| d.build_id)
            .map(|id| id.to_string())
            .unwrap_or_default();
        let lines = self.has_lines && dso != "[kernel.kallsyms]";
        self.mapping.push(proto::Mapping {
            id,
            memory_start: range.0,
            memory_limit: range.1,
            file_offset: range.2,
            filename: st.id(path),
            build_id: st.id(&build_id),
            has_functions: true,
            // Lines and inlined frames come from DWARF; say so only when some were found
            // (the kernel is named from kallsyms: never).
            has_filenames: lines,
            has_line_numbers: lines,
            has_inline_frames: lines,
        });
        id
    }

    /// Gives the profiled program's mapping id 1: pprof tools take the first mapping for
    /// the main binary (`File:` in `go tool pprof`).
    fn main_first(&mut self, st: &mut Strings) {
        let prof = self.prof;
        let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
        let Some(program) = prof.meta.command.first().map(|c| base(c)) else {
            return;
        };
        let main = prof.code_maps.iter().enumerate().find(|(_, c)| {
            prof.dso_files
                .get(&c.dso)
                .is_some_and(|d| base(&d.path) == program)
        });
        if let Some((m, c)) = main {
            let id = self.new_mapping(&c.dso, (c.start, c.limit, c.offset), st);
            self.code_map.insert(m as u32, id);
        }
    }

    /// The mapping of a function's file when no address range is known.
    fn dso_mapping(&mut self, f: FuncId, st: &mut Strings) -> u64 {
        let prof = self.prof;
        let func = &prof.funcs[f as usize];
        if let Some(&id) = self.dso_map.get(func.dso.as_str()) {
            return id;
        }
        let range = if func.kernel {
            (self.kernel_range.0, self.kernel_range.1, 0)
        } else {
            (0, 0, 0)
        };
        let id = self.new_mapping(&func.dso, range, st);
        self.dso_map.insert(func.dso.as_str(), id);
        id
    }

    /// The pprof function of `f` in source file `file` (index into `Profile::source_files`):
    /// pprof gives a line's file only through its function, so a function whose lines lie in
    /// several files is one pprof function per file, each with the same name (pprof's
    /// function-level views merge them by name).
    fn function(&mut self, f: FuncId, file: Option<u32>, st: &mut Strings) -> u64 {
        if let Some(&id) = self.func_ids.get(&(f, file)) {
            return id;
        }
        let id = self.function.len() as u64 + 1;
        let name = st.id(&self.prof.funcs[f as usize].name);
        let path = file.and_then(|i| self.prof.source_files.get(i as usize));
        self.function.push(proto::Function {
            id,
            name,
            system_name: name,
            filename: path.map_or(0, |p| st.id(p)),
            start_line: i64::from(self.prof.funcs[f as usize].start_line),
        });
        self.func_ids.insert((f, file), id);
        id
    }

    /// A location of function `f` without lines (no address known).
    fn push_location(&mut self, f: FuncId, mapping_id: u64, address: u64, st: &mut Strings) -> u64 {
        let function_id = self.function(f, None, st);
        let line = vec![proto::Line {
            function_id,
            ..proto::Line::default()
        }];
        self.push_location_lines(mapping_id, address, line)
    }

    fn push_location_lines(
        &mut self,
        mapping_id: u64,
        address: u64,
        line: Vec<proto::Line>,
    ) -> u64 {
        let id = self.location.len() as u64 + 1;
        self.location.push(proto::Location {
            id,
            mapping_id,
            address,
            line,
            ..proto::Location::default()
        });
        id
    }

    /// The location of function `f` as a whole (no address known).
    fn of_func(&mut self, f: FuncId, st: &mut Strings) -> Option<u64> {
        self.prof.funcs.get(f as usize)?;
        if let Some(&id) = self.func_loc.get(&f) {
            return Some(id);
        }
        let mapping_id = self.dso_mapping(f, st);
        let id = self.push_location(f, mapping_id, 0, st);
        self.func_loc.insert(f, id);
        Some(id)
    }

    /// The location of `Profile::locations[loc]`, with its address and mapping.
    fn at(&mut self, loc: LocId, st: &mut Strings) -> Option<u64> {
        if let Some(&id) = self.loc_ids.get(&loc) {
            return Some(id);
        }
        let prof = self.prof;
        let l = prof.locations.get(loc as usize)?;
        prof.funcs.get(l.func as usize)?;
        let mapping_id = match l
            .map
            .and_then(|m| prof.code_maps.get(m as usize).map(|c| (m, c)))
        {
            Some((m, c)) => match self.code_map.get(&m) {
                Some(&id) => id,
                None => {
                    let id = self.new_mapping(&c.dso, (c.start, c.limit, c.offset), st);
                    self.code_map.insert(m, id);
                    id
                }
            },
            None => self.dso_mapping(l.func, st),
        };
        // One line per function at the address, innermost inlined function first, as the
        // pprof format has it.
        let lines = prof.lines_of(l);
        let id = if lines.is_empty() {
            self.push_location(l.func, mapping_id, l.address, st)
        } else {
            let line = lines
                .iter()
                .map(|fl| proto::Line {
                    function_id: self.function(fl.func, fl.file, st),
                    line: i64::from(fl.line),
                    ..proto::Line::default()
                })
                .collect();
            self.push_location_lines(mapping_id, l.address, line)
        };
        self.loc_ids.insert(loc, id);
        Some(id)
    }
}

fn build_from(
    prof: &Profile,
    samples: impl Iterator<Item = (Sample, Option<Charge>)>,
) -> proto::Profile {
    let mut st = Strings::new();
    let (ev_type, ev_unit) = event_value_type(prof.meta.event.split(':').next().unwrap_or(""));
    let mut sample_type = vec![
        proto::ValueType {
            r#type: st.id("samples"),
            unit: st.id("count"),
        },
        proto::ValueType {
            r#type: st.id(ev_type),
            unit: st.id(ev_unit),
        },
    ];
    let off_cpu = prof.meta.off_cpu.is_some();
    if off_cpu {
        sample_type.push(proto::ValueType {
            r#type: st.id("off_cpu"),
            unit: st.id("nanoseconds"),
        });
    }
    // Merge samples with equal stack and labels: (stack, pid, tid, mode, charge) -> (count,
    // period, off-CPU ns, one sample for its charged frames).
    let mut merged: BTreeMap<Key, (i64, i64, i64, Sample)> = BTreeMap::new();
    for (s, charge) in samples {
        let e = merged
            .entry((s.stack, s.locs, s.pid, s.tid, s.mode, charge))
            .or_insert((0, 0, 0, s));
        let ns = s.period.min(i64::MAX as u64) as i64;
        if s.mode.off_cpu() {
            e.2 = e.2.saturating_add(ns);
        } else {
            e.0 += 1;
            e.1 = e.1.saturating_add(ns);
        }
    }
    let mut t = Tables::new(prof);
    t.main_first(&mut st);
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
    for (&(stack, locs, pid, tid, mode, charge), &(count, period, off_ns, ref first)) in &merged {
        let frames = match charge {
            Some(c) => charged_frames(prof, first, c),
            None => prof
                .stacks
                .get(stack as usize)
                .map(Vec::as_slice)
                .unwrap_or(&[]),
        };
        // The stack by code location when the profile keeps one for this sample (the same
        // frames as `frames`, inlined functions being lines of their location, with their
        // addresses); charged stacks are cut where `frames` is.
        let loc_frames = match charge {
            Some(c) => Some(charged_locs(prof, first, c)),
            None => prof.loc_stacks.get(locs as usize).map(Vec::as_slice),
        }
        .filter(|l| !l.is_empty());
        let location_id: Vec<u64> = match loc_frames {
            Some(l) => l.iter().filter_map(|&id| t.at(id, &mut st)).collect(),
            None => frames
                .iter()
                .filter_map(|&f| t.of_func(f, &mut st))
                .collect(),
        };
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
        let mut value = vec![count, period];
        if off_cpu {
            value.push(off_ns);
        }
        sample.push(proto::Sample {
            location_id,
            value,
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
        mapping: t.mapping,
        location: t.location,
        function: t.function,
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
