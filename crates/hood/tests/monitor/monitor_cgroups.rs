//! cgroup v2 in `hood top` and `hood info` (issue 27, item 4): a cgroup made by the test with
//! a busy process moved in is the only one `--cgroup` shows, with its path on the task, and
//! its CPU and pressure in `system.cgroups`; the system's pressure equals /proc/pressure/* at
//! the same moment. Root (the test makes the cgroup).

use crate::common;

use std::path::PathBuf;
use std::process::{Child, Stdio};

use common::{hood, run};
use serde_json::Value;

/// The cgroup v2 root's mount point (`/sys/fs/cgroup` or `/sys/fs/cgroup/unified`).
fn cgroup2_root() -> Option<PathBuf> {
    let mi = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mi.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let f: Vec<&str> = pre.split_whitespace().collect();
        (post.starts_with("cgroup2 ") && f.get(3) == Some(&"/")).then(|| PathBuf::from(f[4]))
    })
}

/// A cgroup made for the test with a busy shell in it; both gone on drop.
struct Group {
    dir: PathBuf,
    kid: Child,
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = self.kid.kill();
        let _ = self.kid.wait();
        // The cgroup can go once its process has been reaped.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

fn psi_total(file: &str) -> u64 {
    let t = std::fs::read_to_string(file).unwrap();
    let some = t.lines().find(|l| l.starts_with("some ")).unwrap();
    some.rsplit("total=")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_cgroup_made_here_is_filtered_shown_with_its_cpu_and_pressure() {
    if !common::root("a_cgroup_made_here_is_filtered_shown_with_its_cpu_and_pressure") {
        return;
    }
    // One busy cgroup at a time: two busy shells would take each other's CPU on a small
    // machine, below what the first test expects of its own.
    // (`common::exclusive()`: the one lock of every test of this binary that must run alone.)
    let _one = common::exclusive();
    let Some(root) = cgroup2_root() else {
        println!("SKIPPED (no cgroup v2 hierarchy mounted): a_cgroup_made_here_...");
        return;
    };
    let name = format!("hood-test-{}", std::process::id());
    let dir = root.join(&name);
    std::fs::create_dir(&dir).unwrap();
    let kid = common::command("sh")
        .args(["-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let g = Group { dir, kid };
    let pid = g.kid.id();
    std::fs::write(g.dir.join("cgroup.procs"), pid.to_string()).unwrap();
    let path = format!("/{name}");

    let before = psi_total("/proc/pressure/cpu");
    let out = run(hood().args([
        "top", "-b", "--json", "-d", "1", "-n", "2", "--cgroup", &path,
    ]));
    let after = psi_total("/proc/pressure/cpu");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap();
    // Only the cgroup's process, with its path.
    let tasks = last["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0]["pid"], pid);
    assert_eq!(tasks[0]["cgroup"], path.as_str());
    let task_cpu = tasks[0]["cpu_percent"].as_f64().unwrap();
    assert!(task_cpu > 20.0, "{task_cpu}");
    // The cgroup's own counters agree with its one process.
    let cgs = last["cgroups"].as_array().unwrap();
    let cg = cgs
        .iter()
        .find(|c| c["path"] == path.as_str())
        .expect("the cgroup");
    assert_eq!(cg["tasks"], 1);
    assert_eq!(cg["name"], name.as_str());
    let cg_cpu = cg["cpu_percent"].as_f64().unwrap();
    assert!(
        (cg_cpu - task_cpu).abs() < 15.0,
        "cgroup {cg_cpu} task {task_cpu}"
    );
    if g.dir.join("cpu.pressure").exists() {
        assert!(cg["pressure"]["cpu"]["some"]["avg10"].is_number(), "{cg}");
    }
    // The system's pressure is /proc/pressure/cpu's, read between our two readings.
    let sys = last["pressure"]["cpu"]["some"]["total_us"]
        .as_u64()
        .unwrap();
    assert!(
        before <= sys && sys <= after,
        "{before} <= {sys} <= {after}"
    );

    // hood info lists the cgroup too.
    let out = run(hood().args(["info", "system.cgroups", "--json"]));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("\"{path}\"")));
    drop(g);
}

/// A cgroup made here (a systemd-like service name with a quote and a backslash in it), a
/// busy shell moved in, seen where a user looks for it: the CGROUP column of the live screen
/// (by its service name) and the cgroup tree (`o`, with the shell under it), `--cgroup` on a
/// replayed store, and `hood serve`'s `/metrics` (labels escaped; `promtool check metrics`
/// where promtool is installed).
#[test]
fn a_cgroup_shows_in_the_column_the_tree_a_replay_and_metrics() {
    let test = "a_cgroup_shows_in_the_column_the_tree_a_replay_and_metrics";
    if !common::root(test) || common::tmux::missing(test) {
        return;
    }
    let _one = common::exclusive();
    let Some(root) = cgroup2_root() else {
        println!("SKIPPED (no cgroup v2 hierarchy mounted): {test}");
        return;
    };
    let id = std::process::id();
    let leaf = format!("hood-test-{id}-\"q\\.service");
    let dir = root.join(&leaf);
    std::fs::create_dir(&dir).unwrap();
    let kid = common::command("sh")
        .args(["-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let g = Group { dir, kid };
    let pid = g.kid.id();
    std::fs::write(g.dir.join("cgroup.procs"), pid.to_string()).unwrap();
    let path = format!("/{leaf}");
    let service = format!("service:hood-test-{id}-\"q\\");

    // The live screen, wide enough for the column: the shell's row names its cgroup.
    let hood_bin = env!("CARGO_BIN_EXE_hood");
    let s = common::tmux::Screen::start(
        "hoodcgroups",
        200,
        40,
        &format!("{hood_bin} top -d 0.5 --filter {pid}; echo HOOD-EXITED; sleep 30"),
    );
    let col: String = service.chars().take(16).collect();
    let sc = s.wait_until("the shell's row with its cgroup", |sc| {
        sc.lines()
            .any(|l| l.trim_start().starts_with(&format!("{pid} ")) && l.contains(&col))
    });
    assert!(sc.contains("CGROUP"), "{sc}");
    // The cgroup tree: the cgroup with the shell under it.
    s.keys(&["o"]);
    let sc = s.wait_for(&format!("{pid} sh"));
    assert!(sc.contains("mode cgroups"), "{sc}");
    let at = sc.find(&service).unwrap_or_else(|| panic!("{sc}"));
    assert!(at < sc.find(&format!("{pid} sh")).unwrap(), "{sc}");
    assert!(sc.contains("P-CPU") && sc.contains("TASKS"), "{sc}");
    s.keys(&["q"]);
    s.wait_for("HOOD-EXITED");

    // A store replayed with --cgroup: the shell alone.
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let out = run(hood()
        .args(["top", "-d", "0.5", "-n", "3", "--record"])
        .arg(&store));
    assert!(out.status.success(), "{}", common::text(&out));
    let out = run(hood()
        .args(["top", "-b", "--csv", "--cgroup", &path, "--replay"])
        .arg(&store));
    assert!(out.status.success(), "{}", common::text(&out));
    let csv = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(
        rows.iter()
            .all(|r| r.split(',').nth(1) == Some(&*pid.to_string())),
        "{csv}"
    );
    // ... and the cgroup's own line in the JSON of the replay.
    let out = run(hood()
        .args(["top", "-b", "--json", "--cgroup", &path, "--replay"])
        .arg(&store));
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    let cgs = last["cgroups"].as_array().unwrap();
    assert_eq!(cgs.len(), 1, "{cgs:?}");
    assert_eq!(cgs[0]["path"], path.as_str());

    // /metrics: the cgroup's series, its labels escaped, its CPU counting.
    let sv = common::serve::Serve::start_private(&[], Stdio::null());
    let series = format!(
        "hood_cgroup_cpu_seconds_total{{cgroup=\"/hood-test-{id}-\\\"q\\\\.service\",\
         name=\"service:hood-test-{id}-\\\"q\\\\\"}}"
    );
    let (code, body) = common::serve::get(sv.port, "/metrics", &[]);
    assert_eq!(code, 200);
    let text = String::from_utf8_lossy(&body).to_string();
    let cpu = |text: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(&series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series}:\n{text}"))
    };
    let first = cpu(&text);
    std::thread::sleep(std::time::Duration::from_millis(600));
    let (_, body) = common::serve::get(sv.port, "/metrics", &[]);
    let text = String::from_utf8_lossy(&body).to_string();
    assert!(cpu(&text) > first, "{text}");
    assert!(text.contains(&format!(
        "hood_cgroup_processes{{cgroup=\"/hood-test-{id}-\\\"q\\\\.service\""
    )));
    if let Ok(mut lint) = common::command("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        lint.stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = lint.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && said.trim().is_empty(),
            "promtool check metrics:\n{said}"
        );
    } else {
        println!("promtool not installed (Debian: apt-get install prometheus): lint not run");
    }
    drop(sv);
    drop(g);
}
