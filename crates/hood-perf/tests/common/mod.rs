//! Shared helpers for hood-perf's kernel tests: the privilege check and a tiny
//! raw perf record walker (the real decoder lives elsewhere).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hood_perf::{Readiness, Session};

pub const RECORD_LOST: u32 = 2;
pub const RECORD_COMM: u32 = 3;
pub const RECORD_EXIT: u32 = 4;
pub const RECORD_FORK: u32 = 7;
pub const RECORD_SAMPLE: u32 = 9;
pub const RECORD_MMAP2: u32 = 10;
pub const MISC_COMM_EXEC: u16 = 1 << 13;
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// True when perf sampling at `needed` paranoid level is allowed. Otherwise
/// prints the skip line, or panics when HOOD_REQUIRE_PRIVILEGED=1.
pub fn privileged(needed: i32, test: &str) -> bool {
    if allowed(needed) {
        return true;
    }
    if std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
        panic!("{test} needs root or CAP_PERFMON and HOOD_REQUIRE_PRIVILEGED=1 is set");
    }
    println!("SKIPPED (needs root or CAP_PERFMON): {test}");
    false
}

fn allowed(needed: i32) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("CapEff:"))?.to_string();
            u64::from_str_radix(l["CapEff:".len()..].trim(), 16).ok()
        })
        .unwrap_or(0);
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    const CAP_PERFMON: u64 = 1 << 38;
    if caps & (CAP_SYS_ADMIN | CAP_PERFMON) != 0 {
        return true;
    }
    hood_perf::paranoid_level().is_some_and(|p| p <= needed)
}

/// One raw record: type, misc and body (header excluded).
#[derive(Debug, Clone)]
pub struct Rec {
    pub ty: u32,
    pub misc: u16,
    pub body: Vec<u8>,
}

/// Splits a CPU's byte stream into records, checking every size.
pub fn walk(stream: &[u8]) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < stream.len() {
        assert!(off + 8 <= stream.len(), "truncated header at {off}");
        let ty = u32::from_ne_bytes(stream[off..off + 4].try_into().unwrap());
        let misc = u16::from_ne_bytes(stream[off + 4..off + 6].try_into().unwrap());
        let size = u16::from_ne_bytes(stream[off + 6..off + 8].try_into().unwrap()) as usize;
        assert!(size >= 8, "record of type {ty} at {off} has size {size}");
        assert_eq!(
            size % 8,
            0,
            "record of type {ty} at {off} has unaligned size {size}"
        );
        assert!(
            off + size <= stream.len(),
            "record of type {ty} at {off} overruns the stream"
        );
        out.push(Rec {
            ty,
            misc,
            body: stream[off + 8..off + size].to_vec(),
        });
        off += size;
    }
    out
}

pub fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}

pub fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

/// The fixed head of a sample with hood's sample_type
/// (IDENTIFIER, IP, TID, TIME, CPU, PERIOD[, CALLCHAIN]).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub cpu: u32,
    pub period: u64,
}

pub fn sample(r: &Rec) -> Sample {
    let b = &r.body;
    Sample {
        ip: u64_at(b, 8),
        pid: u32_at(b, 16),
        tid: u32_at(b, 20),
        time: u64_at(b, 24),
        cpu: u32_at(b, 32),
        period: u64_at(b, 40),
    }
}

/// Per-CPU byte streams collected by [`collect`], plus how many drains wrapped.
#[derive(Debug, Default)]
pub struct Collected {
    pub streams: BTreeMap<u32, Vec<u8>>,
    pub wraps: usize,
    pub bytes: usize,
    pub hangup: bool,
}

impl Collected {
    pub fn records(&self) -> BTreeMap<u32, Vec<Rec>> {
        self.streams.iter().map(|(c, s)| (*c, walk(s))).collect()
    }

    pub fn samples(&self) -> Vec<(u32, Sample)> {
        let mut v = Vec::new();
        for (cpu, recs) in self.records() {
            for r in recs.iter().filter(|r| r.ty == RECORD_SAMPLE) {
                v.push((cpu, sample(r)));
            }
        }
        v
    }
}

/// Waits and drains for `dur` (or until every task exited), appending to `into`.
pub fn collect(session: &mut Session, dur: Duration, into: &mut Collected) {
    let end = Instant::now() + dur;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let r = session.wait(left.min(Duration::from_millis(50))).unwrap();
        drain(session, into);
        if r == Readiness::Hangup {
            into.hangup = true;
            return;
        }
        if left.is_zero() {
            return;
        }
    }
}

/// One drain into `into`, counting calls that handed a CPU two slices.
pub fn drain(session: &mut Session, into: &mut Collected) {
    let mut last_cpu_this_drain: Vec<u32> = Vec::new();
    let n = session
        .drain(&mut |cpu, bytes| {
            if last_cpu_this_drain.contains(&cpu) {
                into.wraps += 1;
            } else {
                last_cpu_this_drain.push(cpu);
            }
            into.streams
                .entry(cpu)
                .or_default()
                .extend_from_slice(bytes);
            Ok(())
        })
        .unwrap();
    into.bytes += n;
}

/// Spins until `stop` is set; returns the thread's tid.
pub fn busy_thread(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (std::thread::JoinHandle<()>, i32) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tx.send(unsafe { libc::gettid() }).unwrap();
        let mut x = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    });
    let tid = rx.recv().unwrap();
    (h, tid)
}
