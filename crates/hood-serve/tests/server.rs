//! The library's server on a loopback port with a stand-in profiler: routes, the bearer token,
//! `/metrics` from the real /proc, the profiler called with the query and the private scratch
//! directory, and a clean stop (scratch directory removed) when the stop flag is set.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hood_serve::{Access, Answer, BuildInfo, Config, Server};

/// An HTTP/1.0 GET (or another method) with extra header lines: (status, head, body).
fn request(addr: SocketAddr, method: &str, path: &str, headers: &[&str]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("answer");
    let (head, body) = raw.split_once("\r\n\r\n").expect("head and body");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status");
    (status, head.to_lowercase(), body.to_string())
}

fn config(token: Option<&str>) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        token: token.map(str::to_string),
        top: 5,
        process_filter: None,
        build: BuildInfo {
            version: "9.9.9",
            commit: "abc",
            date: "2026-01-01",
        },
    }
}

/// What the stand-in profiler was asked: (query, scratch directory, whether it existed).
type Calls = Arc<Mutex<Vec<(String, PathBuf, bool)>>>;

/// Run a server with `token` in a thread; the stop flag and its thread.
fn start(
    token: Option<&str>,
    calls: &Calls,
) -> (
    SocketAddr,
    Arc<AtomicBool>,
    PathBuf,
    std::thread::JoinHandle<()>,
) {
    let server = Server::bind(&config(token)).expect("bind");
    let addr = server.local_addr().unwrap();
    let scratch = server.scratch().to_path_buf();
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::clone(calls);
    let flag = Arc::clone(&stop);
    let t = std::thread::spawn(move || {
        server.run(
            &flag,
            move |query: &str, _access: Access, scratch: &Path, _stop: &AtomicBool| {
                calls.lock().unwrap().push((
                    query.to_string(),
                    scratch.to_path_buf(),
                    scratch.is_dir(),
                ));
                Answer::bytes(200, "application/octet-stream", b"PROFILE".to_vec()).with_header(
                    "content-disposition",
                    "attachment; filename=\"profile.pb.gz\"",
                )
            },
        );
    });
    (addr, stop, scratch, t)
}

#[test]
fn routes_metrics_profiles_and_stop() {
    let calls = Calls::default();
    let (addr, stop, scratch, thread) = start(None, &calls);
    assert!(scratch.is_dir());
    let (code, _, body) = request(addr, "GET", "/healthz", &[]);
    assert_eq!((code, body.as_str()), (200, "ok\n"));
    let (code, head, body) = request(addr, "GET", "/metrics", &[]);
    assert_eq!(code, 200, "{body}");
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(
        body.contains(
            "hood_build_info{version=\"9.9.9\",commit=\"abc\",build_date=\"2026-01-01\"} 1"
        ),
        "{body}"
    );
    // This test's own process is among the processes counted.
    assert!(body.contains("hood_uptime_seconds "), "{body}");
    assert!(
        body.lines().any(|l| l.starts_with("hood_processes{state=")),
        "{body}"
    );
    let (code, head, body) = request(addr, "GET", "/debug/pprof/profile?seconds=3&pid=7", &[]);
    assert_eq!((code, body.as_str()), (200, "PROFILE"));
    assert!(head.contains("content-disposition: attachment"), "{head}");
    assert_eq!(
        calls.lock().unwrap().as_slice(),
        &[("seconds=3&pid=7".to_string(), scratch.clone(), true)]
    );
    assert_eq!(request(addr, "GET", "/nothing", &[]).0, 404);
    assert_eq!(request(addr, "POST", "/metrics", &[]).0, 405);
    stop.store(true, Ordering::Relaxed);
    thread.join().expect("server thread");
    assert!(!scratch.exists(), "scratch directory left behind");
    assert!(
        TcpStream::connect(addr).is_err(),
        "still listening after stop"
    );
}

#[test]
fn the_token_guards_metrics_and_profiles_not_health() {
    let calls = Calls::default();
    let (addr, stop, _, thread) = start(Some("s3cret"), &calls);
    for path in ["/metrics", "/debug/pprof/profile"] {
        let (code, head, _) = request(addr, "GET", path, &[]);
        assert_eq!(code, 401, "{path}");
        assert!(head.contains("www-authenticate: bearer"), "{head}");
        assert_eq!(
            request(addr, "GET", path, &["Authorization: Bearer s3creT"]).0,
            401
        );
        assert_eq!(
            request(addr, "GET", path, &["Authorization: Bearer s3cret"]).0,
            200
        );
    }
    assert_eq!(request(addr, "GET", "/healthz", &[]).0, 200);
    assert_eq!(
        calls.lock().unwrap().len(),
        1,
        "the profiler ran only when authorized"
    );
    stop.store(true, Ordering::Relaxed);
    thread.join().expect("server thread");
}

#[test]
fn a_port_in_use_is_an_error_that_says_so() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cfg = config(None);
    cfg.listen = taken.local_addr().unwrap();
    let err = Server::bind(&cfg).err().expect("the port is taken");
    let text = err.to_string();
    assert!(
        text.contains(&cfg.listen.to_string()) && text.contains("is the port in use"),
        "{text}"
    );
}
