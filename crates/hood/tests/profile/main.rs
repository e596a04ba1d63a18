//! `hood record` on known-answer workloads and what its files hold: stacks (frame pointers
//! and DWARF unwinding), kernel symbols, labels, off-CPU time, intervals, damaged files, the
//! recorder's environment and keys.
//!
//! One of hood's integration-test binaries, one per theme (`tests/THEME/main.rs`, a module per
//! file; docs/ARCHITECTURE.md, "Tests"). A test that must not run beside others holds
//! `common::exclusive()`; every process a test starts (`common::command`) waits for it.

#[path = "../common/mod.rs"]
mod common;

mod kallsyms_used;
mod labels_record;
mod offcpu;
mod profile_env;
mod profile_files;
mod profile_keys;
mod profile_record;
mod report_intervals;
mod unwind_record;
