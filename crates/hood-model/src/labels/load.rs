//! Reading the `--labels` chunks of a recording and charging its samples.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use hood_format::{tags, Reader};

use super::attribute::{attribute, Attribution};
use super::events::{decode_all, DecodeCounts, Decoder};
use super::{KernelCounts, LabelsMeta, LabelsStats};
use crate::profile::Profile;
use crate::ModelError;

/// The labels part of a recording, raw.
#[derive(Debug, Default)]
pub struct LabelsRecording {
    /// How the events were traced.
    pub meta: LabelsMeta,
    /// The kernel's counters at stop (`None`: the recording was not finalized).
    pub stats: Option<LabelsStats>,
    /// Raw pages by CPU, in the order read.
    pub pages: Vec<(u32, Vec<u8>)>,
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
        .map_err(|e| ModelError::Malformed(format!("{what} chunk at byte offset {off}: {e}")))
}

/// The labels chunks of a recording, gathered while its chunks are read (by
/// [`LabelsRecording::read`], or in the profile's own pass over the file).
#[derive(Debug, Default)]
pub struct LabelsChunks {
    rec: LabelsRecording,
    have_meta: bool,
}

impl LabelsChunks {
    /// Keep chunk `tag` (at byte offset `off`) if it is a labels chunk; others are ignored.
    pub fn take(&mut self, tag: u32, off: u64, data: &[u8]) -> Result<(), ModelError> {
        match tag {
            tags::profile::LABELS_META => {
                self.rec.meta = json("labels metadata", off, data)?;
                self.have_meta = true;
            }
            tags::profile::LABELS_PAGES if data.len() >= 4 => {
                let cpu = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
                self.rec.pages.push((cpu, data[4..].to_vec()));
            }
            tags::profile::LABELS_STATS => {
                self.rec.stats = Some(json("labels statistics", off, data)?)
            }
            _ => {}
        }
        Ok(())
    }

    /// The labels part; `None` when the recording has none (recorded without `--labels`).
    pub fn finish(self) -> Option<LabelsRecording> {
        self.have_meta.then_some(self.rec)
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
        let mut chunks = LabelsChunks::default();
        for chunk in reader.chunks() {
            let chunk = chunk?;
            chunks.take(chunk.tag, chunk.offset, &chunk.data)?;
        }
        Ok(chunks.finish())
    }

    /// Decode the events and charge `prof`'s samples.
    pub fn analyze(&self, prof: &Profile) -> Labeled {
        let dec = Decoder::new(&self.meta);
        let ps = self.meta.page_size.max(1);
        let pages = self
            .pages
            .iter()
            .flat_map(|(cpu, data)| data.chunks(ps).map(move |p| (*cpu, p)));
        let (events, decode) = decode_all(&dec, pages);
        let mut kthreads: HashSet<u32> = self.meta.kthreads.iter().copied().collect();
        if let Some(s) = &self.stats {
            kthreads.extend(s.kthreads.iter().copied());
        }
        let off: &[(u64, u64)] = self.stats.as_ref().map_or(&[], |s| &s.budget.off);
        let mut attribution = attribute(&events, &prof.samples, &kthreads, off);
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
        Labeled {
            attribution,
            per_cpu,
            events: events.len() as u64,
            decode,
            missing_events: self.meta.missing.clone(),
            finalized: self.stats.is_some(),
            budget: self
                .stats
                .as_ref()
                .map(|s| s.budget.clone())
                .unwrap_or_default(),
        }
    }
}
