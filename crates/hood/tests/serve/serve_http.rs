//! `hood serve` over real HTTP on a loopback port: /healthz, /metrics parsed as Prometheus
//! text with the test's own busy process, pprof profiles decoded, 429/400/401 answers.

use crate::common;

use std::io::Read;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::serve::{get, Serve};
use common::*;
use prost::Message;

/// Start `hood serve` on a free loopback port with `extra` arguments and a TMPDIR of its own;
/// wait until it listens.
fn serve(extra: &[&str]) -> Serve {
    Serve::start_private(extra, Stdio::null())
}

/// `serve` with TMPDIR set to `tmp`.
fn serve_in(extra: &[&str], tmp: &std::path::Path) -> Serve {
    Serve::start(extra, tmp, Stdio::null())
}

/// A busy C process (`spin_here`), killed when dropped.
struct Spinner(Child);

impl Spinner {
    fn start() -> Spinner {
        Spinner(
            common::command(c_program("spinner"))
                .arg("120000")
                .spawn()
                .expect("spinner"),
        )
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Check Prometheus text syntax; return (series with labels, value) of every sample.
fn parse_prometheus(text: &str) -> Vec<(String, f64)> {
    let mut declared = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE line");
            assert!(["counter", "gauge"].contains(&kind), "{line}");
            declared.insert(name.to_string());
        } else if line.starts_with("# HELP ") {
        } else {
            let (series, value) = line.rsplit_once(' ').expect("sample line");
            let name = series.split('{').next().unwrap();
            assert!(declared.contains(name), "undeclared family: {line}");
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{line}"
            );
            if let Some(labels) = series.strip_prefix(name) {
                assert!(
                    labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')),
                    "{line}"
                );
            }
            let v: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
            out.push((series.to_string(), v));
        }
    }
    out
}

fn decode_pprof(gz: &[u8]) -> hood_report::pprof::proto::Profile {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut bytes)
        .expect("gzip");
    hood_report::pprof::proto::Profile::decode(bytes.as_slice()).expect("profile.proto")
}

/// Samples whose stack contains a function named `name`.
fn samples_in(p: &hood_report::pprof::proto::Profile, name: &str) -> i64 {
    let Some(sid) = p.string_table.iter().position(|s| s == name) else {
        return 0;
    };
    let funcs: Vec<u64> = p
        .function
        .iter()
        .filter(|f| f.name == sid as i64)
        .map(|f| f.id)
        .collect();
    let locs: Vec<u64> = p
        .location
        .iter()
        .filter(|l| l.line.iter().any(|ln| funcs.contains(&ln.function_id)))
        .map(|l| l.id)
        .collect();
    p.sample
        .iter()
        .filter(|s| s.location_id.iter().any(|l| locs.contains(l)))
        .map(|s| s.value[0])
        .sum()
}

#[test]
fn healthz_and_metrics_with_own_busy_child() {
    let spinner = Spinner::start();
    let pid = spinner.0.id().to_string();
    let s = serve(&[]);
    assert_eq!(get(s.port, "/healthz", &[]).0, 200);
    std::thread::sleep(Duration::from_millis(1500));
    let (code, body) = get(s.port, "/metrics", &[]);
    assert_eq!(code, 200);
    let text = String::from_utf8(body).expect("utf-8");
    let samples = parse_prometheus(&text);
    for family in [
        "hood_cpu_seconds_total",
        "hood_load1",
        "hood_memory_total_bytes",
        "hood_interrupts_total",
        "hood_context_switches_total",
        "hood_process_cpu_seconds_total",
        "hood_process_resident_memory_bytes",
        "hood_process_context_switches_total",
    ] {
        assert!(
            samples
                .iter()
                .any(|(k, _)| k.split('{').next() == Some(family)),
            "no {family} in:\n{text}"
        );
    }
    let mine = format!("hood_process_cpu_ratio{{pid=\"{pid}\",name=\"spinner\"}}");
    let ratio = samples
        .iter()
        .find(|(k, _)| *k == mine)
        .unwrap_or_else(|| panic!("busy child {pid} not exported:\n{text}"))
        .1;
    // It spins, so it used some CPU in the interval (how much depends on the machine's load).
    assert!(ratio > 0.0, "spinner at {ratio} CPUs");
    // The label set is bounded by --top (default 20).
    let pids: std::collections::HashSet<&str> = samples
        .iter()
        .filter(|(k, _)| k.starts_with("hood_process_resident_memory_bytes{"))
        .map(|(k, _)| k.as_str())
        .collect();
    assert!(pids.len() <= 20, "{} processes exported", pids.len());
    // A scrape right after another still gets ratios over at least a second.
    let (_, body) = get(s.port, "/metrics", &[]);
    let again = parse_prometheus(&String::from_utf8(body).unwrap());
    let interval = again
        .iter()
        .find(|(k, _)| k == "hood_interval_seconds")
        .expect("interval")
        .1;
    assert!(interval >= 1.0, "interval {interval}");
    assert_eq!(get(s.port, "/nope", &[]).0, 404);
}

#[test]
fn process_filter_limits_the_series() {
    let spinner = Spinner::start();
    let pid = spinner.0.id().to_string();
    let s = serve(&["--process-filter", "spinner", "--top", "5"]);
    let (code, body) = get(s.port, "/metrics", &[]);
    assert_eq!(code, 200);
    let text = String::from_utf8(body).unwrap();
    let samples = parse_prometheus(&text);
    let exported: Vec<&String> = samples
        .iter()
        .filter(|(k, _)| k.starts_with("hood_process_resident_memory_bytes{"))
        .map(|(k, _)| k)
        .collect();
    assert!(
        exported
            .iter()
            .any(|k| k.contains(&format!("pid=\"{pid}\""))),
        "{text}"
    );
    // Only matching processes: the spinner and hood serve itself (its command line holds the
    // filter text).
    let serve_pid = format!("pid=\"{}\"", s.child.id());
    assert!(
        exported
            .iter()
            .all(|k| k.contains("name=\"spinner\"") || k.contains(&serve_pid)),
        "{exported:?}"
    );
}

#[test]
fn token_required_when_set() {
    let s = serve(&["--token", "s3cret"]);
    assert_eq!(get(s.port, "/metrics", &[]).0, 401);
    assert_eq!(
        get(s.port, "/metrics", &["Authorization: Bearer wrong"]).0,
        401
    );
    assert_eq!(get(s.port, "/debug/pprof/profile?seconds=1", &[]).0, 401);
    assert_eq!(
        get(s.port, "/metrics", &["Authorization: Bearer s3cret"]).0,
        200
    );
    assert_eq!(get(s.port, "/healthz", &[]).0, 200);
    drop(s);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "fromfile\n").unwrap();
    let s = serve(&["--token-file", file.to_str().unwrap()]);
    assert_eq!(get(s.port, "/metrics", &[]).0, 401);
    assert_eq!(
        get(s.port, "/metrics", &["Authorization: Bearer fromfile"]).0,
        200
    );
}

#[test]
fn non_loopback_without_token_is_refused() {
    let out = run(hood().args(["serve", "--listen", "0.0.0.0:0"]));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token"), "{err}");
}

#[test]
fn bad_seconds_get_400() {
    let s = serve(&[]);
    for q in ["seconds=0", "seconds=61", "seconds=abc", "seconds=2&pid=-3"] {
        let (code, body) = get(s.port, &format!("/debug/pprof/profile?{q}"), &[]);
        assert_eq!(code, 400, "{q}: {}", String::from_utf8_lossy(&body));
    }
    // pid_max is at most 2^22: this pid cannot exist.
    let (code, _) = get(s.port, "/debug/pprof/profile?seconds=1&pid=999999999", &[]);
    assert_eq!(code, 404);
}

#[test]
fn sigterm_stops_the_server_and_removes_its_scratch_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = serve_in(&[], tmp.path());
    let entries = || std::fs::read_dir(tmp.path()).unwrap().count();
    assert_eq!(entries(), 1, "one private scratch directory");
    let pid = s.child.id() as i32;
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let start = Instant::now();
    let status = loop {
        if let Some(st) = s.child.try_wait().expect("wait") {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "hood serve ignores SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert_eq!(entries(), 0, "scratch directory left behind");
}

/// SIGKILL leaves a server no time to remove its scratch directory: the next server removes
/// it, and only it (not a running server's, not another user's, not a name it did not make).
#[test]
fn a_killed_servers_scratch_directory_is_removed_by_the_next_one() {
    let tmp = tempfile::tempdir().unwrap();
    let names = || {
        let mut v: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // Another user's directory named as a dead server's, and a name no server makes.
    let foreign = tmp.path().join("hood-serve-1-0-planted");
    std::fs::create_dir(&foreign).unwrap();
    std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    std::fs::create_dir(tmp.path().join("hood-serve-unparsed")).unwrap();
    let kept = names();
    let mut killed = serve_in(&[], tmp.path());
    let with_killed = names();
    assert_eq!(with_killed.len(), kept.len() + 1, "{with_killed:?}");
    let _ = killed.child.kill();
    let _ = killed.child.wait();
    assert_eq!(
        names(),
        with_killed,
        "SIGKILL left its directory (as it must)"
    );
    let running = serve_in(&[], tmp.path());
    let after = names();
    assert_eq!(after.len(), kept.len() + 1, "{after:?}");
    assert!(kept.iter().all(|k| after.contains(k)), "{after:?}");
    assert!(
        !after
            .iter()
            .any(|n| with_killed.contains(n) && !kept.contains(n)),
        "the killed server's directory is still there: {after:?}"
    );
    // A third server leaves the running one's directory alone.
    let third = serve_in(&[], tmp.path());
    assert_eq!(names().len(), kept.len() + 2, "{:?}", names());
    drop(third);
    drop(running);
}

#[test]
fn profile_of_one_pid_and_the_machine() {
    if !privileged("profile_of_one_pid_and_the_machine") {
        return;
    }
    let _l = exclusive();
    let spinner = Spinner::start();
    let pid = spinner.0.id();
    let s = serve(&[]);
    let (code, body) = get(
        s.port,
        &format!("/debug/pprof/profile?seconds=2&pid={pid}"),
        &[],
    );
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let p = decode_pprof(&body);
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    let spin = samples_in(&p, "spin_here");
    assert!(spin * 2 > total, "spin_here in {spin} of {total} samples");
    let (code, body) = get(s.port, "/debug/pprof/profile?seconds=1", &[]);
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let p = decode_pprof(&body);
    assert!(
        samples_in(&p, "spin_here") > 0,
        "system-wide profile misses the spinner"
    );
    // No kernel addresses: every function is named by a symbol, not 0x...
    for f in &p.function {
        let name = &p.string_table[f.name as usize];
        assert!(!name.contains("0xffff"), "kernel address in {name}");
    }
}

#[test]
fn concurrent_profiles_get_429() {
    if !privileged("concurrent_profiles_get_429") {
        return;
    }
    let _l = exclusive();
    let s = serve(&[]);
    let port = s.port;
    let threads: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || get(port, "/debug/pprof/profile?seconds=2", &[]).0))
        .collect();
    let mut codes: Vec<u16> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    codes.sort();
    assert_eq!(codes, [200, 429]);
}
