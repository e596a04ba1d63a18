//! `hood report --labels --format gprof`: a gprof-style flat profile and call graph (as in
//! Nishioka et al.) where every function is named for the process it worked for (`PIDu:func`,
//! `PIDk:func`). Edges come from the sampled call chains, so a user function calling into the
//! kernel through a syscall shows `PIDu:caller` → `PIDk:entry` edges across the boundary.
//! Sampling gives no call counts; those columns stay empty.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use hood_model::labels::Charge;

use super::stacks::charged_frames;
use super::text::charged_name;
use super::LabeledView;
use crate::ReportError;

/// A node: a function under an owner, or the synthetic `[async KIND]` frame of an owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Node {
    Func(Charge, u32),
    Async(Charge),
}

fn owner_of(c: Charge) -> Charge {
    match c {
        Charge::Async(p, _) => Charge::Sync(p),
        other => other,
    }
}

/// An edge end and its weight: (other node, (samples with the edge, of them with the callee as leaf)).
type EdgeEnd = (usize, (u64, u64));

#[derive(Default)]
struct Graph {
    names: Vec<String>,
    index: HashMap<Node, usize>,
    selfs: Vec<u64>,
    totals: Vec<u64>,
    // (caller, callee) -> (samples with the edge, of which callee was the leaf)
    edges: HashMap<(usize, usize), (u64, u64)>,
}

impl Graph {
    fn node(&mut self, n: Node, name: impl FnOnce() -> String) -> usize {
        if let Some(&i) = self.index.get(&n) {
            return i;
        }
        let i = self.names.len();
        self.names.push(name());
        self.selfs.push(0);
        self.totals.push(0);
        self.index.insert(n, i);
        i
    }
}

/// Render the flat profile and call graph.
pub fn render_labels_gprof(v: &LabeledView<'_>, out: &mut dyn Write) -> Result<(), ReportError> {
    let mut g = Graph::default();
    let mut path: Vec<usize> = Vec::new();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut seen_edges: HashSet<(usize, usize)> = HashSet::new();
    let mut period_sum = 0u64;
    for (s, c) in v.charged() {
        if c == Charge::Idle {
            continue;
        }
        // Periods come from the file: a hostile one must not overflow the sum.
        period_sum = period_sum.saturating_add(s.period);
        let owner = owner_of(c);
        path.clear();
        if let Charge::Async(_, k) | Charge::Other(k) = c {
            let name = format!("{}k:[async {}]", v.prefix(c), k.name());
            path.push(g.node(Node::Async(owner), || name));
        }
        for &f in charged_frames(v.prof, s, c).iter().rev() {
            path.push(g.node(Node::Func(owner, f), || charged_name(v, c, f)));
        }
        let Some(&leaf) = path.last() else { continue };
        g.selfs[leaf] += 1;
        seen.clear();
        seen_edges.clear();
        for &n in &path {
            if seen.insert(n) {
                g.totals[n] += 1;
            }
        }
        for w in path.windows(2) {
            if w[0] != w[1] && seen_edges.insert((w[0], w[1])) {
                let e = g.edges.entry((w[0], w[1])).or_default();
                e.0 += 1;
                if w[1] == leaf {
                    e.1 += 1;
                }
            }
        }
    }
    let total: u64 = g.selfs.iter().sum();
    let per = match (v.clock_event(), total) {
        (true, 0) => 0.0,
        (true, n) => period_sum as f64 / 1e9 / n as f64,
        (false, _) => 1.0,
    };
    let unit = if v.clock_event() {
        "seconds"
    } else {
        "samples"
    };
    let pct = |n: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };
    writeln!(
        out,
        "Flat profile (process-labeled: PIDu: user, PIDk: kernel work of process PID):"
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Each sample counts as {per:.6} {unit}; idle samples left out."
    )?;
    writeln!(out, "  %   cumulative   self              self     total")?;
    writeln!(
        out,
        " time   {unit:>7}  {unit:>7}    calls  ms/call  ms/call  name"
    )?;
    let mut flat: Vec<usize> = (0..g.names.len()).filter(|&i| g.selfs[i] > 0).collect();
    flat.sort_by(|&a, &b| {
        g.selfs[b]
            .cmp(&g.selfs[a])
            .then(g.names[a].cmp(&g.names[b]))
    });
    let mut cum = 0.0;
    for &i in &flat {
        let secs = g.selfs[i] as f64 * per;
        cum += secs;
        writeln!(
            out,
            "{:>6.2} {:>10.2} {:>8.2} {:>8} {:>8} {:>8}  {}",
            pct(g.selfs[i]),
            cum,
            secs,
            "",
            "",
            "",
            g.names[i]
        )?;
    }
    writeln!(out)?;
    writeln!(out, "Call graph:")?;
    writeln!(out)?;
    writeln!(out, "index % time    self  children    called     name")?;
    let mut order: Vec<usize> = (0..g.names.len()).collect();
    order.sort_by(|&a, &b| {
        g.totals[b]
            .cmp(&g.totals[a])
            .then(g.names[a].cmp(&g.names[b]))
    });
    let mut idx = vec![0usize; g.names.len()];
    for (k, &i) in order.iter().enumerate() {
        idx[i] = k + 1;
    }
    let mut parents: HashMap<usize, Vec<EdgeEnd>> = HashMap::new();
    let mut children: HashMap<usize, Vec<EdgeEnd>> = HashMap::new();
    for (&(a, b), &w) in &g.edges {
        parents.entry(b).or_default().push((a, w));
        children.entry(a).or_default().push((b, w));
    }
    let line = |out: &mut dyn Write, n: usize, (all, selfn): (u64, u64)| -> std::io::Result<()> {
        writeln!(
            out,
            "{:>6} {:>6} {:>7.2} {:>9.2} {:>10}         {} [{}]",
            "",
            "",
            selfn as f64 * per,
            (all - selfn) as f64 * per,
            "",
            g.names[n],
            idx[n]
        )
    };
    for &i in &order {
        let mut ps = parents.remove(&i).unwrap_or_default();
        ps.sort_by(|a, b| a.1 .0.cmp(&b.1 .0).then(idx[a.0].cmp(&idx[b.0])));
        for (p, w) in ps {
            line(out, p, w)?;
        }
        writeln!(
            out,
            "{:<6} {:>6.1} {:>7.2} {:>9.2} {:>10}     {} [{}]",
            format!("[{}]", idx[i]),
            pct(g.totals[i]),
            g.selfs[i] as f64 * per,
            (g.totals[i] - g.selfs[i]) as f64 * per,
            "",
            g.names[i],
            idx[i]
        )?;
        let mut cs = children.remove(&i).unwrap_or_default();
        cs.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(idx[a.0].cmp(&idx[b.0])));
        for (c, w) in cs {
            line(out, c, w)?;
        }
        writeln!(out, "-----------------------------------------------")?;
    }
    Ok(())
}
