//! Small formatting helpers shared by the profile renderers.

use hood_model::profile::{FuncId, Profile};

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

/// The display name of a function, with ` [k]` for kernel code; `[unknown]` for no frame.
pub(crate) fn func_label(prof: &Profile, f: Option<FuncId>) -> String {
    match f.and_then(|id| prof.funcs.get(id as usize)) {
        Some(func) if func.kernel => format!("{} [k]", func.name),
        Some(func) => func.name.clone(),
        None => "[unknown]".to_string(),
    }
}

/// `comm (pid)`, or just `[pid N]` for a process never named.
pub(crate) fn proc_label(prof: &Profile, pid: u32) -> String {
    let comm = prof.comm(pid);
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
    fn bars_scale_to_max() {
        assert_eq!(bar(10, 10, 8), "********");
        assert_eq!(bar(5, 10, 8), "****");
        assert_eq!(bar(1, 1000, 8), "*");
        assert_eq!(bar(0, 10, 8), "");
        assert_eq!(threshold(1.0), "<1%");
        assert_eq!(threshold(0.5), "<0.5%");
    }
}
