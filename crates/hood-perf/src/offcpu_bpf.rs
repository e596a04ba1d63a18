//! Deferred off-CPU stacks: small BPF programs that let the kernel take a thread's stacks
//! only for the waits a report shows.
//!
//! Without them, every `sched_switch` and `sched_waking` sample of an off-CPU session walks
//! the kernel stack and copies the user stack (8 KiB by default), and in a context-switch
//! storm that costs the workload as much as perf's DWARF mode on the same tracepoints. With
//! them, the switch and wake-up samples carry no stack at all (as small as `perf sched
//! record`'s), and the stacks come from `PERF_COUNT_SW_BPF_OUTPUT` samples (same layout, same
//! ring) that programs emit only for the waits a report shows:
//!
//! - **The kernel stack of a wait** is taken when its thread is switched back in, and only
//!   when it was away at least the minimum: a BTF-typed program on `sched_switch` (`tp_btf`)
//!   asks the kernel for the incoming thread's stack (`bpf_get_task_stack`), which is still
//!   the one it had when it left (it has not run since). The record says whose stack it is
//!   (`task_struct.pid`, its offset read from the kernel's BTF) and when the wait began.
//! - **A blocked thread** keeps the user registers and stack it had when it left the CPU
//!   until it is back in user space: nothing in user space runs before that. The program on
//!   `sched_switch` marks the thread when it takes the kernel stack of a long wait; the
//!   program on `rseq:rseq_update` emits the copy of a marked thread and clears the mark.
//!   The kernel passes that tracepoint on the way back to user space of every thread with an
//!   rseq area (glibc 2.35 and later register one for each thread) that left the CPU, and
//!   only then, so a storm pays for one program run per switch and nothing per system call.
//!   A program on `raw_syscalls:sys_exit` did the same before; it sends every system call of
//!   the machine through the kernel's slow path (a count-only program there took a pinned
//!   storm from about 320,000 to 220,000 round trips a second). So no wait the report shows
//!   lacks its stack, and a storm of short waits copies nothing.
//! - **A thread with no rseq area** (Go's, a static binary's, glibc's rseq tunable off) gets
//!   no `rseq_update`: its copy is emitted at the switch it blocks at, whatever the wait
//!   turns out to be (what every switch costs without these programs).
//! - **A thread still runnable** (preempted, or switched out at a return to user space or a
//!   yield) can go back to user space without passing `rseq_update` for this switch (it may
//!   run user code first): its copy, with its kernel frames, is emitted at the switch.
//! - **A waker** is copied (kernel and user frames) when the wait it ends is already that
//!   long.
//! - **A rate bound** (`--off-cpu-rate`, as `-F` bounds CPU samples): one thread's stacks
//!   are taken at most once per gap. The wait table keeps when they last were; a long wait
//!   within the gap takes none (nor its waker, nor a preempted thread's copy), is counted
//!   per CPU, and the report charges it to the thread's previous stacks. Without it, a storm
//!   whose waits crowd just over the minimum pays for a stack at nearly every switch, which
//!   lengthens its waits further.
//!
//! The recorder's rewriter joins each copy to its switch or wake-up sample and unwinds it
//! there, so a recording looks the same either way. Task sessions keep a filter of the traced
//! processes and their children (followed at fork), so no other process's stack is taken.
//!
//! **Where the per-thread state lives.** The programs run at every switch, wake-up and return
//! to user space of the machine, so their own cost is what a context-switch storm pays even
//! when no stack is taken. The wait table (and a task session's filter of forked tasks) is
//! task-local storage (`BPF_MAP_TYPE_TASK_STORAGE`, kernel 5.11 and later): the value hangs
//! off the task, reached in a few pointer steps, and goes away with it. Its map needs BTF for
//! its key and value, which [`crate::btf::u64_struct`] writes by hand. Counted with the
//! kernel's `bpf_stats` in a pinned ping-pong storm on a busy machine, the programs took
//! 143–211, 101–146 and 70–101 ns per run (switch, wake-up, return) with LRU hashes keyed by
//! task pointer (0.6–0.9 µs of a 2.9 µs round trip), and 129–169, 96–110 and 55–79 with task
//! storage; a program that only returns, 36–39. The rest is dispatch, two clock reads and two
//! look-ups per switch. A kernel that refuses task storage gets the hashes (the recording
//! says why).
//!
//! Raw tracepoints are used, not the perf tracepoint events: a program attached to a perf
//! tracepoint event runs for every perf user of that tracepoint and overwrites the first
//! bytes of their records.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use perf_event_open_sys::bindings::{self as b, perf_event_attr};

use crate::bpf::{self, helper, map_type, reg::*, Asm, Insn, Map};
use crate::offcpu::{WakingLayout, WAKING_MAX};
use crate::sys;

/// What an output sample's raw record (`u64 kind, u64 start`) is: the user stack of a thread
/// on its way back to user space after it blocked (`start`: when it first left the CPU since
/// it was last in user space).
pub const DEFERRED_RETURN: u64 = 1;
/// The user stack of a thread taken at this switch: it stays runnable (preempted), or it
/// blocked and has no rseq area, so no `rseq_update` will take it on its way back.
pub const DEFERRED_AT_SWITCH: u64 = 2;
/// The user stack of a waker whose wakee has waited at least the minimum (`start`: when the
/// wakee left the CPU).
pub const DEFERRED_WAKER: u64 = 3;
/// The kernel stack of a thread switched back in after a wait at least the minimum long:
/// raw record `u64 kind, u64 start, u64 tid`, then the stack's addresses, innermost first.
pub const DEFERRED_KSTACK: u64 = 4;

/// Bytes before the addresses of a [`DEFERRED_KSTACK`] record.
const KSTACK_HEADER: i32 = 24;
/// Room for the addresses of a kernel stack (`kernel.perf_event_max_stack`'s default, 127).
const KSTACK_BYTES: i32 = 127 * 8;

/// `TASK_DEAD` in a task's `__state`: the thread's last switch.
const TASK_DEAD: i32 = 0x80;
/// `PF_KTHREAD` in a task's `flags`: a kernel thread, with no user stack.
const PF_KTHREAD: i32 = 0x0020_0000;

/// Offsets of the `task_struct` members the programs read, from the kernel's BTF.
struct TaskOffsets {
    pid: i16,
    flags: i16,
    /// `rseq`: the thread's registered rseq area (null when it has none).
    rseq: i16,
    /// `tgid`, `comm` and `prio`, and the CPU the task is on (`thread_info.cpu`, else
    /// `cpu`), for the wake-up records of a task session ([`WakeRecords`]).
    tgid: i16,
    comm: i16,
    prio: i16,
    cpu: Option<i16>,
}

/// The wake-up records a task session's program on `sched_waking` writes, in the
/// tracepoint's own layout, for every wake-up of a traced thread (whoever wakes it) and no
/// other: the whole-CPU `sched_waking` events they replace sampled every wake-up of the
/// machine with its kernel stack, most of a busy machine's recording work. The waker's
/// kernel stack is the output sample's call chain, and its `comm` follows the tracepoint's
/// fields (`WakingLayout::waker_comm_at`); `common_flags` is left 0 (a program
/// cannot read the interrupt context on kernels that do not list per-CPU variables in
/// kallsyms), and the recorder sets its interrupt bits from that stack.
struct WakeRecords<'a> {
    map: &'a Map,
    layout: WakingLayout,
}

/// The loaded and attached programs of one session, and the per-CPU output events.
pub(crate) struct DeferredStacks {
    // Field order matters: the programs detach before their maps and outputs close.
    links: Vec<OwnedFd>,
    _progs: Vec<OwnedFd>,
    outputs: Vec<OwnedFd>,
    out_map: Map,
    kstack_map: Map,
    /// A task session's wake-up outputs (per CPU), when its program writes wake-up records.
    wake_map: Option<Map>,
    wake_ids: Vec<u64>,
    _kstack_buf: Map,
    _waits: Map,
    _filter: Vec<Map>,
    /// Why the per-task values are in LRU hashes rather than task-local storage, if they are.
    pub fallback: Option<Fallback>,
    /// Per CPU: long waits whose stacks the rate bound left untaken, and preempted
    /// threads' copies it left untaken.
    skipped: [Map; 2],
    /// Slots in `skipped` (the highest online CPU number, plus one).
    cpu_slots: u32,
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

/// Why the programs keep their per-task values in LRU hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// The kernel refused task-local storage (what it refused, and its answer).
    Refused(String),
    /// The session asked for the hashes ([`crate::SamplingConfig::off_cpu_hash_tables`]).
    Asked,
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

/// Where the programs keep a value per task.
#[derive(Clone, Copy)]
enum Table<'a> {
    /// Task-local storage (`BPF_MAP_TYPE_TASK_STORAGE`): the value hangs off the task itself,
    /// found in a few pointer steps and freed with the task.
    Task(&'a Map),
    /// An LRU hash keyed by the task pointer (kernels that refuse task storage): a hash and
    /// a bucket walk per look-up; stale entries age out.
    Hash(&'a Map),
}

/// A task whose table entry a program looks up.
#[derive(Clone, Copy)]
enum Whose {
    /// The task a register points at (a BTF-typed tracepoint argument).
    Reg(u8),
    /// The task running the program.
    Current,
}

/// `R0 = &table[whose]` (or 0 if it has none; with `create`, a zeroed entry is made if
/// possible). R1–R5 are clobbered; FP-8 is used as the hash key.
fn lookup(a: &mut Asm, table: Table<'_>, whose: Whose, create: bool) {
    match table {
        Table::Task(map) => {
            match whose {
                Whose::Reg(r) => a.mov(R2, r),
                Whose::Current => a.call(helper::GET_CURRENT_TASK_BTF).mov(R2, R0),
            };
            a.load_map(R1, map.fd())
                .mov_imm(R3, 0)
                .mov_imm(R4, if create { bpf::STORAGE_CREATE } else { 0 })
                .call(helper::TASK_STORAGE_GET);
        }
        Table::Hash(map) => {
            match whose {
                Whose::Reg(r) => a.store(FP, -8, r),
                Whose::Current => a.call(helper::GET_CURRENT_TASK).store(FP, -8, R0),
            };
            a.map_lookup(map.fd(), -8);
            if create {
                // A zeroed entry (FP-32..FP-8), then the look-up again.
                a.jne_imm(R0, 0, "created")
                    .store_imm(FP, -32, 0)
                    .store_imm(FP, -24, 0)
                    .store_imm(FP, -16, 0)
                    .map_update(map.fd(), -8, -32)
                    .map_lookup(map.fd(), -8)
                    .label("created");
            }
        }
    }
}

/// The traced tasks of a task session: the processes named at the start (by process id),
/// and every task forked by a traced one (by task).
#[derive(Clone, Copy)]
struct Filter<'a> {
    pids: &'a Map,
    tasks: Table<'a>,
}

/// The maps the programs share.
struct Maps<'a> {
    /// Per blocked thread: when it first left the CPU in its current system call, when it
    /// left for its current wait (0 once its kernel stack is taken), and when its stacks
    /// were last taken.
    waits: Table<'a>,
    filter: Option<Filter<'a>>,
    /// Per-CPU outputs of user stack copies.
    out: &'a Map,
    /// Per-CPU outputs of kernel stacks.
    kstacks: &'a Map,
    /// One per-CPU buffer a kernel stack record is built in.
    kstack_buf: &'a Map,
    /// Per CPU (indexed by CPU number): long waits left without stacks by the rate bound.
    skipped_waits: &'a Map,
    /// Per CPU: preempted threads' copies left untaken by the rate bound.
    skipped_copies: &'a Map,
    /// A task session's wake-up records, when the session writes them.
    wakes: Option<WakeRecords<'a>>,
}

/// Offsets into a wait table value: when the long wait whose user stack is still to be copied
/// began (0: none), when the current wait began (0: the thread is on a CPU), and when the
/// thread's stacks were last taken (the rate bound's clock).
const LONG_START: i16 = 0;
const THIS_START: i16 = 8;
const LAST_TAKEN: i16 = 16;
/// Bytes of a wait table value.
const WAIT_VALUE: u32 = 24;

/// `if the current task is not traced goto out` (task sessions: the filter holds the traced
/// processes' ids and the children and threads they forked since).
fn filter_or_skip(a: &mut Asm, filter: Option<Filter<'_>>) {
    if let Some(filter) = filter {
        traced_or_skip(a, filter, Tgid::Current, "traced");
    }
}

/// Where a task's process id comes from, for [`traced_or_skip`].
#[derive(Clone, Copy)]
enum Tgid {
    /// The running task's (`bpf_get_current_pid_tgid`).
    Current,
    /// Task R9's `tgid` member, at this offset (a BTF-typed tracepoint argument).
    OfR9(i16),
}

/// `if the task is not traced goto out`: the current one, or task R9 (its filter entry, else
/// its process among those traced from the start); `traced`: the label placed after, unique
/// in the program.
fn traced_or_skip(a: &mut Asm, filter: Filter<'_>, tgid: Tgid, traced: &'static str) {
    let whose = match tgid {
        Tgid::Current => Whose::Current,
        Tgid::OfR9(_) => Whose::Reg(R9),
    };
    lookup(a, filter.tasks, whose, false);
    a.jne_imm(R0, 0, traced);
    match tgid {
        Tgid::Current => a.call(helper::GET_CURRENT_PID_TGID).rsh_imm(R0, 32),
        Tgid::OfR9(off) => a.load32(R0, R9, off),
    };
    a.store(FP, -8, R0)
        .map_lookup(filter.pids.fd(), -8)
        .jeq_imm(R0, 0, "out")
        .label(traced);
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

/// `sched_switch(preempt, prev, next, prev_state)` (BTF-typed), in the task leaving the CPU:
/// the incoming task's kernel stack when its wait was long, then the outgoing task's wait.
fn on_switch(m: &Maps<'_>, min_ns: u64, gap_ns: u64, off: &TaskOffsets) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    // A whole-system session needs the clock at nearly every switch (the outgoing thread's
    // wait begins, the incoming one's ends): read it once. A task session reads it only for
    // its own threads.
    let now = match m.filter {
        None => {
            a.call(helper::KTIME_GET_NS).store(FP, NOW, R0);
            Now::Saved
        }
        Some(_) => Now::Read,
    };
    // Switch-in: only threads the table holds (traced ones) are looked up.
    a.load(R9, R6, 16);
    lookup(&mut a, m.waits, Whose::Reg(R9), false);
    a.jeq_imm(R0, 0, "switch_out")
        .mov(R8, R0)
        .load(R7, R8, THIS_START)
        .jeq_imm(R7, 0, "switch_out")
        .store_imm(R8, THIS_START, 0);
    skip_if_shorter(&mut a, now, min_ns, "switch_out");
    // A long wait, unless the thread's stacks were taken less than `gap_ns` ago (the
    // report charges it to the thread's previous stacks): its stacks are taken now.
    take_or_count(&mut a, now, m.skipped_waits, gap_ns, "switch_out");
    // Its user stack is copied on the way back to user space.
    a.store(R8, LONG_START, R7)
        .store_imm(FP, -16, 0)
        .map_lookup(m.kstack_buf.fd(), -16)
        .jeq_imm(R0, 0, "switch_out")
        .mov(R8, R0)
        .store_imm(R8, 0, DEFERRED_KSTACK as i32)
        .store(R8, 8, R7)
        .load32(R1, R9, off.pid)
        .store(R8, 16, R1)
        .mov(R1, R9)
        .mov(R2, R8)
        .add_imm(R2, KSTACK_HEADER)
        .mov_imm(R3, KSTACK_BYTES)
        .mov_imm(R4, 0)
        .call(helper::GET_TASK_STACK)
        .jsle_imm(R0, 0, "switch_out")
        .jgt_imm(R0, KSTACK_BYTES, "switch_out")
        .mov(R5, R0)
        .add_imm(R5, KSTACK_HEADER)
        .mov(R1, R6)
        .load_map(R2, m.kstacks.fd())
        // BPF_F_CURRENT_CPU, zero-extended.
        .mov32_imm(R3, 0xffff_ffff)
        .mov(R4, R8)
        .call(helper::PERF_EVENT_OUTPUT);
    a.label("switch_out");
    filter_or_skip(&mut a, m.filter);
    // Still runnable: preempted in the kernel, or (prev_state 0) at a return to user space
    // or a yield; it may go back to user space without a system call return.
    a.load(R7, R6, 0)
        .jne_imm(R7, 0, "preempt")
        .load(R8, R6, 24)
        .jeq_imm(R8, 0, "preempt");
    // Its last switch: forget it (task storage goes with the task).
    a.load(R9, R6, 8).mov(R1, R8).and_imm(R1, TASK_DEAD);
    match m.waits {
        Table::Task(_) => {
            a.jne_imm(R1, 0, "out");
        }
        Table::Hash(map) => {
            a.jeq_imm(R1, 0, "blocked")
                .store(FP, -8, R9)
                .map_delete(map.fd(), -8)
                .ja("out");
        }
    }
    // Blocked: note when (a long wait earlier in the same system call keeps its mark; a
    // first wait makes the entry).
    a.label("blocked");
    lookup(&mut a, m.waits, Whose::Reg(R9), true);
    a.jeq_imm(R0, 0, "noted").mov(R7, R0);
    now.get(&mut a);
    a.store(R7, THIS_START, R0);
    // A user thread without an rseq area (Go's, a static binary's, glibc's rseq tunable
    // off) passes no `rseq_update` on its way back to user space: its copy is taken now.
    a.label("noted")
        .load(R1, R6, 8)
        .load(R2, R1, off.rseq)
        .jne_imm(R2, 0, "out")
        .load32(R2, R1, off.flags)
        .and_imm(R2, PF_KTHREAD)
        .jne_imm(R2, 0, "out")
        .ja("copy");
    a.label("preempt");
    now.get(&mut a);
    a.mov(R7, R0);
    if gap_ns > 0 {
        // A preempted thread that has blocked before has an entry: its copies count
        // against the same bound (its copy at this switch is taken now or never).
        a.load(R9, R6, 8);
        lookup(&mut a, m.waits, Whose::Reg(R9), false);
        a.jeq_imm(R0, 0, "copy").mov(R8, R0);
        taken_since(&mut a, R7, gap_ns, "copy", "copy_bounded");
        count(&mut a, m.skipped_copies, "out");
    }
    a.label("copy");
    emit(&mut a, m.out, DEFERRED_AT_SWITCH);
    end(&mut a);
    a.finish()
}

/// With `gap_ns` above 0: `goto skip` (counting the wait in this CPU's slot of `skipped`)
/// unless the thread whose wait table entry R8 points at had its stacks taken at least
/// `gap_ns` ago; otherwise note that they are taken now. R7 (the wait's start) is kept.
fn take_or_count(a: &mut Asm, now: Now, skipped: &Map, gap_ns: u64, skip: &'static str) {
    if gap_ns == 0 {
        return;
    }
    now.get(a);
    taken_since(a, R0, gap_ns, "taken", "bounded");
    count(a, skipped, skip);
    a.label("taken");
}

/// If the thread whose wait table entry R8 points at had its stacks taken at least `gap_ns`
/// before the time in `now`, note that they are taken at `now` and `goto taken`; otherwise
/// fall through at the label `bounded`.
fn taken_since(a: &mut Asm, now: u8, gap_ns: u64, taken: &'static str, bounded: &'static str) {
    a.load(R1, R8, LAST_TAKEN)
        .mov(R2, now)
        .sub(R2, R1)
        .load_imm64(R1, gap_ns)
        .jlt(R2, R1, bounded)
        .store(R8, LAST_TAKEN, now)
        .ja(taken)
        .label(bounded);
}

/// Add one to this CPU's slot of the counter array `counter`, then `goto to`.
fn count(a: &mut Asm, counter: &Map, to: &'static str) {
    a.call(helper::GET_SMP_PROCESSOR_ID)
        // A u32 key: the low half of this little-endian word.
        .store(FP, -16, R0)
        .map_lookup(counter.fd(), -16)
        .jeq_imm(R0, 0, to)
        .load(R1, R0, 0)
        .add_imm(R1, 1)
        .store(R0, 0, R1)
        .ja(to);
}

/// `R7 = waits[whose]` at `field` (a wait's start), or `goto out` when it has none; R0 still
/// points at the entry.
fn wait_start_or_skip(a: &mut Asm, waits: Table<'_>, whose: Whose, field: i16) {
    lookup(a, waits, whose, false);
    a.jeq_imm(R0, 0, "out")
        .load(R7, R0, field)
        .jeq_imm(R7, 0, "out");
}

/// Where the stack keeps the clock a program read once ([`Now::Saved`]).
const NOW: i16 = -40;

/// How a program gets the time (`bpf_ktime_get_ns`).
#[derive(Clone, Copy)]
enum Now {
    /// Read at the program's start into the stack at [`NOW`].
    Saved,
    /// Read the clock where it is needed.
    Read,
}

impl Now {
    /// `R0 = now` (R1–R5 clobbered when the clock is read).
    fn get(self, a: &mut Asm) {
        match self {
            Now::Saved => a.load(R0, FP, NOW),
            Now::Read => a.call(helper::KTIME_GET_NS),
        };
    }
}

/// `goto to` unless at least `min_ns` passed since R7.
fn skip_if_shorter(a: &mut Asm, now: Now, min_ns: u64, to: &'static str) {
    now.get(a);
    a.sub(R0, R7).load_imm64(R1, min_ns).jlt(R0, R1, to);
}

/// `rseq_update(t)`, in a thread with an rseq area on its way back to user space after it
/// left the CPU (also after a signal or a migration): its user registers and stack are still
/// the ones it blocked with. The copy is taken when a wait since it was last in user space was
/// found long at its switch-in (whose kernel stack was taken then).
fn on_return(m: &Maps<'_>) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    wait_start_or_skip(&mut a, m.waits, Whose::Current, LONG_START);
    a.store_imm(R0, LONG_START, 0);
    emit(&mut a, m.out, DEFERRED_RETURN);
    end(&mut a);
    a.finish()
}

/// `sched_waking(p)` (BTF-typed), in the waker.
fn on_waking(m: &Maps<'_>, min_ns: u64, gap_ns: u64, off: &TaskOffsets) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    a.load(R9, R6, 0);
    if let (Some(w), Some(filter)) = (&m.wakes, m.filter) {
        // A task session: only its own threads' wake-ups, by whoever wakes them.
        traced_or_skip(&mut a, filter, Tgid::OfR9(off.tgid), "wakee_traced");
        wake_record(&mut a, w, off);
    }
    // A task session copies only its own wakers' stacks.
    filter_or_skip(&mut a, m.filter);
    wait_start_or_skip(&mut a, m.waits, Whose::Reg(R9), THIS_START);
    a.mov(R8, R0);
    skip_if_shorter(&mut a, Now::Read, min_ns, "out");
    if gap_ns > 0 {
        // The wakee's stacks will be left untaken at its switch-in by the same test (its
        // clock only moves on): so is its waker's.
        a.call(helper::KTIME_GET_NS)
            .load(R1, R8, LAST_TAKEN)
            .sub(R0, R1)
            .load_imm64(R1, gap_ns)
            .jlt(R0, R1, "out");
    }
    emit(&mut a, m.out, DEFERRED_WAKER);
    end(&mut a);
    a.finish()
}

/// Where the stack holds a wake-up record being built ([`WAKING_MAX`] bytes).
const WAKE_BUF: i16 = -48 - WAKING_MAX as i16;

/// Write the wake-up record of task R9 (the wakee) woken by the current task, in the
/// tracepoint's layout, to the current CPU's wake-up output. R6 holds the context; R1–R5
/// and R0 are clobbered.
fn wake_record(a: &mut Asm, w: &WakeRecords<'_>, off: &TaskOffsets) {
    let l = &w.layout;
    let at = |f: (u16, u16)| WAKE_BUF + f.0 as i16;
    for i in 0..(WAKING_MAX as i16 / 8) {
        a.store_imm(FP, WAKE_BUF + 8 * i, 0);
    }
    a.mov_imm(R1, i32::from(l.id))
        .store_sized(2, FP, at(l.common_type), R1)
        .call(helper::GET_CURRENT_PID_TGID)
        .store_sized(4, FP, at(l.common_pid), R0)
        .mov(R1, FP)
        .add_imm(R1, i32::from(at(l.comm)))
        .mov_imm(R2, 16)
        .mov(R3, R9)
        .add_imm(R3, i32::from(off.comm))
        .call(helper::PROBE_READ_KERNEL)
        .load32(R1, R9, off.pid)
        .store_sized(4, FP, at(l.pid), R1);
    if let Some(prio) = l.prio {
        a.load32(R1, R9, off.prio).store_sized(4, FP, at(prio), R1);
    }
    if let Some(cpu) = l.target_cpu {
        match off.cpu {
            Some(o) => a.load32(R1, R9, o),
            None => a.mov_imm(R1, -1),
        };
        a.store_sized(4, FP, at(cpu), R1);
    }
    // The waker's name, after the fields.
    a.mov(R1, FP)
        .add_imm(R1, i32::from(WAKE_BUF) + i32::from(l.waker_comm_at))
        .mov_imm(R2, 16)
        .call(helper::GET_CURRENT_COMM);
    a.mov(R1, R6)
        .load_map(R2, w.map.fd())
        // BPF_F_CURRENT_CPU, zero-extended.
        .mov32_imm(R3, 0xffff_ffff)
        .mov(R4, FP)
        .add_imm(R4, i32::from(WAKE_BUF))
        .mov_imm(R5, i32::from(l.record_size()))
        .call(helper::PERF_EVENT_OUTPUT);
}

/// `sched_process_fork(parent, child)` (BTF-typed), in the parent: a traced task's child or
/// thread is traced too.
fn on_fork(filter: Filter<'_>) -> Vec<Insn> {
    let mut a = Asm::default();
    a.mov(R6, R1);
    filter_or_skip(&mut a, Some(filter));
    a.load(R9, R6, 8);
    match filter.tasks {
        Table::Task(_) => {
            lookup(&mut a, filter.tasks, Whose::Reg(R9), true);
            a.jeq_imm(R0, 0, "out").store_imm(R0, 0, 1);
        }
        Table::Hash(map) => {
            a.store(FP, -8, R9)
                .store_imm(FP, -16, 1)
                .map_update(map.fd(), -8, -16);
        }
    }
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

/// How the programs keep their per-task values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tables {
    /// Task-local storage (kernel 5.11 and later).
    TaskStorage,
    /// LRU hashes keyed by task pointer (the fallback).
    Hash,
}

/// A task-local storage map whose value is `struct name` of the u64 `members` (the kernel
/// wants the key's and value's types).
fn task_storage(name: &str, members: &[&str]) -> io::Result<Map> {
    let (blob, key, value) = crate::btf::u64_struct(name, members);
    let btf = bpf::load_btf(&blob)?;
    Map::create_typed(
        map_type::TASK_STORAGE,
        4,
        8 * members.len() as u32,
        0,
        bpf::NO_PREALLOC,
        name,
        Some((&btf, key, value)),
    )
}

/// Load and attach the programs. `min_ns`: the shortest wait whose stacks are copied;
/// `gap_ns`: the least time between two takings of one thread's stacks (0: no bound);
/// `traced`: the processes of a task session (`None`: the whole system); `wakes`: with
/// `traced`, write a wake-up record of that layout for each wake-up of a traced thread
/// ([`DeferredStacks::writes_wakeups`]).
///
/// The programs keep their per-task values in task-local storage; a kernel that refuses it
/// gets LRU hashes instead, and [`DeferredStacks::fallback`] says why. `hashes`: use the
/// hashes from the start.
pub(crate) fn load(
    min_ns: u64,
    gap_ns: u64,
    traced: Option<&[i32]>,
    hashes: bool,
    wakes: Option<WakingLayout>,
) -> Result<DeferredStacks, Refused> {
    let first = match hashes {
        true => Err(Fallback::Asked),
        false => load_with(Tables::TaskStorage, min_ns, gap_ns, traced, wakes)
            .map_err(|why| Fallback::Refused(why.to_string())),
    };
    match first {
        Ok(d) => Ok(d),
        Err(why) => {
            let mut d = load_with(Tables::Hash, min_ns, gap_ns, traced, wakes)?;
            d.fallback = Some(why);
            Ok(d)
        }
    }
}

fn load_with(
    tables: Tables,
    min_ns: u64,
    gap_ns: u64,
    traced: Option<&[i32]>,
    wakes: Option<WakingLayout>,
) -> Result<DeferredStacks, Refused> {
    // Every thread that may be blocked at once needs an entry; stale ones (a thread without
    // an rseq area keeps its entry after its wait) age out of the LRU.
    let entries = (threads_now().saturating_mul(4)).clamp(1 << 14, 1 << 20);
    let btf = crate::btf::Btf::vmlinux().map_err(refused(format!(
        "the kernel's type information ({})",
        crate::btf::VMLINUX_BTF
    )))?;
    let missing = |what: &str| Refused {
        what: format!("{what} in the kernel's type information"),
        source: io::Error::from(io::ErrorKind::NotFound),
        log: String::new(),
    };
    let tracepoint_type = |tp: &str| {
        btf.find(crate::btf::kind::TYPEDEF, &format!("btf_trace_{tp}"))
            .ok_or_else(|| missing(&format!("the type of tracepoint {tp}")))
    };
    let switch_type = tracepoint_type("sched_switch")?;
    let waking_type = tracepoint_type("sched_waking")?;
    let fork_type = tracepoint_type("sched_process_fork")?;
    let member = |name: &str| {
        btf.member_offset("task_struct", name)
            .and_then(|o| i16::try_from(o).ok())
            .ok_or_else(|| missing(&format!("task_struct.{name}")))
    };
    let cpu = btf
        .member_offset("task_struct", "thread_info")
        .zip(btf.member_offset("thread_info", "cpu"))
        .map(|(t, c)| t + c)
        .or_else(|| btf.member_offset("task_struct", "cpu"))
        .and_then(|o| i16::try_from(o).ok());
    let off = TaskOffsets {
        pid: member("pid")?,
        flags: member("flags")?,
        rseq: member("rseq")?,
        tgid: member("tgid")?,
        comm: member("comm")?,
        prio: member("prio")?,
        cpu,
    };
    drop(btf);
    let waits = match tables {
        Tables::TaskStorage => {
            task_storage("hood_waits", &["long_start", "this_start", "last_taken"])
                .map_err(refused("the wait table (BPF task-local storage)"))?
        }
        Tables::Hash => Map::create(map_type::LRU_HASH, 8, WAIT_VALUE, entries, "hood_waits")
            .map_err(refused("the wait table (BPF LRU hash map)"))?,
    };
    // The traced processes by id, and (task storage) the tasks they fork; with hashes both
    // go in one LRU hash (an id and a task pointer never collide).
    let filter = match traced {
        None => Vec::new(),
        Some(pids) => {
            let f = match tables {
                Tables::TaskStorage => vec![
                    Map::create(
                        map_type::HASH,
                        8,
                        8,
                        pids.len().max(1) as u32,
                        "hood_traced",
                    )
                    .map_err(refused("the traced processes (BPF hash map)"))?,
                    task_storage("hood_traced_t", &["traced"])
                        .map_err(refused("the traced tasks (BPF task-local storage)"))?,
                ],
                Tables::Hash => vec![
                    Map::create(map_type::LRU_HASH, 8, 8, 1 << 16, "hood_traced")
                        .map_err(refused("the traced-task filter (BPF LRU hash map)"))?,
                ],
            };
            for &pid in pids {
                f[0].update(&(pid as u64).to_ne_bytes(), &1u64.to_ne_bytes())
                    .map_err(refused(format!("the traced-task filter (pid {pid})")))?;
            }
            f
        }
    };
    let table = |m| match tables {
        Tables::TaskStorage => Table::Task(m),
        Tables::Hash => Table::Hash(m),
    };
    let filter_tables = filter.first().map(|pids| Filter {
        pids,
        tasks: table(filter.last().unwrap_or(pids)),
    });
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
    let kstacks = Map::create(
        map_type::PERF_EVENT_ARRAY,
        4,
        4,
        max_cpu + 1,
        "hood_kstacks",
    )
    .map_err(refused(
        "the kernel stack output array (BPF perf event array)",
    ))?;
    let kstack_buf = Map::create(
        map_type::PERCPU_ARRAY,
        4,
        (KSTACK_HEADER + KSTACK_BYTES) as u32,
        1,
        "hood_kstack_buf",
    )
    .map_err(refused("the kernel stack buffer (BPF per-CPU array)"))?;
    let counter = |name| {
        Map::create(map_type::ARRAY, 4, 8, max_cpu + 1, name)
            .map_err(refused("the rate bound's counters (BPF array)"))
    };
    let skipped = [counter("hood_skip_waits")?, counter("hood_skip_copies")?];
    let wake_map = match (wakes, traced) {
        (Some(_), Some(_)) => Some(
            Map::create(map_type::PERF_EVENT_ARRAY, 4, 4, max_cpu + 1, "hood_wakes")
                .map_err(refused("the wake-up output array (BPF perf event array)"))?,
        ),
        _ => None,
    };
    let maps = Maps {
        waits: table(&waits),
        filter: filter_tables,
        out: &out,
        kstacks: &kstacks,
        kstack_buf: &kstack_buf,
        skipped_waits: &skipped[0],
        skipped_copies: &skipped[1],
        wakes: wake_map
            .as_ref()
            .zip(wakes)
            .map(|(map, layout)| WakeRecords { map, layout }),
    };
    // A wait the recorder finds just long enough must not lack its stacks, and the programs
    // read the clock a little apart from the samples the recorder measures with, so they take
    // stacks from a little below the minimum (a stack for a wait found short is dropped
    // unused; the user copy follows the kernel stack's verdict):
    // - whole-system sessions: both ends of a wait are `sched_switch` samples of the same
    //   tracepoint hits the programs run in, less than a microsecond apart, so 2 µs below
    //   (at most half the minimum). In a context-switch storm the waits crowd just over
    //   whatever the recorder costs the workload: every stack taken below the minimum slows
    //   it further, and more waits cross it (a storm pinned to one CPU fell from 112,000 round
    //   trips a second with no stacks taken to 33,000–43,000 with stacks from half of it);
    // - task sessions: the recorder sees a thread come back at the switch-in record the kernel
    //   writes after the switch, 1–5 µs later on a busy virtual machine: a kernel stack from
    //   half the minimum, a waker's from three quarters (its sample is in the same hit).
    let system = traced.is_none();
    let kstack_min = match system {
        true => min_ns.saturating_sub(2_000).max(min_ns / 2),
        false => min_ns / 2,
    };
    let waker_min = match system {
        true => kstack_min,
        false => min_ns - min_ns / 4,
    };
    let mut programs = vec![
        (
            "sched_switch",
            on_switch(&maps, kstack_min, gap_ns, &off),
            Some(switch_type),
        ),
        ("rseq_update", on_return(&maps), None),
        (
            "sched_waking",
            on_waking(&maps, waker_min, gap_ns, &off),
            Some(waking_type),
        ),
    ];
    if let Some(f) = filter_tables {
        programs.push(("sched_process_fork", on_fork(f), Some(fork_type)));
    }
    let mut progs = Vec::new();
    let mut links = Vec::new();
    for (tp, insns, btf_id) in programs {
        let name = format!("hood_{tp}");
        let loaded = match btf_id {
            Some(id) => bpf::load_btf_tracepoint(&insns, &name, id),
            None => bpf::load_raw_tracepoint(&insns, &name),
        };
        let prog = loaded.map_err(|e| Refused {
            what: format!("loading the program for raw tracepoint {tp}"),
            source: e.source,
            log: e.log,
        })?;
        let cname = std::ffi::CString::new(tp).expect("no NUL in a tracepoint name");
        let link = bpf::attach_raw_tracepoint(btf_id.is_none().then_some(&*cname), &prog)
            .map_err(refused(format!("attaching to raw tracepoint {tp}")))?;
        progs.push(prog);
        links.push(link);
    }
    Ok(DeferredStacks {
        links,
        _progs: progs,
        outputs: Vec::new(),
        out_map: out,
        kstack_map: kstacks,
        wake_map,
        wake_ids: Vec::new(),
        _kstack_buf: kstack_buf,
        _waits: waits,
        _filter: filter,
        fallback: None,
        skipped,
        cpu_slots: max_cpu + 1,
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

/// The attribute of a CPU's kernel stack output event: the same sample layout and clock,
/// with no call chain and no stack copy of its own (the record carries the stack).
pub(crate) fn kstack_output_attr(base: &perf_event_attr) -> perf_event_attr {
    let mut a = output_attr(base);
    a.set_exclude_callchain_kernel(1);
    a.set_exclude_callchain_user(1);
    a.sample_stack_user = 0;
    a
}

impl DeferredStacks {
    /// Add CPU `cpu`'s output events (already sending into that CPU's ring): `copies` for
    /// user stack copies, `kstacks` for kernel stacks.
    pub fn add_outputs(&mut self, cpu: u32, copies: OwnedFd, kstacks: OwnedFd) -> io::Result<()> {
        for (map, fd) in [(&self.out_map, copies), (&self.kstack_map, kstacks)] {
            let id = sys::ioc_id(&fd)?;
            map.update(&cpu.to_ne_bytes(), &(fd.as_raw_fd() as u32).to_ne_bytes())?;
            self.outputs.push(fd);
            self.ids.push(id);
        }
        Ok(())
    }

    /// The ids of the output events (their samples carry them).
    pub fn output_ids(&self) -> &[u64] {
        &self.ids
    }

    /// Whether the program on `sched_waking` writes a task session's wake-up records, to
    /// outputs added with [`DeferredStacks::add_wake_output`] (instead of whole-CPU
    /// `sched_waking` events).
    pub fn writes_wakeups(&self) -> bool {
        self.wake_map.is_some()
    }

    /// Add CPU `cpu`'s wake-up output event (already sending into that CPU's ring).
    pub fn add_wake_output(&mut self, cpu: u32, fd: &OwnedFd) -> io::Result<()> {
        let Some(map) = &self.wake_map else {
            return Err(io::Error::from(io::ErrorKind::Unsupported));
        };
        let id = sys::ioc_id(fd)?;
        map.update(&cpu.to_ne_bytes(), &(fd.as_raw_fd() as u32).to_ne_bytes())?;
        self.wake_ids.push(id);
        Ok(())
    }

    /// The ids of the wake-up output events.
    pub fn wake_ids(&self) -> &[u64] {
        &self.wake_ids
    }

    /// What the rate bound left untaken so far, over all CPUs: the stacks of long waits
    /// (at their switch-in), and the copies of preempted threads (at their switch-out).
    /// `None` if the counters could not be read.
    pub fn skipped(&self) -> Option<(u64, u64)> {
        let sum = |m: &Map| -> Option<u64> {
            let mut n = 0u64;
            for cpu in 0..self.cpu_slots {
                let v = m.lookup(&cpu.to_ne_bytes()).ok()??;
                n = n.saturating_add(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?));
            }
            Some(n)
        };
        Some((sum(&self.skipped[0])?, sum(&self.skipped[1])?))
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

    /// This kernel's `sched_waking` layout.
    fn waking() -> WakingLayout {
        let tp = crate::offcpu::OffCpuTracepoints::find().expect("tracefs");
        WakingLayout::parse(tp.waking_id, &tp.formats[1]).expect("the kernel's layout")
    }

    #[test]
    fn the_kernel_accepts_the_programs_for_both_kinds_of_session() {
        if !privileged() {
            eprintln!("skipped: loading BPF programs needs root");
            return;
        }
        for tables in [Tables::TaskStorage, Tables::Hash] {
            for traced in [None, Some(&[std::process::id() as i32][..])] {
                for wakes in [None, Some(waking())] {
                    let d = load_with(tables, 10_000, 1_000_000, traced, wakes)
                        .unwrap_or_else(|e| panic!("{tables:?}: {e}\n{}", e.log));
                    assert_eq!(d.links.len(), 3 + usize::from(traced.is_some()));
                    // Only a task session writes wake-up records.
                    assert_eq!(d.writes_wakeups(), traced.is_some() && wakes.is_some());
                }
            }
        }
        // This kernel (5.11 or later) takes task-local storage: no fallback.
        let d = load(10_000, 0, None, false, None).unwrap_or_else(|e| panic!("{e}\n{}", e.log));
        assert_eq!(d.fallback, None);
        // Asked for, the hashes are used and the session says so.
        let d = load(10_000, 0, None, true, None).unwrap_or_else(|e| panic!("{e}\n{}", e.log));
        assert_eq!(d.fallback, Some(Fallback::Asked));
    }
}
