//! The `e` view: interrupts and softirqs with per-CPU counts and rates, and handler times.

use hood_monitor::view::IrqView;
use hood_monitor::SystemView;

use super::fmt::{clip, rate};
use crate::safe;

fn irq_table(title: &str, rows: &[IrqView], ncpus: usize, width: usize, out: &mut Vec<String>) {
    let mut h = format!("{title:<10}");
    for i in 0..ncpus {
        h.push_str(&format!(" {:>11}", format!("CPU{i}")));
    }
    h.push_str(&format!(" {:>9} {:>9}  DESCRIPTION", "TOTAL", "/s"));
    out.push(clip(&h, width));
    let mut rows: Vec<&IrqView> = rows.iter().collect();
    rows.sort_by(|a, b| {
        b.per_s
            .unwrap_or(0.0)
            .total_cmp(&a.per_s.unwrap_or(0.0))
            .then(b.total.cmp(&a.total))
    });
    for r in rows {
        let mut l = format!("{:<10}", r.id);
        for i in 0..ncpus {
            l.push_str(&format!(" {:>11}", r.per_cpu.get(i).copied().unwrap_or(0)));
        }
        l.push_str(&format!(
            " {:>9} {:>9}  {}",
            r.total,
            rate(r.per_s),
            safe::text(&r.description)
        ));
        out.push(clip(&l, width));
    }
}

/// Render `system.exceptions` as text lines.
pub fn render_exceptions(v: &SystemView, width: usize) -> Vec<String> {
    let ncpus = v.cpus.per_cpu.len();
    let mut out = Vec::new();
    if let Some(it) = &v.exceptions.irq_time {
        match &it.unavailable {
            Some(why) => out.push(clip(&format!("Handler times: unavailable: {why}"), width)),
            None => {
                out.push(clip(
                    &format!(
                        "Handler times (irq/softirq tracepoints): {} events, {} lost, measuring cost {} % of one CPU",
                        it.events,
                        it.lost,
                        it.cost_percent.map_or("-".into(), |c| format!("{c:.2}"))
                    ),
                    width,
                ));
                out.push(clip(
                    &format!(
                        "{:<8} {:>4} {:<16} {:>10} {:>9} {:>9} {:>7}",
                        "KIND", "NUM", "HANDLER", "COUNT", "RUNS/int", "AVG us", "%CPU"
                    ),
                    width,
                ));
                for h in &it.handlers {
                    out.push(clip(
                        &format!(
                            "{:<8} {:>4} {:<16} {:>10} {:>9} {:>9.2} {:>7}",
                            h.kind,
                            h.number,
                            safe::text(&h.name),
                            h.count,
                            h.count_interval.map_or("-".into(), |c| c.to_string()),
                            h.avg_us,
                            h.cpu_percent.map_or("-".into(), |c| format!("{c:.3}"))
                        ),
                        width,
                    ));
                }
            }
        }
        out.push(String::new());
    }
    irq_table("IRQ", &v.exceptions.interrupts, ncpus, width, &mut out);
    out.push(String::new());
    irq_table("SOFTIRQ", &v.exceptions.softirqs, ncpus, width, &mut out);
    out
}
