//! The process monitor (`hood top`, `ps`, `info`, `uptime`): layouts on a fixture /proc,
//! a real known process, processes that end between refreshes, cgroups, irq handler times, the
//! store (`--record`, `--replay`, `--at`) and the interactive screen driven in tmux.
//!
//! One of hood's integration-test binaries, one per theme (`tests/THEME/main.rs`, a module per
//! file; docs/ARCHITECTURE.md, "Tests"). A test that must not run beside others holds
//! `common::exclusive()`; every process a test starts (`common::command`) waits for it.

#[path = "../common/mod.rs"]
mod common;

mod monitor_cgroups;
mod monitor_exits;
mod monitor_irqtime;
mod monitor_layouts;
mod monitor_narrow;
mod monitor_real;
mod monitor_store;
mod monitor_tui;
