//! `hood`: look under the hood of a running Linux system.
//!
//! This file stays thin: parse the command line, run one subcommand, map errors to exit codes.
//! The exit codes are listed in docs/cli.md: 0 success (also when the reader of standard output
//! went away early, as in `hood report | head`), 1 ran but found nothing / target failed, 2 usage
//! or environment error; `record --` exits with the child's status.
//!
//! The binary is the command line only: clap arguments become the config structs of the
//! library crates (hood-record, hood-hooks, hood-serve, hood-report, ...), which do the work.
//! System calls live in hood-perf, hood-proc and hood-rt; here there is no `unsafe` at all.
#![forbid(unsafe_code)]
// hood's own lines go through `errln!`/`outln!` (say.rs): `println!` and `eprintln!` panic on
// a closed or broken stream, and a recorder that panics leaves no file.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod say;

mod cli;
mod cmd;
mod environment;
mod generate;

use std::process::ExitCode;

use clap::Parser;

/// The runtime library `hood calls run` and `hood trace record` preload, carried in the
/// binary (built by build.rs) for when none is installed beside it.
static RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libhood_rt.so"));

fn main() -> ExitCode {
    hood_hooks::runtime::carry(RUNTIME);
    let cli = cli::Cli::parse();
    match run(cli) {
        Ok(code) => code,
        // `hood report | head -1`: the reader has all it wanted. Say nothing and exit 0, as
        // ripgrep does, rather than "Broken pipe" or death by SIGPIPE (141).
        Err(err) if stdout_reader_gone(&err) => ExitCode::SUCCESS,
        Err(err) => {
            errln!("hood: error: {}", one_line(&err));
            ExitCode::from(2)
        }
    }
}

fn run(cli: cli::Cli) -> anyhow::Result<ExitCode> {
    if let Some(kind) = cli.generate {
        let mut out = std::io::stdout().lock();
        generate::generate(kind, &mut out)?;
        std::io::Write::flush(&mut out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(command) = cli.command else {
        // clap prints the help for a bare `hood`; this is for anything that slips past it.
        anyhow::bail!("no subcommand: see `hood --help`");
    };
    environment::check()?;
    if matches!(
        command,
        cli::Command::Report(_)
            | cli::Command::Annotate(_)
            | cli::Command::Diff(_)
            | cli::Command::Calls(_)
            | cli::Command::Trace(_)
    ) {
        cap_report_memory();
    }
    cmd::dispatch(command)
}

/// Readers of recordings stop with an error once this program's own peak resident memory
/// (`VmHWM`, not the launcher's peak that `ru_maxrss` starts at) passes
/// `HOOD_REPORT_MAX_MEMORY` bytes (default: half the physical memory; 0: no cap), checked
/// before each chunk they read, instead of running the machine out of memory.
fn cap_report_memory() {
    let cap = std::env::var("HOOD_REPORT_MAX_MEMORY")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_else(|| hood_proc::usage::physical_memory_bytes() / 2);
    hood_format::memory::set_cap(cap, hood_proc::usage::peak_resident_bytes);
}

/// The error and its causes on one line, each cause only when it says something new: an I/O
/// error that names its file embeds its OS error, which is also its source. Errors name
/// files, processes and functions: control characters in them are shown escaped, except
/// the line breaks of hood's own multi-line messages (which escape the names they list).
fn one_line(err: &anyhow::Error) -> String {
    let line = causes(err);
    let lines: Vec<String> = line.split('\n').map(cmd::clean).collect();
    lines.join("\n")
}

fn causes(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Whether `err` is a broken pipe and standard output is a pipe or socket whose reader has
/// closed it (so a broken pipe to a child process or a client socket is still reported).
fn stdout_reader_gone(err: &anyhow::Error) -> bool {
    let broken = err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if !broken {
        return false;
    }
    hood_proc::stdio::stdout_reader_gone()
}
