//! Windows of recorded time as data (`hood top -b --replay DIR --csv|--openmetrics`): CSV rows
//! per task and interval, and OpenMetrics text with a timestamp on every sample.

use std::collections::HashMap;
use std::fmt::Write;

use hood_monitor::SystemView;

/// The CSV header line: one row per task per interval.
pub const CSV_HEADER: &str = "time,pid,ppid,user,name,state,threads,cpu_percent,user_percent,\
kernel_percent,user_time_ms,kernel_time_ms,res_bytes,virt_bytes,ctx_voluntary_per_s,\
ctx_involuntary_per_s,syscr_per_s,syscw_per_s,rchar_per_s,wchar_per_s,cmdline\n";

/// A CSV field: quoted when it holds a comma, quote or line break; control characters shown
/// escaped (names come from other users' processes).
fn field(out: &mut String, s: &str) {
    let s = crate::safe::text(s);
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(&s);
    }
}

fn opt(out: &mut String, v: Option<f64>) {
    if let Some(v) = v {
        let _ = write!(out, "{v:.3}");
    }
}

/// The rows of `v`'s tasks (in their order), the time as `YYYY-MM-DD HH:MM:SS` in the zone
/// `offset_s` east of UTC. Values that were not measured (no interval, unreadable) are empty.
pub fn csv_rows(v: &SystemView, offset_s: i32, out: &mut String) {
    let time = hood_monitor::when::format_time(v.uptime.wall_time_s, offset_s);
    for t in &v.tasks {
        let _ = write!(out, "{time},{},{},", t.pid, t.ppid);
        match (&t.user, t.uid) {
            (Some(u), _) => field(out, u),
            (None, Some(uid)) => {
                let _ = write!(out, "{uid}");
            }
            (None, None) => {}
        }
        out.push(',');
        field(out, &t.name);
        let _ = write!(out, ",{},{},", t.state, t.threads);
        opt(out, t.cpu_percent);
        out.push(',');
        opt(out, t.user_percent);
        out.push(',');
        opt(out, t.kernel_percent);
        let _ = write!(
            out,
            ",{},{},{},{},",
            t.user_time_ms, t.kernel_time_ms, t.res_bytes, t.virt_bytes
        );
        let ctx = t.ctx_switches.as_ref();
        opt(out, ctx.and_then(|c| c.voluntary_per_s));
        out.push(',');
        opt(out, ctx.and_then(|c| c.involuntary_per_s));
        let io = t.io.as_ref();
        for x in [
            io.and_then(|i| i.syscr_per_s),
            io.and_then(|i| i.syscw_per_s),
            io.and_then(|i| i.rchar_per_s),
            io.and_then(|i| i.wchar_per_s),
        ] {
            out.push(',');
            opt(out, x);
        }
        out.push(',');
        if let Some(c) = &t.cmdline {
            field(out, c);
        }
        out.push('\n');
    }
}

/// OpenMetrics text of many intervals: each family once, its samples in time order, each with
/// the interval's timestamp; counters named without `_total` in their `# TYPE` line, as
/// OpenMetrics wants. Built from [`render_metrics`](crate::metrics::render_metrics)'s text.
#[derive(Debug, Default)]
pub struct OpenMetricsDump {
    families: Vec<(String, String)>,
    index: HashMap<String, usize>,
}

impl OpenMetricsDump {
    /// Add one interval's exposition text, taken at `time_ms` since the Unix epoch.
    pub fn add(&mut self, text: &str, time_ms: i64) {
        let ts = format!(
            " {}.{:03}",
            time_ms.div_euclid(1000),
            time_ms.rem_euclid(1000)
        );
        let mut cur: Option<usize> = None;
        let mut help: Option<(&str, &str)> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, h) = rest.split_once(' ').unwrap_or((rest, ""));
                help = Some((name, h));
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
                // The build of a replay is not the recorder's: left out.
                if name == "hood_build_info" {
                    cur = None;
                    continue;
                }
                let family = match kind {
                    "counter" => name.strip_suffix("_total").unwrap_or(name),
                    _ => name,
                };
                let i = match self.index.get(family) {
                    Some(i) => *i,
                    None => {
                        let mut head = String::new();
                        if let Some((_, h)) = help.filter(|(n, _)| *n == name) {
                            let _ = writeln!(head, "# HELP {family} {h}");
                        }
                        let _ = writeln!(head, "# TYPE {family} {kind}");
                        self.families.push((head, String::new()));
                        self.index
                            .insert(family.to_string(), self.families.len() - 1);
                        self.families.len() - 1
                    }
                };
                cur = Some(i);
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            if let Some(i) = cur {
                let body = &mut self.families[i].1;
                body.push_str(line);
                body.push_str(&ts);
                body.push('\n');
            }
        }
    }

    /// The text, ending in `# EOF`.
    pub fn finish(self) -> String {
        let mut out = String::new();
        for (head, body) in self.families {
            out.push_str(&head);
            out.push_str(&body);
        }
        out.push_str("# EOF\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_grouped_with_timestamps() {
        let a = "# HELP hood_build_info b\n# TYPE hood_build_info gauge\nhood_build_info{v=\"1\"} 1\n\
                 # HELP x_total c\n# TYPE x_total counter\nx_total 1\n# HELP g g\n# TYPE g gauge\ng 2\n";
        let b = "# HELP x_total c\n# TYPE x_total counter\nx_total 3\n# HELP g g\n# TYPE g gauge\ng 4\n";
        let mut d = OpenMetricsDump::default();
        d.add(a, 1_000);
        d.add(b, 6_500);
        assert_eq!(
            d.finish(),
            "# HELP x c\n# TYPE x counter\nx_total 1 1.000\nx_total 3 6.500\n\
             # HELP g g\n# TYPE g gauge\ng 2 1.000\ng 4 6.500\n# EOF\n"
        );
    }
}
