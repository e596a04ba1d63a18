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

/// Where to move in recorded time (`hood top --replay`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seek {
    /// This many recorded intervals later (negative: earlier).
    Step(i64),
    /// The interval that ends at or last before this time (seconds since the Unix epoch).
    At(i64),
    /// The last recorded interval.
    Last,
}

/// Views of recorded time (the caller's store reader), behind a trait so the UI does not
/// depend on the store.
pub trait Recorded: Send + 'static {
    /// What a read can fail with.
    type Error: std::error::Error + Send + Sync + 'static;
    /// The view of the interval at `to`. A step past either end stays at the end; a time
    /// outside the recording is an error saying what the recording covers.
    fn seek(&mut self, to: Seek) -> Result<SystemView, Self::Error>;
    /// What the last reads found damaged or cut (file and offset), each said once.
    fn warnings(&mut self) -> Vec<String>;
    /// The time zone offset (seconds east of UTC) times are read and shown in.
    fn utc_offset_s(&self) -> i32;
}
