//! `/debug/pprof/profile?seconds=N[&pid=P]`: record with `hood record` (a child process)
//! into a temporary file, load and symbolize it, answer with the gzipped pprof. One profile
//! at a time.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use hood_model::profile::Profile;
use hood_report::profile::ReportOptions;

use crate::cmd::report::load_profile;

/// Allowed `seconds`.
pub const SECONDS: std::ops::RangeInclusive<u64> = 1..=60;
/// `seconds` when the request names none (as Go's net/http/pprof).
pub const DEFAULT_SECONDS: u64 = 30;

/// A validated profile request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRequest {
    /// How long to sample.
    pub seconds: u64,
    /// One process, or the whole machine.
    pub pid: Option<u32>,
}

/// Parse the query string (`seconds=N&pid=P`); the error is the 400 answer's text.
pub fn parse_query(query: &str) -> Result<ProfileRequest, String> {
    let mut req = ProfileRequest {
        seconds: DEFAULT_SECONDS,
        pid: None,
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "seconds" => {
                req.seconds = v
                    .parse()
                    .ok()
                    .filter(|s| SECONDS.contains(s))
                    .ok_or_else(|| {
                        format!(
                            "seconds={v}: must be a whole number from {} to {}",
                            SECONDS.start(),
                            SECONDS.end()
                        )
                    })?
            }
            "pid" => {
                req.pid = Some(
                    v.parse()
                        .ok()
                        .filter(|&p: &u32| p > 0)
                        .ok_or_else(|| format!("pid={v}: must be a process id"))?,
                )
            }
            // Other pprof clients' parameters (e.g. `debug`) do not change a CPU profile.
            _ => {}
        }
    }
    Ok(req)
}

/// At most one recording runs; the guard frees the slot when dropped.
pub struct Slot(&'static AtomicBool);

impl Slot {
    /// Take the slot, or `None` if a profile is being recorded.
    pub fn try_take(flag: &'static AtomicBool) -> Option<Slot> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Slot(flag))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A temporary recording file removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A new file name in the server's private (mode 0700) scratch directory, so no other local
/// user can plant a symlink where the recorder writes.
fn temp_path(dir: &Path) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    dir.join(format!(
        "profile-{}.hood",
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Record `req` with `hood record` run as a child process (its own signal handling, and its
/// messages kept apart: each line goes to the server's log as `hood serve: profile #N (...):
/// LINE`), into a file in `scratch`, and return the gzipped pprof bytes. `stop` (the server's
/// SIGINT/SIGTERM flag) cuts the recording short.
pub fn profile(req: &ProfileRequest, scratch: &Path, stop: &AtomicBool) -> anyhow::Result<Vec<u8>> {
    static SEQ: AtomicU64 = AtomicU64::new(1);
    let tag = format!(
        "profile #{} ({}, {} s)",
        SEQ.fetch_add(1, Ordering::Relaxed),
        req.pid
            .map_or_else(|| "whole machine".to_string(), |p| format!("pid {p}")),
        req.seconds
    );
    let file = TempFile(temp_path(scratch));
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(["record", "-d", &req.seconds.to_string(), "-o"])
        .arg(&file.0);
    match req.pid {
        Some(p) => cmd.args(["-p", &p.to_string()]),
        None => cmd.arg("-a"),
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting the recorder (/proc/self/exe record)")?;
    let stderr = child.stderr.take().context("recorder stderr")?;
    let log_tag = tag.clone();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let line = line.strip_prefix("hood: ").unwrap_or(&line).to_string();
            eprintln!("hood serve: {log_tag}: {line}");
            lines.push(line);
        }
        lines
    });
    let mut interrupted = false;
    let status = loop {
        if let Some(st) = child.try_wait().context("waiting for the recorder")? {
            break st;
        }
        if !interrupted && stop.load(Ordering::Relaxed) {
            interrupted = true;
            let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
            // SAFETY: kill(2) of our own child, not yet reaped (try_wait saw it running).
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let lines = reader.join().unwrap_or_default();
    // The recorder exits 1 when it caught no sample (an idle pid): still a valid profile.
    let loaded = if file.0.exists() {
        load_profile(&file.0, None)
    } else {
        Err(anyhow::anyhow!("no recording written"))
    };
    let mut prof = match loaded {
        Ok(p) if status.success() || status.code() == Some(1) => p,
        Ok(_) | Err(_) => anyhow::bail!("the recorder failed ({status}): {}", lines.join("; ")),
    };
    hide_kernel_addresses(&mut prof);
    let mut out = Vec::new();
    let opts = ReportOptions {
        source: "hood serve".into(),
        ..ReportOptions::default()
    };
    hood_report::pprof::render_pprof(&prof, &opts, &mut out)?;
    Ok(out)
}

/// Unresolved kernel frames are named by address; name them `[kernel.kallsyms]` instead, so
/// no kernel address leaves the server (resolved kernel frames carry symbol names only).
pub fn hide_kernel_addresses(prof: &mut Profile) {
    for f in &mut prof.funcs {
        if f.kernel && !f.resolved {
            f.name = "[kernel.kallsyms]".into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_validation() {
        assert_eq!(
            parse_query("seconds=2&pid=7"),
            Ok(ProfileRequest {
                seconds: 2,
                pid: Some(7)
            })
        );
        assert_eq!(parse_query("").unwrap().seconds, DEFAULT_SECONDS);
        assert_eq!(parse_query("debug=1&seconds=60").unwrap().seconds, 60);
        for bad in [
            "seconds=0",
            "seconds=61",
            "seconds=-1",
            "seconds=x",
            "seconds=1.5",
            "pid=0",
            "pid=abc",
        ] {
            assert!(parse_query(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn one_slot() {
        static FLAG: AtomicBool = AtomicBool::new(false);
        let a = Slot::try_take(&FLAG).expect("free");
        assert!(Slot::try_take(&FLAG).is_none());
        drop(a);
        assert!(Slot::try_take(&FLAG).is_some());
    }
}
