//! Streams raw ring bytes into the recording, one chunk per CPU when its buffer fills or a
//! second has passed, counting samples, lost records and throttling on the way.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io;
use std::time::Instant;

use hood_format::{tags, Writer};
use hood_raw::attr::Attr;
use hood_raw::records::{Decoded, Event, CONTEXT_KERNEL, CONTEXT_MAX, CPUMODE_KERNEL};

use hood_model::profile::CpuCounts;
use hood_unwind::Rewriter;

/// Flush a CPU's buffer once it holds this many bytes.
const FLUSH_BYTES: usize = 1 << 20;
/// Distinct kernel addresses tracked for the recording's kallsyms subset (16 MB at most);
/// past this the whole kallsyms text is kept.
const MAX_KERNEL_ADDRS: usize = 1 << 20;

/// Per-CPU buffers and counters.
pub struct Collector {
    bufs: BTreeMap<u32, Vec<u8>>,
    /// With stack copies: bytes drained this round, rewritten by `end_round`.
    pending: BTreeMap<u32, Vec<u8>>,
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
}

impl Collector {
    /// `attr` is the attribute the stored samples follow (its raw bytes).
    pub fn new(cpus: &[u32], attr: &[u8]) -> Collector {
        Collector {
            bufs: cpus
                .iter()
                .map(|&c| (c, Vec::with_capacity(FLUSH_BYTES * 2)))
                .collect(),
            pending: BTreeMap::new(),
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
        }
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
        // One input per CPU in every round, in the same order: held samples name their ring
        // by its place.
        for &cpu in self.counts.keys() {
            self.pending.entry(cpu).or_default();
        }
        self.rewriter = Some(rewriter);
    }

    /// Switch-outs and wake-ups stored without user stacks: their waits were shorter than
    /// the off-CPU minimum.
    pub fn short_waits(&self) -> u64 {
        self.rewriter.as_ref().map_or(0, |r| r.stats().short_waits)
    }

    /// Store the switch-out samples the rewriter still holds (threads not seen running again
    /// before the end): once, after the last round.
    pub fn release_held(&mut self) {
        self.rewrite_into_buffers(|rw, _, outs| rw.release_all(outs));
    }

    /// Run `f` with the rewriter, the round's input of each CPU and the CPU buffers as its
    /// outputs, in the order of `pending` (one place per CPU, the same in every round).
    fn rewrite_into_buffers(&mut self, f: impl FnOnce(&mut Rewriter, &[&[u8]], &mut [Vec<u8>])) {
        let Some(rw) = self.rewriter.as_mut() else {
            return;
        };
        let cpus: Vec<u32> = self.pending.keys().copied().collect();
        let mut outs: Vec<Vec<u8>> = cpus
            .iter()
            .map(|c| std::mem::take(self.bufs.entry(*c).or_default()))
            .collect();
        let input: Vec<&[u8]> = self.pending.values().map(Vec::as_slice).collect();
        f(rw, &input, &mut outs);
        for (cpu, out) in cpus.into_iter().zip(outs) {
            self.bufs.insert(cpu, out);
        }
    }

    /// The unwinding stage, when samples carry stack copies.
    pub fn rewriter(&self) -> Option<&Rewriter> {
        self.rewriter.as_ref()
    }

    /// Append drained bytes of `cpu`'s ring.
    pub fn push(&mut self, cpu: u32, bytes: &[u8]) -> io::Result<()> {
        let to = match self.rewriter {
            Some(_) => &mut self.pending,
            None => &mut self.bufs,
        };
        to.entry(cpu).or_default().extend_from_slice(bytes);
        Ok(())
    }

    /// After a drain of every ring: unwind the round's stack copies, in time order across
    /// CPUs, into the per-CPU buffers.
    /// The unwinder's warnings go to `log`.
    pub fn end_round(&mut self, log: &mut dyn FnMut(&str)) {
        if self.rewriter.is_none() || self.pending.values().all(Vec::is_empty) {
            return;
        }
        self.rewrite_into_buffers(|rw, input, outs| rw.rewrite(input, outs));
        for p in self.pending.values_mut() {
            p.clear();
        }
        if let Some(rw) = self.rewriter.as_mut() {
            for w in rw.unwinder().take_warnings() {
                log(&w);
            }
        }
    }

    /// Count the records in a buffer that ends on a record boundary.
    fn count(&mut self, cpu: u32, buf: &[u8]) {
        let c = self.counts.entry(cpu).or_default();
        c.bytes += buf.len() as u64;
        let d = &mut self.scratch;
        d.events.clear();
        d.chains.clear();
        d.push_chunk(&self.attr, cpu, buf);
        for e in &d.events {
            let (pid, chain, kernel_ip) = match &e.event {
                Event::Sample {
                    pid,
                    ip,
                    cpumode,
                    chain,
                    ..
                } => {
                    c.samples += 1;
                    (
                        Some(*pid),
                        *chain,
                        (*cpumode == CPUMODE_KERNEL).then_some(*ip),
                    )
                }
                Event::SwitchOut { pid, chain, .. } | Event::Waking { pid, chain, .. } => {
                    self.sched_events += 1;
                    (Some(*pid), *chain, None)
                }
                _ => (None, (0, 0), None),
            };
            if let Some(pid) = pid {
                self.pids.insert(pid);
                if let Some(set) = self.kernel_addrs.as_mut() {
                    if let Some(ip) = kernel_ip {
                        set.insert(ip);
                    }
                    let chain = d.chains.get(chain.0 as usize..chain.1 as usize);
                    let mut in_kernel = false;
                    for &a in chain.unwrap_or(&[]) {
                        if a >= CONTEXT_MAX {
                            in_kernel = a == CONTEXT_KERNEL;
                        } else if in_kernel {
                            set.insert(a);
                        }
                    }
                    if set.len() > MAX_KERNEL_ADDRS {
                        self.kernel_addrs = None;
                    }
                }
            }
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
        let mut chunk = Vec::new();
        for cpu in cpus {
            let len = self.bufs.get(&cpu).map_or(0, Vec::len);
            if len == 0 || !(force || timed || len >= FLUSH_BYTES) {
                continue;
            }
            let buf = std::mem::take(self.bufs.get_mut(&cpu).expect("cpu buffer exists"));
            self.count(cpu, &buf);
            if self.samples() > 0 {
                for (tag, data) in std::mem::take(&mut self.until_samples) {
                    w.write_chunk(tag, &data, true)?;
                }
            }
            chunk.clear();
            chunk.extend_from_slice(&cpu.to_le_bytes());
            chunk.extend_from_slice(&buf);
            let mut buf = buf;
            buf.clear();
            self.bufs.insert(cpu, buf);
            w.write_chunk(tags::profile::PERF_RECORDS, &chunk, true)?;
        }
        if force || timed {
            self.last_flush = Instant::now();
            w.flush()?;
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
            if chunk.tag != tags::profile::PERF_RECORDS {
                continue;
            }
            if let Some((cpu, records)) = chunk.data.split_first_chunk::<4>() {
                c.count(u32::from_le_bytes(*cpu), records);
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
