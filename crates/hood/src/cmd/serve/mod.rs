//! `hood serve`: clap arguments → [`hood_serve::Config`], SIGINT/SIGTERM → the stop flag, and
//! the profile endpoint's recorder (profile.rs); the server is the hood-serve library. See
//! docs/serve.md.

mod args;
mod profile;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use hood_serve::{Answer, Server};

pub use args::ServeArgs;
use profile::{parse_query, Slot};

/// Run `hood serve` until SIGINT or SIGTERM.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.to_config()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    Server::bind(&cfg)?.run(&stop, profile_reply);
    Ok(ExitCode::SUCCESS)
}

/// Set while a profile is recorded.
static PROFILING: AtomicBool = AtomicBool::new(false);

/// `/debug/pprof/profile?QUERY`: one recording at a time, by profile.rs.
fn profile_reply(query: &str, scratch: &std::path::Path, stop: &AtomicBool) -> Answer {
    let preq = match parse_query(query) {
        Ok(r) => r,
        Err(e) => return Answer::text(400, format!("{e}\n")),
    };
    if let Some(pid) = preq.pid {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Answer::text(404, format!("no process {pid}\n"));
        }
    }
    let Some(_slot) = Slot::try_take(&PROFILING) else {
        return Answer::text(
            429,
            "a profile is being recorded; one at a time, retry later\n",
        )
        .with_header("retry-after", "5");
    };
    match profile::profile(&preq, scratch, stop) {
        Ok(bytes) => Answer::bytes(200, "application/octet-stream", bytes).with_header(
            "content-disposition",
            "attachment; filename=\"profile.pb.gz\"",
        ),
        Err(e) => Answer::text(500, format!("profiling failed: {e:#}\n")),
    }
}
