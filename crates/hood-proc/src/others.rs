//! Signals and nice values of other processes, as a user asks for them (`hood top`'s `k` and
//! `n` keys). The process is held by a pidfd and checked to still be the one the user saw
//! (its start time, from `/proc/PID/stat` read after the pidfd was opened) before anything is
//! done, so a pid reused since the screen showed it is never hit.

use std::os::fd::AsFd;

use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};

use crate::ProcError;

/// The process `pid` that started at `start_ticks` (clock ticks after boot, field 22 of
/// `/proc/PID/stat`), held so that it cannot be replaced by another under the same pid.
fn hold(pid: u32, start_ticks: u64) -> Result<rustix::fd::OwnedFd, ProcError> {
    let gone = || ProcError::Refused {
        reason: format!("process {pid} has ended (its pid may now be another process's)"),
    };
    let p = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(gone)?;
    let fd = pidfd_open(p, PidfdFlags::empty()).map_err(|e| match e {
        rustix::io::Errno::SRCH => gone(),
        e => ProcError::Sys {
            what: format!("pidfd_open({pid})"),
            source: e.into(),
        },
    })?;
    let stat = std::fs::read(format!("/proc/{pid}/stat")).map_err(|_| gone())?;
    if start_time(&stat) != Some(start_ticks) {
        return Err(gone());
    }
    Ok(fd)
}

/// Field 22 (`starttime`) of a `/proc/PID/stat` text: after the last `)`, which ends the name.
fn start_time(stat: &[u8]) -> Option<u64> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    // After the name come field 3 (state) .. : starttime is the 20th of those.
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// Send signal `sig` (a number, e.g. 15) to process `pid` if it is still the one that
/// started at `start_ticks`.
pub fn send_signal(pid: u32, start_ticks: u64, sig: i32) -> Result<(), ProcError> {
    let signal = Signal::from_named_raw(sig).ok_or_else(|| ProcError::Refused {
        reason: format!("{sig} is not a signal number"),
    })?;
    let fd = hold(pid, start_ticks)?;
    pidfd_send_signal(fd.as_fd(), signal).map_err(|e| ProcError::Sys {
        what: format!("sending signal {sig} to {pid}"),
        source: e.into(),
    })
}

/// Set the nice value of process `pid` (its main thread, as `renice -p` does) if it is still
/// the one that started at `start_ticks`.
pub fn set_nice(pid: u32, start_ticks: u64, nice: i32) -> Result<(), ProcError> {
    let _held = hold(pid, start_ticks)?;
    let p = i32::try_from(pid).ok().and_then(Pid::from_raw);
    rustix::process::setpriority_process(p, nice).map_err(|e| ProcError::Sys {
        what: format!("setting the nice value of {pid} to {nice}"),
        source: e.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_read_after_a_name_with_spaces_and_parentheses() {
        let stat = b"42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 777 1000 10";
        assert_eq!(start_time(stat), Some(777));
        assert_eq!(start_time(b"42 (x"), None);
    }

    #[test]
    fn a_process_that_started_at_another_time_is_not_hit() {
        let me = std::process::id();
        let stat = std::fs::read(format!("/proc/{me}/stat")).unwrap();
        let t = start_time(&stat).unwrap();
        // SIGCONT, harmless if it were sent.
        let e = send_signal(me, t + 1, 18).unwrap_err();
        assert!(e.to_string().contains("has ended"), "{e}");
        let n = rustix::process::getpriority_process(None).unwrap();
        set_nice(me, t, n).unwrap();
        assert!(set_nice(me, t + 1, n).is_err());
    }
}
