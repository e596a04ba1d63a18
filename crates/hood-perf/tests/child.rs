//! Real-kernel test of Target::Child: a forked child held before exec.

mod common;

use std::ffi::CString;
use std::time::Duration;

use common::*;
use hood_perf::{Readiness, SamplingConfig, Session, Target};

/// Forks a child that blocks reading a pipe, then execs `/bin/sh -c SCRIPT`.
/// Returns (pid, write end of the pipe).
fn fork_held_child(script: &str) -> (i32, libc::c_int) {
    let sh = CString::new("/bin/sh").unwrap();
    let dash_c = CString::new("-c").unwrap();
    let script = CString::new(script).unwrap();
    let argv = [
        sh.as_ptr(),
        dash_c.as_ptr(),
        script.as_ptr(),
        std::ptr::null(),
    ];
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: after fork the child only calls async-signal-safe functions
    // (read, execv, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: see above; `b` is a valid one-byte buffer, argv is NULL-terminated.
        unsafe {
            let mut b = 0u8;
            libc::read(fds[0], (&mut b as *mut u8).cast(), 1);
            libc::execv(sh.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: closing our copy of the read end, which we own.
    unsafe { libc::close(fds[0]) };
    (pid, fds[1])
}

#[test]
fn child_is_sampled_from_exec() {
    if !privileged(1, "child_is_sampled_from_exec") {
        return;
    }
    let (pid, go) = fork_held_child("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done");
    let opened = Session::open(&SamplingConfig::default(), &Target::Child(pid));
    // Release the child whatever happened, so it never lingers.
    // SAFETY: writing one byte from a valid buffer to our pipe end, then closing it.
    unsafe {
        libc::write(go, b"x".as_ptr().cast(), 1);
        libc::close(go);
    }
    let mut s = opened.unwrap();
    println!("notes: {:?}", s.notes());

    let mut got = Collected::default();
    collect(&mut s, Duration::from_secs(60), &mut got);
    drain(&mut s, &mut got);
    assert!(got.hangup, "wait() never reported that the child exited");
    assert_eq!(
        s.wait(Duration::from_millis(10)).unwrap(),
        Readiness::Hangup
    );
    let mut status = 0;
    // SAFETY: reaping our own child; `status` is a valid int to write into.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);

    let recs: Vec<Rec> = got.records().into_values().flatten().collect();
    let exec_comm = recs.iter().find(|r| {
        r.ty == RECORD_COMM && r.misc & MISC_COMM_EXEC != 0 && u32_at(&r.body, 0) == pid as u32
    });
    let comm = exec_comm.expect("no COMM(exec) record for the child");
    let name: Vec<u8> = comm.body[8..]
        .iter()
        .take_while(|&&b| b != 0)
        .copied()
        .collect();
    assert_eq!(name, b"sh");
    let samples: Vec<Sample> = recs
        .iter()
        .filter(|r| r.ty == RECORD_SAMPLE)
        .map(sample)
        .collect();
    let mine = samples.iter().filter(|x| x.pid == pid as u32).count();
    assert!(
        mine > 0,
        "no samples of child pid {pid} ({} samples total)",
        samples.len()
    );
    assert!(
        samples.iter().all(|x| x.pid == pid as u32),
        "samples of other processes"
    );
    let mmap2: Vec<&Rec> = recs.iter().filter(|r| r.ty == RECORD_MMAP2).collect();
    assert!(!mmap2.is_empty(), "no MMAP2 side-band records");
    if s.notes().iter().all(|n| !n.contains("build id")) {
        assert!(
            mmap2.iter().any(|r| r.misc & MISC_MMAP_BUILD_ID != 0),
            "build ids were accepted but no MMAP2 record carries one"
        );
    }
    assert!(recs.iter().any(|r| r.ty == RECORD_EXIT), "no EXIT record");
    println!(
        "{mine} samples of child {pid}, {} MMAP2 records",
        mmap2.len()
    );
}
