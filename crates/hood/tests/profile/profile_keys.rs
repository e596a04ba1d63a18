//! The recorder's terminal keys (a pause/resume, p top functions, q stop), driven through tmux.

use crate::common;

use std::time::Duration;

use common::*;

fn tmux(args: &[&str]) -> String {
    let out = common::command("tmux").args(args).output().expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn keys_pause_print_and_stop() {
    if !privileged("record_keys") {
        return;
    }
    if common::command("tmux").arg("-V").output().is_err() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "tmux must be installed in CI"
        );
        eprintln!("SKIPPED-LOCAL (tmux not installed): record_keys");
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.data");
    let session = format!("hoodrecordkeys{}", std::process::id());
    let cmd = format!(
        "{} record -a -o {}; sleep 30",
        env!("CARGO_BIN_EXE_hood"),
        file.display()
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "160",
        "-y",
        "50",
        &cmd,
    ]);
    let wait_for = |needle: &str| {
        for _ in 0..100 {
            let screen = tmux(&["capture-pane", "-t", &session, "-p"]);
            if screen.contains(needle) {
                return screen;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let screen = tmux(&["capture-pane", "-t", &session, "-p"]);
        tmux(&["kill-session", "-t", &session]);
        panic!("never saw {needle:?}:\n{screen}");
    };
    wait_for("keys: a = pause/resume");
    tmux(&["send-keys", "-t", &session, "a"]);
    wait_for("paused");
    tmux(&["send-keys", "-t", &session, "a"]);
    wait_for("resumed");
    std::thread::sleep(Duration::from_millis(500));
    tmux(&["send-keys", "-t", &session, "p"]);
    wait_for("top 15 functions");
    tmux(&["send-keys", "-t", &session, "q"]);
    let screen = wait_for("hood: wrote");
    tmux(&["kill-session", "-t", &session]);
    assert!(
        screen.contains("lost 0 samples") || screen.contains("lost"),
        "{screen}"
    );
    assert!(file.exists());
}
