//! `hood report` and `hood annotate` of real recordings: names, inlined functions and lines,
//! debug info wherever it is kept, the symbol cache, `--by comm`, widths, and memory bounded by
//! what is shown.
//!
//! One of hood's integration-test binaries, one per theme (`tests/THEME/main.rs`, a module per
//! file; docs/ARCHITECTURE.md, "Tests"). A test that must not run beside others holds
//! `common::exclusive()`; every process a test starts (`common::command`) waits for it.

#[path = "../common/mod.rs"]
mod common;

mod annotate_sources;
mod report_by_comm;
mod report_debuginfo;
mod report_inline;
mod report_lines;
mod report_memory;
mod report_names;
mod report_reads_right;
mod report_symbol_cache;
