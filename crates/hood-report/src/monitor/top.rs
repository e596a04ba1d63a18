//! `hood top` frames: the system header and a mode's body, as plain lines.

use hood_monitor::{Mode, SortKey, SystemView};

use super::exceptions::render_exceptions;
use super::fmt::{bytes, clip, clock, rate_bytes, uptime};
use super::table::{columns_for, render_table, Column};
use crate::safe;

/// The `uptime`-style first line: `top - 12:00:00 up 1 day,  2:03, load average: ...`.
pub fn uptime_line(v: &SystemView) -> String {
    format!(
        "{} up {},  load average: {:.2}, {:.2}, {:.2}",
        clock(v.uptime.wall_time_s, v.uptime.utc_offset_s),
        uptime(v.uptime.seconds),
        v.load.one,
        v.load.five,
        v.load.fifteen
    )
}

fn by_state(m: &std::collections::BTreeMap<String, u32>, letters: &str) -> u32 {
    letters
        .chars()
        .map(|c| m.get(&c.to_string()).copied().unwrap_or(0))
        .sum()
}

/// A text bar of `width` cells filled to `pct` percent.
pub fn bar(pct: f64, width: usize) -> String {
    let filled = ((pct.clamp(0.0, 100.0) / 100.0) * width as f64).round() as usize;
    let mut s = String::with_capacity(width);
    s.extend(std::iter::repeat_n('|', filled));
    s.extend(std::iter::repeat_n(' ', width - filled.min(width)));
    s
}

/// Header lines: time/uptime/load, tasks and threads by state, one line per CPU with a busy
/// bar, memory and swap. Every line is cut to `width`.
pub fn header(v: &SystemView, width: usize) -> Vec<String> {
    let c = &v.counts;
    let ts = &c.tasks_by_state;
    let mut out = vec![
        format!("top - {}", uptime_line(v)),
        format!(
            "Tasks: {} total, {} running, {} sleeping, {} disk-wait, {} stopped, {} zombie",
            c.tasks,
            by_state(ts, "R"),
            by_state(ts, "SI"),
            by_state(ts, "D"),
            by_state(ts, "Tt"),
            by_state(ts, "Z")
        ),
    ];
    out.push(match &c.threads_by_state {
        Some(m) => format!(
            "Threads: {} total, {} running, {} sleeping, {} disk-wait, {} other",
            c.threads,
            by_state(m, "R"),
            by_state(m, "SI"),
            by_state(m, "D"),
            m.values().sum::<u32>().saturating_sub(by_state(m, "RSID"))
        ),
        None => format!(
            "Threads: {} total, {} runnable",
            c.threads, c.threads_running
        ),
    });
    let bar_w = width.saturating_sub(64).clamp(0, 40);
    for cpu in std::iter::once(&v.cpus.total).chain(&v.cpus.per_cpu) {
        let name = cpu
            .id
            .map_or_else(|| "all ".to_string(), |i| format!("cpu{i:<2}"));
        let mhz = cpu
            .mhz
            .map_or_else(String::new, |m| format!(" ({m:.0} MHz)"));
        let line = match &cpu.percent {
            Some(p) => format!(
                "{name}{mhz}: [{}] {:5.1}% busy  us {:4.1} sy {:4.1} hi {:4.1} si {:4.1} st {:4.1} wa {:4.1}",
                bar(p.busy, bar_w),
                p.busy,
                p.user,
                p.system,
                p.irq,
                p.softirq,
                p.steal,
                p.iowait
            ),
            None => format!(
                "{name}{mhz}: busy ms {} idle ms {}",
                cpu.time_ms.busy, cpu.time_ms.idle
            ),
        };
        out.push(line);
    }
    let m = &v.physmem;
    out.push(format!(
        "Mem: {} total, {} used, {} free, {} buff/cache, {} avail",
        bytes(m.total),
        bytes(m.used),
        bytes(m.free),
        bytes(m.buffers + m.cache),
        bytes(m.available)
    ));
    out.push(format!(
        "Swap: {} total, {} used, {} free",
        bytes(m.swap_total),
        bytes(m.swap_used),
        bytes(m.swap_free)
    ));
    out.extend(system_io_lines(v));
    out.into_iter().map(|l| clip(&l, width)).collect()
}

/// Pressure (the kernel's 10 s averages, percent of time stalled), then disk and network
/// rates per device, when the snapshot read them (`hood top`, a store's intervals).
pub fn system_io_lines(v: &SystemView) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = &v.pressure {
        let avg = |r: &Option<hood_monitor::view::PsiView>, full: bool| {
            r.as_ref()
                .and_then(|r| {
                    if full {
                        r.full.as_ref()
                    } else {
                        r.some.as_ref()
                    }
                })
                .map_or_else(|| "-".to_string(), |l| format!("{:.1}", l.avg10))
        };
        out.push(format!(
            "Pressure (% stalled, 10 s avg): some cpu {} mem {} io {} | full mem {} io {}",
            avg(&p.cpu, false),
            avg(&p.memory, false),
            avg(&p.io, false),
            avg(&p.memory, true),
            avg(&p.io, true),
        ));
    }
    if let Some(ds) = &v.disks {
        // Whole devices only: a partition (vda1, nvme0n1p1) is in its device's numbers.
        let whole = ds.iter().filter(|d| {
            !ds.iter()
                .any(|o| o.name != d.name && d.name.starts_with(o.name.as_str()))
        });
        let items: Vec<String> = whole
            .map(|d| {
                format!(
                    "{} r {}/s w {}/s {}% busy",
                    d.name,
                    rate_bytes(d.read_bytes_per_s),
                    rate_bytes(d.write_bytes_per_s),
                    d.busy_percent.map_or("-".into(), |b| format!("{b:.0}"))
                )
            })
            .collect();
        out.push(format!("Disk: {}", items.join(", ")));
    }
    if let Some(ns) = &v.nets {
        let items: Vec<String> = ns
            .iter()
            .filter(|n| n.name != "lo")
            .map(|n| {
                format!(
                    "{} rx {}/s tx {}/s",
                    n.name,
                    rate_bytes(n.rx_bytes_per_s),
                    rate_bytes(n.tx_bytes_per_s)
                )
            })
            .collect();
        out.push(format!("Net: {}", items.join(", ")));
    }
    out
}

/// The body of a mode: the task (or thread) table, or the exceptions tables. `v` is expected
/// to be already sorted and filtered by the caller.
pub fn body(v: &SystemView, mode: Mode, width: usize, sorted: Option<SortKey>) -> Vec<String> {
    body_with(v, mode, width, sorted, false)
}

/// [`body`], with the full command line (`command`) instead of the name in the last column.
pub fn body_with(
    v: &SystemView,
    mode: Mode,
    width: usize,
    sorted: Option<SortKey>,
    command: bool,
) -> Vec<String> {
    let mut cols = columns_for(mode);
    // The cgroup column only where cgroups were read.
    let tasks = match mode {
        Mode::Threads => v.threads.as_deref().unwrap_or(&[]),
        _ => &v.tasks[..],
    };
    if !tasks.iter().any(|t| t.cgroup.is_some()) {
        cols.retain(|c| *c != Column::Cgroup);
    }
    if command {
        for c in &mut cols {
            if *c == Column::Name {
                *c = Column::Command;
            }
        }
    }
    match mode {
        Mode::Exceptions => render_exceptions(v, width),
        Mode::Cgroups => render_cgroups(v, width),
        Mode::Threads => render_table(v.threads.as_deref().unwrap_or(&[]), &cols, width, sorted),
        _ => render_table(&v.tasks, &cols, width, sorted),
    }
}

/// The cgroup view (`o`), as below's: the cgroup v2 tree, parents before children, each
/// cgroup with its CPU (it and below, percent of one CPU), memory, read and write rates,
/// pressure (`some` 10 s averages of CPU, memory, I/O) and processes, followed by the
/// processes directly in it in `v`'s order (sorted and filtered by the caller). Lines are
/// cut to `width`; the name comes last so a narrow terminal keeps the numbers.
pub fn render_cgroups(v: &SystemView, width: usize) -> Vec<String> {
    let mut out = vec![clip(
        &format!(
            "{:>6} {:>8} {:>8} {:>8} {:>5} {:>5} {:>5} {:>5}  CGROUP / PID PROCESS",
            "%CPU", "MEM", "READ/s", "WRITE/s", "P-CPU", "P-MEM", "P-IO", "TASKS"
        ),
        width,
    )];
    let Some(cgs) = &v.cgroups else {
        out.push(clip(
            "no cgroups read (no cgroup v2 hierarchy, or a recording without them)",
            width,
        ));
        return out;
    };
    let mut order: Vec<&hood_monitor::view::CgroupView> = cgs.iter().collect();
    order.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
    let psi = |r: &Option<hood_monitor::view::PsiView>| {
        r.as_ref()
            .and_then(|r| r.some.as_ref())
            .map_or_else(|| "-".to_string(), |l| format!("{:.1}", l.avg10))
    };
    for c in order {
        let indent = "  ".repeat(c.depth.min(32) as usize);
        let name = if c.depth == 0 {
            "/".to_string()
        } else {
            let last = c.path.rsplit('/').next().unwrap_or("");
            if c.name == last {
                c.name.clone()
            } else {
                format!("{} ({last})", c.name)
            }
        };
        out.push(clip(
            &format!(
                "{:>6} {:>8} {:>8} {:>8} {:>5} {:>5} {:>5} {:>5}  {indent}{}",
                super::fmt::pct(c.cpu_percent),
                c.memory_bytes.map_or_else(|| "-".into(), bytes),
                rate_bytes(c.read_bytes_per_s),
                rate_bytes(c.write_bytes_per_s),
                psi(&c.pressure.cpu),
                psi(&c.pressure.memory),
                psi(&c.pressure.io),
                c.tasks,
                safe::text(&name),
            ),
            width,
        ));
        for t in v
            .tasks
            .iter()
            .filter(|t| t.cgroup.as_deref() == Some(&c.path))
        {
            out.push(clip(
                &format!(
                    "{:>6} {:>8} {:>8} {:>8} {:>5} {:>5} {:>5} {:>5}  {indent}  {} {}",
                    super::fmt::pct(t.cpu_percent),
                    bytes(t.res_bytes),
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    t.pid,
                    safe::text(&t.name),
                ),
                width,
            ));
        }
    }
    out
}

/// One batch-mode frame: header, a blank line, then up to `max_rows` body lines (all when
/// `None`).
pub fn frame(
    v: &SystemView,
    mode: Mode,
    width: usize,
    max_rows: Option<usize>,
    sorted: Option<SortKey>,
) -> String {
    let mut lines = header(v, width);
    lines.push(String::new());
    let body = body(v, mode, width, sorted);
    let n = max_rows.map_or(body.len(), |m| m.min(body.len()));
    lines.extend(body.into_iter().take(n));
    let mut s = lines.join("\n");
    s.push('\n');
    s
}
