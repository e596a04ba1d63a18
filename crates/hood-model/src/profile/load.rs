//! Reading a sampled-profile recording into memory: metadata, raw records decoded, side data.

use std::collections::BTreeMap;
use std::path::Path;

use hood_format::{expect_kind, tags, FileKind, Reader};
use hood_raw::attr::Attr;
use hood_raw::records::Decoded;
use hood_raw::replay::StackUnwinder;
use hood_raw::RawError;

use super::copies::{unwind_copies, StackCopies};
use super::meta::{ProcSnapshotChunk, RecordMeta, RecordStats};
use crate::labels::{LabelsChunks, LabelsRecording};
use crate::ModelError;
use hood_raw::records::SchedLayout;

/// Everything a sampled recording holds, decoded but not yet interpreted.
#[derive(Debug, Default)]
pub struct RawRecording {
    /// How it was made.
    pub meta: RecordMeta,
    /// What happened (`None`: the recording was not finalized).
    pub stats: Option<RecordStats>,
    /// Decoded perf records, sorted by time.
    pub decoded: Decoded,
    /// Processes at start.
    pub snapshot: ProcSnapshotChunk,
    /// Build-ids of files named by mmap records without one.
    pub build_ids: BTreeMap<String, hood_raw::BuildId>,
    /// Raw /proc/kallsyms text.
    pub kallsyms: String,
    /// The `[vdso]` image.
    pub vdso: Vec<u8>,
    /// /tmp/perf-PID.map texts.
    pub perf_maps: BTreeMap<u32, String>,
    /// Problems found while reading (cut-off file, missing chunks).
    pub warnings: Vec<String>,
    /// The `--labels` part, when it was asked for ([`RawRecording::load_with_labels`]) and
    /// the recording has one.
    pub labels: Option<LabelsRecording>,
    /// Samples the recorder kept with their raw stack copy (`RAW_SAMPLES`): until
    /// [`RawRecording::unwind_stack_copies`], their user frames are the kernel's
    /// frame-pointer chain.
    pub stack_copies: StackCopies,
}

fn json<T: serde::de::DeserializeOwned>(
    what: &str,
    offset: u64,
    data: &[u8],
) -> Result<T, ModelError> {
    serde_json::from_slice(data).map_err(|e| {
        RawError::Malformed(format!("{what} chunk at byte offset {offset}: {e}")).into()
    })
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

impl RawRecording {
    /// The warning of a recording (hood's or perf.data) whose perf records were not all
    /// decodable.
    pub(crate) fn warn_malformed(&mut self) {
        if self.decoded.malformed > 0 {
            self.warnings.push(format!(
                "{} malformed perf records were skipped",
                self.decoded.malformed
            ));
        }
    }

    /// Read and decode the recording at `path`.
    pub fn load(path: &Path) -> Result<RawRecording, ModelError> {
        let mut kallsyms = String::new();
        let mut rec = Self::load_with(path, &mut |text| kallsyms = text)?;
        rec.kallsyms = kallsyms;
        Ok(rec)
    }

    /// Like [`load`](Self::load), but the kallsyms text is handed to `on_kallsyms` as soon
    /// as it is read (the recorder writes it before the records), so that a caller can
    /// index it on another thread while the records are decoded; `kallsyms` stays empty.
    pub fn load_with(
        path: &Path,
        on_kallsyms: &mut dyn FnMut(String),
    ) -> Result<RawRecording, ModelError> {
        Self::read_with(Reader::open(path)?, on_kallsyms)
    }

    /// Like [`load_with`](Self::load_with), with the `--labels` part too
    /// ([`RawRecording::labels`]), gathered in the same pass over the file.
    pub fn load_with_labels(
        path: &Path,
        on_kallsyms: &mut dyn FnMut(String),
    ) -> Result<RawRecording, ModelError> {
        Self::read_parts(Reader::open(path)?, on_kallsyms, true)
    }

    /// Like [`load_with`](Self::load_with), from an opened reader (a file, or bytes in
    /// memory: tests and fuzzing).
    pub fn read_with(
        reader: Reader,
        on_kallsyms: &mut dyn FnMut(String),
    ) -> Result<RawRecording, ModelError> {
        Self::read_parts(reader, on_kallsyms, false)
    }

    /// One pass over the chunks; the labels chunks are kept when `labels` is set.
    fn read_parts(
        mut reader: Reader,
        on_kallsyms: &mut dyn FnMut(String),
        labels: bool,
    ) -> Result<RawRecording, ModelError> {
        expect_kind(&reader, FileKind::Profile, "hood report")?;
        let path = reader.path().to_owned();
        // The whole kallsyms text (5 MB, 1 MB compressed) stays in the file until it is known
        // to be needed: recordings that end with the lines their samples use never read it.
        reader.defer(tags::profile::KALLSYMS);
        if labels {
            // The labels pages (millions of events in a packet flood) stay in the file until
            // the labels report streams them.
            reader.defer(tags::profile::LABELS_PAGES);
        }
        let mut deferred_kallsyms = None;
        let mut have_used = false;
        let mut rec = RawRecording::default();
        let mut attr: Option<Attr> = None;
        let mut have_meta = false;
        let mut pending: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut labels_chunks = labels.then(LabelsChunks::default);
        // One payload buffer for the whole file; large payloads kept for later are moved out.
        let mut data = Vec::new();
        let mut reader = reader.prefetch();
        while let Some(chunk) = reader.next_chunk_into(&mut data)? {
            let off = chunk.offset;
            match chunk.tag {
                tags::profile::META => {
                    rec.meta = json("metadata", off, &data)?;
                    have_meta = true;
                    if let Some(o) = &rec.meta.off_cpu {
                        rec.decoded.sched = SchedLayout::from_formats(&o.formats);
                        if rec.decoded.sched.is_none() {
                            rec.warnings.push(format!(
                                "{}: the off-CPU tracepoints' formats lack a field hood reads; \
                                 switches and wake-ups are shown as samples",
                                path.display()
                            ));
                        }
                    }
                }
                tags::profile::PERF_ATTR => attr = Some(Attr::parse(&data)?),
                tags::profile::PERF_RECORDS => {
                    if data.len() < 4 {
                        return Err(RawError::Malformed(format!(
                            "record chunk at byte offset {off} is too short"
                        ))
                        .into());
                    }
                    let cpu = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
                    match &attr {
                        Some(a) => rec.decoded.push_chunk(a, cpu, &data[4..]),
                        None => pending.push((cpu, std::mem::take(&mut data))),
                    }
                }
                tags::profile::RAW_SAMPLES => {
                    let bad = || {
                        RawError::Malformed(format!(
                            "raw sample chunk at byte offset {off} is too short"
                        ))
                        .into()
                    };
                    let (cpu, rest) = data.split_first_chunk::<4>().ok_or_else(bad)?;
                    let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
                    let len = u32::from_le_bytes(*len) as usize;
                    if len > rest.len() {
                        return Err(bad());
                    }
                    let (a, records) = rest.split_at(len);
                    let a = Attr::parse(a)?;
                    let cpu = u32::from_le_bytes(*cpu);
                    rec.stack_copies
                        .push_chunk(&mut rec.decoded, &a, cpu, records);
                }
                tags::profile::PROC_SNAPSHOT => {
                    // A second chunk holds processes that started while the first was taken.
                    let more: ProcSnapshotChunk = json("process snapshot", off, &data)?;
                    rec.snapshot.processes.extend(more.processes);
                    rec.snapshot.build_ids.extend(more.build_ids);
                }
                tags::profile::BUILD_IDS => {
                    rec.build_ids = hood_raw::build_id::from_hex_map(json("build-id", off, &data)?)
                }
                tags::profile::KALLSYMS => match chunk.deferred {
                    // Read once the whole file has been (and only if no KALLSYMS_USED came).
                    Some(d) => deferred_kallsyms = Some(d),
                    None => on_kallsyms(text(std::mem::take(&mut data))),
                },
                tags::profile::KALLSYMS_USED => {
                    have_used = true;
                    deferred_kallsyms = None;
                    on_kallsyms(text(std::mem::take(&mut data)));
                }
                tags::profile::VDSO => rec.vdso = std::mem::take(&mut data),
                tags::profile::PERF_MAP if data.len() >= 4 => {
                    let pid = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
                    rec.perf_maps
                        .insert(pid, String::from_utf8_lossy(&data[4..]).into_owned());
                }
                tags::profile::STATS => rec.stats = Some(json("statistics", off, &data)?),
                tag => {
                    if let Some(l) = labels_chunks.as_mut() {
                        l.take(tag, off, &data, chunk.deferred)?;
                    }
                }
            }
        }
        rec.warnings.extend(reader.warnings().iter().cloned());
        if let (Some(d), false) = (deferred_kallsyms, have_used) {
            if let Some(bytes) = reader.read_deferred(&d)? {
                on_kallsyms(text(bytes));
            }
        }
        rec.labels = labels_chunks.and_then(|l| l.finish(reader.into_reader()));
        let Some(attr) = attr else {
            return Err(RawError::Malformed(format!(
                "{}: no event description chunk; the recording holds no samples (was it cut before recording started?)",
                path.display()
            )).into());
        };
        for (cpu, data) in pending {
            rec.decoded.push_chunk(&attr, cpu, &data[4..]);
        }
        if !have_meta {
            rec.warnings
                .push(format!("{}: metadata chunk missing", path.display()));
        }
        if rec.stats.is_none() {
            rec.warnings.push(format!(
                "{}: recording was not finalized (the recorder was killed or the disk filled); counts cover what was written",
                path.display()
            ));
        }
        rec.warn_malformed();
        if !rec.stack_copies.is_empty() {
            // The copies name their samples by place: follow the sort (stable, as is
            // `Decoded::sort`).
            let events = &rec.decoded.events;
            let mut order: Vec<usize> = (0..events.len()).collect();
            order.sort_by_key(|&i| events[i].time);
            rec.stack_copies.reorder(&order);
        }
        rec.decoded.sort();
        Ok(rec)
    }

    /// Unwind the samples the recorder kept with their raw stack copy (its unwinding fell
    /// behind) with `u`, the unwinder the recorder uses, told the mappings of the processes of
    /// the start-up snapshot; the side-band records are replayed to it in time order. Returns
    /// how many were unwound.
    pub fn unwind_stack_copies(&mut self, u: &mut dyn StackUnwinder) -> usize {
        let copies = std::mem::take(&mut self.stack_copies);
        if copies.is_empty() {
            return 0;
        }
        unwind_copies(&mut self.decoded, &copies, u);
        copies.len()
    }
}

#[cfg(test)]
mod tests {
    /// A chunk that does not decode says so in the words it always did.
    #[test]
    fn an_undecodable_chunk_is_a_malformed_recording() {
        let e = super::json::<u32>("META", 64, b"{").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("malformed recording: META chunk at byte offset 64: "),
            "{e}"
        );
    }
}
