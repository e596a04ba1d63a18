//! Signals of the recorders: the stop and pause requests a recorder honours, and the stop
//! signals a recorder passes on to the command it started.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use rustix::process::Signal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::exfiltrator::WithRawSiginfo;
use signal_hook::iterator::SignalsInfo;

use crate::child::Child;
use crate::steer::{Request, Steer, StopRequest};
use crate::ProcError;

fn registering(what: &'static str) -> impl FnOnce(std::io::Error) -> ProcError {
    move |source| ProcError::Sys {
        what: what.into(),
        source,
    }
}

/// What a recorder's SIGINT/SIGTERM and SIGUSR1 ask for.
#[derive(Debug, Clone)]
pub struct StopFlags {
    /// Set by SIGINT or SIGTERM: finish and write. A second one while the first is being
    /// handled ends the process at once (exit status 130).
    pub stop: Arc<AtomicBool>,
    /// Counts SIGUSR1s: each one pauses or resumes.
    pub toggles: Toggles,
}

/// The SIGUSR1s received, one byte each on a socket the handler writes to, so two signals
/// between two looks are two requests (pause, then resume), not one.
#[derive(Debug, Clone)]
pub struct Toggles(Arc<std::os::unix::net::UnixStream>);

impl Toggles {
    /// How many SIGUSR1s arrived since the last call.
    pub fn take(&self) -> usize {
        use std::io::Read;
        let mut n = 0;
        let mut buf = [0u8; 64];
        while let Ok(k @ 1..) = (&*self.0).read(&mut buf) {
            n += k;
        }
        n
    }
}

impl StopFlags {
    /// Catch SIGINT, SIGTERM and SIGUSR1; the handlers are installed once per process (a
    /// server that records many times does not pile them up) and every call returns the same
    /// flags, with pause requests left from an earlier recording dropped.
    pub fn install() -> Result<StopFlags, ProcError> {
        static FLAGS: OnceLock<StopFlags> = OnceLock::new();
        let flags = match FLAGS.get() {
            Some(f) => f.clone(),
            None => {
                note_ignored(&[SIGINT, SIGTERM]);
                let stop = Arc::new(AtomicBool::new(false));
                for sig in [SIGINT, SIGTERM] {
                    // Registered first, so it sees the flag before this signal sets it.
                    signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))
                        .map_err(registering("catching SIGINT/SIGTERM"))?;
                    signal_hook::flag::register(sig, Arc::clone(&stop))
                        .map_err(registering("catching SIGINT/SIGTERM"))?;
                }
                let (reader, writer) = std::os::unix::net::UnixStream::pair()
                    .map_err(registering("creating a socket pair for SIGUSR1"))?;
                reader
                    .set_nonblocking(true)
                    .map_err(registering("creating a socket pair for SIGUSR1"))?;
                signal_hook::low_level::pipe::register(SIGUSR1, writer)
                    .map_err(registering("catching SIGUSR1"))?;
                let toggles = Toggles(Arc::new(reader));
                FLAGS.get_or_init(|| StopFlags { stop, toggles }).clone()
            }
        };
        flags.toggles.take();
        Ok(flags)
    }
}

/// The signals that stop a command: SIGINT, SIGTERM and SIGHUP.
const STOP_SIGNALS: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// The stop signals that were ignored when the recorder started (`nohup`, a background job of
/// a script), one bit per signal number: a recorder still catches them, but the command it
/// starts gets them ignored again, as it would have without hood.
static IGNORED_AT_START: AtomicU64 = AtomicU64::new(0);

/// Remember which of `sigs` are ignored now, before a handler replaces that (the first look
/// wins: later ones would see hood's own handlers).
fn note_ignored(sigs: &[i32]) {
    static LOOKED: AtomicU64 = AtomicU64::new(0);
    for &sig in sigs {
        let bit = 1u64 << sig;
        if LOOKED.fetch_or(bit, Ordering::Relaxed) & bit != 0 {
            continue;
        }
        // SAFETY: sigaction with a null new action only reads this process's disposition of
        // `sig` into `old`, a zeroed local of the right type.
        let ignored = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
        };
        if ignored {
            IGNORED_AT_START.fetch_or(bit, Ordering::Relaxed);
        }
    }
}

/// The stop signals the started command gets ignored (see [`IGNORED_AT_START`]).
pub(crate) fn ignored_at_start() -> Vec<i32> {
    let mask = IGNORED_AT_START.load(Ordering::Relaxed);
    STOP_SIGNALS
        .into_iter()
        .filter(|&s| mask & (1u64 << s) != 0)
        .collect()
}

/// Ctrl-C, SIGTERM and SIGHUP while a recorder waits for its command: the recorder does not
/// die (it would leave no file behind); it passes the signal on to the command, waits for it
/// to end, and finishes as after a normal exit. A signal the kernel sent to the whole process
/// group (Ctrl-C or a hangup on the terminal) has reached the command already and is not sent
/// twice. This is the [`Steer`] of every recorder that starts a command (`calls run`, `trace
/// record`, `--probe`): each stop signal is a [`Request::Stop`], passed on to the command
/// given to [`Steer::poll`].
pub struct Forwarder {
    signals: SignalsInfo<WithRawSiginfo>,
}

impl Forwarder {
    /// Catch the stop signals from now on (the command gets the default dispositions back at
    /// its exec, or the ignored ones ignored again). Install before starting the command, so
    /// no signal in between is lost.
    pub fn install() -> Result<Forwarder, ProcError> {
        note_ignored(&STOP_SIGNALS);
        Ok(Forwarder {
            signals: SignalsInfo::<WithRawSiginfo>::new(STOP_SIGNALS)
                .map_err(registering("catching SIGINT/SIGTERM/SIGHUP"))?,
        })
    }
}

impl Steer for Forwarder {
    /// The stop signals received since the last look, each passed on to `command` (unless
    /// the kernel sent it to the whole process group).
    fn poll(&mut self, command: Option<&Child>) -> Vec<Request> {
        let mut out = Vec::new();
        for info in self.signals.pending() {
            out.push(Request::Stop(StopRequest {
                signal: Some(info.si_signo),
                at: Instant::now(),
            }));
            if info.si_code == libc::SI_KERNEL {
                continue;
            }
            if let (Some(c), Some(sig)) = (command, Signal::from_named_raw(info.si_signo)) {
                let _ = c.signal(sig);
            }
        }
        out
    }
}

/// `SIGINT` etc.
pub fn name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        n => format!("signal {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::child::Exit;
    use crate::steer::Steering;

    /// Unless this is that process (`HOOD_PROC_TEST_INNER` names the test: then `None`), run
    /// the test `name` again in a process of its own (this test binary), since it signals
    /// itself; its output, once it passed.
    fn in_own_process(name: &str) -> Option<String> {
        const INNER: &str = "HOOD_PROC_TEST_INNER";
        if std::env::var(INNER).is_ok_and(|v| v == name) {
            return None;
        }
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &format!("signal::tests::{name}"), "--nocapture"])
            .env(INNER, name)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        Some(text)
    }

    /// Two SIGUSR1s between two looks are two requests. Run in a process of its own (this
    /// test binary again), since it signals itself.
    #[test]
    fn every_sigusr1_counts() {
        if let Some(text) = in_own_process("every_sigusr1_counts") {
            assert!(text.contains("toggles: 0 2 0"), "{text}");
            return;
        }
        let flags = StopFlags::install().unwrap();
        let before = flags.toggles.take();
        let me = rustix::process::getpid();
        for _ in 0..2 {
            rustix::process::kill_process(me, Signal::USR1).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let two = flags.toggles.take();
        println!("toggles: {before} {two} {}", flags.toggles.take());
    }

    #[test]
    fn names() {
        assert_eq!(name(libc::SIGINT), "SIGINT");
        assert_eq!(name(64), "signal 64");
    }

    /// A stop signal ignored when the recorder started (`nohup`) stays ignored in its command,
    /// though the recorder catches it; the others get their default back. Run in a process of
    /// its own, since it changes its dispositions.
    #[test]
    fn an_ignored_stop_signal_stays_ignored_in_the_command() {
        if let Some(text) = in_own_process("an_ignored_stop_signal_stays_ignored_in_the_command") {
            assert!(
                text.contains("ignored in the command: SIGHUP only"),
                "{text}"
            );
            return;
        }
        // SAFETY: setting this (test) process's disposition of SIGHUP to ignored.
        unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
        let mut fwd = Forwarder::install().unwrap();
        let mut steering = Steering::new(&mut fwd);
        let dir = std::env::temp_dir().join(format!("hood-proc-ign-{}", std::process::id()));
        let mut child = Child::spawn(
            &[
                "sh",
                "-c",
                &format!("grep SigIgn /proc/self/status > {}", dir.display()),
            ],
            &[],
        )
        .unwrap();
        assert!(steering.wait(&mut child).unwrap().success());
        let text = std::fs::read_to_string(&dir).unwrap();
        let _ = std::fs::remove_file(&dir);
        let mask = u64::from_str_radix(text.split(':').nth(1).unwrap().trim(), 16).unwrap();
        let bit = |s: i32| mask & (1 << (s - 1)) != 0;
        assert!(bit(libc::SIGHUP), "{text}");
        assert!(!bit(libc::SIGINT) && !bit(libc::SIGTERM), "{text}");
        // The recorder itself still catches it: a SIGHUP sent now is seen, not ignored.
        rustix::process::kill_process(rustix::process::getpid(), Signal::HUP).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        steering.look(None);
        assert_eq!(steering.stop().and_then(|s| s.signal), Some(libc::SIGHUP));
        println!("ignored in the command: SIGHUP only");
    }

    /// A SIGTERM sent to the recorder (by a process, not the kernel) reaches its command, and
    /// the recorder lives on and sees which signal came first. Run in a process of its own
    /// (this test binary again), since it signals itself.
    #[test]
    fn a_stop_signal_is_forwarded_and_remembered() {
        if let Some(text) = in_own_process("a_stop_signal_is_forwarded_and_remembered") {
            assert!(text.contains("forwarded: SIGTERM"), "{text}");
            return;
        }
        let mut fwd = Forwarder::install().unwrap();
        let mut steering = Steering::new(&mut fwd);
        let mut child = Child::spawn(&["sleep", "30"], &[]).unwrap();
        rustix::process::kill_process(rustix::process::getpid(), Signal::TERM).unwrap();
        let exit = steering.wait(&mut child).unwrap();
        assert_eq!(exit, Exit::Signal(libc::SIGTERM));
        let first = steering.stop().unwrap();
        assert_eq!(first.signal, Some(libc::SIGTERM));
        println!("forwarded: {}", first.words());
    }
}
