//! A cap on the memory a reader of recordings may reach (issue 29: a user's recording must
//! not run root's report out of memory). The caller sets the cap and how to measure the
//! process's memory ([`set_cap`]); the [`Reader`](crate::Reader) checks it before each chunk it
//! reads, which is where a report's memory grows with its input. Reaching it is an ordinary
//! error ([`FormatError::MemoryCap`]), so everything unwinds normally: an output file being
//! written is removed, not left half written.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::FormatError;

static CAP: AtomicU64 = AtomicU64::new(0);
static PROBE: OnceLock<fn() -> u64> = OnceLock::new();

/// Cap the memory, as `probe` measures it in bytes (e.g. the peak resident size), at
/// `bytes`; 0 removes the cap. The probe is set once: later calls change only the cap.
pub fn set_cap(bytes: u64, probe: fn() -> u64) {
    let _ = PROBE.set(probe);
    CAP.store(bytes, Ordering::Relaxed);
}

/// The cap in bytes (0: none).
pub fn cap() -> u64 {
    CAP.load(Ordering::Relaxed)
}

/// An error if the memory measured is past the cap, naming `path` and the byte `offset`
/// being read.
pub fn check(path: &Path, offset: u64) -> Result<(), FormatError> {
    let cap = cap();
    if cap == 0 {
        return Ok(());
    }
    let Some(probe) = PROBE.get() else {
        return Ok(());
    };
    let used = probe();
    if used <= cap {
        return Ok(());
    }
    Err(FormatError::MemoryCap {
        path: path.to_owned(),
        offset,
        used,
        cap,
    })
}
