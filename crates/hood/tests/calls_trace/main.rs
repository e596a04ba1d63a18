//! The call-path profiler (`hood calls`), the tracer (`hood trace`) and their probes
//! (`--probe`): known-answer counts and times, signals and stops, many threads, irqs and
//! wake-ups, closed output streams.
//!
//! One of hood's integration-test binaries, one per theme (`tests/THEME/main.rs`, a module per
//! file; docs/ARCHITECTURE.md, "Tests"). A test that must not run beside others holds
//! `common::exclusive()`; every process a test starts (`common::command`) waits for it.

#[path = "../common/mod.rs"]
mod common;

mod calls_runtime;
mod calls_signals;
mod closed_streams;
mod probe;
mod threads_many;
mod trace_edges;
mod trace_irq;
mod trace_record;
mod trace_signals;
mod trace_wake;
