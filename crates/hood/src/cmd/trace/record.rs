//! `hood trace record`: the command line of [`hood_hooks::trace::record`], which runs the
//! command with hood-rt preloaded in trace mode, records its context switches and streams
//! every thread's events into one trace file.

use std::ffi::OsStr;
use std::process::ExitCode;

use anyhow::bail;
use hood_hooks::trace::record::{Full, RecordConfig};

use super::{FullArg, RecordArgs};

/// `hood trace record`, with its messages on standard error.
pub fn record(a: RecordArgs) -> anyhow::Result<ExitCode> {
    if !a.probe.is_empty() {
        return probe(a);
    }
    let buffer = a
        .buffer
        .unwrap_or(if a.full.is_some() { 1 << 23 } else { 1 << 20 });
    if !(16..=1 << 30).contains(&buffer) {
        bail!("--buffer {buffer} is out of range: use 16 to 1073741824 events per thread");
    }
    // HOOD_TRACE_IRQ=0 leaves the irqs out, HOOD_TRACE_WAKE=0 the wake-ups,
    // HOOD_TRACE_PREFAULT=0 the buffers' first-touch
    // cost to the program (benchmarks).
    let off = |k: &str| std::env::var_os(k).as_deref() == Some(OsStr::new("0"));
    let cfg = RecordConfig {
        output: a.output,
        buffer,
        full: match a.full {
            None => Full::Stream,
            Some(FullArg::Stop) => Full::Stop,
            Some(FullArg::Wrap) => Full::Wrap,
        },
        filters: a.filter,
        excludes: a.exclude,
        sched: !a.no_sched,
        irqs: !off("HOOD_TRACE_IRQ"),
        wakeups: !off("HOOD_TRACE_WAKE"),
        prefault: !off("HOOD_TRACE_PREFAULT"),
        start_off: a.start_off,
        keep: a.keep,
        max_size: a.max_size,
        argv: a.command,
        runtime: hood_hooks::runtime::library()?,
    };
    // Stop signals are passed on to the command; the recorder lives on to finish the file.
    let mut steer = hood_proc::signal::Signals::forwarding()?;
    let out = hood_hooks::trace::record::record(&cfg, &mut steer, &mut |m| {
        crate::cmd::say_as("hood trace", m)
    })?;
    // The command's status; 1 when it succeeded but left no trace (said on stderr), as
    // `hood calls run` and docs/cli.md have it; 2 when an error ended the recording (said,
    // with what the file holds), as `hood record` has it.
    let status = out.status.clamp(0, 255) as u8;
    Ok(ExitCode::from(match (&out.error, out.traced, status) {
        (Some(_), _, _) => 2,
        (None, false, 0) => 1,
        _ => status,
    }))
}

/// `hood trace record --probe`: uprobes instead of the runtime.
fn probe(a: RecordArgs) -> anyhow::Result<ExitCode> {
    use hood_hooks::probe::{ProbeConfig, ProbeOutput, ProbeRun};
    let cfg = ProbeConfig {
        specs: a.probe,
        yes: a.yes,
        run: if a.pids.pid.is_empty() {
            ProbeRun::Command(a.command)
        } else {
            ProbeRun::Pids(a.pids.pid)
        },
        duration: a.duration.map(std::time::Duration::from_secs_f64),
        sched: !a.no_sched,
        output: ProbeOutput::Trace(a.output),
    };
    let mut steer = hood_proc::signal::Signals::forwarding()?;
    let out = hood_hooks::probe::record(&cfg, &mut steer, &mut |m| {
        crate::cmd::say_as("hood trace", m)
    })?;
    // 1 when the command succeeded (or the processes were attached) but no probed function
    // was called: nothing to show, as docs/cli.md has it.
    // 2 when an error ended the recording (said, with what the file holds).
    let status = out.status.clamp(0, 255) as u8;
    Ok(ExitCode::from(if out.error.is_some() {
        2
    } else if out.events == 0 && status == 0 {
        1
    } else {
        status
    }))
}
