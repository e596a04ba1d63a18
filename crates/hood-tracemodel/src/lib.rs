//! Owns the data model of what hood's hook recorders write (`hood trace record`, `hood calls`):
//! trace files read and analysed ([`trace`]), call-path tables built, read and compared
//! ([`calls`]). May depend on hood-raw (the byte decoders), hood-format and hood-abi; never on
//! the kernel, and not on hood-model (the profiles): `hood-reconcile` is where the two meet.
//!
//! Nothing here touches the kernel, so reports work on another machine.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod calls;
pub mod trace;

/// The clock of a process's timestamps, stored as its word (`tsc`, `monotonic`) in files and
/// JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Clock {
    /// TSC ticks, calibrated against CLOCK_MONOTONIC by the runtime.
    #[serde(rename = "tsc")]
    Tsc,
    /// CLOCK_MONOTONIC nanoseconds (no invariant TSC, or `HOOD_CLOCK=monotonic`; uprobe
    /// recordings).
    #[serde(rename = "monotonic")]
    Monotonic,
    /// A word this hood does not know (a newer hood's file).
    #[serde(rename = "", other)]
    Unknown,
}

impl Clock {
    /// The clock a runtime segment's header names (`hood_abi::CLOCK_*`): anything but the
    /// TSC is CLOCK_MONOTONIC.
    pub fn of_segment(kind: u32) -> Clock {
        match kind {
            hood_abi::CLOCK_TSC => Clock::Tsc,
            _ => Clock::Monotonic,
        }
    }

    /// The word files, JSON and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::Tsc => "tsc",
            Clock::Monotonic => "monotonic",
            Clock::Unknown => "",
        }
    }
}

/// What became of an instrumented process by the time its tables or events were collected,
/// stored as its word (`running`, `exited`, `gone`, `exec`) in files and JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ProcessState {
    /// Still running.
    #[serde(rename = "running")]
    Running,
    /// Exited through its exit handlers.
    #[default]
    #[serde(rename = "exited")]
    Exited,
    /// Died without running its exit handlers (killed or crashed).
    #[serde(rename = "gone")]
    Gone,
    /// Replaced by an exec (the new image has a recording of its own).
    #[serde(rename = "exec")]
    Exec,
    /// A word this hood does not know (a newer hood's file).
    #[serde(rename = "", other)]
    Unknown,
}

impl ProcessState {
    /// The word files, JSON and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessState::Running => "running",
            ProcessState::Exited => "exited",
            ProcessState::Gone => "gone",
            ProcessState::Exec => "exec",
            ProcessState::Unknown => "",
        }
    }
}

impl std::fmt::Display for ProcessState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the trace and call-path model.
#[derive(Debug, thiserror::Error)]
pub enum TraceModelError {
    /// The container could not be read.
    #[error(transparent)]
    Format(#[from] hood_format::FormatError),
    /// Raw bytes in the recording could not be decoded, or a chunk's content is malformed
    /// ([`hood_raw::RawError::Malformed`]).
    #[error(transparent)]
    Raw(#[from] hood_raw::RawError),
}

#[cfg(test)]
mod tests {
    use super::{Clock, ProcessState};

    /// The clock's word in files and JSON is what the strings were: `tsc`, `monotonic`.
    #[test]
    fn a_clock_is_stored_as_its_word() {
        assert_eq!(serde_json::to_string(&Clock::Tsc).unwrap(), "\"tsc\"");
        assert_eq!(
            serde_json::to_string(&Clock::Monotonic).unwrap(),
            "\"monotonic\""
        );
        for c in [Clock::Tsc, Clock::Monotonic, Clock::Unknown] {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<Clock>(&json).unwrap(), c);
        }
        assert_eq!(Clock::of_segment(hood_abi::CLOCK_TSC), Clock::Tsc);
        assert_eq!(
            Clock::of_segment(hood_abi::CLOCK_MONOTONIC_NS),
            Clock::Monotonic
        );
        // A newer hood's word still reads.
        let c: Clock = serde_json::from_str("\"ptp\"").unwrap();
        assert_eq!(c, Clock::Unknown);
    }

    #[test]
    fn a_process_state_is_stored_as_its_word() {
        for s in [
            ProcessState::Running,
            ProcessState::Exited,
            ProcessState::Gone,
            ProcessState::Exec,
            ProcessState::Unknown,
        ] {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<ProcessState>(&json).unwrap(), s);
        }
        // A newer hood's word still reads.
        let s: ProcessState = serde_json::from_str("\"frozen\"").unwrap();
        assert_eq!(s, ProcessState::Unknown);
    }
}
