//! `/debug/pprof/profile?seconds=N[&pid=P][&off_cpu=1]` with `hood record`'s recorder (the hood-record
//! library, in the request's thread): record into a temporary file, have the caller load and
//! symbolize it, answer with the gzipped pprof. One profile at a time.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hood_model::profile::Profile;
use hood_proc::steer::StopFlag;
use hood_record::{RecordConfig, Who};
use hood_report::profile::ReportOptions;

use crate::{Access, Answer, Profiler};

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
    /// Also record off-CPU time (`off_cpu=1`): the answer gets the `off_cpu/nanoseconds`
    /// sample type.
    pub off_cpu: bool,
}

/// Parse the query string (`seconds=N&pid=P&off_cpu=1`); the error is the 400 answer's text.
pub fn parse_query(query: &str) -> Result<ProfileRequest, String> {
    let mut req = ProfileRequest {
        seconds: DEFAULT_SECONDS,
        pid: None,
        off_cpu: false,
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
            "off_cpu" => {
                req.off_cpu = match v {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    _ => return Err(format!("off_cpu={v}: must be 1 or 0")),
                }
            }
            // Other pprof clients' parameters (e.g. `debug`) do not change a CPU profile.
            _ => {}
        }
    }
    Ok(req)
}

/// At most one recording runs; the guard frees the slot when dropped.
pub struct Slot<'a>(&'a AtomicBool);

impl Slot<'_> {
    /// Take the slot, or `None` if a profile is being recorded.
    pub fn try_take(flag: &AtomicBool) -> Option<Slot<'_>> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Slot(flag))
    }
}

impl Drop for Slot<'_> {
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

/// The [`Profiler`] that records with hood-record; `load` reads and symbolizes a recording
/// (the caller's symbolizer), its error in words.
pub struct Recording<L> {
    load: L,
    /// Set while a profile is recorded.
    busy: AtomicBool,
    /// Where the recorder's lines go.
    log: crate::Log,
}

impl<L> Recording<L>
where
    L: Fn(&Path) -> Result<Profile, String> + Send + Sync + 'static,
{
    /// Profiles recorded with hood-record and loaded by `load`.
    pub fn new(load: L) -> Recording<L> {
        Recording {
            load,
            busy: AtomicBool::new(false),
            log: crate::Log::none(),
        }
    }

    /// The same, with the recorder's lines to `log`.
    pub fn with_log(self, log: crate::Log) -> Recording<L> {
        Recording { log, ..self }
    }

    /// Record `req` (in this thread) into a file in `scratch`, and return the gzipped pprof
    /// bytes. The recorder's messages go to the server's log, each as `hood serve: profile #N
    /// (...): LINE`. `stop` (the server's SIGINT/SIGTERM flag) cuts the recording short.
    pub fn profile(
        &self,
        req: &ProfileRequest,
        access: Access,
        scratch: &Path,
        stop: &AtomicBool,
    ) -> Result<Vec<u8>, String> {
        static SEQ: AtomicU64 = AtomicU64::new(1);
        let tag = format!(
            "profile #{} ({}, {} s)",
            SEQ.fetch_add(1, Ordering::Relaxed),
            req.pid
                .map_or_else(|| "whole machine".to_string(), |p| format!("pid {p}")),
            req.seconds
        );
        let file = TempFile(temp_path(scratch));
        let who = match req.pid {
            Some(p) => Who::Pids(vec![
                i32::try_from(p).map_err(|e| format!("pid out of range: {e}"))?
            ]),
            None => Who::System,
        };
        let mut cfg = RecordConfig::new(who, file.0.clone());
        cfg.duration = Some(Duration::from_secs(req.seconds));
        cfg.sampling.off_cpu = req.off_cpu;
        if req.off_cpu {
            cfg.sampling.ring_pages = hood_record::off_cpu_ring_pages(cfg.sampling.user_stack);
        }
        let mut lines = Vec::new();
        let recorded = hood_record::record(&cfg, &mut StopFlag(stop), &mut |line| {
            self.log.say(&format!("hood serve: {tag}: {line}"));
            lines.push(line.to_string());
        });
        let failed = |why: String| format!("the recorder failed ({why}): {}", lines.join("; "));
        match &recorded {
            Err(e) => return Err(failed(e.to_string())),
            Ok(f) if f.outcome.error.is_some() => {
                return Err(failed(f.outcome.error.clone().unwrap_or_default()))
            }
            // No sample (an idle pid) is still a valid profile.
            Ok(_) => {}
        }
        let mut prof = (self.load)(&file.0)?;
        hide_kernel_addresses(&mut prof);
        if access == Access::Restricted {
            hide_kernel_symbols(&mut prof);
        }
        let mut out = Vec::new();
        let opts = ReportOptions {
            source: "hood serve".into(),
            ..ReportOptions::default()
        };
        hood_report::pprof::render_pprof(&prof, &opts, &mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }
}

impl<L> Profiler for Recording<L>
where
    L: Fn(&Path) -> Result<Profile, String> + Send + Sync + 'static,
{
    fn answer(&self, query: &str, access: Access, scratch: &Path, stop: &AtomicBool) -> Answer {
        let preq = match parse_query(query) {
            Ok(r) => r,
            Err(e) => return Answer::text(400, format!("{e}\n")),
        };
        if access == Access::Restricted && preq.pid.is_none() {
            return Answer::text(403, WHOLE_MACHINE_REFUSED);
        }
        if let Some(pid) = preq.pid {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return Answer::text(404, format!("no process {pid}\n"));
            }
        }
        let Some(_slot) = Slot::try_take(&self.busy) else {
            return Answer::text(
                429,
                "a profile is being recorded; one at a time, retry later\n",
            )
            .with_header("retry-after", "5");
        };
        match self.profile(&preq, access, scratch, stop) {
            Ok(bytes) => Answer::bytes(200, "application/octet-stream", bytes).with_header(
                "content-disposition",
                "attachment; filename=\"profile.pb.gz\"",
            ),
            Err(e) => Answer::text(500, format!("profiling failed: {e}\n")),
        }
    }
}

/// The answer to a whole-machine profile asked by a client the server cannot authenticate.
pub const WHOLE_MACHINE_REFUSED: &str = "a whole-machine profile needs authentication: \
    ask with `Authorization: Bearer TOKEN` of a server started with --token or --token-file, \
    or from a root process on this machine; or ask for one process with pid=P \
    (its kernel frames are not named)\n";

/// Every kernel frame becomes one `[kernel.kallsyms]` frame at address 0: neither a kernel
/// symbol nor a kernel address reaches a client the server cannot authenticate (what
/// `perf_event_paranoid` 2 denies an ordinary user).
pub fn hide_kernel_symbols(prof: &mut Profile) {
    for f in &mut prof.funcs {
        if f.kernel {
            f.name = "[kernel.kallsyms]".into();
        }
    }
    let funcs = &prof.funcs;
    for l in &mut prof.locations {
        if funcs.get(l.func as usize).is_some_and(|f| f.kernel) {
            l.address = 0;
        }
    }
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
                pid: Some(7),
                off_cpu: false,
            })
        );
        assert!(parse_query("off_cpu=1").unwrap().off_cpu);
        assert!(!parse_query("off_cpu=0").unwrap().off_cpu);
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
            "off_cpu=yes",
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
