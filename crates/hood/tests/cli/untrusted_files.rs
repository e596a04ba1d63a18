//! Files another local user can plant where root's hood reads (issue 29, R1 and R2): a FIFO, a
//! device or a link at the path of `-i`, `--symfile` or `--token-file`. Each command must come
//! back at once with a message naming the file; a hood that opens such paths blocking hangs
//! into the time limit and fails the test instead of hanging the suite.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

/// These commands end in well under a second; a hang runs into the limit.
const LIMIT: Duration = Duration::from_secs(20);

fn fifo(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o666),
        0,
    )
    .expect("mkfifo");
    p
}

/// A recording from the repository's fuzz seeds (no privileges needed).
fn recording() -> PathBuf {
    repo().join("fuzz/inputs/container/record.hood")
}

fn refused_promptly(args: &[&std::ffi::OsStr], file: &Path, kind: &str) {
    let r = run_bounded(hood().args(args), LIMIT);
    let shown = format!("{args:?}");
    let status = r
        .status
        .unwrap_or_else(|| panic!("{shown} hung on {}", file.display()));
    assert!(!status.success(), "{shown} succeeded:\n{}", r.stderr);
    assert_ne!(status.code(), Some(101), "{shown} panicked:\n{}", r.stderr);
    assert!(
        r.stderr.contains(&file.display().to_string()) && r.stderr.contains(kind),
        "{shown}: the message names neither {} nor {kind}:\n{}",
        file.display(),
        r.stderr
    );
}

#[test]
fn a_fifo_as_input_is_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let f = fifo(dir.path(), "planted.hood");
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    for cmd in [
        vec![os("report"), os("-i")],
        vec![os("annotate"), os("main"), os("-i")],
        vec![os("calls"), os("report")],
        vec![os("trace"), os("report")],
    ] {
        let mut args = cmd.clone();
        args.push(f.as_os_str());
        refused_promptly(&args, &f, "is a FIFO");
    }
}

#[test]
fn a_fifo_or_device_as_symfile_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = fifo(dir.path(), "syms.txt");
    let rec = recording();
    for (file, kind) in [
        (f.as_path(), "is a FIFO"),
        (Path::new("/dev/zero"), "is a character device"),
    ] {
        let args = [
            std::ffi::OsStr::new("report"),
            std::ffi::OsStr::new("-i"),
            rec.as_os_str(),
            std::ffi::OsStr::new("--symfile"),
            file.as_os_str(),
        ];
        refused_promptly(&args, file, kind);
    }
}

#[test]
fn a_fifo_device_or_huge_file_as_token_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = fifo(dir.path(), "token");
    let big = dir.path().join("big-token");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    for (file, kind) in [
        (f.as_path(), "is a FIFO"),
        (Path::new("/dev/zero"), "is a character device"),
        (big.as_path(), "more than 64 KiB"),
    ] {
        let args = [
            std::ffi::OsStr::new("serve"),
            std::ffi::OsStr::new("--listen"),
            std::ffi::OsStr::new("127.0.0.1:0"),
            std::ffi::OsStr::new("--token-file"),
            file.as_os_str(),
        ];
        refused_promptly(&args, file, kind);
    }
}
