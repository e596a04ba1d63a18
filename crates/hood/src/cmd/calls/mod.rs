//! `hood calls run|get|reset|report`: call-path profiling with the hood-rt runtime. See
//! docs/calls.md.

pub(crate) mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use hood_hooks::calls::{self, GetConfig, Got, Message, Reset, RunConfig};
use hood_tracemodel::calls::ProcessCalls;

/// `hood calls`.
#[derive(Debug, Args)]
pub struct CallsArgs {
    #[command(subcommand)]
    pub command: CallsCommand,
}

/// The `hood calls` subcommands.
#[derive(Debug, Subcommand)]
pub enum CallsCommand {
    /// Run a program built with -finstrument-functions with the runtime preloaded and collect
    /// every process of its tree at exit.
    ///
    /// Ctrl-C, SIGTERM and SIGHUP are passed on to the program, and the file is written when it
    /// ends; a program that still runs 2 s after the signal is not recorded any further: the
    /// file is written with its tables as they are then, and hood waits for the program.
    Run(RunArgs),
    /// Attach to running processes and collect call paths of the functions --probe names
    /// (uprobes: no rebuild needed), for -d seconds or until Ctrl-C.
    Record(ProbeRecordArgs),
    /// Collect the tables of running and exited instrumented processes.
    Get(GetArgs),
    /// Reset the tables of running instrumented processes (honoured at their next hook).
    Reset(ResetArgs),
    /// Print a call-path file per path or per function.
    Report(ReportArgs),
}

/// `hood calls run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Output file.
    #[arg(short, long, default_value = "hood-calls.data")]
    pub output: PathBuf,
    /// Leave the segments in their directory after collecting them.
    #[arg(long)]
    pub keep: bool,
    /// Probe the functions SPEC names with uprobes instead of the runtime (no rebuild
    /// needed): GLOB for the program's functions ('parse_*', 'Foo::bar'), OBJECT:GLOB for a
    /// library's ('libc.so.6:malloc'). Repeatable. Programs a process execs and libraries
    /// it loads later (dlopen) are probed too, a few ms after they are mapped. Each call
    /// costs the program two kernel
    /// traps (a few µs, measured at the start and taken out of the own times unless
    /// HOOD_COMPENSATE=0); more than 1000 functions need --yes. Root only.
    #[arg(long, value_name = "SPEC", conflicts_with = "keep")]
    pub probe: Vec<String>,
    /// With --probe: go ahead when more than 1000 functions match.
    #[arg(long, requires = "probe")]
    pub yes: bool,
    /// Also sample the same run into PROFILE (default hood.data): `hood record --off-cpu -F 2999
    /// -o PROFILE` around this run, so that `hood diff --reconcile OUTPUT PROFILE` holds the
    /// two profilers side by side. Needs what `hood record --off-cpu` needs (root, or
    /// perf_event_paranoid -1).
    #[arg(
        long,
        value_name = "PROFILE",
        num_args = 0..=1,
        default_missing_value = "hood.data",
        require_equals = true,
        conflicts_with = "probe"
    )]
    pub sample: Option<PathBuf>,
    /// The command to run.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// `hood calls record`.
#[derive(Debug, Args)]
#[command(mut_arg("pid", |a| a.required(true).help(
    "The running processes (comma-separated; the specs are resolved in each one's own program \
and libraries); they run on unchanged afterwards"
)))]
pub struct ProbeRecordArgs {
    /// The functions to probe: GLOB or OBJECT:GLOB, as `hood calls run --probe` (repeatable).
    #[arg(long, value_name = "SPEC", required = true)]
    pub probe: Vec<String>,
    /// `-p/--pid` (help line set above).
    #[command(flatten)]
    pub pids: crate::cmd::select::Pids<u32>,
    /// Stop after SECS seconds (else at Ctrl-C or SIGTERM, or when the processes end).
    #[arg(short = 'd', long = "duration", value_name = "SECS", value_parser = crate::cmd::values::record_secs)]
    pub duration: Option<f64>,
    /// Go ahead when more than 1000 functions match.
    #[arg(long)]
    pub yes: bool,
    /// Output file.
    #[arg(short, long, default_value = "hood-calls.data")]
    pub output: PathBuf,
}

/// `hood calls get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// Only this process.
    #[arg(short, long)]
    pub pid: Option<u32>,
    /// Output file.
    #[arg(short, long, default_value = "hood-calls.data")]
    pub output: PathBuf,
    /// Do not remove the segments of processes that have ended.
    #[arg(long)]
    pub keep: bool,
}

/// `hood calls reset`.
#[derive(Debug, Args)]
pub struct ResetArgs {
    /// Only this process.
    #[arg(short, long)]
    pub pid: Option<u32>,
}

/// Sort order for `hood calls report`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SortArg {
    /// By name.
    Name,
    /// By calls.
    Calls,
    /// By time.
    Time,
    /// Table order.
    None,
}

/// Output format for `hood calls report`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// Calls and milliseconds per call path (`--notes` says how they are counted).
    Text,
    /// Versioned JSON.
    Json,
    /// Collapsed stacks (own µs per path).
    Collapsed,
    /// pprof profile.proto, gzipped (calls and own-body time per path; needs -o).
    Pprof,
}

/// `hood calls report`.
#[derive(Debug, Args)]
#[command(mut_arg("input", |a| a.help("The file written by `hood calls run`, `record` or `get` (default hood-calls.data)")))]
pub struct ReportArgs {
    /// `-i FILE`, or FILE after the options (`hood calls report FILE`).
    #[command(flatten)]
    pub input: crate::cmd::select::InputFile,
    /// Totals per function instead of per path.
    #[arg(short = 'f', long = "functions")]
    pub functions: bool,
    /// Sort order.
    #[arg(long, value_enum, default_value_t = SortArg::Time)]
    pub sort: SortArg,
    /// Lines per process.
    #[arg(short = 'n', long)]
    pub lines: Option<usize>,
    /// Print full paths (long paths are otherwise shortened).
    #[arg(long = "full-paths")]
    pub full_paths: bool,
    /// One set of rows per thread.
    #[arg(short = 'H', long)]
    pub threads: bool,
    /// Only this process (`-p/--pid`), only this thread (`--tid`).
    #[command(flatten)]
    pub select: crate::cmd::select::Select,
    /// After the text report, the notes that say how calls and times are counted (else one
    /// line).
    #[arg(long)]
    pub notes: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Write here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

/// Print a collection's line: segment warnings as hood's, the rest as `hood calls`'s.
fn say(m: Message) {
    match m {
        Message::Warning(w) => errln!("hood: warning: {}", super::clean(w)),
        Message::Note(n) => errln!("hood calls: {}", super::clean(n)),
    }
}

/// What was written where (the summary line every recorder prints), and the processes'
/// warnings of lost data.
fn summary(procs: &[ProcessCalls], out: &std::path::Path) {
    // The file is in place: its size is what was written (not following a link).
    let bytes = std::fs::symlink_metadata(out).map_or(0, |m| m.len());
    for line in hood_report::calls::render_summary(procs, out, bytes) {
        super::say_as("hood calls", &line);
    }
}

/// Run one `hood calls` subcommand.
pub fn run(args: CallsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CallsCommand::Run(a) if !a.probe.is_empty() => probe(
            a.probe,
            a.yes,
            hood_hooks::probe::ProbeRun::Command(a.command),
            None,
            a.output,
        ),
        CallsCommand::Record(a) => probe(
            a.probe,
            a.yes,
            hood_hooks::probe::ProbeRun::Pids(a.pids.pid),
            a.duration,
            a.output,
        ),
        CallsCommand::Run(a) if a.sample.is_some() => sampled(a),
        CallsCommand::Run(a) => {
            let cfg = RunConfig {
                output: a.output,
                keep: a.keep,
                argv: a.command,
            };
            // Stop signals are passed on to the command; the recorder lives on to write the
            // file.
            let mut steer = hood_proc::signal::Signals::forwarding()?;
            let ran = calls::run(&cfg, &mut steer, &mut say)?;
            if !ran.procs.is_empty() {
                summary(&ran.procs, &cfg.output);
            }
            // The command's status; 1 when it succeeded but left no tables (nothing was
            // written), as `hood trace record` does; 2 when an error ended the run (said).
            let status = ran.exit.shell_code().clamp(0, 255) as u8;
            Ok(ExitCode::from(
                match (&ran.error, ran.procs.is_empty(), status) {
                    (Some(_), _, _) => 2,
                    (None, true, 0) => 1,
                    _ => status,
                },
            ))
        }
        CallsCommand::Get(a) => {
            let cfg = GetConfig {
                pid: a.pid,
                output: a.output,
                keep: a.keep,
            };
            match calls::get(&cfg, &mut say)? {
                Got::Written(procs) => summary(&procs, &cfg.output),
                Got::Nothing(why) => {
                    errln!("hood calls get: {}", super::clean(why));
                    return Ok(ExitCode::from(1));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        CallsCommand::Reset(a) => match calls::reset(a.pid, &mut say)? {
            Reset::Done(n) => {
                errln!(
                    "hood calls reset: {}",
                    match n {
                        1 => "1 process will reset at its next function entry or exit".to_string(),
                        n =>
                            format!("{n} processes will reset at their next function entry or exit"),
                    }
                );
                Ok(ExitCode::SUCCESS)
            }
            Reset::Nothing(why) => {
                errln!("hood calls reset: {}", super::clean(why));
                Ok(ExitCode::from(1))
            }
        },
        CallsCommand::Report(a) => report::report(a),
    }
}

/// `hood calls run --sample[=PROFILE]`: the same run under `hood record --off-cpu`, which
/// runs this executable's `hood calls run` (without `--sample`) as its command, so both
/// profilers see one run of the program (same pids: `--reconcile` matches them by pid).
fn sampled(a: RunArgs) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    let profile = a.sample.unwrap_or_else(|| PathBuf::from("hood.data"));
    if profile == a.output {
        anyhow::bail!(
            "--sample would write the profile over the call-path file {}: name another file, e.g. --sample=prof.data",
            a.output.display()
        );
    }
    let exe =
        std::env::current_exe().context("finding the hood executable to run `hood record`")?;
    let mut cmd = std::process::Command::new(&exe);
    // 2999 Hz: a call profile holds many functions, and each needs its samples.
    cmd.args(["record", "--off-cpu", "-F", "2999", "-o"])
        .arg(&profile)
        .arg("--")
        .arg(&exe)
        .args(["calls", "run", "-o"])
        .arg(&a.output);
    if a.keep {
        cmd.arg("--keep");
    }
    cmd.arg("--").args(&a.command);
    let status = cmd
        .status()
        .with_context(|| format!("running {} record", exe.display()))?;
    // `hood record` exits with the command's status (here `hood calls run`'s).
    let code = match status.code() {
        Some(c) => c.clamp(0, 255) as u8,
        None => 2,
    };
    if std::fs::symlink_metadata(&a.output).is_ok() && std::fs::symlink_metadata(&profile).is_ok() {
        super::say_as(
            "hood calls",
            &format!(
                "compare the two profilers with `hood diff --reconcile {} {}`",
                a.output.display(),
                profile.display()
            ),
        );
    }
    Ok(ExitCode::from(code))
}

/// `hood calls run --probe` and `hood calls record`: call paths from uprobes.
fn probe(
    specs: Vec<String>,
    yes: bool,
    run: hood_hooks::probe::ProbeRun,
    duration: Option<f64>,
    output: PathBuf,
) -> anyhow::Result<ExitCode> {
    use hood_hooks::probe::{ProbeConfig, ProbeOutput};
    let cfg = ProbeConfig {
        specs,
        yes,
        run,
        duration: duration.map(std::time::Duration::from_secs_f64),
        sched: false,
        output: ProbeOutput::Calls(output.clone()),
    };
    let mut steer = hood_proc::signal::Signals::forwarding()?;
    let out = hood_hooks::probe::record(&cfg, &mut steer, &mut |m| super::say_as("hood calls", m))?;
    if let Ok(f) = hood_load::calls::read(&output, &mut |_| {}) {
        summary(&f.procs, &output);
    }
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
