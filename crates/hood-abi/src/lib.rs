//! Owns the `#[repr(C)]` shared-memory layouts and their checked parsers, read by both the
//! runtime and the recorders. May depend on nothing (no hood crate, no system calls).
//!
//! `#[repr(C)]` layouts of the shared-memory segments that the `hood-rt` runtime publishes under
//! `/dev/shm` and that `hood calls get` / `hood trace record` read.
//!
//! A segment is one file, `hood-rt-<pid>-<nonce>`, mode 0600:
//!
//! ```text
//! SegmentHeader (4096 bytes)
//! maps area     (MAPS_AREA_SIZE bytes: executable mappings, /proc/self/maps text)
//! thread slot 0 ┐  ThreadHeader | Frame[max_depth] | PathNode[max_paths] | u32 hash[hash_size]
//! thread slot 1 │  (each slot is `thread_slot_size` bytes, page aligned)
//! ...           ┘
//! ```
//!
//! Each thread owns its slot: only that thread writes its stack and its path table, so the hook
//! path needs no locks or atomic read-modify-write. Readers copy the bytes and decode them with
//! the safe helpers in [`parse`]; nothing read from a segment is trusted (magic, version and
//! every size are checked). The trace mode of issue 5 reuses the header and thread slots with
//! a ring of 8-byte [`TraceEvent`] words in place of the frames/paths area (`mode` =
//! [`MODE_TRACE`]), and adds an inline tag table and a function table (index → address)
//! between the maps area and the slots.
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod layout;
pub mod parse;

pub use layout::*;
pub use parse::{
    parse_funcs, parse_tags, stream_span, trace_slot_read_len, FrameView, HeaderView, NodeView,
    ParseError, ThreadView, TraceThreadView,
};
