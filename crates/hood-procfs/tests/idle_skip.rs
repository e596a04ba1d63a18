//! The reader on the real /proc with [`IdleSkip`]: a sleeping process is kept (not re-read)
//! once seen, unless named by `reread` or due for its periodic read; a process that runs is
//! read every time; the kept records agree with a full read; new processes are listed and
//! gone ones disappear.

use std::process::{Child, Command};
use std::time::Duration;

use hood_monitor::{ScanOptions, TaskRaw};
use hood_procfs::{IdleSkip, ProcReader};

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sleeper() -> Kill {
    Kill(Command::new("sleep").arg("30").spawn().expect("sleep"))
}

fn find(tasks: &[TaskRaw], pid: u32) -> &TaskRaw {
    tasks
        .iter()
        .find(|t| t.pid == pid)
        .unwrap_or_else(|| panic!("pid {pid} not in the snapshot"))
}

fn pid(p: u32) -> rustix::process::Pid {
    rustix::process::Pid::from_raw(p as i32).expect("pid")
}

/// A nice value other than `n` (the children inherit this test's, which is not 0 under
/// `nice cargo test`).
fn other_nice(n: i64) -> i32 {
    let n = n as i32;
    if n <= 14 {
        n + 5
    } else {
        n - 5
    }
}

/// Set the nice value of `p` from outside: the process does not run for it, so a kept record
/// shows the old value until it is read again.
fn renice(p: u32, nice: i32) {
    rustix::process::setpriority_process(Some(pid(p)), nice).expect("setpriority");
}

#[test]
fn sleepers_are_kept_and_runners_reread() {
    let mut sleeping = sleeper();
    let spid = sleeping.0.id();
    let opts = ScanOptions {
        owner: true,
        ..ScanOptions::default()
    };
    let mut r = ProcReader::new()
        .with_idle_skip(IdleSkip::UntilRun)
        .with_fd_budget(usize::MAX);
    let first = r.snapshot(&opts).unwrap();
    find(&first.tasks, spid);
    assert_eq!(r.counts().kept, 0);
    assert!(r.counts().listed);
    // Let the child settle into its sleep, then scan twice: the second keeps it.
    std::thread::sleep(Duration::from_millis(100));
    r.snapshot(&opts).unwrap();
    let s = r.snapshot(&opts).unwrap();
    assert!(r.counts().kept > 0, "{:?}", r.counts());
    let kept = find(&s.tasks, spid).clone();
    let n0 = find(&first.tasks, spid).nice;
    assert_eq!(
        (kept.name.as_str(), kept.state, kept.nice),
        ("sleep", 'S', n0)
    );
    // The kept record is what a full read says.
    let full = ProcReader::new().snapshot(&opts).unwrap();
    assert_eq!(&kept, find(&full.tasks, spid));
    // Reniced from outside, it did not run: the record is kept as it was...
    let n1 = other_nice(n0);
    renice(spid, n1);
    let s = r.snapshot(&opts).unwrap();
    assert_eq!(find(&s.tasks, spid).nice, n0, "a kept record is not read");
    // ...until named by reread.
    r.reread([spid]);
    let s = r.snapshot(&opts).unwrap();
    let t = find(&s.tasks, spid);
    assert_eq!(
        (t.name.as_str(), t.state, t.nice),
        ("sleep", 'S', i64::from(n1))
    );
    r.reread([]);
    // Our own process is multi-threaded (the test harness) or running: always read.
    find(&s.tasks, std::process::id());
    // Other options than the previous scan's: everything is read.
    let more = ScanOptions {
        cmdline: true,
        ..opts
    };
    let s = r.snapshot(&more).unwrap();
    assert_eq!(r.counts().kept, 0, "{:?}", r.counts());
    assert_eq!(r.counts().stat_read, s.tasks.len());
    assert_eq!(
        find(&s.tasks, spid).cmdline.as_deref(),
        Some(&["sleep".to_string(), "30".to_string()][..])
    );
    // A process started since is listed (a fork changes /proc/stat's `processes`).
    let late = sleeper();
    let s = r.snapshot(&more).unwrap();
    assert!(r.counts().listed);
    find(&s.tasks, late.0.id());
    // A stopped sleeper shows as stopped at once (stopping takes running).
    rustix::process::kill_process(pid(spid), rustix::process::Signal::STOP).expect("SIGSTOP");
    std::thread::sleep(Duration::from_millis(100));
    let s = r.snapshot(&more).unwrap();
    assert_eq!(find(&s.tasks, spid).state, 'T');
    // A killed sleeper disappears.
    sleeping.0.kill().unwrap();
    sleeping.0.wait().unwrap();
    r.snapshot(&more).unwrap();
    let s = r.snapshot(&more).unwrap();
    assert!(!s.tasks.iter().any(|t| t.pid == spid));
}

/// `Every(n)`: a sleeper is read in full once in every `n` snapshots, so a nice value set
/// from outside shows within `n` snapshots.
#[test]
fn periodic_reads_bound_the_age_of_kept_records() {
    let s = sleeper();
    let spid = s.0.id();
    std::thread::sleep(Duration::from_millis(100));
    let opts = ScanOptions::default();
    let mut r = ProcReader::new()
        .with_idle_skip(IdleSkip::Every(4))
        .with_fd_budget(usize::MAX);
    let mut kept = 0;
    for _ in 0..4 {
        find(&r.snapshot(&opts).unwrap().tasks, spid);
        kept += r.counts().kept;
    }
    assert!(kept > 0, "nothing was kept");
    let n1 = other_nice(find(&r.snapshot(&opts).unwrap().tasks, spid).nice);
    renice(spid, n1);
    let seen =
        (1..=4).find(|_| find(&r.snapshot(&opts).unwrap().tasks, spid).nice == i64::from(n1));
    assert!(
        seen.is_some(),
        "the new nice value did not show within 4 snapshots"
    );
}

/// Off (the default): every process is read at every snapshot and the root always listed.
#[test]
fn off_reads_everything() {
    let _s = sleeper();
    let mut r = ProcReader::new();
    let opts = ScanOptions::default();
    for _ in 0..3 {
        let snap = r.snapshot(&opts).unwrap();
        assert_eq!(r.counts().kept, 0);
        assert!(r.counts().listed);
        assert_eq!(r.counts().stat_read, snap.tasks.len());
    }
}
