//! The state directory of `hood start` / `hood stop` as another local user would attack it
//! (issue 14): a planted directory, a planted link in it, and a forged session naming an
//! innocent process. Each test fails on a hood that trusts the directory by name.

use crate::common;

use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

const SECRET: &[u8] = b"root-only content that hood must never touch\n";

fn hood_in(state: &Path, cwd: &Path) -> Command {
    let mut c = hood();
    c.env("HOOD_STATE_DIR", state)
        .current_dir(cwd)
        .stdin(Stdio::null());
    c
}

/// Stop a recorder that a vulnerable hood started anyway, so the test leaves nothing running.
fn stop_quietly(state: &Path, cwd: &Path) {
    let _ = hood_in(state, cwd).arg("stop").output();
}

#[test]
fn state_dir_planted_by_another_user_is_refused() {
    if !root("state_dir_planted_by_another_user_is_refused") {
        return;
    }
    let (uid, gid) = other_user();
    let tmp = sticky_dir();
    let secret = root_only_file(tmp.path(), SECRET);
    // What the other user does before root's first `hood start`: create the directory
    // (as /tmp/hood-0 would be) and a record.log pointing at a root-only file.
    let state = tmp.path().join("hood-0");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    symlink(&secret, state.join("record.log")).unwrap();
    std::os::unix::fs::lchown(state.join("record.log"), Some(uid), Some(gid)).unwrap();
    std::os::unix::fs::chown(&state, Some(uid), Some(gid)).unwrap();

    let out = run(hood_in(&state, tmp.path()).args(["start", "-a", "-d", "1", "-o", "x.data"]));
    stop_quietly(&state, tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        err.contains(&state.display().to_string())
            && err.contains(&format!("belongs to uid {uid}"))
            && err.contains("HOOD_STATE_DIR"),
        "the error names the directory, its owner and a fix: {}",
        text(&out)
    );
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        SECRET,
        "root-only file changed"
    );

    // The same directory owned by root but writable by others is refused too.
    std::os::unix::fs::chown(&state, Some(0), Some(0)).unwrap();
    let out = run(hood_in(&state, tmp.path()).arg("stop"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("mode 0777") && err.contains("chmod 700"),
        "{}",
        text(&out)
    );

    // A symbolic link in place of the directory is refused, not followed.
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = tmp.path().join("hood-link");
    symlink(&real, &link).unwrap();
    let out = run(hood_in(&link, tmp.path()).arg("stop"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(2) && err.contains("not a real directory"),
        "{}",
        text(&out)
    );
}

#[test]
fn fresh_state_dir_is_private() {
    if !root("fresh_state_dir_is_private") {
        return;
    }
    let tmp = sticky_dir();
    let state = tmp.path().join("hood-0");
    // `hood stop` with nothing running does not create it; any command that needs it does,
    // 0700 whatever the umask.
    let out = run(hood_in(&state, tmp.path()).arg("stop"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = run(hood_in(&state, tmp.path()).args(["start", "-p", "999999999"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let md = std::fs::symlink_metadata(&state).expect("created by start");
    assert!(md.is_dir());
    assert_eq!(md.mode() & 0o7777, 0o700, "state dir mode");
}

#[test]
fn symlinked_record_log_is_replaced_not_followed() {
    if !privileged("symlinked_record_log_is_replaced_not_followed") {
        return;
    }
    let _serial = exclusive();
    let tmp = sticky_dir();
    let secret = root_only_file(tmp.path(), SECRET);
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    symlink(&secret, state.join("record.log")).unwrap();

    let out = run(hood_in(&state, tmp.path()).args(["start", "-a", "-o", "x.data"]));
    assert!(out.status.success(), "{}", text(&out));
    let out = run(hood_in(&state, tmp.path()).arg("stop"));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        SECRET,
        "root-only file changed"
    );
    let log = std::fs::symlink_metadata(state.join("record.log")).unwrap();
    assert!(log.is_file(), "record.log is a new regular file");
    assert_eq!(log.mode() & 0o777, 0o600);
}

#[test]
fn forged_session_does_not_signal_an_innocent_process() {
    if !root("forged_session_does_not_signal_an_innocent_process") {
        return;
    }
    let tmp = sticky_dir();
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut innocent = common::command("sleep").arg("60").spawn().unwrap();
    let pid = innocent.id();
    for forged in [
        // The format of a hood that stored only the pid.
        serde_json::json!({"pid": pid, "output": "x", "status": "s", "log": "l"}),
        // A start time and executable that are not the innocent process's.
        serde_json::json!({"pid": pid, "output": "x", "status": "s", "log": "l",
            "start_time": 1, "exe": env!("CARGO_BIN_EXE_hood")}),
    ] {
        std::fs::write(state.join("session.json"), forged.to_string()).unwrap();
        let out = run(hood_in(&state, tmp.path()).args(["stop", "--timeout", "1"]));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            err.contains(&format!("pid {pid}")) && err.contains("not the hood recorder"),
            "{}",
            text(&out)
        );
        assert!(
            innocent.try_wait().unwrap().is_none(),
            "hood stop signalled pid {pid}, which it did not start: {}",
            text(&out)
        );
    }
    innocent.kill().unwrap();
    innocent.wait().unwrap();
}

/// The processes whose command line holds `needle` (the recorders of one state directory).
fn processes_with(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn two_starts_at_once_run_one_recorder_and_stop_stops_it() {
    // Issue 29: two `hood start` within ~0.2 s both ran and `hood stop` stopped one of them.
    if !privileged("two_starts_at_once_run_one_recorder_and_stop_stops_it") {
        return;
    }
    let _serial = exclusive();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let spawn = |out: &str| {
        hood_in(&state, tmp.path())
            .args(["start", "-a", "-o", out])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Both are started before either can have written its session (that takes ≥ 0.4 s).
    let (a, b) = (spawn("a.data"), spawn("b.data"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let running = processes_with(&state.display().to_string());
    let out = run(hood_in(&state, tmp.path()).arg("stop"));
    let stopped = out.status.success();
    let left = processes_with(&state.display().to_string());
    // A hood without the lock leaves a second recorder running: stop it, then fail.
    for &pid in &left {
        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
    }
    assert!(stopped, "hood stop failed:\n{}", text(&out));

    let ok: Vec<_> = [&a, &b]
        .into_iter()
        .filter(|o| o.status.success())
        .collect();
    let refused: Vec<_> = [&a, &b]
        .into_iter()
        .filter(|o| !o.status.success())
        .collect();
    assert_eq!(
        (ok.len(), refused.len()),
        (1, 1),
        "exactly one start must run:\nfirst: {}\nsecond: {}",
        text(&a),
        text(&b)
    );
    let why = String::from_utf8_lossy(&refused[0].stderr);
    assert!(
        why.contains("already running") && why.contains("hood stop"),
        "the refused start does not say a recording runs:\n{why}"
    );
    assert_ne!(refused[0].status.code(), Some(101), "{why}");
    assert_eq!(running.len(), 1, "recorders running: {running:?}");
    assert!(left.is_empty(), "recorders left after hood stop: {left:?}");
    // The one recording is whole; the refused one wrote nothing.
    let files: Vec<bool> = ["a.data", "b.data"]
        .iter()
        .map(|f| tmp.path().join(f).exists())
        .collect();
    assert_eq!(files.iter().filter(|&&e| e).count(), 1, "{files:?}");
    let written = if files[0] { "a.data" } else { "b.data" };
    let out = run(hood()
        .args(["report", "--format", "json", "-i"])
        .arg(tmp.path().join(written)));
    assert!(out.status.success(), "{}", text(&out));
    // Nothing stays behind: a second stop finds no session.
    let out = run(hood_in(&state, tmp.path()).arg("stop"));
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("no detached recording is running"),
        "{}",
        text(&out)
    );
}
