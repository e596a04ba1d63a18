//! The rules of hood's own integration tests: every process they start takes the lock of its
//! binary (`common::command`), and the lock does what docs/ARCHITECTURE.md ("Tests") says.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::common;

/// The `.rs` files under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, found);
        } else if p.extension().is_some_and(|x| x == "rs") {
            found.push(p);
        }
    }
}

/// No test starts a process past the lock: `Command::new` appears only inside
/// `common::command`, and values built once for all tests go through `common::once` (which
/// takes the lock before it waits for another test building them) rather than
/// `OnceLock::get_or_init`.
#[test]
fn every_process_the_tests_start_takes_the_lock() {
    let tests = repo().join("crates/hood/tests");
    let mut files = Vec::new();
    rust_files(&tests, &mut files);
    files.sort();
    let lock = tests.join("common/lock.rs");
    let me = tests.join("cli/test_rules.rs");
    let mut bad = Vec::new();
    for f in &files {
        if *f == lock || *f == me {
            continue;
        }
        let s = std::fs::read_to_string(f).unwrap();
        for (n, line) in s.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for what in ["Command::new(", ".get_or_init("] {
                if code.contains(what) {
                    let rel = f.strip_prefix(&tests).unwrap_or(f);
                    bad.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "start processes with common::command (or common::hood) and build shared values with \
         common::once, so that the lock of the binary is taken (docs/ARCHITECTURE.md, \
         \"Tests\"):\n{}",
        bad.join("\n")
    );
}

fn repo() -> PathBuf {
    common::repo()
}

/// A test that started processes may then take the write side; another test's process waits
/// for it; a helper thread of the writer does not; and a test that failed while holding the
/// write side holds up no later test.
#[test]
fn the_lock_makes_others_wait_and_outlives_a_failed_test() {
    // What the lock relies on: libtest runs a test in a thread of its own, named after it
    // (the read side is let go when that thread ends).
    assert_eq!(
        std::thread::current().name(),
        Some("test_rules::the_lock_makes_others_wait_and_outlives_a_failed_test")
    );
    // This test's own process start, then the write side: no deadlock on itself.
    common::shared();
    let writer = common::exclusive();

    // Another test starting a process waits until the writer is done. (A slow thread only
    // makes this check pass without proving much; it never fails for slowness.)
    let (tx, rx) = mpsc::channel();
    let other = std::thread::Builder::new()
        .name("another test".into())
        .spawn(move || {
            common::shared();
            tx.send(()).unwrap();
        })
        .unwrap();
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "another test's process started beside common::exclusive()"
    );

    // A thread of the writing test itself is not held up.
    std::thread::spawn(common::shared).join().unwrap();
    drop(writer);
    rx.recv()
        .expect("the other test goes on once the writer is done");
    other.join().unwrap();

    // A test that fails while it holds the write side.
    let failed = std::thread::Builder::new()
        .name("a failing test".into())
        .spawn(|| {
            let _w = common::exclusive();
            panic!("(expected) a known answer failed while holding common::exclusive()");
        })
        .unwrap()
        .join();
    assert!(failed.is_err());
    // Later tests still take both sides.
    std::thread::Builder::new()
        .name("a later test".into())
        .spawn(common::shared)
        .unwrap()
        .join()
        .unwrap();
    drop(common::exclusive());
    std::thread::spawn(common::shared).join().unwrap();
}
