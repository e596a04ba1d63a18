//! One way to steer a recorder. Every recorder (`hood record`, `hood trace record`, `hood calls
//! run`, the uprobe session of `--probe`) takes a [`Steer`] and looks at it once a round; what
//! it may be asked is a [`Request`]. The implementations:
//!
//! - [`Signals`], the one way signals are caught: [`Signals::forwarding`] (SIGINT, SIGTERM
//!   and SIGHUP, passed on to the command the recorder started: `calls run`, `trace record`,
//!   `--probe`) or [`Signals::recording`] (`hood record`'s Ctrl-C/SIGTERM, a second one
//!   aborting, and SIGUSR1);
//! - [`Interactive`]: `hood record`'s [`Signals`] and the keys of a recording started from a
//!   shell;
//! - [`StopFlag`]: a flag another thread sets (a server's shutdown);
//! - [`NoSteer`]: nothing (the run ends by itself).
//!
//! [`Steering`] is the recorders' side: it remembers the first stop request, and its
//! [`Steering::watch`] is the one loop of a recorder that started a command (rounds until the
//! command ends or the round says stop).

use std::io::{IsTerminal, Read};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::child::{Child, Exit};
use crate::signal::Signals;
use crate::terminal::Cbreak;
use crate::ProcError;

/// How long a recorder that started a command records on after a stop request, while the
/// command (which got the signal) finishes: after that the recording is finished and nothing
/// more is recorded, even if the command ignores the signal and runs on.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// A stop request: when it came, and the signal that made it, if a signal did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopRequest {
    /// The stop signal (SIGINT, SIGTERM, SIGHUP); `None` for a key, a flag or `hood stop`.
    pub signal: Option<i32>,
    /// When it was seen.
    pub at: Instant,
}

impl StopRequest {
    /// The signal's name, or `the stop request`.
    pub fn words(&self) -> String {
        match self.signal {
            Some(s) => crate::signal::name(s),
            None => "the stop request".into(),
        }
    }
}

/// What the caller asked a running recorder since the last look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Stop and write the file. A steer may say it at every look once asked; the recorder
    /// goes by the first.
    Stop(StopRequest),
    /// Pause sampling, or resume it.
    TogglePause,
    /// Print the top functions so far.
    PrintTop,
}

impl Request {
    /// A stop request made now, by no signal (a key, a flag).
    pub fn stop() -> Request {
        Request::Stop(StopRequest {
            signal: None,
            at: Instant::now(),
        })
    }
}

/// How the caller steers a running recorder: looked at once a round.
pub trait Steer {
    /// The requests since the last look. `command`: the command the recorder started, while
    /// it is unreaped (a steer that forwards stop signals passes them on to it; its pid names
    /// no other process then).
    fn poll(&mut self, command: Option<&Child>) -> Vec<Request>;

    /// Show the top functions of the recording so far, flushed to `path` (after
    /// [`Request::PrintTop`]).
    fn print_top(&mut self, _path: &Path) {}
}

/// No requests: the recording ends by its duration, or when its processes do.
pub struct NoSteer;

impl Steer for NoSteer {
    fn poll(&mut self, _command: Option<&Child>) -> Vec<Request> {
        Vec::new()
    }
}

/// A stop flag (a server's SIGTERM, say): set means [`Request::Stop`].
pub struct StopFlag<'a>(pub &'a AtomicBool);

impl Steer for StopFlag<'_> {
    fn poll(&mut self, _command: Option<&Child>) -> Vec<Request> {
        match self.0.load(Ordering::Relaxed) {
            true => vec![Request::stop()],
            false => Vec::new(),
        }
    }
}

/// A recorder's side of its [`Steer`]: the requests of each look, the first stop request
/// remembered.
pub struct Steering<'a> {
    steer: &'a mut dyn Steer,
    stop: Option<StopRequest>,
}

impl<'a> Steering<'a> {
    /// Steered by `steer`.
    pub fn new(steer: &'a mut dyn Steer) -> Steering<'a> {
        Steering { steer, stop: None }
    }

    /// Look: the requests since the last look (see [`Steer::poll`]).
    pub fn look(&mut self, command: Option<&Child>) -> Vec<Request> {
        let requests = self.steer.poll(command);
        for r in &requests {
            if let Request::Stop(s) = r {
                self.stop.get_or_insert(*s);
            }
        }
        requests
    }

    /// The first stop request so far, if any.
    pub fn stop(&self) -> Option<StopRequest> {
        self.stop
    }

    /// The first stop request, when [`STOP_GRACE`] has passed since it came.
    pub fn overdue(&self) -> Option<StopRequest> {
        self.stop.filter(|s| s.at.elapsed() >= STOP_GRACE)
    }

    /// See [`Steer::print_top`].
    pub fn print_top(&mut self, path: &Path) {
        self.steer.print_top(path)
    }

    /// The one loop of a recorder that started a command: look at the steer (passing stop
    /// signals on to `child`), call `round` with the first stop request so far, then look at
    /// the command. `round` does the recorder's work of the moment and answers how long to
    /// sleep before the next look, or that the recorder stops. Returns how the command
    /// ended, or `None` when `round` stopped first (the command still runs). When the command
    /// has ended, the steer is looked at once more (passing nothing on): a Ctrl-C that ended
    /// the command while `round` ran reached the recorder too, and is its stop request.
    pub fn watch<E: From<ProcError>>(
        &mut self,
        child: &mut Child,
        round: &mut dyn FnMut(Option<StopRequest>) -> Result<ControlFlow<(), Duration>, E>,
    ) -> Result<Option<Exit>, E> {
        loop {
            self.look(Some(child));
            let next = round(self.stop)?;
            if let Some(e) = child.try_wait()? {
                self.look(None);
                return Ok(Some(e));
            }
            match next {
                ControlFlow::Break(()) => return Ok(None),
                ControlFlow::Continue(d) => std::thread::sleep(d),
            }
        }
    }

    /// Wait for `child` without recording, still passing stop signals on, looking every
    /// 20 ms.
    pub fn wait(&mut self, child: &mut Child) -> Result<Exit, ProcError> {
        loop {
            // The round never stops the watch: `None` does not happen.
            let exit = self.watch(child, &mut |_| {
                Ok::<_, ProcError>(ControlFlow::Continue(Duration::from_millis(20)))
            })?;
            if let Some(e) = exit {
                return Ok(e);
            }
        }
    }
}

/// Run control of a recording started from a shell: its [`Signals::recording`] (Ctrl-C /
/// SIGTERM: the first finalizes, a second aborts; SIGUSR1: pause/resume) and, when stdin is a
/// terminal, the keys `a` (pause/resume), `p` (print the current top functions) and `q` (stop
/// and write).
pub struct Interactive<'a> {
    signals: Signals,
    keys: Option<Receiver<u8>>,
    /// Whether the keys were announced (at the first look, once sampling runs).
    announced: bool,
    _tty: Option<Cbreak>,
    say: Box<dyn FnMut(&str) + 'a>,
    print_top: Box<dyn FnMut(&Path) + 'a>,
}

impl<'a> Interactive<'a> {
    /// Catch SIGINT/SIGTERM/SIGUSR1 ([`Signals::recording`]); read keys when `keys` and stdin is a
    /// terminal. The keys are announced through `say`; the `p` key calls `print_top` with the
    /// recording flushed so far.
    pub fn install(
        keys: bool,
        say: impl FnMut(&str) + 'a,
        print_top: impl FnMut(&Path) + 'a,
    ) -> Result<Interactive<'a>, ProcError> {
        let signals = Signals::recording()?;
        let (keys, tty) = if keys && std::io::stdin().is_terminal() {
            let tty = Cbreak::stdin();
            let (tx, rx) = channel();
            std::thread::spawn(move || {
                let mut b = [0u8; 1];
                let mut stdin = std::io::stdin();
                while let Ok(1) = stdin.read(&mut b) {
                    if tx.send(b[0]).is_err() {
                        break;
                    }
                }
            });
            (Some(rx), tty)
        } else {
            (None, None)
        };
        Ok(Interactive {
            signals,
            keys,
            announced: false,
            _tty: tty,
            say: Box::new(say),
            print_top: Box::new(print_top),
        })
    }
}

impl Steer for Interactive<'_> {
    fn poll(&mut self, command: Option<&Child>) -> Vec<Request> {
        let mut out = self.signals.poll(command);
        if let Some(rx) = &self.keys {
            if !self.announced {
                self.announced = true;
                (self.say)("recording; keys: a = pause/resume, p = print top functions, q = stop");
            }
            while let Ok(k) = rx.try_recv() {
                match k {
                    b'a' | b'A' => out.push(Request::TogglePause),
                    b'p' | b'P' => out.push(Request::PrintTop),
                    b'q' | b'Q' => out.push(Request::stop()),
                    _ => {}
                }
            }
        }
        out
    }

    fn print_top(&mut self, path: &Path) {
        (self.print_top)(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flag set between two looks is a stop request; the first one is remembered, with
    /// its time, and is overdue only after the grace.
    #[test]
    fn the_first_stop_request_is_remembered() {
        let flag = AtomicBool::new(false);
        let mut f = StopFlag(&flag);
        let mut s = Steering::new(&mut f);
        assert!(s.look(None).is_empty());
        assert_eq!(s.stop(), None);
        flag.store(true, Ordering::Relaxed);
        assert!(matches!(s.look(None)[..], [Request::Stop(_)]));
        let first = s.stop().unwrap();
        s.look(None);
        assert_eq!(s.stop(), Some(first));
        assert_eq!(first.words(), "the stop request");
        assert_eq!(s.overdue(), None);
    }

    /// No steer: a watch ends when the command does.
    #[test]
    fn a_watch_ends_with_the_command() {
        let mut none = NoSteer;
        let mut s = Steering::new(&mut none);
        let mut child = Child::spawn(&["sh", "-c", "exit 3"], &[]).unwrap();
        let mut rounds = 0;
        let exit = s
            .watch(&mut child, &mut |stop| {
                assert_eq!(stop, None);
                rounds += 1;
                Ok::<_, ProcError>(ControlFlow::Continue(Duration::from_millis(5)))
            })
            .unwrap();
        assert_eq!(exit, Some(Exit::Code(3)));
        assert!(rounds >= 1);
    }

    /// A stop that comes while a round runs and the command ends meanwhile (a Ctrl-C to the
    /// process group ends both) is still the recorder's stop request when the watch returns.
    #[test]
    fn a_stop_that_came_with_the_commands_end_is_remembered() {
        let flag = AtomicBool::new(false);
        let mut f = StopFlag(&flag);
        let mut s = Steering::new(&mut f);
        let mut child = Child::spawn(&["sh", "-c", "exit 0"], &[]).unwrap();
        let exit = s
            .watch(&mut child, &mut |_| {
                // The command ends and the stop comes while the recorder works.
                std::thread::sleep(Duration::from_millis(200));
                flag.store(true, Ordering::Relaxed);
                Ok::<_, ProcError>(ControlFlow::Continue(Duration::from_millis(5)))
            })
            .unwrap();
        assert_eq!(exit, Some(Exit::Code(0)));
        assert!(s.stop().is_some(), "the stop request was lost");
    }
}
