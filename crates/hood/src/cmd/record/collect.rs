//! Streams raw ring bytes into the recording, one chunk per CPU when its buffer fills or a
//! second has passed, counting samples, lost records and throttling on the way.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::time::Instant;

use hood_format::{tags, Writer};
use hood_model::profile::records::{kind, MISC_MMAP_BUILD_ID};
use hood_model::profile::CpuCounts;
use hood_unwind::Rewriter;

/// Flush a CPU's buffer once it holds this many bytes.
const FLUSH_BYTES: usize = 1 << 20;

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
    pid_offset: Option<usize>,
}

impl Collector {
    /// `sample_type` tells where the pid sits in a sample record.
    pub fn new(cpus: &[u32], sample_type: u64) -> Collector {
        use hood_model::profile::attr::sample;
        let pid_offset = (sample_type & sample::TID != 0).then(|| {
            8 + 8 * usize::from(sample_type & sample::IDENTIFIER != 0)
                + 8 * usize::from(sample_type & sample::IP != 0)
        });
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
            pid_offset,
        }
    }

    /// Unwind stack copies with `rewriter` before storing samples.
    pub fn set_rewriter(&mut self, rewriter: Rewriter) {
        self.rewriter = Some(rewriter);
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
    pub fn end_round(&mut self) {
        let Some(rw) = self.rewriter.as_mut() else {
            return;
        };
        if self.pending.values().all(Vec::is_empty) {
            return;
        }
        let cpus: Vec<u32> = self.pending.keys().copied().collect();
        let mut outs: Vec<Vec<u8>> = cpus
            .iter()
            .map(|c| std::mem::take(self.bufs.entry(*c).or_default()))
            .collect();
        {
            let input: Vec<&[u8]> = self.pending.values().map(Vec::as_slice).collect();
            rw.rewrite(&input, &mut outs);
        }
        for (cpu, out) in cpus.into_iter().zip(outs) {
            self.bufs.insert(cpu, out);
        }
        for p in self.pending.values_mut() {
            p.clear();
        }
        for w in rw.unwinder().take_warnings() {
            eprintln!("hood: {w}");
        }
    }

    /// Count the records in a buffer that ends on a record boundary.
    fn count(&mut self, cpu: u32, buf: &[u8]) {
        let c = self.counts.entry(cpu).or_default();
        c.bytes += buf.len() as u64;
        let mut at = 0;
        while at + 8 <= buf.len() {
            let typ = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
            let misc = u16::from_le_bytes([buf[at + 4], buf[at + 5]]);
            let size = u16::from_le_bytes([buf[at + 6], buf[at + 7]]) as usize;
            if size < 8 || at + size > buf.len() {
                break;
            }
            let rec = &buf[at..at + size];
            let u64_at = |o: usize| {
                rec.get(o..o + 8)
                    .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            };
            match typ {
                kind::SAMPLE => {
                    c.samples += 1;
                    if let Some(o) = self.pid_offset {
                        if let Some(b) = rec.get(o..o + 4) {
                            self.pids
                                .insert(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])));
                        }
                    }
                }
                kind::LOST => c.lost += u64_at(16),
                kind::LOST_SAMPLES => c.lost += u64_at(8),
                kind::THROTTLE => c.throttled += 1,
                kind::MMAP | kind::MMAP2 => {
                    let has_id = typ == kind::MMAP2 && misc & MISC_MMAP_BUILD_ID != 0;
                    let name_at = if typ == kind::MMAP2 { 8 + 64 } else { 8 + 32 };
                    if !has_id {
                        if let Some(name) = rec.get(name_at..) {
                            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                            if name.first() == Some(&b'/') {
                                self.files_without_build_id
                                    .insert(String::from_utf8_lossy(&name[..end]).into_owned());
                            }
                        }
                    }
                }
                _ => {}
            }
            at += size;
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

    /// Samples and lost samples in the sample chunks of the recording at `path`, counted as
    /// when they were written: after a write error (a full disk), what the file really holds.
    pub fn counted_in_file(
        path: &std::path::Path,
        sample_type: u64,
    ) -> Result<(u64, u64), hood_format::FormatError> {
        let mut r = hood_format::Reader::open(path)?;
        let mut c = Collector::new(&[], sample_type);
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
        self.counts.values().map(|c| c.lost).sum()
    }
}
