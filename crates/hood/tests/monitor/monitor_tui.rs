//! The interactive `hood top` driven in tmux: modes, sorting, filtering render, and `q` quits
//! and restores the terminal.

use crate::common;

use std::thread::sleep;
use std::time::Duration;

use common::tmux::{missing, tmux, Screen};

const HOOD: &str = env!("CARGO_BIN_EXE_hood");

#[test]
fn tui_modes_sort_filter_and_quit() {
    if missing("tui_modes_sort_filter_and_quit") {
        return;
    }
    let s = Screen::start(
        "hoodtui",
        160,
        40,
        &format!("{HOOD} top -d 0.3; echo HOOD-EXITED; sleep 30"),
    );
    // The first frame may be caught half drawn (its status line, at the bottom, comes last).
    let sc = s.wait_until("the first whole frame", |sc| {
        sc.contains("top - ") && sc.contains("mode tasks")
    });
    assert!(sc.contains("Tasks:") && sc.contains("%CPU"), "{sc}");
    s.keys(&["i"]);
    s.wait_for("VCSW/s");
    s.keys(&["e"]);
    s.wait_for("SOFTIRQ");
    s.keys(&["t"]);
    s.keys(&["M"]);
    let sc = s.wait_for("sort mem");
    assert!(sc.contains("RES*"), "{sc}");
    s.keys(&[">"]);
    s.wait_for("sort state");
    s.keys(&["/", "h", "o", "o", "d", "Enter"]);
    let sc = s.wait_for("filter hood");
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
    s.keys(&["H"]);
    s.wait_for("TGID");
    s.keys(&["?"]);
    s.wait_for("any key closes");
    s.keys(&["x"]);
    tmux(&["resize-window", "-t", s.name(), "-x", "20", "-y", "5"]);
    sleep(Duration::from_millis(500));
    tmux(&["resize-window", "-t", s.name(), "-x", "160", "-y", "40"]);
    s.keys(&["q"]);
    let sc = s.wait_for("HOOD-EXITED");
    // The alternate screen is gone: the UI's header is no longer on screen.
    assert!(!sc.contains("Tasks:"), "{sc}");
}
