//! `hood trace record`: run the command with hood-rt preloaded in trace mode and its context
//! switches recorded, then collect every process's buffers into one trace file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use hood_format::{tags, FileKind, Writer};
use hood_model::trace::{
    encode_words, IrqDecoder, IrqMeta, IrqTracepointMeta, ProcessTrace, TraceMeta, PAYLOAD_VERSION,
};
use hood_perf::{IrqRecorder, SwitchRecorder, IRQ_SAMPLE_TYPE};

use super::{collect, filter, prefault, stream};
use hood_proc::child::{Child, Exit};
use hood_proc::usage::{cpu_seconds, Whose};

/// How the threads' buffers are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Rings the recorder drains while the program runs.
    Stream,
    /// Fixed buffers; a full one stops its thread's recording.
    Stop,
    /// Fixed buffers keeping the newest events.
    Wrap,
}

impl Full {
    /// The `HOOD_TRACE_FULL` value and the name in the file.
    pub fn name(self) -> &'static str {
        match self {
            Full::Stream => "stream",
            Full::Stop => "stop",
            Full::Wrap => "wrap",
        }
    }
}

/// Plain config of `hood trace record`.
pub struct RecordConfig {
    pub output: PathBuf,
    pub buffer: u64,
    pub full: Full,
    pub filters: Vec<String>,
    pub excludes: Vec<String>,
    pub sched: bool,
    pub start_off: bool,
    pub keep: bool,
    pub argv: Vec<String>,
}

fn private_dir() -> anyhow::Result<PathBuf> {
    use hood_hooks::segments;
    Ok(segments::private_dir(&segments::shm_dir(), "trace")?)
}

pub fn record(cfg: RecordConfig) -> anyhow::Result<ExitCode> {
    if cfg.buffer < 16 || cfg.buffer > 1 << 30 {
        bail!(
            "--buffer {} is out of range: use 16 to 1073741824 events per thread",
            cfg.buffer
        );
    }
    let lib = hood_hooks::runtime::library()?;
    let (prog, _) = cfg.argv.split_first().context("no command given")?;
    let dir = private_dir()?;
    let result = run_and_collect(&cfg, &lib, &dir, prog);
    if cfg.keep {
        eprintln!("hood trace: segments kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn run_and_collect(
    cfg: &RecordConfig,
    lib: &Path,
    dir: &Path,
    prog: &str,
) -> anyhow::Result<ExitCode> {
    let mut warnings = Vec::new();
    let filter_file = if cfg.filters.is_empty() && cfg.excludes.is_empty() {
        None
    } else {
        let exe = filter::which(prog).with_context(|| format!("command not found: {prog}"))?;
        let rules = filter::Rules {
            filters: cfg.filters.clone(),
            excludes: cfg.excludes.clone(),
        };
        let table = filter::build(&rules, &exe, &mut warnings);
        let p = dir.join("filter.bin");
        std::fs::write(&p, table).with_context(|| format!("writing {}", p.display()))?;
        Some(p)
    };
    let mut preload = lib.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    // The child inherits hood's environment at exec (hood is single-threaded here).
    std::env::set_var("LD_PRELOAD", &preload);
    std::env::set_var("HOOD_SHM_DIR", dir);
    std::env::set_var("HOOD_MODE", "trace");
    std::env::set_var("HOOD_TRACE_BUFFER", cfg.buffer.to_string());
    std::env::set_var("HOOD_TRACE_FULL", cfg.full.name());
    if cfg.start_off {
        std::env::set_var("HOOD_TRACE_START", "off");
    }
    if let Some(f) = &filter_file {
        std::env::set_var("HOOD_TRACE_FILTER", f);
    }
    let mut child = Child::spawn_held(&cfg.argv, &[])?;
    let mut switches = None;
    if cfg.sched {
        match SwitchRecorder::open_child(child.pid(), 256) {
            Ok(s) => switches = Some(s),
            Err(e) => warnings.push(format!("context switches not recorded: {e}")),
        }
    }
    // Irq entries/exits in the traced threads' context: root (or CAP_PERFMON) only; without
    // the privilege a note, never an error. HOOD_TRACE_IRQ=0 leaves them out (benchmarks).
    let mut irqs = None;
    let irq_wanted =
        std::env::var_os("HOOD_TRACE_IRQ").as_deref() != Some(std::ffi::OsStr::new("0"));
    if cfg.sched && irq_wanted {
        match IrqRecorder::open_child(child.pid(), 256) {
            Ok(r) => irqs = Some(r),
            Err(e) if !hood_proc::usage::running_as_root() => eprintln!(
                "hood trace: note: irq entries/exits not recorded: they need root or CAP_PERFMON ({e})"
            ),
            Err(e) => eprintln!("hood trace: note: irq entries/exits not recorded: {e}"),
        }
    }
    for k in [
        "LD_PRELOAD",
        "HOOD_MODE",
        "HOOD_TRACE_FILTER",
        "HOOD_TRACE_START",
    ] {
        std::env::remove_var(k);
    }
    let irq_meta = irqs.as_ref().map(|r| IrqMeta {
        sample_type: IRQ_SAMPLE_TYPE,
        tracepoints: r
            .tracepoints()
            .iter()
            .map(|t| IrqTracepointMeta {
                name: t.name.clone(),
                id: t.id,
                format: t.format.clone(),
            })
            .collect(),
    });
    // The file and its META chunk come first: from here on the file reads, up to the last
    // round of events written, whenever the recorder stops.
    let mut w = Writer::create(&cfg.output, FileKind::Trace)?;
    let meta = TraceMeta {
        version: PAYLOAD_VERSION,
        argv: cfg.argv.clone(),
        buffer: cfg.buffer,
        full: cfg.full.name().into(),
        filters: cfg.filters.clone(),
        excludes: cfg.excludes.clone(),
        sched: switches.is_some(),
        irq: irq_meta.clone(),
        collected_realtime_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    };
    w.write_chunk(tags::trace::META, &serde_json::to_vec(&meta)?, false)?;
    w.flush()?;
    child.release()?;
    // HOOD_TRACE_PREFAULT=0 leaves the buffers' first-touch cost to the program (benchmarks).
    let prefaulter = (std::env::var_os("HOOD_TRACE_PREFAULT").as_deref()
        != Some(std::ffi::OsStr::new("0")))
    .then(|| prefault::Prefaulter::start(dir));
    let interrupted = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone());
    let mut streamer = (cfg.full == Full::Stream).then(|| stream::Streamer::new(dir));
    let irq_dec = irq_meta.as_ref().map(IrqDecoder::new);
    let mut irq_counts = IrqCounts::default();
    // One round: the switch and irq rings' records and the threads' new events, into the file.
    let mut round = |w: &mut Writer<_>,
                     switches: &mut Option<SwitchRecorder>,
                     irqs: &mut Option<IrqRecorder>,
                     streamer: &mut Option<stream::Streamer>|
     -> anyhow::Result<u64> {
        // A ring's records come in up to two pieces per round (where the ring wraps): a round's
        // pieces are joined per CPU before they become a chunk, so every chunk holds whole
        // records (the kernel publishes whole records only).
        let mut per_cpu: std::collections::BTreeMap<u32, Vec<u8>> = Default::default();
        if let Some(s) = switches.as_mut() {
            s.drain(&mut |cpu, b| {
                per_cpu.entry(cpu).or_default().extend_from_slice(b);
                Ok(())
            })?;
        }
        for (cpu, b) in std::mem::take(&mut per_cpu) {
            write_cpu_chunk(w, tags::trace::SWITCHES, cpu, &b)?;
        }
        if let Some(r) = irqs.as_mut() {
            r.drain(&mut |cpu, b| {
                per_cpu.entry(cpu).or_default().extend_from_slice(b);
                Ok(())
            })?;
        }
        for (cpu, b) in per_cpu {
            if let Some(d) = &irq_dec {
                irq_counts.add(&d.decode(cpu, &b));
            }
            write_cpu_chunk(w, tags::trace::IRQS, cpu, &b)?;
        }
        let moved = match streamer.as_mut() {
            Some(st) => st.drain(w)?,
            None => 0,
        };
        w.flush()?;
        Ok(moved)
    };
    let mut active = std::time::Instant::now();
    let status = loop {
        let moved = round(&mut w, &mut switches, &mut irqs, &mut streamer)?;
        if let Some(st) = child.try_wait()?.map(Exit::shell_code) {
            break st;
        }
        if moved > 0 {
            active = std::time::Instant::now();
        }
        // While the program records, its rings are drained every 2 ms; after a second without
        // events, every 20 ms.
        let ms = if streamer.is_some() && active.elapsed() < Duration::from_secs(1) {
            2
        } else if interrupted.load(Ordering::Relaxed) {
            5
        } else {
            20
        };
        std::thread::sleep(Duration::from_millis(ms));
    };
    let prefaulted = prefaulter.map(|p| p.stop()).unwrap_or_default();
    // Let the last switch records of exiting grandchildren land, then drain once more.
    round(&mut w, &mut switches, &mut irqs, &mut streamer)?;
    drop(irqs);
    let (procs, events) = collect::collect(dir, &mut warnings);
    let streamed = streamer.map(|s| {
        warnings.extend(s.warnings.iter().cloned());
        (s.events, s.skipped)
    });
    for w in &warnings {
        eprintln!("hood trace: warning: {w}");
    }
    if procs.is_empty() {
        drop(w);
        let _ = std::fs::remove_file(&cfg.output);
        eprintln!(
            "hood trace: {prog} produced no trace: was it built with -finstrument-functions \
             (gcc/clang) and dynamically linked? See docs/trace.md"
        );
        return Ok(ExitCode::from(if status == 0 {
            1
        } else {
            status.clamp(0, 255) as u8
        }));
    }
    finish(w, &procs, &events, &warnings)?;
    let (n_streamed, skipped) = streamed.unwrap_or((0, 0));
    summary(cfg, &procs, &events, n_streamed, skipped, prefaulted);
    if irq_meta.is_some() {
        irq_counts.print();
    }
    Ok(ExitCode::from(status.clamp(0, 255) as u8))
}

/// One CPU's raw ring bytes as a chunk: u32 CPU, then the records.
fn write_cpu_chunk<W: std::io::Write>(
    w: &mut Writer<W>,
    tag: u32,
    cpu: u32,
    bytes: &[u8],
) -> Result<(), hood_format::FormatError> {
    let mut b = Vec::with_capacity(4 + bytes.len());
    b.extend_from_slice(&cpu.to_le_bytes());
    b.extend_from_slice(bytes);
    w.write_chunk(tag, &b, true)
}

/// What the irq rings held, and what they lost.
#[derive(Default)]
struct IrqCounts {
    hard: u64,
    soft: u64,
    lost: u64,
}

impl IrqCounts {
    fn add(&mut self, d: &hood_model::trace::IrqDecode) {
        self.lost += d.lost;
        for i in &d.irqs {
            if i.kind.is_entry() {
                if i.kind.is_soft() {
                    self.soft += 1;
                } else {
                    self.hard += 1;
                }
            }
        }
    }

    fn print(&self) {
        eprintln!(
            "hood trace: irqs: {} hard irq and {} softirq entries in the traced threads' context{}",
            self.hard,
            self.soft,
            if self.lost > 0 {
                format!(", {} irq records LOST by the kernel (ring full)", self.lost)
            } else {
                ", none lost".to_string()
            }
        );
    }
}

/// The end of the file: every process (names, threads, counts; replacing the provisional
/// chunks of streamed ones), the events of fixed-buffer segments, the notes.
fn finish<W: std::io::Write>(
    mut w: Writer<W>,
    procs: &[ProcessTrace],
    events: &[collect::SegEvents],
    warnings: &[String],
) -> anyhow::Result<()> {
    for p in procs {
        let v = serde_json::json!({"version": PAYLOAD_VERSION, "process": p});
        w.write_chunk(tags::trace::PROCESS, &serde_json::to_vec(&v)?, true)?;
    }
    for t in events.iter().filter(|t| !t.words.is_empty()) {
        // Split long threads so a report decodes a bounded number of events at a time (and
        // no chunk exceeds the container's payload limit); each part carries the full
        // timestamp of the event before it as its anchor.
        let mut anchor = t.anchor_ticks;
        for part in t.words.chunks(hood_model::trace::MAX_EVENTS_PER_CHUNK) {
            let (payload, last) = encode_words(t.pid, t.tid, t.start_mono_ns, anchor, part);
            w.write_chunk(tags::trace::EVENTS, &payload, true)?;
            anchor = last;
        }
    }
    if !warnings.is_empty() {
        w.write_chunk(tags::common::NOTES, &serde_json::to_vec(warnings)?, false)?;
    }
    w.finish()?;
    Ok(())
}

fn summary(
    cfg: &RecordConfig,
    procs: &[ProcessTrace],
    events: &[collect::SegEvents],
    streamed: u64,
    skipped: u64,
    prefaulted: prefault::Stats,
) {
    let n = events.iter().map(|t| t.words.len() as u64).sum::<u64>() + streamed;
    let threads: Vec<_> = procs.iter().flat_map(|p| &p.threads).collect();
    let dropped: u64 = threads.iter().map(|t| t.dropped).sum();
    let over: u64 = threads.iter().map(|t| t.overwritten).sum();
    eprintln!(
        "hood trace: {} process{}, {} thread{}, {n} events written to {} (read it with `hood trace report {}`)",
        procs.len(),
        if procs.len() == 1 { "" } else { "es" },
        threads.len(),
        if threads.len() == 1 { "" } else { "s" },
        cfg.output.display(),
        cfg.output.display()
    );
    // The program's own CPU and the recorder's (pre-faulting, collecting, compressing), so the
    // cost moved off the program is visible.
    eprintln!(
        "hood trace: CPU: program {:.3} s, recorder {:.3} s ({} buffer pages pre-faulted, {} pre-allocated)",
        cpu_seconds(Whose::Children),
        cpu_seconds(Whose::SelfProcess),
        prefaulted.pages,
        prefaulted.allocated
    );
    match cfg.full {
        Full::Stream => {
            let lost = dropped + skipped;
            if lost > 0 {
                eprintln!(
                    "hood trace: warning: {lost} events LOST: the program outran the recorder and filled a thread's {}-event ring; raise --buffer, use --filter, or give the recorder a CPU",
                    cfg.buffer
                );
            } else {
                eprintln!("hood trace: events lost: 0 (streamed while the program ran)");
            }
        }
        Full::Stop if dropped > 0 => eprintln!(
            "hood trace: warning: buffers full: {dropped} events dropped (--full stop); raise --buffer, use --filter, or leave out --full to stream"
        ),
        _ => {}
    }
    if over > 0 {
        eprintln!("hood trace: {over} older events overwritten (--full wrap keeps the newest {} per thread)", cfg.buffer);
    }
}
