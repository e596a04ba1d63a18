//! User-stack unwinding for hood.
//!
//! **Owns:** turning a sample's user registers and a copy of the top of its user stack into a
//! complete call chain, for code built with or without frame pointers: DWARF call frame
//! information (`.eh_frame` through `.eh_frame_hdr`, `.debug_frame`, also from a separate debug
//! file found by build-id) with a frame-pointer fallback where there is none (JIT code, the
//! perf-map trampolines of `python3 -X perf`), across signal frames, PLT stubs and the vDSO.
//! It keeps every process's executable mappings over time (fork, exec, mmap) and reads each
//! ELF image's unwind sections once, shared by every process that maps it.
//!
//! **Depends on:** framehop (the rule engine), object and gimli (ELF and CFI parsing),
//! hood-raw (the one `/proc/PID/maps` parser, the perf record decoder, the replay of side-band
//! records), hood-symbols (debug files by build-id), hood-format (its door to untrusted files,
//! through which every ELF file is opened); not hood-model.
//! Pure: no `unsafe`; its only I/O is reading ELF files and `/proc/PID/maps`.
//!
//! A chain that could not be completed says why ([`Truncation`]), so reports can mark it
//! instead of showing a believable but wrong stack.

#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod image;
pub mod rewrite;
mod space;
mod walk;

use std::path::PathBuf;
use std::sync::Arc;

pub use image::Image;
pub use rewrite::{
    RewriteStats, Rewriter, DEFERRED_AT_SWITCH, DEFERRED_KSTACK, DEFERRED_RETURN, DEFERRED_WAKER,
};
pub use space::{Unwinder, MAX_MAPPINGS};

/// Errors reading an image's unwind information (kept as notes: an unreadable image only
/// means its frames fall back to frame pointers).
#[derive(Debug, thiserror::Error)]
pub enum UnwindError {
    /// The file could not be opened or inspected.
    #[error("cannot read {path}: {source}")]
    Open {
        /// The path tried.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Not a regular file of a plausible size.
    #[error("{path} is not a regular file of an ELF image's size")]
    NotAnImage {
        /// The path tried.
        path: PathBuf,
    },
    /// Not an ELF image hood can read.
    #[error("{path} is not a readable ELF image: {reason}")]
    Elf {
        /// The path or pseudo-name.
        path: String,
        /// What the parser said.
        reason: String,
    },
}

/// The user registers unwinding starts from (x86-64: rip, rsp, rbp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserRegs {
    /// Instruction pointer.
    pub ip: u64,
    /// Stack pointer; the stack copy starts here.
    pub sp: u64,
    /// Frame pointer register.
    pub bp: u64,
}

pub use hood_raw::records::Truncation;

/// Most user frames kept per sample.
pub const MAX_FRAMES: usize = 1024;

/// Reads `pid`'s /proc/PID/maps, calling the closure with each line (without its newline)
/// until it returns `false`; `false` when the file was not read. The recorder passes
/// hood-procfs's reader (within its run's budget of maps reads), so the unwinder parses no
/// /proc file itself.
#[derive(Clone)]
pub struct MapsReader(Arc<MapsFn>);

type MapsFn = dyn Fn(u32, &mut dyn FnMut(&str) -> bool) -> bool + Send + Sync;

impl MapsReader {
    /// A reader calling `f`.
    pub fn new(
        f: impl Fn(u32, &mut dyn FnMut(&str) -> bool) -> bool + Send + Sync + 'static,
    ) -> Self {
        MapsReader(Arc::new(f))
    }

    /// Read `pid`'s maps, `each_line` called with each line.
    pub fn read(&self, pid: u32, each_line: &mut dyn FnMut(&str) -> bool) -> bool {
        (self.0)(pid, each_line)
    }
}

impl std::fmt::Debug for MapsReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MapsReader")
    }
}

/// How the unwinder finds files.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directories searched for separate debug files by build-id
    /// (`DIR/.build-id/XX/YYYY.debug`), for `.debug_frame` of images that carry no CFI.
    pub debug_dirs: Vec<PathBuf>,
    /// The processes are running now (recording): files are looked up inside each process's
    /// root (`/proc/PID/root`, for containers) and a process whose mappings are unknown has
    /// its `/proc/PID/maps` read with `read_maps`.
    pub live: bool,
    /// How a live process's mappings are read (none: they are not).
    pub read_maps: Option<MapsReader>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            live: false,
            read_maps: None,
        }
    }
}

/// Counts of what the unwinder did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Stacks unwound.
    pub stacks: u64,
    /// Stacks that reached the program's entry (or a thread's start).
    pub complete: u64,
    /// Truncated stacks per reason, indexed by [`Truncation::code`].
    pub truncated: [u64; 5],
    /// Signal frames stepped through.
    pub signal_frames: u64,
    /// Frames of JIT code (no unwind information) stepped out of by frame pointer or scan.
    pub jit_steps: u64,
    /// Frames of an ELF image's code that its call frame information leaves out (V8's
    /// builtins in node, hand-written assembly) stepped out of by frame pointer.
    pub fp_steps: u64,
    /// ELF images read.
    pub images: u64,
    /// Executable mappings not followed: their process had [`MAX_MAPPINGS`] already.
    pub mappings_dropped: u64,
}
