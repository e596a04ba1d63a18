//! The `hood info` tree: the `system.*` nodes, listed and looked up by path.

use serde_json::Value;

use crate::view::SystemView;

/// Top-level nodes with a one-line description, in display order.
pub const NODES: [(&str, &str); 9] = [
    ("system.uptime", "time since boot and wall clock"),
    (
        "system.load",
        "1/5/15-minute load averages, runnable and total threads",
    ),
    (
        "system.cpus",
        "per-CPU busy/idle/user/system/irq/softirq/steal/iowait time and percent",
    ),
    ("system.physmem", "physical memory and swap"),
    ("system.counts", "tasks and threads by state"),
    (
        "system.tasks",
        "processes: memory, CPU time and percent, context switches, syscalls",
    ),
    ("system.threads", "threads: the same per thread"),
    (
        "system.exceptions",
        "interrupt lines and softirqs with per-CPU counts and rates",
    ),
    (
        "system.interval_s",
        "seconds between the two snapshots rates were derived from",
    ),
];

/// Serialize the view into the JSON tree (`{"system": {...}}` minus the wrapper).
pub fn to_value(view: &SystemView) -> Value {
    serde_json::to_value(view).unwrap_or(Value::Null)
}

fn matches_id(item: &Value, seg: &str) -> bool {
    ["pid", "id"].iter().any(|k| match item.get(*k) {
        Some(Value::Number(n)) => n.to_string() == seg,
        Some(Value::String(s)) => s == seg,
        _ => false,
    })
}

/// Look up one node by dotted path (`system.load`, `system.tasks.1234`, `system.cpus.per_cpu.0`,
/// `system.tasks.1234.name`). List elements are addressed by their `pid` or `id`. The `system.`
/// prefix is optional. Returns `None` for a path that does not exist.
pub fn lookup(view: &SystemView, path: &str) -> Option<Value> {
    let root = to_value(view);
    let path = path.trim().trim_matches('.');
    let rest = path
        .strip_prefix("system")
        .map(|r| r.trim_start_matches('.'))
        .unwrap_or(path);
    let mut node = &root;
    for seg in rest.split('.').filter(|s| !s.is_empty()) {
        node = match node {
            Value::Object(m) => match m.get(seg) {
                Some(v) => v,
                // `system.cpus.N` as a shortcut for `system.cpus.per_cpu.N`.
                None => m.get("per_cpu").and_then(|v| find_in(v, seg))?,
            },
            Value::Array(_) => find_in(node, seg)?,
            _ => return None,
        };
    }
    Some(node.clone())
}

fn find_in<'a>(list: &'a Value, seg: &str) -> Option<&'a Value> {
    list.as_array()?.iter().find(|i| matches_id(i, seg))
}

/// Every path of the tree down to individual tasks, threads, CPUs and interrupt lines,
/// each with a short description.
pub fn list_paths(view: &SystemView) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, desc) in NODES {
        out.push((path.to_string(), desc.to_string()));
        match path {
            "system.cpus" => {
                for c in &view.cpus.per_cpu {
                    let id = c.id.unwrap_or(0);
                    out.push((format!("system.cpus.{id}"), format!("CPU {id}")));
                }
            }
            "system.tasks" => {
                for t in &view.tasks {
                    out.push((format!("system.tasks.{}", t.pid), t.name.clone()));
                }
            }
            "system.threads" => {
                for t in view.threads.iter().flatten() {
                    out.push((
                        format!("system.threads.{}", t.pid),
                        format!("{} (task {})", t.name, t.tgid),
                    ));
                }
            }
            "system.exceptions" => {
                for i in &view.exceptions.interrupts {
                    out.push((
                        format!("system.exceptions.interrupts.{}", i.id),
                        i.description.clone(),
                    ));
                }
                for i in &view.exceptions.softirqs {
                    out.push((
                        format!("system.exceptions.softirqs.{}", i.id),
                        "softirq".into(),
                    ));
                }
                if view.exceptions.irq_time.is_some() {
                    out.push((
                        "system.exceptions.irq_time".into(),
                        "time per irq/softirq handler (--irq-time)".into(),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}
