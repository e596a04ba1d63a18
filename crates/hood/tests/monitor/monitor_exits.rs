//! Processes that start and end between two refreshes (issue 27, item 3): a CPU burner that
//! lives about 200 ms, started after one refresh of `hood top` (live, and recording into a
//! store) and gone before the next, is shown in the interval it ran in, with its CPU time.
//! Root: the kernel's exit accounting (taskstats) needs CAP_NET_ADMIN.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{hood, run};
use serde_json::Value;

/// Burns CPU in bash itself (no child processes) until its own user + system time reaches
/// 20 clock ticks (200 ms at USER_HZ 100), reading /proc/$$/stat with a builtin; prints its pid
/// first.
const BURNER: &str = r#"echo $$; while :; do read -r l < /proc/$$/stat; set -- ${l##*) }; (( ${12} + ${13} >= 20 )) && exit 0; done"#;

/// Run the burner to its end; its pid.
fn burn() -> u32 {
    let out = common::command("bash")
        .args(["-c", BURNER])
        .stderr(Stdio::inherit())
        .output()
        .expect("bash runs");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn views(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON view per line"))
        .collect()
}

/// What the views say of `pid`, named `name`: (CPU ms of each interval it is in, the lifetime
/// CPU ms of the view that shows it ended).
fn accounted(views: &[Value], pid: u32, name: &str) -> (f64, Option<u64>) {
    let mut in_intervals = 0.0;
    let mut ended = None;
    for v in views {
        let iv = v["interval_s"].as_f64().unwrap_or(0.0);
        for t in v["tasks"].as_array().unwrap() {
            if t["pid"] != pid {
                continue;
            }
            in_intervals += t["cpu_percent"].as_f64().unwrap_or(0.0) / 100.0 * iv * 1000.0;
            if t["exited"] == true {
                assert_eq!(t["state"], "X", "{t}");
                assert_eq!(t["name"], name, "{t}");
                ended = Some(
                    t["user_time_ms"].as_u64().unwrap() + t["kernel_time_ms"].as_u64().unwrap(),
                );
            }
        }
    }
    (in_intervals, ended)
}

/// The burner's CPU is in the views: once shown ended with its lifetime total (at least the
/// 200 ms it burned), and spread over the intervals it ran in to that same total.
fn check(views: &[Value], pid: u32) {
    let (in_intervals, ended) = accounted(views, pid, "bash");
    let total = ended.unwrap_or_else(|| panic!("pid {pid} never shown as ended: {views:?}"));
    assert!((195..1000).contains(&total), "lifetime CPU {total} ms");
    assert!(
        (in_intervals - total as f64).abs() <= 15.0 + 0.05 * total as f64,
        "intervals add up to {in_intervals:.1} ms, lifetime {total} ms"
    );
    let ex = &views.last().unwrap()["exits"];
    assert!(ex["unavailable"].is_null(), "{ex}");
}

#[test]
fn a_process_that_starts_and_ends_between_two_refreshes_is_shown_with_its_cpu() {
    if !common::root("a_process_that_starts_and_ends_between_two_refreshes_is_shown_with_its_cpu") {
        return;
    }
    // A burner measured to its CPU time: not beside the busy processes of other tests.
    let _one = common::exclusive();
    let top = hood()
        .args(["top", "-b", "--json", "-d", "1", "-n", "4"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Refreshes at about 0, 1, 2, 3 and 4 s: the burner runs from 1.3 s for ~0.2 s of CPU.
    std::thread::sleep(Duration::from_millis(1300));
    let t = Instant::now();
    let pid = burn();
    let took = t.elapsed();
    let out = top.wait_with_output().unwrap();
    assert!(out.status.success());
    let v = views(&out.stdout);
    assert_eq!(v.len(), 4);
    check(&v, pid);
    // Started and ended between two refreshes (unless the loaded machine stretched it):
    // then no view shows it alive.
    if took < Duration::from_millis(600) {
        let alive = v.iter().any(|v| {
            v["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["pid"] == pid && t["exited"] == false)
        });
        assert!(!alive, "pid {pid} ran {took:?} and was also shown alive");
    }
}

#[test]
fn a_recording_keeps_a_process_that_started_and_ended_between_two_intervals() {
    if !common::root("a_recording_keeps_a_process_that_started_and_ended_between_two_intervals") {
        return;
    }
    // A burner measured to its CPU time: not beside the busy processes of other tests.
    let _one = common::exclusive();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("store");
    let mut rec = hood()
        .args(["top", "-d", "1", "-n", "4", "--record"])
        .arg(&dir)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1300));
    let pid = burn();
    assert!(rec.wait().unwrap().success());
    let out = run(hood()
        .args(["top", "-b", "--json", "--replay"])
        .arg(&dir)
        .args(["--from", "1h ago"]));
    assert!(out.status.success());
    check(&views(&out.stdout), pid);
    // The CSV of the window lists it too, in state X.
    let out = run(hood()
        .args(["top", "-b", "--csv", "--replay"])
        .arg(&dir)
        .args(["--from", "1h ago", "--filter", &pid.to_string()]));
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        csv.lines()
            .any(|l| l.contains(&format!(",{pid},")) && l.contains(",X,")),
        "{csv}"
    );
}

/// A process whose threads end refreshes before it does (tests/c/threads_end.c: three threads
/// burn 200 ms each and are joined, then the main thread burns 100 ms when told): its ended
/// row holds its whole life, the threads' time too, and the intervals it is in add up to that
/// life. Before, the threads' reports had been read (and set aside: their process lived on)
/// at an earlier refresh, so the process's exit report held only its main thread, less than
/// /proc had said at the previous refresh, and its last interval showed no CPU at all: the
/// interval's total fell short of /proc/stat's by what such processes used in it.
#[test]
fn a_process_whose_threads_ended_at_earlier_refreshes_keeps_its_last_interval() {
    if !common::root("a_process_whose_threads_ended_at_earlier_refreshes_keeps_its_last_interval") {
        return;
    }
    // A burner measured to its CPU time: not beside the busy processes of other tests.
    let _one = common::exclusive();
    let prog = common::c_program("threads_end");
    // To a file: nothing reads a pipe until the end, and a full one would stop the refreshes.
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("views.json");
    let mut top = hood()
        .args(["top", "-b", "--json", "-d", "0.5"])
        .stdout(std::fs::File::create(&json).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let mut p = common::command(&prog)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(p.stdout.take().unwrap()).lines();
    let pid: u32 = lines.next().unwrap().unwrap().trim().parse().unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "joined");
    // Refreshes pass with the threads ended and the process alive.
    std::thread::sleep(Duration::from_millis(1500));
    writeln!(p.stdin.take().unwrap(), "go").unwrap();
    assert!(p.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(1500));
    top.kill().unwrap();
    top.wait().unwrap();
    // Killed: a last line may be cut.
    let v: Vec<Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let (in_intervals, ended) = accounted(&v, pid, "threads_end");
    let total = ended.unwrap_or_else(|| {
        let rows: Vec<&Value> = v
            .iter()
            .flat_map(|v| v["tasks"].as_array().unwrap())
            .filter(|t| t["pid"] == pid)
            .collect();
        panic!(
            "pid {pid} never shown as ended in {} views: {rows:?}",
            v.len()
        )
    });
    assert!(
        (690..5000).contains(&total),
        "lifetime CPU {total} ms: the three threads' 600 ms and the main thread's 100 ms"
    );
    assert!(
        (in_intervals - total as f64).abs() <= 15.0 + 0.05 * total as f64,
        "intervals add up to {in_intervals:.1} ms, lifetime {total} ms"
    );
}
