//! Small formatting helpers shared by the profile renderers.

use hood_model::profile::{FuncId, Profile};

use crate::safe;

/// Width of the rules and right-aligned section titles.
pub(crate) const RULE_WIDTH: usize = 80;

/// `n` as a percentage of `total` (0 when `total` is 0).
pub(crate) fn pct(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 * 100.0 / total as f64
    }
}

/// A bar of `*` for `n` scaled so that `max` fills `width`; any non-zero count gets one star.
pub(crate) fn bar(n: u64, max: u64, width: usize) -> String {
    if n == 0 || max == 0 || width == 0 {
        return String::new();
    }
    let stars = ((n as f64 / max as f64) * width as f64).round() as usize;
    "*".repeat(stars.clamp(1, width))
}

/// A threshold for labels: `1%`, `0.5%`.
pub(crate) fn threshold(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("<{p:.0}%")
    } else {
        format!("<{p}%")
    }
}

/// The display name of a function, with ` [k]` for kernel code and ` (inlined)` for an
/// inlined frame; `[unknown]` for no frame. Control characters in the name are escaped.
pub(crate) fn func_label(prof: &Profile, f: Option<FuncId>) -> String {
    match f.and_then(|id| prof.funcs.get(id as usize)) {
        Some(func) if func.kernel => format!("{} [k]", safe::text(&func.label())),
        Some(func) => safe::text(&func.label()).into_owned(),
        None => "[unknown]".to_string(),
    }
}

/// A process's name as text may show it: control characters escaped.
pub(crate) fn comm(prof: &Profile, pid: u32) -> String {
    let comm = prof.comm(pid);
    match safe::text(&comm) {
        std::borrow::Cow::Borrowed(_) => comm,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// `comm (pid)`, or just `[pid N]` for a process never named.
pub(crate) fn proc_label(prof: &Profile, pid: u32) -> String {
    let comm = comm(prof, pid);
    if comm.starts_with("[pid ") {
        comm
    } else {
        format!("{comm} ({pid})")
    }
}

/// A line of `c` across the rule width.
pub(crate) fn rule(c: char) -> String {
    std::iter::repeat_n(c, RULE_WIDTH).collect()
}

/// `left` and `right` on one line, `right` flush with the rule's end when it fits.
pub(crate) fn title(left: &str, right: &str) -> String {
    let used = left.chars().count() + right.chars().count();
    let gap = RULE_WIDTH.saturating_sub(used).max(2);
    format!("{left}{}{right}", " ".repeat(gap))
}

/// `s` cut to at most `max` characters, its end replaced by `…` when cut.
pub(crate) fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut cut: String = s.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

/// `s` cut from the left to at most `max` characters, `…` standing for what was cut (a
/// `path/file.rs:123` keeps its file name and line, which tell rows apart).
pub(crate) fn ellipsize_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut cut = String::from('…');
    cut.extend(s.chars().skip(n - (max - 1)));
    cut
}

/// `text` broken at spaces into lines of at most `width` characters, the first starting
/// with `first`, the others indented as deep; words longer than a line are cut with `…`.
pub(crate) fn wrap(first: &str, text: &str, width: usize) -> Vec<String> {
    let indent = " ".repeat(first.chars().count());
    let room = width.saturating_sub(indent.len()).max(16);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let word = ellipsize(word, room);
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    lines.push(line);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| format!("{}{l}", if i == 0 { first } else { &indent }))
        .collect()
}

/// A writer that keeps every line within `width` characters: longer lines are cut with
/// `…` (rules, lines of one repeated character, are cut plainly). Renderers cut names to
/// their columns themselves; this is the guarantee for everything else. A control
/// character or a byte that is not UTF-8 inside a line is escaped ([`safe::bytes`]), so no
/// name a renderer forgot to escape reaches the terminal raw; a newline inside a name still
/// must be escaped where the name is written, as here it ends the line.
pub(crate) struct FitLines<'a> {
    out: &'a mut dyn std::io::Write,
    width: usize,
    line: Vec<u8>,
}

impl<'a> FitLines<'a> {
    pub(crate) fn new(out: &'a mut dyn std::io::Write, width: usize) -> Self {
        FitLines {
            out,
            width,
            line: Vec::new(),
        }
    }

    fn emit(&mut self) -> std::io::Result<()> {
        let text = safe::bytes(&self.line);
        let n = text.chars().count();
        if n <= self.width {
            self.out.write_all(text.as_bytes())?;
        } else {
            let mut chars = text.chars();
            let first = chars.next();
            let rule = first.is_some_and(|c| chars.all(|d| d == c));
            let cut = if rule {
                text.chars().take(self.width).collect()
            } else {
                ellipsize(&text, self.width)
            };
            self.out.write_all(cut.as_bytes())?;
        }
        self.line.clear();
        Ok(())
    }
}

impl std::io::Write for FitLines<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for part in buf.split_inclusive(|&b| b == b'\n') {
            match part.strip_suffix(b"\n") {
                Some(body) => {
                    self.line.extend_from_slice(body);
                    self.emit()?;
                    self.out.write_all(b"\n")?;
                }
                None => self.line.extend_from_slice(part),
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.emit()?;
        }
        self.out.flush()
    }
}

/// Seconds with sensible precision: `12.34 s`, `250.0 ms`.
pub(crate) fn secs(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

/// Rows of a sorted (heaviest first) table split into the ones shown and the folded rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fold {
    /// Rows shown (a prefix of the table).
    pub shown: usize,
    /// Rows folded.
    pub folded_rows: usize,
    /// Samples in folded rows.
    pub folded_count: u64,
    /// Whether `max_rows`, not only the threshold, caused folding.
    pub truncated: bool,
}

/// Fold the rows of `counts` (heaviest first) below `min_percent` of `base` or past `max_rows`.
pub(crate) fn fold(counts: &[u64], base: u64, min_percent: f64, max_rows: Option<usize>) -> Fold {
    let above = counts
        .iter()
        .take_while(|&&c| pct(c, base) >= min_percent)
        .count();
    let shown = max_rows.map_or(above, |m| above.min(m));
    Fold {
        shown,
        folded_rows: counts.len() - shown,
        folded_count: counts[shown..].iter().sum(),
        truncated: shown < above,
    }
}

/// The label of a fold line: `<1% (12 more)`.
pub(crate) fn fold_label(f: &Fold, min_percent: f64, what: &str) -> String {
    let plural = match (f.folded_rows, what.ends_with('s')) {
        (1, _) => "",
        (_, true) => "es",
        (_, false) => "s",
    };
    if f.truncated {
        format!("(other {} {what}{plural})", f.folded_rows)
    } else {
        format!(
            "{} ({} {what}{plural})",
            threshold(min_percent),
            f.folded_rows
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_by_threshold_and_rows() {
        let counts = [50, 30, 10, 5, 3, 2];
        let f = fold(&counts, 100, 5.0, None);
        assert_eq!((f.shown, f.folded_rows, f.folded_count), (4, 2, 5));
        assert!(!f.truncated);
        let f = fold(&counts, 100, 5.0, Some(2));
        assert_eq!((f.shown, f.folded_rows, f.folded_count), (2, 4, 20));
        assert!(f.truncated);
        assert_eq!(fold_label(&f, 5.0, "function"), "(other 4 functions)");
    }

    #[test]
    fn long_lines_are_cut_or_wrapped_to_the_width() {
        use std::io::Write as _;
        assert_eq!(ellipsize("abcdef", 4), "abc…");
        assert_eq!(ellipsize("abc", 4), "abc");
        let mut buf = Vec::new();
        {
            let mut fit = FitLines::new(&mut buf, 8);
            write!(fit, "short\n{}\n0123456789\nä", "-".repeat(20)).unwrap();
            fit.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "short\n--------\n0123456…\nä"
        );
        let w = wrap("Warning: ", "a long warning text that goes on", 24);
        assert_eq!(
            w,
            [
                "Warning: a long warning",
                "         text that goes",
                "         on"
            ]
        );
        assert!(w.iter().all(|l| l.chars().count() <= 24));
    }

    #[test]
    fn bars_scale_to_max() {
        assert_eq!(bar(10, 10, 8), "********");
        assert_eq!(bar(5, 10, 8), "****");
        assert_eq!(bar(1, 1000, 8), "*");
        assert_eq!(bar(0, 10, 8), "");
        assert_eq!(threshold(1.0), "<1%");
        assert_eq!(threshold(0.5), "<0.5%");
    }
}
