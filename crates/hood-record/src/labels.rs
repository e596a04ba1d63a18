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

use hood_format::{tags, Writer};
use hood_model::labels::{
    Budget, LabelsMeta, LabelsStats, TracedEvent, EVENTS, INSTANCE_PREFIX, PER_PACKET,
};
use hood_perf::tracefs::{self, Instance};
use hood_raw::tracefs::page::{decode_page, PageLayout};

use crate::RecordError;

/// Per-CPU ring size of the instance, KiB (drained every 200 ms).
const BUFFER_KB: usize = 8192;
/// Write a CPU's pages once this many bytes are pending.
const FLUSH_BYTES: usize = 1 << 20;

/// The running event recorder. Dropping it removes the tracefs instance.
pub struct LabelsRecorder {
    inst: Instance,
    page_size: usize,
    layout: PageLayout,
    pending: BTreeMap<u32, Vec<u8>>,
    pages: BTreeMap<u32, u64>,
    duty: Duty,
}

/// Cost control: with more events per second than the budget, the per-packet events are on
/// for one drain period out of `k` (k from the rate measured while on), and the windows they
/// were off are recorded so the report can extrapolate and say so.
struct Duty {
    budget: u64,
    per_packet: Vec<(String, String)>,
    on: bool,
    k: u64,
    iter: u64,
    acc_events: u64,
    last: std::time::Instant,
    since_ns: u64,
    out: Budget,
}

impl Duty {
    /// Account for `events` drained since the last call; once a period of at least 100 ms has
    /// passed (shorter ones, from early wake-ups, are too noisy), decide the duty cycle and
    /// switch the per-packet events.
    fn regulate(&mut self, inst: &Instance, events: u64) -> Result<(), RecordError> {
        if self.budget == 0 || self.per_packet.is_empty() {
            return Ok(());
        }
        self.acc_events += events;
        let dt = self.last.elapsed().as_secs_f64();
        if dt < 0.1 {
            return Ok(());
        }
        self.last = std::time::Instant::now();
        let rate = std::mem::take(&mut self.acc_events) as f64 / dt;
        if self.on {
            self.k = ((rate / self.budget as f64).ceil() as u64).clamp(1, 50);
        }
        self.iter += 1;
        let want_on = self.k <= 1 || self.iter.is_multiple_of(self.k);
        if want_on != self.on {
            self.switch(inst, want_on)?;
        }
        Ok(())
    }

    fn switch(&mut self, inst: &Instance, on: bool) -> Result<(), RecordError> {
        for (sys, name) in &self.per_packet {
            inst.set_event(sys, name, on)?;
        }
        self.close();
        self.on = on;
        Ok(())
    }

    /// Close the current window (at a switch, and at stop): count its time on or off.
    fn close(&mut self) {
        let now = hood_proc::clock::monotonic_ns();
        let span = now.saturating_sub(self.since_ns);
        if self.on {
            self.out.on_ns += span;
        } else {
            self.out.off_ns += span;
            self.out.off.push((self.since_ns, now));
        }
        self.since_ns = now;
    }
}

impl LabelsRecorder {
    /// Create the instance for `cpus` and write the `LABELS_META` chunk. Tracing starts with
    /// [`LabelsRecorder::begin`].
    /// `budget`: events per second before the per-packet events are duty-cycled (0: never).
    pub fn start<W: Write>(
        cpus: &[u32],
        budget: u64,
        writer: &mut Writer<W>,
        log: &mut dyn FnMut(&str),
    ) -> Result<Self, RecordError> {
        let root = tracefs::mount_point().map_err(|source| RecordError::Labels {
            what: "--labels needs tracefs",
            source,
        })?;
        for note in tracefs::remove_stale_hood_instances(&root) {
            log(&note);
        }
        let inst = Instance::create(&root, INSTANCE_PREFIX, EVENTS, BUFFER_KB, cpus).map_err(
            |source| RecordError::Labels {
                what: "--labels: setting up the private tracefs instance (run as root)",
                source,
            },
        )?;
        let mut meta = LabelsMeta {
            instance: inst.dir().display().to_string(),
            page_size: tracefs::page_size(),
            header_page: std::fs::read_to_string(root.join("events/header_page"))
                .unwrap_or_default(),
            buffer_kb: BUFFER_KB,
            kthreads: hood_procfs::process::kernel_threads(),
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
                return Err(RecordError::NoSoftirqTracepoint(need));
            }
        }
        if !meta.missing.is_empty() {
            log(&format!(
                "--labels: this kernel lacks {}; the work they identify is charged less precisely",
                meta.missing.join(", ")
            ));
        }
        writer.write_chunk(
            tags::profile::LABELS_META,
            &serde_json::to_vec(&meta)?,
            true,
        )?;
        let per_packet = PER_PACKET
            .iter()
            .filter(|(s, n)| inst.enabled().iter().any(|(es, en)| es == s && en == n))
            .map(|&(s, n)| (s.to_string(), n.to_string()))
            .collect();
        Ok(LabelsRecorder {
            inst,
            page_size: meta.page_size,
            layout: PageLayout::from_header_page(&meta.header_page),
            pending: BTreeMap::new(),
            pages: BTreeMap::new(),
            duty: Duty {
                budget,
                per_packet,
                on: true,
                k: 1,
                iter: 0,
                acc_events: 0,
                last: std::time::Instant::now(),
                since_ns: hood_proc::clock::monotonic_ns(),
                out: Budget {
                    events_per_s: budget,
                    ..Budget::default()
                },
            },
        })
    }

    /// Switch tracing on (before sampling starts).
    pub fn begin(&mut self) -> Result<(), RecordError> {
        self.inst.start()?;
        self.duty.last = std::time::Instant::now();
        self.duty.since_ns = hood_proc::clock::monotonic_ns();
        Ok(())
    }

    /// Read the pages available now and write them out.
    pub fn drain<W: Write>(
        &mut self,
        writer: &mut Writer<W>,
        force: bool,
    ) -> Result<(), RecordError> {
        let (ps, layout) = (self.page_size, self.layout);
        let (pending, pages) = (&mut self.pending, &mut self.pages);
        let mut events = 0;
        self.inst.drain(&mut |cpu, page| {
            events += decode_page(page, layout, &mut |_, _| {}).events;
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
        if !force {
            self.duty.regulate(&self.inst, events)?;
        }
        Ok(())
    }

    /// Stop tracing, write what is left and the kernel's counters, remove the instance.
    pub fn finish<W: Write>(mut self, writer: &mut Writer<W>) -> Result<(), RecordError> {
        self.inst.stop()?;
        self.drain(writer, true)?;
        self.duty.close();
        let mut stats = LabelsStats {
            pages: self.pages.clone(),
            kthreads: hood_procfs::process::kernel_threads(),
            budget: self.duty.out.clone(),
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
