//! The recorder against its environment: JIT maps, a full disk, a missing PMU.

use crate::common;

use common::*;

#[test]
fn jit_code_is_named_from_the_perf_map() {
    if !privileged("jit_perf_map") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jit.data");
    let prog = c_program("jit");
    let out = record(&file, &["--", prog.to_str().unwrap(), "800"]);
    assert!(out.status.success(), "{}", text(&out));
    let leaves = leaf_counts(&collapsed(&file, &[]), "jit");
    let total: u64 = leaves.values().sum();
    let jitted = *leaves.get("jitted_hot_loop").unwrap_or(&0);
    assert!(jitted * 100 > total * 80, "{leaves:?}");
}

#[test]
fn a_full_disk_stops_the_recording_cleanly_and_keeps_what_was_written() {
    if !privileged("disk_full") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let spin = c_program("spinner");
    let mut a = common::command(&spin).arg("30000").spawn().unwrap();
    let mut b = common::command(&spin).arg("30000").spawn().unwrap();
    // What a recording writes before its first samples (kernel symbols, every process's
    // mappings) is about 1 MB and grows with what else runs: a fixed 1800k was filled by it
    // alone on a busy machine, before any sample. The small file system gets what a short
    // recording of this machine writes, plus 256 KiB for the samples to fill.
    let short = dir.path().join("short.data");
    let out = record(&short, &["-a", "-F", "4999", "-d", "0.3"]);
    assert!(out.status.success(), "{}", text(&out));
    let size_k = std::fs::metadata(&short).unwrap().len() / 1024 + 256;
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let st = common::command("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size_k}k"), "tmpfs"])
        .arg(&mnt)
        .status()
        .expect("mount");
    assert!(st.success(), "mounting a small tmpfs needs root");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = common::command("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let file = mnt.join("full.data");
    let out = record(&file, &["-a", "-F", "4999", "-d", "20"]);
    let _ = (a.kill(), b.kill(), a.wait(), b.wait());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(err.contains("disk full"), "{err}");
    let rep = run(hood()
        .args(["report", "--format", "collapsed", "-i"])
        .arg(&file));
    assert!(
        rep.status.success(),
        "what was written is readable: {}",
        text(&rep)
    );
    let rep_err = String::from_utf8_lossy(&rep.stderr);
    let rep_text = text(&rep);
    assert!(
        rep_err.contains("cut short")
            || rep_err.contains("not finalized")
            || rep_text.contains("cut short"),
        "{rep_text}"
    );
    assert!(!folded(&rep.stdout).is_empty());
}

#[test]
fn hardware_events_fall_back_to_cpu_clock_with_a_note() {
    if !privileged("pmu_fallback") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hw.data");
    let prog = c_program("spinner");
    let out = record(
        &file,
        &["-e", "cycles", "--", prog.to_str().unwrap(), "300"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // Either the machine has a PMU and sampled cycles, or it said in one line that it fell back.
    assert!(
        err.contains("(cycles)") || err.contains("sampling cpu-clock instead"),
        "{err}"
    );
    let rep = run(hood().args(["report", "-i"]).arg(&file));
    assert!(
        String::from_utf8_lossy(&rep.stdout).contains("cycles"),
        "the header names the requested event"
    );
}
