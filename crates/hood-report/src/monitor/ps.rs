//! `hood ps` (HelenOS's `tasks`) and `hood uptime` (HelenOS's `stats`).

use std::io::Write;

use hood_monitor::{SortKey, SystemView};

use super::fmt::{bytes, clock, uptime};
use super::table::{render_table, Column};
use crate::ReportError;

/// What `hood ps` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsLayout {
    /// Print threads (`-H`) instead of tasks.
    pub threads: bool,
    /// Print the load line (`-l`).
    pub load: bool,
    /// Print the CPU lines (`-c`).
    pub cpus: bool,
    /// Print the user and command-line columns (`-f`).
    pub full: bool,
    /// CPU use was measured over an interval (`--delay SECS`): print %CPU, %USR and %SYS.
    pub measured: bool,
}

/// The columns of `hood ps`: ID, threads, memory, user and system time, name (as HelenOS's `tasks`),
/// with state and resident memory added, and the measured CPU shares before the times.
pub fn ps_columns(layout: PsLayout) -> Vec<Column> {
    use Column::*;
    let mut c = if layout.threads {
        vec![Pid, Tgid, State, UTime, STime, Name]
    } else {
        vec![Pid, Threads, Virt, Res, State, UTime, STime, Name]
    };
    if layout.measured {
        let at = c.iter().position(|k| *k == UTime).unwrap_or(c.len());
        c.splice(at..at, [Cpu, UserCpu, KernelCpu]);
    }
    if layout.full {
        c.insert(1, User);
        if let Some(last) = c.last_mut() {
            *last = Command;
        }
    }
    c
}

/// Render `hood ps` into `out`.
pub fn render_ps(
    out: &mut dyn Write,
    v: &SystemView,
    layout: PsLayout,
    width: usize,
    sorted: Option<SortKey>,
) -> Result<(), ReportError> {
    let mut lines = Vec::new();
    if layout.load {
        lines.push(format!(
            "load average: {:.2} {:.2} {:.2}, {} of {} threads runnable",
            v.load.one, v.load.five, v.load.fifteen, v.load.runnable, v.load.total
        ));
    }
    if layout.cpus {
        for c in &v.cpus.per_cpu {
            let mhz = c.mhz.map_or_else(String::new, |m| format!(" ({m:.0} MHz)"));
            lines.push(format!(
                "cpu{}{mhz}: busy ms: {}, idle ms: {}, user ms: {}, system ms: {}, irq ms: {}, softirq ms: {}, steal ms: {}, iowait ms: {}",
                c.id.unwrap_or(0),
                c.time_ms.busy,
                c.time_ms.idle,
                c.time_ms.user,
                c.time_ms.system,
                c.time_ms.irq,
                c.time_ms.softirq,
                c.time_ms.steal,
                c.time_ms.iowait
            ));
        }
        lines.push(format!(
            "memory: {} total, {} used, {} free, {} available",
            bytes(v.physmem.total),
            bytes(v.physmem.used),
            bytes(v.physmem.free),
            bytes(v.physmem.available)
        ));
    }
    if !(layout.load || layout.cpus) || layout.threads {
        let rows = if layout.threads {
            v.threads.as_deref().unwrap_or(&[])
        } else {
            &v.tasks[..]
        };
        lines.extend(render_table(rows, &ps_columns(layout), width, sorted));
    }
    out.write_all(lines.join("\n").as_bytes())?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Render `hood uptime` into `out`: ` 12:00:00 up 3 days,  2:01,  2 tasks, load average: 0.00,
/// 0.01, 0.05`.
pub fn render_uptime(out: &mut dyn Write, v: &SystemView) -> Result<(), ReportError> {
    writeln!(
        out,
        " {} up {},  {} tasks,  load average: {:.2}, {:.2}, {:.2}",
        clock(v.uptime.wall_time_s, v.uptime.utc_offset_s),
        uptime(v.uptime.seconds),
        v.counts.tasks,
        v.load.one,
        v.load.five,
        v.load.fifteen
    )?;
    Ok(())
}

/// `hood uptime --json`: `system.uptime`, `system.load` and the task count.
pub fn render_uptime_json(v: &SystemView) -> String {
    let j = serde_json::json!({
        "schema_version": v.schema_version,
        "uptime": v.uptime,
        "load": v.load,
        "tasks": v.counts.tasks,
    });
    serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"
}
