//! `hood record --labels`: the events that tell, for every sample, which process it served.
//!
//! They are traced in a private tracefs instance (`instances/hood-labels-<pid>`, `trace_clock
//! mono` = the samples' clock) and read as raw ring-buffer pages from each CPU's
//! `trace_pipe_raw`: on this machine kind tracepoint records delivered through perf_event_open
//! were seen to vanish on an idle vCPU, while this path lost none. Pages are stored verbatim
//! (`LABELS_PAGES`) with each event's `format` text (`LABELS_META`) and the kernel's per-CPU
//! buffer counters read at stop (`LABELS_STATS`), so the report can check that nothing is
//! missing. The instance is removed when the recorder is dropped (normal end, Ctrl-C, error);
//! one left by a killed recorder is removed at the next start.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Context;
use hood_format::{tags, Writer};
use hood_model::labels::{LabelsMeta, LabelsStats, TracedEvent, EVENTS, INSTANCE_PREFIX};
use hood_perf::tracefs::{self, Instance};

/// Per-CPU ring size of the instance, KiB (drained every 200 ms).
const BUFFER_KB: usize = 8192;
/// Write a CPU's pages once this many bytes are pending.
const FLUSH_BYTES: usize = 1 << 20;

/// The running event recorder. Dropping it removes the tracefs instance.
pub struct LabelsRecorder {
    inst: Instance,
    page_size: usize,
    pending: BTreeMap<u32, Vec<u8>>,
    pages: BTreeMap<u32, u64>,
}

/// Pids of kernel threads (PF_KTHREAD in /proc/PID/stat).
pub fn kernel_threads() -> Vec<u32> {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let flags = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(6))
            .and_then(|f| f.parse::<u64>().ok());
        if flags.is_some_and(|f| f & PF_KTHREAD != 0) {
            out.push(pid);
        }
    }
    out
}

impl LabelsRecorder {
    /// Create the instance for `cpus` and write the `LABELS_META` chunk. Tracing starts with
    /// [`LabelsRecorder::begin`].
    pub fn start<W: Write>(cpus: &[u32], writer: &mut Writer<W>) -> anyhow::Result<Self> {
        let root = tracefs::mount_point().context("--labels needs tracefs")?;
        let inst = Instance::create(&root, INSTANCE_PREFIX, EVENTS, BUFFER_KB, cpus)
            .context("--labels: setting up the private tracefs instance (run as root)")?;
        let mut meta = LabelsMeta {
            instance: inst.dir().display().to_string(),
            page_size: tracefs::page_size(),
            header_page: std::fs::read_to_string(root.join("events/header_page"))
                .unwrap_or_default(),
            buffer_kb: BUFFER_KB,
            kthreads: kernel_threads(),
            ..LabelsMeta::default()
        };
        for &(sys, name) in EVENTS {
            if inst.enabled().iter().any(|(s, n)| s == sys && n == name) {
                let format = tracefs::event_format(inst.dir(), sys, name)?;
                meta.events.push(TracedEvent {
                    sys: sys.into(),
                    name: name.into(),
                    format,
                });
            } else {
                meta.missing.push(format!("{sys}:{name}"));
            }
        }
        for need in ["softirq_entry", "softirq_exit"] {
            if !meta.events.iter().any(|e| e.name == need) {
                anyhow::bail!("--labels: this kernel has no irq:{need} tracepoint; softirq work cannot be told apart");
            }
        }
        if !meta.missing.is_empty() {
            eprintln!(
                "hood: --labels: this kernel lacks {}; the work they identify is charged less precisely",
                meta.missing.join(", ")
            );
        }
        writer.write_chunk(
            tags::profile::LABELS_META,
            &serde_json::to_vec(&meta)?,
            true,
        )?;
        Ok(LabelsRecorder {
            inst,
            page_size: meta.page_size,
            pending: BTreeMap::new(),
            pages: BTreeMap::new(),
        })
    }

    /// Switch tracing on (before sampling starts).
    pub fn begin(&self) -> anyhow::Result<()> {
        Ok(self.inst.start()?)
    }

    /// Read the pages available now and write them out.
    pub fn drain<W: Write>(&mut self, writer: &mut Writer<W>, force: bool) -> anyhow::Result<()> {
        let ps = self.page_size;
        let (pending, pages) = (&mut self.pending, &mut self.pages);
        self.inst.drain(&mut |cpu, page| {
            let buf = pending
                .entry(cpu)
                .or_insert_with(|| cpu.to_le_bytes().to_vec());
            buf.extend_from_slice(page);
            // A short read still stands for a whole page.
            buf.resize(buf.len() + ps.saturating_sub(page.len()), 0);
            *pages.entry(cpu).or_default() += 1;
        })?;
        for buf in self.pending.values_mut() {
            if buf.len() > 4 && (force || buf.len() >= FLUSH_BYTES) {
                writer.write_chunk(tags::profile::LABELS_PAGES, buf, true)?;
                buf.truncate(4);
            }
        }
        Ok(())
    }

    /// Stop tracing, write what is left and the kernel's counters, remove the instance.
    pub fn finish<W: Write>(mut self, writer: &mut Writer<W>) -> anyhow::Result<()> {
        self.inst.stop()?;
        self.drain(writer, true)?;
        let mut stats = LabelsStats {
            pages: self.pages.clone(),
            kthreads: kernel_threads(),
            ..LabelsStats::default()
        };
        for cpu in self.inst.cpus() {
            if let Ok(t) = self.inst.cpu_stats(cpu) {
                stats.cpu_stats.insert(cpu, t);
            }
        }
        writer.write_chunk(
            tags::profile::LABELS_STATS,
            &serde_json::to_vec(&stats)?,
            false,
        )?;
        Ok(())
    }
}
