//! Interpreting a raw recording: follow processes through fork/exec/mmap, turn every sample's
//! addresses into locations, symbolize each unique location once, and intern stacks.

use crate::profile::RecordMode;
use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use super::load::RawRecording;
use super::model::{
    CodeMap, DsoFile, FrameLine, Func, FuncId, Location, Mode, Process, Profile, Sample, Thread,
    WakeContext, Waker,
};
use super::offcpu::{self, RawWaker, Tracker, BEFORE_RECORDING, NEW_THREAD};
use hood_raw::maps::{
    load_proc_maps, AddressSpace, FileId, Files, MappedFile, Processes, MAX_MAPPINGS,
};
use hood_raw::records::{
    Event, Mapping, Truncation, CONTEXT_KERNEL, CONTEXT_MAX, CONTEXT_USER, CPUMODE_KERNEL,
};

/// One function a resolver found at a location, with the source line there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedFrame {
    /// Function name.
    pub name: String,
    /// Source file, when debug info gives one.
    pub file: Option<String>,
    /// 1-based line in `file` (0: unknown).
    pub line: u32,
    /// The line where the function starts (0: unknown).
    pub start_line: u32,
}

/// What a resolver says of one location: the functions inlined there, innermost first, then
/// the function the code belongs to (always last; the only one when nothing is inlined).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Innermost first; never empty.
    pub frames: Vec<ResolvedFrame>,
}

impl Resolved {
    /// A bare function name (no line, nothing inlined).
    pub fn name(name: String) -> Resolved {
        Resolved {
            frames: vec![ResolvedFrame {
                name,
                ..ResolvedFrame::default()
            }],
        }
    }
}

/// Turns locations into names. Implemented outside the model (by hood-symbols in the binary)
/// so the model stays pure. Each method gets a batch of unique locations and returns one
/// answer per input, `None` when no symbol was found.
pub trait Resolver {
    /// Kernel addresses.
    fn kernel(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>>;
    /// Offsets into a mapped ELF file.
    fn file(&mut self, file: &MappedFile, offsets: &[u64]) -> Vec<Option<Resolved>>;
    /// Offsets into the recorded `[vdso]` image.
    fn vdso(&mut self, offsets: &[u64]) -> Vec<Option<Resolved>>;
    /// Absolute addresses in anonymous memory of `pid` (JIT code; /tmp/perf-PID.map).
    fn perf_map(&mut self, pid: u32, addrs: &[u64]) -> Vec<Option<Resolved>>;
    /// Absolute addresses nothing else resolved (an nm-format --symfile).
    fn symfile(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>>;
    /// Warnings collected (changed binaries, missing files).
    fn warnings(&mut self) -> Vec<String>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Loc {
    Kernel(u64),
    File(FileId, u64),
    Vdso(u64),
    Anon(u32, u64),
    Unknown,
    /// A user stack that could not be completed: why, and the file of its last frame.
    Truncated(Truncation, Option<FileId>),
    /// A frame that stands for something other than code (off-CPU time before the
    /// recording, a waker): index into [`Interner::pseudo`].
    Pseudo(u32),
}

/// The frame of a thread switch or wake-up recorded without any stack.
pub const NO_STACK: &str = "[no stack recorded]";

/// The pseudo-DSO of off-CPU pseudo-frames.
pub const OFF_CPU_DSO: &str = "[off-cpu]";

/// The pseudo-DSO of truncation frames.
pub const TRUNCATED_DSO: &str = "[truncated]";

/// The frame shown where a user stack stops early.
fn truncation_name(t: Truncation, file: Option<&MappedFile>) -> String {
    let short = file.map(MappedFile::short_name);
    match (t, short) {
        (Truncation::StackCopyTooSmall, _) => "[truncated: stack copy too small]".into(),
        (Truncation::NoUnwindInfo, Some(f)) => format!("[truncated: no unwind info in {f}]"),
        (Truncation::NoUnwindInfo, None) => {
            "[truncated: no unwind info (JIT or anonymous code)]".into()
        }
        (Truncation::NotMapped, _) => "[truncated: return address outside known mappings]".into(),
        (Truncation::Failed, Some(f)) => format!("[truncated: unwinding failed in {f}]"),
        (Truncation::Failed, None) => "[truncated: unwinding failed]".into(),
        (Truncation::TooDeep, _) => "[truncated: deeper than kernel.perf_event_max_stack]".into(),
    }
}

/// A mapping as the process saw it: (start, end, file offset of start).
type MapRange = (u64, u64, u64);

#[derive(Default)]
struct Interner {
    locs: Vec<Loc>,
    abs: Vec<u64>,
    /// The mapping each location was first seen in (files and the vdso).
    maps: Vec<Option<MapRange>>,
    loc_ids: HashMap<Loc, u32>,
    stacks: Vec<Vec<u32>>,
    stack_ids: HashMap<Vec<u32>, u32>,
    /// Names of [`Loc::Pseudo`] frames.
    pseudo: Vec<String>,
    pseudo_ids: HashMap<String, u32>,
}

impl Interner {
    /// The location of a pseudo-frame named `name`.
    fn pseudo(&mut self, name: &str) -> u32 {
        let i = match self.pseudo_ids.get(name) {
            Some(&i) => i,
            None => {
                let i = self.pseudo.len() as u32;
                self.pseudo.push(name.to_string());
                self.pseudo_ids.insert(name.to_string(), i);
                i
            }
        };
        self.loc(Loc::Pseudo(i), 0, None)
    }

    fn loc(&mut self, loc: Loc, abs: u64, map: Option<MapRange>) -> u32 {
        if let Some(&id) = self.loc_ids.get(&loc) {
            return id;
        }
        let id = self.locs.len() as u32;
        self.locs.push(loc);
        self.abs.push(abs);
        self.maps.push(map);
        self.loc_ids.insert(loc, id);
        id
    }

    fn stack(&mut self, frames: &[u32]) -> u32 {
        if let Some(&id) = self.stack_ids.get(frames) {
            return id;
        }
        let id = self.stacks.len() as u32;
        self.stacks.push(frames.to_vec());
        self.stack_ids.insert(frames.to_vec(), id);
        id
    }
}

struct World {
    files: Files,
    spaces: Processes<AddressSpace<FileId>>,
    /// Processes that mapped more than [`MAX_MAPPINGS`] (the rest were not followed).
    capped: std::collections::BTreeSet<u32>,
    comms: BTreeMap<u32, String>,
    threads: BTreeMap<u32, BTreeMap<u32, String>>,
    build_ids: BTreeMap<String, hood_raw::BuildId>,
}

impl World {
    fn locate(&self, pid: u32, addr: u64, kernel: bool, has_perf_map: bool) -> Loc {
        if kernel {
            return Loc::Kernel(addr);
        }
        match self.spaces.get(pid).and_then(|s| s.lookup(addr)) {
            Some((file, off)) => {
                let f = &self.files.list[file as usize];
                if f.path == "[vdso]" {
                    Loc::Vdso(off)
                } else if f.is_anon() {
                    Loc::Anon(pid, addr)
                } else if f.is_pseudo() {
                    Loc::Unknown
                } else {
                    Loc::File(file, off)
                }
            }
            None if has_perf_map => Loc::Anon(pid, addr),
            None => Loc::Unknown,
        }
    }

    /// [`locate`](Self::locate), with the mapping a file (or vdso) location lies in.
    fn locate_mapped(
        &self,
        pid: u32,
        addr: u64,
        kernel: bool,
        has_perf_map: bool,
    ) -> (Loc, Option<MapRange>) {
        let loc = self.locate(pid, addr, kernel, has_perf_map);
        let map = match loc {
            Loc::File(..) | Loc::Vdso(_) => self.spaces.get(pid).and_then(|s| s.mapping_of(addr)),
            _ => None,
        };
        (loc, map)
    }
}

/// What decides a sample's stack: its process and that process's mappings (generation),
/// the mode it was taken in, and its call chain (or, without one, its ip).
#[derive(PartialEq, Eq, Hash)]
struct ChainKey<'a> {
    pid: u32,
    gen: u32,
    kernel_ip: bool,
    ip: u64,
    chain: &'a [u64],
}

/// Turn one sample's call chain (or bare ip) into interned locations in `frames`, leaf first.
#[allow(clippy::too_many_arguments)]
fn locate_chain(
    world: &World,
    int: &mut Interner,
    frames: &mut Vec<u32>,
    pid: u32,
    ip: u64,
    kernel_ip: bool,
    chain: &[u64],
    has_map: bool,
) {
    frames.clear();
    if chain.is_empty() {
        let (l, m) = world.locate_mapped(pid, ip, kernel_ip, has_map);
        frames.push(int.loc(l, ip, m));
        return;
    }
    let mut kernel = kernel_ip;
    // The first address after a context marker is where that context was left (the sampled
    // instruction, a faulting or interrupted one, or the instruction after a syscall): exact.
    let mut exact = true;
    for &a in chain {
        if a >= CONTEXT_MAX {
            if let Some(t) = Truncation::from_marker(a) {
                let file = frames.last().and_then(|&l| match int.locs[l as usize] {
                    Loc::File(f, _) => Some(f),
                    _ => None,
                });
                frames.push(int.loc(Loc::Truncated(t, file), 0, None));
                break;
            }
            kernel = a == CONTEXT_KERNEL;
            if a != CONTEXT_KERNEL && a != CONTEXT_USER {
                break; // guest or hypervisor frames: not ours
            }
            exact = true;
            continue;
        }
        // Return addresses point after the call; look up the call itself.
        let look = if exact { a } else { a.saturating_sub(1) };
        exact = false;
        let (l, m) = world.locate_mapped(pid, look, kernel, has_map);
        frames.push(int.loc(l, look, m));
    }
}

/// [`locate_chain`] of a wait's or a wake-up's stack (kernel first, no sampled ip). A stack
/// that never came (a kernel stack the BPF program could not take, a copy lost with its
/// ring's overflow) is said as [`NO_STACK`], not shown as the kernel's address 0.
fn locate_wait_chain(
    world: &World,
    int: &mut Interner,
    frames: &mut Vec<u32>,
    pid: u32,
    chain: &[u64],
    has_map: bool,
) {
    if chain.is_empty() {
        frames.clear();
        frames.push(int.pseudo(NO_STACK));
    } else {
        locate_chain(world, int, frames, pid, 0, true, chain, has_map);
    }
}

/// Interpret and symbolize a raw recording.
pub fn build_profile(raw: &RawRecording, resolver: &mut dyn Resolver) -> Profile {
    let mut world = World {
        files: Files::default(),
        spaces: Processes::default(),
        capped: Default::default(),
        comms: BTreeMap::new(),
        threads: BTreeMap::new(),
        build_ids: raw.snapshot.build_ids.clone(),
    };
    world
        .build_ids
        .extend(raw.build_ids.iter().map(|(k, v)| (k.clone(), *v)));
    for p in &raw.snapshot.processes {
        let mut space = AddressSpace::default();
        load_proc_maps(&p.maps, &mut world.files, &world.build_ids, &mut space);
        world.spaces.insert(p.pid, space);
        world.comms.insert(p.pid, p.comm.clone());
        let t = world.threads.entry(p.pid).or_default();
        for (tid, comm) in &p.threads {
            t.insert(*tid, comm.clone());
        }
    }
    let mut prof = Profile {
        meta: raw.meta.clone(),
        stats: raw.stats.clone(),
        warnings: raw.warnings.clone(),
        ..Profile::default()
    };
    let mut int = Interner::default();
    int.stack(&[]);
    let mut raw_samples: Vec<Sample> = Vec::with_capacity(raw.decoded.events.len());
    let mut frames: Vec<u32> = Vec::with_capacity(128);
    // Most samples repeat a call chain seen before in the same address space (a hot loop):
    // remember chain → stack until that process's mappings change. `gens` counts the changes.
    let mut gens: HashMap<u32, u32> = HashMap::default();
    let mut memo: HashMap<ChainKey<'_>, u32> = HashMap::default();
    // Off-CPU intervals, when the recording has switches and wake-ups.
    // A started command's threads exist from its first recorded event (the exec that
    // enabled the events), not from the moment hood started.
    let tracker_start = match raw.meta.mode {
        RecordMode::Command => raw
            .decoded
            .events
            .iter()
            .map(|e| e.time)
            .find(|&t| t > 0)
            .unwrap_or(raw.meta.start_monotonic_ns),
        _ => raw.meta.start_monotonic_ns,
    };
    let mut tracker = raw
        .decoded
        .sched
        .as_ref()
        .map(|_| Tracker::new(tracker_start));
    let whole_system = raw.meta.mode == RecordMode::System;
    let mut last_time = 0;
    for ev in &raw.decoded.events {
        last_time = last_time.max(ev.time);
        match &ev.event {
            Event::Mmap(m) => {
                let Mapping {
                    pid,
                    start,
                    len,
                    pgoff,
                    filename,
                    build_id,
                } = &**m;
                // An all-zero build-id (perf 6.x writes them when its build-id code fails)
                // names no build: the file is found by its path instead.
                let named = |b: &hood_raw::BuildId| b.names_a_build();
                let build_id = build_id
                    .filter(named)
                    .or_else(|| world.build_ids.get(filename).copied().filter(named));
                let file = world.files.intern(MappedFile {
                    path: filename.clone(),
                    build_id,
                });
                let end = start.saturating_add(*len);
                if world.spaces.entry(*pid).insert(*start, end, *pgoff, file) {
                    *gens.entry(*pid).or_default() += 1;
                } else if end > *start {
                    world.capped.insert(*pid);
                }
            }
            Event::Comm {
                pid,
                tid,
                comm,
                exec,
            } => {
                world
                    .threads
                    .entry(*pid)
                    .or_default()
                    .insert(*tid, comm.clone());
                if *exec || pid == tid {
                    world.comms.insert(*pid, comm.clone());
                }
                if *exec {
                    world.spaces.exec(*pid);
                    *gens.entry(*pid).or_default() += 1;
                }
            }
            Event::Fork { pid, ppid, tid } => {
                if world.spaces.fork(*ppid, *pid) {
                    *gens.entry(*pid).or_default() += 1;
                    if let Some(c) = world.comms.get(ppid).cloned() {
                        world.comms.insert(*pid, c);
                    }
                }
                let name = world.comms.get(pid).cloned().unwrap_or_default();
                world
                    .threads
                    .entry(*pid)
                    .or_default()
                    .entry(*tid)
                    .or_insert(name);
                if let Some(t) = tracker.as_mut() {
                    t.fork(*pid, *tid, ev.time);
                }
            }
            // A process's mappings outlive its exit here (unlike the live unwinder's, which
            // frees them): a thread may outlive the main thread's exit record, and a later
            // fork of the pid replaces them.
            Event::Exit { tid, .. } => {
                if let Some(t) = tracker.as_mut() {
                    t.exit(*tid, ev.time);
                }
            }
            Event::SwitchOut {
                pid,
                tid,
                cpu,
                state,
                next_tid,
                chain,
            } => {
                let Some(t) = tracker.as_mut() else {
                    continue;
                };
                let chain = raw.decoded.chain(*chain);
                let has_map = raw.perf_maps.contains_key(pid);
                locate_wait_chain(&world, &mut int, &mut frames, *pid, chain, has_map);
                let locs = int.stack(&frames);
                t.switch_out(*pid, *tid, *cpu, ev.time, *state, locs);
                if whole_system {
                    t.switch_in(*next_tid, ev.time);
                }
            }
            Event::Switch { tid, out, .. } => {
                if let (Some(t), false) = (tracker.as_mut(), *out) {
                    t.switch_in(*tid, ev.time);
                }
            }
            Event::Waking {
                pid,
                tid,
                cpu,
                wakee,
                flags,
                chain,
            } => {
                let Some(t) = tracker.as_mut() else {
                    continue;
                };
                let chain = raw.decoded.chain(*chain);
                let context = offcpu::wake_context(*flags);
                // An interrupt's user frames belong to whatever task it interrupted. A soft
                // interrupt may run in the task that raised it (a loopback send), whose user
                // frames are then the cause: kept here, dropped below if the kernel frames show
                // it ran on an interrupt's exit.
                let chain = match context {
                    WakeContext::Thread | WakeContext::SoftIrq => chain,
                    _ => chain
                        .iter()
                        .position(|&a| a == CONTEXT_USER)
                        .map_or(chain, |i| &chain[..i]),
                };
                let has_user = chain.contains(&CONTEXT_USER);
                let has_map = raw.perf_maps.contains_key(pid);
                locate_wait_chain(&world, &mut int, &mut frames, *pid, chain, has_map);
                let comm = || {
                    world
                        .threads
                        .get(pid)
                        .and_then(|t| t.get(tid))
                        .or_else(|| world.comms.get(pid))
                        .or_else(|| raw.decoded.waker_comms.get(tid))
                        .cloned()
                        .unwrap_or_default()
                };
                let who = match context {
                    WakeContext::Thread => format!("[woken by {} pid {pid} tid {tid}]", comm()),
                    WakeContext::HardIrq => "[woken by a hardware interrupt]".into(),
                    WakeContext::SoftIrq => {
                        format!(
                            "[woken by a soft interrupt in {} pid {pid} tid {tid}]",
                            comm()
                        )
                    }
                    WakeContext::Nmi => "[woken by an NMI]".into(),
                };
                let root = int.pseudo(&who);
                frames.push(root);
                let locs = int.stack(&frames);
                t.waking(
                    *wakee,
                    RawWaker {
                        pid: *pid,
                        tid: *tid,
                        time: ev.time,
                        cpu: *cpu,
                        context,
                        locs,
                        has_user,
                    },
                );
            }
            Event::Lost { count } => {
                prof.lost_in_stream = prof.lost_in_stream.saturating_add(*count)
            }
            Event::Throttle => prof.throttles_in_stream += 1,
            Event::Sample {
                pid,
                tid,
                cpu,
                ip,
                period,
                cpumode,
                chain,
            } => {
                let kernel_ip = *cpumode == CPUMODE_KERNEL;
                let chain = raw.decoded.chain(*chain);
                let key = ChainKey {
                    pid: *pid,
                    gen: gens.get(pid).copied().unwrap_or(0),
                    kernel_ip,
                    ip: if chain.is_empty() { *ip } else { 0 },
                    chain,
                };
                let stack = match memo.get(&key) {
                    Some(&stack) => stack,
                    None => {
                        let has_map = raw.perf_maps.contains_key(pid);
                        locate_chain(
                            &world,
                            &mut int,
                            &mut frames,
                            *pid,
                            *ip,
                            kernel_ip,
                            chain,
                            has_map,
                        );
                        let stack = int.stack(&frames);
                        memo.insert(key, stack);
                        stack
                    }
                };
                let mode = if *pid == 0 {
                    Mode::Idle
                } else if kernel_ip {
                    Mode::Kernel
                } else {
                    Mode::User
                };
                raw_samples.push(Sample {
                    pid: *pid,
                    tid: *tid,
                    cpu: *cpu,
                    time: ev.time,
                    period: *period,
                    mode,
                    stack,
                    locs: 0,
                });
                if let Some(t) = tracker.as_mut() {
                    t.running(*pid, *tid, ev.time);
                }
            }
        }
    }
    let end = match &raw.stats {
        Some(s) if s.end_monotonic_ns > 0 => s.end_monotonic_ns,
        _ => last_time,
    };
    let mut derived = tracker.map(|t| t.finish(end));
    if let Some(d) = derived.as_mut() {
        let before = int.pseudo("[off CPU since before the recording]");
        let before = int.stack(&[before]);
        let new_thread = int.pseudo("[new thread, waiting for its first CPU]");
        let new_thread = int.stack(&[new_thread]);
        // The kernel takes no sample of a wake-up in an interrupt on an idle CPU (the idle
        // task runs no tracepoint sampling): in a recording that saw every other wake-up and
        // lost nothing, a blocked interval without a waker was ended by such an interrupt.
        let all_wakeups = raw.meta.off_cpu.as_ref().is_some_and(|o| o.all_wakeups);
        let lost = raw.stats.as_ref().map_or(0, |s| s.lost()) + prof.lost_in_stream;
        let unknown = int.pseudo(if all_wakeups && lost == 0 {
            "[woken by an interrupt on an idle CPU]"
        } else {
            "[waker not seen]"
        });
        let unknown = int.stack(&[unknown]);
        let min_ns = raw.meta.off_cpu.as_ref().map_or(0, |o| o.min_ns);
        d.stats.min_ns = min_ns;
        let stack_rate = raw.meta.off_cpu.as_ref().map_or(0, |o| o.stack_rate);
        d.stats.stack_rate = stack_rate;
        if stack_rate > 0 {
            // The rate bound left these waits without stacks on purpose: they stand where
            // their thread's previous ones did.
            let none = int.pseudo(NO_STACK);
            let no_stack = int.stack(&[none]);
            let (n, ns) = offcpu::charge_to_previous(d, min_ns.max(1), no_stack);
            d.stats.inherited = n;
            d.stats.inherited_ns = ns;
        }
        let short = int.pseudo(&format!(
            "[off-CPU intervals shorter than {}]",
            offcpu_min_words(min_ns)
        ));
        let short = int.stack(&[short]);
        for s in &mut d.samples {
            if s.locs == BEFORE_RECORDING {
                s.locs = before;
            } else if s.locs == NEW_THREAD {
                s.locs = new_thread;
            } else if s.period < min_ns {
                d.stats.short += 1;
                d.stats.short_ns += s.period;
                s.locs = short;
            }
        }
        d.unknown_waker = unknown;
    }
    let lines_of_loc = symbolize(&int, &world.files, resolver, &mut prof);
    if let Some(d) = derived.as_mut() {
        // The scheduler's own frames (and the wake-up's) say nothing about why.
        let names = |l: u32| -> String {
            let (_, b) = lines_of_loc[l as usize];
            let f = prof.lines[b as usize - 1].func;
            prof.funcs[f as usize].name.clone()
        };
        let mut trimmed: HashMap<(u32, bool), u32> = HashMap::default();
        let mut trim = |int: &mut Interner, locs: u32, waker: bool| -> u32 {
            if let Some(&t) = trimmed.get(&(locs, waker)) {
                return t;
            }
            let st = int.stacks[locs as usize].clone();
            let cut = scheduler_frames(&st, waker, &names);
            let t = int.stack(&st[cut..]);
            trimmed.insert((locs, waker), t);
            t
        };
        for s in &mut d.samples {
            s.locs = trim(&mut int, s.locs, false);
        }
        for w in &mut d.wakers {
            w.locs = trim(&mut int, w.locs, true);
            if w.context == WakeContext::SoftIrq {
                let st = int.stacks[w.locs as usize].clone();
                let on_irq_exit = st.iter().any(|&l| {
                    let n = names(l);
                    IRQ_ENTRY.iter().any(|p| n.starts_with(p))
                });
                if on_irq_exit {
                    let kept: Vec<u32> = st
                        .into_iter()
                        .filter(|&l| {
                            matches!(int.locs[l as usize], Loc::Kernel(_) | Loc::Pseudo(_))
                        })
                        .collect();
                    w.locs = int.stack(&kept);
                }
            }
        }
    }
    let mut stack_map: HashMap<Vec<FuncId>, u32> = HashMap::default();
    let mut remap = Vec::with_capacity(int.stacks.len());
    for s in &int.stacks {
        // Each location stands for its inlined functions (innermost first) and its own.
        let f: Vec<FuncId> = s
            .iter()
            .flat_map(|&l| {
                let (a, b) = lines_of_loc[l as usize];
                prof.lines[a as usize..b as usize].iter().map(|x| x.func)
            })
            .collect();
        let next = prof.stacks.len() as u32;
        let id = *stack_map.entry(f.clone()).or_insert_with(|| {
            prof.stacks.push(f);
            next
        });
        remap.push(id);
    }
    for s in &mut raw_samples {
        s.locs = s.stack;
        s.stack = remap[s.stack as usize];
    }
    if let Some(d) = derived {
        prof.off_cpu = d
            .samples
            .into_iter()
            .map(|s| Sample {
                stack: remap[s.locs as usize],
                ..s
            })
            .collect();
        prof.off_cpu_waker = d.waker_of;
        prof.wakers = d
            .wakers
            .iter()
            .map(|w| Waker {
                pid: w.pid,
                tid: w.tid,
                time: w.time,
                context: w.context,
                stack: remap[w.locs as usize],
                locs: w.locs,
            })
            .collect();
        prof.unknown_waker = (remap[d.unknown_waker as usize], d.unknown_waker);
        prof.thread_times = d.threads;
        prof.off_cpu_stats = d.stats;
    }
    keep_locations(&mut int, &world.files, &lines_of_loc, &mut prof);
    prof.samples = raw_samples;
    prof.warnings.extend(world.capped.iter().map(|pid| {
        format!(
            "pid {pid}: more than {MAX_MAPPINGS} mappings in the recording; those past them \
             were not followed (a cap on what one process may make hood hold), so addresses in \
             them show as unknown"
        )
    }));
    prof.warnings.extend(resolver.warnings());
    let mut pids: Vec<u32> = prof
        .samples
        .iter()
        .chain(&prof.off_cpu)
        .map(|s| s.pid)
        .chain(prof.wakers.iter().map(|w| w.pid))
        .collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        let comm = world.comms.get(&pid).cloned().unwrap_or_default();
        let threads = world
            .threads
            .get(&pid)
            .map(|t| {
                t.iter()
                    .map(|(&tid, c)| Thread {
                        tid,
                        comm: c.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        prof.processes.push(Process { pid, comm, threads });
    }
    prof
}

/// How many leading frames of an off-CPU stack (`waker`: a waker's) belong to the scheduler
/// or the wake-up itself: through `__schedule` (and a `schedule` right below it), or through
/// `try_to_wake_up`, looked for among the first frames only.
fn scheduler_frames(stack: &[u32], waker: bool, name: &dyn Fn(u32) -> String) -> usize {
    const LOOK: usize = 16;
    let target = if waker {
        "try_to_wake_up"
    } else {
        "__schedule"
    };
    let Some(i) = stack.iter().take(LOOK).position(|&l| name(l) == target) else {
        return 0;
    };
    let mut cut = i + 1;
    if !waker && stack.get(cut).is_some_and(|&l| name(l) == "schedule") {
        cut += 1;
    }
    cut
}

/// Kernel functions of an interrupt's entry and exit: a soft interrupt below them ran on an
/// interrupt's exit, not in the task it interrupted.
const IRQ_ENTRY: &[&str] = &[
    "irq_exit",
    "__irq_exit",
    "sysvec_",
    "asm_sysvec_",
    "common_interrupt",
    "asm_common_interrupt",
];

/// `--off-cpu-min` in words: `10 µs`, `1 ms`.
pub fn offcpu_min_words(ns: u64) -> String {
    if ns >= 1_000_000 && ns.is_multiple_of(1_000_000) {
        format!("{} ms", ns / 1_000_000)
    } else if ns >= 1_000 && ns.is_multiple_of(1_000) {
        format!("{} µs", ns / 1_000)
    } else {
        format!("{ns} ns")
    }
}

/// Move the interned locations, their stacks and mappings into the profile.
fn keep_locations(
    int: &mut Interner,
    files: &Files,
    lines_of_loc: &[(u32, u32)],
    prof: &mut Profile,
) {
    let mut map_ids: HashMap<(String, MapRange), u32> = HashMap::default();
    for (i, l) in int.locs.iter().enumerate() {
        let dso = match l {
            Loc::File(f, _) => Some(files.list[*f as usize].short_name().to_string()),
            Loc::Vdso(_) => Some("[vdso]".to_string()),
            _ => None,
        };
        let map = match (dso, int.maps[i]) {
            (Some(dso), Some(range)) => {
                let next = prof.code_maps.len() as u32;
                let id = *map_ids.entry((dso.clone(), range)).or_insert_with(|| {
                    prof.code_maps.push(CodeMap {
                        dso,
                        start: range.0,
                        limit: range.1,
                        offset: range.2,
                    });
                    next
                });
                Some(id)
            }
            _ => None,
        };
        let lines = lines_of_loc[i];
        // The function the code belongs to is the last of its lines.
        let func = prof.lines[lines.1 as usize - 1].func;
        prof.locations.push(Location {
            func,
            address: int.abs[i],
            map,
            lines,
        });
    }
    prof.loc_stacks = std::mem::take(&mut int.stacks);
}

/// Names every location; returns each one's range of `prof.lines` (never empty: the last
/// entry is the function the code belongs to).
fn symbolize(
    int: &Interner,
    files: &Files,
    resolver: &mut dyn Resolver,
    prof: &mut Profile,
) -> Vec<(u32, u32)> {
    let n = int.locs.len();
    let mut names: Vec<Option<Resolved>> = vec![None; n];
    let mut kernel = Vec::new();
    let mut vdso = Vec::new();
    let mut by_file: BTreeMap<FileId, Vec<usize>> = BTreeMap::new();
    let mut by_pid: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, l) in int.locs.iter().enumerate() {
        match l {
            Loc::Kernel(_) => kernel.push(i),
            Loc::File(f, _) => by_file.entry(*f).or_default().push(i),
            Loc::Vdso(_) => vdso.push(i),
            Loc::Anon(pid, _) => by_pid.entry(*pid).or_default().push(i),
            Loc::Unknown | Loc::Truncated(..) | Loc::Pseudo(_) => {}
        }
    }
    fn fill(names: &mut [Option<Resolved>], idx: &[usize], got: Vec<Option<Resolved>>) {
        for (&i, name) in idx.iter().zip(got) {
            // A resolver answering with no frame found nothing.
            names[i] = name.filter(|r| !r.frames.is_empty());
        }
    }
    let addr_of = |i: usize| match int.locs[i] {
        Loc::Kernel(a) | Loc::Anon(_, a) => a,
        Loc::File(_, o) | Loc::Vdso(o) => o,
        Loc::Unknown | Loc::Truncated(..) | Loc::Pseudo(_) => 0,
    };
    let addrs: Vec<u64> = kernel.iter().map(|&i| addr_of(i)).collect();
    fill(&mut names, &kernel, resolver.kernel(&addrs));
    let addrs: Vec<u64> = vdso.iter().map(|&i| addr_of(i)).collect();
    fill(&mut names, &vdso, resolver.vdso(&addrs));
    for (f, idx) in &by_file {
        let offs: Vec<u64> = idx.iter().map(|&i| addr_of(i)).collect();
        fill(
            &mut names,
            idx,
            resolver.file(&files.list[*f as usize], &offs),
        );
    }
    for (pid, idx) in &by_pid {
        let a: Vec<u64> = idx.iter().map(|&i| addr_of(i)).collect();
        fill(&mut names, idx, resolver.perf_map(*pid, &a));
    }
    for (i, l) in int.locs.iter().enumerate() {
        match l {
            Loc::Truncated(t, f) => {
                names[i] = Some(Resolved::name(truncation_name(
                    *t,
                    f.map(|f| &files.list[f as usize]),
                )))
            }
            Loc::Pseudo(p) => {
                names[i] = Some(Resolved::name(
                    int.pseudo.get(*p as usize).cloned().unwrap_or_default(),
                ))
            }
            _ => {}
        }
    }
    let missing: Vec<usize> = (0..n).filter(|&i| names[i].is_none()).collect();
    if !missing.is_empty() {
        let a: Vec<u64> = missing.iter().map(|&i| int.abs[i]).collect();
        fill(&mut names, &missing, resolver.symfile(&a));
    }
    if !kernel.is_empty() {
        prof.dso_files.insert(
            "[kernel.kallsyms]".into(),
            DsoFile {
                path: "[kernel.kallsyms]".into(),
                build_id: prof.meta.kernel_build_id,
            },
        );
    }
    let mut func_ids: HashMap<Func, FuncId> = HashMap::default();
    let mut file_ids: HashMap<String, u32> = HashMap::default();
    let mut out = Vec::with_capacity(n);
    for (i, l) in int.locs.iter().enumerate() {
        let (dso, kernel) = match l {
            Loc::Kernel(_) => ("[kernel.kallsyms]".to_string(), true),
            Loc::File(f, _) => {
                let file = &files.list[*f as usize];
                let short = file.short_name().to_string();
                prof.dso_files
                    .entry(short.clone())
                    .or_insert_with(|| DsoFile {
                        path: file.path.clone(),
                        build_id: file.build_id,
                    });
                (short, false)
            }
            Loc::Vdso(_) => ("[vdso]".to_string(), false),
            Loc::Truncated(..) => (TRUNCATED_DSO.to_string(), false),
            Loc::Pseudo(_) => (OFF_CPU_DSO.to_string(), false),
            Loc::Anon(..) | Loc::Unknown => ("[unknown]".to_string(), false),
        };
        let (frames, resolved) = match names[i].take() {
            Some(r) => (r.frames, true),
            None => {
                let name = match l {
                    Loc::File(_, off) | Loc::Vdso(off) => format!("{dso}+{off:#x}"),
                    Loc::Kernel(a) => format!("[kernel.kallsyms]+{a:#x}"),
                    _ => "[unknown]".to_string(),
                };
                (
                    vec![ResolvedFrame {
                        name,
                        ..ResolvedFrame::default()
                    }],
                    false,
                )
            }
        };
        let first = prof.lines.len() as u32;
        let last = frames.len() - 1;
        for (k, fr) in frames.into_iter().enumerate() {
            let func = Func {
                name: fr.name,
                dso: dso.clone(),
                kernel,
                resolved,
                inlined: k < last,
                start_line: fr.start_line,
            };
            // One inlined function per name and place, whatever start line each answer gave:
            // it is missing where DWARF's chain of inlined calls could not be matched, and
            // must not split the function in two. (A function's own start line, from its
            // first instruction, is always there with debug info; it tells apart two static
            // functions of one name.)
            let start_line = func.start_line;
            let key = Func {
                start_line: if func.inlined { 0 } else { start_line },
                ..func.clone()
            };
            let next = prof.funcs.len() as FuncId;
            let id = *func_ids.entry(key).or_insert_with(|| {
                prof.funcs.push(func);
                next
            });
            if let Some(f) = prof.funcs.get_mut(id as usize) {
                if f.start_line == 0 {
                    f.start_line = start_line;
                }
            }
            let file = fr.file.map(|path| {
                let next = prof.source_files.len() as u32;
                *file_ids.entry(path.clone()).or_insert_with(|| {
                    prof.source_files.push(path);
                    next
                })
            });
            prof.lines.push(FrameLine {
                func: id,
                file,
                line: fr.line,
            });
        }
        out.push((first, prof.lines.len() as u32));
    }
    out
}
