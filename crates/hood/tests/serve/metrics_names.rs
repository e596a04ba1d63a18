//! `hood serve`'s `/metrics` as a Prometheus user would check it (issue 15, item 8): a scrape
//! passes `promtool check metrics` (the naming guide's lint), carries `hood_build_info`, and a
//! process's context switches are those of all its threads, not of its main thread only.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use crate::common;
use common::serve::Serve;

/// `hood serve` with `extra` arguments, ready (answering /healthz) on a port of its own.
fn start(extra: &[&str]) -> Serve {
    Serve::start_private(extra, Stdio::null())
}

/// The body of `GET /metrics`.
fn scrape(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").expect("HTTP reply");
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "{head}"
    );
    body.to_string()
}

/// The value of the series `series` (the full `name{labels}`).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_scrape_passes_promtool_check_metrics() {
    let s = start(&[]);
    let text = scrape(s.port);
    let Ok(mut lint) = common::command("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        println!("not run here: promtool is not installed (Debian: apt-get install prometheus)");
        return;
    };
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = lint.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics:\n{said}\n--- scrape\n{text}"
    );
    // The build-info metric names this binary.
    let info = text
        .lines()
        .find(|l| l.starts_with("hood_build_info{"))
        .unwrap_or_else(|| panic!("no hood_build_info:\n{text}"));
    assert!(
        info.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))),
        "{info}"
    );
    assert!(
        info.contains("commit=\"") && info.contains("build_date=\""),
        "{info}"
    );
    assert!(info.ends_with(" 1"), "{info}");
    // Memory as node_exporter shapes it: one metric per quantity.
    let total = value(&text, "hood_memory_total_bytes").expect("total");
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: f64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    assert_eq!(total, kb * 1024.0);
    assert!(
        !text.contains("kind=\"total\""),
        "a total mixed with its parts:\n{text}"
    );
}

/// Sum of the voluntary context switches of every live thread of `pid`, and of its main
/// thread alone.
fn voluntary(pid: u32) -> (u64, u64) {
    let read = |p: std::path::PathBuf| -> u64 {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let mut all = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        all += read(t.path().join("status"));
    }
    (all, read(format!("/proc/{pid}/status").into()))
}

#[test]
fn process_context_switches_count_every_thread() {
    let prog = common::c_program("ctx_threads");
    let mut child = common::command(&prog)
        .arg("30")
        .spawn()
        .expect("ctx_threads");
    let pid = child.id();
    let s = start(&["--process-filter", "ctx_threads"]);
    std::thread::sleep(Duration::from_millis(500));
    let (before, _) = voluntary(pid);
    let text = scrape(s.port);
    let (after, main_only) = voluntary(pid);
    let _ = child.kill();
    let _ = child.wait();
    let series =
        format!("hood_process_context_switches_total{{pid=\"{pid}\",name=\"ctx_threads\",kind=\"voluntary\"}}");
    let v = value(&text, &series).unwrap_or_else(|| panic!("no {series}:\n{text}")) as u64;
    assert!(
        before <= v && v <= after,
        "hood says {v}; the threads' sum went from {before} to {after} (main thread alone {main_only})"
    );
    assert!(
        main_only < before,
        "the sleeping threads switched more than the main thread"
    );
}
