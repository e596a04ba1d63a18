//! The one lock of a test binary, and the rule that makes it not opt-in.
//!
//! cargo runs the tests of one binary in parallel threads. A test that measures (times,
//! shares, samples of the machine) or uses state of the whole machine holds the write side,
//! [`exclusive`]; every test that starts a process holds the read side from its first process
//! until it ends, taken by [`command`] (through which every process of the tests starts:
//! `hood()`, the workload builders, `run`, ...) without the test asking. So nothing a test
//! starts runs beside a test that holds [`exclusive`], and tests that start no process (they
//! read files, parse text) are never held up.
//!
//! The read side lives in the thread of the test (libtest runs each test in a thread of its
//! own, named after the test) and is let go when that thread ends. A thread a test spawns is
//! unnamed: it takes the read side only when it is free at once, since it may belong to the
//! test that holds [`exclusive`]. Waiting for another thread while holding the read side
//! could deadlock behind a waiting writer, so a value that is built once for all tests goes
//! through [`once`] (which takes the read side before it waits), and the writer side is never
//! taken inside it.

use std::cell::{Cell, RefCell};
use std::ffi::OsStr;
use std::marker::PhantomData;
use std::process::Command;
use std::sync::{OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

static LOCK: RwLock<()> = RwLock::new(());

/// What this thread holds.
enum Held {
    Nothing,
    Shared(#[allow(dead_code, reason = "held for its drop")] RwLockReadGuard<'static, ()>),
    Exclusive(#[allow(dead_code, reason = "held for its drop")] RwLockWriteGuard<'static, ()>),
}

thread_local! {
    static HELD: RefCell<Held> = const { RefCell::new(Held::Nothing) };
    /// Inside the initializer of [`once`], where waiting for the writer side could deadlock.
    static IN_ONCE: Cell<u32> = const { Cell::new(0) };
}

/// Take the read side for the rest of this test, unless this thread holds a side already.
/// Called by [`command`] and every helper that starts a process; a test calls it itself only
/// where it starts a process some other way (a library that spawns).
pub fn shared() {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if !matches!(*held, Held::Nothing) {
            return;
        }
        let guard = if std::thread::current().name().is_some() {
            // The test's own thread (or the main thread when a harness runs tests there).
            Some(LOCK.read().unwrap_or_else(PoisonError::into_inner))
        } else {
            match LOCK.try_read() {
                Ok(g) => Some(g),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                // The writer's own helper thread, or a helper whose test holds the read side
                // while a writer waits: either way its test holds the lock for it.
                Err(TryLockError::WouldBlock) => None,
            }
        };
        if let Some(g) = guard {
            *held = Held::Shared(g);
        }
    });
}

/// The write side of the lock, for as long as the value lives: no process another test
/// starts runs meanwhile. A test holds it while it samples the machine, measures times or
/// shares, runs thousands of threads, or uses state of the whole machine (tracefs instances
/// and uprobes, cgroups, system-wide recordings). It lets go of the read side this test
/// held, so it may be taken after the test started processes. A test that failed while
/// holding it does not fail the tests after it (the poison is ignored).
pub fn exclusive() -> Exclusive {
    assert!(
        IN_ONCE.with(Cell::get) == 0,
        "common::exclusive() inside common::once's initializer could deadlock: take it before"
    );
    HELD.with(|held| {
        let was = std::mem::replace(&mut *held.borrow_mut(), Held::Nothing);
        assert!(
            !matches!(was, Held::Exclusive(_)),
            "common::exclusive() taken twice by one test"
        );
        drop(was);
        let guard = LOCK.write().unwrap_or_else(PoisonError::into_inner);
        *held.borrow_mut() = Held::Exclusive(guard);
    });
    Exclusive {
        _thread: PhantomData,
    }
}

/// The write side of the lock, held until dropped (on the thread that took it).
#[must_use = "the lock is let go when this is dropped"]
pub struct Exclusive {
    _thread: PhantomData<*const ()>,
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        let _ = HELD.try_with(|held| *held.borrow_mut() = Held::Nothing);
    }
}

/// `Command::new(program)` with the read side taken: the one way the tests start a process
/// (cli's `test_rules` test finds any other).
pub fn command(program: impl AsRef<OsStr>) -> Command {
    shared();
    Command::new(program)
}

/// `cell.get_or_init(init)` for a value built once for all tests of a binary (files recorded
/// once, programs built once), with the read side taken before waiting for another test that
/// builds it; `init` must not take [`exclusive`] (take it before, when the value is missing).
pub fn once<T>(cell: &'static OnceLock<T>, init: impl FnOnce() -> T) -> &'static T {
    if let Some(v) = cell.get() {
        return v;
    }
    shared();
    cell.get_or_init(|| {
        struct Reset;
        impl Drop for Reset {
            fn drop(&mut self) {
                IN_ONCE.with(|f| f.set(f.get() - 1));
            }
        }
        IN_ONCE.with(|f| f.set(f.get() + 1));
        let _reset = Reset;
        init()
    })
}
