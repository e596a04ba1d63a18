//! The text form of `hood report --labels`.

use std::collections::HashMap;
use std::io::Write;

use hood_model::labels::{AsyncKind, Charge};

use super::stacks::charged_frames;
use super::{header_lines, LabeledView};
use crate::{safe, ReportError};

/// Samples of one charged owner, split by kind of work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Split {
    /// User-mode samples of the process itself.
    pub user: u64,
    /// Kernel samples of its own syscalls and faults.
    pub sync: u64,
    /// Network receive work it consumed.
    pub net: u64,
    /// Block completions it waited for.
    pub block: u64,
    /// Everything (for buckets: all their samples).
    pub total: u64,
}

/// The owner key used for grouping: a pid, or a bucket (`u32::MAX - n`).
fn key(c: Charge) -> (u32, bool) {
    match c {
        Charge::Sync(p) | Charge::Async(p, _) => (p, true),
        Charge::Kernel => (0, false),
        Charge::Other(_) => (1, false),
        Charge::Idle => (2, false),
    }
}

/// Per-owner splits, largest first. The charge returned stands for the owner.
pub fn splits(v: &LabeledView<'_>) -> Vec<(Charge, Split)> {
    let mut map: HashMap<(u32, bool), (Charge, Split)> = HashMap::new();
    for (s, c) in v.charged() {
        let e = map.entry(key(c)).or_insert((c, Split::default()));
        let sp = &mut e.1;
        sp.total += 1;
        match c {
            Charge::Sync(_) if s.mode == hood_model::profile::Mode::User => sp.user += 1,
            Charge::Sync(_) => sp.sync += 1,
            Charge::Async(_, AsyncKind::NetRx) => sp.net += 1,
            Charge::Async(_, AsyncKind::Block) => sp.block += 1,
            _ => {}
        }
        if let Charge::Sync(p) = c {
            e.0 = Charge::Sync(p);
        }
    }
    let mut out: Vec<(Charge, Split)> = map.into_values().collect();
    out.sort_by(|a, b| b.1.total.cmp(&a.1.total).then(key(a.0).cmp(&key(b.0))));
    out
}

/// Display name of a function under a charge: `PIDu:name`, `PIDk:name`, `[kernel]k:name`.
pub fn charged_name(v: &LabeledView<'_>, c: Charge, func: u32) -> String {
    let f = v.prof.funcs.get(func as usize);
    let (k, name) = f.map_or((true, "[unknown]".into()), |f| (f.kernel, f.label()));
    format!("{}{}:{name}", v.prefix(c), if k { 'k' } else { 'u' })
}

fn pct(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * n as f64 / total as f64
    }
}

/// Render the text report; flat-profile rows under `min_percent` of the owner's samples fold.
pub fn render_labels_text(
    v: &LabeledView<'_>,
    min_percent: f64,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    for l in header_lines(v) {
        writeln!(out, "# {}", safe::text(&l))?;
    }
    let total = v.prof.samples.len() as u64;
    let sp = splits(v);
    writeln!(out)?;
    writeln!(
        out,
        "{:<28} {:>8} {:>7} {:>8} {:>8} {:>10} {:>10}",
        "charged to", "samples", "%", "user", "k-sync", "k-NET_RX", "k-BLOCK"
    )?;
    for (c, s) in &sp {
        writeln!(
            out,
            "{:<28} {:>8} {:>6.1}% {:>8} {:>8} {:>10} {:>10}",
            safe::text(&v.owner(*c)),
            s.total,
            pct(s.total, total),
            s.user,
            s.sync,
            s.net,
            s.block
        )?;
    }
    for (c, s) in &sp {
        if matches!(c, Charge::Idle) {
            continue;
        }
        writeln!(out)?;
        let kernel = s.sync + s.net + s.block;
        match c.pid() {
            Some(_) => writeln!(
                out,
                "== {}: {} samples; kernel {} = sync {} + async NET_RX {} + async BLOCK {} ==",
                safe::text(&v.owner(*c)),
                s.total,
                kernel,
                s.sync,
                s.net,
                s.block
            )?,
            None => writeln!(
                out,
                "== {}: {} samples ==",
                safe::text(&v.owner(*c)),
                s.total
            )?,
        }
        let mut self_counts: HashMap<(Charge, u32), u64> = HashMap::new();
        for (smp, ch) in v.charged() {
            if key(ch) != key(*c) {
                continue;
            }
            if let Some(&leaf) = charged_frames(v.prof, smp, ch).first() {
                // Keep the kind of async work apart only in the name prefix owner.
                *self_counts.entry((*c, leaf)).or_default() += 1;
            }
        }
        let mut rows: Vec<((Charge, u32), u64)> = self_counts.into_iter().collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0 .1.cmp(&b.0 .1)));
        let mut folded = 0;
        for ((ch, f), n) in rows {
            if pct(n, s.total) < min_percent {
                folded += n;
                continue;
            }
            writeln!(
                out,
                "  {:>6.1}% {:>8}  {}",
                pct(n, s.total),
                n,
                safe::text(&charged_name(v, ch, f))
            )?;
        }
        if folded > 0 {
            writeln!(
                out,
                "  {:>6.1}% {:>8}  (functions below {min_percent}%)",
                pct(folded, s.total),
                folded
            )?;
        }
    }
    Ok(())
}
