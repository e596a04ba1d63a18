//! Run control of a recording started from a shell: Ctrl-C / SIGTERM (first finalizes, second
//! aborts), SIGUSR1 (pause/resume) and, when stdin is a terminal, the keys `a` (pause/resume),
//! `p` (print the current top functions) and `q` (stop and write).

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

use hood_proc::signal::{StopFlags, Toggles};
use hood_proc::terminal::Cbreak;

use crate::{Control, RecordError, Request};

/// Signal flags and the key reader.
pub struct Interactive<'a> {
    stop: Arc<AtomicBool>,
    toggles: Toggles,
    keys: Option<Receiver<u8>>,
    /// Whether the keys were announced (at the first look, once sampling runs).
    announced: bool,
    _tty: Option<Cbreak>,
    say: Box<dyn FnMut(&str) + 'a>,
    print_top: Box<dyn FnMut(&Path) + 'a>,
}

impl<'a> Interactive<'a> {
    /// Catch SIGINT/SIGTERM/SIGUSR1 (once per process); read keys when `keys` and stdin is a
    /// terminal. The keys are announced through `say`; the `p` key calls `print_top` with the
    /// recording flushed so far.
    pub fn install(
        keys: bool,
        say: impl FnMut(&str) + 'a,
        print_top: impl FnMut(&Path) + 'a,
    ) -> Result<Interactive<'a>, RecordError> {
        let StopFlags { stop, toggles } = StopFlags::install()?;
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
            stop,
            toggles,
            keys,
            announced: false,
            _tty: tty,
            say: Box::new(say),
            print_top: Box::new(print_top),
        })
    }
}

impl Control for Interactive<'_> {
    fn poll(&mut self) -> Vec<Request> {
        let mut out = Vec::new();
        if self.stop.load(Ordering::SeqCst) {
            out.push(Request::Stop);
        }
        for _ in 0..self.toggles.take() {
            out.push(Request::TogglePause);
        }
        if let Some(rx) = &self.keys {
            if !self.announced {
                self.announced = true;
                (self.say)("recording; keys: a = pause/resume, p = print top functions, q = stop");
            }
            while let Ok(k) = rx.try_recv() {
                match k {
                    b'a' | b'A' => out.push(Request::TogglePause),
                    b'p' | b'P' => out.push(Request::PrintTop),
                    b'q' | b'Q' => out.push(Request::Stop),
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
