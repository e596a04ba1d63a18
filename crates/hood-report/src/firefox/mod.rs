//! Firefox Profiler output (`hood report --format firefox`): the processed profile format
//! built with fxprof-processed-profile, gzip-compressed JSON that profiler.firefox.com opens
//! ("Load a profile from file").
//!
//! One process track per process and one thread track per thread (task) that has samples;
//! frames carry the function name, in category `Kernel` (orange) for kernel code and `User`
//! (yellow) otherwise, so kernel frames stand out in the call tree and the activity graph.
//! Sample times are relative to the recording's start; a sample's CPU delta is its period for
//! time-based events. The profile is marked symbolicated (`meta.symbolicated`), so the
//! profiler does not look for symbols itself.
//!
//! Frames are code locations: each sampled address is one frame per function at it, the
//! function the code belongs to at `inlineDepth` 0 and each function inlined there one level
//! deeper, with its source line (`frameTable.line`) and the function's file and start line
//! (`funcTable.fileName`, `lineNumber`). The files holding the code are listed in `libs` (name, path, build-id
//! as `codeId` and as the Breakpad id, `debugName`/`debugPath`), and frames in them refer to
//! their lib through the thread's resource table, with the address as a file offset.
//! fxprof-processed-profile writes none of these columns, so hood builds each thread's
//! frame, function, stack and resource tables itself, one entry per distinct frame and stack
//! prefix (what the format stores), and gives fxprof-processed-profile, which lays out
//! processes, threads and samples, one private label per distinct stack, replaced after
//! serialization. A 1,000-deep chain of inlined functions made fxprof-processed-profile's
//! per-frame tables and a JSON tree of them take ~30 times the report's own memory (issue 29);
//! hood's tables take a few dozen bytes per frame.

use std::collections::HashMap;
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CpuDelta, Frame, FrameFlags, FrameInfo, ProcessHandle,
    Profile as FxProfile, ReferenceTimestamp, SamplingInterval, StackHandle, ThreadHandle,
    Timestamp,
};
use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::{BuildId, FuncId, Profile, Sample, StackId};
use serde_json::{json, Value};

use crate::profile::header::target;
use crate::profile::ReportOptions;
use crate::ReportError;

/// Category names used for frames.
pub const KERNEL_CATEGORY: &str = "Kernel";
/// Category of user-space frames.
pub const USER_CATEGORY: &str = "User";

struct Builder<'a> {
    prof: &'a Profile,
    fx: FxProfile,
    user: CategoryHandle,
    start_ns: u64,
    processes: HashMap<u32, ProcessHandle>,
    /// Thread by (pid, tid): its fxprof handle and the index of its tables.
    threads: HashMap<(u32, u32), (ThreadHandle, usize)>,
    tables: Vec<Tables>,
    time_based: bool,
}

/// The start of the private labels of stacks, replaced after serialization.
const TOKEN: &str = "\u{1}hood-stack:";

/// One frame: a function at a line, inlined `depth` levels deep, in a file (`dso` of the
/// function) at a file offset; or, where the profile keeps no code locations, a function as a
/// whole (`whole`, named by its label).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FrameKey {
    func: FuncId,
    file: Option<u32>,
    line: u32,
    depth: u32,
    offset: Option<u64>,
    whole: bool,
}

/// One thread's frames and stacks, interned as the processed format stores them: a stack is
/// a frame on a prefix stack.
#[derive(Default)]
struct Tables {
    frames: Vec<FrameKey>,
    frame_ids: HashMap<FrameKey, u32>,
    stack_prefix: Vec<Option<u32>>,
    stack_frame: Vec<u32>,
    stack_ids: HashMap<(Option<u32>, u32), u32>,
    /// Stack of a hood stack: (stack or location stack id, by location), and the fxprof
    /// stack standing for it.
    of_hood: HashMap<(StackId, bool), Option<(u32, StackHandle)>>,
}

impl Tables {
    /// The stack of `frames`, outermost caller first (`None`: no frame).
    fn stack(&mut self, frames: impl Iterator<Item = FrameKey>) -> Option<u32> {
        let mut prefix = None;
        for key in frames {
            let next = self.frames.len() as u32;
            let frame = *self.frame_ids.entry(key).or_insert_with(|| {
                self.frames.push(key);
                next
            });
            let next = self.stack_frame.len() as u32;
            let id = *self.stack_ids.entry((prefix, frame)).or_insert_with(|| {
                self.stack_prefix.push(prefix);
                self.stack_frame.push(frame);
                next
            });
            prefix = Some(id);
        }
        prefix
    }
}

impl Builder<'_> {
    fn ts(&self, time: u64) -> Timestamp {
        Timestamp::from_nanos_since_reference(time.saturating_sub(self.start_ns))
    }

    fn process(&mut self, pid: u32, time: u64) -> ProcessHandle {
        if let Some(&h) = self.processes.get(&pid) {
            return h;
        }
        let ts = self.ts(time);
        let h = self.fx.add_process(&self.prof.comm(pid), pid, ts);
        self.processes.insert(pid, h);
        h
    }

    fn thread(&mut self, pid: u32, tid: u32, time: u64) -> (ThreadHandle, usize) {
        if let Some(&h) = self.threads.get(&(pid, tid)) {
            return h;
        }
        let p = self.process(pid, time);
        let ts = self.ts(time);
        let h = self.fx.add_thread(p, tid, ts, tid == pid);
        let name = self
            .prof
            .process(pid)
            .and_then(|p| p.threads.iter().find(|t| t.tid == tid))
            .map(|t| t.comm.clone())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| self.prof.comm(pid));
        self.fx.set_thread_name(h, &name);
        self.tables.push(Tables::default());
        let v = (h, self.tables.len() - 1);
        self.threads.insert((pid, tid), v);
        v
    }

    /// The fxprof stack of sample `s`: one private label naming the thread's stack of it,
    /// by code location when the profile keeps them (inlined functions and lines), else by
    /// function.
    fn sample_stack(
        &mut self,
        (thread, t): (ThreadHandle, usize),
        s: &Sample,
    ) -> Option<StackHandle> {
        let prof = self.prof;
        let locs = prof
            .loc_stacks
            .get(s.locs as usize)
            .filter(|l| !l.is_empty());
        let hood = match locs {
            Some(_) => (s.locs, true),
            None => (s.stack, false),
        };
        if let Some(h) = self.tables[t].of_hood.get(&hood) {
            return h.map(|h| h.1);
        }
        let tables = &mut self.tables[t];
        let id = match locs {
            // Outermost caller first; at one address the function holding the code first,
            // then what is inlined in it.
            Some(locs) => tables.stack(locs.iter().rev().flat_map(|&l| {
                let loc = prof.locations.get(l as usize);
                let offset = loc.and_then(|loc| {
                    loc.map
                        .and_then(|m| prof.code_maps.get(m as usize))
                        .map(|c| loc.address.wrapping_sub(c.start).wrapping_add(c.offset))
                });
                let lines = loc.map_or(&[][..], |loc| prof.lines_of(loc));
                lines
                    .iter()
                    .rev()
                    .enumerate()
                    .filter(|(_, fl)| prof.funcs.get(fl.func as usize).is_some())
                    .map(move |(depth, fl)| FrameKey {
                        func: fl.func,
                        file: fl.file,
                        line: fl.line,
                        depth: depth as u32,
                        offset,
                        whole: false,
                    })
            })),
            // The processed format wants the outermost caller first; hood stores leaf first.
            None => tables.stack(
                prof.stacks
                    .get(s.stack as usize)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .rev()
                    .filter(|&&f| prof.funcs.get(f as usize).is_some())
                    .map(|&func| FrameKey {
                        func,
                        file: None,
                        line: 0,
                        depth: 0,
                        offset: None,
                        whole: true,
                    }),
            ),
        };
        let h = id.and_then(|id| {
            let label = self.fx.intern_string(&format!("{TOKEN}{id}"));
            let info = FrameInfo {
                frame: Frame::Label(label),
                category_pair: self.user.into(),
                flags: FrameFlags::empty(),
            };
            Some((
                id,
                self.fx.intern_stack_frames(thread, std::iter::once(info))?,
            ))
        });
        self.tables[t].of_hood.insert(hood, h);
        h.map(|h| h.1)
    }
}

/// The Breakpad id of an ELF build-id: its first 16 bytes as a GUID (the first three fields
/// little-endian), upper-case hex, then the age 0 — as the Firefox Profiler and dump_syms
/// name Linux libraries.
pub fn breakpad_id(build_id: &BuildId) -> String {
    let mut g = [0u8; 16];
    for (d, s) in g.iter_mut().zip(build_id.as_bytes()) {
        *d = *s;
    }
    g[0..4].reverse();
    g[4..6].reverse();
    g[6..8].reverse();
    let mut s: String = g.iter().map(|b| format!("{b:02X}")).collect();
    s.push('0');
    s
}

/// The profile as fxprof-processed-profile serialized it, read back with the thread tables
/// this module rewrites as typed columns: a `serde_json::Value` of them took ~1 KiB per frame,
/// and a deep chain of inlined functions gives millions of frames (issue 29). The fields are
/// those fxprof-processed-profile 0.8 writes; the small ones stay JSON values.
#[derive(serde::Deserialize, serde::Serialize)]
struct Doc {
    meta: Value,
    libs: Value,
    threads: Vec<Thread>,
    pages: Value,
    #[serde(rename = "profilerOverhead")]
    profiler_overhead: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    counters: Option<Value>,
}

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Thread {
    frame_table: FrameTable,
    func_table: FuncTable,
    /// Rewritten whole.
    resource_table: ResourceTable,
    markers: Value,
    name: Value,
    is_main_thread: Value,
    native_symbols: Value,
    paused_ranges: Value,
    pid: Value,
    process_name: Value,
    process_shutdown_time: Value,
    process_startup_time: Value,
    process_type: Value,
    register_time: Value,
    samples: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    native_allocations: Option<Value>,
    stack_table: StackTable,
    string_array: Vec<String>,
    tid: Value,
    unregister_time: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    show_markers_in_timeline: Option<Value>,
}

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct FrameTable {
    length: usize,
    address: Vec<i64>,
    inline_depth: Vec<u32>,
    category: Vec<u32>,
    subcategory: Vec<u32>,
    func: Vec<u32>,
    native_symbol: Vec<Option<u32>>,
    #[serde(rename = "innerWindowID")]
    inner_window_id: Vec<u64>,
    line: Vec<Option<u32>>,
    column: Vec<Option<u32>>,
}

#[derive(serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct FuncTable {
    length: usize,
    name: Vec<u32>,
    #[serde(rename = "isJS")]
    is_js: Vec<bool>,
    #[serde(rename = "relevantForJS")]
    relevant_for_js: Vec<bool>,
    resource: Vec<i64>,
    file_name: Vec<Option<u32>>,
    line_number: Vec<Option<u32>>,
    column_number: Vec<Option<u32>>,
}

#[derive(serde::Deserialize, serde::Serialize, Default)]
struct ResourceTable {
    length: usize,
    #[serde(default)]
    lib: Vec<u32>,
    #[serde(default)]
    name: Vec<u32>,
    #[serde(default)]
    host: Vec<Option<u32>>,
    #[serde(default, rename = "type")]
    kind: Vec<u32>,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct StackTable {
    length: usize,
    prefix: Vec<Option<u32>>,
    frame: Vec<u32>,
}

/// The serialized profile with each thread's tables filled in from hood's: real names,
/// lines, inline depths, files, libs (see the module documentation).
fn fill_frames(
    prof: &Profile,
    tables: &[Tables],
    ids: &HashMap<(u32, u32), usize>,
    mut doc: Doc,
) -> Doc {
    // Libs: one per file whose code was sampled, in the order first met.
    let mut libs: Vec<Value> = Vec::new();
    let mut lib_of: HashMap<&str, usize> = HashMap::new();
    for key in tables.iter().flat_map(|t| &t.frames) {
        let Some(func) = prof.funcs.get(key.func as usize) else {
            continue;
        };
        if key.offset.is_none() && !func.kernel {
            continue;
        }
        let dso = func.dso.as_str();
        if lib_of.contains_key(dso) {
            continue;
        }
        let file = prof.dso_files.get(dso);
        let path = file.map_or(dso, |f| f.path.as_str());
        let build_id = file.and_then(|f| f.build_id.as_ref());
        lib_of.insert(dso, libs.len());
        libs.push(json!({
            "name": dso,
            "path": path,
            "debugName": dso,
            "debugPath": path,
            "breakpadId": build_id.map(breakpad_id).unwrap_or_default(),
            "codeId": build_id.map(BuildId::to_string),
            "arch": std::env::consts::ARCH,
        }));
    }
    let category = |name: &str| -> u32 {
        doc.meta["categories"]
            .as_array()
            .and_then(|c| c.iter().position(|c| c["name"] == name))
            .unwrap_or(0) as u32
    };
    let cats = (category(USER_CATEGORY), category(KERNEL_CATEGORY));
    for t in &mut doc.threads {
        let id = |v: &Value| v.as_str().and_then(|s| s.parse::<u32>().ok());
        let table = id(&t.pid)
            .zip(id(&t.tid))
            .and_then(|k| ids.get(&k))
            .and_then(|&i| tables.get(i));
        if let Some(table) = table {
            fill_thread(prof, table, &lib_of, cats, t);
        }
    }
    doc.libs = Value::Array(libs);
    doc
}

/// [`fill_frames`] for one thread: its frame, function, stack, resource and string tables
/// are hood's; its samples' stacks, which are fxprof's one-label stacks, are mapped to them.
fn fill_thread(
    prof: &Profile,
    table: &Tables,
    lib_of: &HashMap<&str, usize>,
    (user, kernel): (u32, u32),
    t: &mut Thread,
) {
    // fxprof's stack -> hood's, through its frame, function and label.
    let label_of = |stack: u32| -> Option<u32> {
        let frame = *t.stack_table.frame.get(stack as usize)?;
        let func = *t.frame_table.func.get(frame as usize)?;
        let name = *t.func_table.name.get(func as usize)?;
        t.string_array
            .get(name as usize)?
            .strip_prefix(TOKEN)?
            .parse()
            .ok()
    };
    let stack_map: Vec<Option<u32>> = (0..t.stack_table.frame.len() as u32)
        .map(label_of)
        .collect();
    if let Some(col) = t.samples.get_mut("stack").and_then(Value::as_array_mut) {
        for v in col {
            let ours = v
                .as_u64()
                .and_then(|s| stack_map.get(s as usize).copied().flatten());
            *v = ours.map_or(Value::Null, Value::from);
        }
    }

    let mut strings: Vec<String> = Vec::new();
    let mut names: HashMap<String, u32> = HashMap::new();
    let mut name = |s: &str, strings: &mut Vec<String>| -> u32 {
        if let Some(&i) = names.get(s) {
            return i;
        }
        strings.push(s.to_string());
        let i = (strings.len() - 1) as u32;
        names.insert(s.to_string(), i);
        i
    };
    // Resources: one per lib used in this thread.
    let mut res: Vec<(u32, u32)> = Vec::new();
    let mut res_of: HashMap<usize, i64> = HashMap::new();
    // Functions, deduplicated by (name, file, resource, start line).
    type FuncKey = (u32, Option<u32>, i64, Option<u32>);
    let mut funcs: Vec<FuncKey> = Vec::new();
    let mut func_ids: HashMap<FuncKey, u32> = HashMap::new();
    let n = table.frames.len();
    let mut ft = FrameTable {
        length: n,
        address: Vec::with_capacity(n),
        inline_depth: Vec::with_capacity(n),
        category: Vec::with_capacity(n),
        subcategory: vec![0; n],
        func: Vec::with_capacity(n),
        native_symbol: vec![None; n],
        inner_window_id: vec![0; n],
        line: Vec::with_capacity(n),
        column: vec![None; n],
    };
    for k in &table.frames {
        let Some(func) = prof.funcs.get(k.func as usize) else {
            continue;
        };
        let fkey = if k.whole {
            (name(&func.label(), &mut strings), None, -1, None)
        } else {
            let name_id = name(&func.name, &mut strings);
            let file_id = prof
                .source_files
                .get(k.file.unwrap_or(u32::MAX) as usize)
                .map(|f| name(f, &mut strings));
            let resource = match lib_of.get(func.dso.as_str()) {
                Some(&lib) if k.offset.is_some() || func.kernel => match res_of.get(&lib) {
                    Some(&r) => r,
                    None => {
                        let r = res.len() as i64;
                        res.push((lib as u32, name(&func.dso, &mut strings)));
                        res_of.insert(lib, r);
                        r
                    }
                },
                _ => -1,
            };
            let start = (func.start_line > 0).then_some(func.start_line);
            (name_id, file_id, resource, start)
        };
        let next = funcs.len() as u32;
        let id = *func_ids.entry(fkey).or_insert_with(|| {
            funcs.push(fkey);
            next
        });
        ft.func.push(id);
        ft.category.push(if func.kernel { kernel } else { user });
        ft.line.push((k.line > 0).then_some(k.line));
        ft.inline_depth.push(k.depth);
        // Addresses are u32 in the format: larger offsets are left out.
        ft.address.push(
            k.offset
                .and_then(|o| i64::try_from(o).ok())
                .filter(|&o| o <= i64::from(u32::MAX))
                .unwrap_or(-1),
        );
    }
    t.frame_table = ft;
    let n = funcs.len();
    t.func_table = FuncTable {
        length: n,
        name: funcs.iter().map(|f| f.0).collect(),
        is_js: vec![false; n],
        relevant_for_js: vec![false; n],
        resource: funcs.iter().map(|f| f.2).collect(),
        file_name: funcs.iter().map(|f| f.1).collect(),
        line_number: funcs.iter().map(|f| f.3).collect(),
        column_number: vec![None; n],
    };
    t.stack_table = StackTable {
        length: table.stack_frame.len(),
        prefix: table.stack_prefix.clone(),
        frame: table.stack_frame.clone(),
    };
    let r = res.len();
    t.resource_table = ResourceTable {
        length: r,
        lib: res.iter().map(|x| x.0).collect(),
        name: res.iter().map(|x| x.1).collect(),
        host: vec![None; r],
        // 1: a library.
        kind: vec![1; r],
    };
    t.string_array = strings;
}

/// Build the Firefox Profiler profile for the samples of `prof` that pass `filter`.
/// fxprof-processed-profile's serialization is read back typed (see [`Doc`]), and its
/// builder dropped first, so the peak is about the size of the output, not a JSON tree of it.
fn build(prof: &Profile, filter: &Filter) -> Result<Doc, ReportError> {
    let (fx, tables, ids) = build_fx(prof, filter);
    let bytes = serde_json::to_vec(&fx)?;
    drop(fx);
    let doc: Doc = serde_json::from_slice(&bytes)?;
    drop(bytes);
    Ok(fill_frames(prof, &tables, &ids, doc))
}

/// The profile as fxprof-processed-profile builds it, each stack a private label; each
/// thread's tables, and their index by (pid, tid).
type Built = (FxProfile, Vec<Tables>, HashMap<(u32, u32), usize>);

/// See [`Built`].
fn build_fx(prof: &Profile, filter: &Filter) -> Built {
    let m = &prof.meta;
    let reference = ReferenceTimestamp::from_millis_since_unix_epoch(m.start_unix_ns as f64 / 1e6);
    let interval = 1_000_000_000u64.checked_div(m.freq_hz).map_or(
        SamplingInterval::from_millis(1),
        SamplingInterval::from_nanos,
    );
    let mut fx = FxProfile::new(&format!("hood: {}", target(prof)), reference, interval);
    fx.set_os_name("Linux");
    // Every frame already carries its function's name (hood symbolizes at report time):
    // the profiler must not try to symbolicate the profile again.
    fx.set_symbolicated(true);
    let user = fx.add_category(USER_CATEGORY, CategoryColor::Yellow);
    // Frames name their category by index (see `fill_frames`).
    fx.add_category(KERNEL_CATEGORY, CategoryColor::Orange);
    let start_ns = match prof.samples.first() {
        Some(s) if m.start_monotonic_ns == 0 || m.start_monotonic_ns > s.time => s.time,
        _ => m.start_monotonic_ns,
    };
    let mut b = Builder {
        prof,
        fx,
        user,
        start_ns,
        processes: HashMap::new(),
        threads: HashMap::new(),
        tables: Vec::new(),
        time_based: matches!(
            m.event.split(':').next().unwrap_or(""),
            "cpu-clock" | "task-clock" | ""
        ),
    };
    // Off-CPU time (a recording made with --off-cpu) comes as samples with no CPU time,
    // weighted by how many sampling periods it lasted, so the call tree and the timeline count
    // waits in the same unit as CPU samples. What is left of a period carries over per thread.
    let mut f = filter.clone();
    if m.off_cpu.is_some() && f.measure == Measure::CpuSamples {
        f.measure = Measure::Wall;
    }
    let period_ns = 1_000_000_000 / m.freq_hz.max(1);
    let mut carry: HashMap<u32, u64> = HashMap::new();
    for s in f.samples(prof) {
        let weight = if s.mode.off_cpu() {
            let c = carry.entry(s.tid).or_insert(0);
            let ns = c.saturating_add(s.period);
            *c = ns % period_ns;
            i32::try_from(ns / period_ns).unwrap_or(i32::MAX)
        } else {
            1
        };
        if weight == 0 {
            continue;
        }
        let thread = b.thread(s.pid, s.tid, s.time);
        let stack = b.sample_stack(thread, &s);
        let thread = thread.0;
        let cpu = if b.time_based && !s.mode.off_cpu() {
            CpuDelta::from_nanos(s.period)
        } else {
            CpuDelta::ZERO
        };
        let ts = b.ts(s.time);
        b.fx.add_sample(thread, ts, stack, cpu, weight);
    }
    let ids = b.threads.iter().map(|(&k, &(_, i))| (k, i)).collect();
    (b.fx, b.tables, ids)
}

/// Write the gzip-compressed processed-format JSON of `prof` (the samples `opts.filter`
/// keeps).
pub fn render_firefox(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let doc = build(prof, &opts.filter)?;
    let mut gz = GzEncoder::new(out, Compression::default());
    serde_json::to_writer(&mut gz, &doc)?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests;
