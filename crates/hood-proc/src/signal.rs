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

/// The one way hood's recorders catch signals, and the [`Steer`] of each: every stop signal
/// caught is a [`Request::Stop`] naming it, every SIGUSR1 (where caught) a
/// [`Request::TogglePause`]. What is caught, and what a stop signal does besides, is chosen
/// at install, by the two kinds of recorder:
///
/// - [`Signals::forwarding`], for the recorders that start a command (`calls run`, `trace
///   record`, `--probe`): Ctrl-C, SIGTERM and SIGHUP do not kill the recorder (it would leave
///   no file behind); each is passed on to the command given to [`Steer::poll`], and the
///   recorder waits for the command to end and finishes as after a normal exit. A signal the
///   kernel sent to the whole process group (Ctrl-C or a hangup on the terminal) has reached
///   the command already and is not sent twice.
/// - [`Signals::recording`], for `hood record` (through [`Interactive`], which adds the
///   terminal's keys): SIGINT and SIGTERM stop and write the file, nothing is passed on (a
///   command started gets Ctrl-C from the terminal, and is waited for), and a second one while
///   the first is being handled ends the process at once with exit status 130, in the signal
///   handler, so a finish that hangs can still be cut short. SIGUSR1 pauses or resumes, each
///   one counted (two between two looks are a pause and a resume). SIGHUP is not caught: a
///   hangup ends `hood record` as it ends other programs (the file is left as a killed
///   recorder's).
///
/// [`Interactive`]: crate::steer::Interactive
pub struct Signals {
    /// The stop signals, with their senders' `si_code`.
    stops: SignalsInfo<WithRawSiginfo>,
    /// Pass each stop signal on to the command.
    forward: bool,
    /// The SIGUSR1s, when caught.
    toggles: Option<Toggles>,
}

impl Signals {
    /// Catch SIGINT, SIGTERM and SIGHUP from now on, to pass them on to a command (see
    /// [`Signals`]): the command gets the default dispositions back at its exec, or the
    /// ignored ones ignored again. Install before starting the command, so no signal in
    /// between is lost.
    pub fn forwarding() -> Result<Signals, ProcError> {
        note_ignored(&STOP_SIGNALS);
        Ok(Signals {
            stops: SignalsInfo::<WithRawSiginfo>::new(STOP_SIGNALS)
                .map_err(registering("catching SIGINT/SIGTERM/SIGHUP"))?,
            forward: true,
            toggles: None,
        })
    }

    /// Catch SIGINT and SIGTERM (a second one ends the process, exit status 130) and SIGUSR1,
    /// for `hood record` (see [`Signals`]). The handlers that abort and count SIGUSR1s are
    /// installed once per process (a recorder started again does not pile them up); the
    /// SIGUSR1s left from an earlier recording are dropped.
    pub fn recording() -> Result<Signals, ProcError> {
        const STOPS: [i32; 2] = [SIGINT, SIGTERM];
        note_ignored(&STOPS);
        static ONCE: OnceLock<Toggles> = OnceLock::new();
        let toggles = match ONCE.get() {
            Some(t) => t.clone(),
            None => {
                let seen = Arc::new(AtomicBool::new(false));
                for sig in STOPS {
                    // Registered first, so it sees the flag before this signal sets it.
                    signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&seen))
                        .map_err(registering("catching SIGINT/SIGTERM"))?;
                    signal_hook::flag::register(sig, Arc::clone(&seen))
                        .map_err(registering("catching SIGINT/SIGTERM"))?;
                }
                let (reader, writer) = std::os::unix::net::UnixStream::pair()
                    .map_err(registering("creating a socket pair for SIGUSR1"))?;
                reader
                    .set_nonblocking(true)
                    .map_err(registering("creating a socket pair for SIGUSR1"))?;
                signal_hook::low_level::pipe::register(SIGUSR1, writer)
                    .map_err(registering("catching SIGUSR1"))?;
                ONCE.get_or_init(|| Toggles(Arc::new(reader))).clone()
            }
        };
        toggles.take();
        Ok(Signals {
            stops: SignalsInfo::<WithRawSiginfo>::new(STOPS)
                .map_err(registering("catching SIGINT/SIGTERM"))?,
            forward: false,
            toggles: Some(toggles),
        })
    }
}

/// The SIGUSR1s received, one byte each on a socket the handler writes to, so two signals
/// between two looks are two requests (pause, then resume), not one.
#[derive(Debug, Clone)]
struct Toggles(Arc<std::os::unix::net::UnixStream>);

impl Toggles {
    /// How many SIGUSR1s arrived since the last call.
    fn take(&self) -> usize {
        use std::io::Read;
        let mut n = 0;
        let mut buf = [0u8; 64];
        while let Ok(k @ 1..) = (&*self.0).read(&mut buf) {
            n += k;
        }
        n
    }
}

impl Steer for Signals {
    /// The stop signals received since the last look, each passed on to `command` when
    /// forwarding (unless the kernel sent it to the whole process group), then a pause
    /// request per SIGUSR1.
    fn poll(&mut self, command: Option<&Child>) -> Vec<Request> {
        let mut out = Vec::new();
        for info in self.stops.pending() {
            out.push(Request::Stop(StopRequest {
                signal: Some(info.si_signo),
                at: Instant::now(),
            }));
            if !self.forward || info.si_code == libc::SI_KERNEL {
                continue;
            }
            if let (Some(c), Some(sig)) = (command, Signal::from_named_raw(info.si_signo)) {
                let _ = c.signal(sig);
            }
        }
        if let Some(t) = &self.toggles {
            out.extend(std::iter::repeat_n(Request::TogglePause, t.take()));
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
        let mut signals = Signals::recording().unwrap();
        let toggles = |s: &mut Signals| {
            s.poll(None)
                .iter()
                .filter(|r| **r == Request::TogglePause)
                .count()
        };
        let before = toggles(&mut signals);
        let me = rustix::process::getpid();
        for _ in 0..2 {
            rustix::process::kill_process(me, Signal::USR1).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let two = toggles(&mut signals);
        println!("toggles: {before} {two} {}", toggles(&mut signals));
    }

    /// `hood record`'s signals: a SIGINT is a stop request naming it, reported once and not
    /// passed on; a second one ends the process at once with exit status 130, in the handler
    /// (nothing looks at the requests any more). Run in a process of its own, since it
    /// signals itself and is ended by it.
    #[test]
    fn a_recording_stops_on_the_first_sigint_and_aborts_on_the_second() {
        const INNER: &str = "HOOD_PROC_TEST_INNER";
        const NAME: &str = "a_recording_stops_on_the_first_sigint_and_aborts_on_the_second";
        if std::env::var(INNER).is_err() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", &format!("signal::tests::{NAME}"), "--nocapture"])
                .env(INNER, NAME)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(130), "{text}");
            assert!(text.contains("first: SIGINT, once"), "{text}");
            assert!(!text.contains("still alive"), "{text}");
            return;
        }
        let mut signals = Signals::recording().unwrap();
        let mut steering = Steering::new(&mut signals);
        let me = rustix::process::getpid();
        rustix::process::kill_process(me, Signal::INT).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let first = steering.look(None);
        let again = steering.look(None);
        assert!(matches!(first[..], [Request::Stop(_)]), "{first:?}");
        assert!(again.is_empty(), "{again:?}");
        let stop = steering.stop().unwrap();
        println!("first: {}, once", stop.words());
        rustix::process::kill_process(me, Signal::INT).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        println!("still alive");
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
        let mut fwd = Signals::forwarding().unwrap();
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
        let mut fwd = Signals::forwarding().unwrap();
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
