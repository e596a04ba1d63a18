//! The symbol cache (`HOOD_SYMBOL_CACHE`, issue 12's warm reports) on a real recording of a
//! known program built `-O2 -g` (tests/c/inline_hot.c): reports with the cache are
//! byte-identical to reports without it, in every format and with every naming option; the
//! second report reads no symbol table or DWARF (`HOOD_TIMING` says how many addresses came
//! from where); a damaged kept file is ignored with a warning and the report is still right;
//! another user's look-alike binary (same build-id and size, renamed symbols) cannot rename the
//! real one's functions through the cache.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

/// `hood report -i data ARGS` with the symbol cache `cache` ("off" for none).
fn report(dir: &Path, data: &Path, cache: &str, args: &[&str]) -> Output {
    let out = run(hood()
        .args(["report", "--width", "0", "-i"])
        .arg(data)
        .args(args)
        .env("HOOD_SYMBOL_CACHE", cache)
        .env("HOOD_DWARF_CACHE", dir.join("dwarf"))
        .env("HOOD_TIMING", "1"));
    assert!(out.status.success(), "{}", text(&out));
    out
}

/// (from the cache, read from the files) in the `HOOD_TIMING` line.
fn counts(out: &Output) -> (u64, u64) {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("file addresses:"))
        .unwrap_or_else(|| panic!("no HOOD_TIMING count line: {err}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(nums.len(), 2, "{line}");
    (nums[0], nums[1])
}

#[test]
fn warm_reports_are_identical_and_read_no_debug_info() {
    if !privileged("warm_reports_are_identical_and_read_no_debug_info") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = c_program_o2(dir.path(), "inline_hot");
    let data = dir.path().join("inline.data");
    let out = record(
        &data,
        &["-F", "2999", "--", prog.to_str().unwrap(), "2000000"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let cache = dir.path().join("symbols");
    let cache_s = cache.to_str().unwrap();

    let variants: [&[&str]; 6] = [
        &[],
        &["--by", "line"],
        &["--format", "json"],
        &["--format", "collapsed", "--full-names"],
        &["--no-inline"],
        &["--call-graph", "caller"],
    ];
    for args in variants {
        let want = report(dir.path(), &data, "off", args);
        let cold = report(dir.path(), &data, cache_s, args);
        let warm = report(dir.path(), &data, cache_s, args);
        assert_eq!(
            String::from_utf8_lossy(&cold.stdout),
            String::from_utf8_lossy(&want.stdout),
            "{args:?}: first report with the cache"
        );
        assert_eq!(
            String::from_utf8_lossy(&warm.stdout),
            String::from_utf8_lossy(&want.stdout),
            "{args:?}: second report with the cache"
        );
        let (cached, read) = counts(&warm);
        assert!(cached > 0, "{args:?}: {}", text(&warm));
        assert_eq!(read, 0, "{args:?}: the warm report read debug info");
        assert_eq!(counts(&want).0, 0, "{args:?}: off means off");
    }
    // The very first report read everything (no kept answers yet).
    assert!(std::fs::read_dir(&cache).unwrap().count() >= 2);

    // A damaged kept file: ignored with a warning naming it, the report still right, and
    // the next one warm again.
    let want = report(dir.path(), &data, "off", &["--format", "collapsed"]);
    let kept: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".answers"))
        .collect();
    for k in &kept {
        let mut bytes = std::fs::read(k).unwrap();
        bytes.truncate(bytes.len() / 2);
        std::fs::write(k, bytes).unwrap();
    }
    let damaged = report(dir.path(), &data, cache_s, &["--format", "collapsed"]);
    assert_eq!(damaged.stdout, want.stdout);
    let err = String::from_utf8_lossy(&damaged.stderr);
    assert!(
        err.contains("symbol cache") && err.contains("ignored"),
        "no warning about the damaged file: {err}"
    );
    let again = report(dir.path(), &data, cache_s, &["--format", "collapsed"]);
    assert_eq!(again.stdout, want.stdout);
    assert_eq!(counts(&again).1, 0, "rewritten: {}", text(&again));
}

/// Issue 29's R5: another user's copy of a binary, with the same build-id and size but a
/// renamed function, is reported with its own names, and its answers never stand for the
/// real binary's in a later report.
#[test]
fn another_users_lookalike_binary_cannot_rename_the_real_ones_functions() {
    if !privileged("another_users_lookalike_binary_cannot_rename_the_real_ones_functions") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let real = c_program_o2(dir.path(), "spinner");
    // The look-alike: the same bytes with one symbol name changed (same length, so the same
    // size and build-id), owned by nobody.
    let bytes = std::fs::read(&real).unwrap();
    let (from, to) = (b"spin_here", b"EVIL_here");
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("symbol name in the binary");
    let mut evil = bytes.clone();
    let mut n = 0;
    let mut i = at;
    while let Some(p) = evil[i..].windows(from.len()).position(|w| w == from) {
        evil[i + p..i + p + from.len()].copy_from_slice(to);
        i += p + from.len();
        n += 1;
    }
    assert!(n >= 1);
    let lookalike_dir = dir.path().join("lookalike");
    std::fs::create_dir(&lookalike_dir).unwrap();
    std::fs::set_permissions(&lookalike_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lookalike = lookalike_dir.join("spinner");
    std::fs::write(&lookalike, &evil).unwrap();
    std::fs::set_permissions(&lookalike, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::chown(&lookalike, Some(65534), Some(65534)).unwrap();

    let cache = dir.path().join("symbols");
    let cache_s = cache.to_str().unwrap();
    let rec = |prog: &Path, data: &Path| {
        let out = record(data, &["-F", "999", "--", prog.to_str().unwrap(), "400"]);
        assert!(out.status.success(), "{}", text(&out));
    };
    let real_data = dir.path().join("real.data");
    let evil_data = dir.path().join("evil.data");
    rec(&lookalike, &evil_data);
    rec(&real, &real_data);
    // The look-alike's report (keeping its answers) says what its file says...
    let evil_report = report(dir.path(), &evil_data, cache_s, &["--format", "collapsed"]);
    assert!(
        String::from_utf8_lossy(&evil_report.stdout).contains("EVIL_here"),
        "{}",
        text(&evil_report)
    );
    // ...and the real binary's report, from the same cache, says what the real file says.
    for _ in 0..2 {
        let out = report(dir.path(), &real_data, cache_s, &["--format", "collapsed"]);
        let folded = String::from_utf8_lossy(&out.stdout);
        assert!(folded.contains("spin_here"), "{}", text(&out));
        assert!(
            !folded.contains("EVIL"),
            "poisoned by the look-alike:\n{folded}"
        );
    }
}
