//! The task table: columns per view mode, shared by `hood ps`, `hood top -b` and the TUI.

use std::borrow::Cow;

use hood_monitor::{Mode, SortKey, TaskView};

use super::fmt::{bytes, cpu_time, pct, rate, rate_bytes};
use crate::safe;

/// A column of the task table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Pid (or tid).
    Pid,
    /// Owning pid (threads).
    Tgid,
    /// User.
    User,
    /// Priority.
    Pri,
    /// Nice.
    Nice,
    /// Threads.
    Threads,
    /// Virtual memory.
    Virt,
    /// Resident memory.
    Res,
    /// State.
    State,
    /// %CPU.
    Cpu,
    /// %user CPU.
    UserCpu,
    /// %kernel CPU.
    KernelCpu,
    /// %MEM.
    MemPct,
    /// User time.
    UTime,
    /// Kernel time.
    STime,
    /// Total CPU time.
    Time,
    /// Voluntary context switches per second.
    Vcsw,
    /// Involuntary context switches per second.
    Ivcsw,
    /// Read syscalls per second.
    Syscr,
    /// Write syscalls per second.
    Syscw,
    /// Bytes read per second.
    Rchar,
    /// Bytes written per second.
    Wchar,
    /// The cgroup (v2) a process is in: a container's or service's name where the path
    /// shows one, else the path's last component.
    Cgroup,
    /// Name (last column, takes the rest of the line).
    Name,
    /// Command line (last column).
    Command,
}

impl Column {
    /// Header text.
    pub fn header(self) -> &'static str {
        match self {
            Column::Pid => "PID",
            Column::Tgid => "TGID",
            Column::User => "USER",
            Column::Pri => "PR",
            Column::Nice => "NI",
            Column::Threads => "THR",
            Column::Virt => "VIRT",
            Column::Res => "RES",
            Column::State => "S",
            Column::Cpu => "%CPU",
            Column::UserCpu => "%USR",
            Column::KernelCpu => "%SYS",
            Column::MemPct => "%MEM",
            Column::UTime => "UTIME",
            Column::STime => "STIME",
            Column::Time => "TIME+",
            Column::Vcsw => "VCSW/s",
            Column::Ivcsw => "ICSW/s",
            Column::Syscr => "RSYS/s",
            Column::Syscw => "WSYS/s",
            Column::Rchar => "RBYT/s",
            Column::Wchar => "WBYT/s",
            Column::Cgroup => "CGROUP",
            Column::Name => "NAME",
            Column::Command => "COMMAND",
        }
    }

    fn width(self) -> usize {
        match self {
            Column::Pid | Column::Tgid => 7,
            Column::User => 8,
            Column::Pri | Column::Nice => 3,
            Column::Threads => 4,
            Column::Virt | Column::Res => 8,
            Column::State => 1,
            Column::Cpu | Column::UserCpu | Column::KernelCpu | Column::MemPct => 5,
            Column::UTime | Column::STime | Column::Time => 9,
            Column::Vcsw | Column::Ivcsw | Column::Syscr | Column::Syscw => 7,
            Column::Rchar | Column::Wchar => 7,
            Column::Cgroup => 16,
            Column::Name | Column::Command => 15,
        }
    }

    /// The sort key this column sorts by.
    pub fn sort_key(self) -> SortKey {
        match self {
            Column::Pid | Column::Tgid => SortKey::Pid,
            Column::User => SortKey::User,
            Column::Pri => SortKey::Priority,
            Column::Nice => SortKey::Nice,
            Column::Threads => SortKey::Threads,
            Column::Virt => SortKey::Virt,
            Column::Res | Column::MemPct => SortKey::Res,
            Column::State => SortKey::State,
            Column::Cpu => SortKey::Cpu,
            Column::UserCpu => SortKey::UserCpu,
            Column::KernelCpu => SortKey::KernelCpu,
            Column::UTime | Column::STime | Column::Time => SortKey::Time,
            Column::Vcsw | Column::Ivcsw => SortKey::Ctx,
            Column::Syscr | Column::Syscw => SortKey::Syscalls,
            Column::Rchar | Column::Wchar => SortKey::Bytes,
            Column::Name | Column::Command | Column::Cgroup => SortKey::Name,
        }
    }

    /// Which columns go first when a line is too narrow for all of them (higher first); 0:
    /// never (the pid, %CPU and the last column, which says which process a row is).
    fn drop_rank(self) -> u8 {
        match self {
            Column::Cgroup => 21,
            Column::Pri => 20,
            Column::Nice => 19,
            Column::Virt => 18,
            Column::KernelCpu => 17,
            Column::UserCpu => 16,
            Column::UTime | Column::STime => 15,
            Column::MemPct => 14,
            Column::Threads => 13,
            Column::Tgid => 12,
            Column::Wchar => 11,
            Column::Rchar => 10,
            Column::Syscw => 9,
            Column::Ivcsw => 8,
            Column::User => 7,
            Column::Time => 6,
            Column::Syscr => 5,
            Column::Vcsw => 4,
            Column::Res => 3,
            Column::State => 2,
            Column::Pid | Column::Cpu | Column::Name | Column::Command => 0,
        }
    }

    fn left(self) -> bool {
        matches!(
            self,
            Column::User | Column::State | Column::Name | Column::Command | Column::Cgroup
        )
    }

    fn value(self, t: &TaskView) -> Cow<'_, str> {
        match self {
            Column::User => match (&t.user, t.uid) {
                (Some(u), _) => Cow::Borrowed(u),
                (None, Some(uid)) => Cow::Owned(uid.to_string()),
                (None, None) => Cow::Borrowed("-"),
            },
            Column::State => Cow::Borrowed(&t.state),
            Column::Name => Cow::Borrowed(&t.name),
            c => Cow::Owned(c.formatted(t)),
        }
    }

    fn formatted(self, t: &TaskView) -> String {
        let ctx = t.ctx_switches.as_ref();
        let io = t.io.as_ref();
        match self {
            Column::Pid => t.pid.to_string(),
            Column::Tgid => t.tgid.to_string(),
            Column::User => t
                .user
                .clone()
                .or_else(|| t.uid.map(|u| u.to_string()))
                .unwrap_or_else(|| "-".into()),
            Column::Pri => {
                if t.priority <= -100 {
                    "rt".into()
                } else {
                    t.priority.to_string()
                }
            }
            Column::Nice => t.nice.to_string(),
            Column::Threads => t.threads.to_string(),
            Column::Virt => bytes(t.virt_bytes),
            Column::Res => bytes(t.res_bytes),
            Column::State => t.state.clone(),
            Column::Cpu => pct(t.cpu_percent),
            Column::UserCpu => pct(t.user_percent),
            Column::KernelCpu => pct(t.kernel_percent),
            Column::MemPct => format!("{:.1}", t.mem_percent),
            Column::UTime => cpu_time(t.user_time_ms),
            Column::STime => cpu_time(t.kernel_time_ms),
            Column::Time => cpu_time(t.user_time_ms + t.kernel_time_ms),
            Column::Vcsw => rate(ctx.and_then(|c| c.voluntary_per_s)),
            Column::Ivcsw => rate(ctx.and_then(|c| c.involuntary_per_s)),
            Column::Syscr => rate(io.and_then(|c| c.syscr_per_s)),
            Column::Syscw => rate(io.and_then(|c| c.syscw_per_s)),
            Column::Rchar => rate_bytes(io.and_then(|c| c.rchar_per_s)),
            Column::Wchar => rate_bytes(io.and_then(|c| c.wchar_per_s)),
            Column::Name => t.name.clone(),
            Column::Cgroup => t
                .cgroup
                .as_deref()
                .map_or_else(|| "-".into(), hood_monitor::derive::cgroup_name),
            Column::Command => match t.cmdline.as_deref() {
                Some(c) if !c.is_empty() => c.to_string(),
                _ => format!("[{}]", t.name),
            },
        }
    }
}

/// The columns of a `hood top` mode (for [`Mode::Exceptions`] the task columns are unused).
pub fn columns_for(mode: Mode) -> Vec<Column> {
    use Column::*;
    match mode {
        Mode::Tasks | Mode::Exceptions | Mode::Cgroups => vec![
            Pid, User, Pri, Nice, Threads, Virt, Res, State, Cpu, UserCpu, KernelCpu, MemPct, Time,
            Cgroup, Name,
        ],
        Mode::Ipc => vec![
            Pid, User, Cpu, Vcsw, Ivcsw, Syscr, Syscw, Rchar, Wchar, Name,
        ],
        Mode::Threads => vec![
            Pid, Tgid, User, Pri, Nice, State, Cpu, UserCpu, KernelCpu, Time, Name,
        ],
    }
}

/// Append `s` as the cell of column `c`: left columns cut or padded to their width, right
/// columns padded (numbers are never cut), the last column as is.
fn push_cell(l: &mut String, c: Column, s: &str, last: bool) {
    let w = c.width();
    if last {
        l.push_str(s);
    } else if c.left() {
        let mut n = 0;
        for ch in s.chars().take(w) {
            l.push(ch);
            n += 1;
        }
        l.extend(std::iter::repeat_n(' ', w - n));
    } else {
        let n = s.chars().count();
        l.extend(std::iter::repeat_n(' ', w.saturating_sub(n)));
        l.push_str(s);
    }
}

/// Cut a line to at most `width` characters, in place.
fn clip_in_place(l: &mut String, width: usize) {
    if l.len() > width {
        if let Some((i, _)) = l.char_indices().nth(width) {
            l.truncate(i);
        }
    }
}

/// Room the last column (the name or command line) keeps before other columns are dropped.
const LAST_MIN: usize = 15;

/// `cols` without the columns that leave the last one less than 15 characters of `width`,
/// the least needed dropped first (PR, NI, VIRT, %SYS, %USR, ...; never the pid or %CPU), so
/// every row still says which process it is.
pub fn fit_columns(cols: &[Column], width: usize) -> Vec<Column> {
    let mut cols = cols.to_vec();
    let fixed = |cols: &[Column]| -> usize {
        cols[..cols.len().saturating_sub(1)]
            .iter()
            .map(|c| c.width() + 1)
            .sum()
    };
    while fixed(&cols) + LAST_MIN > width {
        let last = cols.len().saturating_sub(1);
        let Some(i) = (0..last)
            .filter(|&i| cols[i].drop_rank() > 0)
            .max_by_key(|&i| cols[i].drop_rank())
        else {
            break;
        };
        cols.remove(i);
    }
    cols
}

/// Render the header line and one line per task, each cut to `width` characters. The last
/// column takes whatever room is left; columns are dropped by priority ([`fit_columns`]) so
/// it keeps at least 15 characters. `sorted` marks the sorted column's header with `*`.
pub fn render_table(
    tasks: &[TaskView],
    cols: &[Column],
    width: usize,
    sorted: Option<SortKey>,
) -> Vec<String> {
    let cols = &fit_columns(cols, width)[..];
    let mut out = Vec::with_capacity(tasks.len() + 1);
    let n = cols.len();
    let line_cap = cols.iter().map(|c| c.width() + 1).sum::<usize>() + 16;
    let mut l = String::with_capacity(line_cap);
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            l.push(' ');
        }
        let mut h = c.header().to_string();
        if sorted == Some(c.sort_key()) && !matches!(c, Column::Tgid | Column::Cgroup) {
            h.push('*');
        }
        push_cell(&mut l, *c, &h, i + 1 == n);
    }
    clip_in_place(&mut l, width);
    out.push(l);
    for t in tasks {
        let mut l = String::with_capacity(line_cap);
        for (i, c) in cols.iter().enumerate() {
            if i > 0 {
                l.push(' ');
            }
            // Names, users and command lines come from processes: escaped, so that none
            // can drive the terminal or, with a newline, forge a row.
            push_cell(&mut l, *c, &safe::text(&c.value(t)), i + 1 == n);
        }
        clip_in_place(&mut l, width);
        out.push(l);
    }
    out
}

/// Put `tasks` (sorted and filtered) in process-tree order, as htop's tree view: each
/// process after its parent, siblings in their sorted order, and its name (and command line)
/// prefixed with the branches that lead to it. A process whose parent is not among `tasks`
/// is a root; every task is kept exactly once, whatever the parent links say.
pub fn into_tree(tasks: &mut Vec<TaskView>) {
    use std::collections::HashMap;
    let n = tasks.len();
    let index: HashMap<u32, usize> = tasks.iter().enumerate().map(|(i, t)| (t.pid, i)).collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        match index.get(&t.ppid) {
            Some(&p) if p != i => children[p].push(i),
            _ => roots.push(i),
        }
    }
    // (task, prefix of its children's branches, its own branch)
    let mut order: Vec<(usize, String)> = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    // Tasks left unvisited (a parent loop) become roots after the first pass.
    let mut pending: Vec<usize> = roots;
    let mut start = 0;
    loop {
        let mut stack: Vec<(usize, String, String)> = pending[start..]
            .iter()
            .rev()
            .map(|&i| (i, String::new(), String::new()))
            .collect();
        start = pending.len();
        while let Some((i, lead, branch)) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            order.push((i, format!("{lead}{branch}")));
            let kids = &children[i];
            for (k, &c) in kids.iter().enumerate().rev() {
                let last = k + 1 == kids.len();
                let lead = match branch.as_str() {
                    "" => lead.clone(),
                    b if b.starts_with('\u{2514}') => format!("{lead}   "),
                    _ => format!("{lead}\u{2502}  "),
                };
                let b = if last {
                    "\u{2514}\u{2500} "
                } else {
                    "\u{251c}\u{2500} "
                };
                stack.push((c, lead, b.to_string()));
            }
        }
        match (0..n).find(|&i| !seen[i]) {
            Some(i) => pending.push(i),
            None => break,
        }
    }
    let mut old: Vec<Option<TaskView>> = std::mem::take(tasks).into_iter().map(Some).collect();
    for (i, prefix) in order {
        if let Some(mut t) = old[i].take() {
            if !prefix.is_empty() {
                t.name.insert_str(0, &prefix);
                if let Some(c) = t.cmdline.as_mut().filter(|c| !c.is_empty()) {
                    c.insert_str(0, &prefix);
                }
            }
            tasks.push(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_80_columns_every_mode_keeps_the_name_and_drops_by_priority() {
        for mode in [Mode::Tasks, Mode::Ipc, Mode::Threads] {
            let all = columns_for(mode);
            let fit = fit_columns(&all, 80);
            assert_eq!(fit.last(), all.last(), "{mode:?}");
            assert!(fit.contains(&Column::Pid) && fit.contains(&Column::Cpu));
            let used: usize = fit[..fit.len() - 1].iter().map(|c| c.width() + 1).sum();
            assert!(used + LAST_MIN <= 80, "{mode:?}: {fit:?}");
            // Nothing is dropped that fits.
            assert_eq!(fit_columns(&all, 400), all);
        }
        let t = TaskView {
            pid: 4242,
            name: "memfd:sealed-91".into(),
            ..TaskView::default()
        };
        let lines = render_table(
            std::slice::from_ref(&t),
            &columns_for(Mode::Tasks),
            80,
            None,
        );
        assert!(lines[0].ends_with("NAME"), "{}", lines[0]);
        assert!(lines[1].ends_with("memfd:sealed-91"), "{}", lines[1]);
        assert!(!lines[0].contains("VIRT") && !lines[0].contains("PR "));
        // CGROUP goes first of all.
        assert!(!fit_columns(&columns_for(Mode::Tasks), 80).contains(&Column::Cgroup));
        assert!(fit_columns(&columns_for(Mode::Tasks), 200).contains(&Column::Cgroup));
        // A terminal too narrow for even the kept columns cuts the line, never panics.
        let _ = render_table(&[t], &columns_for(Mode::Tasks), 5, None);
    }
}

#[cfg(test)]
mod tree_tests {
    use super::*;

    fn t(pid: u32, ppid: u32) -> TaskView {
        TaskView {
            pid,
            ppid,
            name: format!("p{pid}"),
            ..TaskView::default()
        }
    }

    #[test]
    fn children_follow_their_parent_with_branches_and_a_loop_loses_nobody() {
        // Sorted order: 5 before 2, so 5's subtree comes first among 1's children.
        let mut v = vec![
            t(1, 0),
            t(5, 1),
            t(7, 5),
            t(2, 1),
            t(9, 99),
            t(30, 31),
            t(31, 30),
        ];
        into_tree(&mut v);
        let names: Vec<&str> = v.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "p1",
                "\u{251c}\u{2500} p5",
                "\u{2502}  \u{2514}\u{2500} p7",
                "\u{2514}\u{2500} p2",
                "p9",
                "p30",
                "\u{2514}\u{2500} p31",
            ]
        );
    }
}
