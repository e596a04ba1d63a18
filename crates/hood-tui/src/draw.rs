//! Drawing one screen from the app state.

use hood_monitor::Mode;
use hood_report::monitor::top::{body_with, header};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use crate::App;

/// The keys of the full-screen view, as `?` shows them (the man page lists them too).
pub const HELP: &[&str] = &[
    "hood top keys",
    "",
    "  t  tasks (again, or F5: process tree)    i  context switches and syscalls",
    "  e  interrupts    o  cgroup tree    H  threads    c  command line / name",
    "  up/down (j), PgUp/PgDn, Home/End  select a process",
    "  k (F9)  send it a signal (SIGTERM; or type 9 KILL, 1 HUP, 19 STOP, 18 CONT)",
    "  n  renice it (F7/F8: -1/+1)   both ask first: Enter does it, Esc cancels;",
    "     pid 1 and hood itself are refused",
    "  < >  sort by previous/next column    R  reverse order",
    "  P %CPU  M memory  T time  N pid  U user  C name",
    "  S context switches/s  Y syscalls/s  B bytes/s",
    "  /  filter by text (Enter apply; Esc clears the filter)",
    "  space  pause     ?  help     q (Esc)  quit",
    "  * after a column name (%CPU*): the table is sorted by it",
    "  %CPU: percent of one CPU (200 = two busy CPUs)",
    "  S column X: the process ended during the interval (its CPU until exit)",
    "  CGROUP: a container's or service's name (docker:ID, service:NAME)",
    "  narrow terminal: CGROUP PR NI VIRT %SYS ... go first; PID %CPU NAME stay",
    "  replay (--replay):  left/right or [ ]  one interval back/forward",
    "       { }  60 intervals    g  go to a time (10:42, 3h ago)    G  last",
    "",
    "any key closes this help",
];

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Tasks => "tasks",
        Mode::Ipc => "activity",
        Mode::Exceptions => "interrupts",
        Mode::Threads => "threads",
        Mode::Cgroups => "cgroups",
    }
}

/// Draw the whole screen. Works at any size (a 1x1 terminal shows what fits).
pub fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    let width = area.width as usize;
    let Some(v) = &app.shown else {
        f.render_widget(
            Paragraph::new("hood top: taking the first two snapshots..."),
            area,
        );
        return;
    };
    let head: Vec<Line> = header(v, width).into_iter().map(Line::from).collect();
    let head_h = (head.len() as u16).min(area.height.saturating_sub(2));
    let [top, mid, status] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(head), top);

    let lines = body_with(v, app.cfg.mode, width, Some(app.cfg.sort), app.command);
    let room = mid.height as usize;
    let mut shown: Vec<Line> = Vec::with_capacity(room);
    if let Some((first, rest)) = lines.split_first() {
        let sticky = app.cfg.mode != Mode::Exceptions;
        if sticky {
            shown.push(Line::styled(
                format!("{first:<width$}"),
                Style::default().add_modifier(Modifier::REVERSED),
            ));
        } else {
            shown.push(Line::from(first.clone()));
        }
        let body_room = room.saturating_sub(1).max(1);
        app.room.set(body_room);
        let mut skip = app.scroll.get().min(rest.len().saturating_sub(1));
        let cursor = app.task_table().then_some(app.cursor);
        if let Some(c) = cursor {
            // Keep the selected row in sight.
            if c < skip {
                skip = c;
            } else if c >= skip + body_room {
                skip = c + 1 - body_room;
            }
        }
        app.scroll.set(skip);
        shown.extend(
            rest.iter()
                .enumerate()
                .skip(skip)
                .take(room.saturating_sub(1))
                .map(|(i, l)| {
                    if cursor == Some(i) {
                        Line::styled(
                            format!("{l:<width$}"),
                            Style::default().fg(Color::Black).bg(Color::Cyan),
                        )
                    } else {
                        Line::from(l.as_str())
                    }
                }),
        );
    }
    f.render_widget(Paragraph::new(shown), mid);

    let replay = app.replay.as_ref();
    let status_text = match (&app.editing, replay) {
        _ if app.prompt.is_some() => app.prompt.as_ref().map(|p| p.line()).unwrap_or_default(),
        _ if app.note.is_some() => app.note.clone().unwrap_or_default(),
        (Some(buf), _) => format!("filter: {buf}_"),
        (None, Some(r)) => match (&r.jumping, &r.note) {
            (Some(buf), _) => format!("go to (10:42, 3h ago, 2026-11-26 10:42): {buf}_"),
            (None, Some(note)) => note.clone(),
            (None, None) => format!(
                "replay {} | mode {} | sort {} | filter {} | <-/-> step  g go to  G last  ? help  q quit",
                hood_monitor::when::format_time(v.uptime.wall_time_s, r.utc_offset_s),
                mode_name(app.cfg.mode),
                app.cfg.sort.name(),
                if app.cfg.filter.is_empty() {
                    "-"
                } else {
                    &app.cfg.filter
                },
            ),
        },
        (None, None) => format!(
            "mode {}{} | sort {}{} | filter {} | every {:.1}s{} | ? help  q quit",
            mode_name(app.cfg.mode),
            if app.tree { " tree" } else { "" },
            app.cfg.sort.name(),
            if app.cfg.descending { " desc" } else { " asc" },
            if app.cfg.filter.is_empty() {
                "-"
            } else {
                &app.cfg.filter
            },
            app.cfg.delay.as_secs_f64(),
            if app.paused { " | PAUSED" } else { "" }
        ),
    };
    f.render_widget(
        Paragraph::new(Line::styled(
            status_text,
            Style::default().add_modifier(Modifier::BOLD),
        )),
        status,
    );

    if app.help {
        let w = (HELP.iter().map(|l| l.len()).max().unwrap_or(0) as u16 + 2).min(area.width);
        let h = (HELP.len() as u16 + 2).min(area.height);
        let r = Rect {
            x: area.x + (area.width - w) / 2,
            y: area.y + (area.height - h) / 2,
            width: w,
            height: h,
        };
        f.render_widget(Clear, r);
        f.render_widget(
            Paragraph::new(HELP.iter().map(|l| Line::from(*l)).collect::<Vec<_>>())
                .block(Block::default().borders(Borders::ALL).title("help")),
            r,
        );
    }
}
