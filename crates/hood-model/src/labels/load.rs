//! Reading the `--labels` chunks of a recording and charging its samples.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::path::Path;

use hood_format::{tags, Deferred, Reader};
use hood_raw::RawError;

use super::attribute::{Attribution, Attributor};
use super::events::{decode_page_into, DecodeCounts, Decoder, Event};
use super::{KernelCounts, LabelsMeta, LabelsStats};
use crate::profile::Profile;
use crate::ModelError;

/// The labels part of a recording. Its pages, which grow with the events traced (a packet
/// flood writes millions), stay in the file until [`analyze`](Self::analyze) streams them.
#[derive(Debug, Default)]
pub struct LabelsRecording {
    /// How the events were traced.
    pub meta: LabelsMeta,
    /// The kernel's counters at stop (`None`: the recording was not finalized).
    pub stats: Option<LabelsStats>,
    /// Where each `LABELS_PAGES` chunk is, in file order.
    pages: Vec<Deferred>,
    /// The file, to read them from.
    reader: Option<Reader>,
}

/// Events received versus the kernel's counts, per CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuEventCheck {
    /// Events decoded from the stored pages.
    pub received: u64,
    /// The kernel's counters (zero when not finalized).
    pub kernel: KernelCounts,
}

impl CpuEventCheck {
    /// Events the kernel produced that are not in the file.
    pub fn shortfall(&self) -> u64 {
        self.kernel.written().saturating_sub(self.received)
    }
}

/// A profile's samples charged to the processes they served.
#[derive(Debug, Default)]
pub struct Labeled {
    /// One charge per `Profile::samples` entry.
    pub attribution: Attribution,
    /// Per-CPU completeness check.
    pub per_cpu: BTreeMap<u32, CpuEventCheck>,
    /// Decoding totals.
    pub decode: DecodeCounts,
    /// Events decoded.
    pub events: u64,
    /// Events asked for that the recording kernel lacked.
    pub missing_events: Vec<String>,
    /// Whether the kernel's counts were available.
    pub finalized: bool,
    /// Cost control in effect (`events_per_s` 0: none).
    pub budget: super::Budget,
}

impl Labeled {
    /// Total events the kernel produced but the file lacks.
    pub fn shortfall(&self) -> u64 {
        self.per_cpu.values().map(CpuEventCheck::shortfall).sum()
    }
}

fn json<T: serde::de::DeserializeOwned>(
    what: &str,
    off: u64,
    data: &[u8],
) -> Result<T, ModelError> {
    serde_json::from_slice(data)
        .map_err(|e| RawError::Malformed(format!("{what} chunk at byte offset {off}: {e}")).into())
}

/// The labels chunks of a recording, gathered while its chunks are read (by
/// [`LabelsRecording::read`], or in the profile's own pass over the file). The reader must
/// leave the pages in the file (`reader.defer(tags::profile::LABELS_PAGES)`).
#[derive(Debug, Default)]
pub struct LabelsChunks {
    rec: LabelsRecording,
    have_meta: bool,
}

impl LabelsChunks {
    /// Keep chunk `tag` (at byte offset `off`) if it is a labels chunk; others are ignored.
    /// `deferred`: where a payload left in the file is.
    pub fn take(
        &mut self,
        tag: u32,
        off: u64,
        data: &[u8],
        deferred: Option<Deferred>,
    ) -> Result<(), ModelError> {
        match tag {
            tags::profile::LABELS_META => {
                self.rec.meta = json("labels metadata", off, data)?;
                self.have_meta = true;
            }
            tags::profile::LABELS_PAGES => {
                if let Some(d) = deferred {
                    self.rec.pages.push(d);
                }
            }
            tags::profile::LABELS_STATS => {
                self.rec.stats = Some(json("labels statistics", off, data)?)
            }
            _ => {}
        }
        Ok(())
    }

    /// The labels part, reading its pages from `reader` when analyzed; `None` when the
    /// recording has none (recorded without `--labels`).
    pub fn finish(mut self, reader: Option<Reader>) -> Option<LabelsRecording> {
        self.rec.reader = reader;
        self.have_meta.then_some(self.rec)
    }
}

/// One CPU's events, page by page from its chunks in file order: one chunk in memory.
struct CpuEvents {
    cpu: u32,
    chunks: VecDeque<Deferred>,
    data: Vec<u8>,
    at: usize,
    /// The events of the page being read, in time order, and the next one's index.
    events: Vec<Event>,
    next_event: usize,
    /// The event this stream has in the merge's heap.
    head: Option<Event>,
}

impl CpuEvents {
    /// The next event of this CPU, reading pages and chunks as needed.
    fn next(
        &mut self,
        reader: &mut Reader,
        dec: &Decoder,
        page_size: usize,
        counts: &mut DecodeCounts,
    ) -> Result<Option<Event>, ModelError> {
        while self.next_event >= self.events.len() {
            if self.at >= self.data.len() {
                let Some(d) = self.chunks.pop_front() else {
                    return Ok(None);
                };
                self.data = reader.read_deferred(&d)?;
                self.at = 4.min(self.data.len());
            }
            let end = self.at.saturating_add(page_size).min(self.data.len());
            self.events.clear();
            self.next_event = 0;
            decode_page_into(
                dec,
                self.cpu,
                &self.data[self.at..end],
                &mut self.events,
                counts,
            );
            self.at = end;
            self.events.sort_by_key(|e| e.time);
        }
        let e = self.events[self.next_event];
        self.next_event += 1;
        Ok(Some(e))
    }
}

impl LabelsRecording {
    /// Read the labels chunks of the recording at `path`; `Ok(None)` when it has none (it was
    /// recorded without `--labels`).
    pub fn load(path: &Path) -> Result<Option<LabelsRecording>, ModelError> {
        Self::read(Reader::open(path)?)
    }

    /// [`load`](Self::load) from an opened reader (a file, or bytes in memory: fuzzing).
    pub fn read(mut reader: Reader) -> Result<Option<LabelsRecording>, ModelError> {
        reader.defer(tags::profile::LABELS_PAGES);
        let mut chunks = LabelsChunks::default();
        let mut data = Vec::new();
        while let Some(c) = reader.next_chunk_into(&mut data)? {
            chunks.take(c.tag, c.offset, &data, c.deferred)?;
        }
        Ok(chunks.finish(Some(reader)))
    }

    /// Decode the events and charge `prof`'s samples. The events are streamed in time order
    /// (each CPU's pages read a chunk at a time and merged), so what this holds is bounded by
    /// the samples and the CPUs, not by the events. Errors: a page chunk that cannot be read
    /// again from the file.
    pub fn analyze(&mut self, prof: &Profile) -> Result<Labeled, ModelError> {
        let dec = Decoder::new(&self.meta);
        let ps = self.meta.page_size.max(1);
        let mut decode = DecodeCounts::default();
        // Which CPU each chunk holds (its first four bytes, the rest left compressed: each
        // chunk is decompressed whole once, when streamed), then each CPU's chunks in order.
        let mut cpus: BTreeMap<u32, CpuEvents> = BTreeMap::new();
        if let Some(reader) = self.reader.as_mut() {
            for d in &self.pages {
                let data = reader.read_deferred_prefix(d, 4)?;
                let Some(head) = data.get(..4) else {
                    continue;
                };
                let cpu = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
                cpus.entry(cpu)
                    .or_insert_with(|| CpuEvents {
                        cpu,
                        chunks: VecDeque::new(),
                        data: Vec::new(),
                        at: 0,
                        events: Vec::new(),
                        next_event: 0,
                        head: None,
                    })
                    .chunks
                    .push_back(*d);
            }
        }
        let mut kthreads: HashSet<u32> = self.meta.kthreads.iter().copied().collect();
        if let Some(s) = &self.stats {
            kthreads.extend(s.kthreads.iter().copied());
        }
        let off: &[(u64, u64)] = self.stats.as_ref().map_or(&[], |s| &s.budget.off);
        let samples = &prof.samples;
        let mut by_time: Vec<u32> = (0..samples.len() as u32).collect();
        by_time.sort_by_key(|&i| samples[i as usize].time);
        let mut next_sample = by_time.into_iter().peekable();
        let mut att = Attributor::new(samples, &kthreads, off);
        let mut events = 0u64;
        let mut streams: Vec<CpuEvents> = cpus.into_values().collect();
        // Each CPU's next event, smallest (time, cpu) first: the order of a stable sort of
        // all events by (time, cpu). The heap holds only each stream's key; its event waits
        // in the stream, and the top is replaced in place (one sift) when its stream goes on.
        let mut heads = BinaryHeap::new();
        if let Some(reader) = self.reader.as_mut() {
            for (k, st) in streams.iter_mut().enumerate() {
                if let Some(e) = st.next(reader, &dec, ps, &mut decode)? {
                    heads.push(Reverse((e.time, e.cpu, k)));
                    st.head = Some(e);
                }
            }
            while let Some(mut top) = heads.peek_mut() {
                let Reverse((time, _, k)) = *top;
                let st = &mut streams[k];
                let Some(e) = st.head.take() else {
                    std::collections::binary_heap::PeekMut::pop(top);
                    continue;
                };
                while let Some(i) = next_sample.next_if(|&i| samples[i as usize].time < time) {
                    att.sample(i as usize);
                }
                att.event(&e);
                events += 1;
                match st.next(reader, &dec, ps, &mut decode)? {
                    Some(n) => {
                        *top = Reverse((n.time, n.cpu, k));
                        st.head = Some(n);
                    }
                    None => {
                        std::collections::binary_heap::PeekMut::pop(top);
                    }
                }
            }
        }
        for i in next_sample {
            att.sample(i as usize);
        }
        let mut attribution: Attribution = att.finish();
        // Events name threads; charge their processes.
        let tgid: HashMap<u32, u32> = prof
            .processes
            .iter()
            .flat_map(|p| p.threads.iter().map(move |t| (t.tid, p.pid)))
            .collect();
        for c in &mut attribution.charges {
            if let super::Charge::Async(pid, k) = *c {
                if let Some(&p) = tgid.get(&pid) {
                    *c = super::Charge::Async(p, k);
                }
            }
        }
        let mut per_cpu: BTreeMap<u32, CpuEventCheck> = BTreeMap::new();
        for (&cpu, &n) in &decode.received {
            per_cpu.entry(cpu).or_default().received = n;
        }
        if let Some(s) = &self.stats {
            for (&cpu, text) in &s.cpu_stats {
                per_cpu.entry(cpu).or_default().kernel = KernelCounts::parse(text);
            }
        }
        Ok(Labeled {
            attribution,
            per_cpu,
            events,
            decode,
            missing_events: self.meta.missing.clone(),
            finalized: self.stats.is_some(),
            budget: self
                .stats
                .as_ref()
                .map(|s| s.budget.clone())
                .unwrap_or_default(),
        })
    }
}
