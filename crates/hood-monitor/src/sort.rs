//! Sorting and filtering of task lists: sort by any column, filter by text.

use std::cmp::Ordering;

use crate::view::{SystemView, TaskView};

/// A column tasks can be sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// Process (or thread) id.
    Pid,
    /// Name.
    Name,
    /// User name (or uid).
    User,
    /// State letter.
    State,
    /// Thread count.
    Threads,
    /// Kernel priority.
    Priority,
    /// Nice.
    Nice,
    /// Virtual memory.
    Virt,
    /// Resident memory (same order as %mem).
    Res,
    /// CPU percent over the interval (falls back to total time).
    Cpu,
    /// User CPU percent.
    UserCpu,
    /// Kernel CPU percent.
    KernelCpu,
    /// Total CPU time.
    Time,
    /// Context switches per second (voluntary + involuntary).
    Ctx,
    /// Read + write syscalls per second.
    Syscalls,
    /// Bytes read + written per second.
    Bytes,
}

impl SortKey {
    /// Every key, in column order.
    pub const ALL: [SortKey; 16] = [
        SortKey::Pid,
        SortKey::User,
        SortKey::Priority,
        SortKey::Nice,
        SortKey::Virt,
        SortKey::Res,
        SortKey::State,
        SortKey::Cpu,
        SortKey::UserCpu,
        SortKey::KernelCpu,
        SortKey::Time,
        SortKey::Threads,
        SortKey::Ctx,
        SortKey::Syscalls,
        SortKey::Bytes,
        SortKey::Name,
    ];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Pid => "pid",
            SortKey::Name => "name",
            SortKey::User => "user",
            SortKey::State => "state",
            SortKey::Threads => "threads",
            SortKey::Priority => "pri",
            SortKey::Nice => "nice",
            SortKey::Virt => "virt",
            SortKey::Res => "mem",
            SortKey::Cpu => "cpu",
            SortKey::UserCpu => "ucpu",
            SortKey::KernelCpu => "kcpu",
            SortKey::Time => "time",
            SortKey::Ctx => "ctx",
            SortKey::Syscalls => "syscalls",
            SortKey::Bytes => "bytes",
        }
    }

    /// Parse a key name (also accepts a few aliases such as `res`, `rss`, `%cpu`, `comm`).
    pub fn parse(s: &str) -> Option<SortKey> {
        let s = s.trim().trim_start_matches('%').to_ascii_lowercase();
        let alias = match s.as_str() {
            "id" | "tid" => Some(SortKey::Pid),
            "comm" | "command" => Some(SortKey::Name),
            "res" | "rss" | "rsz" => Some(SortKey::Res),
            "vsz" | "virtual" => Some(SortKey::Virt),
            "prio" | "priority" => Some(SortKey::Priority),
            "s" => Some(SortKey::State),
            "nlwp" | "thr" => Some(SortKey::Threads),
            "io" => Some(SortKey::Bytes),
            _ => None,
        };
        alias.or_else(|| SortKey::ALL.into_iter().find(|k| k.name() == s))
    }

    /// Whether the natural direction is largest first (numbers that mean "more activity").
    pub fn descending_by_default(self) -> bool {
        !matches!(
            self,
            SortKey::Pid | SortKey::Name | SortKey::User | SortKey::State
        )
    }
}

fn f(x: Option<f64>) -> f64 {
    x.unwrap_or(-1.0)
}

fn ctx_rate(t: &TaskView) -> f64 {
    t.ctx_switches
        .as_ref()
        .map(|c| f(c.voluntary_per_s).max(0.0) + f(c.involuntary_per_s).max(0.0))
        .unwrap_or(-1.0)
}

fn sys_rate(t: &TaskView) -> f64 {
    t.io.as_ref()
        .map(|c| f(c.syscr_per_s).max(0.0) + f(c.syscw_per_s).max(0.0))
        .unwrap_or(-1.0)
}

fn byte_rate(t: &TaskView) -> f64 {
    t.io.as_ref()
        .map(|c| f(c.rchar_per_s).max(0.0) + f(c.wchar_per_s).max(0.0))
        .unwrap_or(-1.0)
}

/// Compare two tasks by `key`, ascending.
pub fn compare(a: &TaskView, b: &TaskView, key: SortKey) -> Ordering {
    match key {
        SortKey::Pid => a.pid.cmp(&b.pid),
        SortKey::Name => a.name.cmp(&b.name),
        SortKey::User => a.user.cmp(&b.user).then(a.uid.cmp(&b.uid)),
        SortKey::State => a.state.cmp(&b.state),
        SortKey::Threads => a.threads.cmp(&b.threads),
        SortKey::Priority => a.priority.cmp(&b.priority),
        SortKey::Nice => a.nice.cmp(&b.nice),
        SortKey::Virt => a.virt_bytes.cmp(&b.virt_bytes),
        SortKey::Res => a.res_bytes.cmp(&b.res_bytes),
        SortKey::Cpu => f(a.cpu_percent)
            .total_cmp(&f(b.cpu_percent))
            .then((a.user_time_ms + a.kernel_time_ms).cmp(&(b.user_time_ms + b.kernel_time_ms))),
        SortKey::UserCpu => f(a.user_percent).total_cmp(&f(b.user_percent)),
        SortKey::KernelCpu => f(a.kernel_percent).total_cmp(&f(b.kernel_percent)),
        SortKey::Time => {
            (a.user_time_ms + a.kernel_time_ms).cmp(&(b.user_time_ms + b.kernel_time_ms))
        }
        SortKey::Ctx => ctx_rate(a).total_cmp(&ctx_rate(b)),
        SortKey::Syscalls => sys_rate(a).total_cmp(&sys_rate(b)),
        SortKey::Bytes => byte_rate(a).total_cmp(&byte_rate(b)),
    }
}

/// Sort tasks by `key`; ties are broken by pid so the order is stable between frames.
pub fn sort_tasks(tasks: &mut [TaskView], key: SortKey, descending: bool) {
    tasks.sort_by(|a, b| {
        let o = compare(a, b, key);
        let o = if descending { o.reverse() } else { o };
        o.then(a.pid.cmp(&b.pid))
    });
}

/// Keep tasks whose pid, name, user or command line contains `text` (case-insensitive).
/// An empty filter keeps everything.
pub fn filter_tasks(tasks: &mut Vec<TaskView>, text: &str) {
    let needle = text.trim().to_lowercase();
    if needle.is_empty() {
        return;
    }
    tasks.retain(|t| {
        t.pid.to_string() == needle
            || t.name.to_lowercase().contains(&needle)
            || t.user
                .as_deref()
                .is_some_and(|u| u.to_lowercase().contains(&needle))
            || t.cmdline
                .as_deref()
                .is_some_and(|c| c.to_lowercase().contains(&needle))
    });
}

/// Filter (by `filter`, see [`filter_tasks`]; empty keeps all) and sort (by `key`, see
/// [`sort_tasks`]) the task list and, when present, the thread list of a view, in place: what
/// `hood ps`, `hood top -b` and the TUI show.
pub fn arrange(v: &mut SystemView, key: SortKey, descending: bool, filter: &str) {
    filter_tasks(&mut v.tasks, filter);
    sort_tasks(&mut v.tasks, key, descending);
    if let Some(t) = v.threads.as_mut() {
        filter_tasks(t, filter);
        sort_tasks(t, key, descending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: u32, name: &str, res: u64) -> TaskView {
        TaskView {
            pid,
            name: name.into(),
            res_bytes: res,
            ..TaskView::default()
        }
    }

    #[test]
    fn arrange_filters_then_sorts_tasks_and_threads() {
        let mut v = SystemView {
            tasks: vec![
                task(3, "bash", 10),
                task(1, "init", 30),
                task(2, "bashful", 20),
            ],
            threads: Some(vec![
                task(7, "bash", 5),
                task(8, "worker", 9),
                task(9, "bash", 6),
            ]),
            ..SystemView::default()
        };
        arrange(&mut v, SortKey::Res, true, "BASH");
        let pids: Vec<u32> = v.tasks.iter().map(|t| t.pid).collect();
        assert_eq!(pids, [2, 3]);
        let tids: Vec<u32> = v.threads.as_ref().unwrap().iter().map(|t| t.pid).collect();
        assert_eq!(tids, [9, 7]);

        // An empty filter keeps everything; ascending by pid.
        let mut w = SystemView {
            tasks: vec![task(3, "a", 0), task(1, "b", 0), task(2, "c", 0)],
            ..SystemView::default()
        };
        arrange(&mut w, SortKey::Pid, false, "");
        let pids: Vec<u32> = w.tasks.iter().map(|t| t.pid).collect();
        assert_eq!(pids, [1, 2, 3]);
    }
}
