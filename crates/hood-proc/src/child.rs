//! Starting the command a recorder watches: one way, for every recorder.
//!
//! The command is forked and held before exec until the recorder has armed what must see its
//! first instruction (perf events that switch on at exec), then released; a recorder with
//! nothing to arm releases it at once ([`Child::spawn`]). An exec failure travels back on a
//! close-on-exec pipe, so "command not found" is reported as such.
//!
//! The command does not outlive its recorder unobserved: it is killed (SIGKILL, Linux's
//! parent-death signal) when the recorder dies, however it dies; a recorder that died before
//! the setting took effect never sees its command start. The kernel clears that setting when
//! the command execs a set-user-ID or set-group-ID program, or one with file capabilities;
//! processes the command starts itself are not covered.
//!
//! The command inherits the recorder's standard streams, process group and environment (plus
//! the variables given to [`Child::spawn_held`]), and gets the default disposition of SIGPIPE
//! and an empty signal mask back, as a command started by a shell would; a stop signal
//! (SIGINT, SIGTERM, SIGHUP) that was ignored when the recorder started (`nohup`, a background
//! job of a script) is ignored by the command too, though the recorder catches it.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::pipe::{pipe_with, PipeFlags};
use rustix::process::{Pid, Signal, WaitOptions};

use crate::ProcError;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal of this number ended it.
    Signal(i32),
}

impl Exit {
    /// The status a shell would report: the exit status, or 128 + the signal's number.
    pub fn shell_code(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }

    /// Whether the command exited with status 0.
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }
}

/// A started command (held before exec until [`Child::release`], or already released).
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    /// Written (or closed) to let the command exec.
    go: Option<OwnedFd>,
    /// Carries the exec's errno back; reads end of file once the exec succeeded.
    status: OwnedFd,
    program: String,
    /// Set once the command is reaped: from then on its pid may name another process.
    exit: Option<Exit>,
}

fn c_string(s: &OsStr) -> Result<CString, ProcError> {
    CString::new(s.as_bytes()).map_err(|_| ProcError::NulByte {
        arg: s.to_string_lossy().into_owned(),
    })
}

fn sys(what: impl Into<String>) -> impl FnOnce(rustix::io::Errno) -> ProcError {
    let what = what.into();
    move |e| ProcError::Sys {
        what,
        source: e.into(),
    }
}

impl Child {
    /// Start `argv` (found on PATH like a shell does) and let it exec at once.
    pub fn spawn<S: AsRef<OsStr>>(
        argv: &[S],
        env: &[(OsString, OsString)],
    ) -> Result<Child, ProcError> {
        let mut child = Child::spawn_held(argv, env)?;
        child.release()?;
        Ok(child)
    }

    /// Fork `argv`, stopped before its exec until [`Child::release`]. `env`: variables set
    /// (or replaced) in the command's environment.
    pub fn spawn_held<S: AsRef<OsStr>>(
        argv: &[S],
        env: &[(OsString, OsString)],
    ) -> Result<Child, ProcError> {
        let cargs: Vec<CString> = argv
            .iter()
            .map(|a| c_string(a.as_ref()))
            .collect::<Result<_, _>>()?;
        let Some(program) = cargs.first() else {
            return Err(ProcError::EmptyCommand);
        };
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !env.iter().any(|(e, _)| e == k))
            .collect();
        vars.extend(env.iter().cloned());
        let cenv: Vec<CString> = vars
            .iter()
            .map(|(k, v)| {
                let mut kv = k.clone();
                kv.push("=");
                kv.push(v);
                c_string(&kv)
            })
            .collect::<Result<_, _>>()?;
        // Everything the child touches is prepared here: after the fork it allocates nothing.
        let mut arg_ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
        arg_ptrs.push(std::ptr::null());
        let mut env_ptrs: Vec<*const libc::c_char> = cenv.iter().map(|c| c.as_ptr()).collect();
        env_ptrs.push(std::ptr::null());
        let (go_r, go_w) = pipe_with(PipeFlags::CLOEXEC).map_err(sys("pipe2"))?;
        let (st_r, st_w) = pipe_with(PipeFlags::CLOEXEC).map_err(sys("pipe2"))?;
        let recorder = rustix::process::getpid();
        // Stop signals that were ignored when the recorder started stay ignored in the command.
        let ignored = crate::signal::ignored_at_start();
        // SAFETY: fork has no memory preconditions. In the child (a copy of a possibly
        // multi-threaded process) only async-signal-safe calls follow, on memory prepared
        // before the fork: close (dropping descriptors), prctl, getppid, read, sigprocmask,
        // signal, execvpe, write and _exit; nothing allocates or takes a lock (`ignored` is
        // read, not grown).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(ProcError::Sys {
                what: "fork".into(),
                source: io::Error::last_os_error(),
            });
        }
        if pid == 0 {
            // The parent's ends: with them closed here, a recorder that dies gives end of file.
            drop(go_w);
            drop(st_r);
            // Die with the recorder; if it is already gone (it died before the prctl), do not
            // start the command at all.
            let armed = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
            if armed.is_err() || rustix::process::getppid() != Some(recorder) {
                exit_child();
            }
            let mut b = [0u8; 1];
            if let Ok(1) = rustix::io::read(&go_r, &mut b[..]) {
                // SAFETY: the pointers name NUL-terminated strings in `cargs` and `cenv`, and
                // both arrays end with a null pointer; all outlive the call. sigemptyset and
                // pthread_sigmask write to a local set and this thread's mask; signal with
                // SIG_DFL only changes this process's disposition of SIGPIPE (the Rust runtime
                // ignores it, and an ignored signal stays ignored across exec: `yes | head -1`
                // under a recorder would print "Broken pipe" instead of ending by SIGPIPE),
                // and sets SIG_IGN for the stop signals in `ignored`.
                unsafe {
                    let mut set: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut set);
                    libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                    for &sig in &ignored {
                        libc::signal(sig, libc::SIG_IGN);
                    }
                    libc::execvpe(program.as_ptr(), arg_ptrs.as_ptr(), env_ptrs.as_ptr());
                }
            }
            // The exec failed (or the recorder went away): say why, and end.
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let _ = rustix::io::write(&st_w, &errno.to_le_bytes());
            exit_child();
        }
        drop(go_r);
        drop(st_w);
        Ok(Child {
            // pid > 0 here.
            pid: Pid::from_raw(pid).ok_or(ProcError::EmptyCommand)?,
            go: Some(go_w),
            status: st_r,
            program: argv[0].as_ref().to_string_lossy().into_owned(),
            exit: None,
        })
    }

    /// The command's process id.
    pub fn pid(&self) -> i32 {
        self.pid.as_raw_pid()
    }

    /// Let the command exec; an error if the exec failed (the command has then exited and
    /// been reaped).
    pub fn release(&mut self) -> Result<(), ProcError> {
        if let Some(go) = self.go.take() {
            let _ = rustix::io::write(&go, &[1u8]);
        }
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match rustix::io::read(&self.status, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            }
        }
        if got < 4 {
            return Ok(());
        }
        let errno = i32::from_le_bytes(buf);
        let _ = self.wait();
        let program = self.program.clone();
        if errno == libc::ENOENT {
            return Err(ProcError::CommandNotFound { program });
        }
        Err(ProcError::Exec {
            program,
            source: io::Error::from_raw_os_error(errno),
        })
    }

    /// Send `sig` to the command, if it has not been reaped (its pid names no other process).
    pub fn signal(&self, sig: Signal) -> Result<(), ProcError> {
        if self.exit.is_some() {
            return Ok(());
        }
        rustix::process::kill_process(self.pid, sig)
            .map_err(sys(format!("kill({}, {sig:?})", self.pid())))
    }

    /// Kill the command (SIGKILL) and reap it.
    pub fn kill(&mut self) {
        let _ = self.signal(Signal::KILL);
        let _ = self.wait();
    }

    /// Non-blocking wait: `Some` once the command has ended.
    pub fn try_wait(&mut self) -> Result<Option<Exit>, ProcError> {
        self.wait_with(WaitOptions::NOHANG)
    }

    /// Wait for the command to end.
    pub fn wait(&mut self) -> Result<Exit, ProcError> {
        loop {
            if let Some(e) = self.wait_with(WaitOptions::empty())? {
                return Ok(e);
            }
        }
    }

    fn wait_with(&mut self, opts: WaitOptions) -> Result<Option<Exit>, ProcError> {
        if let Some(e) = self.exit {
            return Ok(Some(e));
        }
        let st = loop {
            match rustix::process::waitpid(Some(self.pid), opts) {
                Err(rustix::io::Errno::INTR) => continue,
                other => break other.map_err(sys(format!("waitpid({})", self.pid())))?,
            }
        };
        let Some((_, st)) = st else {
            return Ok(None);
        };
        let exit = if let Some(c) = st.exit_status() {
            Exit::Code(c)
        } else if let Some(s) = st.terminating_signal() {
            Exit::Signal(s)
        } else {
            return Ok(None);
        };
        self.exit = Some(exit);
        Ok(Some(exit))
    }
}

/// End the forked child without running the parent's exit handlers or flushing its buffers.
fn exit_child() -> ! {
    // SAFETY: _exit is async-signal-safe and ends this (forked) process at once.
    unsafe { libc::_exit(127) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn exit_status_and_signal_propagate() {
        let mut c = Child::spawn(&argv(&["sh", "-c", "exit 7"]), &[]).unwrap();
        assert_eq!(c.wait().unwrap(), Exit::Code(7));
        // Waiting again answers the same without touching the (reaped) pid.
        assert_eq!(c.try_wait().unwrap(), Some(Exit::Code(7)));
        let mut c = Child::spawn(&argv(&["sh", "-c", "kill -TERM $$"]), &[]).unwrap();
        let e = c.wait().unwrap();
        assert_eq!(e, Exit::Signal(libc::SIGTERM));
        assert_eq!(e.shell_code(), 128 + libc::SIGTERM);
    }

    #[test]
    fn a_held_command_runs_only_when_released() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("ran");
        let script = format!("echo x > {}", mark.display());
        let mut c = Child::spawn_held(&argv(&["sh", "-c", &script]), &[]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!mark.exists(), "the command ran before its release");
        assert_eq!(c.try_wait().unwrap(), None);
        c.release().unwrap();
        assert!(c.wait().unwrap().success());
        assert!(mark.exists());
    }

    #[test]
    fn environment_is_inherited_and_extended() {
        let mut c = Child::spawn(
            &argv(&[
                "sh",
                "-c",
                "test \"$PROC_TEST_EXTRA\" = yes && test -n \"$PATH\"",
            ]),
            &[("PROC_TEST_EXTRA".into(), "yes".into())],
        )
        .unwrap();
        assert!(c.wait().unwrap().success());
    }

    #[test]
    fn a_missing_command_is_named() {
        let e = Child::spawn(&argv(&["no-such-command-hood-proc"]), &[]).unwrap_err();
        assert!(matches!(e, ProcError::CommandNotFound { .. }), "{e}");
        assert!(e.to_string().contains("no-such-command-hood-proc"), "{e}");
        assert!(matches!(
            Child::spawn::<String>(&[], &[]),
            Err(ProcError::EmptyCommand)
        ));
        assert!(matches!(
            Child::spawn(&argv(&["a\0b"]), &[]),
            Err(ProcError::NulByte { .. })
        ));
    }

    /// The Rust runtime ignores SIGPIPE; the command gets the default back, and no blocked
    /// signals.
    #[test]
    fn the_command_starts_with_default_sigpipe_and_no_blocked_signals() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("status");
        let mut c = Child::spawn(
            &argv(&[
                "sh",
                "-c",
                "exec grep -E '^Sig(Ign|Blk)' /proc/self/status > \"$OUT\"",
            ]),
            &[("OUT".into(), out.clone().into_os_string())],
        )
        .unwrap();
        assert!(c.wait().unwrap().success());
        let text = std::fs::read_to_string(&out).unwrap();
        for line in text.lines() {
            let (name, mask) = line.split_once(':').unwrap();
            let mask = u64::from_str_radix(mask.trim(), 16).unwrap();
            if name == "SigIgn" {
                assert_eq!(
                    mask & (1 << (libc::SIGPIPE - 1)),
                    0,
                    "SIGPIPE ignored: {text}"
                );
            } else {
                assert_eq!(mask, 0, "signals blocked: {text}");
            }
        }
    }

    #[test]
    fn signal_reaches_the_command() {
        let mut c = Child::spawn(&argv(&["sleep", "30"]), &[]).unwrap();
        c.signal(Signal::INT).unwrap();
        assert_eq!(c.wait().unwrap(), Exit::Signal(libc::SIGINT));
        // After the reaping nothing is sent (the pid may be another process's).
        c.signal(Signal::KILL).unwrap();
    }

    /// Set (to the pid file) in the process that plays the recorder.
    const HELPER_ENV: &str = "HOOD_PROC_TEST_INNER";

    /// Not a test on its own: run by `the_command_dies_when_its_recorder_is_killed` in a
    /// process of its own (this test binary, run again), it plays the recorder: starts
    /// `sleep 60`, writes its pid, and waits to be killed.
    #[test]
    fn recorder_helper() {
        let Some(pidfile) = std::env::var_os(HELPER_ENV) else {
            return;
        };
        let c = Child::spawn(&argv(&["sleep", "60"]), &[]).unwrap();
        std::fs::write(pidfile, c.pid().to_string()).unwrap();
        std::thread::sleep(Duration::from_secs(60));
    }

    #[test]
    fn the_command_dies_when_its_recorder_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut recorder = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child::tests::recorder_helper", "--nocapture"])
            .env(HELPER_ENV, &pidfile)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let pid = loop {
            if let Some(p) = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                break p;
            }
            assert!(
                Instant::now() < deadline && recorder.try_wait().unwrap().is_none(),
                "the recorder never started its command"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(alive(pid), "the command {pid} is not running");
        recorder.kill().unwrap();
        recorder.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(pid) {
            assert!(
                Instant::now() < deadline,
                "the command {pid} outlived its killed recorder"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether `pid` is a live process (not a zombie awaiting its reaper).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => !matches!(
                s.rsplit_once(')')
                    .and_then(|(_, r)| r.trim_start().chars().next()),
                Some('Z' | 'X')
            ),
            Err(_) => false,
        }
    }
}
