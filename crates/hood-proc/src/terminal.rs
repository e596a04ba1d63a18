//! The terminal a recorder reads single keys from.

use rustix::termios::{
    tcgetattr, tcsetattr, LocalModes, OptionalActions, SpecialCodeIndex, Termios,
};

/// Standard input switched to non-canonical, no-echo mode (keys arrive one at a time, output
/// processing untouched); the settings are restored when this is dropped.
pub struct Cbreak {
    saved: Termios,
}

impl Cbreak {
    /// Switch standard input's terminal; `None` when it is not a terminal or refuses.
    pub fn stdin() -> Option<Cbreak> {
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok()?;
        let mut t = saved.clone();
        t.local_modes.remove(LocalModes::ICANON | LocalModes::ECHO);
        t.special_codes[SpecialCodeIndex::VMIN] = 1;
        t.special_codes[SpecialCodeIndex::VTIME] = 0;
        tcsetattr(&stdin, OptionalActions::Now, &t).ok()?;
        Some(Cbreak { saved })
    }
}

impl Drop for Cbreak {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.saved);
    }
}
