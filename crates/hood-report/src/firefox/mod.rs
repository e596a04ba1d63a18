//! Firefox Profiler output (`hood report --format firefox`): the processed profile format
//! built with fxprof-processed-profile, gzip-compressed JSON that profiler.firefox.com opens
//! ("Load a profile from file").
//!
//! One process track per process and one thread track per thread (task) that has samples;
//! frames are labels carrying the function name, in category `Kernel` (orange) for kernel
//! code and `User` (yellow) otherwise, so kernel frames stand out in the call tree and the
//! activity graph. Sample times are relative to the recording's start; a sample's CPU delta is
//! its period for time-based events. The profile is marked symbolicated (`meta.symbolicated`),
//! so the profiler does not look for symbols itself.

use std::collections::HashMap;
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CpuDelta, Frame, FrameFlags, FrameInfo, ProcessHandle,
    Profile as FxProfile, ReferenceTimestamp, SamplingInterval, StackHandle, ThreadHandle,
    Timestamp,
};
use hood_model::profile::aggregate::Filter;
use hood_model::profile::{Profile, StackId};

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
    stacks: HashMap<(ThreadHandle, StackId), Option<StackHandle>>,
    time_based: bool,
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

    fn stack(&mut self, thread: ThreadHandle, stack: StackId) -> Option<StackHandle> {
        if let Some(&h) = self.stacks.get(&(thread, stack)) {
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
        self.stacks.insert((thread, stack), h);
        h
    }
}

/// Build the Firefox Profiler profile for the samples of `prof` that pass `filter`.
pub fn build(prof: &Profile, filter: &Filter) -> FxProfile {
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
    };
    for s in filter.samples(prof) {
        let thread = b.thread(s.pid, s.tid, s.time);
        let stack = b.stack(thread, s.stack);
        let cpu = if b.time_based {
            CpuDelta::from_nanos(s.period)
        } else {
            CpuDelta::ZERO
        };
        let ts = b.ts(s.time);
        b.fx.add_sample(thread, ts, stack, cpu, 1);
    }
    b.fx
}

/// Write the gzip-compressed processed-format JSON of `prof` (the samples `opts.filter`
/// keeps).
pub fn render_firefox(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let fx = build(prof, &opts.filter);
    let mut gz = GzEncoder::new(out, Compression::default());
    serde_json::to_writer(&mut gz, &fx)?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests;
