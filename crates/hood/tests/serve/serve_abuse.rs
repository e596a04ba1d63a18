//! `hood serve` under abuse, on loopback only and bounded in count and time: a thousand idle
//! connections, a 256 MiB header, running out of file descriptors, connections that never
//! finish their request, bodies sent without a token, and a client that never reads its
//! answers. After each, `/healthz` answers within a second and the server's peak RSS stays
//! under 64 MB.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::serve::{get, get_within, Serve};

/// Peak resident size (VmHWM) of `pid`, in KiB.
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Open descriptors of `pid`.
fn open_fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .count() as u64
}

/// Let this test process hold `n` descriptors; false (with a line saying so) if it may not.
fn allow_fds(n: u64) -> bool {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid rlimit.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    if lim.rlim_cur >= n {
        return true;
    }
    let want = libc::rlimit {
        rlim_cur: n,
        rlim_max: lim.rlim_max.max(n),
    };
    // SAFETY: setrlimit reads a valid rlimit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } != 0 {
        println!(
            "not run here: this test needs {n} open files and `ulimit -n` allows {}",
            lim.rlim_cur
        );
        return false;
    }
    true
}

/// `n` connections to `port` that send nothing.
fn idle_connections(port: u16, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|i| {
            TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("idle connection {i}: {e}"))
        })
        .collect()
}

/// `/healthz` must answer 200 within a second.
fn healthz_answers(port: u16, when: &str) {
    let start = Instant::now();
    match get_within(port, "/healthz", &[], Duration::from_secs(1)) {
        Ok((200, body)) => assert_eq!(body, b"ok\n"),
        Ok((code, _)) => panic!("{when}: /healthz answered {code}"),
        Err(e) => panic!("{when}: /healthz: {e}"),
    }
    println!("{when}: /healthz answered in {:?}", start.elapsed());
}

/// Whether the server ends `s` (end of file, a reset, or an answer followed by the end)
/// within `limit`, rather than leaving it open.
fn closed_by_server(s: &mut TcpStream, limit: Duration) -> Result<Vec<u8>, String> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(format!(
                "still open after {limit:?} (received {:?})",
                String::from_utf8_lossy(&got)
            ));
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(got),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(format!("reading: {e}")),
        }
    }
}

/// A private TMPDIR for a server and the path of its log in it.
fn log_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("serve.log");
    (tmp, log)
}

#[test]
fn a_thousand_idle_connections_and_a_256_mib_header() {
    if !allow_fds(4096) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&["--token", "s3cret"], tmp.path(), Stdio::null());
    let idle = idle_connections(s.port, 1000);
    healthz_answers(s.port, "with 1000 idle connections");

    // A request whose one header line is 256 MiB, without the token: the server must stop
    // reading long before the end (it answers 431 and closes).
    let mut big = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    big.set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    big.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: ")
        .unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let total: usize = 256 << 20;
    let mut sent = 0usize;
    let cut = loop {
        if sent >= total {
            break None;
        }
        match big.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) => break Some(e),
        }
    };
    println!("the 256 MiB header was cut after {sent} bytes: {cut:?}");
    assert!(
        cut.is_some() && sent < 16 << 20,
        "the server read {sent} bytes of a 256 MiB header"
    );
    let answer = closed_by_server(&mut big, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("connection with the huge header: {e}"));
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );
    healthz_answers(s.port, "after the 256 MiB header");
    let peak = peak_rss_kb(s.child.id());
    println!("peak RSS of the server: {peak} KiB");
    assert!(peak < 64 * 1024, "hood serve peaked at {peak} KiB");
    drop(idle);
    // Still serving its real routes.
    assert_eq!(
        get(s.port, "/metrics", &["Authorization: Bearer s3cret"]).0,
        200
    );
}

#[test]
fn running_out_of_file_descriptors_never_ends_the_server() {
    if !allow_fds(1024) {
        return;
    }
    let (tmp, log) = log_dir();
    let s = Serve::start(
        &[],
        tmp.path(),
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    let pid = s.child.id();
    // Leave the running server room for a few more descriptors only.
    let room = open_fds(pid) + 6;
    let lim = libc::rlimit {
        rlim_cur: room,
        rlim_max: room,
    };
    // SAFETY: prlimit reads a valid rlimit; the old value is not asked for.
    let r = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &lim,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
    let idle = idle_connections(s.port, 300);
    healthz_answers(s.port, "out of descriptors, 300 idle connections");
    drop(idle);
    std::thread::sleep(Duration::from_millis(300));
    healthz_answers(s.port, "after the idle connections closed");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("hood serve: accepting a connection: "))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Too many open files") && l.contains("ulimit -n")),
        "no accept error with its fix in:\n{text}"
    );
    // At most one line per 10 s, however many accepts failed.
    assert!(lines.len() <= 2, "accept errors flood the log:\n{text}");
}

#[test]
fn unfinished_requests_and_idle_connections_are_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&[], tmp.path(), Stdio::null());
    let mut silent = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let mut partial = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    // A kept-alive connection that went quiet after one answer.
    let mut kept = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 17];
    kept.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200 OK\r\n");
    // The head timeout is 10 s (docs/serve.md); allow three times that.
    for (name, conn) in [
        ("silent", &mut silent),
        ("partial head", &mut partial),
        ("kept alive", &mut kept),
    ] {
        closed_by_server(conn, Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{name} connection: {e}"));
    }
}

#[test]
fn a_large_body_is_never_read_before_the_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&["--token", "s3cret"], tmp.path(), Stdio::null());
    for (req, code) in [
        (
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1073741824\r\n\r\n",
            "401",
        ),
        (
            "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1073741824\r\n\r\n",
            "405",
        ),
    ] {
        let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        c.write_all(&[b'x'; 4096]).unwrap();
        // The answer comes before the gigabyte does, and the connection ends with it.
        let got = closed_by_server(&mut c, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{req:?}: {e}"));
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with(&format!("HTTP/1.1 {code}")), "{got}");
    }
}

#[test]
fn a_client_that_never_reads_its_answers_is_closed() {
    // ~28 MB of answers: here the socket buffers took ~4 MB before the writes waited.
    const REQUESTS: usize = 1500;
    let (tmp, log) = log_dir();
    let s = Serve::start(
        &[],
        tmp.path(),
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    // Pipelined scrapes whose answers (~17 KB each) are far more than the socket buffers
    // hold; the client never reads, so its receive window closes and the server's writes wait.
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(REQUESTS);
    c.write_all(req.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    healthz_answers(s.port, "while a client takes no answer");
    // The write timeout is 30 s (docs/serve.md); allow twice that.
    let line = "hood serve: closed a connection whose client did not take its answer within 30 s (1 so far)";
    let start = Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains(line) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no write timeout logged:\n{}",
            std::fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The connection was closed: what the buffers held arrives, then the end, and not all
    // the answers were sent.
    let got = closed_by_server(&mut c, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("the connection that took no answer: {e}"));
    let answers = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200 OK")
        .count();
    println!("{answers} of {REQUESTS} answers were sent before the connection was closed");
    assert!(answers < REQUESTS, "every answer was sent");
    healthz_answers(s.port, "after the write timeout");
}
