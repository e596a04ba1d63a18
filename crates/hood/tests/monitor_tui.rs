//! The interactive `hood top` driven in tmux: modes, sorting, filtering render, and `q` quits
//! and restores the terminal.

use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

const HOOD: &str = env!("CARGO_BIN_EXE_hood");

fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn screen(s: &str) -> String {
    tmux(&["capture-pane", "-p", "-t", s])
}

/// Wait until the screen contains `want` (polling; fails after 10 s).
fn wait_for(s: &str, want: &str) -> String {
    let t0 = Instant::now();
    loop {
        let sc = screen(s);
        if sc.contains(want) {
            return sc;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "never saw {want:?}:\n{sc}"
        );
        sleep(Duration::from_millis(100));
    }
}

#[test]
fn tui_modes_sort_filter_and_quit() {
    if Command::new("tmux").arg("-V").output().is_err() {
        println!(
            "SKIPPED (tmux not installed: apt-get install -y tmux): tui_modes_sort_filter_and_quit"
        );
        return;
    }
    let s = format!("hoodtui{}", std::process::id());
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &s,
        "-x",
        "160",
        "-y",
        "40",
        &format!("{HOOD} top -d 0.3; echo HOOD-EXITED; sleep 30"),
    ]);
    let sc = wait_for(&s, "top - ");
    assert!(
        sc.contains("Tasks:") && sc.contains("%CPU") && sc.contains("mode tasks"),
        "{sc}"
    );
    tmux(&["send-keys", "-t", &s, "i"]);
    wait_for(&s, "VCSW/s");
    tmux(&["send-keys", "-t", &s, "e"]);
    wait_for(&s, "SOFTIRQ");
    tmux(&["send-keys", "-t", &s, "t"]);
    tmux(&["send-keys", "-t", &s, "M"]);
    let sc = wait_for(&s, "sort mem");
    assert!(sc.contains("RES*"), "{sc}");
    tmux(&["send-keys", "-t", &s, ">"]);
    wait_for(&s, "sort state");
    tmux(&["send-keys", "-t", &s, "/", "h", "o", "o", "d", "Enter"]);
    let sc = wait_for(&s, "filter hood");
    let rows: Vec<&str> = sc
        .lines()
        .skip_while(|l| !l.contains("PID"))
        .skip(1)
        .filter(|l| l.trim().chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|l| l.contains("hood")),
        "{sc}"
    );
    tmux(&["send-keys", "-t", &s, "H"]);
    wait_for(&s, "TGID");
    tmux(&["send-keys", "-t", &s, "?"]);
    wait_for(&s, "any key closes");
    tmux(&["send-keys", "-t", &s, "x"]);
    tmux(&["resize-window", "-t", &s, "-x", "20", "-y", "5"]);
    sleep(Duration::from_millis(500));
    tmux(&["resize-window", "-t", &s, "-x", "160", "-y", "40"]);
    tmux(&["send-keys", "-t", &s, "q"]);
    let sc = wait_for(&s, "HOOD-EXITED");
    // The alternate screen is gone: the UI's header is no longer on screen.
    assert!(!sc.contains("Tasks:"), "{sc}");
    tmux(&["kill-session", "-t", &s]);
}
