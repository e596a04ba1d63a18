//! Run control while recording: Ctrl-C / SIGTERM (first finalizes, second aborts), SIGUSR1
//! (pause/resume) and, when stdin is a terminal, the keys `a` (pause/resume), `p` (print the
//! current top functions) and `q` (stop and write).

use std::io::{IsTerminal, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, OnceLock};

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
    _tty: Option<TtyGuard>,
}

impl Control {
    /// Install handlers (once per process: a server that records many times does not pile
    /// them up); read keys when `keys` and stdin is a terminal.
    pub fn install(keys: bool) -> anyhow::Result<Control> {
        static FLAGS: OnceLock<(Arc<AtomicBool>, Arc<AtomicBool>)> = OnceLock::new();
        let (stop, toggle) = match FLAGS.get() {
            Some(f) => f.clone(),
            None => {
                let stop = Arc::new(AtomicBool::new(false));
                let toggle = Arc::new(AtomicBool::new(false));
                for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                    // A second signal while the first is being handled exits at once (abort).
                    signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))?;
                    signal_hook::flag::register(sig, Arc::clone(&stop))?;
                }
                signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&toggle))?;
                FLAGS.get_or_init(|| (stop, toggle)).clone()
            }
        };
        // A pause request left over from an earlier recording in this process does not carry over.
        toggle.store(false, Ordering::SeqCst);
        let (keys, tty) = if keys && std::io::stdin().is_terminal() {
            let tty = TtyGuard::cbreak();
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

/// Puts the terminal in non-canonical, no-echo mode (output processing untouched) and
/// restores it when dropped.
struct TtyGuard {
    saved: libc::termios,
}

impl TtyGuard {
    fn cbreak() -> Option<TtyGuard> {
        // SAFETY: termios is plain old data; zeroed is a valid bit pattern to be overwritten.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr on fd 0 writes into our local termios.
        if unsafe { libc::tcgetattr(0, &mut t) } != 0 {
            return None;
        }
        let saved = t;
        t.c_lflag &= !(libc::ICANON | libc::ECHO);
        t.c_cc[libc::VMIN] = 1;
        t.c_cc[libc::VTIME] = 0;
        // SAFETY: tcsetattr on fd 0 with a termios derived from the current one.
        if unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) } != 0 {
            return None;
        }
        Some(TtyGuard { saved })
    }
}

impl Drop for TtyGuard {
    fn drop(&mut self) {
        // SAFETY: restoring the terminal settings read in `cbreak`.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &self.saved) };
    }
}
