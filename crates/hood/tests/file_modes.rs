//! Files holding kernel addresses or other users' data are private (issue 14): recordings of
//! `hood record`, `hood calls run` and `hood trace record` are created 0600 (as perf does) and
//! replace an existing file whole; `hood serve`'s scratch directory is 0700 and its profiles
//! 0600. Each assertion fails on a hood that creates them with the umask's 0644/0755.

mod common;

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
    let _serial = perf_lock();
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
        let _serial = perf_lock();
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
