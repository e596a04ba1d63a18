//! What other tools read of hood's output: pprof (`go tool pprof`), the Firefox Profiler,
//! Chrome slices, perf.data read back, JSON versions; `hood diff` of profiles and call paths;
//! and the one way every reading command takes its input and filters.
//!
//! One of hood's integration-test binaries, one per theme (`tests/THEME/main.rs`, a module per
//! file; docs/ARCHITECTURE.md, "Tests"). A test that must not run beside others holds
//! `common::exclusive()`; every process a test starts (`common::command`) waits for it.

#[path = "../common/mod.rs"]
mod common;

mod chrome_slices;
mod diff;
mod diff_calls;
mod eco_calls_pprof;
mod eco_firefox;
mod eco_labels_pprof;
mod eco_perfdata;
mod eco_pprof;
mod json_versions;
mod reading_options;
