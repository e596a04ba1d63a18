//! `hood top` in the default terminal, 80×24, driven in tmux (issue 27, item 6): every row
//! shows which process it is, `Esc` clears a filter, `?` explains the markers, and the header
//! shows pressure, disks and network.

use crate::common;

use common::tmux::{missing, Screen};

const HOOD: &str = env!("CARGO_BIN_EXE_hood");

/// The task rows on screen (lines after the table header that start with a pid).
fn rows(sc: &str) -> Vec<&str> {
    sc.lines()
        .skip_while(|l| !l.trim_start().starts_with("PID"))
        .skip(1)
        .filter(|l| l.trim().chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect()
}

#[test]
fn at_80x24_every_row_names_its_process_and_esc_clears_the_filter() {
    if missing("at_80x24_every_row_names_its_process_and_esc_clears_the_filter") {
        return;
    }
    let s = Screen::start(
        "hoodnarrow",
        80,
        24,
        &format!("{HOOD} top -d 0.3; echo HOOD-EXITED; sleep 30"),
    );
    // The whole first frame (a loaded machine can show the header lines before the table).
    let sc = s.wait_until("the table header", |sc| {
        sc.lines().any(|l| l.trim_start().starts_with("PID"))
    });
    let head = sc
        .lines()
        .find(|l| l.trim_start().starts_with("PID"))
        .expect("waited for it");
    assert!(head.trim_end().ends_with("NAME"), "{sc}");
    // The cgroup column is the first to go.
    assert!(!head.contains("CGROUP"), "{sc}");
    assert!(head.contains("%CPU"), "{sc}");
    // /proc/pressure exists on this kernel; disks and network always have a line.
    if std::path::Path::new("/proc/pressure/cpu").exists() {
        assert!(sc.contains("Pressure (% stalled"), "{sc}");
    }
    assert!(sc.contains("Disk:") && sc.contains("Net:"), "{sc}");

    // Filtered (hood itself, and whatever else matches): every row's last column is the name
    // of the process its pid says, whole.
    s.keys(&["/", "h", "o", "o", "d", "Enter"]);
    let sc = s.wait_for("filter hood");
    let r = rows(&sc);
    assert!(!r.is_empty(), "{sc}");
    let mut checked = 0;
    for l in &r {
        assert!(l.chars().count() <= 80, "{l}");
        let pid = l.split_whitespace().next().unwrap();
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
            continue; // gone since
        };
        let comm = comm.trim_end_matches('\n');
        // Names with control characters are shown escaped; plain ones as they are.
        if comm.chars().all(|c| c.is_ascii_graphic()) {
            assert!(l.ends_with(comm), "row of {pid} ({comm}):\n{sc}");
            checked += 1;
        }
    }
    assert!(checked > 0, "{sc}");
    // Esc clears the filter (and does not quit)...
    s.keys(&["Escape"]);
    let sc = s.wait_for("filter -");
    assert!(rows(&sc).len() > r.len() || sc.contains("hood"), "{sc}");
    // ... also while typing one.
    s.keys(&["/", "x", "y", "z", "Escape"]);
    s.wait_for("filter -");

    // `c` shows the full command line in the last column, and back.
    s.keys(&["c"]);
    s.wait_for("COMMAND");
    // Once the next refresh has read the command lines: hood's own, found by it.
    s.keys(&["/"]);
    s.type_text("top -d 0.3");
    s.keys(&["Enter"]);
    // hood's command line starts with its path (cut at the screen's edge: at 80 columns the
    // last column keeps at least 15 characters); tmux's and the shell's hold the text too.
    let start: String = HOOD.chars().take(15).collect();
    let sc = s.wait_for(&start);
    assert!(sc.contains("tmux new-session"), "{sc}");
    s.keys(&["Escape"]);
    s.wait_for("filter -");
    s.keys(&["c"]);
    s.wait_for("NAME");

    // The help explains the markers.
    s.keys(&["?"]);
    let sc = s.wait_for("any key closes");
    assert!(
        sc.contains("sorted by it") && sc.contains("ended during"),
        "{sc}"
    );
    s.keys(&["x"]);
    // Esc without a filter quits.
    s.keys(&["Escape"]);
    s.wait_for("HOOD-EXITED");
}

/// The nice value of `pid` (field 19 of /proc/PID/stat).
fn nice_of(pid: u32) -> i64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after.split_whitespace().nth(16).unwrap().parse().unwrap()
}

/// htop's basics at 80×24: the selected process (a `sleep` of this test's) is reniced with
/// `n` and killed with `k`, each only after the confirmation line named it; Esc cancels;
/// pid 1 is refused; `t` in the task view (and F5) shows the process tree.
#[test]
fn k_and_n_ask_first_then_act_on_the_selected_process_and_t_shows_the_tree() {
    if missing("k_and_n_ask_first_then_act_on_the_selected_process_and_t_shows_the_tree") {
        return;
    }
    let mut kid = common::command("sleep").arg("1000").spawn().unwrap();
    let pid = kid.id();
    let s = Screen::start(
        "hoodkeys",
        80,
        24,
        &format!("{HOOD} top -d 0.3 --filter {pid}; echo HOOD-EXITED; sleep 30"),
    );
    s.wait_until("the sleep's row", |sc| {
        rows(sc)
            .iter()
            .any(|l| l.trim_start().starts_with(&format!("{pid} ")))
    });
    // k asks, Esc cancels: nothing sent.
    s.keys(&["k"]);
    s.wait_for(&format!("send SIGTERM (15) to {pid} (sleep)?"));
    s.keys(&["Escape"]);
    s.wait_for("cancelled: nothing sent");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(kid.try_wait().unwrap().is_none(), "the sleep was signalled");
    // n asks with the current value; a typed one is set on Enter.
    // (The sleep has this test's nice value, which is not 0 under `nice cargo test`.)
    let n0 = nice_of(pid);
    let n1 = if n0 == 5 { 6 } else { 5 };
    s.keys(&["n"]);
    s.wait_for(&format!("renice {pid} (sleep) from {n0} to {n0}?"));
    s.keys(&[&n1.to_string()]);
    s.wait_for(&format!("to {n1}?"));
    assert_eq!(nice_of(pid), n0, "reniced before Enter");
    s.keys(&["Enter"]);
    s.wait_for(&format!("{pid} (sleep) now runs at nice {n1}"));
    assert_eq!(nice_of(pid), n1);
    // k, Enter: SIGTERM.
    s.keys(&["k"]);
    s.wait_for("SIGTERM (15)");
    s.keys(&["Enter"]);
    s.wait_for(&format!("sent SIGTERM to {pid} (sleep)"));
    let st = kid.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&st), Some(15));

    // pid 1 (first by pid, ascending) is refused outright.
    s.keys(&["Escape"]);
    s.wait_for("filter -");
    s.keys(&["N"]);
    s.wait_for("sort pid asc");
    s.keys(&["Home"]);
    s.wait_until("pid 1 selected at the top", |sc| {
        rows(sc)
            .first()
            .is_some_and(|l| l.trim_start().starts_with("1 "))
    });
    s.keys(&["k"]);
    s.wait_for("does not signal pid 1 (init)");
    s.keys(&["n"]);
    s.wait_for("does not renice pid 1 (init)");
    // `t` in the task view: the tree (pid 1 at its root, branches below); F5 toggles back.
    s.keys(&["t"]);
    let sc = s.wait_for("mode tasks tree");
    assert!(sc.contains("\u{2500} "), "{sc}");
    s.keys(&["F5"]);
    s.wait_for("mode tasks |");
    s.keys(&["?"]);
    let sc = s.wait_for("any key closes");
    assert!(sc.contains("k (F9)") && sc.contains("renice"), "{sc}");
    s.keys(&["x"]);
    s.keys(&["q"]);
    s.wait_for("HOOD-EXITED");
}

/// Bash completion of `hood top --sort` and `hood ps --sort` offers the sort keys, not file
/// names.
#[test]
fn bash_completion_offers_the_sort_keys() {
    let out = common::command(HOOD)
        .args(["--generate", "complete-bash"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let offers = text
        .split("--sort)")
        .skip(1)
        .filter(|arm| {
            let arm = arm.lines().nth(1).unwrap_or("");
            ["pid", "cpu", "mem", "syscalls", "name"]
                .iter()
                .all(|k| arm.split(['"', ' ']).any(|w| w == *k))
        })
        .count();
    // hood top and hood ps.
    assert!(offers >= 2, "{text}");
}

/// The pid of `parent`'s child, read from /proc (waiting for it to appear).
fn child_of(parent: u32) -> u32 {
    for _ in 0..100 {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let rest = &stat[stat.rfind(')').unwrap() + 2..];
            if rest.split(' ').nth(1) == Some(&parent.to_string()) {
                return pid;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("pid {parent} never had a child");
}

/// `hood top -b --tree`: in the text frames, live and replayed, a process comes right after
/// its parent (its only child), its name behind a branch; without --tree no row has one.
#[test]
fn batch_tree_puts_a_child_under_its_parent_live_and_replayed() {
    let mut sh = common::command("sh")
        .args(["-c", "sleep 1000 & wait"])
        .spawn()
        .unwrap();
    let child = child_of(sh.id());
    let check = |out: &std::process::Output, tree: bool| {
        assert!(out.status.success(), "{}", common::text(out));
        let s = String::from_utf8_lossy(&out.stdout);
        let starts = |l: &str, pid: u32| l.split_whitespace().next() == Some(&pid.to_string());
        let lines: Vec<&str> = s.lines().collect();
        let at = lines.iter().position(|l| starts(l, sh.id()));
        let at = at.unwrap_or_else(|| panic!("no row of pid {}:\n{s}", sh.id()));
        if tree {
            let next = lines[at + 1];
            assert!(
                starts(next, child) && next.contains("\u{2514}\u{2500} sleep"),
                "{s}"
            );
        } else {
            assert!(!s.contains("\u{2514}\u{2500} "), "{s}");
        }
    };
    let live = |tree: bool| {
        let mut c = common::hood();
        c.args(["top", "-b", "-n", "1", "-d", "0.2"])
            .env("COLUMNS", "250");
        if tree {
            c.arg("--tree");
        }
        c.output().unwrap()
    };
    check(&live(true), true);
    check(&live(false), false);
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("store");
    let out = common::run(
        common::hood()
            .args(["top", "-d", "0.3", "-n", "2", "--record"])
            .arg(&dir),
    );
    assert!(out.status.success(), "{}", common::text(&out));
    let replayed = common::run(
        common::hood()
            .args(["top", "-b", "--tree", "--replay"])
            .arg(&dir)
            .env("COLUMNS", "250"),
    );
    check(&replayed, true);
    let _ = sh.kill();
    let _ = sh.wait();
    let _ = common::command("kill").arg(child.to_string()).status();
}
