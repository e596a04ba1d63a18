//! `hood diff BASE NEW`: two profile recordings read as `hood report` reads them (hood's
//! files or perf.data), compared row by row in hood-model, rendered by hood-report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::diff::{diff, DiffBy};
use hood_model::profile::Profile;
use hood_report::profile::diff::{self as render, DiffTextOptions, DiffView};

use super::report::{load_profile, SymbolOpts, Written};

/// What the rows of `hood diff` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffByArg {
    /// The sampled function, matched by name (so a rebuilt binary's functions meet theirs).
    Function,
    /// Process names.
    Comm,
    /// Files of the sampled code (executables, libraries, `[kernel.kallsyms]`).
    Dso,
    /// Source lines of the sampled code (`dir/file:line`, needs debug info).
    Line,
    /// Call paths (two `hood calls` or two `hood trace` recordings).
    Path,
}

/// Output format of `hood diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormatArg {
    /// A table, largest change first.
    Text,
    /// Versioned JSON (docs/json.md).
    Json,
    /// `stack BASE_COUNT NEW_COUNT` lines (difffolded.pl's and inferno-diff-folded's output).
    Collapsed,
    /// Differential flame graph: NEW's shape, red where time grew, blue where it shrank.
    Svg,
    /// pprof with BASE subtracted (BASE's samples negated, labeled `pprof::base`), gzipped.
    Pprof,
}

/// The order of the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffSortArg {
    /// By the size of the change of time, either way (as `go tool pprof -top -diff_base`).
    Time,
    /// By the size of the change of share in points, either way (as `perf diff`).
    Points,
}

/// Arguments of `hood diff`.
#[derive(Debug, Clone, Args)]
#[command(
    after_help = "A row's change is marked `noise` when it is within the sampling error \
of the two sample counts: |z| < 2.576 (two-sided 99 %), z being the change of time divided by \
the square root of the sum of the squared sample weights of both recordings (Poisson counts). \
Rows are matched by name, so the functions of a binary rebuilt (another build-id, other \
addresses, another directory) meet theirs. Two `hood calls` or two `hood trace` recordings \
compare calls (exact) and own time per function or --by path; a trace's times are judged by \
the calls' own variation, a call-path table's by no rule (it holds sums only). \
`--reconcile CALLS PROFILE` holds a call profile against a profile of the same program. \
Details: README, section \"Comparing two recordings\".",
    mut_arg("comm", |a| a.help("Only processes with this name (in both recordings)")),
    mut_arg("wall", |a| a.help(
        "Wall-clock time (both recordings made with `--off-cpu`): CPU samples and waits"
    )),
    mut_arg("off_cpu", |a| a.help("Only off-CPU time (both recordings made with `--off-cpu`)")),
)]
pub struct DiffArgs {
    /// The recording before the change: a profile (hood's own, or a perf.data file), a
    /// `hood calls` or a `hood trace` recording; or `-i BASE`. With --reconcile: the
    /// `hood calls` recording.
    #[arg(value_name = "BASE", required_unless_present = "input")]
    pub base: Option<PathBuf>,
    /// The recording after the change, of the same kind; or a second `-i NEW`. With
    /// --reconcile: the profile of the same program (`hood record`, best with --off-cpu).
    #[arg(value_name = "NEW", required_unless_present = "input")]
    pub new: Option<PathBuf>,
    /// The two recordings as every reading command takes its input: `-i BASE -i NEW`.
    #[arg(
        short = 'i',
        long = "input",
        value_name = "FILE",
        conflicts_with_all = ["base", "new"]
    )]
    pub input: Vec<PathBuf>,
    /// Hold a call profile (`hood calls`) against a statistical profile of the same program:
    /// per function both shares and what explains their difference (library code, blocked
    /// time, the hooks' cost). `hood diff --reconcile CALLS PROFILE`.
    #[arg(long = "reconcile")]
    pub reconcile: bool,
    /// What the rows are.
    #[arg(long = "by", value_enum, default_value_t = DiffByArg::Function)]
    pub by: DiffByArg,
    /// `--comm`, `--kernel`/`--user`, `--wall`, `--off-cpu` (help lines set above).
    #[command(flatten)]
    pub samples: crate::cmd::select::SampleFilter,
    /// The order of the rows.
    #[arg(long = "sort", value_enum, default_value_t = DiffSortArg::Time)]
    pub sort: DiffSortArg,
    /// Rows of the text table (0: all).
    #[arg(long = "top", value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Output format.
    #[arg(long = "format", value_enum, default_value_t = DiffFormatArg::Text)]
    pub format: DiffFormatArg,
    /// Draw the differential flame graph (--format svg) in BASE's shape instead of NEW's, so
    /// that code only BASE ran shows (in blue); colours still show the change to NEW.
    #[arg(long = "base-shape")]
    pub base_shape: bool,
    /// `-o`, how code is named, `--width`.
    #[command(flatten)]
    pub out: Written,
}

/// Read one side, naming it in any error.
fn load(path: &Path, which: &str, opts: &SymbolOpts) -> anyhow::Result<Profile> {
    crate::cmd::note_killed_writers(path, hood_format::FileKind::Profile);
    load_profile(path, opts).map_err(|e| {
        let e = super::missing_file(
            e,
            path,
            "name two profile recordings, made by `hood record` or `perf record`",
        );
        e.context(which.to_string())
    })
}

impl DiffArgs {
    /// BASE and NEW, from `-i BASE -i NEW` or named after the options.
    fn files(&self) -> anyhow::Result<(PathBuf, PathBuf)> {
        match (&self.input[..], &self.base, &self.new) {
            ([b, n], None, None) | ([], Some(b), Some(n)) => Ok((b.clone(), n.clone())),
            _ => anyhow::bail!(
                "hood diff compares two recordings: give `-i BASE -i NEW` (or `BASE NEW`)"
            ),
        }
    }
}

/// What a file holds, as far as `hood diff` cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A profile: hood's, or perf.data.
    Profile,
    /// `hood calls`.
    Calls,
    /// `hood trace`.
    Trace,
    /// Not readable as a recording (missing, empty, damaged): the profile reader names the
    /// problem.
    Unknown,
}

/// What `path` holds; a file `hood diff` does not read (a monitor segment, a newer hood's
/// file) is refused here with what it is and what reads it.
fn kind_of(path: &Path) -> anyhow::Result<Kind> {
    use hood_load::Kind as K;
    match hood_load::open_for(path, hood_load::Command::Diff) {
        Ok(K::Calls) => Ok(Kind::Calls),
        Ok(K::Trace) => Ok(Kind::Trace),
        Ok(_) => Ok(Kind::Profile),
        Err(e @ hood_load::LoadError::WrongKind(_)) => Err(e.into()),
        Err(_) => Ok(Kind::Unknown),
    }
}

fn kind_words(k: Kind) -> &'static str {
    match k {
        Kind::Profile => "a profile (`hood record`, perf.data)",
        Kind::Calls => "a call-path recording (`hood calls`)",
        Kind::Trace => "a trace (`hood trace`)",
        Kind::Unknown => "not a recording",
    }
}

/// Run `hood diff`.
pub fn run(args: &DiffArgs) -> anyhow::Result<ExitCode> {
    let (base_path, new_path) = args.files()?;
    let (kb, kn) = (kind_of(&base_path)?, kind_of(&new_path)?);
    if args.reconcile {
        return super::diff_calls::reconcile(
            args,
            (&base_path, kb == Kind::Calls),
            (&new_path, kn == Kind::Calls),
        );
    }
    match (kb, kn) {
        (Kind::Calls, Kind::Calls) | (Kind::Trace, Kind::Trace) => {
            return super::diff_calls::run(args, kb == Kind::Trace, &base_path, &new_path)
        }
        // A file that is no recording is named, with its problem, by the profile reader.
        (Kind::Profile, Kind::Profile) | (Kind::Unknown, _) | (_, Kind::Unknown) => {}
        _ => {
            let (b, n) = (base_path.display(), new_path.display());
            let fix = if matches!(
                (kb, kn),
                (Kind::Calls, Kind::Profile) | (Kind::Profile, Kind::Calls)
            ) {
                let (c, p) = if kb == Kind::Calls {
                    (&b, &n)
                } else {
                    (&n, &b)
                };
                format!("a call profile is held against a profile of the same program with `hood diff --reconcile {c} {p}`")
            } else {
                "compare two recordings of one kind: two profiles, two `hood calls` or two `hood trace` recordings (or a `hood calls` recording and a profile with --reconcile)".to_string()
            };
            anyhow::bail!(
                "BASE {b} is {} and NEW {n} is {}: they measure different things; {fix}",
                kind_words(kb),
                kind_words(kn)
            );
        }
    }
    if args.base_shape && args.format != DiffFormatArg::Svg {
        anyhow::bail!("--base-shape shapes the differential flame graph: add --format svg");
    }
    if args.by == DiffByArg::Path {
        anyhow::bail!(
            "--by path compares call paths of two `hood calls` or two `hood trace` recordings; {} and {} are profiles: use --by function|comm|dso|line",
            base_path.display(),
            new_path.display()
        );
    }
    if args.format == DiffFormatArg::Pprof {
        super::refuse_binary_on_terminal(args.out.output.as_deref(), "pprof", "diff.pb.gz")?;
    }
    let measure = args.samples.measure(false);
    let filter = Filter {
        comm: args.samples.comm.clone(),
        mode: args.samples.mode(),
        measure,
        ..Filter::default()
    };
    // The two are read at once: most of a report's time is reading and symbolizing.
    let (base, new) = std::thread::scope(|s| {
        let base = std::thread::Builder::new()
            .name("base".into())
            .spawn_scoped(s, || load(&base_path, "BASE", &args.out.symbols));
        let new = load(&new_path, "NEW", &args.out.symbols);
        let base = match base {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("reading BASE failed"))),
            Err(_) => load(&base_path, "BASE", &args.out.symbols),
        };
        (base, new)
    });
    let (base, new) = (base?, new?);
    for (p, path) in [(&base, &base_path), (&new, &new_path)] {
        if measure != Measure::CpuSamples && p.meta.off_cpu.is_none() {
            anyhow::bail!(
                "{} holds no off-CPU data, which --wall and --off-cpu compare: record both with `hood record --off-cpu`",
                path.display()
            );
        }
    }
    for (p, which) in [(&base, "BASE"), (&new, "NEW")] {
        for w in &p.warnings {
            errln!("hood: warning: {which}: {}", crate::cmd::clean(w));
        }
    }
    let empty: Vec<&PathBuf> = [(&base, &base_path), (&new, &new_path)]
        .into_iter()
        .filter(|(p, _)| filter.samples(p).next().is_none())
        .map(|(_, path)| path)
        .collect();
    if !empty.is_empty() {
        let what = if filter.comm.is_some() || filter.mode.is_some() {
            " that passes the filter"
        } else {
            ""
        };
        for path in empty {
            errln!(
                "hood: {} holds no sample{what}: nothing to compare; `hood report -i {}` shows what it holds",
                path.display(),
                path.display()
            );
        }
        return Ok(ExitCode::from(1));
    }
    let by = match args.by {
        DiffByArg::Function => DiffBy::Function,
        DiffByArg::Comm => DiffBy::Comm,
        DiffByArg::Dso => DiffBy::Dso,
        DiffByArg::Line => DiffBy::Line,
        DiffByArg::Path => unreachable!("refused above"),
    };
    let mut d = diff(&base, &new, &filter, by);
    if args.sort == DiffSortArg::Points {
        d.sort_by_points();
    }
    for w in &d.warnings {
        errln!("hood: warning: {}", crate::cmd::clean(w));
    }
    let (bs, ns) = (
        base_path.display().to_string(),
        new_path.display().to_string(),
    );
    let view = DiffView {
        base: &base,
        new: &new,
        base_source: &bs,
        new_source: &ns,
        filter: &filter,
        diff: &d,
    };
    let mut out = super::Output::open(args.out.output.as_deref())?;
    match args.format {
        DiffFormatArg::Text => {
            let opts = DiffTextOptions {
                rows: if args.top == 0 { usize::MAX } else { args.top },
                width: args.out.text_width(),
            };
            render::render_diff_text(&view, &opts, &mut out)?
        }
        DiffFormatArg::Json => render::render_diff_json(&view, &mut out)?,
        DiffFormatArg::Collapsed => render::render_diff_collapsed(&view, &mut out)?,
        DiffFormatArg::Svg => render::render_diff_svg(&view, args.base_shape, &mut out)?,
        DiffFormatArg::Pprof => {
            hood_report::pprof::diff::render_pprof_diff(&base, &new, &filter, &mut out)?
        }
    }
    out.finish()?;
    // The process ends here: freeing two profiles' allocations one by one is only time.
    std::mem::forget(base);
    std::mem::forget(new);
    Ok(ExitCode::SUCCESS)
}
