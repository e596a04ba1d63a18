//! wait() returns Interrupted when a signal arrives, so the recorder can check
//! its signal flags (Ctrl-C, SIGUSR1 pause) promptly.

mod common;

use std::time::{Duration, Instant};

use common::privileged;
use hood_perf::{Readiness, SamplingConfig, Session, Target};

extern "C" fn on_signal(_: libc::c_int) {}

#[test]
fn signal_interrupts_wait() {
    if !privileged(1, "signal_interrupts_wait") {
        return;
    }
    // SAFETY: installing a handler that does nothing (async-signal-safe) for
    // SIGUSR1; the sigaction struct is zero-initialized and then filled.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    let s = Session::open(
        &SamplingConfig::default(),
        &Target::Tasks(vec![std::process::id() as i32]),
    )
    .unwrap();
    s.enable().unwrap();
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() };
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: `me` is the test thread, alive until it joins this thread.
        unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
    });
    let start = Instant::now();
    let mut r = s.wait(Duration::from_secs(30)).unwrap();
    // Side-band records cannot reach the watermark here, but tolerate a stray wakeup.
    while r == Readiness::Ready && start.elapsed() < Duration::from_secs(30) {
        r = s.wait(Duration::from_secs(30)).unwrap();
    }
    killer.join().unwrap();
    assert_eq!(r, Readiness::Interrupted);
}
