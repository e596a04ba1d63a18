//! Call trees in text: caller (top-down) or callee (bottom-up), each line
//! `total%  self%  name`, small children folded, depth limited.

use std::io::Write;

use hood_model::profile::aggregate::{call_tree, TreeNode};
use hood_model::profile::Profile;

use super::fmt::{ellipsize, fold, fold_label, func_label, pct, rule, title, Fold};
use super::{CallGraph, ReportOptions};
use crate::ReportError;

/// Build the tree `opts.call_graph` asks for (`None` when it asks for none).
pub(crate) fn build(prof: &Profile, opts: &ReportOptions) -> Option<TreeNode> {
    match opts.call_graph {
        CallGraph::None => None,
        CallGraph::Caller => Some(call_tree(prof, &opts.filter, true)),
        CallGraph::Callee => Some(call_tree(prof, &opts.filter, false)),
    }
}

/// Which children of `node` to show: those at or above `min_percent` of `base`, heaviest
/// first (children are sorted by the model).
pub(crate) fn visible(node: &TreeNode, base: u64, min_percent: f64) -> Fold {
    let counts: Vec<u64> = node.children.iter().map(|c| c.total).collect();
    fold(&counts, base, min_percent, None)
}

/// Write the call tree selected by `opts.call_graph` (nothing when none).
pub fn render_tree_text(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let Some(root) = build(prof, opts) else {
        return Ok(());
    };
    let top_down = opts.call_graph == CallGraph::Caller;
    let left = if top_down {
        "Call graph, callers first (top-down)"
    } else {
        "Call graph, sampled functions first, callers below (bottom-up)"
    };
    writeln!(out, "{}", rule('-'))?;
    writeln!(out, "{}", title(left, &format!("{} samples", root.total)))?;
    if top_down {
        writeln!(out, "{:>7} {:>7}  function", "total", "self")?;
    } else {
        writeln!(out, "{:>7}  function", "total")?;
    }
    writeln!(out, "{}", rule('-'))?;
    if !prof.meta.callchain {
        writeln!(
            out,
            "(recorded without call chains: each tree is one frame deep; record with -g)"
        )?;
    }
    let w = Writer {
        prof,
        opts,
        base: root.total,
        top_down,
    };
    w.children(&root, 0, out)?;
    if root.self_count > 0 {
        w.line(
            root.self_count,
            Some(root.self_count),
            0,
            "[no frames]",
            out,
        )?;
    }
    writeln!(out, "{}", rule('-'))?;
    Ok(())
}

struct Writer<'a> {
    prof: &'a Profile,
    opts: &'a ReportOptions,
    base: u64,
    top_down: bool,
}

impl Writer<'_> {
    fn line(
        &self,
        total: u64,
        self_count: Option<u64>,
        depth: usize,
        name: &str,
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        let indent = "  ".repeat(depth);
        let t = format!("{:>6.1}%", pct(total, self.base));
        let used = if self.top_down { 17 } else { 9 } + indent.len();
        let name = &ellipsize(name, self.opts.width.saturating_sub(used).max(16));
        if !self.top_down {
            writeln!(out, "{t}  {indent}{name}")?;
            return Ok(());
        }
        let s = match self_count {
            Some(s) => format!("{:>6.1}%", pct(s, self.base)),
            None => String::new(),
        };
        writeln!(out, "{t} {s:>7}  {indent}{name}")?;
        Ok(())
    }

    fn children(
        &self,
        node: &TreeNode,
        depth: usize,
        out: &mut dyn Write,
    ) -> Result<(), ReportError> {
        if node.children.is_empty() {
            return Ok(());
        }
        if depth >= self.opts.max_depth {
            let indent = "  ".repeat(depth);
            writeln!(out, "{:>16}{indent}... (deeper frames not shown)", "")?;
            return Ok(());
        }
        let f = visible(node, self.base, self.opts.min_percent);
        for c in &node.children[..f.shown] {
            let name = func_label(self.prof, c.func);
            self.line(c.total, Some(c.self_count), depth, &name, out)?;
            self.children(c, depth + 1, out)?;
        }
        // Below the top level, a fold line is only worth a line when it is itself large.
        let worth = depth == 0 || pct(f.folded_count, self.base) >= self.opts.min_percent;
        if f.folded_rows > 0 && worth {
            let what = if self.top_down { "callee" } else { "caller" };
            let label = fold_label(&f, self.opts.min_percent, what);
            self.line(f.folded_count, None, depth, &label, out)?;
        }
        Ok(())
    }
}
