//! Run control while recording: Ctrl-C / SIGTERM (first finalizes, second aborts), SIGUSR1
//! (pause/resume) and, when stdin is a terminal, the keys `a` (pause/resume), `p` (print the
//! current top functions) and `q` (stop and write).

use std::io::{IsTerminal, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;

use hood_proc::terminal::Cbreak;

/// What the user asked for since the last look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Stop and write the file.
    Stop,
    /// Toggle sampling.
    TogglePause,
    /// Print the top functions so far.
    PrintTop,
}

/// Signal flags and the key reader.
pub struct Control {
    stop: Arc<AtomicBool>,
    toggle: Arc<AtomicBool>,
    keys: Option<Receiver<u8>>,
    _tty: Option<Cbreak>,
}

impl Control {
    /// Catch SIGINT/SIGTERM/SIGUSR1 (once per process: a server that records many times does
    /// not pile handlers up); read keys when `keys` and stdin is a terminal.
    pub fn install(keys: bool) -> anyhow::Result<Control> {
        let hood_proc::signal::StopFlags { stop, toggle } =
            hood_proc::signal::StopFlags::install()?;
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
            toggle,
            keys,
            _tty: tty,
        })
    }

    /// Whether keys are being read.
    pub fn reads_keys(&self) -> bool {
        self.keys.is_some()
    }

    /// Pending requests.
    pub fn poll(&self) -> Vec<Request> {
        let mut out = Vec::new();
        if self.stop.load(Ordering::SeqCst) {
            out.push(Request::Stop);
        }
        if self.toggle.swap(false, Ordering::SeqCst) {
            out.push(Request::TogglePause);
        }
        if let Some(rx) = &self.keys {
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
}
