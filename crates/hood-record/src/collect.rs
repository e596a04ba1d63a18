//! Streams raw ring bytes into the recording, one chunk per CPU when its buffer fills or a
//! second has passed, counting samples, lost records and throttling on the way.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::time::Instant;

use hood_format::{tags, Writer};
use hood_raw::attr::Attr;
use hood_raw::frames::for_each_frame;
use hood_raw::records::{
    kind, parse_sample, Decoded, Event, CONTEXT_KERNEL, CONTEXT_MAX, CPUMODE_KERNEL,
};
use rustc_hash::FxHashSet as HashSet;

use hood_model::profile::CpuCounts;
use hood_unwind::Rewriter;

/// Flush a CPU's buffer once it holds this many bytes.
const FLUSH_BYTES: usize = 1 << 20;
/// Bytes of the CPU number before a sample chunk's records.
const CPU_PREFIX: usize = 4;

/// An empty buffer of `cpu`'s records: its chunk's CPU number, written once.
fn cpu_buffer(cpu: u32, capacity: usize) -> Vec<u8> {
    let mut b = Vec::with_capacity(capacity);
    b.extend_from_slice(&cpu.to_le_bytes());
    b
}
/// Distinct kernel addresses tracked for the recording's kallsyms subset (16 MB at most);
/// past this the whole kallsyms text is kept.
const MAX_KERNEL_ADDRS: usize = 1 << 20;

/// Per-CPU buffers and counters.
pub struct Collector {
    /// One buffer per CPU, from the start (their order is the rewriter's output order), each
    /// a chunk in the making: the CPU number ([`CPU_PREFIX`] bytes), then its records.
    bufs: BTreeMap<u32, Vec<u8>>,
    rewriter: Option<Rewriter>,
    /// Counters per CPU.
    pub counts: BTreeMap<u32, CpuCounts>,
    /// Pids seen in samples (for JIT maps).
    pub pids: BTreeSet<u32>,
    /// Files named by mmap records that carried no build-id.
    pub files_without_build_id: BTreeSet<String>,
    last_flush: Instant,
    /// The attribute the stored samples follow.
    attr: Attr,
    /// Distinct kernel addresses in the stored samples (`None` once too many).
    kernel_addrs: Option<HashSet<u64>>,
    /// The records of the buffer being counted, decoded (reused from buffer to buffer).
    scratch: Decoded,
    /// The kallsyms text the recording holds, whose lines for these addresses are written
    /// at finalization.
    pub kallsyms: Option<String>,
    /// Chunks written just before the first records that hold a sample (kallsyms: 1 MB that
    /// a recording without samples does not need).
    until_samples: Vec<(u32, Vec<u8>)>,
    /// Off-CPU switches and wake-ups counted.
    sched_events: u64,
    /// The raw-copy fallback ([`Collector::set_raw_fallback`]), when set.
    raw: Option<RawFallback>,
}

/// Samples kept with their stack copies when the unwinder lags: per CPU, records as the
/// kernel wrote them, stored in `RAW_SAMPLES` chunks and unwound at report time.
struct RawFallback {
    /// The attribute the kernel got (with the registers and the stack copy).
    attr_bytes: Vec<u8>,
    attr: Attr,
    /// Bytes of each ring's data area.
    ring_bytes: usize,
    /// Every sample is kept raw (`HOOD_KEEP_STACK_COPIES=1`, for tests).
    forced: bool,
    bufs: BTreeMap<u32, Vec<u8>>,
    /// Per output of the rewriter (the CPUs in order): keep this round's samples raw.
    keep: Vec<bool>,
}

/// A ring at least this full (in halves of its size) when drained is filling faster than it is
/// unwound: that round's samples are kept raw.
const RAW_FILL_HALVES: usize = 1;

impl Collector {
    /// `attr` is the attribute the stored samples follow (its raw bytes).
    pub fn new(cpus: &[u32], attr: &[u8]) -> Collector {
        Collector {
            bufs: cpus
                .iter()
                .map(|&c| (c, cpu_buffer(c, FLUSH_BYTES * 2)))
                .collect(),
            rewriter: None,
            counts: cpus.iter().map(|&c| (c, CpuCounts::default())).collect(),
            pids: BTreeSet::new(),
            files_without_build_id: BTreeSet::new(),
            last_flush: Instant::now(),
            attr: Attr::parse(attr).unwrap_or_default(),
            kernel_addrs: Some(HashSet::default()),
            scratch: Decoded::default(),
            kallsyms: None,
            until_samples: Vec::new(),
            sched_events: 0,
            raw: None,
        }
    }

    /// The raw-copy fallback: when a ring is found at least half full (its `ring_bytes`), the
    /// samples of that round are stored with their registers and stack copy (as the kernel
    /// wrote them under `raw_attr`) rather than unwound, and the report unwinds them. With
    /// `forced`, every sample is (tests: `HOOD_KEEP_STACK_COPIES=1`). Call after
    /// [`Collector::set_rewriter`]; a recording with off-CPU switches keeps none.
    pub fn set_raw_fallback(&mut self, raw_attr: &[u8], ring_bytes: usize, forced: bool) {
        let Ok(attr) = Attr::parse(raw_attr) else {
            return;
        };
        self.raw = Some(RawFallback {
            attr_bytes: raw_attr.to_vec(),
            attr,
            ring_bytes: ring_bytes.max(1),
            forced,
            bufs: self.bufs.keys().map(|&c| (c, Vec::new())).collect(),
            keep: vec![false; self.bufs.len()],
        });
    }

    /// Samples stored with their raw stack copy, to be unwound at report time.
    pub fn kept_raw(&self) -> u64 {
        self.rewriter.as_ref().map_or(0, |r| r.stats().kept_raw)
    }

    /// Write this chunk just before the first records that hold a sample.
    pub fn write_before_samples(&mut self, tag: u32, data: Vec<u8>) {
        self.until_samples.push((tag, data));
    }

    /// Whether the chunks held back until the first sample were written.
    pub fn wrote_before_samples(&self) -> bool {
        self.until_samples.is_empty()
    }

    /// The distinct kernel addresses of the stored samples (their instruction pointers and
    /// kernel call-chain entries); `None` if there were too many to keep track of.
    pub fn kernel_addrs(&self) -> Option<&HashSet<u64>> {
        self.kernel_addrs.as_ref()
    }

    /// The recording has off-CPU switches and wake-ups (their tracepoints' `format` texts):
    /// count them apart from CPU samples, and keep their kernel addresses.
    pub fn set_sched(&mut self, formats: &[String]) {
        self.scratch.sched = hood_raw::records::SchedLayout::from_formats(formats);
    }

    /// Switches and wake-ups counted (off-CPU recordings).
    pub fn sched_events(&self) -> u64 {
        self.sched_events
    }

    /// Unwind stack copies with `rewriter` before storing samples. In an off-CPU recording
    /// (after [`Collector::set_sched`]), waits shorter than `off_cpu_min_ns` are stored
    /// without user stacks ([`Rewriter::set_off_cpu`]).
    pub fn set_rewriter(&mut self, mut rewriter: Rewriter, off_cpu_min_ns: u64) {
        if let Some(l) = &self.scratch.sched {
            rewriter.set_off_cpu(l.clone(), off_cpu_min_ns);
        }
        self.rewriter = Some(rewriter);
    }

    /// Switch-outs and wake-ups stored without user stacks: their waits were shorter than
    /// the off-CPU minimum.
    pub fn short_waits(&self) -> u64 {
        self.rewriter.as_ref().map_or(0, |r| r.stats().short_waits)
    }

    /// What the rewriter did, when samples carry stack copies.
    pub fn rewrite_stats(&self) -> Option<&hood_unwind::RewriteStats> {
        self.rewriter.as_ref().map(|r| r.stats())
    }

    /// Store the switch-out samples the rewriter still holds (threads not seen running again
    /// before the end): once, after the last round.
    pub fn release_held(&mut self) {
        self.rewrite_into_buffers(|rw, outs| rw.release_all(outs));
    }

    /// Run `f` with the rewriter and the CPU buffers as its outputs, in CPU order (the same
    /// in every round: held samples name their output by its place).
    fn rewrite_into_buffers(&mut self, f: impl FnOnce(&mut Rewriter, &mut [Vec<u8>])) {
        let Some(rw) = self.rewriter.as_mut() else {
            return;
        };
        let mut outs: Vec<Vec<u8>> = self.bufs.values_mut().map(std::mem::take).collect();
        f(rw, &mut outs);
        for (buf, out) in self.bufs.values_mut().zip(outs) {
            *buf = out;
        }
    }

    /// Tell the unwinder the mappings of `processes` (found after the start).
    pub fn load_proc_maps(&mut self, processes: &[hood_model::profile::ProcSnapshot]) {
        if let Some(rw) = self.rewriter.as_mut() {
            for p in processes {
                rw.unwinder().load_proc_maps(p.pid, &p.maps);
            }
        }
    }

    /// The unwinding stage, when samples carry stack copies.
    pub fn rewriter(&self) -> Option<&Rewriter> {
        self.rewriter.as_ref()
    }

    /// The unwinding stage, to take its counts.
    pub fn rewriter_mut(&mut self) -> Option<&mut Rewriter> {
        self.rewriter.as_mut()
    }

    /// Append drained bytes of `cpu`'s ring (samples without stack copies).
    pub fn push(&mut self, cpu: u32, bytes: &[u8]) -> io::Result<()> {
        self.bufs
            .entry(cpu)
            .or_insert_with(|| cpu_buffer(cpu, 0))
            .extend_from_slice(bytes);
        Ok(())
    }

    /// With stack copies: unwind one round of every ring's unread bytes where they lie
    /// (`Session::drain_in_place`: the 8 KiB stack copies are never copied), in time order
    /// across CPUs, into the per-CPU buffers. The unwinder's warnings go to `log`.
    pub fn rewrite_round(&mut self, views: &[hood_perf::RingBytes<'_>], log: &mut dyn FnMut(&str)) {
        if self.rewriter.is_none() || views.iter().all(|(_, [a, b])| a.is_empty() && b.is_empty()) {
            return;
        }
        // A record cut by a ring's wrap is joined in a buffer of its own.
        let mut cut: Vec<(usize, usize, usize, Vec<u8>, usize)> = Vec::with_capacity(views.len());
        for (v, (cpu, [a, b])) in views.iter().enumerate() {
            let Some(o) = self.bufs.keys().position(|c| c == cpu) else {
                continue;
            };
            let (whole, glue, rest) = split_wrapped(a, b);
            cut.push((v, o, whole, glue, rest));
        }
        let mut input: Vec<(usize, &[u8])> = Vec::with_capacity(views.len() * 3);
        for (v, o, whole, glue, rest) in &cut {
            let [a, b] = views[*v].1;
            input.push((*o, &a[..*whole]));
            if !glue.is_empty() {
                input.push((*o, glue));
            }
            if *rest < b.len() {
                input.push((*o, &b[*rest..]));
            }
        }
        if let Some(raw) = self.raw.as_mut() {
            raw.keep.iter_mut().for_each(|k| *k = raw.forced);
            for (cpu, [a, b]) in views {
                let full = (a.len() + b.len()) * 2 >= raw.ring_bytes * RAW_FILL_HALVES;
                if let (true, Some(o)) = (full, self.bufs.keys().position(|c| c == cpu)) {
                    raw.keep[o] = true;
                }
            }
            if let Some(rw) = self.rewriter.as_mut() {
                rw.keep_raw(&raw.keep);
            }
        }
        self.rewrite_into_buffers(|rw, outs| rw.rewrite(&input, outs));
        if let Some(rw) = self.rewriter.as_mut() {
            for w in rw.unwinder().take_warnings() {
                log(&w);
            }
            if let Some(raw) = self.raw.as_mut() {
                for (o, buf) in raw.bufs.values_mut().enumerate() {
                    if let Some(kept) = rw.take_raw(o) {
                        buf.append(kept);
                    }
                }
            }
        }
    }

    /// Count the records in a buffer that ends on a record boundary. Samples (nearly all of
    /// a storm's records) are read in place: their pid, their kernel frames, and whether
    /// they are a switch or a wake-up; the other records are decoded. With `raw`, the samples
    /// kept with their stack copies (`RAW_SAMPLES`).
    fn count(&mut self, cpu: u32, buf: &[u8], raw: bool) {
        let c = self.counts.entry(cpu).or_default();
        c.bytes += buf.len() as u64;
        let d = &mut self.scratch;
        d.events.clear();
        d.chains.clear();
        let attr = match (&self.raw, raw) {
            (Some(r), true) => &r.attr,
            _ => &self.attr,
        };
        let pids = &mut self.pids;
        let kernel_addrs = &mut self.kernel_addrs;
        let sched_events = &mut self.sched_events;
        let mut samples = 0u64;
        // A storm's records come from a few processes: the set is asked once per run of them.
        let mut last_pid = None;
        // A broken record ends the count where it is, as it ends a reader's.
        let _ = for_each_frame(buf, |f| {
            let body = &f.bytes[8..];
            if f.ty != kind::SAMPLE {
                let _ = d.push_record(attr, Some(cpu), f.ty, f.misc, body);
                return;
            }
            let Some(s) = parse_sample(attr, body) else {
                return;
            };
            let sched = d.sched.as_ref().is_some_and(|l| l.read(s.raw()).is_some());
            match sched {
                true => *sched_events += 1,
                false => samples += 1,
            }
            if last_pid != Some(s.pid) {
                pids.insert(s.pid);
                last_pid = Some(s.pid);
            }
            let Some(set) = kernel_addrs.as_mut() else {
                return;
            };
            if !sched && (f.misc & 7) as u8 == CPUMODE_KERNEL {
                set.insert(s.ip);
            }
            let mut in_kernel = false;
            for w in s.chain.chunks_exact(8) {
                let a = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
                if a >= CONTEXT_MAX {
                    in_kernel = a == CONTEXT_KERNEL;
                } else if in_kernel {
                    set.insert(a);
                }
            }
            if set.len() > MAX_KERNEL_ADDRS {
                *kernel_addrs = None;
            }
        });
        c.samples += samples;
        for e in &d.events {
            match &e.event {
                Event::Lost { count } => c.lost = c.lost.saturating_add(*count),
                Event::Throttle => c.throttled += 1,
                Event::Mmap(m) if m.build_id.is_none() && m.filename.starts_with('/') => {
                    self.files_without_build_id.insert(m.filename.clone());
                }
                _ => {}
            }
        }
    }

    /// Write out buffers that are big enough, or all of them when `force` or a second passed.
    pub fn flush<W: io::Write>(
        &mut self,
        w: &mut Writer<W>,
        force: bool,
    ) -> Result<(), hood_format::FormatError> {
        let timed = self.last_flush.elapsed().as_secs() >= 1;
        let cpus: Vec<u32> = self.bufs.keys().copied().collect();
        for cpu in cpus {
            let len = self.bufs.get(&cpu).map_or(0, Vec::len);
            if len <= CPU_PREFIX || !(force || timed || len >= FLUSH_BYTES) {
                continue;
            }
            let mut chunk = std::mem::take(self.bufs.get_mut(&cpu).expect("cpu buffer exists"));
            self.count(cpu, &chunk[CPU_PREFIX..], false);
            if self.samples() > 0 {
                for (tag, data) in std::mem::take(&mut self.until_samples) {
                    w.write_chunk(tag, &data, true)?;
                }
            }
            let written = w.write_chunk(tags::profile::PERF_RECORDS, &chunk, true);
            chunk.truncate(CPU_PREFIX);
            self.bufs.insert(cpu, chunk);
            written?;
        }
        self.flush_raw(w, force || timed)?;
        if force || timed {
            self.last_flush = Instant::now();
            w.flush()?;
        }
        Ok(())
    }

    /// Write out the samples kept raw: u32 CPU, u32 length of the attribute, the attribute
    /// the kernel got, then the records (docs/format.md, `RAW_SAMPLES`).
    fn flush_raw<W: io::Write>(
        &mut self,
        w: &mut Writer<W>,
        all: bool,
    ) -> Result<(), hood_format::FormatError> {
        let Some(raw) = self.raw.as_mut() else {
            return Ok(());
        };
        let mut ready: Vec<(u32, Vec<u8>)> = Vec::new();
        for (&cpu, buf) in raw.bufs.iter_mut() {
            if !buf.is_empty() && (all || buf.len() >= FLUSH_BYTES) {
                ready.push((cpu, std::mem::take(buf)));
            }
        }
        for (cpu, buf) in ready {
            self.count(cpu, &buf, true);
            if self.samples() > 0 {
                for (tag, data) in std::mem::take(&mut self.until_samples) {
                    w.write_chunk(tag, &data, true)?;
                }
            }
            let Some(raw) = self.raw.as_ref() else {
                break;
            };
            let mut chunk = Vec::with_capacity(8 + raw.attr_bytes.len() + buf.len());
            chunk.extend_from_slice(&cpu.to_le_bytes());
            chunk.extend_from_slice(&(raw.attr_bytes.len() as u32).to_le_bytes());
            chunk.extend_from_slice(&raw.attr_bytes);
            chunk.extend_from_slice(&buf);
            w.write_chunk(tags::profile::RAW_SAMPLES, &chunk, true)?;
        }
        Ok(())
    }

    /// Samples and lost samples in the sample chunks of the recording at `path` (whose stored
    /// samples follow `attr`), counted as when they were written: after a write error (a full disk), what the file really holds.
    pub fn counted_in_file(
        path: &std::path::Path,
        attr: &[u8],
        sched_formats: &[String],
    ) -> Result<(u64, u64), hood_format::FormatError> {
        let mut r = hood_format::Reader::open(path)?;
        let mut c = Collector::new(&[], attr);
        if !sched_formats.is_empty() {
            c.set_sched(sched_formats);
        }
        for chunk in r.chunks() {
            let chunk = chunk?;
            if chunk.tag == tags::profile::RAW_SAMPLES {
                if let Some((cpu, attr, records)) = split_raw_samples(&chunk.data) {
                    c.set_raw_fallback(attr, 1, false);
                    c.count(cpu, records, true);
                }
                continue;
            }
            if chunk.tag != tags::profile::PERF_RECORDS {
                continue;
            }
            if let Some((cpu, records)) = chunk.data.split_first_chunk::<4>() {
                c.count(u32::from_le_bytes(*cpu), records, false);
            }
        }
        Ok((c.samples(), c.lost()))
    }

    /// Total samples so far (flushed buffers only).
    pub fn samples(&self) -> u64 {
        self.counts.values().map(|c| c.samples).sum()
    }

    /// Total lost so far.
    pub fn lost(&self) -> u64 {
        self.counts
            .values()
            .fold(0u64, |n, c| n.saturating_add(c.lost))
    }
}

/// A `RAW_SAMPLES` payload's CPU, attribute and records (`None`: too short).
pub fn split_raw_samples(data: &[u8]) -> Option<(u32, &[u8], &[u8])> {
    let (cpu, rest) = data.split_first_chunk::<4>()?;
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let len = u32::from_le_bytes(*len) as usize;
    (len <= rest.len()).then(|| {
        let (attr, records) = rest.split_at(len);
        (u32::from_le_bytes(*cpu), attr, records)
    })
}

/// The records of a ring's unread bytes `a` then `b` (the wrap between them): `a[..whole]`,
/// then `glue` (the record cut by the wrap, joined; empty if none), then `b[rest..]`.
/// Bytes that do not make a whole record (which the kernel never leaves) are left out.
fn split_wrapped(a: &[u8], b: &[u8]) -> (usize, Vec<u8>, usize) {
    let size_at = |bytes: &[u8], at: usize| -> Option<usize> {
        let s = u16::from_le_bytes([*bytes.get(at + 6)?, *bytes.get(at + 7)?]) as usize;
        (s >= 8).then_some(s)
    };
    let mut whole = 0;
    while let Some(size) = size_at(a, whole) {
        if whole + size > a.len() {
            break;
        }
        whole += size;
    }
    let tail = &a[whole..];
    if tail.is_empty() || b.is_empty() {
        return (whole, Vec::new(), 0);
    }
    // The header itself may be cut.
    let mut head = tail.to_vec();
    head.extend(b.iter().take(8usize.saturating_sub(tail.len())));
    let Some(size) = size_at(&head, 0) else {
        return (whole, Vec::new(), b.len());
    };
    let need = size - tail.len().min(size);
    if need > b.len() {
        return (whole, Vec::new(), b.len());
    }
    let mut glue = tail.to_vec();
    glue.extend_from_slice(&b[..need]);
    (whole, glue, need)
}

#[cfg(test)]
mod wrap_tests {
    use super::split_wrapped;

    /// A record of `len` bytes (header size field set) filled with `fill`.
    fn rec(len: u16, fill: u8) -> Vec<u8> {
        let mut r = vec![fill; len as usize];
        r[4..6].copy_from_slice(&0u16.to_le_bytes());
        r[6..8].copy_from_slice(&len.to_le_bytes());
        r
    }

    #[test]
    fn a_record_cut_by_the_wrap_is_joined_wherever_it_is_cut() {
        let recs: Vec<Vec<u8>> = vec![rec(24, 1), rec(40, 2), rec(16, 3), rec(32, 4)];
        let all: Vec<u8> = recs.concat();
        for cut in 0..=all.len() {
            let (a, b) = all.split_at(cut);
            let (whole, glue, rest) = split_wrapped(a, b);
            let mut joined = a[..whole].to_vec();
            joined.extend_from_slice(&glue);
            joined.extend_from_slice(&b[rest..]);
            assert_eq!(joined, all, "cut at {cut}");
        }
    }

    #[test]
    fn bytes_that_make_no_record_are_left_out() {
        // A size field below a header's size, and a record longer than what follows.
        let mut bad = rec(24, 1);
        bad[6..8].copy_from_slice(&4u16.to_le_bytes());
        let (whole, glue, rest) = split_wrapped(&bad, &[]);
        assert_eq!((whole, glue.len(), rest), (0, 0, 0));
        let long = rec(64, 5);
        let (whole, glue, rest) = split_wrapped(&long[..10], &long[10..20]);
        assert_eq!((whole, glue.len(), rest), (0, 0, 10));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_recorder_and_the_rewriter_agree_on_deferred_copy_kinds() {
        assert_eq!(hood_perf::DEFERRED_RETURN, hood_unwind::DEFERRED_RETURN);
        assert_eq!(
            hood_perf::DEFERRED_AT_SWITCH,
            hood_unwind::DEFERRED_AT_SWITCH
        );
        assert_eq!(hood_perf::DEFERRED_WAKER, hood_unwind::DEFERRED_WAKER);
        assert_eq!(hood_perf::DEFERRED_KSTACK, hood_unwind::DEFERRED_KSTACK);
    }
}
