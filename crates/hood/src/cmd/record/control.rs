//! Run control while recording: Ctrl-C / SIGTERM (first finalizes, second aborts), SIGUSR1
//! (pause/resume) and, when stdin is a terminal, the keys `a` (pause/resume), `p` (print the
//! current top functions) and `q` (stop and write).

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

use hood_proc::signal::{StopFlags, Toggles};
use hood_proc::terminal::Cbreak;
use hood_record::Request;

/// Signal flags and the key reader.
pub struct Control {
    stop: Arc<AtomicBool>,
    toggles: Toggles,
    keys: Option<Receiver<u8>>,
    /// Whether the keys were announced (at the first look, once sampling runs).
    announced: bool,
    _tty: Option<Cbreak>,
}

impl Control {
    /// Catch SIGINT/SIGTERM/SIGUSR1 (once per process); read keys when `keys` and stdin is a
    /// terminal.
    pub fn install(keys: bool) -> anyhow::Result<Control> {
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
        Ok(Control {
            stop,
            toggles,
            keys,
            announced: false,
            _tty: tty,
        })
    }
}

impl hood_record::Control for Control {
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
                eprintln!(
                    "hood: recording; keys: a = pause/resume, p = print top functions, q = stop"
                );
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
        if let Err(e) = crate::cmd::report::print_live_top(path, 15) {
            eprintln!("hood: cannot read the recording so far: {e:#}");
        }
    }
}
