//! The short "top functions" form the recorder prints when `p` is pressed.

use std::io::Write;

use hood_model::profile::aggregate::{by_process_function, totals, Filter};
use hood_model::profile::Profile;

use super::fmt::{func_label, pct, proc_label};
use crate::ReportError;

/// Write the `n` heaviest functions (with their process) and their share of all samples.
pub fn render_top(prof: &Profile, n: usize, out: &mut dyn Write) -> Result<(), ReportError> {
    let all = Filter::default();
    let t = totals(prof, &all);
    writeln!(
        out,
        "{} samples ({:.1}% kernel, {:.1}% user, {:.1}% idle), top {n} functions:",
        t.samples,
        pct(t.kernel, t.samples),
        pct(t.user, t.samples),
        pct(t.idle, t.samples)
    )?;
    for r in by_process_function(prof, &all).into_iter().take(n) {
        let (pid, f) = r.key;
        writeln!(
            out,
            "{:>6.1}%  {}  {}",
            pct(r.count, t.samples),
            func_label(prof, f),
            proc_label(prof, pid)
        )?;
    }
    Ok(())
}
