//! `hood record`: the arguments become a [`hood_record::RecordConfig`]; the recorder library
//! records; this prints its messages, writes the outcome for `hood stop` and picks the exit
//! status.

mod args;
pub mod detach;

use std::process::ExitCode;

use anyhow::Context;

pub use args::RecordArgs;
pub use hood_record::Outcome;

/// Run `hood record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<ExitCode> {
    let (cfg, keys) = args.to_config()?;
    // Signals are caught from here on: a Ctrl-C or `hood stop` during the start-up snapshot
    // (every process's mappings and binaries with -a) stops the recording after its first
    // drain instead of killing it before the file is finalized.
    let mut steer = hood_proc::steer::Interactive::install(
        keys,
        |m| errln!("hood: {}", crate::cmd::clean(m)),
        |path| {
            if let Err(e) = crate::cmd::report::print_live_top(path, 15) {
                errln!(
                    "hood: cannot read the recording so far: {}",
                    crate::cmd::clean(format!("{e:#}"))
                );
            }
        },
    )?;
    let finished = hood_record::record(&cfg, &mut steer, &mut |m| {
        errln!("hood: {}", crate::cmd::clean(m))
    })?;
    let outcome = &finished.outcome;
    if let Some(status) = &args.detached_status {
        std::fs::write(status, serde_json::to_vec(outcome)?)
            .with_context(|| format!("writing {}", status.display()))?;
    }
    Ok(match (&outcome.error, finished.exit_status) {
        (Some(_), _) => ExitCode::from(2),
        (None, Some(st)) => ExitCode::from(st.clamp(0, 255) as u8),
        (None, None) if outcome.samples == 0 => {
            errln!(
                "hood: no samples: the recorded processes did not run on a CPU while hood \
                 watched (exit status 1)"
            );
            ExitCode::from(1)
        }
        (None, None) => ExitCode::SUCCESS,
    })
}
