//! Deferred off-CPU stacks: small BPF programs that let the kernel copy a thread's user stack
//! only for the waits a report shows.
//!
//! Without them, every `sched_switch` and `sched_waking` sample of an off-CPU session copies
//! the user stack (8 KiB by default), and in a context-switch storm those copies cost the
//! workload as much as perf's DWARF mode on the same tracepoints. With them, the switch and
//! wake-up samples carry the kernel stack only, and the user stack comes from a
//! `PERF_COUNT_SW_BPF_OUTPUT` sample (same layout, same ring) that a program emits only when
//! it is needed:
//!
//! - **A thread blocked in a system call** leaves it with the user registers and stack it had
//!   when it left the CPU: nothing in user space runs until the call returns. The program on
//!   `sched_switch` notes when the thread left (first wait of the call only); the program on
//!   `raw_syscalls:sys_exit` emits the copy when the call took at least the minimum since
//!   then, which is at least as long as any wait inside it. So no wait the report shows lacks
//!   its stack, and a storm of short waits copies nothing.
//! - **A thread still runnable** (preempted, or switched out at a return to user space or a
//!   yield) can go back to user space without a system call return: its copy is emitted at
//!   the switch, as before.
//! - **A waker** is copied when the wait it ends is already that long.
//!
//! The recorder's rewriter joins each copy to its switch or wake-up sample and unwinds it
//! there, so a recording looks the same either way. A wait that is not in a system call (a
//! page fault read from disk) has no return to copy at; its kernel stack says so, and it
//! joins the copy a major page fault event (`PERF_COUNT_SW_PAGE_FAULTS_MAJ`, every fault
//! sampled) takes when the fault completes; a wait in a minor fault gets none and is counted. Task sessions keep a filter of the traced processes and their
//! children (followed at fork), so no other process's stack is copied.
//!
//! Raw tracepoints are used, not the perf tracepoint events: a program attached to a perf
//! tracepoint event runs for every perf user of that tracepoint and overwrites the first
//! bytes of their records.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::bpf::{self, helper, map_type, reg::*, Asm, Insn, Map};
use crate::sys;

/// What an output sample's raw record (`u64 kind, u64 start`) is: the user stack of a thread
/// that blocked in a system call (`start`: when it first left the CPU in that call).
pub const DEFERRED_SYSCALL: u64 = 1;
/// The user stack of a thread preempted at this switch.
pub const DEFERRED_PREEMPT: u64 = 2;
/// The user stack of a waker whose wakee has waited at least the minimum (`start`: when the
/// wakee left the CPU).
pub const DEFERRED_WAKER: u64 = 3;

/// `TASK_DEAD` in a task's `__state`: the thread's last switch.
const TASK_DEAD: i32 = 0x80;

/// The loaded and attached programs of one session, and the per-CPU output events.
pub(crate) struct DeferredStacks {
    // Field order matters: the programs detach before their maps and outputs close.
    links: Vec<OwnedFd>,
    _progs: Vec<OwnedFd>,
    outputs: Vec<OwnedFd>,
    out_map: Map,
    _waits: Map,
    _filter: Option<Map>,
    ids: Vec<u64>,
}

impl std::fmt::Debug for DeferredStacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredStacks")
            .field("programs", &self.links.len())
            .field("outputs", &self.ids)
            .finish_non_exhaustive()
    }
}

/// Why deferred stacks are not in use (the session copies every stack instead).
#[derive(Debug)]
pub(crate) struct Refused {
    pub what: String,
    pub source: io::Error,
    pub log: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.source)?;
        if let Some(last) = self.log.lines().rev().find(|l| !l.trim().is_empty()) {
            write!(f, " (verifier: {last})")?;
        }
        Ok(())
    }
}

fn refused(what: impl Into<String>) -> impl FnOnce(io::Error) -> Refused {
    let what = what.into();
    move |source| Refused {
        what,
        source,
        log: String::new(),
    }
}

/// The maps the programs share.
struct Maps<'a> {
    waits: &'a Map,
    filter: Option<&'a Map>,
    out: &'a Map,
}

/// `if the current task is not traced goto out` (task sessions: the filter holds the traced
/// processes' ids and the task pointers of their children and threads).
fn filter_or_skip(a: &mut Asm, filter: Option<&Map>) {
    let Some(filter) = filter else {
        return;
    };
    a.call(helper::GET_CURRENT_PID_TGID)
        .rsh_imm(R0, 32)
        .store(FP, -8, R0)
        .load_map(R1, filter.fd())
        .mov(R2, FP)
        .add_imm(R2, -8)
        .call(helper::MAP_LOOKUP_ELEM)
        .jne_imm(R0, 0, "traced")
        .call(helper::GET_CURRENT_TASK)
        .store(FP, -8, R0)
        .load_map(R1, filter.fd())
        .mov(R2, FP)
        .add_imm(R2, -8)
        .call(helper::MAP_LOOKUP_ELEM)
        .jeq_imm(R0, 0, "out")
        .label("traced");
}

/// Emit an output sample `{kind, R7}` into the current CPU's ring. R6 holds the context.
fn emit(a: &mut Asm, out: &Map, kind: u64) {
    a.store_imm(FP, -32, kind as i32)
        .store(FP, -24, R7)
        .mov(R1, R6)
        .load_map(R2, out.fd())
        // BPF_F_CURRENT_CPU, zero-extended.
        .mov32_imm(R3, 0xffff_ffff)
        .mov(R4, FP)
        .add_imm(R4, -32)
        .mov_imm(R5, 16)
        .call(helper::PERF_EVENT_OUTPUT);
}

fn end(a: &mut Asm) {
    a.label("out").mov_imm(R0, 0).exit();
}

/// `sched_switch(preempt, prev, next, prev_state)`, in the task leaving the CPU.
fn on_switch(m: &Maps<'_>) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    filter_or_skip(&mut a, m.filter);
    // Still runnable: preempted in the kernel, or (prev_state 0) at a return to user space
    // or a yield; it may go back to user space without a system call return.
    a.load(R7, R6, 0)
        .jne_imm(R7, 0, "preempt")
        .load(R8, R6, 24)
        .jeq_imm(R8, 0, "preempt");
    // Its last switch: forget it.
    a.call(helper::GET_CURRENT_TASK)
        .store(FP, -8, R0)
        .mov(R1, R8)
        .and_imm(R1, TASK_DEAD)
        .jeq_imm(R1, 0, "blocked")
        .load_map(R1, m.waits.fd())
        .mov(R2, FP)
        .add_imm(R2, -8)
        .call(helper::MAP_DELETE_ELEM)
        .ja("out");
    // Blocked: note when, unless an earlier wait of the same system call already did.
    a.label("blocked")
        .call(helper::KTIME_GET_NS)
        .store(FP, -16, R0)
        .load_map(R1, m.waits.fd())
        .mov(R2, FP)
        .add_imm(R2, -8)
        .mov(R3, FP)
        .add_imm(R3, -16)
        .mov_imm(R4, bpf::NOEXIST)
        .call(helper::MAP_UPDATE_ELEM)
        .ja("out");
    a.label("preempt").call(helper::KTIME_GET_NS).mov(R7, R0);
    emit(&mut a, m.out, DEFERRED_PREEMPT);
    end(&mut a);
    a.finish()
}

/// `R7 = waits[key at FP-8]` (when its wait began), or `goto out` when it has none.
fn wait_start_or_skip(a: &mut Asm, waits: &Map) {
    a.load_map(R1, waits.fd())
        .mov(R2, FP)
        .add_imm(R2, -8)
        .call(helper::MAP_LOOKUP_ELEM)
        .jeq_imm(R0, 0, "out")
        .load(R7, R0, 0);
}

/// `goto out` unless at least `min_ns` passed since R7.
fn skip_if_shorter(a: &mut Asm, min_ns: u64) {
    a.call(helper::KTIME_GET_NS)
        .sub(R0, R7)
        .load_imm64(R1, min_ns)
        .jlt(R0, R1, "out");
}

/// `sys_exit(regs, ret)`, in the returning task.
fn on_sys_exit(m: &Maps<'_>, min_ns: u64) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1)
        .call(helper::GET_CURRENT_TASK)
        .store(FP, -8, R0);
    wait_start_or_skip(&mut a, m.waits);
    a.load_map(R1, m.waits.fd())
        .mov(R2, FP)
        .add_imm(R2, -8)
        .call(helper::MAP_DELETE_ELEM);
    skip_if_shorter(&mut a, min_ns);
    emit(&mut a, m.out, DEFERRED_SYSCALL);
    end(&mut a);
    a.finish()
}

/// `sched_waking(p)`, in the waker.
fn on_waking(m: &Maps<'_>, min_ns: u64) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    // A task session copies only its own wakers' stacks.
    filter_or_skip(&mut a, m.filter);
    a.load(R2, R6, 0).store(FP, -8, R2);
    wait_start_or_skip(&mut a, m.waits);
    skip_if_shorter(&mut a, min_ns);
    emit(&mut a, m.out, DEFERRED_WAKER);
    end(&mut a);
    a.finish()
}

/// `sched_process_fork(parent, child)`, in the parent: a traced task's child or thread is
/// traced too.
fn on_fork(filter: &Map) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    filter_or_skip(&mut a, Some(filter));
    a.load(R2, R6, 8)
        .store(FP, -8, R2)
        .store_imm(FP, -16, 1)
        .load_map(R1, filter.fd())
        .mov(R2, FP)
        .add_imm(R2, -8)
        .mov(R3, FP)
        .add_imm(R3, -16)
        .mov_imm(R4, 0)
        .call(helper::MAP_UPDATE_ELEM);
    end(&mut a);
    a.finish()
}

/// Threads on the machine now (`/proc/loadavg`'s "running/total"), to size the wait table.
fn threads_now() -> u32 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| {
            let f = s.split_whitespace().nth(3)?;
            f.split('/').nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Load and attach the programs. `min_ns`: the shortest wait whose stacks are copied;
/// `traced`: the processes of a task session (`None`: the whole system).
pub(crate) fn load(min_ns: u64, traced: Option<&[i32]>) -> Result<DeferredStacks, Refused> {
    // Every thread that may be blocked at once needs an entry; stale ones (a thread that
    // waited in a page fault and exited without another system call) age out of the LRU.
    let entries = (threads_now().saturating_mul(4)).clamp(1 << 14, 1 << 20);
    let waits = Map::create(map_type::LRU_HASH, 8, 8, entries, "hood_waits")
        .map_err(refused("the wait table (BPF LRU hash map)"))?;
    let filter = match traced {
        None => None,
        Some(pids) => {
            let f = Map::create(map_type::LRU_HASH, 8, 8, 1 << 16, "hood_traced")
                .map_err(refused("the traced-task filter (BPF LRU hash map)"))?;
            for &pid in pids {
                f.update(&(pid as u64).to_ne_bytes(), &1u64.to_ne_bytes())
                    .map_err(refused(format!("the traced-task filter (pid {pid})")))?;
            }
            Some(f)
        }
    };
    let max_cpu = crate::cpus::online_cpus()
        .map_err(|e| Refused {
            what: "the online CPUs".into(),
            source: io::Error::other(e.to_string()),
            log: String::new(),
        })?
        .into_iter()
        .max()
        .unwrap_or(0);
    let out = Map::create(map_type::PERF_EVENT_ARRAY, 4, 4, max_cpu + 1, "hood_stacks")
        .map_err(refused("the output array (BPF perf event array)"))?;
    let maps = Maps {
        waits: &waits,
        filter: filter.as_ref(),
        out: &out,
    };
    let mut programs = vec![
        ("sched_switch", on_switch(&maps)),
        ("sys_exit", on_sys_exit(&maps, min_ns)),
        ("sched_waking", on_waking(&maps, min_ns)),
    ];
    if let Some(f) = &filter {
        programs.push(("sched_process_fork", on_fork(f)));
    }
    let mut progs = Vec::new();
    let mut links = Vec::new();
    for (tp, insns) in programs {
        let name = format!("hood_{tp}");
        let prog = bpf::load_raw_tracepoint(&insns, &name).map_err(|e| Refused {
            what: format!("loading the program for raw tracepoint {tp}"),
            source: e.source,
            log: e.log,
        })?;
        let cname = std::ffi::CString::new(tp).expect("no NUL in a tracepoint name");
        let link = bpf::attach_raw_tracepoint(&cname, &prog)
            .map_err(refused(format!("attaching to raw tracepoint {tp}")))?;
        progs.push(prog);
        links.push(link);
    }
    Ok(DeferredStacks {
        links,
        _progs: progs,
        outputs: Vec::new(),
        out_map: out,
        _waits: waits,
        _filter: filter,
        ids: Vec::new(),
    })
}

/// The attribute of a CPU's output event, from the session's sampling attribute: the same
/// sample layout and clock, its user registers and stack copy, and the kernel call chain (a
/// waker's: the wake-up samples of a whole-system session carry none), one sample per
/// output.
pub(crate) fn output_attr(base: &perf_event_attr) -> perf_event_attr {
    let mut a = crate::offcpu::every_event(
        base,
        b::PERF_TYPE_SOFTWARE,
        u64::from(b::PERF_COUNT_SW_BPF_OUTPUT),
    );
    a.set_inherit(0);
    a.set_enable_on_exec(0);
    a.set_disabled(0);
    a
}

/// The attribute of the major page fault event of an off-CPU session with deferred stacks,
/// from the session's sampling attribute: every major fault a sample with the user registers
/// and stack copy, following the same tasks as the sampling event, no kernel call chain.
/// Its samples are deferred copies (never stored as samples): a wait in a fault joins the
/// copy taken when that fault completes, with the same user context.
pub(crate) fn major_fault_attr(base: &perf_event_attr) -> perf_event_attr {
    let mut a = crate::offcpu::every_event(
        base,
        b::PERF_TYPE_SOFTWARE,
        u64::from(b::PERF_COUNT_SW_PAGE_FAULTS_MAJ),
    );
    a.set_exclude_callchain_kernel(1);
    a
}

impl DeferredStacks {
    /// Ids of other events whose samples are deferred copies (major page faults).
    pub fn add_copy_ids(&mut self, ids: &[u64]) {
        self.ids.extend_from_slice(ids);
    }

    /// Add CPU `cpu`'s output event `fd` (already sending into that CPU's ring).
    pub fn add_output(&mut self, cpu: u32, fd: OwnedFd) -> io::Result<()> {
        let id = sys::ioc_id(&fd)?;
        self.out_map
            .update(&cpu.to_ne_bytes(), &(fd.as_raw_fd() as u32).to_ne_bytes())?;
        self.outputs.push(fd);
        self.ids.push(id);
        Ok(())
    }

    /// The ids of the output events (their samples carry them).
    pub fn output_ids(&self) -> &[u64] {
        &self.ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn privileged() -> bool {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if !root && std::env::var_os("HOOD_REQUIRE_PRIVILEGED").is_some() {
            panic!("HOOD_REQUIRE_PRIVILEGED is set but the tests do not run as root");
        }
        root
    }

    #[test]
    fn the_kernel_accepts_the_programs_for_both_kinds_of_session() {
        if !privileged() {
            eprintln!("skipped: loading BPF programs needs root");
            return;
        }
        for traced in [None, Some(&[std::process::id() as i32][..])] {
            let d = load(10_000, traced).unwrap_or_else(|e| panic!("{e}\n{}", e.log));
            assert_eq!(d.links.len(), 3 + usize::from(traced.is_some()));
        }
    }
}
