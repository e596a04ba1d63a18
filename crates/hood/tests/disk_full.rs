//! A recording that fills its disk: the recorder stops, says why, and its summary gives the
//! samples the file really holds, the count `hood report` reads back, not the count recorded.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
        let st = Command::new("mount")
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
        let _ = Command::new("umount").arg(&self.mnt).status();
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
    let _l = perf_lock();
    // The start of a recording (kernel symbols, processes) takes about 1 MB; the rest fills
    // within seconds at 4999 Hz on every CPU with a busy process.
    let Some(disk) = SmallDisk::mount("1600k") else {
        return;
    };
    let mut spinner = Command::new(c_program("spinner"))
        .arg("60000")
        .stdout(Stdio::null())
        .spawn()
        .expect("spinner");
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
