//! `hood diff` of two call-path recordings (`hood calls`, `hood trace`) and
//! `hood diff --reconcile CALLS PROFILE`: the files read here, compared in hood-model
//! ([`hood_tracemodel::calls::calls_diff`], [`hood_reconcile`]), rendered by hood-report.

use std::path::Path;
use std::process::ExitCode;

use hood_report::calls::diff::{
    render_calls_diff_json, render_calls_diff_text, render_reconcile_json, render_reconcile_text,
    CallsDiffTextOptions, CallsSource,
};
use hood_tracemodel::calls::{
    calls_diff, calls_side, CallsBy, CallsSide, ProcessCalls, TraceCalls,
};
use hood_tracemodel::trace::Events;

use super::diff::{DiffArgs, DiffByArg, DiffFormatArg, DiffSortArg};

/// Options of the profile diff that have no meaning here, named in the refusal.
fn refuse_profile_options(args: &DiffArgs, what: &str) -> anyhow::Result<()> {
    let given: Vec<&str> = [
        (args.samples.kernel, "--kernel"),
        (args.samples.user, "--user"),
        (args.samples.wall, "--wall"),
        (args.samples.off_cpu, "--off-cpu"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name)
    .collect();
    if !given.is_empty() {
        anyhow::bail!(
            "{} select{} samples of a profile and do{} not apply to {what}",
            given.join(", "),
            if given.len() == 1 { "s" } else { "" },
            if given.len() == 1 { "es" } else { "" },
        );
    }
    if !matches!(args.format, DiffFormatArg::Text | DiffFormatArg::Json) {
        anyhow::bail!("{what} is written as --format text or json");
    }
    Ok(())
}

fn read_calls(path: &Path, which: &str, comm: Option<&str>) -> anyhow::Result<Vec<ProcessCalls>> {
    crate::cmd::note_killed_writers(path, hood_format::FileKind::Calls);
    let file = hood_load::calls::read(path, &mut |w| {
        errln!("hood: warning: {which}: {}", crate::cmd::clean(w))
    })
    .map_err(|e| anyhow::Error::from(e).context(which.to_string()))?;
    let mut procs = file.procs;
    if let Some(c) = comm {
        procs.retain(|p| p.comm() == c);
    }
    Ok(procs)
}

fn read_trace(
    path: &Path,
    which: &str,
    by: CallsBy,
    comm: Option<&str>,
) -> anyhow::Result<CallsSide> {
    crate::cmd::note_killed_writers(path, hood_format::FileKind::Trace);
    let trace = hood_load::trace::TraceFile::open(path)
        .map_err(|e| anyhow::Error::from(e).context(which.to_string()))?;
    let head = trace.head();
    for w in &head.warnings {
        errln!(
            "hood: warning: {which}: {}",
            crate::cmd::clean(format!("{}: {w}", path.display()))
        );
    }
    let pids: Option<std::collections::HashSet<u32>> = comm.map(|c| {
        head.processes
            .iter()
            .filter(|p| p.exe.rsplit('/').next() == Some(c))
            .map(|p| p.pid)
            .collect()
    });
    let mut walk = TraceCalls::new(head, by);
    trace
        .for_each_events(
            &|k| pids.as_ref().is_none_or(|s| s.contains(&k.pid)),
            &mut |te| {
                walk.feed(&te);
                Ok(())
            },
        )
        .map_err(|e| anyhow::Error::from(e).context(which.to_string()))?;
    let mut side = walk.finish();
    if let Some(s) = &pids {
        side.processes = s.len();
    }
    Ok(side)
}

/// `hood diff BASE NEW` of two `hood calls` (`trace` false) or two `hood trace` recordings.
pub fn run(
    args: &DiffArgs,
    trace: bool,
    base_path: &Path,
    new_path: &Path,
) -> anyhow::Result<ExitCode> {
    let kind = if trace { "trace" } else { "calls" };
    refuse_profile_options(args, &format!("two `hood {kind}` recordings"))?;
    let by = match args.by {
        DiffByArg::Function => CallsBy::Function,
        DiffByArg::Path => CallsBy::Path,
        other => anyhow::bail!(
            "--by {} is a row of profiles; two `hood {kind}` recordings are compared --by function or --by path",
            match other {
                DiffByArg::Comm => "comm",
                DiffByArg::Dso => "dso",
                _ => "line",
            }
        ),
    };
    let comm = args.samples.comm.as_deref();
    let side = |path: &Path, which: &str| -> anyhow::Result<CallsSide> {
        if trace {
            read_trace(path, which, by, comm)
        } else {
            let procs = read_calls(path, which, comm)?;
            // Path rows hold every path's functions: measured first and refused over the
            // cap, as `hood calls report` does.
            if by == CallsBy::Path {
                crate::cmd::calls::report::check_path_sizes(&procs, false, path, &|_| {
                    format!(
                        "compare it per function with `hood diff --by function {} {}`",
                        crate::cmd::clean(base_path.display()),
                        crate::cmd::clean(new_path.display())
                    )
                })
                .map_err(|e| e.context(which.to_string()))?;
            }
            Ok(calls_side(&procs, by))
        }
    };
    let (base, new) = (side(base_path, "BASE")?, side(new_path, "NEW")?);
    for (s, which) in [(&base, "BASE"), (&new, "NEW")] {
        for n in &s.notes {
            errln!("hood: note: {which}: {}", crate::cmd::clean(n));
        }
    }
    let mut empty = false;
    for (s, path) in [(&base, base_path), (&new, new_path)] {
        if s.rows.is_empty() {
            empty = true;
            errln!(
                "hood: {} holds no calls{}: nothing to compare; `hood {kind} report {}` shows what it holds",
                path.display(),
                comm.map(|c| format!(" of a process named {c}")).unwrap_or_default(),
                path.display()
            );
        }
    }
    if empty {
        return Ok(ExitCode::from(1));
    }
    let mut d = calls_diff(&base, &new, by);
    if args.sort == DiffSortArg::Points {
        d.sort_by_points();
    }
    let (bs, ns) = (
        base_path.display().to_string(),
        new_path.display().to_string(),
    );
    let (b, n) = (
        CallsSource { source: &bs, kind },
        CallsSource { source: &ns, kind },
    );
    let mut out = super::Output::open(args.out.output.as_deref())?;
    if args.format == DiffFormatArg::Json {
        render_calls_diff_json(&d, &b, &n, &mut out)?;
    } else {
        let opts = CallsDiffTextOptions {
            rows: if args.top == 0 { usize::MAX } else { args.top },
            width: args.out.text_width(),
        };
        render_calls_diff_text(&d, &b, &n, &opts, &mut out)?;
    }
    out.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// `hood diff --reconcile CALLS PROFILE` (either order: the kinds tell them apart);
/// each side is its path and whether it is the call-path recording.
pub fn reconcile(
    args: &DiffArgs,
    (base_path, base_is_calls): (&Path, bool),
    (new_path, new_is_calls): (&Path, bool),
) -> anyhow::Result<ExitCode> {
    refuse_profile_options(args, "--reconcile")?;
    if args.by != DiffByArg::Function {
        anyhow::bail!("--reconcile compares functions; leave out --by");
    }
    let (calls_path, prof_path) = match (base_is_calls, new_is_calls) {
        (true, false) => (base_path, new_path),
        (false, true) => (new_path, base_path),
        (both, _) => anyhow::bail!(
            "--reconcile holds one `hood calls` recording against one profile of the same program (`hood record`); {} and {} are {}: `hood diff --reconcile CALLS.data PROFILE.data`",
            base_path.display(),
            new_path.display(),
            if both { "both call-path recordings" } else { "neither a call-path recording" }
        ),
    };
    let procs = read_calls(calls_path, "CALLS", args.samples.comm.as_deref())?;
    if procs.is_empty() {
        errln!(
            "hood: {} holds no process{}: nothing to reconcile; `hood calls report {}` shows what it holds",
            calls_path.display(),
            args.samples.comm
                .as_deref()
                .map(|c| format!(" named {c}"))
                .unwrap_or_default(),
            calls_path.display()
        );
        return Ok(ExitCode::from(1));
    }
    crate::cmd::note_killed_writers(prof_path, hood_format::FileKind::Profile);
    let prof = super::report::load_profile(prof_path, &args.out.symbols).map_err(|e| {
        super::missing_file(
            e,
            prof_path,
            "name a profile of the same program, made by `hood record` (best with --off-cpu) or `perf record`",
        )
        .context("PROFILE")
    })?;
    for w in &prof.warnings {
        errln!("hood: warning: PROFILE: {}", crate::cmd::clean(w));
    }
    let r = hood_reconcile::reconcile(&procs, &prof);
    for w in &r.warnings {
        errln!("hood: warning: {}", crate::cmd::clean(w));
    }
    let (cs, ps) = (
        calls_path.display().to_string(),
        prof_path.display().to_string(),
    );
    let mut out = super::Output::open(args.out.output.as_deref())?;
    if args.format == DiffFormatArg::Json {
        render_reconcile_json(&r, &cs, &ps, &mut out)?;
    } else {
        let opts = CallsDiffTextOptions {
            rows: if args.top == 0 { usize::MAX } else { args.top },
            width: args.out.text_width(),
        };
        render_reconcile_text(&r, &cs, &ps, &opts, &mut out)?;
    }
    out.finish()?;
    std::mem::forget(prof);
    if r.samples == 0 {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
