//! UI state and key handling.

use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::Duration;

use hood_monitor::{arrange, scan_needs, Mode, Recorded, ScanOptions, Seek, SortKey, SystemView};
use hood_report::monitor::columns_for;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::DefaultTerminal;

use crate::{TuiConfig, TuiError};

/// The state of the `hood top` screen.
#[derive(Debug)]
pub struct App {
    /// Configuration and current mode/sort/filter.
    pub cfg: TuiConfig,
    /// Latest view as received (unsorted).
    pub raw: Option<SystemView>,
    /// Latest view sorted and filtered for display.
    pub shown: Option<SystemView>,
    /// Frozen display (space).
    pub paused: bool,
    /// Help overlay (`?`).
    pub help: bool,
    /// Filter being typed (`/`), if any.
    pub editing: Option<String>,
    /// First body row shown.
    pub scroll: usize,
    /// Set when the user quits.
    pub quit: bool,
    /// Replaying a store (`hood top --replay`): what the status line says.
    pub replay: Option<ReplayState>,
    /// The last column shows the full command line instead of the name (`c`).
    pub command: bool,
}

/// The state of a replay.
#[derive(Debug, Default)]
pub struct ReplayState {
    /// Time being typed after `g`.
    pub jumping: Option<String>,
    /// Where the user asked to go, not yet read.
    pub seek: Option<Seek>,
    /// The last error or warning, shown in the status line until the next move.
    pub note: Option<String>,
    /// Time zone offset times are read in.
    pub utc_offset_s: i32,
}

impl App {
    /// A fresh UI state.
    pub fn new(cfg: TuiConfig) -> Self {
        App {
            cfg,
            raw: None,
            shown: None,
            paused: false,
            help: false,
            editing: None,
            scroll: 0,
            quit: false,
            replay: None,
            command: false,
        }
    }

    /// Keys of a replay: move in time, or type a time after `g`. Whether the key was one.
    fn on_replay_key(&mut self, k: &KeyEvent) -> bool {
        let Some(r) = self.replay.as_mut() else {
            return false;
        };
        if let Some(buf) = r.jumping.as_mut() {
            match k.code {
                KeyCode::Enter => {
                    let text = r.jumping.take().unwrap_or_default();
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_secs() as i64)
                        .unwrap_or(0);
                    match hood_monitor::when::parse_time(&text, now, r.utc_offset_s) {
                        Ok(t) => r.seek = Some(Seek::At(t)),
                        Err(e) => r.note = Some(e),
                    }
                }
                KeyCode::Esc => r.jumping = None,
                KeyCode::Backspace => {
                    buf.pop();
                }
                KeyCode::Char(c) => buf.push(c),
                _ => {}
            }
            return true;
        }
        if self.help || self.editing.is_some() {
            return false;
        }
        let seek = match k.code {
            KeyCode::Left | KeyCode::Char('[') => Seek::Step(-1),
            KeyCode::Right | KeyCode::Char(']') => Seek::Step(1),
            KeyCode::Char('{') => Seek::Step(-60),
            KeyCode::Char('}') => Seek::Step(60),
            KeyCode::Char('G') | KeyCode::End => Seek::Last,
            KeyCode::Char('g') => {
                r.jumping = Some(String::new());
                return true;
            }
            _ => return false,
        };
        r.seek = Some(seek);
        true
    }

    /// What the sampler should read now.
    pub fn needs(&self) -> ScanOptions {
        ScanOptions {
            cmdline: self.command,
            ..scan_needs(self.cfg.mode, self.cfg.sort, self.cfg.irq_time)
        }
    }

    /// Re-sort and re-filter the latest view.
    pub fn rearrange(&mut self) {
        let Some(raw) = &self.raw else { return };
        let mut v = raw.clone();
        arrange(&mut v, self.cfg.sort, self.cfg.descending, &self.cfg.filter);
        self.shown = Some(v);
    }

    fn set_sort(&mut self, key: SortKey) {
        if self.cfg.sort == key {
            self.cfg.descending = !self.cfg.descending;
        } else {
            self.cfg.sort = key;
            self.cfg.descending = key.descending_by_default();
        }
    }

    fn shift_sort(&mut self, step: isize) {
        let mut keys: Vec<SortKey> = Vec::new();
        for c in columns_for(self.cfg.mode) {
            if !keys.contains(&c.sort_key()) {
                keys.push(c.sort_key());
            }
        }
        let pos = keys.iter().position(|k| *k == self.cfg.sort).unwrap_or(0) as isize;
        let n = keys.len() as isize;
        let key = keys[((pos + step) % n + n) as usize % keys.len()];
        self.cfg.sort = key;
        self.cfg.descending = key.descending_by_default();
    }

    /// Apply one key press.
    pub fn on_key(&mut self, k: KeyEvent) {
        if self.on_replay_key(&k) {
            return;
        }
        if let Some(buf) = self.editing.as_mut() {
            match k.code {
                KeyCode::Enter => {
                    self.cfg.filter = self.editing.take().unwrap_or_default();
                    self.scroll = 0;
                }
                KeyCode::Esc => {
                    self.editing = None;
                    self.cfg.filter.clear();
                }
                KeyCode::Backspace => {
                    buf.pop();
                }
                KeyCode::Char(c) => buf.push(c),
                _ => {}
            }
            self.rearrange();
            return;
        }
        if self.help && k.code != KeyCode::Char('q') {
            self.help = false;
            return;
        }
        match k.code {
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => self.quit = true,
            // Esc clears a filter first; with none it quits.
            KeyCode::Esc if !self.cfg.filter.is_empty() => self.cfg.filter.clear(),
            KeyCode::Char('q') | KeyCode::Esc => self.quit = true,
            KeyCode::Char('t') => self.cfg.mode = Mode::Tasks,
            KeyCode::Char('i') => self.cfg.mode = Mode::Ipc,
            KeyCode::Char('e') => self.cfg.mode = Mode::Exceptions,
            KeyCode::Char('H') => {
                self.cfg.mode = if self.cfg.mode == Mode::Threads {
                    Mode::Tasks
                } else {
                    Mode::Threads
                }
            }
            KeyCode::Char('<') => self.shift_sort(-1),
            KeyCode::Char('>') => self.shift_sort(1),
            KeyCode::Char('R') => self.cfg.descending = !self.cfg.descending,
            KeyCode::Char('P') => self.set_sort(SortKey::Cpu),
            KeyCode::Char('M') => self.set_sort(SortKey::Res),
            KeyCode::Char('T') => self.set_sort(SortKey::Time),
            KeyCode::Char('N') => self.set_sort(SortKey::Pid),
            KeyCode::Char('U') => self.set_sort(SortKey::User),
            KeyCode::Char('C') => self.set_sort(SortKey::Name),
            KeyCode::Char('S') => self.set_sort(SortKey::Ctx),
            KeyCode::Char('Y') => self.set_sort(SortKey::Syscalls),
            KeyCode::Char('B') => self.set_sort(SortKey::Bytes),
            KeyCode::Char('/') => self.editing = Some(self.cfg.filter.clone()),
            KeyCode::Char('c') => self.command = !self.command,
            KeyCode::Char(' ') => self.paused = !self.paused,
            KeyCode::Char('?') | KeyCode::Char('h') => self.help = true,
            KeyCode::Down | KeyCode::Char('j') => self.scroll += 1,
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown => self.scroll += 20,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(20),
            KeyCode::Home => self.scroll = 0,
            _ => {}
        }
        self.rearrange();
    }

    /// Event loop of a replay: draw, handle keys, read the interval asked for, until quit.
    pub fn run_replay<R: Recorded>(
        mut self,
        term: &mut DefaultTerminal,
        rec: &mut R,
    ) -> Result<(), TuiError> {
        while !self.quit {
            term.draw(|f| crate::draw::draw(f, &self))?;
            if event::poll(Duration::from_millis(250))? {
                if let Event::Key(k) = event::read()? {
                    if k.kind != KeyEventKind::Release {
                        self.on_key(k);
                    }
                }
            }
            let Some(r) = self.replay.as_mut() else {
                return Ok(());
            };
            if let Some(s) = r.seek.take() {
                r.note = None;
                match rec.seek(s) {
                    Ok(v) => {
                        if self.cfg.mode == Mode::Threads && v.threads.is_none() {
                            r.note = Some("the store holds processes, not threads".into());
                        }
                        self.raw = Some(v);
                    }
                    Err(e) => r.note = Some(e.to_string()),
                }
                let w = rec.warnings();
                if let Some(last) = w.last() {
                    r.note = Some(match w.len() {
                        1 => last.clone(),
                        n => format!("{last} (and {} more)", n - 1),
                    });
                }
                self.rearrange();
            }
        }
        Ok(())
    }

    /// Event loop: draw, take frames, handle keys, until quit.
    pub fn run(
        mut self,
        term: &mut DefaultTerminal,
        frames: &Receiver<SystemView>,
        needs: &Sender<ScanOptions>,
    ) -> Result<(), TuiError> {
        let mut asked = self.needs();
        let _ = needs.send(asked);
        while !self.quit {
            let mut got = false;
            loop {
                match frames.try_recv() {
                    Ok(v) => {
                        if !self.paused {
                            self.raw = Some(v);
                            got = true;
                        }
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return Ok(()),
                }
            }
            if got {
                self.rearrange();
            }
            term.draw(|f| crate::draw::draw(f, &self))?;
            if event::poll(Duration::from_millis(100))? {
                if let Event::Key(k) = event::read()? {
                    if k.kind != KeyEventKind::Release {
                        self.on_key(k);
                    }
                }
            }
            let now = self.needs();
            if now != asked {
                asked = now;
                let _ = needs.send(asked);
            }
        }
        Ok(())
    }
}
