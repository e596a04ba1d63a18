//! `hood calls get/reset` against files another local user plants where segments live
//! (issue 14): a FIFO, a sparse file whose consistent header claims gigabytes, a link to a
//! root-only file, and a file of another user naming root's process. Each test fails on a
//! hood that opens segments by name, trusts their sizes, or reopens them to write.

use crate::common;

use std::mem::offset_of;
use std::os::unix::fs::{symlink, FileExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use common::*;
use hood_abi::{SegmentHeader, SlotLayout, ThreadHeader};

/// Generous: these commands finish in well under a second; a hang runs into it.
const LIMIT: Duration = Duration::from_secs(30);

/// A consistent calls-mode segment header for `pid` with the given limits, and its total size.
fn header(pid: u32, max_threads: u32, max_depth: u32, max_paths: u32) -> (Vec<u8>, u64) {
    let hash = (max_paths * 2).next_power_of_two();
    let slot = SlotLayout::new(max_depth, max_paths, hash).unwrap();
    let maps_offset = hood_abi::HEADER_AREA_SIZE;
    let threads_offset = maps_offset + hood_abi::MAPS_AREA_SIZE;
    let total = threads_offset + max_threads as u64 * slot.slot_size;
    let mut b = vec![0u8; hood_abi::HEADER_AREA_SIZE as usize];
    let put32 = |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |b: &mut Vec<u8>, o: usize, v: u64| b[o..o + 8].copy_from_slice(&v.to_le_bytes());
    put64(&mut b, 0, hood_abi::MAGIC);
    put32(
        &mut b,
        offset_of!(SegmentHeader, version),
        hood_abi::LAYOUT_VERSION,
    );
    put32(
        &mut b,
        offset_of!(SegmentHeader, mode),
        hood_abi::MODE_CALLS,
    );
    put32(&mut b, offset_of!(SegmentHeader, pid), pid);
    put32(
        &mut b,
        offset_of!(SegmentHeader, state),
        hood_abi::STATE_RUNNING,
    );
    put32(
        &mut b,
        offset_of!(SegmentHeader, clock),
        hood_abi::CLOCK_MONOTONIC_NS,
    );
    put64(
        &mut b,
        offset_of!(SegmentHeader, ticks_per_sec),
        1_000_000_000,
    );
    put32(&mut b, offset_of!(SegmentHeader, max_threads), max_threads);
    put32(&mut b, offset_of!(SegmentHeader, max_depth), max_depth);
    put32(&mut b, offset_of!(SegmentHeader, max_paths), max_paths);
    put32(&mut b, offset_of!(SegmentHeader, max_path_len), max_depth);
    put32(&mut b, offset_of!(SegmentHeader, hash_size), hash);
    put32(&mut b, offset_of!(SegmentHeader, threads_used), max_threads);
    put64(&mut b, offset_of!(SegmentHeader, maps_offset), maps_offset);
    put64(
        &mut b,
        offset_of!(SegmentHeader, threads_offset),
        threads_offset,
    );
    put64(
        &mut b,
        offset_of!(SegmentHeader, thread_slot_size),
        slot.slot_size,
    );
    put64(&mut b, offset_of!(SegmentHeader, total_size), total);
    (b, total)
}

/// A long-running root process, the "innocent" one planted segments name.
struct Sleeper(Child);

impl Sleeper {
    fn new() -> Sleeper {
        Sleeper(common::command("sleep").arg("300").spawn().unwrap())
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn calls(dir: &Path, args: &[&str]) -> Command {
    let mut c = hood();
    c.arg("calls").args(args).env("HOOD_SHM_DIR", dir);
    c
}

#[test]
fn fifo_named_like_a_segment_does_not_hang() {
    if !root("fifo_named_like_a_segment_does_not_hang") {
        return;
    }
    let (uid, gid) = other_user();
    let dir = sticky_dir();
    let fifo: PathBuf = dir.path().join("hood-rt-4242-1");
    let st = common::command("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    std::os::unix::fs::chown(&fifo, Some(uid), Some(gid)).unwrap();
    let out_file = dir.path().join("c.data");
    for args in [
        &["get", "-o", out_file.to_str().unwrap()][..],
        &["reset"][..],
    ] {
        let r = run_bounded(&mut calls(dir.path(), args), LIMIT);
        let status = r
            .status
            .unwrap_or_else(|| panic!("`hood calls {}` hung on a FIFO: {}", args[0], r.stderr));
        assert_eq!(status.code(), Some(1), "{}", r.stderr);
        assert!(
            r.stderr.contains("hood-rt-4242-1") && r.stderr.contains("not a regular file"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn sparse_segment_claiming_gigabytes_is_not_read() {
    if !root("sparse_segment_claiming_gigabytes_is_not_read") {
        return;
    }
    let dir = sticky_dir();
    let victim = Sleeper::new();
    let pid = victim.pid();
    // 16 threads of 2 Mi paths: about 1.9 GB claimed, a few pages written.
    let (head, total) = header(pid, 16, 1024, 2 << 20);
    assert!(total > 1 << 30, "claims {total} bytes");
    let p = dir.path().join(format!("hood-rt-{pid}-1"));
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(total).unwrap();
    f.write_all_at(&head, 0).unwrap();
    let h = hood_abi::parse::HeaderView::parse(&head).expect("a consistent header");
    for i in 0..16 {
        let mut th = vec![0u8; hood_abi::THREAD_HEADER_SIZE];
        let put = |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
        put(&mut th, offset_of!(ThreadHeader, tid), pid + i);
        put(&mut th, offset_of!(ThreadHeader, depth), 1024);
        put(&mut th, offset_of!(ThreadHeader, paths_used), 2 << 20);
        f.write_all_at(&th, h.slot_offset(i)).unwrap();
    }
    drop(f);
    let out_file = dir.path().join("c.data");
    let r = run_bounded(
        calls(dir.path(), &["get", "-p", &pid.to_string(), "-o"]).arg(&out_file),
        LIMIT,
    );
    assert!(r.status.is_some(), "hung: {}", r.stderr);
    eprintln!(
        "hood calls get on a {total}-byte sparse segment: peak RSS {} KiB",
        r.max_rss_kb
    );
    assert!(
        r.max_rss_kb < 64 * 1024,
        "hood calls get peaked at {} MB of RSS on a sparse file: {}",
        r.max_rss_kb / 1024,
        r.stderr
    );
    assert!(
        r.stderr.contains(&p.display().to_string()) && r.stderr.contains("sparse"),
        "{}",
        r.stderr
    );
}

/// A root-only file that even looks like a valid segment of the running root process `pid`.
fn root_only_segment(dir: &std::path::Path, pid: u32) -> std::path::PathBuf {
    let (head, total) = header(pid, 1, 4, 8);
    let secret = root_only_file(dir, b"");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&secret)
        .unwrap();
    f.set_len(total).unwrap();
    f.write_all_at(&head, 0).unwrap();
    secret
}

#[test]
fn reset_never_writes_through_a_link() {
    if !root("reset_never_writes_through_a_link") {
        return;
    }
    let dir = sticky_dir();
    let victim = Sleeper::new();
    let pid = victim.pid();
    let secret = root_only_segment(dir.path(), pid);
    let before = std::fs::read(&secret).unwrap();
    let link = dir.path().join(format!("hood-rt-{pid}-1"));
    symlink(&secret, &link).unwrap();
    let r = run_bounded(
        &mut calls(dir.path(), &["reset", "-p", &pid.to_string()]),
        LIMIT,
    );
    assert_eq!(r.status.and_then(|s| s.code()), Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("symbolic link"), "{}", r.stderr);
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        before,
        "root-only file changed"
    );
}

#[test]
fn another_users_segment_naming_roots_process_is_skipped() {
    if !root("another_users_segment_naming_roots_process_is_skipped") {
        return;
    }
    let (uid, gid) = other_user();
    let dir = sticky_dir();
    let victim = Sleeper::new();
    let pid = victim.pid();
    let (head, total) = header(pid, 1, 4, 8);
    let p = dir.path().join(format!("hood-rt-{pid}-1"));
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(total).unwrap();
    f.write_all_at(&head, 0).unwrap();
    drop(f);
    std::os::unix::fs::chown(&p, Some(uid), Some(gid)).unwrap();
    let before = std::fs::read(&p).unwrap();
    let r = run_bounded(
        &mut calls(dir.path(), &["reset", "-p", &pid.to_string()]),
        LIMIT,
    );
    assert_eq!(r.status.and_then(|s| s.code()), Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("owned by uid {uid}")),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read(&p).unwrap(),
        before,
        "the planted file was written"
    );
}

/// Start time (/proc/PID/stat field 22) of `pid`.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    after.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn stale_private_dirs_of_killed_recorders_are_removed() {
    if !root("stale_private_dirs_of_killed_recorders_are_removed") {
        return;
    }
    let (uid, gid) = other_user();
    let base = sticky_dir();
    // A pid that is gone: a child that has exited and been reaped.
    let mut done = common::command("true").spawn().unwrap();
    let gone = done.id();
    done.wait().unwrap();
    let running = Sleeper::new();
    let live = running.pid();
    let mk = |name: &str, segment: Option<u32>| {
        let d = base.path().join(name);
        std::fs::create_dir(&d).unwrap();
        let seg = format!("hood-rt-{}-1", segment.unwrap_or(gone));
        let f = std::fs::File::create(d.join(seg)).unwrap();
        f.set_len(1 << 30).unwrap();
        f.write_all_at(b"written", 0).unwrap();
        d
    };
    // Left by killed recorders: their pid is gone, or reused by another process.
    let stale = [
        mk(&format!("hood-trace-{gone}-5"), None),
        mk(&format!("hood-calls-run-{live}-5"), None),
    ];
    // Still in use: its recorder runs (same pid and start time), or a process with a segment
    // in it runs; and another user's directory is not hood's to remove.
    let kept = [
        mk(&format!("hood-trace-{live}-{}", start_time(live)), None),
        mk(&format!("hood-calls-run-{gone}-6"), Some(live)),
        mk(&format!("hood-trace-{gone}-7"), None),
    ];
    std::os::unix::fs::chown(&kept[2], Some(uid), Some(gid)).unwrap();
    let out_file = base.path().join("c.data");
    let r = run_bounded(calls(base.path(), &["get", "-o"]).arg(&out_file), LIMIT);
    assert!(r.status.is_some(), "hung: {}", r.stderr);
    for d in &stale {
        assert!(!d.exists(), "{} left behind: {}", d.display(), r.stderr);
        assert!(
            r.stderr.contains(&format!("removed {}", d.display())),
            "{}",
            r.stderr
        );
    }
    for d in &kept {
        assert!(d.exists(), "{} removed: {}", d.display(), r.stderr);
    }
}

#[test]
fn reset_during_a_link_swap_never_writes_the_link_target() {
    if !root("reset_during_a_link_swap_never_writes_the_link_target") {
        return;
    }
    let dir = sticky_dir();
    let victim = Sleeper::new();
    let pid = victim.pid();
    let (head, total) = header(pid, 1, 4, 8);
    let secret = root_only_segment(dir.path(), pid);
    let before = std::fs::read(&secret).unwrap();
    // What an attacker does: swap the segment's name between a genuine segment (which passes
    // every check) and a link to the root-only file, as fast as possible, so that a reader
    // that checks one file and then reopens the name for writing gets the other.
    let name = dir.path().join(format!("hood-rt-{pid}-1"));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (dir, name, secret, stop) = (
            dir.path().to_path_buf(),
            name.clone(),
            secret.clone(),
            stop.clone(),
        );
        std::thread::spawn(move || {
            let (real, link) = (dir.join("swap-real"), dir.join("swap-link"));
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let f = std::fs::File::create(&real).unwrap();
                f.set_len(total).unwrap();
                f.write_all_at(&head, 0).unwrap();
                drop(f);
                std::fs::rename(&real, &name).unwrap();
                let _ = std::fs::remove_file(&link);
                symlink(&secret, &link).unwrap();
                std::fs::rename(&link, &name).unwrap();
            }
        })
    };
    for _ in 0..300 {
        let r = run_bounded(
            &mut calls(dir.path(), &["reset", "-p", &pid.to_string()]),
            LIMIT,
        );
        assert!(r.status.is_some(), "hung: {}", r.stderr);
        if std::fs::read(&secret).unwrap() != before {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        before,
        "hood calls reset wrote the root-only file through a swapped link"
    );
}
