//! Import of recordings made by `perf record` (perf.data) into hood's [`RawRecording`], so
//! every hood report works on existing perf files.
//!
//! The container (header, attributes, features; the seekable and the streamed layout) is
//! read by [`hood_raw::perfdata`]; each record is decoded by the same decoder as hood's own
//! recordings ([`hood_raw::records`]). The metadata that hood's recorder would have written
//! (event, frequency, host, CPUs, per-CPU counts) is taken from perf's header features.
//! perf.data carries no kallsyms, `[vdso]` image or /proc snapshot: the caller may fill
//! `kallsyms` and `vdso` from the running system when it is the recording's
//! ([`PerfImport::kernel_build_id`] tells which kernel that was).

use crate::profile::RecordMode;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use hood_raw::perfdata::PerfFile;
use hood_raw::records::Event;
use hood_raw::replay::StackUnwinder;
use hood_raw::RawError;

use crate::profile::copies::{unwind_copies, StackCopies};

use crate::profile::{CpuCounts, RawRecording, RecordMeta, RecordStats};
use crate::ModelError;

/// The most CPUs a perf.data header is believed to name (Linux's largest `NR_CPUS`); the
/// count comes from the file and sizes a list.
const MAX_CPUS: u32 = 8192;

/// Whether the file at `path` starts with perf.data's magic (false if it cannot be read).
pub fn is_perf_data(path: &Path) -> bool {
    let mut head = [0u8; 8];
    hood_format::untrusted::open(path, hood_format::untrusted::Policy::NAMED)
        .is_ok_and(|mut f| f.read_exact(&mut head).is_ok())
        && hood_raw::perfdata::has_perf_data_magic(&head)
}

/// A perf.data file read into hood's raw form.
#[derive(Debug)]
pub struct PerfImport {
    /// The recording, ready for [`crate::profile::build_profile`].
    pub raw: RawRecording,
    /// Build-id of the kernel the file was recorded on, from its build-id table.
    pub kernel_build_id: Option<hood_raw::BuildId>,
    /// Records of types hood does not use (context switches, aux data, ...).
    pub skipped: u64,
}

fn perr(path: &Path, e: impl std::fmt::Display) -> ModelError {
    RawError::Malformed(format!(
        "{}: not a readable perf.data file: {e}; check it with `perf report -i {}`",
        path.display(),
        path.display()
    ))
    .into()
}

/// Read the perf.data file at `path`.
///
/// A file cut short (perf killed, disk full) gives what could be read plus a warning; a file
/// that is not perf.data, or whose header is damaged, gives an error naming the file.
///
/// Samples recorded with `--call-graph dwarf` are unwound with `unwinder` when one is given;
/// without one their user stacks hold only the sampled instruction (and the report says so).
pub fn load(
    path: &Path,
    unwinder: Option<&mut dyn StackUnwinder>,
) -> Result<PerfImport, ModelError> {
    // A regular file (never a FIFO or a device), read as long as it is.
    let mut bytes = Vec::new();
    hood_format::untrusted::open(path, hood_format::untrusted::Policy::NAMED)?
        .read_to_end(&mut bytes)
        .map_err(|e| perr(path, e))?;
    load_bytes(path, &bytes, unwinder)
}

/// [`load`] on the bytes of a perf.data file; `path` only names it in messages.
pub fn load_bytes(
    path: &Path,
    bytes: &[u8],
    unwinder: Option<&mut dyn StackUnwinder>,
) -> Result<PerfImport, ModelError> {
    let mut pf = PerfFile::parse(bytes).map_err(|e| perr(path, e))?;
    let mut raw = RawRecording::default();
    if let Some(note) = &pf.repaired {
        raw.warnings.push(format!("{}: {note}", path.display()));
    }

    let mut per_cpu: BTreeMap<u32, CpuCounts> = BTreeMap::new();
    let mut stacks = StackCopies::default();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let mut unknown_event = 0u64;
    let decoded = &mut raw.decoded;
    let walked = pf.for_each_record(|pf, rec| {
        let Some(ev) = rec.event.and_then(|i| pf.events.get(i)) else {
            unknown_event += 1;
            return;
        };
        let attr = &ev.attr;
        let at = decoded.events.len();
        if decoded
            .push_record(attr, None, rec.typ, rec.misc, rec.body)
            .is_none()
        {
            decoded.malformed += 1;
            return;
        }
        let Some(pushed) = decoded.events.get(at) else {
            return; // a record type hood does not use
        };
        match &pushed.event {
            Event::Sample { cpu, .. } => {
                per_cpu.entry(*cpu).or_default().samples += 1;
                first = first.min(pushed.time);
                last = last.max(pushed.time);
                stacks.keep(at, attr, rec.body);
            }
            Event::Lost { count } => {
                let c = per_cpu.entry(pushed.ring_cpu).or_default();
                c.lost = c.lost.saturating_add(*count);
            }
            _ => {}
        }
    });

    let events = &pf.events;
    let main = events.iter().position(|e| e.samples()).unwrap_or(0);
    let features = &pf.features;
    let mut meta = RecordMeta {
        hood_version: format!(
            "imported from perf.data (perf {})",
            features.perf_version.as_deref().unwrap_or("?")
        ),
        mode: RecordMode::PerfRecord,
        command: features.cmdline.clone(),
        hostname: features.hostname.clone().unwrap_or_default(),
        kernel_release: features.os_release.clone().unwrap_or_default(),
        ..RecordMeta::default()
    };
    if let Some(e) = events.get(main) {
        meta.event = e.display_name();
        meta.requested_event = meta.event.clone();
        meta.freq_hz = if e.attr.freq() {
            e.attr.sample_period_or_freq
        } else {
            0
        };
        meta.callchain = e.attr.sample_type & hood_raw::attr::sample::CALLCHAIN != 0;
    }
    let sampling: Vec<String> = events
        .iter()
        .filter(|e| e.samples())
        .map(|e| e.display_name())
        .collect();
    if sampling.len() > 1 {
        meta.notes.push(format!(
            "the file holds {} events ({}); samples of all are counted together",
            sampling.len(),
            sampling.join(", ")
        ));
    }

    let mut kernel_build_id = None;
    for (name, id, _mode) in &features.build_ids {
        if name.starts_with("[kernel.kallsyms]") {
            kernel_build_id = Some(*id);
        }
        raw.build_ids.insert(name.clone(), *id);
    }
    meta.kernel_build_id = kernel_build_id;

    if let Some((at, left)) = walked.damaged_at {
        raw.warnings.push(format!(
            "{}: a damaged record at byte {at} of the data section; the {left} bytes from there on were not read (the file was probably cut short; counts cover what was read)",
            path.display()
        ));
    }
    if walked.compressed > 0 {
        raw.warnings.push(format!(
            "{}: {} batches of records are zstd-compressed (`perf record -z`), which hood does not read; their samples are missing — record without -z",
            path.display(),
            walked.compressed
        ));
    }
    if unknown_event > 0 {
        raw.warnings.push(format!(
            "{}: {unknown_event} records name an event id the file does not describe; they were skipped",
            path.display()
        ));
    }
    raw.warn_malformed();
    let skipped = raw.decoded.skipped + walked.bookkeeping;
    if !stacks.samples.is_empty() {
        meta.call_graph = format!("dwarf,{}", stacks.max_size);
        match unwinder {
            Some(u) => unwind_copies(&mut raw.decoded, &stacks, u),
            None => raw.warnings.push(format!(
                "{} samples carry user stack copies (perf --call-graph dwarf) that were not unwound",
                stacks.samples.len()
            )),
        }
    }
    raw.decoded.sort();
    if first <= last {
        meta.start_monotonic_ns = first;
    }
    meta.cpus = per_cpu.keys().copied().collect();
    // `perf record -- CMD` samples without PERF_SAMPLE_CPU: every sample reads as CPU 0,
    // though the command's threads ran on any CPU of the machine. Its CPUs are then those
    // perf found online (the NRCPUS header), as a hood recording of a command has a ring on
    // each.
    let with_cpu = events
        .iter()
        .filter(|e| e.samples())
        .all(|e| e.attr.sample_type & hood_raw::attr::sample::CPU != 0);
    if !with_cpu {
        if let Some(n) = features.nr_cpus_online.filter(|&n| n > 0 && n <= MAX_CPUS) {
            meta.cpus = (0..n).collect();
        }
    }
    meta.notes.push(format!(
        "imported from {}; timestamps are perf's clock, not CLOCK_MONOTONIC",
        path.display()
    ));
    raw.stats = Some(RecordStats {
        end_monotonic_ns: if first <= last { last } else { 0 },
        per_cpu,
        stop_reason: "perf record".into(),
        ..RecordStats::default()
    });
    raw.meta = meta;
    Ok(PerfImport {
        raw,
        kernel_build_id,
        skipped,
    })
}
