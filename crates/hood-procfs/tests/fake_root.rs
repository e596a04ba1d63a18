//! The reader against a fake /proc tree: known values come back, a pid that vanished between
//! listing and reading is skipped, unknown or malformed lines are tolerated.

use std::fs;
use std::path::Path;

use hood_monitor::{derive, ScanOptions};
use hood_procfs::ProcReader;

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().expect("has parent")).expect("mkdir");
    fs::write(p, text).expect("write");
}

fn stat_line(pid: u32, name: &str, state: char, threads: u32, utime: u64, rss: u64) -> String {
    format!("{pid} ({name}) {state} 1 {pid} {pid} 0 -1 0 0 0 0 0 {utime} 5 0 0 20 0 {threads} 0 100 8192000 {rss} 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")
}

/// A fake tree with two tasks, one vanished pid and some noise.
pub fn fake_proc(root: &Path) {
    write(root, "uptime", "1234.56 2000.00\n");
    write(root, "loadavg", "0.50 0.25 0.10 2/150 999\n");
    write(root, "stat", "cpu  100 0 50 800 10 0 5 0 0 0\ncpu0 60 0 30 400 5 0 3 0 0 0\ncpu1 40 0 20 400 5 0 2 0 0 0\nintr 1 2 3\nctxt 5000\nbtime 1\nprocesses 77\nweird line without numbers\n");
    write(root, "meminfo", "MemTotal:       1000000 kB\nMemFree:         400000 kB\nMemAvailable:    700000 kB\nBuffers:          10000 kB\nCached:          200000 kB\nSReclaimable:     20000 kB\nSwapTotal:            0 kB\nSwapFree:             0 kB\nNonsense: x\n");
    write(root, "interrupts", "           CPU0       CPU1\n  1:         10         20   IO-APIC   1-edge      i8042\nLOC:        500        600   Local timer interrupts\n");
    write(root, "softirqs", "                    CPU0       CPU1\n          HI:          1          0\n       TIMER:        100        200\n");
    write(
        root,
        "cpuinfo",
        "processor\t: 0\ncpu MHz\t\t: 2596.000\n\nprocessor\t: 1\ncpu MHz\t\t: 2500.500\n",
    );
    write(root, "1/stat", &stat_line(1, "init", 'S', 1, 300, 100));
    write(root, "1/status", "Name:\tinit\nUid:\t0\t0\t0\t0\nvoluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t2\n");
    write(root, "1/cmdline", "/sbin/init\0splash\0");
    write(
        root,
        "1/task/1/stat",
        &stat_line(1, "init", 'S', 1, 300, 100),
    );
    write(
        root,
        "42/stat",
        &stat_line(42, "busy worker", 'R', 2, 1000, 2560),
    );
    write(root, "42/status", "Uid:\t1000\t1000\t1000\t1000\n");
    write(root, "42/cmdline", "./worker\0--fast\0");
    write(
        root,
        "42/task/42/stat",
        &stat_line(42, "busy worker", 'R', 2, 600, 2560),
    );
    write(
        root,
        "42/task/43/stat",
        &stat_line(43, "helper", 'S', 2, 400, 2560),
    );
    // Vanished between listing and reading: a directory without files.
    fs::create_dir_all(root.join("77")).expect("mkdir");
    // Malformed stat: skipped too.
    write(root, "78/stat", "78 (broken\n");
    write(root, "self/auxv", "");
    write(
        root,
        "passwd",
        "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\nbad line\n",
    );
}

#[test]
fn reads_known_values_and_skips_vanished() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path());
    let mut r = ProcReader::with_root(dir.path()).with_passwd(dir.path().join("passwd"));
    let s = r
        .snapshot(&ScanOptions::all())
        .expect("snapshot of fake tree");
    assert_eq!(s.uptime_s, 1234.56);
    assert_eq!((s.load.runnable, s.load.total), (2, 150));
    assert_eq!(s.cpus.len(), 2);
    assert_eq!(s.cpus[1].mhz, Some(2500.5));
    assert_eq!(s.ctxt, 5000);
    assert_eq!(s.mem.total_kb, 1_000_000);
    let pids: Vec<u32> = s.tasks.iter().map(|t| t.pid).collect();
    assert_eq!(
        pids,
        vec![1, 42],
        "vanished 77 and malformed 78 are skipped"
    );
    let w = &s.tasks[1];
    assert_eq!(w.name, "busy worker");
    assert_eq!(w.user.as_deref(), Some("alice"));
    assert_eq!(
        w.cmdline.as_deref(),
        Some(&["./worker".to_string(), "--fast".to_string()][..])
    );
    assert!(w.ctx.is_none(), "no switch lines in its status");
    let th = s.threads.as_ref().expect("threads scanned");
    let tids: Vec<(u32, u32)> = th.iter().map(|t| (t.pid, t.tgid)).collect();
    assert_eq!(tids, vec![(1, 1), (42, 42), (43, 42)]);
    assert_eq!(s.interrupts.len(), 2);
    assert_eq!(s.softirqs[1].id, "TIMER");

    let v = derive(None, &s);
    assert_eq!(v.counts.tasks, 2);
    assert_eq!(v.counts.threads, 3);
    // 2560 pages of 4096 bytes (no auxv in the fake tree: the 4096 default).
    assert_eq!(v.tasks[1].res_bytes, 2560 * 4096);
    assert_eq!(
        v.physmem.used,
        (1_000_000 - 400_000 - 10_000 - 220_000) * 1024
    );
}

#[test]
fn missing_proc_file_names_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut r = ProcReader::with_root(dir.path());
    let err = r.snapshot(&ScanOptions::default()).expect_err("empty root");
    let msg = err.to_string();
    assert!(msg.contains("uptime") && msg.contains("mount"), "{msg}");
}

#[test]
fn real_proc_has_this_process() {
    let mut r = ProcReader::new();
    let s = r
        .snapshot(&ScanOptions {
            status: true,
            threads_of: Some(std::process::id()),
            ..Default::default()
        })
        .expect("snapshot of /proc");
    let me = s
        .tasks
        .iter()
        .find(|t| t.pid == std::process::id())
        .expect("own pid listed");
    assert!(me.num_threads >= 1);
    assert!(me.ctx.is_some());
    let th = s.threads.expect("threads of self");
    assert!(th.iter().any(|t| t.pid == me.pid), "main thread listed");
    assert!(th.iter().all(|t| t.tgid == me.pid));
}

#[test]
fn reused_reader_sees_changes_and_drops_stale_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path());
    let mut r = ProcReader::with_root(dir.path()).with_passwd(dir.path().join("passwd"));
    let first = r.snapshot(&ScanOptions::all()).expect("first snapshot");
    assert!(first.tasks[1].cmdline.is_some());
    r.recycle(first);
    // The worker renamed itself and used more CPU; init exited.
    write(
        dir.path(),
        "42/stat",
        &stat_line(42, "renamed", 'S', 2, 1500, 2560),
    );
    fs::remove_dir_all(dir.path().join("1")).expect("rm 1");
    let second = r
        .snapshot(&ScanOptions::default())
        .expect("second snapshot");
    let pids: Vec<u32> = second.tasks.iter().map(|t| t.pid).collect();
    assert_eq!(pids, vec![42], "the exited task is gone");
    let w = &second.tasks[0];
    assert_eq!((w.name.as_str(), w.state, w.utime), ("renamed", 'S', 1500));
    assert_eq!(w.tgid, 42);
    // Not asked for this time: nothing left over from the recycled records.
    assert!(w.cmdline.is_none() && w.user.is_none() && w.uid.is_none() && w.ctx.is_none());
    assert!(second.threads.is_none());
}

#[test]
fn real_proc_held_descriptors_follow_exits() {
    let mut r = ProcReader::new();
    let opts = ScanOptions {
        owner: true,
        ..Default::default()
    };
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let pid = child.id();
    let s = r.snapshot(&opts).expect("snapshot with child");
    let kid = s.tasks.iter().find(|t| t.pid == pid).expect("child listed");
    assert_eq!(kid.name, "sleep");
    assert_eq!(kid.ppid, std::process::id());
    r.recycle(s);
    child.kill().expect("kill");
    child.wait().expect("reap");
    let s = r.snapshot(&opts).expect("snapshot after exit");
    assert!(s.tasks.iter().all(|t| t.pid != pid), "reaped child gone");
    // Every task a fresh reader sees (and that still lives) reads the same in the reused one.
    let fresh = ProcReader::new().snapshot(&opts).expect("fresh snapshot");
    let me = std::process::id();
    let a = s
        .tasks
        .iter()
        .find(|t| t.pid == me)
        .expect("self in reused");
    let b = fresh
        .tasks
        .iter()
        .find(|t| t.pid == me)
        .expect("self in fresh");
    assert_eq!(
        (&a.name, a.ppid, a.start_time),
        (&b.name, b.ppid, b.start_time)
    );
    assert_eq!(a.uid, b.uid);
}

/// Pressure, block devices and network interfaces (what the monitor store records beyond a
/// snapshot) read from the files and derived into rates over the interval.
#[test]
fn pressure_disks_and_nets_are_read_and_derived() {
    let a = tempfile::tempdir().expect("tempdir");
    let b = tempfile::tempdir().expect("tempdir");
    for (root, total, sectors, rx, io_ms) in [
        (a.path(), 1_000_000u64, 1000u64, 5000u64, 100u64),
        (b.path(), 1_500_000, 3048, 15_000, 600),
    ] {
        fake_proc(root);
        write(root, "pressure/cpu", &format!("some avg10=1.50 avg60=0.75 avg300=0.20 total={total}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"));
        write(
            root,
            "pressure/io",
            "some avg10=x avg60=0.00 avg300=0.00 total=5\n",
        );
        write(root, "diskstats", &format!(
            "   7       0 loop0 9 0 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 253       0 vda 10 0 {sectors} 30 20 0 {sectors} 40 1 {io_ms} 70 0 0 0 0 0 0\n   8       0 short 1 2 3\n"));
        write(root, "net/dev", &format!(
            "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n  eth0: {rx} 10 1 2 0 0 0 0 {rx} 20 0 1 0 0 0 0\n"));
    }
    let opts = ScanOptions::default();
    let mut s1 = ProcReader::with_root(a.path())
        .snapshot(&opts)
        .expect("snapshot");
    let mut s2 = ProcReader::with_root(b.path())
        .snapshot(&opts)
        .expect("snapshot");
    ProcReader::with_root(a.path()).read_system_io(&mut s1);
    ProcReader::with_root(b.path()).read_system_io(&mut s2);
    let pr = s1.pressure.expect("pressure read");
    let cpu = pr.cpu.expect("cpu pressure");
    assert_eq!(cpu.some.expect("some").avg10, 1.5);
    assert_eq!(cpu.full.expect("full").total_us, 0);
    assert!(pr.memory.is_none(), "no memory file, no memory pressure");
    assert!(
        pr.io.expect("io file").some.is_none(),
        "a malformed line is left out"
    );
    let disks = s1.disks.as_ref().expect("diskstats read");
    assert_eq!(
        disks.len(),
        1,
        "loop devices and short lines left out: {disks:?}"
    );
    s1.taken_ns = 0;
    s2.taken_ns = 2_000_000_000;
    let v = derive(Some(&s1), &s2);
    let some = v
        .pressure
        .expect("pressure")
        .cpu
        .expect("cpu")
        .some
        .expect("some");
    // 500,000 us stalled in 2 s: 25 %.
    assert!(
        (some.percent.expect("rate") - 25.0).abs() < 1e-9,
        "{some:?}"
    );
    let d = &v.disks.expect("disks")[0];
    assert_eq!(d.name, "vda");
    assert_eq!(d.read_bytes, 3048 * 512);
    assert_eq!(d.read_bytes_per_s, Some(2048.0 * 512.0 / 2.0));
    assert_eq!(d.busy_percent, Some(25.0));
    let n = &v.nets.expect("nets")[0];
    assert_eq!((n.name.as_str(), n.rx_errors), ("eth0", 3));
    assert_eq!(n.rx_bytes_per_s, Some(5000.0));
    // Without the files: null, not zero.
    let c = tempfile::tempdir().expect("tempdir");
    fake_proc(c.path());
    let mut s3 = ProcReader::with_root(c.path())
        .snapshot(&opts)
        .expect("snapshot");
    ProcReader::with_root(c.path()).read_system_io(&mut s3);
    assert!(s3.pressure.is_none() && s3.disks.is_none() && s3.nets.is_none());
}

/// A command line of megabytes (a process may have up to 6 MiB of arguments) is read to the
/// cap, 128 KiB, and shown cut with an ellipsis: the monitor keeps every process's.
#[test]
fn a_huge_command_line_is_read_to_its_cap_and_marked_cut() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path();
    fake_proc(root);
    let arg = "x".repeat(100_000);
    let huge: String = (0..40).map(|_| format!("{arg}\0")).collect();
    write(root, "42/cmdline", &huge);
    let mut r = ProcReader::with_root(root);
    let opts = ScanOptions {
        cmdline: true,
        ..ScanOptions::default()
    };
    let s = r.snapshot(&opts).expect("snapshot");
    let w = s.tasks.iter().find(|t| t.pid == 42).expect("pid 42");
    let args = w.cmdline.as_ref().expect("cmdline read");
    let bytes: usize = args.iter().map(|a| a.len() + 1).sum();
    assert!(bytes <= (128 << 10) + 8, "{bytes} bytes kept");
    assert_eq!(args.len(), 2, "one whole argument and the cut one");
    assert!(args[1].ends_with('…'), "marked cut");
    assert_eq!(args[0], arg);
    // Exactly at the cap is not cut.
    let exact = "y".repeat(128 << 10);
    write(root, "42/cmdline", &exact);
    let s = r.snapshot(&opts).expect("snapshot");
    let w = s.tasks.iter().find(|t| t.pid == 42).expect("pid 42");
    assert_eq!(w.cmdline.as_deref(), Some(&[exact][..]));
}
