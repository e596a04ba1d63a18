//! The command line as users and attackers meet it: conventions (man page, completions,
//! variables), pipes and terminals, every command printed in the docs, option ranges,
//! permission diagnoses, planted files, segments and state directories, file modes, full disks,
//! recorders killed mid-run, terminal escapes, and the rules of these tests themselves.
//!
//! One of hood's integration-test binaries, one per theme (`tests/THEME/main.rs`, a module per
//! file; docs/ARCHITECTURE.md, "Tests"). A test that must not run beside others holds
//! `common::exclusive()`; every process a test starts (`common::command`) waits for it.

#[path = "../common/mod.rs"]
mod common;

mod cli_conventions;
mod cli_pipes;
mod disk_full;
mod docs_commands;
mod file_modes;
mod killed_recorders;
mod option_ranges;
mod permission_diagnoses;
mod segments_planted;
mod state_dir;
mod terminal_escapes;
mod test_rules;
mod untrusted_files;
