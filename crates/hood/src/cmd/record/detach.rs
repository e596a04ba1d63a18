//! `hood start` / `hood stop`: a detached recording (seed 000's `profile start` / `profile stop`).

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use serde::{Deserialize, Serialize};

use super::{Outcome, RecordArgs};

/// Arguments of `hood stop`.
#[derive(Debug, Clone, Args)]
pub struct StopArgs {
    /// Seconds to wait for the recorder to finish writing.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct State {
    pid: i32,
    output: String,
    status: String,
    log: String,
}

fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HOOD_STATE_DIR") {
        return PathBuf::from(d);
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("hood"),
        None => PathBuf::from(format!("/tmp/hood-{uid}")),
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    exists
        && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

fn read_state() -> Option<State> {
    let text = std::fs::read(state_dir().join("session.json")).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Run `hood start`: re-run this binary as a detached `hood record` and return.
pub fn start(args: &RecordArgs, raw_args: &[String]) -> anyhow::Result<ExitCode> {
    args.to_config()?;
    let dir = state_dir();
    if let Some(st) = read_state() {
        if alive(st.pid) {
            bail!(
                "a recording is already running (pid {}, writing {}); stop it first with `hood stop`",
                st.pid,
                st.output
            );
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let status = dir.join("outcome.json");
    let log = dir.join("record.log");
    let _ = std::fs::remove_file(&status);
    let exe = std::env::current_exe().context("finding the hood executable")?;
    let logf =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut cmd = Command::new(exe);
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
    std::thread::sleep(Duration::from_millis(400));
    if let Some(st) = child.try_wait()? {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        bail!("the recorder exited at once ({st}):\n{}", text.trim_end());
    }
    let output = std::env::current_dir()?.join(&args.output);
    let state = State {
        pid: child.id() as i32,
        output: output.display().to_string(),
        status: status.display().to_string(),
        log: log.display().to_string(),
    };
    std::fs::write(dir.join("session.json"), serde_json::to_vec(&state)?)?;
    println!(
        "hood: recording in the background (pid {}) to {}; `hood stop` finishes it",
        state.pid, state.output
    );
    Ok(ExitCode::SUCCESS)
}

/// Run `hood stop`.
pub fn stop(args: &StopArgs) -> anyhow::Result<ExitCode> {
    let path = state_dir().join("session.json");
    let Some(st) = read_state() else {
        bail!(
            "no detached recording is running (no {}); start one with `hood start`",
            path.display()
        );
    };
    if !alive(st.pid) {
        let _ = std::fs::remove_file(&path);
        if let Some(o) = read_outcome(&st.status) {
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
    // SAFETY: sending SIGINT to the recorder we started.
    unsafe { libc::kill(st.pid, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    while alive(st.pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(st.pid) {
        bail!(
            "the recorder (pid {}) did not finish within {} s; see {}",
            st.pid,
            args.timeout,
            st.log
        );
    }
    let _ = std::fs::remove_file(&path);
    match read_outcome(&st.status) {
        Some(o) => {
            print(&o);
            Ok(ExitCode::SUCCESS)
        }
        None => bail!("the recorder stopped without reporting; see {}", st.log),
    }
}

fn read_outcome(path: &str) -> Option<Outcome> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
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
}
