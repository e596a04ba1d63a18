//! `hood serve`: clap arguments → [`hood_serve::Config`], SIGINT/SIGTERM → the stop flag, and
//! the profile endpoint wired to hood-serve's recorder with `hood report`'s symbolizer; the
//! server is the hood-serve library. See docs/serve.md.

mod args;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use hood_serve::profile::Recording;
use hood_serve::Server;

pub use args::ServeArgs;

/// Run `hood serve` until SIGINT or SIGTERM.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.to_config()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    // The library says nothing itself: its lines go to standard error here.
    let log = hood_serve::Log::new(|line| errln!("{line}"));
    let profiler = Recording::new(|path: &std::path::Path| {
        crate::cmd::report::load_profile(path, &Default::default()).map_err(|e| format!("{e:#}"))
    })
    .with_log(log.clone());
    Server::bind_logged(&cfg, log)?.run(&stop, profiler);
    Ok(ExitCode::SUCCESS)
}
