//! Starting the profiled command stopped before exec, so sampling can be armed first.
//!
//! The child blocks on a pipe until the recorder has opened its events, then execs; an exec
//! failure travels back on a close-on-exec pipe so "command not found" is reported clearly.
//!
//! The command does not outlive its recorder unobserved: it is killed (SIGKILL, Linux's
//! parent-death signal) when the recorder dies, however it dies. The kernel clears that
//! setting when the command execs a set-user-ID or set-group-ID program, or one with file
//! capabilities; processes the command starts itself are not covered.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::{anyhow, bail, Context};

/// A forked child waiting to exec.
pub struct Child {
    /// Its pid.
    pub pid: i32,
    go: Option<OwnedFd>,
    status: OwnedFd,
    program: String,
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own; we check the result.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created by pipe2 and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Child {
    /// Fork `argv[0]` with `argv`, stopped before exec.
    pub fn spawn(argv: &[String]) -> anyhow::Result<Child> {
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| {
                CString::new(a.as_bytes())
                    .map_err(|_| anyhow!("argument {a:?} contains a NUL byte"))
            })
            .collect::<anyhow::Result<_>>()?;
        let Some(program) = cargs.first() else {
            bail!("empty command")
        };
        let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let (go_r, go_w) = pipe_cloexec().context("creating a pipe")?;
        let (st_r, st_w) = pipe_cloexec().context("creating a pipe")?;
        // SAFETY: getpid has no preconditions.
        let recorder = unsafe { libc::getpid() };
        // SAFETY: fork is async-signal-safe; in the child we only call async-signal-safe
        // functions (read, signal, execvp, write, _exit) on memory prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error()).context("fork");
        }
        if pid == 0 {
            // SAFETY: closing the parent's pipe ends in the child so a dying parent gives EOF.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(st_r.as_raw_fd());
            }
            // Die with the recorder; if it is already gone (it died before the prctl), the
            // read below sees the end of the pipe and the command never starts.
            // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid only change or read this process's
            // state; both are async-signal-safe system calls.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                if libc::getppid() != recorder {
                    libc::_exit(127);
                }
            }
            let mut b = [0u8; 1];
            // SAFETY: reading into a local byte from a descriptor we own; no allocation.
            let n = unsafe { libc::read(go_r.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
            if n == 1 {
                // The Rust runtime ignores SIGPIPE in hood, and an ignored signal stays ignored
                // across exec: give the command the default back, so `yes | head -1` under
                // `hood record` ends by SIGPIPE instead of printing "Broken pipe".
                // SAFETY: program and ptrs are NUL-terminated and outlive the call; signal
                // with SIG_DFL only changes this process's disposition.
                unsafe {
                    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                    libc::execvp(program.as_ptr(), ptrs.as_ptr());
                }
            }
            // SAFETY: __errno_location is valid in this thread; write/_exit are async-signal-safe.
            unsafe {
                let err = *libc::__errno_location();
                let bytes = err.to_le_bytes();
                libc::write(st_w.as_raw_fd(), bytes.as_ptr().cast(), 4);
                libc::_exit(127);
            }
        }
        drop(go_r);
        drop(st_w);
        Ok(Child {
            pid,
            go: Some(go_w),
            status: st_r,
            program: argv[0].clone(),
        })
    }

    /// Let the child exec; returns an error if exec failed (the child has then exited).
    pub fn release(&mut self) -> anyhow::Result<()> {
        if let Some(go) = self.go.take() {
            let b = [1u8];
            // SAFETY: writing one byte from a local buffer to a pipe we own.
            unsafe { libc::write(go.as_raw_fd(), b.as_ptr().cast(), 1) };
        }
        let mut buf = [0u8; 4];
        // SAFETY: reading up to 4 bytes into a local buffer from a pipe we own.
        let n = unsafe { libc::read(self.status.as_raw_fd(), buf.as_mut_ptr().cast(), 4) };
        if n == 4 {
            let errno = i32::from_le_bytes(buf);
            let _ = self.wait();
            let err = io::Error::from_raw_os_error(errno);
            if errno == libc::ENOENT {
                bail!(
                    "command not found: {} (check the name and your PATH)",
                    self.program
                );
            }
            bail!("cannot run {}: {err}", self.program);
        }
        Ok(())
    }

    /// Kill the child (used when arming the recorder failed).
    pub fn kill(&mut self) {
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let _ = self.wait();
    }

    /// Non-blocking wait: `Some(exit code)` once the child has ended (128+N for signal N).
    pub fn try_wait(&mut self) -> Option<i32> {
        self.wait_flags(libc::WNOHANG)
    }

    /// Blocking wait.
    pub fn wait(&mut self) -> Option<i32> {
        self.wait_flags(0)
    }

    fn wait_flags(&mut self, flags: i32) -> Option<i32> {
        let mut status = 0;
        // SAFETY: waitpid on our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(self.pid, &mut status, flags) };
        if r != self.pid {
            return None;
        }
        if libc::WIFEXITED(status) {
            Some(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            Some(128 + libc::WTERMSIG(status))
        } else {
            None
        }
    }
}
