//! Recording files under damage, lost-sample accounting, other report formats, start/stop.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::*;

/// A small real recording shared by several tests.
fn small_recording(dir: &std::path::Path) -> std::path::PathBuf {
    let file = dir.join("small.data");
    let prog = c_program("spinner");
    let out = record(&file, &["--", prog.to_str().unwrap(), "400"]);
    assert!(out.status.success(), "{}", text(&out));
    file
}

#[test]
fn truncated_files_are_read_up_to_the_last_whole_chunk() {
    if !privileged("truncated_files") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = small_recording(dir.path());
    let bytes = std::fs::read(&file).unwrap();
    let cut = dir.path().join("cut.data");
    let mut saw_warning = false;
    for frac in [0.999, 0.9, 0.6, 0.3, 0.05, 0.0001] {
        let n = ((bytes.len() as f64) * frac) as usize;
        std::fs::write(&cut, &bytes[..n]).unwrap();
        let out = run(hood().args(["report", "-i"]).arg(&cut));
        let all = text(&out);
        // Either a readable (partial) report with a warning, or a clear error: never a panic.
        match out.status.code() {
            Some(0) | Some(1) => {
                assert!(
                    all.contains("cut short") || all.contains("not finalized"),
                    "{all}"
                );
                saw_warning = true;
            }
            Some(2) => assert!(all.contains("cut.data"), "error must name the file: {all}"),
            other => panic!("exit {other:?}: {all}"),
        }
    }
    assert!(saw_warning);
}

#[test]
fn a_corrupt_chunk_is_an_error_naming_its_offset() {
    if !privileged("corrupt_chunk") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = small_recording(dir.path());
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    let bad = dir.path().join("bad.data");
    std::fs::write(&bad, &bytes).unwrap();
    let out = run(hood().args(["report", "-i"]).arg(&bad));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("corrupt chunk at byte offset"), "{err}");
}

#[test]
fn wrong_kind_and_foreign_files_say_what_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.data");
    let w = hood_format::Writer::create(&calls, hood_format::FileKind::Calls).unwrap();
    w.commit().unwrap();
    let out = run(hood().args(["report", "-i"]).arg(&calls));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hood calls report"),
        "{}",
        text(&out)
    );
    let junk = dir.path().join("junk.data");
    std::fs::write(&junk, b"hello world, certainly not a recording").unwrap();
    let out = run(hood().args(["report", "-i"]).arg(&junk));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a hood recording"));
    let out = run(hood()
        .args(["report", "-i"])
        .arg(dir.path().join("missing.data")));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.data"));
}

#[test]
fn lost_samples_are_counted_and_shown() {
    if !privileged("lost_samples") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lost.data");
    let prog = c_program("spinner");
    // A one-page ring drained only every 500 ms must overflow at 4999 Hz.
    let out = record(
        &file,
        &[
            "-F",
            "4999",
            "--ring-kb",
            "4",
            "--drain-delay-ms",
            "500",
            "--",
            prog.to_str().unwrap(),
            "1500",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // The summary line: `hood: wrote FILE (SIZE): N samples on C CPUs in S s (EVENT), L lost; ...`.
    let lost: u64 = err
        .lines()
        .find(|l| l.starts_with("hood: wrote"))
        .and_then(|l| l.split(" lost;").next())
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("lost count in the summary");
    assert!(lost > 0, "{err}");
    assert!(err.contains("lost samples per CPU"), "{err}");
    let report = run(hood().args(["report", "-i"]).arg(&file));
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains(&format!("Lost samples: {lost}")) || text.contains(&lost.to_string()),
        "{text}"
    );
}

#[test]
fn json_svg_and_intervals_render() {
    if !privileged("other_formats") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = small_recording(dir.path());
    let out = run(hood().args(["report", "--format", "json", "-i"]).arg(&file));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["schema_version"], 1);
    let svg = dir.path().join("f.svg");
    let out = run(hood()
        .args(["report", "--format", "svg", "-o"])
        .arg(&svg)
        .arg("-i")
        .arg(&file));
    assert!(out.status.success(), "{}", text(&out));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.contains("<svg") && s.contains("spin_here"),
        "flamegraph names the hot function"
    );
    let out = run(hood().args(["report", "--intervals", "-i"]).arg(&file));
    assert!(out.status.success(), "{}", text(&out));
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("median") && t.contains("p99"), "{t}");
}

#[test]
fn start_and_stop_a_detached_recording() {
    if !privileged("start_stop") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bg.data");
    let state = dir.path().join("state");
    let start = |extra: &[&str]| {
        run(hood()
            .env("HOOD_STATE_DIR", &state)
            .current_dir(dir.path())
            .args(["start", "-a", "-o", "bg.data"])
            .args(extra)
            .stdin(Stdio::null()))
    };
    let out = start(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let again = start(&[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already running"),
        "{}",
        text(&again)
    );
    std::thread::sleep(Duration::from_millis(1000));
    let out = run(hood().env("HOOD_STATE_DIR", &state).arg("stop"));
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    // `hood record`'s summary line, on standard output.
    assert!(s.contains("hood: wrote") && s.contains("bg.data"), "{s}");
    let n = common::recorded_samples(&out.stdout);
    assert!(n > 100, "{s}");
    assert!(file.exists());
    let out = run(hood().env("HOOD_STATE_DIR", &state).arg("stop"));
    assert_eq!(
        out.status.code(),
        Some(2),
        "stop with nothing running: {}",
        text(&out)
    );
}

#[test]
fn sigusr1_pauses_and_resumes() {
    if !privileged("sigusr1") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("u.data");
    let child = hood()
        .args(["record", "-a", "-d", "2", "-o"])
        .arg(&file)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGUSR1) };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGUSR1) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("paused") && err.contains("resumed"), "{err}");
}
