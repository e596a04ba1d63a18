//! Sampled profiles: the recording's metadata, the recording read into memory (its records
//! decoded by hood-raw), symbolized profiles and their aggregations.

pub mod aggregate;
pub mod build;
pub mod copies;
pub mod diff;
pub mod load;
pub mod meta;
pub mod model;
mod offcpu;

pub use build::{
    build_profile, offcpu_min_words, Resolved, ResolvedFrame, Resolver, OFF_CPU_DSO, TRUNCATED_DSO,
};
pub use hood_raw::BuildId;
pub use load::RawRecording;
pub use meta::{
    CpuCounts, ProcSnapshot, ProcSnapshotChunk, RecordMeta, RecordMode, RecordStats,
    MAX_SNAPSHOT_MAPS,
};
pub use model::{
    CodeMap, DsoFile, FrameLine, Func, FuncId, LocId, Location, Mode, OffCpuStats, Process,
    Profile, Sample, StackId, Thread, ThreadTime, WakeContext, Waker,
};
