//! Output files (issue 30 item 1, issue 29 R4/R8): an existing file is replaced only by a
//! complete new one, a killed writer's recording is kept, pipes, devices and other users'
//! files are refused, and two writers of one path cannot both succeed.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use hood_format::{
    left_by_killed_writers, FileKind, FormatError, OutputFile, Reader, Stale, Writer,
};

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<OsString> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    v.sort();
    v
}

/// The tags of the chunks of the recording at `p`, and the reader's warnings.
fn chunks(p: &Path) -> (Vec<u32>, Vec<String>) {
    let mut r = Reader::open(p).unwrap();
    let tags = r.chunks().map(|c| c.unwrap().tag).collect();
    (tags, r.warnings().to_vec())
}

/// An old, world-readable file at `p`.
fn old_file(p: &Path) {
    std::fs::write(p, b"old contents").unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn a_recording_replaces_the_old_file_only_when_it_is_put_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.hood");
    old_file(&p);
    let old_inode = std::fs::metadata(&p).unwrap().ino();
    let mut w = Writer::create(&p, FileKind::Profile).unwrap();
    w.write_chunk(0x0101, b"{}", false).unwrap();
    w.flush().unwrap();
    // While it is written, the path keeps the old file and the recording grows beside it,
    // private and readable.
    assert_eq!(std::fs::read(&p).unwrap(), b"old contents");
    let temp = w.file_path().to_owned();
    assert_eq!(temp.parent(), Some(dir.path()));
    assert_eq!(std::fs::metadata(&temp).unwrap().mode() & 0o777, 0o600);
    assert_eq!(chunks(&temp).0, vec![0x0101]);
    let bytes = w.commit().unwrap();
    let md = std::fs::metadata(&p).unwrap();
    assert_ne!(md.ino(), old_inode, "replaced by rename, not truncated");
    assert_eq!(md.mode() & 0o777, 0o600);
    assert_eq!(md.len(), bytes);
    assert_eq!(chunks(&p).0, vec![0x0101]);
    assert_eq!(
        names(dir.path()),
        vec![OsString::from("r.hood")],
        "nothing left beside it"
    );
}

#[test]
fn a_writer_dropped_before_it_is_put_in_place_leaves_the_old_file_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("keep.data");
    old_file(&p);
    let mut w = Writer::create(&p, FileKind::Profile).unwrap();
    w.write_chunk(0x0101, b"{}", false).unwrap();
    drop(w);
    assert_eq!(std::fs::read(&p).unwrap(), b"old contents");
    assert_eq!(names(dir.path()), vec![OsString::from("keep.data")]);
    // No old file: none afterwards either.
    let q = dir.path().join("new.data");
    drop(Writer::create(&q, FileKind::Trace).unwrap());
    assert!(!q.exists());
    // A report that fails half-way is dropped the same way.
    let r = dir.path().join("report.txt");
    std::fs::write(&r, b"old report").unwrap();
    let mut o = OutputFile::create(&r).unwrap();
    o.write_all(b"half a rep").unwrap();
    drop(o);
    assert_eq!(std::fs::read(&r).unwrap(), b"old report");
    assert_eq!(
        names(dir.path()),
        vec![OsString::from("keep.data"), OsString::from("report.txt")]
    );
}

#[test]
fn rewrite_shows_the_previous_snapshot_until_the_next_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("calls.hood");
    let mut w = Writer::create(&p, FileKind::Calls).unwrap();
    let first = w
        .rewrite(|w| w.write_chunk(0x0201, b"first", false))
        .unwrap();
    let temp = w.file_path().to_owned();
    assert_eq!(std::fs::metadata(&temp).unwrap().len(), first);
    let seen = std::fs::read(&temp).unwrap();
    w.rewrite(|n| {
        n.write_chunk(0x0201, b"second", false)?;
        // While the second is written, the file reads as the whole first snapshot.
        assert_eq!(std::fs::read(&temp).unwrap(), seen);
        n.write_chunk(0x0202, b"more", false)
    })
    .unwrap();
    assert_eq!(chunks(&temp), (vec![0x0201, 0x0202], vec![]));
    // A snapshot that fails leaves the previous one and nothing beside it.
    let err = w.rewrite(|_| Err(FormatError::TooLarge(1)));
    assert!(err.is_err());
    assert_eq!(chunks(&temp).0, vec![0x0201, 0x0202]);
    assert!(!p.exists(), "the path is untouched until the commit");
    w.commit().unwrap();
    assert_eq!(chunks(&p).0, vec![0x0201, 0x0202]);
    assert_eq!(names(dir.path()), vec![OsString::from("calls.hood")]);
}

#[test]
fn a_second_writer_of_the_same_path_is_refused_while_the_first_runs() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("both.data");
    let mut first = Writer::create(&p, FileKind::Profile).unwrap();
    first.write_chunk(0x0101, b"first", false).unwrap();
    // Reached through another spelling of the same path, too.
    for other in [p.clone(), dir.path().join(".").join("both.data")] {
        match Writer::create(&other, FileKind::Profile) {
            Err(e @ FormatError::Busy { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!(
                        "being written by another hood (pid {})",
                        std::process::id()
                    )),
                    "{msg}"
                );
            }
            Err(e) => panic!("{other:?}: {e}"),
            Ok(_) => panic!("{other:?}: a second writer was let in"),
        }
        assert!(
            OutputFile::create(&other).is_err(),
            "a report is refused too"
        );
    }
    first.commit().unwrap();
    assert_eq!(chunks(&p).0, vec![0x0101]);
    // Once the first is done, the path is free again (and so after a dropped writer).
    drop(Writer::create(&p, FileKind::Profile).unwrap());
    let second = Writer::create(&p, FileKind::Profile).unwrap();
    second.commit().unwrap();
    assert_eq!(names(dir.path()), vec![OsString::from("both.data")]);
}

#[test]
fn a_lock_file_hood_did_not_make_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.data");
    let lock = dir.path().join(".x.data.lock");
    std::os::unix::fs::symlink("/etc/passwd", &lock).unwrap();
    let e = Writer::create(&p, FileKind::Profile)
        .err()
        .expect("refused");
    assert!(matches!(e, FormatError::BadLock { .. }), "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert!(!p.exists());
}

#[test]
fn pipes_devices_and_directories_are_refused_and_dev_null_is_written_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("planted");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o666),
        0,
    )
    .unwrap();
    // Nobody reads the FIFO: a writer that opened it would wait forever.
    for (path, words) in [
        (fifo.as_path(), "is a named pipe (FIFO), not a regular file"),
        (Path::new("/dev/zero"), "is a device, not a regular file"),
    ] {
        let e = Writer::create(path, FileKind::Profile)
            .err()
            .expect("refused");
        assert!(matches!(e, FormatError::NotRegularOutput { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&path.display().to_string()) && msg.contains(words),
            "{msg}"
        );
        assert!(OutputFile::create(path).is_err());
    }
    assert!(Writer::create(dir.path(), FileKind::Profile).is_err());
    let mut w = Writer::create(Path::new("/dev/null"), FileKind::Profile).unwrap();
    assert!(w.in_place_output());
    w.write_chunk(0x0101, b"{}", false).unwrap();
    assert_eq!(w.file_path(), Path::new("/dev/null"));
    w.commit().unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(
        &std::fs::metadata("/dev/null").unwrap().file_type()
    ));
    // The caller's own standard error is written through its descriptor.
    let o = OutputFile::create(Path::new("/dev/stderr")).unwrap();
    assert!(o.in_place_output());
    o.commit().unwrap();
}

#[test]
fn another_users_file_and_link_are_refused() {
    if !rustix::process::geteuid().is_root() {
        if std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
            panic!("another_users_file_and_link_are_refused needs root and HOOD_REQUIRE_PRIVILEGED=1 forbids skipping");
        }
        eprintln!("SKIPPED (needs root): another_users_file_and_link_are_refused");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = dir.path().join("theirs.data");
    std::fs::write(&theirs, b"their file").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let e = Writer::create(&theirs, FileKind::Profile)
        .err()
        .expect("refused");
    assert!(
        e.to_string().contains("owned by uid 65534, not by you"),
        "{e}"
    );
    assert_eq!(std::fs::read(&theirs).unwrap(), b"their file");
    let link = dir.path().join("link.data");
    std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let e = OutputFile::create(&link).err().expect("refused");
    assert!(
        matches!(e, FormatError::ForeignLink { owner: 65534, .. }),
        "{e}"
    );
}

#[test]
fn a_killed_writers_recording_is_kept_under_a_visible_name_and_its_scraps_removed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.hood");
    old_file(&p);
    let mut rec = Writer::new(Vec::new(), Path::new("mem"), FileKind::Trace).unwrap();
    rec.write_chunk(0x0301, b"{}", false).unwrap();
    let rec = rec.finish().unwrap();
    // pid_max is at most 2^22: these pids never run. Pid 1 always does.
    let killed = dir.path().join(".r.hood.4999999-0-1.tmp");
    let snapshot = dir.path().join(".r.hood.4999999-1-2.part");
    let report = dir.path().join(".r.hood.4999998-0-3.tmp");
    let header_only = dir.path().join(".r.hood.4999997-0-3.tmp");
    let live = dir.path().join(".r.hood.1-0-4.tmp");
    let other = dir.path().join(".other.hood.4999999-0-1.tmp");
    std::fs::write(&killed, &rec).unwrap();
    std::fs::write(&snapshot, &rec[..rec.len() - 3]).unwrap();
    std::fs::write(&report, b"half a report").unwrap();
    std::fs::write(&header_only, &rec[..32]).unwrap();
    for f in [&live, &other] {
        std::fs::write(f, &rec).unwrap();
    }
    assert_eq!(left_by_killed_writers(&p), vec![killed.clone()]);
    let w = Writer::create(&p, FileKind::Trace).unwrap();
    let kept = dir.path().join("r.hood.killed-4999999");
    let mut stale = w.stale().to_vec();
    stale.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(
        stale,
        vec![
            Stale::Kept {
                from: killed.clone(),
                to: kept.clone(),
                pid: 4999999,
                kind: FileKind::Trace,
                target: p.clone()
            },
            Stale::Removed {
                path: header_only.clone(),
                pid: 4999997,
                target: p.clone()
            },
            Stale::Removed {
                path: report.clone(),
                pid: 4999998,
                target: p.clone()
            },
            Stale::Removed {
                path: snapshot.clone(),
                pid: 4999999,
                target: p.clone()
            },
        ]
    );
    let said = stale[0].to_string();
    assert!(
        said.contains(&format!(
            "read it with `hood trace report -i {}`",
            kept.display()
        )),
        "{said}"
    );
    assert_eq!(std::fs::read(&kept).unwrap(), rec);
    assert!(live.exists() && other.exists());
    assert!(!killed.exists() && !snapshot.exists() && !report.exists());
    drop(w);
    assert_eq!(std::fs::read(&p).unwrap(), b"old contents");
    // A second killed recording of the same pid never replaces the kept one.
    std::fs::write(&killed, &rec).unwrap();
    let w = Writer::create(&p, FileKind::Trace).unwrap();
    assert!(
        matches!(&w.stale()[0], Stale::Kept { to, .. } if to == &dir.path().join("r.hood.killed-4999999.1"))
    );
}
