//! Sampled profiles: the recording's metadata, decoding of raw perf records, address spaces,
//! symbolized profiles and their aggregations.

pub mod aggregate;
pub mod attr;
pub mod build;
pub mod load;
pub mod maps;
pub mod meta;
pub mod model;
mod offcpu;
pub mod records;
pub mod stackcopy;

pub use build::{
    build_profile, offcpu_min_words, Resolved, ResolvedFrame, Resolver, OFF_CPU_DSO, TRUNCATED_DSO,
};
pub use load::RawRecording;
pub use meta::{CpuCounts, ProcSnapshot, ProcSnapshotChunk, RecordMeta, RecordStats};
pub use model::{
    CodeMap, DsoFile, FrameLine, Func, FuncId, LocId, Location, Mode, OffCpuStats, Process,
    Profile, Sample, StackId, Thread, ThreadTime, WakeContext, Waker,
};
