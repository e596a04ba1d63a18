//! `hood start` / `hood stop`: a detached recording that runs on after the command returns.
//! The state directory and the checks that a session's pid is its recorder are the recorder
//! library's (`hood_record::session`); this starts the recorder and prints.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use hood_record::session::{
    interrupt, proc_exe, recorder, state_dir_path, still_running, Recorder, State, StateDir, LOG,
    OUTCOME, SESSION,
};

use super::{Outcome, RecordArgs};

/// Arguments of `hood stop`.
#[derive(Debug, Clone, Args)]
pub struct StopArgs {
    /// Seconds to wait for the recorder to finish writing.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
}

/// Run `hood start`: re-run this binary as a detached `hood record` and return.
pub fn start(args: &RecordArgs, raw_args: &[String]) -> anyhow::Result<ExitCode> {
    args.to_config()?;
    let Some(dir) = StateDir::open(true)? else {
        bail!(
            "the state directory {} vanished",
            state_dir_path().display()
        );
    };
    if let Some(st) = dir.session()? {
        // A session whose pid is gone or is not its recorder is stale: start afresh.
        if let Ok(Recorder::Running(_)) = recorder(&st, &dir) {
            bail!(
                "a recording is already running (pid {}, writing {}); stop it first with `hood stop`",
                st.pid,
                st.output
            );
        }
    }
    dir.remove(OUTCOME)?;
    let status = dir.path.join(OUTCOME);
    let log = dir.path.join(LOG);
    let exe = std::env::current_exe().context("finding the hood executable")?;
    let logf = dir.create(LOG)?;
    let mut cmd = Command::new(&exe);
    cmd.arg("record")
        .args(raw_args)
        .arg("--detached-status")
        .arg(&status);
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(logf.try_clone()?)
        .stderr(logf)
        .process_group(0)
        .spawn()
        .context("starting the detached recorder")?;
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(400));
    if let Some(st) = child.try_wait()? {
        let text = dir.read(LOG)?.unwrap_or_default();
        bail!(
            "the recorder exited at once ({st}):\n{}",
            String::from_utf8_lossy(&text).trim_end()
        );
    }
    // The child is not reaped, so its pid cannot have been reused yet.
    let start_time = hood_procfs::state_and_start(pid).map(|(_, t)| t);
    let exe = proc_exe(pid).unwrap_or_else(|| exe.display().to_string());
    let output = std::env::current_dir()?.join(&args.output);
    let state = State {
        pid,
        output: output.display().to_string(),
        status: status.display().to_string(),
        log: log.display().to_string(),
        start_time,
        exe: Some(exe),
    };
    dir.replace(SESSION, &serde_json::to_vec(&state)?)?;
    println!(
        "hood: recording in the background (pid {}) to {}; `hood stop` finishes it",
        state.pid, state.output
    );
    Ok(ExitCode::SUCCESS)
}

/// Run `hood stop`.
pub fn stop(args: &StopArgs) -> anyhow::Result<ExitCode> {
    let none = |p: &Path| {
        anyhow::anyhow!(
            "no detached recording is running (no {}); start one with `hood start`",
            p.display()
        )
    };
    let Some(dir) = StateDir::open(false)? else {
        return Err(none(&state_dir_path().join(SESSION)));
    };
    let Some(st) = dir.session()? else {
        return Err(none(&dir.path.join(SESSION)));
    };
    let pidfd = match recorder(&st, &dir)? {
        Recorder::Running(fd) => fd,
        Recorder::Gone => {
            dir.remove(SESSION)?;
            if let Some(o) = dir.outcome() {
                print(&o);
                return Ok(ExitCode::SUCCESS);
            }
            bail!(
                "the recorder (pid {}) is gone without finishing; see {} — {} may still be readable",
                st.pid,
                st.log,
                st.output
            );
        }
    };
    interrupt(&pidfd, st.pid)?;
    let start = st.start_time.unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    while still_running(st.pid, start) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if still_running(st.pid, start) {
        bail!(
            "the recorder (pid {}) did not finish within {} s; see {}",
            st.pid,
            args.timeout,
            st.log
        );
    }
    dir.remove(SESSION)?;
    match dir.outcome() {
        Some(o) => {
            print(&o);
            Ok(ExitCode::SUCCESS)
        }
        None => bail!("the recorder stopped without reporting; see {}", st.log),
    }
}

fn print(o: &Outcome) {
    println!("{}", o.output);
    println!(
        "samples: {}  lost: {}  duration: {:.1} s  size: {} bytes",
        o.samples, o.lost, o.seconds, o.bytes
    );
    if let Some(e) = &o.error {
        println!("error: {e}");
    }
    if o.samples_not_written > 0 {
        println!(
            "not written: {} samples (the file holds the {} above)",
            o.samples_not_written, o.samples
        );
    }
}
