//! A real Prometheus server (Debian's `prometheus` package) scrapes `hood serve` on loopback;
//! a metric is queried back through Prometheus's HTTP API and compared with /proc.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::hood;
use common::serve::free_port;

/// Kills the process when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// HTTP/1.0 GET of `path`: (status, body), or None when nothing listens yet.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// The first result of an instant query, as (labels, value).
fn query(port: u16, promql: &str) -> Option<(serde_json::Value, f64)> {
    let (code, body) = get(port, &format!("/api/v1/query?query={promql}"))?;
    if code != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let first = v["data"]["result"].as_array()?.first()?.clone();
    let value = first["value"][1].as_str()?.parse().ok()?;
    Some((first["metric"].clone(), value))
}

#[test]
fn prometheus_scrapes_hood_serve() {
    let dir = tempfile::tempdir().unwrap();
    let hood_port = free_port();
    let _serve = Killed(
        hood()
            .args(["serve", "--listen", &format!("127.0.0.1:{hood_port}")])
            // Killed at the end: its scratch directory goes with the test's, not into /tmp.
            .env("TMPDIR", dir.path())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn hood serve"),
    );
    let prom_port = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: hood\n    static_configs:\n      - targets: ['127.0.0.1:{hood_port}']\n"
        ),
    )
    .unwrap();
    let _prom = Killed(
        common::command("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("`prometheus` must be installed for this test (apt-get install prometheus)"),
    );
    // Wait for a successful scrape: `up` is 1 and a hood metric is stored.
    let start = Instant::now();
    let mem_total = loop {
        let up = query(prom_port, "up%7Bjob%3D%22hood%22%7D").map(|(_, v)| v);
        let mem = query(prom_port, "hood_memory_total_bytes");
        if let (Some(1.0), Some((labels, v))) = (up, mem) {
            assert_eq!(labels["job"], "hood");
            break v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "Prometheus on {prom_port} did not scrape hood serve on {hood_port} (up = {up:?})"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("MemTotal");
    assert_eq!(mem_total, kb * 1024.0);
    // A counter with per-CPU labels came through too.
    let (labels, secs) = query(
        prom_port,
        "hood_cpu_seconds_total%7Bcpu%3D%220%22%2Cmode%3D%22user%22%7D",
    )
    .expect("hood_cpu_seconds_total stored");
    assert_eq!(labels["mode"], "user");
    assert!(secs > 0.0);
}
