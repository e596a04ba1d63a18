//! Off-CPU time from the recorded switches and wake-ups (`hood record --off-cpu`), derived at
//! report time from the raw events in time order:
//!
//! - a thread's off-CPU interval starts at its `sched_switch` sample (whose stack is the thread's
//!   stack as it left the CPU, and whose `prev_state` says blocked or preempted) and ends when it
//!   is switched in again: the kernel's switch-in record (task recordings) or a `sched_switch`
//!   naming it as the next task (whole-system recordings); failing both, at its next sign of
//!   running (a CPU sample, its next switch-out), counted as unmatched;
//! - a blocked interval is split at the wake-up that ended it: before it the thread was blocked,
//!   after it runnable, waiting for a CPU (the scheduler's delay, which `/proc/PID/schedstat`
//!   counts as run-queue time too); the waker is the `sched_waking` sample that named the thread,
//!   the one with a user stack where two were recorded for the same wake-up;
//! - a preempted interval is runnable throughout;
//! - a thread first seen switching in was off CPU since the recording began (or it was
//!   created), with a stack nobody recorded; an interval still open at the end runs to the end.
//!
//! Stacks here are the builder's interned location stacks; the builder symbolizes them.

use rustc_hash::FxHashMap as HashMap;

use super::model::{Mode, OffCpuStats, Sample, ThreadTime, WakeContext};
use hood_raw::records::{trace_flags, TASK_REPORT_PREEMPTED};

/// A wake-up seen for a thread that is off CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawWaker {
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub cpu: u32,
    pub context: WakeContext,
    /// Interned location stack.
    pub locs: u32,
    /// Whether the stack has user frames (prefer it over a kernel-only twin).
    pub has_user: bool,
}

/// Where a waker ran, from the tracepoint's `common_flags`.
pub(crate) fn wake_context(flags: u8) -> WakeContext {
    if flags & trace_flags::NMI != 0 {
        WakeContext::Nmi
    } else if flags & trace_flags::HARDIRQ != 0 {
        WakeContext::HardIrq
    } else if flags & trace_flags::SOFTIRQ != 0 {
        WakeContext::SoftIrq
    } else {
        WakeContext::Thread
    }
}

#[derive(Debug, Clone, Copy)]
struct Out {
    pid: u32,
    time: u64,
    cpu: u32,
    state: u64,
    locs: u32,
    waker: Option<RawWaker>,
}

#[derive(Debug, Clone, Copy, Default)]
struct ThreadState {
    pid: u32,
    /// When the thread was first known to exist in the recording.
    begin: u64,
    /// When it exited (0: did not).
    end: u64,
    out: Option<Out>,
    /// Whether any switch of it was seen (before the first, it may have been off CPU since
    /// the start).
    switched: bool,
    time: ThreadTime,
}

/// Off-CPU intervals as the builder emits them, before symbolization.
#[derive(Debug, Default)]
pub(crate) struct Derived {
    /// `Sample`s whose `stack` is still an interned location stack (`u32::MAX`: the
    /// "off CPU since before the recording" pseudo-stack).
    pub samples: Vec<Sample>,
    /// Index into `wakers` for each of `samples`.
    pub waker_of: Vec<Option<u32>>,
    pub wakers: Vec<RawWaker>,
    pub threads: Vec<ThreadTime>,
    pub stats: OffCpuStats,
    /// The location stack of "waker not seen".
    pub unknown_waker: u32,
}

/// The location stack of an interval that began before the recording (a pseudo-frame).
pub(crate) const BEFORE_RECORDING: u32 = u32::MAX;

/// The location stack of a new thread's wait for its first CPU (a pseudo-frame): from its
/// creation to its first switch-in it is runnable, as `/proc/PID/schedstat` counts it.
pub(crate) const NEW_THREAD: u32 = u32::MAX - 1;

/// Follows switches and wake-ups in time order.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    start: u64,
    threads: HashMap<u32, ThreadState>,
    out: Derived,
}

impl Tracker {
    /// A tracker for a recording that began at `start` (CLOCK_MONOTONIC ns).
    pub fn new(start: u64) -> Tracker {
        Tracker {
            start,
            ..Tracker::default()
        }
    }

    fn thread(&mut self, pid: u32, tid: u32, now: u64) -> &mut ThreadState {
        let start = self.start;
        let t = self.threads.entry(tid).or_insert_with(|| ThreadState {
            pid,
            begin: if start > 0 { start.min(now) } else { now },
            ..ThreadState::default()
        });
        if pid != 0 {
            t.pid = pid;
        }
        t
    }

    /// A thread was created at `time` (its lifetime in the recording starts there).
    pub fn fork(&mut self, pid: u32, tid: u32, time: u64) {
        let t = self.thread(pid, tid, time);
        if !t.switched && t.out.is_none() {
            t.begin = time.max(t.begin);
            // A new thread is runnable from its creation until its first switch-in (or a
            // sample that shows it running): no unknown stretch.
            t.switched = true;
            t.out = Some(Out {
                pid,
                time,
                cpu: 0,
                state: 0,
                locs: NEW_THREAD,
                waker: None,
            });
        }
    }

    /// A thread exited at `time`.
    pub fn exit(&mut self, tid: u32, time: u64) {
        if let Some(t) = self.threads.get_mut(&tid) {
            if t.out.is_some() {
                // Running to exit proves it came back; the switch-in was not seen.
                let pid = t.pid;
                self.running(pid, tid, time);
            }
            if let Some(t) = self.threads.get_mut(&tid) {
                t.end = time;
            }
        }
    }

    /// `tid` left a CPU at `time` (its `sched_switch` sample), with stack `locs`.
    pub fn switch_out(&mut self, pid: u32, tid: u32, cpu: u32, time: u64, state: u64, locs: u32) {
        if tid == 0 {
            return;
        }
        if self.threads.get(&tid).is_some_and(|t| t.out.is_some()) {
            // Out twice without an in: it ran in between.
            self.out.stats.unmatched += 1;
            self.switch_in(tid, time);
        }
        let t = self.thread(pid, tid, time);
        if !t.switched {
            t.switched = true;
        }
        t.out = Some(Out {
            pid,
            time,
            cpu,
            state,
            locs,
            waker: None,
        });
    }

    /// `tid` was switched in at `time`.
    pub fn switch_in(&mut self, tid: u32, time: u64) {
        if tid == 0 {
            return;
        }
        let start = self.start;
        let t = self.thread(0, tid, time);
        match t.out.take() {
            Some(o) => self.close(tid, o, time),
            None if !t.switched => {
                // Off CPU since the recording began (or since first known), stack unknown.
                t.switched = true;
                let begin = t.begin;
                let pid = t.pid;
                if time > begin && start > 0 {
                    let ns = time - begin;
                    t.time.blocked_ns += ns;
                    t.time.before_first_switch_ns += ns;
                    t.time.intervals += 1;
                    self.out.samples.push(Sample {
                        pid,
                        tid,
                        cpu: 0,
                        time: begin,
                        period: ns,
                        mode: Mode::Blocked,
                        stack: BEFORE_RECORDING,
                        locs: BEFORE_RECORDING,
                    });
                    self.out.waker_of.push(None);
                }
            }
            None => {}
        }
    }

    /// A sign that `tid` runs at `time` (a CPU sample): ends an interval whose switch-in was
    /// not seen.
    pub fn running(&mut self, pid: u32, tid: u32, time: u64) {
        if tid == 0 {
            return;
        }
        let t = self.thread(pid, tid, time);
        // Seen running before any switch: it was on a CPU from the start.
        t.switched = true;
        if let Some(o) = t.out {
            if time > o.time {
                t.out = None;
                self.out.stats.unmatched += 1;
                self.close(tid, o, time);
            }
        }
    }

    /// A wake-up of `wakee` by `w`.
    pub fn waking(&mut self, wakee: u32, w: RawWaker) {
        let Some(t) = self.threads.get_mut(&wakee) else {
            return;
        };
        let Some(o) = t.out.as_mut() else {
            return;
        };
        match &mut o.waker {
            None => o.waker = Some(w),
            // The same wake-up seen twice (the thread's own event and the whole-CPU one, each
            // sample timed when it was taken): keep the one with the user stack, at the
            // earlier time.
            Some(old) if old.tid == w.tid && old.cpu == w.cpu && w.has_user && !old.has_user => {
                *old = RawWaker {
                    time: old.time.min(w.time),
                    ..w
                }
            }
            Some(_) => {}
        }
    }

    fn close(&mut self, tid: u32, o: Out, end: u64) {
        let end = end.max(o.time);
        let Some(t) = self.threads.get_mut(&tid) else {
            return;
        };
        t.time.intervals += 1;
        self.out.stats.intervals += 1;
        let runnable = o.state == 0 || o.state & TASK_REPORT_PREEMPTED != 0;
        let base = Sample {
            pid: o.pid,
            tid,
            cpu: o.cpu,
            time: o.time,
            period: end - o.time,
            mode: Mode::Runnable,
            stack: o.locs,
            locs: o.locs,
        };
        if runnable {
            t.time.runnable_ns += base.period;
            self.out.samples.push(base);
            self.out.waker_of.push(None);
            return;
        }
        let woke = o.waker.map(|w| w.time.clamp(o.time, end)).unwrap_or(end);
        let waker = o.waker.map(|w| {
            self.out.wakers.push(w);
            (self.out.wakers.len() - 1) as u32
        });
        match waker {
            Some(_) => self.out.stats.woken += 1,
            None => self.out.stats.waker_unknown += 1,
        }
        t.time.blocked_ns += woke - o.time;
        self.out.samples.push(Sample {
            period: woke - o.time,
            mode: Mode::Blocked,
            ..base
        });
        self.out.waker_of.push(waker);
        if end > woke {
            t.time.runnable_ns += end - woke;
            self.out.samples.push(Sample {
                time: woke,
                period: end - woke,
                ..base
            });
            self.out.waker_of.push(None);
        }
    }

    /// Close what is open at the recording's `end` and return what was derived.
    ///
    /// (See [`charge_to_previous`] for recordings with a rate bound on stacks.)
    pub fn finish(mut self, end: u64) -> Derived {
        let open: Vec<(u32, Out)> = self
            .threads
            .iter_mut()
            .filter_map(|(&tid, t)| t.out.take().map(|o| (tid, o)))
            .collect();
        for (tid, o) in open {
            let stop = match self.threads.get(&tid) {
                Some(t) if t.end > 0 => t.end,
                _ => end,
            };
            self.close(tid, o, stop);
        }
        let mut threads: Vec<ThreadTime> = self
            .threads
            .iter()
            .filter(|(_, t)| t.switched || t.time.intervals > 0)
            .map(|(&tid, t)| {
                let stop = if t.end > 0 { t.end } else { end.max(t.begin) };
                let lifetime = stop.saturating_sub(t.begin);
                let off = t.time.blocked_ns + t.time.runnable_ns;
                ThreadTime {
                    pid: t.pid,
                    tid,
                    lifetime_ns: lifetime,
                    on_cpu_ns: lifetime.saturating_sub(off),
                    ..t.time
                }
            })
            .collect();
        threads.sort_by_key(|t| (t.pid, t.tid));
        // A thread first seen switching in is named by its thread id only; its process is
        // known from its later samples.
        for s in &mut self.out.samples {
            if s.pid == 0 {
                s.pid = self.threads.get(&s.tid).map_or(0, |t| t.pid);
            }
        }
        self.out.threads = threads;
        self.out
    }
}

/// In a recording whose stacks were taken at most so many times a second per thread: each
/// interval of at least `min_ns` whose stacks were left untaken (its stack is `no_stack`)
/// is charged to the stack of its thread's previous interval of the same kind that has one,
/// as a CPU sample stands for the time around it: a blocked wait (and the runnable stretch
/// after its wake-up) to the previous blocked wait's, a preemption to the previous
/// preemption's (a thread preempted on its way back from waking another is not where it
/// waits); its waker, when the same thread woke both and its own user stack is missing, to
/// that interval's waker's stack. Intervals with no earlier stack of their kind keep
/// `no_stack`. Returns how many intervals (a blocked wait and the runnable stretch after its
/// wake-up are one), and their time.
pub(crate) fn charge_to_previous(d: &mut Derived, min_ns: u64, no_stack: u32) -> (u64, u64) {
    // Keyed by thread and kind (true: a blocked wait).
    let mut last: HashMap<(u32, bool), u32> = HashMap::default();
    let mut last_waker: HashMap<u32, (u32, u32)> = HashMap::default();
    // Where each thread's last charged stretch ended: the runnable stretch of the same wait
    // begins there.
    let mut ended: HashMap<u32, u64> = HashMap::default();
    // Where each thread's last blocked stretch ended: a runnable stretch that begins there is
    // the same wait's, after its wake-up.
    let mut blocked_end: HashMap<u32, u64> = HashMap::default();
    let (mut n, mut ns) = (0u64, 0u64);
    for (i, s) in d.samples.iter_mut().enumerate() {
        let wait = match s.mode {
            Mode::Blocked => {
                blocked_end.insert(s.tid, s.time + s.period);
                true
            }
            _ => blocked_end.get(&s.tid) == Some(&s.time),
        };
        if s.locs == BEFORE_RECORDING || s.locs == NEW_THREAD || s.period < min_ns {
            continue;
        }
        if s.locs == no_stack {
            let Some(&l) = last.get(&(s.tid, wait)) else {
                continue;
            };
            s.locs = l;
            s.stack = l;
            if ended.insert(s.tid, s.time + s.period) != Some(s.time) {
                n += 1;
            }
            ns += s.period;
        } else {
            last.insert((s.tid, wait), s.locs);
        }
        let Some(w) = d.waker_of.get(i).copied().flatten() else {
            continue;
        };
        let Some(wk) = d.wakers.get_mut(w as usize) else {
            continue;
        };
        if wk.context != WakeContext::Thread {
            continue;
        }
        if wk.has_user {
            last_waker.insert(s.tid, (wk.tid, wk.locs));
        } else if let Some(&(_, l)) = last_waker.get(&s.tid).filter(|(t, _)| *t == wk.tid) {
            wk.locs = l;
            wk.has_user = true;
        }
    }
    (n, ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1; // TASK_INTERRUPTIBLE

    fn waker(tid: u32, time: u64, has_user: bool) -> RawWaker {
        RawWaker {
            pid: tid,
            tid,
            time,
            cpu: 0,
            context: WakeContext::Thread,
            locs: tid,
            has_user,
        }
    }

    #[test]
    fn a_blocked_interval_splits_at_its_wakeup_and_time_adds_up() {
        let mut t = Tracker::new(1_000);
        t.running(7, 7, 1_100);
        t.switch_out(7, 7, 0, 2_000, S, 42);
        t.waking(7, waker(9, 5_000, false));
        t.waking(7, waker(9, 5_008, true));
        t.switch_in(7, 5_300);
        t.switch_out(7, 7, 1, 6_000, TASK_REPORT_PREEMPTED, 43);
        t.switch_in(7, 6_500);
        let d = t.finish(10_000);
        let got: Vec<(u64, u64, Mode, Option<u32>)> = d
            .samples
            .iter()
            .zip(&d.waker_of)
            .map(|(s, w)| (s.time, s.period, s.mode, *w))
            .collect();
        assert_eq!(
            got,
            vec![
                (2_000, 3_000, Mode::Blocked, Some(0)),
                (5_000, 300, Mode::Runnable, None),
                (6_000, 500, Mode::Runnable, None),
            ]
        );
        assert!(d.wakers[0].has_user, "the twin with a user stack is kept");
        let th = d.threads[0];
        assert_eq!(th.lifetime_ns, 9_000);
        assert_eq!(
            (th.blocked_ns, th.runnable_ns, th.on_cpu_ns),
            (3_000, 800, 5_200)
        );
        assert_eq!(
            th.on_cpu_ns + th.blocked_ns + th.runnable_ns,
            th.lifetime_ns
        );
    }

    #[test]
    fn waits_left_without_stacks_by_the_rate_bound_take_their_threads_previous_ones() {
        const NONE: u32 = 99;
        let mut t = Tracker::new(1_000);
        t.running(7, 7, 1_000);
        t.running(8, 8, 1_000);
        // Thread 7: a long wait with its stack (42, woken by 9 with stack 9); two long ones
        // left without (NONE), the first woken by 9 without a stack (109) 40 ns in and back
        // on a CPU 30 ns later; then a short one. Thread 8: a long wait without a stack and
        // nothing before it.
        let mut at = 2_000;
        for (locs, woke, back, w) in [
            (42, 50, 50, Some(9)),
            (NONE, 40, 70, Some(109)),
            (NONE, 60, 60, None),
            (NONE, 5, 5, None),
        ] {
            t.switch_out(7, 7, 0, at, S, locs);
            if let Some(w) = w {
                t.waking(
                    7,
                    RawWaker {
                        locs: w,
                        ..waker(9, at + woke, w == 9)
                    },
                );
            }
            t.switch_in(7, at + back);
            at += 1_000;
        }
        // Then a preemption with its stack (77), a long wait and a preemption without: each
        // takes its own kind's previous stack.
        for (state, locs, back) in [
            (TASK_REPORT_PREEMPTED, 77, 20),
            (S, NONE, 30),
            (TASK_REPORT_PREEMPTED, NONE, 25),
        ] {
            t.switch_out(7, 7, 0, at, state, locs);
            t.switch_in(7, at + back);
            at += 1_000;
        }
        t.switch_out(8, 8, 1, 2_000, S, NONE);
        t.switch_in(8, 2_080);
        let mut d = t.finish(10_000);
        let (n, ns) = charge_to_previous(&mut d, 10, NONE);
        // The blocked and runnable stretches of one wait count once.
        assert_eq!((n, ns), (4, 185));
        let locs: Vec<(u32, u64, u32)> = d
            .samples
            .iter()
            .map(|s| (s.tid, s.period, s.locs))
            .collect();
        assert_eq!(
            locs,
            vec![
                (7, 50, 42),
                (7, 40, 42),
                (7, 30, 42),
                (7, 60, 42),
                (7, 5, NONE),
                (7, 20, 77),
                (7, 30, 42),
                (7, 25, 77),
                (8, 80, NONE)
            ]
        );
        // The second wait's waker (the same thread, without a user stack) takes the first's.
        let wakers: Vec<u32> = d.wakers.iter().map(|w| w.locs).collect();
        assert_eq!(wakers, vec![9, 9]);
    }

    #[test]
    fn a_thread_first_seen_switching_in_was_off_cpu_since_the_start() {
        let mut t = Tracker::new(1_000);
        t.switch_in(8, 4_000);
        t.switch_out(8, 8, 0, 4_500, S, 1);
        let d = t.finish(6_000);
        assert_eq!(d.samples[0].stack, BEFORE_RECORDING);
        assert_eq!((d.samples[0].time, d.samples[0].period), (1_000, 3_000));
        // Still blocked at the end: runs to the end, waker unknown.
        assert_eq!((d.samples[1].time, d.samples[1].period), (4_500, 1_500));
        assert_eq!(d.stats.waker_unknown, 1);
        let th = d.threads[0];
        assert_eq!(th.before_first_switch_ns, 3_000);
        assert_eq!(th.on_cpu_ns, 500);
    }

    #[test]
    fn a_new_thread_is_runnable_until_its_first_switch_in() {
        let mut t = Tracker::new(1_000);
        t.fork(5, 8, 2_000);
        t.switch_in(8, 2_700);
        t.switch_out(8, 8, 0, 3_000, S, 1);
        t.waking(8, waker(9, 3_400, true));
        t.switch_in(8, 3_500);
        // A thread whose first switch-in was lost: its first sample ends the wait.
        t.fork(5, 11, 2_000);
        t.running(5, 11, 2_200);
        let d = t.finish(6_000);
        let got: Vec<(u32, u64, u64, Mode, u32)> = d
            .samples
            .iter()
            .map(|s| (s.tid, s.time, s.period, s.mode, s.stack))
            .collect();
        assert_eq!(
            got,
            vec![
                (8, 2_000, 700, Mode::Runnable, NEW_THREAD),
                (8, 3_000, 400, Mode::Blocked, 1),
                (8, 3_400, 100, Mode::Runnable, 1),
                (11, 2_000, 200, Mode::Runnable, NEW_THREAD),
            ]
        );
        let th = d.threads.iter().find(|th| th.tid == 8).unwrap();
        assert_eq!(th.lifetime_ns, 4_000);
        assert_eq!(
            (th.blocked_ns, th.runnable_ns, th.on_cpu_ns),
            (400, 800, 2_800)
        );
        assert_eq!(th.before_first_switch_ns, 0);
    }

    #[test]
    fn a_missed_switch_in_ends_at_the_next_sign_of_running() {
        let mut t = Tracker::new(0);
        t.switch_out(3, 3, 0, 100, S, 1);
        t.running(3, 3, 400);
        t.switch_out(3, 3, 0, 500, S, 1);
        t.switch_out(3, 3, 0, 900, S, 1);
        let d = t.finish(1_000);
        assert_eq!(d.stats.unmatched, 2);
        let periods: Vec<u64> = d.samples.iter().map(|s| s.period).collect();
        assert_eq!(periods, vec![300, 400, 100]);
    }

    #[test]
    fn wake_contexts_come_from_the_flags() {
        assert_eq!(wake_context(0), WakeContext::Thread);
        assert_eq!(wake_context(trace_flags::SOFTIRQ | 1), WakeContext::SoftIrq);
        assert_eq!(wake_context(trace_flags::HARDIRQ), WakeContext::HardIrq);
        assert_eq!(
            wake_context(trace_flags::NMI | trace_flags::HARDIRQ),
            WakeContext::Nmi
        );
    }
}
