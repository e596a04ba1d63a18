//! `hood serve`'s scrape keeps the stat record of a process whose schedstat did not change;
//! a change that takes the process running (here: stopping on SIGSTOP, continuing on
//! SIGCONT) must still show in the next scrape.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

struct Kill(Vec<Child>);

impl Drop for Kill {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn metrics(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    assert!(
        raw.starts_with("HTTP/1.1 200") || raw.starts_with("HTTP/1.0 200"),
        "{raw}"
    );
    raw.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// `hood_processes{state="X"}` of a scrape (0 when absent).
fn in_state(text: &str, state: char) -> u64 {
    let key = format!("hood_processes{{state=\"{state}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0, |v| v.trim().parse().unwrap())
}

fn signal(children: &[Child], sig: i32) {
    for c in children {
        // SAFETY: kill(2) on our own children's pids, not yet reaped.
        assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
    }
}

#[test]
fn stopped_and_continued_sleepers_show_in_the_next_scrape() {
    const N: u64 = 30;
    let sleepers = Kill(
        (0..N)
            .map(|_| {
                common::command("sleep")
                    .arg("120")
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("sleep")
            })
            .collect(),
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Killed at the end: its scratch directory goes with the test's, not into /tmp.
    let tmp = tempfile::tempdir().unwrap();
    let server = Kill(vec![hood()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("TMPDIR", tmp.path())
        .stderr(Stdio::null())
        .spawn()
        .expect("hood serve")]);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "not listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Several scrapes: from the second on, the idle sleepers' records are kept.
    for _ in 0..3 {
        metrics(port);
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = metrics(port);
    signal(&sleepers.0, libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(300));
    let stopped = metrics(port);
    let stopped_again = metrics(port);
    signal(&sleepers.0, libc::SIGCONT);
    std::thread::sleep(Duration::from_millis(300));
    let continued = metrics(port);
    let t = |text: &str| in_state(text, 'T');
    assert_eq!(t(&stopped), t(&before) + N, "stopped:\n{stopped}");
    assert_eq!(
        t(&stopped_again),
        t(&stopped),
        "second scrape after stopping"
    );
    assert_eq!(t(&continued), t(&before), "continued:\n{continued}");
    drop(server);
}
