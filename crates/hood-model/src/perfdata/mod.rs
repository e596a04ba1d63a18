//! Import of recordings made by `perf record` (perf.data) into hood's [`RawRecording`], so
//! every hood report works on existing perf files.
//!
//! The records are parsed by the linux-perf-data crate and converted into hood's decoded
//! events ([`crate::profile::records::Event`]); the metadata that hood's recorder would have
//! written (event, frequency, host, CPUs, per-CPU counts) is taken from perf's header
//! features. perf.data carries no kallsyms, `[vdso]` image or /proc snapshot: the caller may
//! fill `kallsyms` and `vdso` from the running system when it is the recording's
//! ([`PerfImport::kernel_build_id`] tells which kernel that was).

mod check;
mod convert;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Cursor, Read};
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::{
    PerfEventType, SamplingPolicy, SoftwareCounterType,
};
use linux_perf_data::{AttributeDescription, PerfFileReader, PerfFileRecord};

use crate::profile::maps::hex_encode;
use crate::profile::{CpuCounts, RawRecording, RecordMeta, RecordStats};
use crate::ModelError;

pub use convert::{cpumode_code, Pushed, StackCopies};

use crate::profile::records::{Event, Mapping, Truncation, CONTEXT_USER};

/// Unwinds user stack copies while the records are replayed in time order (implemented
/// outside the model, by hood-unwind, so the model stays pure).
pub trait StackUnwinder {
    /// A process mapped executable code.
    fn mmap(&mut self, m: &Mapping);
    /// A process called exec.
    fn exec(&mut self, pid: u32);
    /// A new process forked from `ppid`.
    fn fork(&mut self, ppid: u32, pid: u32);
    /// A process exited.
    fn exit(&mut self, pid: u32);
    /// Unwind a sample of `pid` from `regs` (ip, sp, bp) over `stack`, appending the frames
    /// to `out`; returns why the chain stops early, if it does.
    fn unwind(
        &mut self,
        pid: u32,
        regs: [u64; 3],
        stack: &[u8],
        out: &mut Vec<u64>,
    ) -> Option<Truncation>;
}

/// Tell `u` what a side-band event changes in a process's mappings (other events: nothing).
pub fn follow_event(u: &mut dyn StackUnwinder, ev: &Event) {
    match ev {
        Event::Mmap(m) => u.mmap(m),
        Event::Comm {
            pid, exec: true, ..
        } => u.exec(*pid),
        Event::Fork { pid, ppid, .. } => u.fork(*ppid, *pid),
        Event::Exit { pid, tid } if pid == tid => u.exit(*pid),
        _ => {}
    }
}

/// Replace the user part of every sample that carries a stack copy with the unwound chain.
fn unwind_copies(raw: &mut RawRecording, stacks: &StackCopies, u: &mut dyn StackUnwinder) {
    let events = &raw.decoded.events;
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| (events[i].time, i));
    let mut copy_of: rustc_hash::FxHashMap<usize, usize> = rustc_hash::FxHashMap::default();
    for (n, (i, ..)) in stacks.samples.iter().enumerate() {
        copy_of.insert(*i, n);
    }
    let mut chain = Vec::new();
    let mut updates = Vec::new();
    for i in order {
        match &raw.decoded.events[i].event {
            Event::Sample { pid, chain: c, .. } => {
                let Some(&n) = copy_of.get(&i) else {
                    continue;
                };
                let (_, regs, range) = &stacks.samples[n];
                chain.clear();
                let old = raw
                    .decoded
                    .chains
                    .get(c.0 as usize..c.1 as usize)
                    .unwrap_or(&[]);
                chain.extend(old.iter().copied().take_while(|&a| a != CONTEXT_USER));
                chain.push(CONTEXT_USER);
                let stack = stacks.bytes.get(range.clone()).unwrap_or(&[]);
                if let Some(t) = u.unwind(*pid, *regs, stack, &mut chain) {
                    chain.push(t.marker());
                }
                let begin = raw.decoded.chains.len() as u32;
                raw.decoded.chains.extend_from_slice(&chain);
                updates.push((i, (begin, raw.decoded.chains.len() as u32)));
            }
            other => follow_event(u, other),
        }
    }
    for (i, range) in updates {
        if let Event::Sample { chain, .. } = &mut raw.decoded.events[i].event {
            *chain = range;
        }
    }
}

/// The magic bytes at the start of a perf.data file.
pub const MAGIC: &[u8; 8] = b"PERFILE2";

/// Whether the file at `path` starts with perf.data's magic (false if it cannot be read).
pub fn is_perf_data(path: &Path) -> bool {
    let mut head = [0u8; 8];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == MAGIC
}

/// A perf.data file read into hood's raw form.
#[derive(Debug)]
pub struct PerfImport {
    /// The recording, ready for [`crate::profile::build_profile`].
    pub raw: RawRecording,
    /// Build-id (hex) of the kernel the file was recorded on, from its build-id table.
    pub kernel_build_id: Option<String>,
    /// Records of types hood does not use (context switches, aux data, ...).
    pub skipped: u64,
}

fn perr(path: &Path, e: impl std::fmt::Display) -> ModelError {
    ModelError::Malformed(format!(
        "{}: not a readable perf.data file ({e}); check it with `perf report -i {}`",
        path.display(),
        path.display()
    ))
}

/// A display name for the sampled event.
fn event_name(desc: &AttributeDescription) -> String {
    if let Some(n) = desc.name() {
        return n.to_string();
    }
    match desc.attributes().type_ {
        PerfEventType::Software(SoftwareCounterType::CpuClock) => "cpu-clock".into(),
        PerfEventType::Software(SoftwareCounterType::TaskClock) => "task-clock".into(),
        other => format!("{other:?}"),
    }
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
    let mut bytes = std::fs::read(path).map_err(|e| perr(path, e))?;
    let repaired = check::header(&mut bytes).map_err(|e| perr(path, e))?;
    let PerfFileReader {
        mut perf_file,
        mut record_iter,
    } = PerfFileReader::parse_file(Cursor::new(&bytes[..])).map_err(|e| perr(path, e))?;

    let mut raw = RawRecording::default();
    if let Some(note) = repaired {
        raw.warnings.push(format!("{}: {note}", path.display()));
    }
    let attrs = perf_file.event_attributes().to_vec();
    let main = attrs
        .iter()
        .position(|a| !matches!(a.attributes().sampling_policy, SamplingPolicy::NoSampling))
        .unwrap_or(0);
    let mut meta = RecordMeta {
        hood_version: format!(
            "imported from perf.data (perf {})",
            perf_file.perf_version().ok().flatten().unwrap_or("?")
        ),
        mode: "perf record".into(),
        command: perf_file
            .cmdline()
            .ok()
            .flatten()
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default(),
        hostname: perf_file.hostname().ok().flatten().unwrap_or("").into(),
        kernel_release: perf_file.os_release().ok().flatten().unwrap_or("").into(),
        ..RecordMeta::default()
    };
    if let Some(desc) = attrs.get(main) {
        let a = desc.attributes();
        meta.event = event_name(desc);
        meta.requested_event = meta.event.clone();
        meta.freq_hz = match a.sampling_policy {
            SamplingPolicy::Frequency(f) => f,
            _ => 0,
        };
        meta.callchain = a
            .sample_format
            .contains(linux_perf_data::linux_perf_event_reader::SampleFormat::CALLCHAIN);
    }
    if attrs.len() > 1 {
        let names: Vec<String> = attrs.iter().map(event_name).collect();
        meta.notes.push(format!(
            "the file holds {} events ({}); samples of all are counted together",
            attrs.len(),
            names.join(", ")
        ));
    }

    let mut kernel_build_id = None;
    if let Ok(ids) = perf_file.build_ids() {
        for info in ids.values() {
            let p = String::from_utf8_lossy(&info.path).into_owned();
            let hex = hex_encode(&info.build_id);
            if p.starts_with("[kernel.kallsyms]") {
                kernel_build_id = Some(hex.clone());
            }
            raw.build_ids.insert(p, hex);
        }
    }
    meta.kernel_build_id = kernel_build_id.clone();

    let mut per_cpu: BTreeMap<u32, CpuCounts> = BTreeMap::new();
    let mut skipped = 0u64;
    let mut stacks = StackCopies::default();
    let (mut first, mut last) = (u64::MAX, 0u64);
    loop {
        let rec = match record_iter.next_record(&mut perf_file) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                raw.warnings.push(format!(
                    "{}: reading stopped early ({e}); the file was probably cut short, counts cover what was read",
                    path.display()
                ));
                break;
            }
        };
        let PerfFileRecord::EventRecord { record, .. } = rec else {
            continue; // perf's own bookkeeping records (rounds, headers, ...)
        };
        let before = raw.decoded.events.len();
        match convert::push(&mut raw.decoded, &record, &mut stacks) {
            Pushed::Sample(cpu) => {
                per_cpu.entry(cpu).or_default().samples += 1;
                if let Some(t) = raw.decoded.events.get(before).map(|e| e.time) {
                    first = first.min(t);
                    last = last.max(t);
                }
            }
            Pushed::Lost(n) => per_cpu.entry(0).or_default().lost += n,
            Pushed::Other => {}
            Pushed::Skipped => skipped += 1,
            Pushed::Malformed => raw.decoded.malformed += 1,
        }
    }
    if raw.decoded.malformed > 0 {
        raw.warnings.push(format!(
            "{} malformed perf records were skipped",
            raw.decoded.malformed
        ));
    }
    raw.decoded.skipped = skipped;
    if !stacks.samples.is_empty() {
        meta.call_graph = format!("dwarf,{}", stacks.max_size);
        match unwinder {
            Some(u) => unwind_copies(&mut raw, &stacks, u),
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
