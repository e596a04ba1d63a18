//! Pipes and terminals (issue 15): every text report piped into a reader that goes away early
//! (`| head -1`) ends quietly with status 0; binary formats refuse a terminal without `-o`; a
//! missing file is named once with a fix that fits the command.
//!
//! The early-closing reader is made deterministic: the pipe's read end is closed before hood
//! starts, so hood's first write to standard output fails with EPIPE whatever the output's
//! size. A second check reads one line first, as `head -1` does.

use std::io::{BufRead, BufReader, Read};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::OnceLock;

use crate::common;
use common::{hood, text};

/// A pipe whose reader is already gone, as hood's standard output.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fds[0] is ours and closed once.
    unsafe { libc::close(fds[0]) };
    // SAFETY: fds[1] is ours; the OwnedFd closes it.
    Stdio::from(unsafe { OwnedFd::from_raw_fd(fds[1]) })
}

/// Run hood with standard output into a pipe whose reader has gone; returns the output.
fn into_closed_pipe(args: &[&str], file: &Path) -> Output {
    let out = hood()
        .args(args)
        .arg(file)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .expect("spawn hood");
    assert_ne!(out.status.code(), Some(101), "panicked:\n{}", text(&out));
    out
}

/// Run hood with standard output into a pipe, read one line and close the pipe as `head -1`
/// does; returns the line and hood's output (stderr and status).
fn into_head_1(args: &[&str], file: &Path) -> (String, Output) {
    let mut child = hood()
        .args(args)
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hood");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("read a line");
    // The reader (and the pipe's read end) is dropped here.
    let out = child.wait_with_output().expect("wait");
    (line, out)
}

/// Quiet end: status 0, nothing about pipes or errors on stderr.
fn assert_quiet(what: &str, out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.to_lowercase().contains("pipe") && !err.contains("error"),
        "{what}: a closed reader must end quietly:\n{}",
        text(out)
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: a closed reader ends with status 0:\n{}",
        text(out)
    );
}

struct Files {
    _dir: common::Scratch,
    profile: Option<PathBuf>,
    trace: PathBuf,
    calls: PathBuf,
}

/// One profile (when sampling is allowed), one trace and one call-path file for all tests.
fn files() -> &'static Files {
    static F: OnceLock<Files> = OnceLock::new();
    common::once(&F, || {
        let dir = common::Scratch::new("cli-pipes");
        let profile = common::privileged("cli_pipes profile").then(|| {
            let p = dir.path().join("profile.data");
            let spinner = common::c_program("spinner");
            let out = common::record(&p, &["-F", "999", "--", spinner.to_str().unwrap(), "300"]);
            assert!(out.status.success(), "record failed:\n{}", text(&out));
            p
        });
        let rt = common::runtime_release_dir().join("libhood_rt.so");
        let known = common::instrumented("trace_known", dir.path(), &[], &[]);
        let trace = dir.path().join("trace.data");
        let out = common::run(
            hood()
                .args(["trace", "record", "-o"])
                .arg(&trace)
                .arg("--")
                .arg(&known)
                .arg("2")
                .env("HOOD_RT_LIB", &rt)
                .env("HOOD_SHM_DIR", dir.path())
                .stdout(Stdio::null()),
        );
        assert!(out.status.success(), "trace record failed:\n{}", text(&out));
        let calls_prog = common::instrumented("calls_known", dir.path(), &[], &[]);
        let calls = dir.path().join("calls.data");
        let out = common::run(
            hood()
                .args(["calls", "run", "-o"])
                .arg(&calls)
                .arg("--")
                .arg(&calls_prog)
                .env("HOOD_RT_LIB", &rt)
                .env("HOOD_SHM_DIR", dir.path())
                .stdout(Stdio::null()),
        );
        assert!(out.status.success(), "calls run failed:\n{}", text(&out));
        Files {
            _dir: dir,
            profile,
            trace,
            calls,
        }
    })
}

/// Every text-like output of hood, as (arguments before the file, the file).
fn text_outputs() -> Vec<(Vec<&'static str>, PathBuf)> {
    let f = files();
    let mut v = Vec::new();
    if let Some(p) = &f.profile {
        for format in ["text", "json", "collapsed", "svg"] {
            v.push((vec!["report", "--format", format, "-i"], p.clone()));
        }
        v.push((vec!["report", "--intervals", "-i"], p.clone()));
    }
    v.push((vec!["trace", "report"], f.trace.clone()));
    v.push((vec!["trace", "report", "--paths"], f.trace.clone()));
    v.push((vec!["trace", "report", "--format", "json"], f.trace.clone()));
    v.push((
        vec!["trace", "report", "--format", "chrome"],
        f.trace.clone(),
    ));
    v.push((vec!["calls", "report"], f.calls.clone()));
    v.push((vec!["calls", "report", "--format", "json"], f.calls.clone()));
    v.push((
        vec!["calls", "report", "--format", "collapsed"],
        f.calls.clone(),
    ));
    v
}

#[test]
fn every_report_into_a_closed_pipe_ends_quietly_with_status_0() {
    for (args, file) in text_outputs() {
        let what = format!("hood {} {}", args.join(" "), file.display());
        // The report must have something to write, or the test proves nothing.
        let full = common::run(hood().args(&args).arg(&file));
        assert!(
            full.status.success() && !full.stdout.is_empty(),
            "{what} should print a report:\n{}",
            text(&full)
        );
        assert_quiet(&what, &into_closed_pipe(&args, &file));
        let (line, out) = into_head_1(&args, &file);
        assert!(!line.is_empty(), "{what}: no first line");
        assert_quiet(&format!("{what} | head -1"), &out);
    }
}

#[test]
fn monitor_commands_and_generated_scripts_into_a_closed_pipe_end_quietly() {
    for args in [
        &["ps"][..],
        &["ps", "-a", "--json"],
        &["uptime"],
        &["info"],
        &["info", "system.load", "--json"],
        &["top", "-b", "-n", "1", "-d", "0.1"],
        &["--generate", "man"],
        &["--generate", "complete-bash"],
    ] {
        let out = hood()
            .args(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .expect("spawn hood");
        assert_quiet(&format!("hood {}", args.join(" ")), &out);
    }
}

/// Run hood with a pseudo-terminal as standard output; returns its output (stderr, status)
/// and whatever reached the terminal.
fn on_terminal(args: &[&str]) -> (Output, Vec<u8>) {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills the two descriptors; no name, termios or window size asked.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are ours from here on.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let out = hood()
        .args(args)
        .stdout(Stdio::from(slave))
        .stderr(Stdio::piped())
        .output()
        .expect("spawn hood");
    // The slave's last holder has exited: read what is buffered without waiting.
    let mut seen = Vec::new();
    let mut f = std::fs::File::from(master);
    // SAFETY: setting O_NONBLOCK on a descriptor we own.
    unsafe {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK);
    }
    let mut buf = [0u8; 4096];
    while let Ok(n) = f.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    (out, seen)
}

#[test]
fn binary_formats_refuse_a_terminal_and_write_with_o_or_a_redirect() {
    let f = files();
    let mut cases: Vec<(Vec<&str>, &Path, &str)> = vec![(
        vec!["calls", "report", "--format", "pprof"],
        &f.calls,
        "pprof",
    )];
    if let Some(p) = &f.profile {
        cases.push((vec!["report", "--format", "pprof", "-i"], p, "pprof"));
        cases.push((vec!["report", "--format", "firefox", "-i"], p, "firefox"));
    }
    for (args, file, format) in cases {
        let mut all: Vec<&str> = args.clone();
        all.push(file.to_str().unwrap());
        let what = format!("hood {}", all.join(" "));
        let (out, seen) = on_terminal(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what} on a terminal:\n{err}");
        assert!(
            seen.is_empty(),
            "{what} wrote {} bytes to the terminal",
            seen.len()
        );
        assert_eq!(err.lines().count(), 1, "one line:\n{err}");
        assert!(
            err.contains(&format!("--format {format}"))
                && err.contains("-o ")
                && err.contains("redirect"),
            "{what}: the refusal names the format, -o and redirecting:\n{err}"
        );
        // Redirected to a file, the same command writes gzip data.
        let dir = tempfile::tempdir().unwrap();
        let redirected = dir.path().join("out.gz");
        let out = hood()
            .args(&all)
            .stdout(std::fs::File::create(&redirected).unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(out.status.success(), "{what} > file:\n{}", text(&out));
        let bytes = std::fs::read(&redirected).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "{what} > file writes gzip");
        // With -o, also on a terminal.
        let named = dir.path().join("named.gz");
        let mut with_o = all.clone();
        with_o.extend(["-o", named.to_str().unwrap()]);
        let (out, seen) = on_terminal(&with_o);
        assert!(out.status.success(), "{what} -o FILE:\n{}", text(&out));
        assert!(seen.is_empty(), "{what} -o FILE wrote to the terminal");
        assert_eq!(&std::fs::read(&named).unwrap()[..2], &[0x1f, 0x8b]);
    }
}

#[test]
fn a_missing_file_is_named_once_with_the_commands_own_fix() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here.data");
    let m = missing.to_str().unwrap();
    // Every reader names its file the same way, -i FILE (also when given as `FILE`).
    for args in [
        vec!["report", "-i", m],
        vec!["calls", "report", m],
        vec!["calls", "report", "-i", m],
        vec!["trace", "report", m],
        vec!["trace", "report", "-i", m],
    ] {
        let fix = "-i FILE";
        let out = common::run(hood().args(&args));
        let err = String::from_utf8_lossy(&out.stderr);
        let what = format!("hood {}", args.join(" "));
        assert_eq!(out.status.code(), Some(2), "{what}:\n{err}");
        assert_eq!(err.lines().count(), 1, "{what}: one line:\n{err}");
        assert!(err.contains(m), "{what}: names the file:\n{err}");
        let os = err.matches("No such file").count() + err.matches("no such file").count();
        assert_eq!(os, 1, "{what}: the OS error once:\n{err}");
        assert!(err.contains(fix), "{what}: the fix {fix:?}:\n{err}");
    }
}

/// Only a reader that went away is quiet: any other write error on standard output (here
/// ENOSPC from /dev/full, with a command that needs no recording) is still an error.
#[test]
fn other_write_errors_are_still_reported() {
    let out = hood()
        .args(["--generate", "man"])
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("hood: error:") && err.contains("No space left"),
        "{err}"
    );
}

/// `hood top -b` runs until interrupted; a reader that has gone must end it (it used to
/// sample on forever for nobody). The 60 s bound only turns a hang into a failure.
#[test]
fn top_batch_stops_when_its_reader_goes() {
    for args in [
        &["top", "-b", "-d", "0.1"][..],
        &["top", "--json", "-d", "0.1"],
    ] {
        let mut child = hood()
            .args(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hood");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while child.try_wait().expect("wait").is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("hood {} kept running after its reader went", args.join(" "));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("wait");
        assert_quiet(&format!("hood {}", args.join(" ")), &out);
    }
}

/// The command under `hood record --` gets SIGPIPE's default disposition back (hood itself
/// ignores it, and an ignored signal survives exec), so `yes | head -1` in it ends by SIGPIPE
/// rather than with "Broken pipe" errors. Read from the command's own /proc status.
#[test]
fn record_gives_its_command_the_default_sigpipe() {
    if !common::privileged("record_gives_its_command_the_default_sigpipe") {
        return;
    }
    let _lock = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let out = common::record(
        &dir.path().join("cat.data"),
        &["--", "cat", "/proc/self/status"],
    );
    let status = String::from_utf8_lossy(&out.stdout);
    let ignored = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or_else(|| panic!("no SigIgn line:\n{}", text(&out)));
    let sigpipe = 1u64 << (libc::SIGPIPE - 1);
    assert_eq!(
        ignored & sigpipe,
        0,
        "the command inherited an ignored SIGPIPE (SigIgn {ignored:#x})"
    );
}
