//! Wake-ups of traced threads (chunks WAKEUPS and TASKS): the `sched:sched_waking` samples the
//! recorder kept, decoded with hood-raw's off-CPU decoder and the tracepoints' `format` texts
//! stored in META, and the names of the wakers. The function a traced waker was in is found
//! late, from its own events ([`WakerTops`]).

use std::collections::{BTreeMap, HashMap};

use hood_raw::attr::Attr;
use hood_raw::records::{trace_flags, Decoded, Event, SchedLayout};
use serde::{Deserialize, Serialize};

use super::{Kind, ProcessTrace, ThreadEvents, TraceHead};

/// How wake-ups were recorded (META `wake`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeMeta {
    /// `sample_type` of the wake-up samples.
    pub sample_type: u64,
    /// The `format` texts of `sched:sched_switch` and `sched:sched_waking` (field offsets and
    /// tracepoint ids are read from them).
    pub formats: Vec<String>,
}

/// A traced thread woken (`sched:sched_waking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wakeup {
    /// CLOCK_MONOTONIC ns.
    pub time_ns: u64,
    /// The thread woken.
    pub wakee: u32,
    /// Process id of the waker (of the task an interrupt interrupted; 0: an idle CPU).
    pub pid: u32,
    /// Thread id of the waker.
    pub tid: u32,
    /// CPU.
    pub cpu: u32,
    /// The tracepoint's `common_flags`: in a hard irq, a softirq, an NMI.
    pub flags: u8,
}

impl Wakeup {
    /// Whether an interrupt (hard, soft or NMI) did it, rather than the task itself.
    pub fn in_interrupt(&self) -> bool {
        self.flags & (trace_flags::HARDIRQ | trace_flags::SOFTIRQ | trace_flags::NMI) != 0
    }
}

/// A waker's name (chunk TASKS).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskName {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// `/proc/PID/task/TID/comm` when the recorder first saw it.
    pub comm: String,
}

/// Wake-ups decoded from one CPU's raw ring bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WakeDecode {
    /// The wake-ups.
    pub wakeups: Vec<Wakeup>,
    /// Records the kernel reported lost.
    pub lost: u64,
    /// Records that could not be decoded (or are not wake-ups).
    pub skipped: u64,
}

/// The decoder of a file's wake-up records: hood-raw's, with the stored layout.
pub struct WakeDecoder {
    attr: Attr,
    /// hood-raw's decoder with the layout, reused (the recorder decodes record by record).
    d: Option<Decoded>,
}

impl WakeDecoder {
    /// For records stored under `meta`.
    pub fn new(meta: &WakeMeta) -> WakeDecoder {
        WakeDecoder {
            attr: Attr {
                type_: 2,
                config: 0,
                sample_period_or_freq: 1,
                sample_type: meta.sample_type,
                read_format: 0,
                // sample_id_all: LOST records carry the trailer too.
                flags: 1 << 18,
                sample_regs_user: 0,
                branch_sample_type: 0,
            },
            d: SchedLayout::from_formats(&meta.formats).map(|l| Decoded {
                sched: Some(l),
                ..Default::default()
            }),
        }
    }

    /// Decode the raw records of CPU `cpu`.
    pub fn decode(&mut self, cpu: u32, b: &[u8]) -> WakeDecode {
        let mut out = WakeDecode::default();
        let Some(d) = self.d.as_mut() else {
            out.skipped = 1;
            return out;
        };
        d.events.clear();
        d.chains.clear();
        d.malformed = 0;
        d.skipped = 0;
        d.push_chunk(&self.attr, cpu, b);
        out.skipped = d.malformed + d.skipped;
        for e in &d.events {
            match e.event {
                Event::Waking {
                    pid,
                    tid,
                    cpu,
                    wakee,
                    flags,
                    ..
                } => out.wakeups.push(Wakeup {
                    time_ns: e.time,
                    wakee,
                    pid,
                    tid,
                    cpu,
                    flags,
                }),
                Event::Lost { count } => out.lost = out.lost.saturating_add(count),
                _ => out.skipped += 1,
            }
        }
        out
    }
}

/// Decode the raw wake-up records of CPU `cpu` stored under `meta`.
pub fn decode_wakeups(meta: &WakeMeta, cpu: u32, b: &[u8]) -> WakeDecode {
    let mut d = WakeDecoder::new(meta);
    d.decode(cpu, b)
}

/// Which function a traced waker was in at a wake-up: (waker tid, CLOCK_MONOTONIC ns) → name.
pub type WakerFunctions = HashMap<(u32, u64), String>;

/// The wake-ups whose waker is a traced thread that ran its own code (not an interrupt on its
/// time): waker (pid, tid) → times, sorted. What [`WakerTops`] answers.
pub fn waker_queries(head: &TraceHead) -> HashMap<(u32, u32), Vec<u64>> {
    let traced: std::collections::HashSet<(u32, u32)> =
        head.threads.iter().map(|t| (t.pid, t.tid)).collect();
    let mut q: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    for w in &head.wakeups {
        if !w.in_interrupt() && traced.contains(&(w.pid, w.tid)) {
            q.entry((w.pid, w.tid)).or_default().push(w.time_ns);
        }
    }
    for v in q.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    q
}

/// Finds the function on top of a traced waker's stack at each of its wake-ups, from its
/// events (fed in file order, like the analysis): the function that made the call that woke.
pub struct WakerTops<'h> {
    /// By (pid, segment start): each image names its own functions.
    procs: HashMap<(u32, u64), &'h ProcessTrace>,
    queries: HashMap<(u32, u32), (Vec<u64>, usize)>,
    /// Per waker: the image its events came from last, and its stack there (an exec starts
    /// the new image with an empty one).
    stacks: HashMap<(u32, u32), (u64, Vec<u64>)>,
    out: WakerFunctions,
}

impl<'h> WakerTops<'h> {
    /// For the wake-ups of `head` ([`waker_queries`]).
    pub fn new(head: &'h TraceHead) -> WakerTops<'h> {
        WakerTops {
            procs: head
                .processes
                .iter()
                .map(|p| ((p.pid, p.start_mono_ns), p))
                .collect(),
            queries: waker_queries(head)
                .into_iter()
                .map(|(k, v)| (k, (v, 0)))
                .collect(),
            stacks: HashMap::new(),
            out: HashMap::new(),
        }
    }

    /// Whether any wake-up needs a waker's events (else no pass over them is needed).
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// Whether the events of thread `(pid, tid)` are needed.
    pub fn wants(&self, pid: u32, tid: u32) -> bool {
        self.queries.contains_key(&(pid, tid))
    }

    /// Walk one chunk of a waker's events.
    pub fn feed(&mut self, te: &ThreadEvents) {
        let key = (te.pid, te.tid);
        let p = self.procs.get(&(te.pid, te.start_mono_ns)).or_else(|| {
            self.procs
                .iter()
                .find(|(k, _)| k.0 == te.pid)
                .map(|(_, p)| p)
        });
        let (Some(p), Some((times, pos))) = (p, self.queries.get_mut(&key)) else {
            return;
        };
        let (image, stack) = self
            .stacks
            .entry(key)
            .or_insert((te.start_mono_ns, Vec::new()));
        if te.start_mono_ns != *image {
            if te.start_mono_ns < *image {
                // Events of an image already replaced, read after the new one's.
                return;
            }
            *image = te.start_mono_ns;
            stack.clear();
        }
        for e in &te.events {
            let t = p.ns(e.ticks());
            while let Some(&q) = times.get(*pos) {
                if q >= t {
                    break;
                }
                if let Some(&f) = stack.last() {
                    self.out.insert((te.tid, q), p.name(f));
                }
                *pos += 1;
            }
            match e.kind() {
                Kind::Entry => stack.push(e.addr),
                Kind::Exit => {
                    if let Some(k) = stack.iter().rposition(|&f| f == e.addr) {
                        stack.truncate(k);
                    }
                }
                _ => {}
            }
        }
    }

    /// The answers: wake-ups after a waker's last event are charged to what was then on top.
    pub fn finish(mut self) -> WakerFunctions {
        for (key, (times, pos)) in &self.queries {
            let Some((image, stack)) = self.stacks.get(key) else {
                continue;
            };
            let p = self.procs.get(&(key.0, *image)).or_else(|| {
                self.procs
                    .iter()
                    .find(|(k, _)| k.0 == key.0)
                    .map(|(_, p)| p)
            });
            let Some(p) = p else {
                continue;
            };
            if let Some(&f) = stack.last() {
                for &q in &times[*pos..] {
                    self.out.insert((key.1, q), p.name(f));
                }
            }
        }
        self.out
    }
}

/// The names of chunk TASKS, merged into `into` (later chunks add threads).
pub(crate) fn merge_tasks(into: &mut BTreeMap<u32, TaskName>, tasks: Vec<TaskName>) {
    for t in tasks {
        into.insert(t.tid, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SAMPLE record of sample_type TID | TIME | CPU | RAW.
    fn sample(pid: u32, tid: u32, time: u64, cpu: u32, raw: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&pid.to_le_bytes());
        body.extend_from_slice(&tid.to_le_bytes());
        body.extend_from_slice(&time.to_le_bytes());
        body.extend_from_slice(&cpu.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        body.extend_from_slice(raw);
        while (body.len() + 8) % 8 != 0 {
            body.push(0);
        }
        let mut r = Vec::new();
        r.extend_from_slice(&9u32.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        r.extend_from_slice(&body);
        r
    }

    fn waking_raw(flags: u8, wakee: u32) -> Vec<u8> {
        let mut raw = vec![0u8; 36];
        raw[0..2].copy_from_slice(&319u16.to_le_bytes());
        raw[2] = flags;
        raw[24..28].copy_from_slice(&wakee.to_le_bytes());
        raw
    }

    #[test]
    fn wakeups_decode_with_the_stored_formats_and_garbage_never_panics() {
        let meta = WakeMeta {
            sample_type: 2 | 4 | 128 | 1024,
            formats: hood_raw::records::example_sched_formats(316, 319),
        };
        let mut b = sample(10, 11, 5_000, 1, &waking_raw(0, 12));
        b.extend(sample(
            0,
            0,
            6_000,
            1,
            &waking_raw(trace_flags::HARDIRQ, 13),
        ));
        let d = decode_wakeups(&meta, 1, &b);
        assert_eq!(d.wakeups.len(), 2, "{d:?}");
        assert_eq!(
            d.wakeups[0],
            Wakeup {
                time_ns: 5_000,
                wakee: 12,
                pid: 10,
                tid: 11,
                cpu: 1,
                flags: 0
            }
        );
        assert!(!d.wakeups[0].in_interrupt());
        assert!(d.wakeups[1].in_interrupt());
        assert_eq!(d.wakeups[1].wakee, 13);
        for n in 0..b.len() {
            let _ = decode_wakeups(&meta, 0, &b[..n]);
            let mut c = b.clone();
            c[n] ^= 0xff;
            let _ = decode_wakeups(&meta, 0, &c);
        }
        // Formats that lack a field: nothing is trusted.
        let bad = WakeMeta {
            formats: vec![hood_raw::records::example_sched_formats(316, 319).remove(1)],
            ..meta
        };
        assert!(decode_wakeups(&bad, 0, &b).wakeups.is_empty());
    }
}
