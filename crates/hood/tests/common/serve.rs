//! `hood serve` on a free loopback port, and a plain HTTP/1.0 client for it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A running `hood serve`, killed when dropped.
pub struct Serve {
    pub child: Child,
    pub port: u16,
    /// The server's private TMPDIR, if it has one of its own: removed after the server is
    /// killed, with the scratch directory a killed server leaves (which the next `hood serve`
    /// on the same TMPDIR would remove and say so).
    pub tmp: Option<tempfile::TempDir>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port no one listens on (yet), and one this test process has not handed out before: two
/// tests starting servers at once could otherwise be given the same just-freed port, and the
/// one whose server then failed to bind would talk to the other's (seen once in CI).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

impl Serve {
    /// [`Serve::start`] with a TMPDIR of its own, removed after the server (not /tmp, where
    /// a killed server's scratch directory would meet the next server of any test).
    pub fn start_private(extra: &[&str], stderr: Stdio) -> Serve {
        let tmp = tempfile::tempdir().expect("temp dir");
        let mut s = Serve::start(extra, tmp.path(), stderr);
        s.tmp = Some(tmp);
        s
    }

    /// Start `hood serve` on a free loopback port with `extra` arguments, TMPDIR `tmp` and
    /// stderr to `stderr`; wait until it listens.
    pub fn start(extra: &[&str], tmp: &Path, stderr: Stdio) -> Serve {
        let port = free_port();
        let child = super::hood()
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .env("TMPDIR", tmp)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn hood serve");
        let s = Serve {
            child,
            port,
            tmp: None,
        };
        let start = Instant::now();
        // Ready is when /healthz answers, not when the port takes connections: the port is
        // bound before the first /proc snapshot, which opens descriptors of its own (a test
        // that measures the server's descriptors must not measure it half-started).
        while !matches!(
            get_within(port, "/healthz", &[], Duration::from_secs(2)),
            Ok((200, _))
        ) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "hood serve did not answer /healthz on {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }
}

/// An HTTP/1.0 GET with extra header lines: (status, body).
pub fn get(port: u16, path: &str, headers: &[&str]) -> (u16, Vec<u8>) {
    get_within(port, path, headers, Duration::from_secs(120)).expect("answer")
}

/// `get`, failing (with the reason) when the whole answer takes longer than `limit`.
pub fn get_within(
    port: u16,
    path: &str,
    headers: &[&str],
    limit: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let start = Instant::now();
    let mut s = TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), limit)
        .map_err(|e| format!("connect: {e}"))?;
    let mut req = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16384];
    loop {
        let left = limit
            .checked_sub(start.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("no whole answer within {limit:?}"))?;
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("reading the answer: {e}")),
        }
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {:?}", String::from_utf8_lossy(&raw)))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, raw[split + 4..].to_vec()))
}
