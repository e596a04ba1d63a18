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

use super::{collect, filter, prefault};
use crate::cmd::record::child::Child;

/// Plain config of `hood trace record`.
pub struct RecordConfig {
    pub output: PathBuf,
    pub buffer: u64,
    pub wrap: bool,
    pub filters: Vec<String>,
    pub excludes: Vec<String>,
    pub sched: bool,
    pub start_off: bool,
    pub keep: bool,
    pub argv: Vec<String>,
}

fn private_dir() -> anyhow::Result<PathBuf> {
    crate::cmd::calls::segments::private_dir(&crate::cmd::calls::segments::shm_dir(), "trace")
}

pub fn record(cfg: RecordConfig) -> anyhow::Result<ExitCode> {
    if cfg.buffer < 16 || cfg.buffer > 1 << 30 {
        bail!(
            "--buffer {} is out of range: use 16 to 1073741824 events per thread",
            cfg.buffer
        );
    }
    let lib = crate::cmd::calls::run::runtime_library()?;
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
    std::env::set_var("HOOD_TRACE_FULL", if cfg.wrap { "wrap" } else { "stop" });
    if cfg.start_off {
        std::env::set_var("HOOD_TRACE_START", "off");
    }
    if let Some(f) = &filter_file {
        std::env::set_var("HOOD_TRACE_FILTER", f);
    }
    let mut child = Child::spawn(&cfg.argv)?;
    let mut switches = None;
    if cfg.sched {
        match SwitchRecorder::open_child(child.pid, 256) {
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
        match IrqRecorder::open_child(child.pid, 256) {
            Ok(r) => irqs = Some(r),
            // SAFETY: geteuid has no preconditions and cannot fail.
            Err(e) if unsafe { libc::geteuid() } != 0 => eprintln!(
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
    child.release()?;
    // HOOD_TRACE_PREFAULT=0 leaves the buffers' first-touch cost to the program (benchmarks).
    let prefaulter = (std::env::var_os("HOOD_TRACE_PREFAULT").as_deref()
        != Some(std::ffi::OsStr::new("0")))
    .then(|| prefault::Prefaulter::start(dir));
    let interrupted = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, interrupted.clone());
    let mut per_cpu: std::collections::BTreeMap<u32, Vec<u8>> = Default::default();
    let mut irq_cpu: std::collections::BTreeMap<u32, Vec<u8>> = Default::default();
    // Append what the switch and irq rings hold to the per-CPU byte buffers.
    let mut drain = |switches: &mut Option<SwitchRecorder>,
                     irqs: &mut Option<IrqRecorder>|
     -> anyhow::Result<()> {
        if let Some(s) = switches.as_mut() {
            s.drain(&mut |cpu, b| {
                per_cpu.entry(cpu).or_default().extend_from_slice(b);
                Ok(())
            })?;
        }
        if let Some(r) = irqs.as_mut() {
            r.drain(&mut |cpu, b| {
                irq_cpu.entry(cpu).or_default().extend_from_slice(b);
                Ok(())
            })?;
        }
        Ok(())
    };
    let status = loop {
        drain(&mut switches, &mut irqs)?;
        if let Some(st) = child.try_wait() {
            break st;
        }
        std::thread::sleep(Duration::from_millis(
            if interrupted.load(Ordering::Relaxed) {
                5
            } else {
                20
            },
        ));
    };
    let prefaulted = prefaulter.map(|p| p.stop()).unwrap_or_default();
    // Let the last switch records of exiting grandchildren land, then drain once more.
    drain(&mut switches, &mut irqs)?;
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
    drop(irqs);
    let (procs, events) = collect::collect(dir, &mut warnings);
    for w in &warnings {
        eprintln!("hood trace: warning: {w}");
    }
    if procs.is_empty() {
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
    let rings = Rings {
        switches: &per_cpu,
        sched: switches.is_some(),
        irqs: &irq_cpu,
        irq_meta,
    };
    write(cfg, &procs, &events, &rings, &warnings)?;
    summary(cfg, &procs, &events, prefaulted);
    irq_summary(&rings);
    Ok(ExitCode::from(status.clamp(0, 255) as u8))
}

/// The kernel rings' raw bytes per CPU.
struct Rings<'a> {
    switches: &'a std::collections::BTreeMap<u32, Vec<u8>>,
    sched: bool,
    irqs: &'a std::collections::BTreeMap<u32, Vec<u8>>,
    irq_meta: Option<IrqMeta>,
}

/// What the irq rings hold, and what they lost.
fn irq_summary(r: &Rings) {
    let Some(meta) = &r.irq_meta else { return };
    let dec = IrqDecoder::new(meta);
    let (mut hard, mut soft, mut lost) = (0u64, 0u64, 0u64);
    for (cpu, b) in r.irqs {
        let d = dec.decode(*cpu, b);
        lost += d.lost;
        for i in &d.irqs {
            if i.kind.is_entry() {
                if i.kind.is_soft() {
                    soft += 1;
                } else {
                    hard += 1;
                }
            }
        }
    }
    eprintln!(
        "hood trace: irqs: {hard} hard irq and {soft} softirq entries in the traced threads' context{}",
        if lost > 0 {
            format!(", {lost} irq records LOST by the kernel (ring full)")
        } else {
            ", none lost".to_string()
        }
    );
}

fn write(
    cfg: &RecordConfig,
    procs: &[ProcessTrace],
    events: &[collect::SegEvents],
    rings: &Rings,
    warnings: &[String],
) -> anyhow::Result<()> {
    let mut w = Writer::create(&cfg.output, FileKind::Trace)?;
    let meta = TraceMeta {
        version: PAYLOAD_VERSION,
        argv: cfg.argv.clone(),
        buffer: cfg.buffer,
        full: if cfg.wrap { "wrap" } else { "stop" }.into(),
        filters: cfg.filters.clone(),
        excludes: cfg.excludes.clone(),
        sched: rings.sched,
        irq: rings.irq_meta.clone(),
        collected_realtime_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    };
    w.write_chunk(tags::trace::META, &serde_json::to_vec(&meta)?, false)?;
    if !warnings.is_empty() {
        w.write_chunk(tags::common::NOTES, &serde_json::to_vec(warnings)?, false)?;
    }
    for p in procs {
        let v = serde_json::json!({"version": PAYLOAD_VERSION, "process": p});
        w.write_chunk(tags::trace::PROCESS, &serde_json::to_vec(&v)?, true)?;
    }
    for t in events {
        // Split very long threads so no chunk exceeds the container's payload limit; each
        // part carries the full timestamp of the event before it as its anchor.
        let mut anchor = t.anchor_ticks;
        for part in t.words.chunks(1 << 20) {
            let (payload, last) = encode_words(t.pid, t.tid, t.start_mono_ns, anchor, part);
            w.write_chunk(tags::trace::EVENTS, &payload, true)?;
            anchor = last;
        }
    }
    for (tag, per_cpu) in [
        (tags::trace::SWITCHES, rings.switches),
        (tags::trace::IRQS, rings.irqs),
    ] {
        for (cpu, bytes) in per_cpu {
            let mut b = cpu.to_le_bytes().to_vec();
            b.extend_from_slice(bytes);
            w.write_chunk(tag, &b, true)?;
        }
    }
    w.finish()?;
    Ok(())
}

/// User + system CPU seconds of this process (`RUSAGE_SELF`) or its waited-for children.
fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: all-zero is a valid rusage; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0.0;
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(ru.ru_utime) + s(ru.ru_stime)
}

fn summary(
    cfg: &RecordConfig,
    procs: &[ProcessTrace],
    events: &[collect::SegEvents],
    prefaulted: prefault::Stats,
) {
    let n: usize = events.iter().map(|t| t.words.len()).sum();
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
        cpu_seconds(libc::RUSAGE_CHILDREN),
        cpu_seconds(libc::RUSAGE_SELF),
        prefaulted.pages,
        prefaulted.allocated
    );
    if dropped > 0 {
        eprintln!("hood trace: warning: buffers full: {dropped} events dropped (--full stop); raise --buffer or use --filter");
    }
    if over > 0 {
        eprintln!("hood trace: {over} older events overwritten (--full wrap keeps the newest {} per thread)", cfg.buffer);
    }
}
