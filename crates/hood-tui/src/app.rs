//! UI state and key handling.

use std::cell::Cell;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::Duration;

use hood_monitor::{arrange, scan_needs, Mode, Recorded, ScanOptions, Seek, SortKey, SystemView};
use hood_report::monitor::columns_for;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::DefaultTerminal;

use crate::{Actions, TuiConfig, TuiError};

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
    /// First body row shown (the drawing keeps the selected row in sight).
    pub scroll: Cell<usize>,
    /// The selected row of a task table (`k` and `n` act on its process).
    pub cursor: usize,
    /// The pid of the selected row, which the selection follows when the order changes.
    pub selected: Option<u32>,
    /// Body rows the last drawing had room for.
    pub room: Cell<usize>,
    /// The process tree (`F5`, or `t` in the task view) instead of the sorted list.
    pub tree: bool,
    /// A signal or nice value waiting for the user's confirmation.
    pub prompt: Option<Prompt>,
    /// What the last action did (or why it was not done), until the next key.
    pub note: Option<String>,
    /// Set when the user quits.
    pub quit: bool,
    /// Replaying a store (`hood top --replay`): what the status line says.
    pub replay: Option<ReplayState>,
    /// The last column shows the full command line instead of the name (`c`).
    pub command: bool,
}

/// What `k` or `n` is about to do, shown on the status line until confirmed or cancelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The process, as the screen showed it.
    pub pid: u32,
    /// Its start time, so a pid reused meanwhile is not hit.
    pub start_ticks: u64,
    /// Its name.
    pub name: String,
    /// A signal (`k`) or a nice value (`n`).
    pub kind: PromptKind,
    /// The number being typed (the signal or the nice value); empty: the default.
    pub typed: String,
}

/// What a [`Prompt`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// Send a signal (default SIGTERM).
    Signal,
    /// Set the nice value (default: the current one plus `step`, for F7/F8).
    Nice {
        /// The nice value shown now.
        current: i32,
        /// The proposed value.
        proposed: i32,
    },
}

/// The name of signal `n` as `kill -l` says it, for the common ones.
pub fn signal_name(n: i32) -> String {
    let s = match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        12 => "SIGUSR2",
        15 => "SIGTERM",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        _ => return format!("signal {n}"),
    };
    s.to_string()
}

impl Prompt {
    /// The signal or nice value the prompt would apply now.
    pub fn value(&self) -> Result<i32, String> {
        let typed = self.typed.trim();
        match self.kind {
            PromptKind::Signal if typed.is_empty() => Ok(15),
            PromptKind::Signal => match typed.parse::<i32>() {
                Ok(n) if (1..=64).contains(&n) => Ok(n),
                _ => Err(format!("{typed:?} is not a signal number (1-64)")),
            },
            PromptKind::Nice { proposed, .. } if typed.is_empty() => Ok(proposed),
            PromptKind::Nice { .. } => match typed.parse::<i32>() {
                Ok(n) if (-20..=19).contains(&n) => Ok(n),
                _ => Err(format!("{typed:?} is not a nice value (-20 to 19)")),
            },
        }
    }

    /// The status line while the prompt waits.
    pub fn line(&self) -> String {
        let who = format!("{} ({})", self.pid, hood_report::safe::text(&self.name));
        match (self.kind, self.value()) {
            (_, Err(e)) => format!("{e}; Backspace to correct, Esc cancels"),
            (PromptKind::Signal, Ok(n)) => format!(
                "send {} ({n}) to {who}? Enter: send, Esc: cancel, number: {}_",
                signal_name(n),
                self.typed
            ),
            (PromptKind::Nice { current, .. }, Ok(n)) => format!(
                "renice {who} from {current} to {n}? Enter: set, Esc: cancel, -20..19: {}_",
                self.typed
            ),
        }
    }
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
        let tree = cfg.tree;
        App {
            cfg,
            raw: None,
            shown: None,
            paused: false,
            help: false,
            editing: None,
            scroll: Cell::new(0),
            cursor: 0,
            selected: None,
            room: Cell::new(20),
            tree,
            prompt: None,
            note: None,
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

    /// Re-sort and re-filter the latest view (in tree order with the tree on), and keep the
    /// selection on the process it was on.
    pub fn rearrange(&mut self) {
        let Some(raw) = &self.raw else { return };
        let mut v = raw.clone();
        arrange(&mut v, self.cfg.sort, self.cfg.descending, &self.cfg.filter);
        if self.tree && matches!(self.cfg.mode, Mode::Tasks | Mode::Ipc) {
            hood_report::monitor::table::into_tree(&mut v.tasks);
        }
        self.shown = Some(v);
        let rows = self.rows();
        let found = self
            .selected
            .and_then(|p| rows.iter().position(|t| t.pid == p));
        let n = rows.len();
        match found {
            Some(i) => self.cursor = i,
            None => {
                self.cursor = self.cursor.min(n.saturating_sub(1));
                self.selected = self.rows().get(self.cursor).map(|t| t.pid);
            }
        }
    }

    /// Whether the body is a table of processes or threads (where rows can be selected).
    pub fn task_table(&self) -> bool {
        matches!(self.cfg.mode, Mode::Tasks | Mode::Ipc | Mode::Threads)
    }

    /// The rows of the task table shown (none in the other views).
    pub fn rows(&self) -> &[hood_monitor::TaskView] {
        match (&self.shown, self.cfg.mode) {
            (Some(v), Mode::Threads) => v.threads.as_deref().unwrap_or(&[]),
            (Some(v), Mode::Tasks | Mode::Ipc) => &v.tasks,
            _ => &[],
        }
    }

    /// Move the selection (task tables) or the view (other views) by `by` rows.
    fn move_by(&mut self, by: isize) {
        if !self.task_table() {
            let s = self.scroll.get().saturating_add_signed(by);
            self.scroll.set(s);
            return;
        }
        let n = self.rows().len();
        self.cursor = self
            .cursor
            .saturating_add_signed(by)
            .min(n.saturating_sub(1));
        self.selected = self.rows().get(self.cursor).map(|t| t.pid);
    }

    /// `k` (signal) or `n` (renice) on the selected process: the prompt, or why not.
    fn ask(&mut self, kind: Option<i32>) {
        if self.replay.is_some() {
            self.note = Some("replay: recorded processes cannot be signalled or reniced".into());
            return;
        }
        if self.cfg.mode == Mode::Threads {
            self.note =
                Some("select the process in the task view (t) to signal or renice it".into());
            return;
        }
        let Some(t) = self.rows().get(self.cursor).cloned() else {
            self.note = Some(match self.task_table() {
                true => "no process selected".into(),
                false => "select a process in the task view (t) first".into(),
            });
            return;
        };
        let what = if kind.is_some() { "renice" } else { "signal" };
        // Refused outright, however often confirmed: init (its death panics the kernel,
        // a renice of it is every boot service's) and hood itself (q quits).
        if t.tgid == 1 || t.pid == 1 {
            self.note = Some(format!(
                "hood top does not {what} pid 1 (init); use {what} from a shell if you must"
            ));
            return;
        }
        if t.tgid == std::process::id() {
            self.note = Some(format!("hood top does not {what} itself (q quits)"));
            return;
        }
        if t.exited {
            self.note = Some(format!("{} ({}) has ended", t.pid, t.name));
            return;
        }
        let name = t
            .name
            .trim_start_matches(|c: char| "\u{251c}\u{2514}\u{2502}\u{2500} ".contains(c));
        self.prompt = Some(Prompt {
            pid: t.pid,
            start_ticks: t.start_ticks,
            name: name.to_string(),
            kind: match kind {
                None => PromptKind::Signal,
                Some(step) => PromptKind::Nice {
                    current: t.nice.clamp(-20, 19) as i32,
                    proposed: (t.nice.clamp(-20, 19) as i32 + step).clamp(-20, 19),
                },
            },
            typed: String::new(),
        });
    }

    /// A key while a prompt waits: digits, Backspace, Enter (do it), Esc (cancel).
    fn on_prompt_key(&mut self, k: &KeyEvent, actions: &mut Option<&mut dyn Actions>) {
        let Some(p) = self.prompt.as_mut() else {
            return;
        };
        match k.code {
            KeyCode::Char(c)
                if (c.is_ascii_digit() || (c == '-' && p.typed.is_empty()))
                    && p.typed.len() < 4 =>
            {
                p.typed.push(c)
            }
            KeyCode::Backspace => {
                p.typed.pop();
            }
            KeyCode::Enter | KeyCode::Char('y') => {
                let Ok(n) = p.value() else { return };
                let p = self.prompt.take().unwrap_or_else(|| unreachable!());
                let who = format!("{} ({})", p.pid, hood_report::safe::text(&p.name));
                let Some(a) = actions.as_deref_mut() else {
                    self.note = Some("nothing can be sent from here".into());
                    return;
                };
                self.note = Some(match p.kind {
                    PromptKind::Signal => match a.signal(p.pid, p.start_ticks, n) {
                        Ok(()) => format!("sent {} to {who}", signal_name(n)),
                        Err(e) => format!("{} not sent to {who}: {e}", signal_name(n)),
                    },
                    PromptKind::Nice { .. } => match a.renice(p.pid, p.start_ticks, n) {
                        Ok(()) => format!("{who} now runs at nice {n}"),
                        Err(e) => format!("{who} not reniced: {e}"),
                    },
                });
            }
            KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('q') => {
                self.prompt = None;
                self.note = Some("cancelled: nothing sent".into());
            }
            _ => {}
        }
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
        self.on_key_with(k, &mut None);
    }

    /// Apply one key press; `k` and `n` act through `actions` once confirmed.
    pub fn on_key_with(&mut self, k: KeyEvent, actions: &mut Option<&mut dyn Actions>) {
        if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return;
        }
        if self.prompt.is_some() {
            self.on_prompt_key(&k, actions);
            return;
        }
        self.note = None;
        if self.on_replay_key(&k) {
            return;
        }
        if let Some(buf) = self.editing.as_mut() {
            match k.code {
                KeyCode::Enter => {
                    self.cfg.filter = self.editing.take().unwrap_or_default();
                    self.scroll.set(0);
                    self.cursor = 0;
                    self.selected = None;
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
            // `t` again in the task view (or htop's F5): the process tree.
            KeyCode::Char('t') if self.cfg.mode == Mode::Tasks => self.tree = !self.tree,
            KeyCode::Char('t') => self.cfg.mode = Mode::Tasks,
            KeyCode::F(5) => {
                if !matches!(self.cfg.mode, Mode::Tasks | Mode::Ipc) {
                    self.cfg.mode = Mode::Tasks;
                }
                self.tree = !self.tree;
            }
            KeyCode::Char('o') => self.cfg.mode = Mode::Cgroups,
            // htop's keys: k (F9) sends a signal, F7/F8 lower/raise the nice value; n renices.
            KeyCode::Char('k') | KeyCode::F(9) => self.ask(None),
            KeyCode::Char('n') => self.ask(Some(0)),
            KeyCode::F(7) => self.ask(Some(-1)),
            KeyCode::F(8) => self.ask(Some(1)),
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
            KeyCode::Down | KeyCode::Char('j') => self.move_by(1),
            KeyCode::Up => self.move_by(-1),
            KeyCode::PageDown => self.move_by(self.room.get().max(2) as isize - 1),
            KeyCode::PageUp => self.move_by(1 - self.room.get().max(2) as isize),
            KeyCode::Home => self.move_by(isize::MIN / 2),
            KeyCode::End => self.move_by(isize::MAX / 2),
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
        actions: &mut dyn Actions,
    ) -> Result<(), TuiError> {
        let mut actions: Option<&mut dyn Actions> = Some(actions);
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
                        self.on_key_with(k, &mut actions);
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

#[cfg(test)]
mod tests {
    use super::*;
    use hood_monitor::TaskView;

    /// Records what would have been done.
    #[derive(Default)]
    struct Done(Vec<(&'static str, u32, u64, i32)>);

    impl Actions for Done {
        fn signal(&mut self, pid: u32, start: u64, sig: i32) -> Result<(), String> {
            self.0.push(("signal", pid, start, sig));
            Ok(())
        }
        fn renice(&mut self, pid: u32, start: u64, nice: i32) -> Result<(), String> {
            self.0.push(("renice", pid, start, nice));
            Ok(())
        }
    }

    fn task(pid: u32, ppid: u32, name: &str, cpu: f64) -> TaskView {
        TaskView {
            pid,
            tgid: pid,
            ppid,
            name: name.into(),
            cpu_percent: Some(cpu),
            start_ticks: 1000 + pid as u64,
            nice: 0,
            ..TaskView::default()
        }
    }

    fn app() -> App {
        let mut a = App::new(TuiConfig {
            mode: Mode::Tasks,
            sort: SortKey::Cpu,
            descending: true,
            filter: String::new(),
            delay: Duration::from_secs(1),
            irq_time: false,
            tree: false,
        });
        a.raw = Some(SystemView {
            tasks: vec![
                task(1, 0, "init", 1.0),
                task(50, 1, "shell", 5.0),
                task(70, 50, "worker", 50.0),
                task(std::process::id(), 50, "hood", 2.0),
            ],
            ..SystemView::default()
        });
        a.rearrange();
        a
    }

    fn key(a: &mut App, done: &mut Done, code: KeyCode) {
        let mut act: Option<&mut dyn Actions> = Some(done);
        a.on_key_with(KeyEvent::from(code), &mut act);
    }

    #[test]
    fn k_asks_first_and_sends_only_on_enter_to_the_selected_process() {
        let (mut a, mut d) = (app(), Done::default());
        // Sorted by CPU: worker is the first row, selected.
        assert_eq!(a.selected, Some(70));
        key(&mut a, &mut d, KeyCode::Char('k'));
        let line = a.prompt.as_ref().unwrap().line();
        assert!(line.contains("SIGTERM (15) to 70 (worker)"), "{line}");
        key(&mut a, &mut d, KeyCode::Esc);
        assert!(d.0.is_empty() && a.prompt.is_none());
        assert!(a.note.as_deref().unwrap().contains("nothing sent"));
        // Another signal typed, then confirmed.
        key(&mut a, &mut d, KeyCode::Char('k'));
        key(&mut a, &mut d, KeyCode::Char('9'));
        assert!(a.prompt.as_ref().unwrap().line().contains("SIGKILL (9)"));
        key(&mut a, &mut d, KeyCode::Enter);
        assert_eq!(d.0, [("signal", 70, 1070, 9)]);
        assert!(a
            .note
            .as_deref()
            .unwrap()
            .contains("sent SIGKILL to 70 (worker)"));
        // A number that is no signal is not sent.
        key(&mut a, &mut d, KeyCode::Char('k'));
        for c in "99".chars() {
            key(&mut a, &mut d, KeyCode::Char(c));
        }
        key(&mut a, &mut d, KeyCode::Enter);
        assert_eq!(d.0.len(), 1);
        assert!(a.prompt.as_ref().unwrap().line().contains("not a signal"));
    }

    #[test]
    fn the_selection_follows_its_process_and_init_and_hood_are_refused() {
        let (mut a, mut d) = (app(), Done::default());
        key(&mut a, &mut d, KeyCode::Down);
        assert_eq!(a.selected, Some(50));
        // The shell gets busier and moves to the top: still selected.
        if let Some(v) = a.raw.as_mut() {
            v.tasks[1].cpu_percent = Some(99.0);
        }
        a.rearrange();
        assert_eq!((a.cursor, a.selected), (0, Some(50)));
        // n renices; F8 proposes one more.
        key(&mut a, &mut d, KeyCode::F(8));
        assert!(a
            .prompt
            .as_ref()
            .unwrap()
            .line()
            .contains("renice 50 (shell) from 0 to 1?"));
        key(&mut a, &mut d, KeyCode::Enter);
        assert_eq!(d.0, [("renice", 50, 1050, 1)]);
        for pid in [1, std::process::id()] {
            let i = a.rows().iter().position(|t| t.pid == pid).unwrap();
            a.cursor = i;
            a.selected = Some(pid);
            key(&mut a, &mut d, KeyCode::Char('k'));
            assert!(a.prompt.is_none(), "{pid}");
            key(&mut a, &mut d, KeyCode::Enter);
            key(&mut a, &mut d, KeyCode::Char('n'));
            assert!(a.prompt.is_none(), "{pid}");
        }
        assert_eq!(d.0.len(), 1);
    }

    #[test]
    fn t_again_and_f5_show_the_tree_and_o_the_cgroups() {
        let (mut a, mut d) = (app(), Done::default());
        key(&mut a, &mut d, KeyCode::Char('t'));
        assert!(a.tree);
        let names: Vec<&str> = a.rows().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names[0], "init");
        assert!(names[1].ends_with("shell") && names[1].starts_with('\u{2514}'));
        // The selection stayed on the worker, now below its shell.
        assert_eq!(a.rows()[a.cursor].pid, 70);
        // The prompt names the process, not its branch.
        key(&mut a, &mut d, KeyCode::Char('k'));
        assert!(a.prompt.as_ref().unwrap().line().contains("70 (worker)"));
        key(&mut a, &mut d, KeyCode::Esc);
        key(&mut a, &mut d, KeyCode::F(5));
        assert!(!a.tree);
        key(&mut a, &mut d, KeyCode::Char('o'));
        assert_eq!(a.cfg.mode, Mode::Cgroups);
        assert!(a.needs().cgroup_tree);
        key(&mut a, &mut d, KeyCode::Char('k'));
        assert!(a.prompt.is_none() && a.note.as_deref().unwrap().contains("task view"));
        assert!(d.0.is_empty());
    }
}
