//! Where a sampling loop gets its views: the caller's /proc sampler, behind a trait so the
//! loop (hood-tui's sampler thread) does not depend on the reader.

use crate::raw::ScanOptions;
use crate::view::SystemView;

/// Where the views come from (the caller's /proc sampler).
pub trait Source: Send + 'static {
    /// What a read can fail with.
    type Error: std::error::Error + Send + Sync + 'static;
    /// A new snapshot read at the depth of `scan`, and the view of the interval since the last.
    fn next(&mut self, scan: &ScanOptions) -> Result<SystemView, Self::Error>;
    /// A new snapshot to measure the next view from (after `scan` changed: rates need two
    /// snapshots of the same depth).
    fn restart(&mut self, scan: &ScanOptions) -> Result<(), Self::Error>;
}
