//! The header block of the text report: what was recorded, the kernel / user / idle split,
//! lost samples, the sampling rate achieved and warnings.

use std::io::Write;

use hood_model::profile::aggregate::{Filter, Totals};
use hood_model::profile::{Mode, Profile, RecordMode};

use super::fmt::{pct, rule, secs, wrap};
use crate::{safe, ReportError};

/// What was recorded, in words: `command ./a.out x`, `system-wide`, `pids 1, 2`.
pub fn target(prof: &Profile) -> String {
    let m = &prof.meta;
    match m.mode {
        RecordMode::System => "system-wide (all CPUs, kernel and user)".into(),
        RecordMode::Pids => {
            let pids: Vec<String> = m.pids.iter().map(u32::to_string).collect();
            format!("pids {}", pids.join(", "))
        }
        _ if !m.command.is_empty() => format!("command `{}`", m.command.join(" ")),
        RecordMode::PerfRecord => "perf record".into(),
        RecordMode::Command | RecordMode::Unknown => "unknown".into(),
    }
}

/// Number of CPUs sampled: the recorder's rings, else the CPUs seen.
pub fn cpu_count(prof: &Profile) -> usize {
    if !prof.meta.cpus.is_empty() {
        return prof.meta.cpus.len();
    }
    if let Some(s) = &prof.stats {
        if !s.per_cpu.is_empty() {
            return s.per_cpu.len();
        }
    }
    let mut seen: Vec<u32> = prof.samples.iter().map(|s| s.cpu).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len().max(1)
}

/// Time sampling was active (duration minus pauses), ns.
pub fn active_ns(prof: &Profile) -> u64 {
    let paused = prof.stats.as_ref().map_or(0, |s| s.paused_ns);
    prof.duration_ns().saturating_sub(paused)
}

/// Samples per second per CPU actually achieved (0 when the duration is unknown).
pub fn achieved_hz(prof: &Profile) -> f64 {
    let ns = active_ns(prof);
    if ns == 0 {
        return 0.0;
    }
    prof.samples.len() as f64 / (ns as f64 / 1e9) / cpu_count(prof) as f64
}

/// For a command or pids (not `-a`): the rate a thread got while it ran, i.e. the samples of
/// the target's threads (idle excluded) per second per thread running at a time, which is at
/// most the number of CPUs; with the number of threads sampled. `None` for a whole-system
/// recording, whose rate is per CPU.
pub fn achieved_hz_per_thread(prof: &Profile) -> Option<(f64, usize, usize)> {
    let ns = active_ns(prof);
    if prof.meta.mode == RecordMode::System || ns == 0 {
        return None;
    }
    let mut tids: Vec<u32> = Vec::new();
    let mut n = 0usize;
    for s in prof.samples.iter().filter(|s| s.mode != Mode::Idle) {
        tids.push(s.tid);
        n += 1;
    }
    tids.sort_unstable();
    tids.dedup();
    let at_once = tids.len().min(cpu_count(prof)).max(1);
    Some((
        n as f64 / (ns as f64 / 1e9) / at_once as f64,
        tids.len(),
        at_once,
    ))
}

/// Throttle events: the recorder's counts when finalized, else those seen in the stream.
pub fn throttled(prof: &Profile) -> u64 {
    let stored = prof.stats.as_ref().map_or(0, |s| s.throttled());
    stored.max(prof.throttles_in_stream)
}

/// The filter in words, or `None` when every sample is kept.
pub fn filter_text(f: &Filter) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(p) = f.pid {
        parts.push(format!("pid {p}"));
    }
    if let Some(t) = f.tid {
        parts.push(format!("thread {t}"));
    }
    if let Some(c) = &f.comm {
        parts.push(format!("process name {}", safe::text(c)));
    }
    match f.mode {
        Some(Mode::Kernel) => parts.push("kernel samples only".into()),
        Some(Mode::User) => parts.push("user samples only".into()),
        Some(Mode::Idle) => parts.push("idle samples only".into()),
        Some(Mode::Blocked) => parts.push("blocked time only".into()),
        Some(Mode::Runnable) => parts.push("runnable wait only".into()),
        None => {}
    }
    if f.by_waker {
        parts.push("blocked time by waker".into());
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Write the header block for the samples counted in `t`.
pub fn render_header(
    prof: &Profile,
    source: &str,
    filter: &Filter,
    t: &Totals,
    width: usize,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let m = &prof.meta;
    writeln!(out, "{}", rule('='))?;
    writeln!(out, "Data file:   {}", safe::text(source))?;
    writeln!(out, "Recorded:    {}", safe::text(&target(prof)))?;
    let mut event = format!(
        "{}, {} Hz",
        if m.event.is_empty() { "?" } else { &m.event },
        m.freq_hz
    );
    if !m.requested_event.is_empty() && m.requested_event != m.event {
        event.push_str(&format!(" (asked for {})", m.requested_event));
    }
    event.push_str(&call_graph_words(m));
    writeln!(out, "Event:       {}", safe::text(&event))?;
    if let (n @ 1.., Some((_, first))) = (grown_to(prof), m.call_graph.split_once(',')) {
        writeln!(
            out,
            "Stack copy:  grown from {} to {n} bytes while stacks were cut by it",
            safe::text(first)
        )?;
    }
    if let Some(s) = prof.stats.as_ref().filter(|s| s.raw_stacks > 0) {
        writeln!(
            out,
            "Unwound now: {} samples whose raw stack copy the recorder kept ({})",
            s.raw_stacks,
            match s.raw_stacks_asked {
                true => "HOOD_KEEP_STACK_COPIES=1",
                false => "its unwinding fell behind the rings",
            }
        )?;
    }
    if !m.hostname.is_empty() || !m.kernel_release.is_empty() {
        writeln!(
            out,
            "Host:        {} (Linux {})",
            safe::text(&m.hostname),
            safe::text(&m.kernel_release)
        )?;
    }
    let mut dur = format!(
        "{} on {} CPU{}",
        secs(prof.duration_ns()),
        cpu_count(prof),
        if cpu_count(prof) == 1 { "" } else { "s" }
    );
    if let Some(s) = &prof.stats {
        if s.paused_ns > 0 {
            dur.push_str(&format!(", paused {}", secs(s.paused_ns)));
        }
        if !s.stop_reason.is_empty() {
            dur.push_str(&format!(", stopped: {}", s.stop_reason));
        }
        if let Some(code) = s.exit_status {
            dur.push_str(&format!(", exit status {code}"));
        }
    }
    writeln!(out, "Duration:    {dur}")?;
    for line in super::offcpu::header_lines(prof, filter) {
        writeln!(out, "{line}")?;
    }
    if let Some(f) = filter_text(filter) {
        match filter.measure.is_time() {
            true => writeln!(out, "Filter:      {f} ({})", super::offcpu::time(t.samples))?,
            false => writeln!(
                out,
                "Filter:      {f} ({} of {} samples)",
                t.samples,
                prof.samples.len()
            )?,
        }
    }
    writeln!(out, "{}", rule('='))?;
    writeln!(out)?;
    if filter.measure.is_time() {
        super::offcpu::totals_block(t, out)?;
        render_losses(prof, out)?;
        render_stacks(prof, filter, width, out)?;
        render_notes(prof, width, out)?;
        writeln!(out)?;
        return Ok(());
    }
    let line = |label: &str, n: u64| format!("{label:>18}: {n:>10} ({:>5.1}%)", pct(n, t.samples));
    writeln!(out, "{}", line("Kernel samples", t.kernel))?;
    writeln!(out, "{}", line("User samples", t.user))?;
    writeln!(out, "{}", line("Idle samples", t.idle))?;
    writeln!(out, "{:>20}{:->10}  {:->7}", "", "", "")?;
    if t.samples == 0 {
        // 0 of 0 is no share at all, not 100 %.
        writeln!(out, "{:>18}: {:>10}", "Total samples", 0)?;
    } else {
        writeln!(out, "{:>18}: {:>10} (100.0%)", "Total samples", t.samples)?;
    }
    writeln!(out)?;
    render_losses(prof, out)?;
    render_stacks(prof, filter, width, out)?;
    render_rate(prof, out)?;
    render_notes(prof, width, out)?;
    writeln!(out)?;
    Ok(())
}

/// The user stack copy the recorder grew to (0: not grown).
fn grown_to(prof: &Profile) -> u32 {
    prof.stats.as_ref().map_or(0, |s| s.stack_copy_grown_to)
}

/// `, call chains (…how user stacks were obtained…)`.
fn call_graph_words(m: &hood_model::profile::RecordMeta) -> String {
    if !m.callchain {
        return ", no call chains".into();
    }
    let (mode, bytes) = m
        .call_graph
        .split_once(',')
        .map_or((m.call_graph.as_str(), ""), |(a, b)| (a, b));
    match mode {
        "auto" => format!(
            ", call chains (user stacks: DWARF unwinding of a {bytes}-byte stack copy, then frame pointers)"
        ),
        "dwarf" => format!(", call chains (user stacks: DWARF unwinding of a {bytes}-byte stack copy)"),
        "" | "fp" => ", call chains (user stacks: frame pointers)".into(),
        other => format!(", call chains ({other})"),
    }
}

/// The share of user stacks that could not be completed, the main reason, and its fix.
fn render_stacks(
    prof: &Profile,
    filter: &Filter,
    width: usize,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let c = hood_model::profile::aggregate::stack_completeness(prof, filter);
    if c.truncated == 0 {
        return Ok(());
    }
    let (main, n) = &c.reasons[0];
    // Sentences: wrapped to the width, never cut (the fix must be readable whole).
    let width = if width == 0 { usize::MAX } else { width };
    let said = format!(
        "{} of {} user stacks ({:.1}%) stop before the program's entry; most: {main} ({n})",
        c.truncated,
        c.with_user_stack,
        pct(c.truncated, c.with_user_stack),
    );
    for line in wrap("Truncated:    ", &said, width) {
        writeln!(out, "{line}")?;
    }
    let fix = format!("Fix: {}", truncation_fix(main, &prof.meta, grown_to(prof)));
    for line in wrap("              ", &fix, width) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// What to do about a truncation frame named `name`, in a recording made as `meta` says
/// whose stack copy grew to `grown_to` bytes (0: it did not grow).
pub fn truncation_fix(name: &str, meta: &hood_model::profile::RecordMeta, grown_to: u32) -> String {
    let call_graph = meta.call_graph.as_str();
    if name.contains("stack copy too small") && grown_to > 0 {
        format!(
            "the recorder grew the stack copy to {grown_to} bytes (at most 65528, the most a \
             sample holds, and a quarter second of samples per CPU ring: a bigger --ring-kb \
             lets it grow further); deeper stacks are continued by the kernel's frame-pointer \
             chain through code built with -fno-omit-frame-pointer"
        )
    } else if name.contains("stack copy too small") {
        let mode = call_graph
            .split(',')
            .next()
            .filter(|m| !m.is_empty())
            .unwrap_or("auto");
        format!("record with a bigger stack copy, e.g. `hood record --call-graph {mode},32768` (at most 65528)")
    } else if name.contains("perf_event_max_stack") {
        let limit = meta
            .perf_event_max_stack
            .map_or("its value".to_string(), |n| format!("{n} when recorded"));
        format!(
            "the kernel's call chain, which continues a stack deeper than the stack copy by \
             frame pointers, stops at kernel.perf_event_max_stack frames ({limit}): raise it \
             for the recording (`sudo sysctl kernel.perf_event_max_stack=1024`), or copy more \
             of the stack (`hood record --call-graph auto,65528`)"
        )
    } else if name.contains("JIT or anonymous code") {
        "code generated at run time that neither its frame pointer nor a short scan of the stack steps out of; if the runtime keeps frame pointers, `hood record --call-graph fp` follows them".into()
    } else if name.contains("no unwind info") {
        "code with neither call frame information nor a frame pointer to follow (code that keeps frame pointers without it, such as V8's builtins in node, is followed by them): install the binary's debug file under /usr/lib/debug/.build-id, or rebuild it with -fasynchronous-unwind-tables or -fno-omit-frame-pointer; nothing to fix when rare".into()
    } else if name.contains("outside known mappings") {
        "usually code that ran before the process's mappings were seen (exec in progress) or JIT code without a perf map; nothing to fix when rare".into()
    } else if call_graph.is_empty() || call_graph == "fp" {
        "record with `--call-graph auto` (the default) to unwind code built without frame pointers"
            .into()
    } else {
        "the code's call frame information could not be followed here (hand-written assembly that realigns the stack); nothing to fix when rare".into()
    }
}

fn render_losses(prof: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
    let lost = prof.lost();
    let received = prof.samples.len() as u64;
    if lost == 0 {
        writeln!(out, "Lost samples: 0")?;
    } else {
        writeln!(
            out,
            "Lost samples: {lost} ({:.2}% of {} generated){}",
            pct(lost, lost + received),
            lost + received,
            per_cpu(prof, |c| c.lost)
        )?;
    }
    let thr = throttled(prof);
    if thr > 0 {
        writeln!(
            out,
            "Throttled:    {thr} times (the kernel lowered the rate){}",
            per_cpu(prof, |c| c.throttled)
        )?;
    }
    if prof.stats.is_none() {
        writeln!(
            out,
            "Not finalized: the recorder was stopped abruptly; counts come from the stream"
        )?;
    }
    Ok(())
}

/// ` — cpu0 3, cpu1 1` for the non-zero CPUs, or empty.
fn per_cpu(prof: &Profile, f: impl Fn(&hood_model::profile::CpuCounts) -> u64) -> String {
    let Some(s) = &prof.stats else {
        return String::new();
    };
    let parts: Vec<String> = s
        .per_cpu
        .iter()
        .filter(|(_, c)| f(c) > 0)
        .map(|(cpu, c)| format!("cpu{cpu} {}", f(c)))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" — {}", parts.join(", "))
    }
}

fn render_rate(prof: &Profile, out: &mut dyn Write) -> Result<(), ReportError> {
    let ns = active_ns(prof);
    if ns == 0 || prof.samples.is_empty() {
        return Ok(());
    }
    let cpus = cpu_count(prof);
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match achieved_hz_per_thread(prof) {
        // A command or pids: a thread is sampled only while it runs, so the rate is per
        // running thread (a single-threaded target on 2 CPUs gets the asked rate, not half).
        Some((hz, threads, at_once)) => {
            let samples = (hz * at_once as f64 * ns as f64 / 1e9).round();
            writeln!(
                out,
                "Sample rate:  {hz:.1} Hz per running thread (asked {} Hz): {samples} samples / {} / \
                 {at_once} thread{}",
                prof.meta.freq_hz,
                secs(ns),
                plural(at_once)
            )?;
            let how = if threads > at_once {
                format!("{threads} threads on {cpus} CPUs, at most {at_once} at a time; ")
            } else {
                String::new()
            };
            writeln!(
                out,
                "              ({how}a thread is sampled only while it runs)"
            )?;
        }
        None => writeln!(
            out,
            "Sample rate:  {:.1} Hz per CPU (asked {} Hz): {} samples / {} / {} CPU{}",
            achieved_hz(prof),
            prof.meta.freq_hz,
            prof.samples.len(),
            secs(ns),
            cpus,
            plural(cpus)
        )?,
    }
    Ok(())
}

/// Notes, errors and warnings, each wrapped to `width` (they are sentences, not cut).
fn render_notes(prof: &Profile, width: usize, out: &mut dyn Write) -> Result<(), ReportError> {
    let mut say = |first: &str, text: &str| -> Result<(), ReportError> {
        for line in wrap(first, &safe::text(text), width) {
            writeln!(out, "{line}")?;
        }
        Ok(())
    };
    for n in &prof.meta.notes {
        say("Note: ", n)?;
    }
    if let Some(e) = prof.stats.as_ref().and_then(|s| s.error.as_ref()) {
        say("Error: ", &format!("the recording ended early: {e}"))?;
    }
    for w in &prof.warnings {
        say("Warning: ", w)?;
    }
    Ok(())
}
