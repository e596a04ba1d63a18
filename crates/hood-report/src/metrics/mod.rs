//! Prometheus text exposition (format 0.0.4, which OpenMetrics parsers also accept) of the
//! monitor's [`SystemView`], for `hood serve`'s `/metrics`.
//!
//! Counters are the kernel's cumulative values (CPU seconds, context switches, interrupts), so
//! Prometheus derives rates itself; gauges are instantaneous values or ratios over the interval
//! between the server's last two snapshots. Names follow Prometheus's naming guide (base units,
//! `_total` on counters, `_bytes`, `_seconds`) and node_exporter's shape: a label splits a
//! metric only into disjoint parts that sum to something meaningful, so totals and overlapping
//! quantities (memory total, free, available, ...) are separate metrics. Per-process series are limited to the tasks
//! [`select_tasks`] picks (top N by CPU, or those matching a filter), which bounds the label
//! set.

mod encode;
#[cfg(test)]
mod tests;

use hood_monitor::{filter_tasks, SystemView, TaskView};

use encode::Enc;
pub use encode::{escape_label, format_value};

/// Content type of [`render_metrics`]'s output.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Which processes get per-process series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// At most this many processes.
    pub top: usize,
    /// Keep only processes whose pid equals, or name, user or command line contains, this text.
    pub filter: Option<String>,
}

/// The processes to export: those matching the filter (if any), busiest first (CPU over the
/// interval, then resident memory, then pid), at most `sel.top`.
pub fn select_tasks(view: &SystemView, sel: &Selection) -> Vec<TaskView> {
    fn busiest(a: &TaskView, b: &TaskView) -> std::cmp::Ordering {
        let (ca, cb) = (a.cpu_percent.unwrap_or(0.0), b.cpu_percent.unwrap_or(0.0));
        cb.total_cmp(&ca)
            .then(b.res_bytes.cmp(&a.res_bytes))
            .then(a.pid.cmp(&b.pid))
    }
    if let Some(f) = &sel.filter {
        let mut tasks = view.tasks.clone();
        filter_tasks(&mut tasks, f);
        tasks.sort_by(busiest);
        tasks.truncate(sel.top);
        return tasks;
    }
    // Without a filter only the exported few are copied.
    let mut refs: Vec<&TaskView> = view.tasks.iter().collect();
    refs.sort_by(|a, b| busiest(a, b));
    refs.into_iter().take(sel.top).cloned().collect()
}

/// What `hood_build_info` says about the binary serving the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildInfo<'a> {
    /// The package version, e.g. `0.1.0`.
    pub version: &'a str,
    /// The git commit (or `unknown commit`).
    pub commit: &'a str,
    /// The build date, `YYYY-MM-DD`.
    pub date: &'a str,
}

/// Encode `view` with per-process series for `tasks` (see [`select_tasks`]) into `out`.
pub fn render_metrics(
    out: &mut dyn std::io::Write,
    view: &SystemView,
    tasks: &[TaskView],
    build: BuildInfo<'_>,
) -> Result<(), crate::ReportError> {
    let mut e = Enc::default();
    e.family(
        "hood_build_info",
        "gauge",
        "Always 1; the labels say which hood serves these metrics.",
    );
    e.sample(
        "hood_build_info",
        &[
            ("version", build.version),
            ("commit", build.commit),
            ("build_date", build.date),
        ],
        1.0,
    );
    system(&mut e, view);
    processes(&mut e, tasks);
    cgroups(&mut e, view);
    out.write_all(e.finish().as_bytes())?;
    Ok(())
}

/// At most this many cgroups get series (those with the most CPU time, it and below).
pub const MAX_CGROUPS: usize = 100;

/// The cgroups that get series: at most [`MAX_CGROUPS`], the most CPU time first (ties by
/// path), in path order.
pub fn select_cgroups(view: &SystemView) -> Vec<&hood_monitor::view::CgroupView> {
    let Some(cgs) = &view.cgroups else {
        return Vec::new();
    };
    let mut v: Vec<_> = cgs.iter().collect();
    v.sort_by(|a, b| b.cpu_time_ms.cmp(&a.cpu_time_ms).then(a.path.cmp(&b.path)));
    v.truncate(MAX_CGROUPS);
    v.sort_by(|a, b| a.path.cmp(&b.path));
    v
}

fn cgroups(e: &mut Enc, v: &SystemView) {
    let cgs = select_cgroups(v);
    if cgs.is_empty() {
        return;
    }
    let names: Vec<String> = cgs
        .iter()
        .map(|c| hood_monitor::derive::cgroup_name(&c.path))
        .collect();
    type Get<'a> = &'a dyn Fn(&hood_monitor::view::CgroupView) -> Option<f64>;
    // One family, left out where no cgroup has the value (the controller is off).
    let family = |e: &mut Enc, metric: &str, kind: &str, help: &str, f: Get<'_>| {
        let vals: Vec<Option<f64>> = cgs.iter().map(|c| f(c)).collect();
        if vals.iter().all(Option::is_none) {
            return;
        }
        e.family(metric, kind, help);
        for ((c, name), x) in cgs.iter().zip(&names).zip(vals) {
            if let Some(x) = x {
                e.sample(metric, &[("cgroup", c.path.as_str()), ("name", name)], x);
            }
        }
    };
    family(
        e,
        "hood_cgroup_cpu_seconds_total",
        "counter",
        "CPU time of a cgroup (v2) and its descendants (cpu.stat usage_usec).",
        &|c| Some(c.cpu_time_ms as f64 / 1e3),
    );
    family(
        e,
        "hood_cgroup_memory_bytes",
        "gauge",
        "Memory in use by a cgroup and its descendants (memory.current).",
        &|c| c.memory_bytes.map(|b| b as f64),
    );
    family(
        e,
        "hood_cgroup_processes",
        "gauge",
        "Processes in a cgroup and its descendants.",
        &|c| Some(c.tasks as f64),
    );
    family(
        e,
        "hood_cgroup_read_bytes_per_second",
        "gauge",
        "Bytes a cgroup read from block devices per second over the interval (io.stat).",
        &|c| c.read_bytes_per_s,
    );
    family(
        e,
        "hood_cgroup_write_bytes_per_second",
        "gauge",
        "Bytes a cgroup wrote to block devices per second over the interval (io.stat).",
        &|c| c.write_bytes_per_s,
    );
    // As node_exporter's node_pressure_*: "waiting" is the PSI `some` line, "stalled" the
    // `full` one; they overlap, so each is a metric of its own.
    type Psi = fn(&hood_monitor::view::PressureView) -> Option<&hood_monitor::view::PsiView>;
    let kinds: [(&str, Psi); 3] = [
        ("cpu", |p| p.cpu.as_ref()),
        ("memory", |p| p.memory.as_ref()),
        ("io", |p| p.io.as_ref()),
    ];
    for (res, get) in kinds {
        for (full, word) in [(false, "waiting"), (true, "stalled")] {
            let metric = format!("hood_cgroup_pressure_{res}_{word}_seconds_total");
            let help = format!(
                "Time {} tasks of a cgroup {} on {res} (the {} line of {res}.pressure).",
                if full { "all non-idle" } else { "some" },
                if full { "were stalled" } else { "waited" },
                if full { "full" } else { "some" },
            );
            family(e, &metric, "counter", &help, &|c| {
                get(&c.pressure)
                    .and_then(|p| {
                        if full {
                            p.full.as_ref()
                        } else {
                            p.some.as_ref()
                        }
                    })
                    .map(|l| l.total_us as f64 / 1e6)
            });
        }
    }
}

fn system(e: &mut Enc, v: &SystemView) {
    e.family("hood_uptime_seconds", "gauge", "Seconds since boot.");
    e.sample("hood_uptime_seconds", &[], v.uptime.seconds);
    if let Some(i) = v.interval_s {
        e.family(
            "hood_interval_seconds",
            "gauge",
            "Seconds between the two snapshots the ratios were derived from.",
        );
        e.sample("hood_interval_seconds", &[], i);
    }
    e.family(
        "hood_cpu_seconds_total",
        "counter",
        "CPU time since boot by CPU and mode (modes do not overlap).",
    );
    for c in &v.cpus.per_cpu {
        let id = c.id.map_or_else(|| "all".to_string(), |i| i.to_string());
        let t = &c.time_ms;
        let modes = [
            ("user", t.user.saturating_sub(t.nice)),
            ("nice", t.nice),
            ("system", t.system),
            ("idle", t.idle.saturating_sub(t.iowait)),
            ("iowait", t.iowait),
            ("irq", t.irq),
            ("softirq", t.softirq),
            ("steal", t.steal),
        ];
        for (mode, ms) in modes {
            let labels = [("cpu", id.as_str()), ("mode", mode)];
            e.sample("hood_cpu_seconds_total", &labels, ms as f64 / 1e3);
        }
    }
    if let Some(p) = &v.cpus.total.percent {
        e.family(
            "hood_cpu_busy_ratio",
            "gauge",
            "Busy fraction of all CPUs over the last interval (0..1).",
        );
        e.sample("hood_cpu_busy_ratio", &[], p.busy / 100.0);
    }
    e.family("hood_cpus", "gauge", "Online CPUs.");
    e.sample("hood_cpus", &[], v.cpus.per_cpu.len() as f64);
    e.family(
        "hood_context_switches_total",
        "counter",
        "Context switches since boot, all CPUs.",
    );
    e.sample(
        "hood_context_switches_total",
        &[],
        v.cpus.context_switches as f64,
    );
    // One metric per period, as node_exporter's node_load1/5/15: the three overlap, so a
    // label would invite summing them.
    for (name, period, x) in [
        ("hood_load1", "1", v.load.one),
        ("hood_load5", "5", v.load.five),
        ("hood_load15", "15", v.load.fifteen),
    ] {
        e.family(
            name,
            "gauge",
            &format!("Load average over {period} minute(s)."),
        );
        e.sample(name, &[], x);
    }
    e.family("hood_threads_runnable", "gauge", "Runnable threads now.");
    e.sample("hood_threads_runnable", &[], v.load.runnable as f64);
    e.family("hood_threads", "gauge", "Threads now.");
    e.sample("hood_threads", &[], v.load.total as f64);
    e.family("hood_processes", "gauge", "Processes by state letter.");
    for (state, n) in &v.counts.tasks_by_state {
        e.sample("hood_processes", &[("state", state)], *n as f64);
    }
    // Memory: a total and parts that overlap (available includes free and most of cache),
    // so one metric each, as node_exporter's node_memory_*_bytes.
    let m = &v.physmem;
    for (name, help, b) in [
        (
            "hood_memory_total_bytes",
            "Usable physical memory.",
            m.total,
        ),
        (
            "hood_memory_used_bytes",
            "Physical memory in use: total - free - buffers - cache.",
            m.used,
        ),
        ("hood_memory_free_bytes", "Physical memory unused.", m.free),
        (
            "hood_memory_buffers_bytes",
            "Physical memory in block device buffers.",
            m.buffers,
        ),
        (
            "hood_memory_cache_bytes",
            "Physical memory in the page cache and reclaimable slab.",
            m.cache,
        ),
        (
            "hood_memory_available_bytes",
            "The kernel's estimate of memory available for new work (MemAvailable).",
            m.available,
        ),
        ("hood_swap_total_bytes", "Swap space.", m.swap_total),
        ("hood_swap_used_bytes", "Swap space in use.", m.swap_used),
        ("hood_swap_free_bytes", "Swap space unused.", m.swap_free),
    ] {
        e.family(name, "gauge", help);
        e.sample(name, &[], b as f64);
    }
    e.family(
        "hood_interrupts_total",
        "counter",
        "Hardware interrupts since boot by line, all CPUs.",
    );
    for i in &v.exceptions.interrupts {
        let labels = [
            ("irq", i.id.as_str()),
            ("description", i.description.as_str()),
        ];
        e.sample("hood_interrupts_total", &labels, i.total as f64);
    }
    e.family(
        "hood_softirqs_total",
        "counter",
        "Soft interrupts since boot by type, all CPUs.",
    );
    for s in &v.exceptions.softirqs {
        e.sample(
            "hood_softirqs_total",
            &[("type", s.id.as_str())],
            s.total as f64,
        );
    }
}

fn processes(e: &mut Enc, tasks: &[TaskView]) {
    let ids: Vec<(String, &str)> = tasks
        .iter()
        .map(|t| (t.pid.to_string(), t.name.as_str()))
        .collect();
    e.family(
        "hood_process_cpu_seconds_total",
        "counter",
        "CPU time of an exported process since it started, by mode.",
    );
    for (t, (pid, name)) in tasks.iter().zip(&ids) {
        for (mode, ms) in [("user", t.user_time_ms), ("system", t.kernel_time_ms)] {
            let labels = [("pid", pid.as_str()), ("name", name), ("mode", mode)];
            e.sample("hood_process_cpu_seconds_total", &labels, ms as f64 / 1e3);
        }
    }
    e.family(
        "hood_process_cpu_ratio",
        "gauge",
        "CPU of an exported process over the last interval, in CPUs (1 = one busy CPU).",
    );
    for (t, (pid, name)) in tasks.iter().zip(&ids) {
        if let Some(p) = t.cpu_percent {
            let labels = [("pid", pid.as_str()), ("name", name)];
            e.sample("hood_process_cpu_ratio", &labels, p / 100.0);
        }
    }
    // The names of the client libraries' process_resident_memory_bytes and
    // process_virtual_memory_bytes.
    e.family(
        "hood_process_resident_memory_bytes",
        "gauge",
        "Resident memory of an exported process.",
    );
    for (t, (pid, name)) in tasks.iter().zip(&ids) {
        let labels = [("pid", pid.as_str()), ("name", name)];
        e.sample(
            "hood_process_resident_memory_bytes",
            &labels,
            t.res_bytes as f64,
        );
    }
    e.family(
        "hood_process_virtual_memory_bytes",
        "gauge",
        "Virtual memory of an exported process.",
    );
    for (t, (pid, name)) in tasks.iter().zip(&ids) {
        let labels = [("pid", pid.as_str()), ("name", name)];
        e.sample(
            "hood_process_virtual_memory_bytes",
            &labels,
            t.virt_bytes as f64,
        );
    }
    e.family(
        "hood_process_threads",
        "gauge",
        "Threads of an exported process.",
    );
    for (t, (pid, name)) in tasks.iter().zip(&ids) {
        let labels = [("pid", pid.as_str()), ("name", name)];
        e.sample("hood_process_threads", &labels, t.threads as f64);
    }
    e.family(
        "hood_process_context_switches_total",
        "counter",
        "Context switches of all threads of an exported process (the live ones), by kind.",
    );
    for (t, (pid, name)) in tasks.iter().zip(&ids) {
        if let Some(c) = &t.ctx_switches {
            for (kind, n) in [("voluntary", c.voluntary), ("involuntary", c.involuntary)] {
                let labels = [("pid", pid.as_str()), ("name", name), ("kind", kind)];
                e.sample("hood_process_context_switches_total", &labels, n as f64);
            }
        }
    }
}
