//! Files holding kernel addresses or other users' data are private (issue 14): recordings of
//! `hood record`, `hood calls run` and `hood trace record` are created 0600 (as perf does) and
//! replace an existing file whole; `hood serve`'s scratch directory is 0700 and its profiles
//! 0600. Each assertion fails on a hood that creates them with the umask's 0644/0755.
//! Output files (issues 29 and 30): a run with nothing to write leaves the previous file, `-o`
//! refuses pipes, devices and other users' files, and two writers of one path cannot both
//! succeed.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// An old file at `p`, world-readable as the umask would leave it.
fn old_file(p: &Path) {
    std::fs::write(p, b"an older recording").unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
}

/// `p` is a whole hood recording: it starts with the file magic.
fn is_recording(p: &Path) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == b"HOOD"
}

/// No temporary file is left beside the output.
fn no_leftovers(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn record_output_is_private_and_replaced_whole() {
    if !privileged("record_output_is_private_and_replaced_whole") {
        return;
    }
    let _serial = exclusive();
    let dir = sticky_dir();
    let data = dir.path().join("out.data");
    old_file(&data);
    let out = record(&data, &["--", "true"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mode(&data), 0o600, "hood record output mode");
    assert!(is_recording(&data));
    no_leftovers(dir.path());

    // Another user's link in a shared directory is refused, not followed.
    if root("record_output_is_private_and_replaced_whole (links)") {
        let (uid, gid) = other_user();
        let secret = root_only_file(dir.path(), b"root-only\n");
        let link = dir.path().join("planted.data");
        symlink(&secret, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(uid), Some(gid)).unwrap();
        let out = record(&link, &["--", "true"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("owned by uid {uid}")),
            "{}",
            text(&out)
        );
        assert_eq!(std::fs::read(&secret).unwrap(), b"root-only\n");
    }
}

#[test]
fn calls_and_trace_recordings_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let lib = runtime_release_dir().join("libhood_rt.so");
    let calls_prog = instrumented("calls_known", dir.path(), &[], &[]);
    let trace_prog = instrumented("trace_known", dir.path(), &["-pthread"], &[]);
    for (cmd, prog) in [
        (["calls", "run"], &calls_prog),
        (["trace", "record"], &trace_prog),
    ] {
        let data = dir.path().join(format!("{}.data", cmd[0]));
        old_file(&data);
        let out = run(hood()
            .args(cmd)
            .arg("-o")
            .arg(&data)
            .arg("--")
            .arg(prog)
            .env("HOOD_RT_LIB", &lib)
            .env("HOOD_SHM_DIR", dir.path())
            .stdout(Stdio::null()));
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(mode(&data), 0o600, "hood {} output mode", cmd.join(" "));
        assert!(is_recording(&data));
    }
    no_leftovers(dir.path());
}

#[test]
fn serve_scratch_dir_and_profiles_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = hood()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("TMPDIR", tmp.path())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let kill = |child: &mut std::process::Child| {
        let _ = child.kill();
        let _ = child.wait();
    };
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if start.elapsed() > Duration::from_secs(20) {
            kill(&mut child);
            panic!("hood serve did not listen");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let scratch = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hood-serve-")
        })
        .expect("a scratch directory");
    let scratch_mode = mode(&scratch);
    let mut profile_modes = Vec::new();
    if privileged("serve_scratch_dir_and_profiles_are_private (profiles)") {
        let _serial = exclusive();
        // While a 1 s profile is recorded, its file sits in the scratch directory.
        let req = std::thread::spawn(move || {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /debug/pprof/profile?seconds=1 HTTP/1.0\r\n\r\n")
                .unwrap();
            let mut raw = Vec::new();
            let _ = s.read_to_end(&mut raw);
            raw
        });
        while !req.is_finished() {
            for e in std::fs::read_dir(&scratch).unwrap().flatten() {
                if let Ok(md) = e.metadata() {
                    profile_modes.push((e.file_name(), md.mode() & 0o7777));
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let raw = req.join().unwrap();
        assert!(raw.starts_with(b"HTTP/1.1 200") || raw.starts_with(b"HTTP/1.0 200"));
        assert!(!profile_modes.is_empty(), "the profile file was never seen");
    }
    kill(&mut child);
    assert_eq!(scratch_mode, 0o700, "scratch directory mode");
    for (name, m) in profile_modes {
        assert_eq!(m, 0o600, "{name:?} in the scratch directory");
    }
}

/// `hood calls ARGS`/`hood trace ARGS` with the runtime and segments set up for tests.
fn hooks(dir: &Path, args: &[&str]) -> std::process::Command {
    let mut c = hood();
    c.args(args)
        .env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"))
        .env("HOOD_SHM_DIR", dir)
        .stdin(Stdio::null());
    c
}

/// Issue 30: no command deletes or damages its previous output when it has no complete new
/// one to put in its place — a command that is not found, a program that is not
/// instrumented, a report that fails after its output was opened.
#[test]
fn a_run_that_writes_nothing_leaves_the_previous_output_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("keep.data");
    let old = b"the previous recording";
    let intact = |what: &str| {
        assert_eq!(std::fs::read(&keep).unwrap(), old, "{what} changed it");
        no_leftovers(dir.path());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "{what} left files beside it"
        );
    };
    std::fs::write(&keep, old).unwrap();
    let out = record(&keep, &["--", "./nosuchprog"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("nosuchprog"), "{}", text(&out));
    intact("record -- ./nosuchprog");
    // A program not built with -finstrument-functions leaves no tables and no trace: the
    // previous file stays, and the status is 1 (nothing found), the same for both commands.
    for cmd in [["calls", "run"], ["trace", "record"]] {
        let out = run(hooks(dir.path(), &cmd)
            .arg("-o")
            .arg(&keep)
            .args(["--", "true"]));
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(text(&out).contains("is left as it was"), "{}", text(&out));
        intact(&cmd.join(" "));
        // A failing command's own status is passed on.
        let out = run(hooks(dir.path(), &cmd)
            .arg("-o")
            .arg(&keep)
            .args(["--", "sh", "-c", "exit 3"]));
        assert_eq!(out.status.code(), Some(3), "{}", text(&out));
        intact(&cmd.join(" "));
    }
    if !privileged("a_run_that_writes_nothing_leaves_the_previous_output_as_it_was (reports)") {
        return;
    }
    let _serial = exclusive();
    let rec_dir = tempfile::tempdir().unwrap();
    let rec = rec_dir.path().join("plain.data");
    let out = record(&rec, &["--", "true"]);
    assert!(out.status.success(), "{}", text(&out));
    // `--labels` of a recording made without them fails after the output was opened.
    let out = run(hood()
        .args(["report", "--labels", "-i"])
        .arg(&rec)
        .arg("-o")
        .arg(&keep));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    intact("a failing report");
    // A report that works replaces it whole, privately.
    let out = run(hood()
        .args(["report", "--format", "json", "-i"])
        .arg(&rec)
        .arg("-o")
        .arg(&keep));
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert!(std::fs::read_to_string(&keep)
        .unwrap()
        .contains("schema_version"));
    assert_eq!(mode(&keep), 0o600);
    no_leftovers(dir.path());
}

/// Issue 29 R4: `-o` never writes into a FIFO, a device or another user's file — every
/// command that writes one refuses at once, naming the path and why, and hangs on nothing.
#[test]
fn outputs_that_are_pipes_devices_or_another_users_files_are_refused() {
    let dir = sticky_dir();
    let fifo = dir.path().join("planted.data");
    let st = common::command("mkfifo")
        .arg("-m")
        .arg("666")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    let hooks_dir = tempfile::tempdir().unwrap();
    let report_input = dir.path().join("whatever.data");
    let mut cases: Vec<(&str, std::process::Command)> = vec![
        (
            "calls run",
            hooks(hooks_dir.path(), &["calls", "run", "-o"]),
        ),
        (
            "trace record",
            hooks(hooks_dir.path(), &["trace", "record", "-o"]),
        ),
        ("record", {
            let mut c = hood();
            c.args(["record", "-o"]);
            c
        }),
    ];
    for (_, c) in cases.iter_mut() {
        c.arg(&fifo).args(["--", "true"]);
    }
    let mut report = hood();
    report
        .args(["trace", "report"])
        .arg(&report_input)
        .arg("-o")
        .arg(&fifo);
    cases.push(("trace report", report));
    for (what, mut c) in cases {
        let b = run_bounded(&mut c, Duration::from_secs(20));
        assert!(b.status.is_some(), "{what} -o FIFO hung");
        assert_eq!(b.status.unwrap().code(), Some(2), "{what}: {}", b.stderr);
        if what != "trace report" {
            assert!(
                b.stderr.contains(&format!(
                    "{} is a named pipe (FIFO), not a regular file",
                    fifo.display()
                )),
                "{what}: {}",
                b.stderr
            );
        }
    }
    // The same for a report with an input to read.
    let calls_prog = instrumented("calls_known", hooks_dir.path(), &[], &[]);
    let calls_data = hooks_dir.path().join("calls.data");
    let out = run(hooks(hooks_dir.path(), &["calls", "run", "-o"])
        .arg(&calls_data)
        .arg("--")
        .arg(&calls_prog)
        .stdout(Stdio::null()));
    assert!(out.status.success(), "{}", text(&out));
    for target in [fifo.as_path(), Path::new("/dev/zero")] {
        let b = run_bounded(
            hood()
                .args(["calls", "report"])
                .arg(&calls_data)
                .arg("-o")
                .arg(target),
            Duration::from_secs(20),
        );
        assert_eq!(b.status.and_then(|s| s.code()), Some(2), "{}", b.stderr);
        assert!(b.stderr.contains("not a regular file"), "{}", b.stderr);
    }
    // Standard output stays a way to write to a pipe.
    let out = run(hood()
        .args(["calls", "report"])
        .arg(&calls_data)
        .args(["-o", "/dev/stdout"]));
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("main"),
        "{}",
        text(&out)
    );

    if root("outputs_that_are_pipes_devices_or_another_users_files_are_refused (owners)") {
        let (uid, gid) = other_user();
        let theirs = dir.path().join("theirs.txt");
        std::fs::write(&theirs, b"their notes\n").unwrap();
        std::os::unix::fs::chown(&theirs, Some(uid), Some(gid)).unwrap();
        let out = run(hood()
            .args(["calls", "report"])
            .arg(&calls_data)
            .arg("-o")
            .arg(&theirs));
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains(&format!("theirs.txt is owned by uid {uid}, not by you")),
            "{}",
            text(&out)
        );
        assert_eq!(std::fs::read(&theirs).unwrap(), b"their notes\n");
    }
}

/// Issue 29 R8: two writers of one `-o` cannot both claim success: while one writes it, the
/// other is refused with the first one's pid and exits non-zero.
#[test]
fn a_second_writer_of_the_same_output_is_refused_while_the_first_runs() {
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("same.data");
    let lock = dir.path().join(".same.data.lock");
    let mut first = hooks(dir.path(), &["calls", "run", "-o"])
        .arg(&same)
        .args(["--", "sleep", "3"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !lock.exists() {
        assert!(start.elapsed() < Duration::from_secs(20), "no lock taken");
        std::thread::sleep(Duration::from_millis(10));
    }
    let words = format!(
        "same.data is being written by another hood (pid {})",
        first.id()
    );
    for args in [&["calls", "run", "-o"][..], &["trace", "record", "-o"][..]] {
        let out = run(hooks(dir.path(), args).arg(&same).args(["--", "true"]));
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(&words), "{}", text(&out));
    }
    let mut err = String::new();
    first
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let st = first.wait().unwrap();
    // The first one ran to its end (an uninstrumented `sleep`: no tables, status 1).
    assert_eq!(st.code(), Some(1), "{err}");
    assert!(!lock.exists(), "the lock is removed with its writer");
    // And the path is free again.
    let out = run(hooks(dir.path(), &["calls", "run", "-o"])
        .arg(&same)
        .args(["--", "true"]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!text(&out).contains("being written"), "{}", text(&out));
}
