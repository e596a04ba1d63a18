//! `hood serve`'s log: the recorder behind `/debug/pprof/profile` runs as a child whose
//! messages reach the server's stderr only as `hood serve: profile #N (...): ...` lines, and
//! SIGTERM during a profile cuts it short with an answer.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::serve::Serve;
use common::*;

/// `hood serve` on a free loopback port, its stderr going to `log`.
fn serve(log: &std::path::Path) -> Serve {
    let err = std::fs::File::create(log).unwrap();
    Serve::start_private(&[], Stdio::from(err))
}

/// HTTP/1.0 GET: the status code and body length.
fn get(port: u16, path: &str) -> (u16, usize) {
    let (code, body) = common::serve::get(port, path, &[]);
    (code, body.len())
}

fn sigterm_and_wait(s: &mut Serve) {
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) }, 0);
    let start = Instant::now();
    while s.child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(30), "no exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn recorder_messages_are_prefixed_lines_of_the_server_log() {
    if !privileged("recorder_messages_are_prefixed_lines_of_the_server_log") {
        return;
    }
    let _l = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let mut s = serve(&log);
    assert_eq!(get(s.port, "/debug/pprof/profile?seconds=1").0, 200);
    assert_eq!(get(s.port, "/debug/pprof/profile?seconds=1").0, 200);
    sigterm_and_wait(&mut s);
    let text = std::fs::read_to_string(&log).unwrap();
    for line in text.lines() {
        assert!(
            line.starts_with("hood serve: "),
            "unprefixed line {line:?} in:\n{text}"
        );
    }
    for n in [1, 2] {
        let tag = format!("hood serve: profile #{n} (whole machine, 1 s): ");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&tag) && l.contains("samples")),
            "no recorder summary for profile {n}:\n{text}"
        );
    }
}

#[test]
fn sigterm_cuts_a_running_profile_short_and_still_answers() {
    if !privileged("sigterm_cuts_a_running_profile_short_and_still_answers") {
        return;
    }
    let _l = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let mut s = serve(&log);
    let port = s.port;
    let start = Instant::now();
    let req = std::thread::spawn(move || get(port, "/debug/pprof/profile?seconds=60"));
    std::thread::sleep(Duration::from_millis(1500));
    sigterm_and_wait(&mut s);
    let (code, len) = req.join().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "a 60 s profile was not cut short: {:?}",
        start.elapsed()
    );
    assert_eq!(code, 200, "{}", std::fs::read_to_string(&log).unwrap());
    assert!(len > 0);
}
