//! `hood serve` over real HTTP on loopback: /healthz, /metrics (promtool and a real
//! Prometheus), profiles, its log, peers without the token, and abuse.
//!
//! One of hood's integration-test binaries, one per theme (`tests/THEME/main.rs`, a module per
//! file; docs/ARCHITECTURE.md, "Tests"). A test that must not run beside others holds
//! `common::exclusive()`; every process a test starts (`common::command`) waits for it.

#[path = "../common/mod.rs"]
mod common;

mod metrics_names;
mod serve_abuse;
mod serve_http;
mod serve_lean;
mod serve_log;
mod serve_peers;
mod serve_prometheus;
