//! cgroup v2 in `hood top` and `hood info` (issue 27, item 4): a cgroup made by the test with
//! a busy process moved in is the only one `--cgroup` shows, with its path on the task, and
//! its CPU and pressure in `system.cgroups`; the system's pressure equals /proc/pressure/* at
//! the same moment. Root (the test makes the cgroup).

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

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
    let Some(root) = cgroup2_root() else {
        println!("SKIPPED (no cgroup v2 hierarchy mounted): a_cgroup_made_here_...");
        return;
    };
    let name = format!("hood-test-{}", std::process::id());
    let dir = root.join(&name);
    std::fs::create_dir(&dir).unwrap();
    let kid = Command::new("sh")
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
