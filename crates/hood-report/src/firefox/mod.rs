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
//! fxprof-processed-profile writes none of these columns, so they are filled in after it:
//! every frame is first interned under a private label that says which location line it is.

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
use hood_model::profile::{FuncId, Profile, Sample, StackId};
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
    kernel: CategoryHandle,
    start_ns: u64,
    processes: HashMap<u32, ProcessHandle>,
    threads: HashMap<(u32, u32), ThreadHandle>,
    stacks: HashMap<(ThreadHandle, StackId, bool), Option<StackHandle>>,
    time_based: bool,
    /// What each private frame label stands for (the label is [`TOKEN`] and the index).
    frames: Vec<FrameKey>,
    frame_ids: HashMap<FrameKey, usize>,
}

/// The start of the private labels of location frames, replaced after serialization.
const TOKEN: &str = "\u{1}hood-frame:";

/// One frame of a code location: a function at a line, inlined `depth` levels deep, in a
/// file (`dso` of the function) at a file offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FrameKey {
    func: FuncId,
    file: Option<u32>,
    line: u32,
    depth: u32,
    offset: Option<u64>,
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

    fn thread(&mut self, pid: u32, tid: u32, time: u64) -> ThreadHandle {
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
        self.threads.insert((pid, tid), h);
        h
    }

    /// The stack of sample `s`: by code location when the profile keeps them (inlined
    /// functions and lines), else by function.
    fn sample_stack(&mut self, thread: ThreadHandle, s: &Sample) -> Option<StackHandle> {
        let prof = self.prof;
        match prof
            .loc_stacks
            .get(s.locs as usize)
            .filter(|l| !l.is_empty())
        {
            Some(locs) => {
                if let Some(&h) = self.stacks.get(&(thread, s.locs, true)) {
                    return h;
                }
                let mut infos = Vec::new();
                // Outermost caller first; at one address the function holding the code
                // first, then what is inlined in it.
                for &l in locs.iter().rev() {
                    let Some(loc) = prof.locations.get(l as usize) else {
                        continue;
                    };
                    let offset = loc
                        .map
                        .and_then(|m| prof.code_maps.get(m as usize))
                        .map(|c| loc.address.wrapping_sub(c.start).wrapping_add(c.offset));
                    let lines = prof.lines_of(loc);
                    for (depth, fl) in lines.iter().rev().enumerate() {
                        let Some(func) = prof.funcs.get(fl.func as usize) else {
                            continue;
                        };
                        let key = FrameKey {
                            func: fl.func,
                            file: fl.file,
                            line: fl.line,
                            depth: depth as u32,
                            offset,
                        };
                        let next = self.frames.len();
                        let id = *self.frame_ids.entry(key).or_insert_with(|| {
                            self.frames.push(key);
                            next
                        });
                        infos.push(FrameInfo {
                            frame: Frame::Label(self.fx.intern_string(&format!("{TOKEN}{id}"))),
                            category_pair: if func.kernel { self.kernel } else { self.user }.into(),
                            flags: FrameFlags::empty(),
                        });
                    }
                }
                let h = self.fx.intern_stack_frames(thread, infos.into_iter());
                self.stacks.insert((thread, s.locs, true), h);
                h
            }
            None => self.stack(thread, s.stack),
        }
    }

    fn stack(&mut self, thread: ThreadHandle, stack: StackId) -> Option<StackHandle> {
        if let Some(&h) = self.stacks.get(&(thread, stack, false)) {
            return h;
        }
        let frames = self
            .prof
            .stacks
            .get(stack as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        // The processed format wants the outermost caller first; hood stores leaf first.
        let infos: Vec<FrameInfo> = frames
            .iter()
            .rev()
            .filter_map(|&f| self.prof.funcs.get(f as usize))
            .map(|func| FrameInfo {
                frame: Frame::Label(self.fx.intern_string(&func.label())),
                category_pair: if func.kernel { self.kernel } else { self.user }.into(),
                flags: FrameFlags::empty(),
            })
            .collect();
        let h = self.fx.intern_stack_frames(thread, infos.into_iter());
        self.stacks.insert((thread, stack, false), h);
        h
    }
}

/// The Breakpad id of an ELF build-id: its first 16 bytes as a GUID (the first three fields
/// little-endian), upper-case hex, then the age 0 — as the Firefox Profiler and dump_syms
/// name Linux libraries.
pub fn breakpad_id(build_id_hex: &str) -> Option<String> {
    let bytes: Vec<u8> = (0..build_id_hex.len() / 2)
        .map(|i| u8::from_str_radix(build_id_hex.get(2 * i..2 * i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    if bytes.is_empty() {
        return None;
    }
    let mut g = [0u8; 16];
    for (d, s) in g.iter_mut().zip(&bytes) {
        *d = *s;
    }
    g[0..4].reverse();
    g[4..6].reverse();
    g[6..8].reverse();
    let mut s: String = g.iter().map(|b| format!("{b:02X}")).collect();
    s.push('0');
    Some(s)
}

/// The serialized profile with the location frames filled in: real names, lines, inline
/// depths, files, libs (see the module documentation).
fn fill_frames(prof: &Profile, frames: &[FrameKey], mut v: Value) -> Value {
    // Libs: one per file whose code was sampled, in the order first met.
    let mut libs: Vec<Value> = Vec::new();
    let mut lib_of: HashMap<&str, usize> = HashMap::new();
    for key in frames {
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
        let build_id = file.and_then(|f| f.build_id.as_deref()).unwrap_or("");
        lib_of.insert(dso, libs.len());
        libs.push(json!({
            "name": dso,
            "path": path,
            "debugName": dso,
            "debugPath": path,
            "breakpadId": breakpad_id(build_id).unwrap_or_default(),
            "codeId": (!build_id.is_empty()).then_some(build_id),
            "arch": std::env::consts::ARCH,
        }));
    }
    if let Some(threads) = v["threads"].as_array_mut() {
        for t in threads {
            fill_thread(prof, frames, &lib_of, t);
        }
    }
    v["libs"] = Value::Array(libs);
    v
}

/// [`fill_frames`] for one thread's tables.
fn fill_thread(prof: &Profile, frames: &[FrameKey], lib_of: &HashMap<&str, usize>, t: &mut Value) {
    let Some(strings) = t["stringArray"].as_array().cloned() else {
        return;
    };
    let mut strings: Vec<String> = strings
        .into_iter()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect();
    let mut string_ids: HashMap<String, usize> = strings
        .iter()
        .enumerate()
        .map(|(i, s)| (s.clone(), i))
        .collect();
    let mut intern = |s: &str, strings: &mut Vec<String>| -> usize {
        if let Some(&i) = string_ids.get(s) {
            return i;
        }
        strings.push(s.to_string());
        string_ids.insert(s.to_string(), strings.len() - 1);
        strings.len() - 1
    };
    let col = |v: &Value, k: &str| -> Vec<Value> { v[k].as_array().cloned().unwrap_or_default() };
    let old_funcs = &t["funcTable"];
    let old_names = col(old_funcs, "name");
    let old_resources = col(old_funcs, "resource");
    // Resources: one per lib used in this thread.
    let mut res: Vec<(usize, usize)> = Vec::new();
    let mut res_of: HashMap<usize, usize> = HashMap::new();
    // New functions, deduplicated by (name, file, resource, start line).
    type FuncKey = (usize, Option<usize>, i64, Option<u32>);
    let mut funcs: Vec<FuncKey> = Vec::new();
    let mut func_ids: HashMap<FuncKey, usize> = HashMap::new();
    let mut remap = Vec::with_capacity(old_names.len());
    let mut key_of: Vec<Option<FrameKey>> = Vec::with_capacity(old_names.len());
    for (i, n) in old_names.iter().enumerate() {
        let name = n.as_u64().and_then(|n| strings.get(n as usize)).cloned();
        let key = name
            .as_deref()
            .and_then(|s| s.strip_prefix(TOKEN))
            .and_then(|id| id.parse::<usize>().ok())
            .and_then(|id| frames.get(id).copied());
        let (name_id, file_id, resource, start) =
            match key.and_then(|k| Some((k, prof.funcs.get(k.func as usize)?))) {
                Some((k, func)) => {
                    let name_id = intern(&func.name, &mut strings);
                    let file_id = prof
                        .source_files
                        .get(k.file.unwrap_or(u32::MAX) as usize)
                        .map(|f| intern(f, &mut strings));
                    let resource = match lib_of.get(func.dso.as_str()) {
                        Some(&lib) if k.offset.is_some() || func.kernel => {
                            let next = res.len();
                            let r = *res_of.entry(lib).or_insert_with(|| {
                                res.push((lib, 0));
                                next
                            });
                            if r == next {
                                res[r].1 = intern(&func.dso, &mut strings);
                            }
                            r as i64
                        }
                        _ => -1,
                    };
                    let start = (func.start_line > 0).then_some(func.start_line);
                    (name_id, file_id, resource, start)
                }
                None => (
                    n.as_u64().unwrap_or(0) as usize,
                    None,
                    old_resources.get(i).and_then(Value::as_i64).unwrap_or(-1),
                    None,
                ),
            };
        let next = funcs.len();
        let fkey = (name_id, file_id, resource, start);
        let id = *func_ids.entry(fkey).or_insert_with(|| {
            funcs.push(fkey);
            next
        });
        remap.push(id);
        key_of.push(key);
    }
    let n = funcs.len();
    t["funcTable"] = json!({
        "length": n,
        "name": funcs.iter().map(|f| f.0).collect::<Vec<_>>(),
        "isJS": vec![false; n],
        "relevantForJS": vec![false; n],
        "resource": funcs.iter().map(|f| f.2).collect::<Vec<_>>(),
        "fileName": funcs.iter().map(|f| f.1).collect::<Vec<_>>(),
        "lineNumber": funcs.iter().map(|f| f.3).collect::<Vec<_>>(),
        "columnNumber": vec![Value::Null; n],
    });
    let frame_funcs = col(&t["frameTable"], "func");
    let mut f_func = Vec::with_capacity(frame_funcs.len());
    let mut f_line = Vec::with_capacity(frame_funcs.len());
    let mut f_depth = Vec::with_capacity(frame_funcs.len());
    let mut f_addr = Vec::with_capacity(frame_funcs.len());
    for f in &frame_funcs {
        let old = f.as_u64().unwrap_or(0) as usize;
        f_func.push(remap.get(old).copied().unwrap_or(0));
        let key = key_of.get(old).copied().flatten();
        f_line.push(key.and_then(|k| (k.line > 0).then_some(k.line)));
        f_depth.push(key.map_or(0, |k| k.depth));
        // Addresses are u32 in the format: larger offsets are left out.
        f_addr.push(
            key.and_then(|k| k.offset)
                .and_then(|o| i64::try_from(o).ok())
                .filter(|&o| o <= i64::from(u32::MAX))
                .unwrap_or(-1),
        );
    }
    t["frameTable"]["func"] = json!(f_func);
    t["frameTable"]["line"] = json!(f_line);
    t["frameTable"]["inlineDepth"] = json!(f_depth);
    t["frameTable"]["address"] = json!(f_addr);
    let r = res.len();
    t["resourceTable"] = json!({
        "length": r,
        "lib": res.iter().map(|x| x.0).collect::<Vec<_>>(),
        "name": res.iter().map(|x| x.1).collect::<Vec<_>>(),
        "host": vec![Value::Null; r],
        // 1: a library.
        "type": vec![1; r],
    });
    t["stringArray"] = json!(strings);
}

/// Build the Firefox Profiler profile for the samples of `prof` that pass `filter`, as JSON.
pub fn build(prof: &Profile, filter: &Filter) -> Result<Value, ReportError> {
    let (fx, frames) = build_fx(prof, filter);
    Ok(fill_frames(prof, &frames, serde_json::to_value(&fx)?))
}

/// The profile as fxprof-processed-profile builds it, location frames under private labels.
fn build_fx(prof: &Profile, filter: &Filter) -> (FxProfile, Vec<FrameKey>) {
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
    let kernel = fx.add_category(KERNEL_CATEGORY, CategoryColor::Orange);
    let start_ns = match prof.samples.first() {
        Some(s) if m.start_monotonic_ns == 0 || m.start_monotonic_ns > s.time => s.time,
        _ => m.start_monotonic_ns,
    };
    let mut b = Builder {
        prof,
        fx,
        user,
        kernel,
        start_ns,
        processes: HashMap::new(),
        threads: HashMap::new(),
        stacks: HashMap::new(),
        time_based: matches!(
            m.event.split(':').next().unwrap_or(""),
            "cpu-clock" | "task-clock" | ""
        ),
        frames: Vec::new(),
        frame_ids: HashMap::new(),
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
        let cpu = if b.time_based && !s.mode.off_cpu() {
            CpuDelta::from_nanos(s.period)
        } else {
            CpuDelta::ZERO
        };
        let ts = b.ts(s.time);
        b.fx.add_sample(thread, ts, stack, cpu, weight);
    }
    (b.fx, b.frames)
}

/// Write the gzip-compressed processed-format JSON of `prof` (the samples `opts.filter`
/// keeps).
pub fn render_firefox(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let v = build(prof, &opts.filter)?;
    let mut gz = GzEncoder::new(out, Compression::default());
    serde_json::to_writer(&mut gz, &v)?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests;
