//! `hood top` on a terminal of a chosen size, driven in tmux: start a command in a detached
//! session, send keys, wait for text on the screen. The session (and what runs in it) is
//! killed when the [`Screen`] is dropped, however the test ends.

use std::time::{Duration, Instant};

/// Run tmux with `args`; its stdout.
pub fn tmux(args: &[&str]) -> String {
    let out = super::command("tmux")
        .args(args)
        .output()
        .expect("tmux runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether tmux is missing; then `test` says it is skipped, and why.
pub fn missing(test: &str) -> bool {
    if super::command("tmux").arg("-V").output().is_ok() {
        return false;
    }
    println!("SKIPPED (tmux not installed: apt-get install -y tmux): {test}");
    true
}

/// A detached tmux session of `width`×`height` running a shell command.
pub struct Screen(pub String);

impl Screen {
    /// Start `cmd` (a shell command line) in a new session named `name` plus this test
    /// process's pid.
    pub fn start(name: &str, width: u16, height: u16, cmd: &str) -> Screen {
        let s = format!("{name}{}", std::process::id());
        let (w, h) = (width.to_string(), height.to_string());
        tmux(&["new-session", "-d", "-s", &s, "-x", &w, "-y", &h, cmd]);
        Screen(s)
    }

    /// The name of the session (for `tmux -t`).
    pub fn name(&self) -> &str {
        &self.0
    }

    /// The screen's text now.
    pub fn capture(&self) -> String {
        tmux(&["capture-pane", "-p", "-t", &self.0])
    }

    /// Send keys as tmux names them (`Enter`, `Escape`, `Left`, `F5`, or characters).
    pub fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", &self.0];
        a.extend_from_slice(keys);
        tmux(&a);
    }

    /// Type `text` literally.
    pub fn type_text(&self, text: &str) {
        tmux(&["send-keys", "-t", &self.0, "-l", text]);
    }

    /// Wait until the screen contains `want` (polling; fails after 15 s); the screen then.
    pub fn wait_for(&self, want: &str) -> String {
        self.wait_until(want, |sc| sc.contains(want))
    }

    /// Wait until `ok` holds for the screen (polling; fails after 15 s, saying `what`).
    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let sc = self.capture();
            if ok(&sc) {
                return sc;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "never saw {what:?}:\n{sc}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        tmux(&["kill-session", "-t", &self.0]);
    }
}
