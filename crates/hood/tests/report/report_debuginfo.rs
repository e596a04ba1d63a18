//! Debug info wherever users keep it (issue 12, item 5), on a real recording of a stripped
//! binary: tests/c/inline_hot.c built `-O2 -g`, its DWARF moved to a separate file with
//! `objcopy --only-keep-debug`, then `strip -s`. Stripped, the report can name neither
//! `outer_loop` nor the inlined `mix`; with the debug file found
//! - by build-id under `--debug-dir DIR` (`DIR/.build-id/XX/YYYY.debug`),
//! - by the binary's `.gnu_debuglink` (and only with the CRC it names),
//! - from a real `debuginfod` server (elfutils') on 127.0.0.1, into a private cache,
//!
//! it shows `outer_loop` and `mix (inlined)` again. A cache directory that is a symlink or
//! belongs to another user is refused.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The stripped program, its debug file and their recording.
struct Stripped {
    prog: PathBuf,
    debug: PathBuf,
    data: PathBuf,
    build_id: String,
}

fn tool(args: &[&std::ffi::OsStr]) {
    let st = common::command(args[0])
        .args(&args[1..])
        .status()
        .unwrap_or_else(|e| panic!("{args:?}: {e} (binutils come with gcc)"));
    assert!(st.success(), "{args:?}");
}

/// Builds, splits, strips (optionally adding a debug link) and records inline_hot in `dir`.
fn stripped(dir: &Path, debuglink: bool) -> Stripped {
    let prog = dir.join("inline_hot");
    let st = common::command("gcc")
        .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&prog)
        .arg(repo().join("tests/c/inline_hot.c"))
        .status()
        .expect("gcc");
    assert!(st.success());
    let debug = dir.join("inline_hot.debug");
    tool(&[
        "objcopy".as_ref(),
        "--only-keep-debug".as_ref(),
        prog.as_os_str(),
        debug.as_os_str(),
    ]);
    tool(&["strip".as_ref(), "-s".as_ref(), prog.as_os_str()]);
    if debuglink {
        let link = format!("--add-gnu-debuglink={}", debug.display());
        tool(&["objcopy".as_ref(), link.as_ref(), prog.as_os_str()]);
    }
    let build_id = readelf_build_id(&prog);
    let data = dir.join("stripped.data");
    let out = record(
        &data,
        &["-F", "2999", "--", prog.to_str().unwrap(), "3000000"],
    );
    assert!(out.status.success(), "{}", text(&out));
    Stripped {
        prog,
        debug,
        data,
        build_id,
    }
}

/// Share of the program's samples whose user leaf is `mix (inlined)` under `outer_loop`,
/// in `hood report --format collapsed` with `args` and `env`.
fn inlined_share(data: &Path, args: &[&str], env: &[(&str, &Path)]) -> (f64, String) {
    let mut cmd = hood();
    cmd.args(["report", "--format", "collapsed", "-i"])
        .arg(data)
        .args(args)
        .env_remove("DEBUGINFOD_URLS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    assert!(out.status.success(), "{}", text(&out));
    let (mut all, mut hit) = (0u64, 0u64);
    for (frames, n) in folded(&out.stdout) {
        if frames.first().map(String::as_str) != Some("inline_hot") {
            continue;
        }
        all += n;
        let user: Vec<&str> = frames
            .iter()
            .map(String::as_str)
            .filter(|f| !f.ends_with("_[k]"))
            .collect();
        if user.ends_with(&["outer_loop", "mix (inlined)"]) {
            hit += n;
        }
    }
    assert!(all > 300, "too few samples: {}", text(&out));
    (
        hit as f64 / all as f64,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn stripped_binary_is_named_from_its_debug_file_by_debug_dir_and_debuglink() {
    if !privileged("stripped_binary_is_named_from_its_debug_file_by_debug_dir_and_debuglink") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let s = stripped(dir.path(), true);
    let no_dirs: [&str; 0] = [];
    // The link's file sits next to the binary: found by the debug link, CRC checked.
    let (share, _) = inlined_share(&s.data, &no_dirs, &[]);
    assert!(share >= 0.95, "through .gnu_debuglink: {share}");
    // Moved away: stripped names only.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::rename(&s.debug, elsewhere.join("inline_hot.debug")).unwrap();
    let (share, _) = inlined_share(&s.data, &no_dirs, &[]);
    assert_eq!(share, 0.0, "no debug file anywhere, yet inlined frames");
    // --debug-dir DIR holding the link's name: found again.
    let d = elsewhere.to_str().unwrap();
    let (share, _) = inlined_share(&s.data, &["--debug-dir", d], &[]);
    assert!(share >= 0.95, "--debug-dir by debug link: {share}");
    // A file of that name with another CRC is not read.
    let mut bytes = std::fs::read(elsewhere.join("inline_hot.debug")).unwrap();
    bytes.push(0);
    std::fs::write(elsewhere.join("inline_hot.debug"), &bytes).unwrap();
    let (share, _) = inlined_share(&s.data, &["--debug-dir", d], &[]);
    assert_eq!(share, 0.0, "a debug file with the wrong CRC was read");
    // By build-id under --debug-dir.
    let by_id = dir.path().join("ids/.build-id").join(&s.build_id[..2]);
    std::fs::create_dir_all(&by_id).unwrap();
    bytes.pop();
    std::fs::write(by_id.join(format!("{}.debug", &s.build_id[2..])), &bytes).unwrap();
    let ids = dir.path().join("ids");
    let (share, _) = inlined_share(&s.data, &["--debug-dir", ids.to_str().unwrap()], &[]);
    assert!(share >= 0.95, "--debug-dir by build-id: {share}");
    assert!(s.prog.exists());
}

/// A debuginfod server (elfutils') on 127.0.0.1 serving the files of `dir`; killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on 127.0.0.1:`port`: the status code.
fn http_status(port: u16, path: &str) -> Option<u16> {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    c.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Starts `debuginfod -F srv` and waits until it serves `build_id`; `None` (said so) when
/// debuginfod is not installed.
fn serve(dir: &Path, srv: &Path, build_id: &str) -> Option<Server> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = match common::command("debuginfod")
        .args(["-p", &port.to_string(), "-d"])
        .arg(dir.join("debuginfod.sqlite"))
        .arg("-F")
        .arg(srv)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "not run here: debuginfod cannot be started ({e}); apt-get install debuginfod"
            );
            return None;
        }
    };
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let path = format!("/buildid/{build_id}/debuginfo");
    let start = Instant::now();
    while http_status(port, &path) != Some(200) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "debuginfod on port {port} never served {path}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    Some(server)
}

#[test]
fn debuginfod_serves_the_debug_file_into_a_private_cache() {
    if !privileged("debuginfod_serves_the_debug_file_into_a_private_cache") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let s = stripped(dir.path(), false);
    let srv = dir.path().join("srv");
    std::fs::create_dir(&srv).unwrap();
    std::fs::rename(&s.debug, srv.join("inline_hot.debug")).unwrap();
    let Some(server) = serve(dir.path(), &srv, &s.build_id) else {
        return;
    };
    let url = PathBuf::from(&server.url);
    let cache = dir.path().join("cache/hood");
    let env = [
        ("DEBUGINFOD_URLS", url.as_path()),
        ("DEBUGINFOD_CACHE_PATH", cache.as_path()),
    ];
    // --no-debuginfod: stripped names only.
    let (share, _) = inlined_share(&s.data, &["--no-debuginfod"], &env);
    assert_eq!(share, 0.0);
    let (share, err) = inlined_share(&s.data, &[], &env);
    assert!(share >= 0.95, "through debuginfod: {share}\n{err}");
    // The cache: a private directory, the file readable, named by build-id.
    let meta = std::fs::metadata(&cache).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700, "cache directory mode");
    let cached = cache.join(format!("{}.debug", s.build_id));
    assert_eq!(
        std::fs::metadata(&cached).unwrap().permissions().mode() & 0o777,
        0o644
    );
    // From the cache, with the server gone.
    drop(server);
    let (share, _) = inlined_share(&s.data, &[], &env);
    assert!(share >= 0.95, "from the cache: {share}");

    // A cached file replaced by a symlink is not followed.
    std::fs::remove_file(&cached).unwrap();
    std::os::unix::fs::symlink(srv.join("inline_hot.debug"), &cached).unwrap();
    let (share, err) = inlined_share(&s.data, &[], &env);
    assert_eq!(share, 0.0, "a symlink in the cache was followed\n{err}");
    std::fs::remove_file(&cached).unwrap();

    // A cache directory that is a symlink, or another user's, is refused with a reason.
    let real = dir.path().join("real-cache");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::copy(
        srv.join("inline_hot.debug"),
        real.join(format!("{}.debug", s.build_id)),
    )
    .unwrap();
    let link = dir.path().join("link-cache");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let env = [
        ("DEBUGINFOD_URLS", url.as_path()),
        ("DEBUGINFOD_CACHE_PATH", link.as_path()),
    ];
    let (share, err) = inlined_share(&s.data, &[], &env);
    assert_eq!(share, 0.0, "a symlinked cache directory was used");
    assert!(err.contains("not a directory"), "{err}");
    if root("debuginfod_serves_the_debug_file_into_a_private_cache (another user's cache)") {
        let (uid, gid) = other_user();
        std::os::unix::fs::chown(&real, Some(uid), Some(gid)).unwrap();
        let env = [
            ("DEBUGINFOD_URLS", url.as_path()),
            ("DEBUGINFOD_CACHE_PATH", real.as_path()),
        ];
        let (share, err) = inlined_share(&s.data, &[], &env);
        assert_eq!(share, 0.0, "another user's cache directory was used");
        assert!(err.contains("belongs to another user"), "{err}");
    }
}
