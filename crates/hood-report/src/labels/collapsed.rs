//! Collapsed stacks with labels: `charged;[async NET_RX];softirq frames...;leaf N`.

use std::collections::HashMap;
use std::io::Write;

use hood_model::labels::Charge;

use super::stacks::charged_frames;
use super::LabeledView;
use crate::ReportError;

/// One line per distinct charged stack: the first frame is the charged process name (or
/// `[kernel]`, `[other]`, `[idle]`), async work carries `[async KIND]` before the handler's
/// frames, then frames root to leaf (kernel ones suffixed `_[k]`), then the sample count.
pub fn render_labels_collapsed(
    v: &LabeledView<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for (s, c) in v.charged() {
        let mut line = match c.pid() {
            Some(p) => v.prof.comm(p),
            None => super::bucket(c).to_string(),
        };
        match c {
            Charge::Async(_, k) | Charge::Other(k) => {
                line.push_str(";[async ");
                line.push_str(k.name());
                line.push(']');
            }
            _ => {}
        }
        for &f in charged_frames(v.prof, s, c).iter().rev() {
            line.push(';');
            match v.prof.funcs.get(f as usize) {
                Some(func) => {
                    line.push_str(&func.label().replace(';', ":"));
                    // flamegraph.pl's marker for kernel frames, as the plain collapsed output.
                    if func.kernel {
                        line.push_str("_[k]");
                    }
                }
                None => line.push_str("[unknown]"),
            }
        }
        *counts.entry(line).or_default() += 1;
    }
    let mut lines: Vec<(String, u64)> = counts.into_iter().collect();
    lines.sort();
    for (l, n) in lines {
        writeln!(out, "{l} {n}")?;
    }
    Ok(())
}
