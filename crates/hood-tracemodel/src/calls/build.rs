//! Call-path tables built from entry and exit events (probed functions: `hood calls run
//! --probe`), the same tables hood-rt keeps in a program built with `-finstrument-functions`.
//! Times are nanoseconds (ticks of a 1 GHz clock), compensated for the probes' measured cost
//! when one is given ([`ProbeCost`]).

use std::collections::HashMap;

#[cfg(test)]
use crate::trace::ProbeCost;
use crate::trace::ProbeCosts;

use super::{PathEntry, ThreadCalls, FLAG_MISMATCH};

struct Open {
    path: u32,
    func: u64,
    entry: u64,
    /// Elapsed ns of the calls it made that have ended.
    child: u64,
    /// The probes' cost outside their spans of the calls it made (ns).
    kids_ns: u64,
}

/// One thread's table, grown event by event.
pub struct ThreadBuilder {
    tid: u32,
    paths: Vec<PathEntry>,
    index: HashMap<(u32, u64), u32>,
    stack: Vec<Open>,
    mismatched: u64,
    cost: ProbeCosts,
    /// Exits of calls that began before the events did (attached to a running process).
    pub unmatched_exits: u64,
}

/// `parent` of a top-level path in the index (no path has this index).
const TOP: u32 = u32::MAX;

impl ThreadBuilder {
    /// An empty table; entry 0 is the lost-paths node, as in hood-rt's tables.
    pub fn new(tid: u32) -> ThreadBuilder {
        ThreadBuilder::compensated(tid, ProbeCosts::default())
    }

    /// An empty table whose own times are less the probes' cost: a call's `self_ns`, and
    /// the `child_ns` of each call it made (as hood-rt's compensation; may go below 0),
    /// each from the figure of the function called.
    pub fn compensated(tid: u32, cost: ProbeCosts) -> ThreadBuilder {
        ThreadBuilder {
            tid,
            paths: vec![PathEntry::LOST],
            index: HashMap::new(),
            stack: Vec::new(),
            mismatched: 0,
            cost,
            unmatched_exits: 0,
        }
    }

    /// `func` (a function probed late) is of the single-stepped kind: its calls from now on
    /// are compensated with that figure.
    pub fn mark_stepped(&mut self, func: u64) {
        self.cost.mark_stepped(func);
    }

    /// One more call of `func` on the path under the open calls (made on its first call):
    /// that path.
    fn call_under_open(&mut self, func: u64) -> u32 {
        let parent = self.stack.last().map_or(TOP, |o| o.path);
        let next = self.paths.len() as u32;
        let path = *self.index.entry((parent, func)).or_insert(next);
        if path == next {
            self.paths.push(PathEntry {
                parent: (parent != TOP).then_some(parent),
                func,
                calls: 0,
                own_ticks: 0,
                running_ticks: 0,
                running: false,
            });
        }
        self.paths[path as usize].calls += 1;
        path
    }

    /// `func` entered at `t` ns.
    pub fn entry(&mut self, func: u64, t: u64) {
        let path = self.call_under_open(func);
        self.stack.push(Open {
            path,
            func,
            entry: t,
            child: 0,
            kids_ns: 0,
        });
    }

    /// A call of `func` seen only at its entry (an entry-only probe: an inlined copy, a Go
    /// function): counted on the path under the open calls, with no time of its own; its
    /// caller's own time is compensated for it as for a call it made (`child_ns`), as a trace
    /// report does for the zero-length call such a probe writes.
    pub fn counted(&mut self, func: u64) {
        self.call_under_open(func);
        let cost = self.cost.of(func).child_ns;
        if let Some(up) = self.stack.last_mut() {
            up.kids_ns = up.kids_ns.saturating_add(cost);
        }
    }

    /// `func` returned at `t` ns. Calls above it on the stack that did not return (longjmp,
    /// exceptions) end here too, counted as repaired; an exit of no open call (it began before
    /// the events did) is counted and otherwise ignored.
    pub fn exit(&mut self, func: u64, t: u64) {
        let Some(k) = self.stack.iter().rposition(|o| o.func == func) else {
            self.unmatched_exits += 1;
            return;
        };
        while self.stack.len() > k + 1 {
            self.mismatched += 1;
            self.pop(t);
        }
        self.pop(t);
    }

    fn pop(&mut self, t: u64) {
        let Some(o) = self.stack.pop() else { return };
        let elapsed = t.saturating_sub(o.entry);
        let cost = self.cost.of(o.func);
        let own =
            elapsed.saturating_sub(o.child) as i64 - cost.self_ns.saturating_add(o.kids_ns) as i64;
        let e = &mut self.paths[o.path as usize];
        e.own_ticks = e.own_ticks.saturating_add(own);
        if let Some(up) = self.stack.last_mut() {
            up.child = up.child.saturating_add(elapsed);
            up.kids_ns = up.kids_ns.saturating_add(cost.child_ns);
        }
    }

    /// The table at `end` ns (the calls still open are running: their own time so far).
    pub fn finish(mut self, end: u64, exited: bool) -> ThreadCalls {
        // Innermost first, so each caller's running time excludes its open callees'.
        // (elapsed, cost outside its span) of the call still open inside the next one.
        let (mut child_running, mut running_cost) = (0u64, 0u64);
        while let Some(o) = self.stack.pop() {
            let elapsed = end.saturating_sub(o.entry);
            let cost = self.cost.of(o.func);
            let own = elapsed
                .saturating_sub(o.child)
                .saturating_sub(child_running) as i64
                - cost
                    .self_ns
                    .saturating_add(o.kids_ns)
                    .saturating_add(running_cost) as i64;
            let e = &mut self.paths[o.path as usize];
            e.running = true;
            e.running_ticks = e.running_ticks.saturating_add(own);
            child_running = elapsed;
            running_cost = cost.child_ns;
        }
        ThreadCalls {
            tid: self.tid,
            exited,
            mismatched: self.mismatched,
            lost_calls: 0,
            folded_calls: 0,
            folded_paths: 0,
            flags: if self.mismatched > 0 {
                FLAG_MISMATCH
            } else {
                0
            },
            reset_pending: false,
            paths: self.paths,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_calls_and_own_time() {
        // main(0..100) { f(10..40) { g(20..30) } f(50..60) } ; g exits unmatched first.
        let mut b = ThreadBuilder::new(7);
        b.exit(3, 1);
        b.entry(1, 0);
        b.entry(2, 10);
        b.entry(3, 20);
        b.exit(3, 30);
        b.exit(2, 40);
        b.entry(2, 50);
        b.exit(2, 60);
        b.exit(1, 100);
        assert_eq!(b.unmatched_exits, 1);
        let t = b.finish(100, true);
        let row = |f: u64| t.paths.iter().find(|p| p.func == f).unwrap();
        assert_eq!((row(1).calls, row(1).own_ticks), (1, 100 - 30 - 10));
        assert_eq!((row(2).calls, row(2).own_ticks), (2, 20 + 10));
        assert_eq!((row(3).calls, row(3).own_ticks), (1, 10));
        assert_eq!(row(3).parent, Some(2));
        assert_eq!(t.paths[0].func, 0);
        assert!(t.paths.iter().all(|p| !p.running));
    }

    /// The probes' cost out of own times: each call less `self_ns`, and `child_ns` per call it
    /// made.
    #[test]
    fn own_times_are_compensated() {
        // main(0..1000) { f(100..200) f(300..400) { g(320..340) } }: raw own times 800, 180,
        // 20 (f summed over two calls).
        let cost = ProbeCost {
            self_ns: 5,
            child_ns: 7,
        };
        let mut b = ThreadBuilder::compensated(1, ProbeCosts::uniform(cost));
        b.entry(1, 0);
        b.entry(2, 100);
        b.exit(2, 200);
        b.entry(2, 300);
        b.entry(3, 320);
        b.exit(3, 340);
        b.exit(2, 400);
        b.exit(1, 1000);
        let t = b.finish(1000, true);
        let own = |f: u64| -> i64 {
            t.paths
                .iter()
                .filter(|p| p.func == f)
                .map(|p| p.own_ticks)
                .sum()
        };
        assert_eq!(own(1), 800 - 5 - 2 * 7);
        assert_eq!(own(2), 180 - 2 * 5 - 7);
        assert_eq!(own(3), 20 - 5);
    }

    /// Each call is compensated by its own function's figure: g's first instruction is
    /// single-stepped (5 + 7 µs more), main's and f's emulated. The caller of a running call
    /// takes the running call's figure too.
    #[test]
    fn own_times_take_each_functions_own_cost() {
        // main(0..1000) { f(100..200) g(300..400) g(500..) } still running at 1000.
        let cost = ProbeCosts {
            emulated: ProbeCost {
                self_ns: 5,
                child_ns: 7,
            },
            stepped: Some(ProbeCost {
                self_ns: 50,
                child_ns: 70,
            }),
            stepped_funcs: vec![3],
        };
        let mut b = ThreadBuilder::compensated(1, cost);
        b.entry(1, 0);
        b.entry(2, 100);
        b.exit(2, 200);
        b.entry(3, 300);
        b.exit(3, 400);
        b.entry(3, 500);
        let t = b.finish(1000, true);
        let row = |f: u64| -> (i64, i64) {
            t.paths
                .iter()
                .filter(|p| p.func == f)
                .fold((0, 0), |a, p| (a.0 + p.own_ticks, a.1 + p.running_ticks))
        };
        // main: 1000 − 100 − 100 − 500 raw, less its own 5, f's 7, two g's 70 each.
        assert_eq!(row(1), (0, 300 - 5 - 7 - 70 - 70));
        assert_eq!(row(2), (100 - 5, 0));
        // g: one finished (100 − 50), one running (500 − 50).
        assert_eq!(row(3), (100 - 50, 500 - 50));
    }

    /// An entry-only call is counted under the open call with no time; its caller is
    /// compensated for it as for any call it made.
    #[test]
    fn entry_only_calls_are_counted_without_time() {
        let cost = ProbeCost {
            self_ns: 5,
            child_ns: 7,
        };
        let mut b = ThreadBuilder::compensated(1, ProbeCosts::uniform(cost));
        b.counted(9);
        b.entry(1, 0);
        b.counted(9);
        b.counted(9);
        b.exit(1, 100);
        let t = b.finish(100, true);
        let rows: Vec<_> = t.paths.iter().filter(|p| p.func == 9).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows.iter().map(|p| p.calls).sum::<u64>(), 3);
        assert!(rows.iter().all(|p| p.own_ticks == 0 && !p.running));
        let top = rows.iter().find(|p| p.parent.is_none()).unwrap();
        assert_eq!(top.calls, 1);
        let f = t.paths.iter().find(|p| p.func == 1).unwrap();
        assert_eq!(f.own_ticks, 100 - 5 - 2 * 7);
    }

    #[test]
    fn longjmp_repairs_and_running_calls() {
        let mut b = ThreadBuilder::new(1);
        b.entry(1, 0);
        b.entry(2, 10);
        b.entry(3, 20);
        // 3 never returns: 2 returns past it.
        b.exit(2, 50);
        b.entry(4, 60);
        b.entry(5, 70);
        let t = b.finish(100, false);
        assert_eq!(t.mismatched, 1);
        assert_ne!(t.flags & FLAG_MISMATCH, 0);
        let row = |f: u64| t.paths.iter().find(|p| p.func == f).unwrap();
        assert_eq!(row(3).own_ticks, 30);
        assert_eq!(row(2).own_ticks, 10);
        assert!(row(5).running && row(5).running_ticks == 30);
        assert!(row(4).running && row(4).running_ticks == 10);
        assert!(row(1).running && row(1).running_ticks == 20);
    }
}
