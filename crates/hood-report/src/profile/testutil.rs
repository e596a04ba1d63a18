//! Hand-built profiles for the renderer tests.

use std::collections::HashMap;

use hood_model::profile::{
    Func, FuncId, Mode, Process, Profile, RecordMeta, RecordStats, Sample, StackId, Thread,
};

/// Builds a [`Profile`] sample by sample.
pub struct Builder {
    pub prof: Profile,
    stacks: HashMap<Vec<FuncId>, StackId>,
    funcs: HashMap<String, FuncId>,
    clock: u64,
}

pub const START: u64 = 1_000_000_000;

impl Builder {
    pub fn new() -> Self {
        let prof = Profile {
            meta: RecordMeta {
                mode: hood_model::profile::RecordMode::Command,
                command: vec!["./work".into(), "60".into()],
                event: "cpu-clock".into(),
                requested_event: "cpu-clock".into(),
                freq_hz: 1000,
                callchain: true,
                cpus: vec![0, 1],
                start_monotonic_ns: START,
                ..RecordMeta::default()
            },
            stacks: vec![Vec::new()],
            ..Profile::default()
        };
        Builder {
            prof,
            stacks: HashMap::from([(Vec::new(), 0)]),
            funcs: HashMap::new(),
            clock: START,
        }
    }

    /// A function by name (`dso` `[kernel.kallsyms]` marks kernel code); created once.
    pub fn func(&mut self, name: &str, dso: &str) -> FuncId {
        if let Some(&id) = self.funcs.get(name) {
            return id;
        }
        let id = self.prof.funcs.len() as FuncId;
        self.prof.funcs.push(Func {
            name: name.into(),
            dso: dso.into(),
            kernel: dso == "[kernel.kallsyms]",
            resolved: true,
            inlined: false,
            start_line: 0,
        });
        self.funcs.insert(name.into(), id);
        id
    }

    pub fn process(&mut self, pid: u32, comm: &str, threads: &[(u32, &str)]) {
        self.prof.processes.push(Process {
            pid,
            comm: comm.into(),
            threads: threads
                .iter()
                .map(|&(tid, c)| Thread {
                    tid,
                    comm: c.into(),
                })
                .collect(),
        });
        self.prof.processes.sort_by_key(|p| p.pid);
    }

    fn stack(&mut self, frames: &[FuncId]) -> StackId {
        if let Some(&id) = self.stacks.get(frames) {
            return id;
        }
        let id = self.prof.stacks.len() as StackId;
        self.prof.stacks.push(frames.to_vec());
        self.stacks.insert(frames.to_vec(), id);
        id
    }

    /// `n` samples of `pid`/`tid` with the stack `leaf_first`, 0.5 ms apart, alternating
    /// CPUs 0 and 1.
    pub fn samples(&mut self, pid: u32, tid: u32, mode: Mode, leaf_first: &[FuncId], n: u64) {
        let stack = self.stack(leaf_first);
        for _ in 0..n {
            self.clock += 500_000;
            let cpu = ((self.clock / 500_000) % 2) as u32;
            self.prof.samples.push(Sample {
                pid,
                tid,
                cpu,
                time: self.clock,
                period: 1_000_000,
                mode,
                stack,
                locs: 0,
            });
        }
    }

    /// One sample at an explicit time and CPU.
    pub fn sample_at(&mut self, cpu: u32, time: u64, leaf_first: &[FuncId]) {
        let stack = self.stack(leaf_first);
        self.prof.samples.push(Sample {
            pid: 1,
            tid: 1,
            cpu,
            time,
            period: 1,
            mode: Mode::User,
            stack,
            locs: 0,
        });
    }

    /// Finalize: stats with an end time and the given lost counts per CPU.
    pub fn finish(mut self, lost: &[(u32, u64)]) -> Profile {
        self.prof.samples.sort_by_key(|s| s.time);
        let mut stats = RecordStats {
            end_monotonic_ns: self.clock + 500_000,
            stop_reason: "command exited".into(),
            exit_status: Some(0),
            ..RecordStats::default()
        };
        for s in &self.prof.samples {
            stats.per_cpu.entry(s.cpu).or_default().samples += 1;
        }
        for &(cpu, n) in lost {
            stats.per_cpu.entry(cpu).or_default().lost += n;
        }
        self.prof.stats = Some(stats);
        self.prof
    }
}

/// The known-answer profile: 1000 samples.
///
/// | pid | process | stack (root first)              | mode   | samples |
/// |-----|---------|---------------------------------|--------|---------|
/// | 100 | work    | main;work_a                     | user   | 500     |
/// | 100 | work    | main;work_b                     | user   | 250     |
/// | 100 | work    | main;work_c                     | user   | 80      |
/// | 100 | work    | main;work_c;sys_read;read_zero  | kernel | 10      |
/// | 200 | helper  | main2;spin (thread 201 "spinner")| user  | 100     |
/// | 200 | helper  | tiny                            | user   | 5       |
/// | 0   | idle    | idle_fn                         | idle   | 55      |
pub fn known() -> Profile {
    let mut b = Builder::new();
    b.process(100, "work", &[(100, "work")]);
    b.process(200, "helper", &[(200, "helper"), (201, "spinner")]);
    let main = b.func("main", "work");
    let a = b.func("work_a", "work");
    let wb = b.func("work_b", "work");
    let c = b.func("work_c", "work");
    let sys_read = b.func("sys_read", "[kernel.kallsyms]");
    let read_zero = b.func("read_zero", "[kernel.kallsyms]");
    let main2 = b.func("main2", "helper");
    let spin = b.func("spin", "helper");
    let tiny = b.func("tiny", "helper");
    let idle = b.func("idle_fn", "[kernel.kallsyms]");
    b.samples(100, 100, Mode::User, &[a, main], 500);
    b.samples(100, 100, Mode::User, &[wb, main], 250);
    b.samples(100, 100, Mode::User, &[c, main], 80);
    b.samples(100, 100, Mode::Kernel, &[read_zero, sys_read, c, main], 10);
    b.samples(200, 201, Mode::User, &[spin, main2], 100);
    b.samples(200, 200, Mode::User, &[tiny], 5);
    b.samples(0, 0, Mode::Idle, &[idle], 55);
    b.finish(&[])
}
