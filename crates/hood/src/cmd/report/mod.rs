//! `hood report`: read a recording, symbolize each unique address once, render.

mod args;
mod resolver;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use hood_model::profile::aggregate::Filter;
use hood_model::profile::{build_profile, Mode, Profile, RawRecording};
use hood_report::profile as render;

pub use args::{ByArg, CallGraphArg, FormatArg, ReportArgs};
use resolver::SymResolver;

/// Load and symbolize the recording at `path`.
pub fn load_profile(path: &Path, symfile: Option<&Path>) -> anyhow::Result<Profile> {
    let t0 = Instant::now();
    let raw = RawRecording::load(path)?;
    let t1 = Instant::now();
    let mut resolver = SymResolver::new(symfile, &raw.kallsyms, &raw.vdso, &raw.perf_maps)?;
    let prof = build_profile(&raw, &mut resolver);
    if std::env::var_os("HOOD_TIMING").is_some() {
        eprintln!(
            "hood: load {:.1} ms, interpret+symbolize {:.1} ms",
            (t1 - t0).as_secs_f64() * 1e3,
            t1.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(prof)
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
        let filter = Filter {
            pid: self.pid,
            comm: self.comm.clone(),
            mode: if self.kernel {
                Some(Mode::Kernel)
            } else if self.user {
                Some(Mode::User)
            } else {
                None
            },
        };
        Ok(render::ReportOptions {
            min_percent: self.min_percent,
            by: match self.by {
                ByArg::Function => render::By::Function,
                ByArg::Dso => render::By::Dso,
                ByArg::Process => render::By::Process,
                ByArg::Thread => render::By::Thread,
            },
            filter,
            call_graph: match self.call_graph {
                None => render::CallGraph::None,
                Some(CallGraphArg::Caller) => render::CallGraph::Caller,
                Some(CallGraphArg::Callee) => render::CallGraph::Callee,
            },
            source: self.input.display().to_string(),
            ..render::ReportOptions::default()
        })
    }
}

/// Run `hood report`.
pub fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let opts = args.to_options()?;
    let prof = load_profile(&args.input, args.symfile.as_deref())?;
    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout().lock())),
    };
    let t = Instant::now();
    if args.intervals {
        render::render_intervals(&prof, &opts, &mut out)?;
    } else {
        match args.format {
            FormatArg::Text => render::render_text(&prof, &opts, &mut out)?,
            FormatArg::Json => render::render_json(&prof, &opts, &mut out)?,
            FormatArg::Collapsed => render::render_collapsed(&prof, &opts, &mut out)?,
            FormatArg::Svg => render::render_svg(&prof, &opts, &mut out)?,
        }
    }
    out.flush()?;
    if std::env::var_os("HOOD_TIMING").is_some() {
        eprintln!("hood: render {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    if prof.samples.is_empty() {
        eprintln!("hood: the recording holds no samples");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The recorder's `p` key: the top functions of the file written so far.
pub fn print_live_top(path: &Path, n: usize) -> anyhow::Result<()> {
    let prof = load_profile(path, None)?;
    let mut err = std::io::stderr().lock();
    render::render_top(&prof, n, &mut err)?;
    Ok(())
}
