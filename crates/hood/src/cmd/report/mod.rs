//! `hood report`: read a recording, symbolize each unique address once, render.

mod args;
mod resolver;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use hood_model::labels::LabelsRecording;
use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::Profile;
use hood_report::profile as render;

pub use args::{CallGraphArg, FormatArg, ReportArgs, SymbolOpts, Written};
pub use resolver::symbolizer_options;

/// Load and symbolize the recording at `path` with the user's naming options (`--full-names`,
/// `--no-inline`, ...; `SymbolOpts::default()` for short names).
/// `HOOD_TIMING` set: the two phases' times on standard error, and how many file addresses
/// the symbol cache answered.
pub fn load_profile(path: &Path, sym_opts: &SymbolOpts) -> anyhow::Result<Profile> {
    let (prof, t) = hood_load::load_profile_timed(path, symbolizer_options(sym_opts))?;
    print_timing(&t);
    Ok(prof)
}

/// [`load_profile`], with the recording's `--labels` part read in the same pass (`None`:
/// recorded without it).
fn load_profile_labeled(
    path: &Path,
    sym_opts: &SymbolOpts,
) -> anyhow::Result<(Profile, Option<LabelsRecording>)> {
    let (prof, labels, t) = hood_load::load_profile_labeled(path, symbolizer_options(sym_opts))?;
    print_timing(&t);
    Ok((prof, labels))
}

/// The load's timing lines, with `HOOD_TIMING` set.
fn print_timing(t: &hood_load::LoadTiming) {
    if std::env::var_os("HOOD_TIMING").is_some() {
        errln!(
            "hood: load {:.1} ms, interpret+symbolize {:.1} ms",
            t.load_ms,
            t.symbolize_ms
        );
        errln!(
            "hood: file addresses: {} from the symbol cache, {} read from symbol tables and debug info",
            t.from_cache,
            t.from_files
        );
    }
}

impl ReportArgs {
    /// The renderer's options.
    pub fn to_options(&self) -> anyhow::Result<render::ReportOptions> {
        if !(0.0..=100.0).contains(&self.min_percent) {
            anyhow::bail!(
                "--min-percent {}: give a percentage between 0 and 100",
                self.min_percent
            );
        }
        let by_waker = self.by == render::By::Waker;
        let measure = self
            .samples
            .measure(by_waker || self.by == render::By::Reason);
        let filter = Filter {
            pid: self.select.pid,
            tid: self.select.tid,
            comm: self.samples.comm.clone(),
            mode: self.samples.mode(),
            measure,
            by_waker,
        };
        Ok(render::ReportOptions {
            min_percent: self.min_percent,
            by: self.by,
            filter,
            call_graph: match self.call_graph {
                None => render::CallGraph::None,
                Some(CallGraphArg::Caller) => render::CallGraph::Caller,
                Some(CallGraphArg::Callee) => render::CallGraph::Callee,
            },
            source: self.input.display().to_string(),
            width: self.out.text_width(),
            ..render::ReportOptions::default()
        })
    }
}

/// The width of a text report: `--width` (0: no limit), else the terminal's when standard
/// output is one (not `to_file`), else `COLUMNS`, else 120.
fn text_width(width: Option<usize>, to_file: bool) -> usize {
    use std::io::IsTerminal as _;
    match width {
        Some(0) => usize::MAX,
        Some(w) => w,
        None if !to_file && std::io::stdout().is_terminal() => {
            hood_tui::terminal_width().map_or(120, usize::from)
        }
        None => std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse().ok())
            .filter(|&c: &usize| c > 0)
            .unwrap_or(120),
    }
}

/// Run `hood report`.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let opts = args.to_options()?;
    match args.format {
        FormatArg::Pprof => {
            super::refuse_binary_on_terminal(args.out.output.as_deref(), "pprof", "profile.pb.gz")?
        }
        FormatArg::Firefox => super::refuse_binary_on_terminal(
            args.out.output.as_deref(),
            "firefox",
            "profile.json.gz",
        )?,
        _ => {}
    }
    crate::cmd::note_killed_writers(&args.input, hood_format::FileKind::Profile);
    let loaded = hood_load::open_for(&args.input, hood_load::Command::Report)
        .map_err(anyhow::Error::from)
        .and_then(|_| match args.labels {
            true => load_profile_labeled(&args.input, &args.out.symbols),
            false => load_profile(&args.input, &args.out.symbols).map(|p| (p, None)),
        });
    let (prof, labels) = loaded.map_err(|e| {
        super::missing_file(
            e,
            &args.input,
            "record one with `hood record -- COMMAND`, or name a recording with -i FILE",
        )
    })?;
    if opts.filter.measure != Measure::CpuSamples && prof.meta.off_cpu.is_none() {
        anyhow::bail!(
            "{} holds no off-CPU data, which --wall, --off-cpu, --by reason and --by waker \
             show: record with `hood record --off-cpu`",
            args.input.display()
        );
    }
    let mut out = super::Output::open(args.out.output.as_deref())?;
    // The text report shows warnings in its header; other formats have no place for them.
    if args.intervals || args.format != FormatArg::Text {
        for w in &prof.warnings {
            errln!("hood: warning: {}", crate::cmd::clean(w));
        }
    }
    let t = Instant::now();
    if args.labels {
        render_labels(args, &prof, labels, &opts, &mut out)?;
    } else if args.format == FormatArg::Gprof {
        anyhow::bail!("--format gprof is the labeled call graph: add --labels (and record with `hood record --labels`)");
    } else if args.intervals {
        render::render_intervals(&prof, &opts, &mut out)?;
    } else {
        match args.format {
            FormatArg::Text => render::render_text(&prof, &opts, &mut out)?,
            FormatArg::Json => render::render_json(&prof, &opts, &mut out)?,
            FormatArg::Collapsed => render::render_collapsed(&prof, &opts, &mut out)?,
            FormatArg::Svg => render::render_svg(&prof, &opts, &mut out)?,
            FormatArg::Pprof => hood_report::pprof::render_pprof(&prof, &opts, &mut out)?,
            FormatArg::Firefox => hood_report::firefox::render_firefox(&prof, &opts, &mut out)?,
            FormatArg::Gprof => unreachable!("handled above"),
        }
    }
    out.finish()?;
    if std::env::var_os("HOOD_TIMING").is_some() {
        errln!("hood: render {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        errln!(
            "hood: {} chunks read from recordings",
            hood_format::payloads_read()
        );
    }
    let empty = prof.samples.is_empty();
    let filtered = opts.filter.pid.is_some()
        || opts.filter.tid.is_some()
        || opts.filter.comm.is_some()
        || opts.filter.mode.is_some();
    let none_match = filtered && opts.filter.samples(&prof).next().is_none();
    // The process ends here: handing the profile's memory (tens of thousands of small
    // allocations) back to the allocator one by one would only cost time (~5 % of a report).
    std::mem::forget(prof);
    if empty {
        errln!("hood: the recording holds no samples");
        return Ok(ExitCode::from(1));
    }
    // Nothing found (exit status 1, docs/cli.md): a --pid, --tid, --comm, --kernel or --user that
    // no sample matches.
    if none_match {
        let mut what = args.select.words();
        if let Some(c) = &args.samples.comm {
            what.push(format!("--comm {c}"));
        }
        if args.samples.kernel {
            what.push("--kernel".into());
        }
        if args.samples.user {
            what.push("--user".into());
        }
        errln!(
            "hood: no sample in {} matches {}; `hood report -i {} --by {}` lists the {} sampled",
            args.input.display(),
            what.join(" "),
            args.input.display(),
            if args.select.tid.is_some() {
                "thread"
            } else {
                "process"
            },
            if args.select.tid.is_some() {
                "threads"
            } else {
                "processes"
            }
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `hood report --labels`: charge the samples with the recording's labels events and render.
fn render_labels(
    args: &ReportArgs,
    prof: &Profile,
    labels: Option<LabelsRecording>,
    opts: &render::ReportOptions,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    use hood_report::labels as lr;
    if args.select.tid.is_some() {
        anyhow::bail!(
            "--labels charges work to processes, not threads: use -p/--pid instead of --tid"
        );
    }
    let Some(mut rec) = labels else {
        anyhow::bail!(
            "{}: recorded without --labels; record with `hood record --labels ...` (as root)",
            args.input.display()
        );
    };
    let labeled = rec.analyze(prof)?;
    let view = lr::LabeledView {
        prof,
        labeled: &labeled,
        source: &opts.source,
        pid: args.select.pid,
        comm: args.samples.comm.as_deref(),
    };
    for w in &prof.warnings {
        errln!("hood: warning: {}", crate::cmd::clean(w));
    }
    match args.format {
        FormatArg::Text => lr::render_labels_text(&view, opts.min_percent, out)?,
        FormatArg::Gprof => lr::render_labels_gprof(&view, out)?,
        FormatArg::Collapsed => lr::render_labels_collapsed(&view, out)?,
        FormatArg::Pprof => hood_report::pprof::render_pprof_labeled(&view, out)?,
        other => anyhow::bail!(
            "--labels renders text, gprof, collapsed or pprof, not {other:?}; drop --labels for the plain profile"
        ),
    }
    Ok(())
}

/// The recorder's `p` key: the top functions of the file written so far.
pub fn print_live_top(path: &Path, n: usize) -> anyhow::Result<()> {
    let prof = load_profile(path, &SymbolOpts::default())?;
    let mut err = std::io::stderr().lock();
    render::render_top(&prof, n, &mut err)?;
    Ok(())
}
