//! A recording that fills its disk: the recorder stops, says why, and its summary gives the
//! samples the file really holds, the count `hood report` reads back, not the count recorded.
//! The same for `hood trace record` (the trace is put in place, cut at its last whole chunk,
//! with names) and `hood calls run` (the output is left as it was, in one line).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::*;

/// A small tmpfs mounted for the test, unmounted when dropped.
struct SmallDisk {
    _dir: tempfile::TempDir,
    mnt: PathBuf,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("small");
        std::fs::create_dir(&mnt).unwrap();
        let st = common::command("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&mnt)
            .status();
        match st {
            Ok(s) if s.success() => Some(SmallDisk { _dir: dir, mnt }),
            other => {
                println!("not run here: cannot mount a tmpfs ({other:?})");
                None
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = common::command("umount").arg(&self.mnt).status();
    }
}

/// `totals.samples` of `hood report --format json`.
fn report_samples(file: &Path) -> u64 {
    let out = run(hood().args(["report", "--format", "json", "-i"]).arg(file));
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    doc["totals"]["samples"].as_u64().expect("totals.samples")
}

#[test]
fn a_full_disk_ends_the_recording_and_the_summary_counts_what_the_file_holds() {
    if !root("a_full_disk_ends_the_recording_and_the_summary_counts_what_the_file_holds") {
        return;
    }
    let _l = exclusive();
    let mut spinner = common::command(c_program("spinner"))
        .arg("60000")
        .stdout(Stdio::null())
        .spawn()
        .expect("spinner");
    // The start of a recording (kernel symbols, every process's mappings) is about 1 MB, more
    // on a machine running more (a fixed 1600 KiB disk was filled by it under a parallel
    // build, before any sample). So the disk is sized from a short recording of this machine
    // as it is now, plus 1 MiB that fills within seconds at 4999 Hz on every CPU with a busy
    // process.
    let probe = tempfile::tempdir().unwrap();
    let short = probe.path().join("short.hood");
    let out = run(hood()
        .args(["record", "-a", "-F", "4999", "-d", "0.3", "-o"])
        .arg(&short));
    assert!(out.status.success(), "{}", text(&out));
    let start_kib = std::fs::metadata(&short).unwrap().len() / 1024;
    let Some(disk) = SmallDisk::mount(&format!("{}k", start_kib + 1024)) else {
        let _ = spinner.kill();
        let _ = spinner.wait();
        return;
    };
    let file = disk.mnt.join("full.hood");
    let out = run(hood()
        .args(["record", "-a", "-F", "4999", "-d", "60", "-o"])
        .arg(&file));
    let _ = spinner.kill();
    let _ = spinner.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(err.contains("No space left on device"), "{err}");
    let said = recorded_samples(&out.stderr);
    let read = report_samples(&file);
    println!("summary: {said} samples; the report reads {read}");
    assert_eq!(said, read, "{err}");
    assert!(
        err.contains("more samples were recorded but could not be written"),
        "{err}"
    );
    // The size it names is the file's.
    let mib = std::fs::metadata(&file).unwrap().len() as f64 / (1u64 << 20) as f64;
    assert!(
        err.contains(&format!("({mib:.1} MiB)")),
        "{mib:.1} MiB: {err}"
    );
}

/// The lines of `err` that say why a recording stopped on a full disk.
fn stop_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.contains("No space left on device") || l.contains("recording keeps free"))
        .collect()
}

#[test]
fn a_full_disk_stops_trace_record_in_one_line_with_a_readable_trace() {
    if !root("a_full_disk_stops_trace_record_in_one_line_with_a_readable_trace") {
        return;
    }
    let _l = exclusive();
    let Some(disk) = SmallDisk::mount("4m") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // Some 18 M events unpaused: 8 bytes each, the 4 MiB fill within a fraction of a second.
    let prog = instrumented("trace_stream", tmp.path(), &[], &[]);
    let file = disk.mnt.join("full.trace");
    let out = run(hood()
        .args(["trace", "record", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&prog)
        .args(["3000000", "0"])
        .env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"))
        .env("HOOD_SHM_DIR", tmp.path()));
    let err = String::from_utf8_lossy(&out.stderr);
    // One line says why: the write that failed (the usual case: the disk fills between two
    // looks at its free space), or the free-space margin, if a look came first.
    let why = stop_lines(&err);
    assert_eq!(why.len(), 1, "{err}");
    if why[0].contains("No space left on device") {
        println!("stopped by the failed write");
        assert!(why[0].contains("recording stopped early"), "{err}");
        assert!(
            why[0].contains(&format!("hood trace report -i {}", file.display())),
            "{err}"
        );
        // An error: status 2, the program killed, not waited for.
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("killing the traced command"), "{err}");
    } else {
        println!("stopped by the free-space margin");
        assert_eq!(out.status.code(), Some(0), "{err}");
    }
    // The trace is in place and reads, with names, and its summary counts what it holds.
    let rep = run(hood()
        .args(["trace", "report", "--format", "json", "-i"])
        .arg(&file));
    assert!(rep.status.success(), "{}", text(&rep));
    let doc: serde_json::Value = serde_json::from_slice(&rep.stdout).expect("json");
    let report = doc.to_string();
    assert!(report.contains("\"step\""), "no names: {}", text(&rep));
    let events = doc["analysis"]["events"].as_u64().expect("analysis.events");
    assert!(events > 0, "{}", text(&rep));
    assert!(err.contains(&format!("{events} events")), "{events}: {err}");
    // Nothing is left in the segment directory.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hood-trace-"))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_full_disk_stops_calls_run_in_one_line_and_leaves_the_output_as_it_was() {
    if !root("a_full_disk_stops_calls_run_in_one_line_and_leaves_the_output_as_it_was") {
        return;
    }
    let Some(disk) = SmallDisk::mount("64k") else {
        return;
    };
    // Two pages free: the run's empty file takes one, its tables do not fit beside it.
    std::fs::write(disk.mnt.join("fill"), vec![0u8; 56 << 10]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let prog = instrumented("trace_stream", tmp.path(), &[], &[]);
    let file = disk.mnt.join("c.data");
    let out = run(hood()
        .args(["calls", "run", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&prog)
        .args(["1000", "0"])
        .env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"))
        .env("HOOD_SHM_DIR", tmp.path()));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let why = stop_lines(&err);
    assert_eq!(why.len(), 1, "{err}");
    assert!(
        why[0].contains("the tables could not be written")
            && why[0].contains(&format!("{} is left as it was", file.display())),
        "{err}"
    );
    assert!(!file.exists(), "{err}");
    // Nothing beside it either (the run's file and its part are removed).
    let names: Vec<_> = std::fs::read_dir(&disk.mnt)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("fill")]);
}
