//! Tests of the text report and the call trees on hand-built profiles.

use hood_model::profile::{Mode, Profile};

use super::testutil::{known, Builder};
use super::*;

fn text(prof: &Profile, opts: &ReportOptions) -> String {
    let mut out = Vec::new();
    render_text(prof, opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The only line containing `needle`.
fn line<'a>(s: &'a str, needle: &str) -> &'a str {
    let found: Vec<&str> = s.lines().filter(|l| l.contains(needle)).collect();
    assert_eq!(found.len(), 1, "{needle:?} in:\n{s}");
    found[0]
}

/// The numbers (percentages and counts) on a line, in order.
fn numbers(l: &str) -> Vec<f64> {
    l.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[test]
fn header_counts_modes_with_percentages() {
    let s = text(&known(), &ReportOptions::default());
    assert_eq!(numbers(line(&s, "Kernel samples:")), [10.0, 1.0]);
    assert_eq!(numbers(line(&s, "User samples:")), [935.0, 93.5]);
    assert_eq!(numbers(line(&s, "Idle samples:")), [55.0, 5.5]);
    assert_eq!(numbers(line(&s, "Total samples:")), [1000.0, 100.0]);
    assert!(line(&s, "Recorded:").contains("command `./work 60`"));
    assert!(line(&s, "Event:").contains("cpu-clock, 1000 Hz"));
    assert_eq!(numbers(line(&s, "Lost samples:")), [0.0]);
    // A command: 945 samples of its 3 threads (idle excluded) in 500.5 ms, at most 2 running
    // at a time on 2 CPUs.
    let rate = line(&s, "Sample rate:");
    assert!(
        rate.starts_with("Sample rate:  944.1 Hz per running thread (asked 1000 Hz): 945 samples"),
        "{rate}"
    );
    assert!(rate.ends_with("/ 500.5 ms / 2 threads"), "{rate}");
    let next = s
        .lines()
        .skip_while(|l| !l.starts_with("Sample rate:"))
        .nth(1)
        .unwrap();
    assert_eq!(
        next.trim(),
        "(3 threads on 2 CPUs, at most 2 at a time; a thread is sampled only while it runs)"
    );
}

#[test]
fn functions_ranked_with_process_and_small_rows_folded() {
    let s = text(&known(), &ReportOptions::default());
    let top: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("Highest-scoring"))
        .skip(2)
        .take(7)
        .collect();
    assert!(top[0].starts_with("  50.0%  ") && top[0].ends_with("work_a         work (100)"));
    assert!(
        top[2].starts_with("  10.0%")
            && top[2].contains("spin")
            && top[2].ends_with("helper (200)")
    );
    assert!(
        top[5].contains("read_zero [k]"),
        "kernel functions are marked"
    );
    assert!(top[6].starts_with("   0.5%") && top[6].ends_with("<1% (1 function)"));
    // The bar of the top row fills the bar width; half the share, half the bar.
    assert_eq!(top[0].matches('*').count(), 30);
    assert_eq!(top[1].matches('*').count(), 15);
    assert!(
        !top.iter().any(|l| l.contains("tiny")),
        "0.5% row is folded"
    );
}

#[test]
fn min_percent_folds_and_sums_the_rest() {
    let o = ReportOptions {
        min_percent: 9.0,
        ..Default::default()
    };
    let s = text(&known(), &o);
    // work_c 8.0 + idle 5.5 + read_zero 1.0 + tiny 0.5
    let fold = line(&s, "<9% (4 functions)");
    assert!(fold.starts_with("  15.0%"), "{fold}");
    // In the work section, work_c (9.5% of work) stays, read_zero (1.2%) folds.
    assert!(s.contains("<9% (1 function)"));
    // The idle process (5.5%) gets no section.
    assert!(!s.contains("[idle] (pid 0)"));
    let small = line(&s, "processes <9% (not showing functions): 1");
    assert!(small.ends_with("5.5% of samples"));
}

#[test]
fn one_section_per_process_heaviest_first() {
    let s = text(&known(), &ReportOptions::default());
    let work = s.find("work (pid 100)").unwrap();
    let helper = s.find("helper (pid 200)").unwrap();
    let idle = s.find("[idle] (pid 0)").unwrap();
    assert!(work < helper && helper < idle);
    assert!(line(&s, "work (pid 100)").ends_with("84.0% of all samples (840)"));
    // Percent within the process, then of all samples.
    assert_eq!(numbers(line(&s[work..], "  work_a")), [59.5, 50.0]);
    assert_eq!(numbers(line(&s, "  tiny")), [4.8, 0.5]);
    assert_eq!(numbers(line(&s, "100.0%   10.5%  total")), [100.0, 10.5]);
}

#[test]
fn filters_restrict_samples_and_say_so() {
    let mut o = ReportOptions::default();
    o.filter.pid = Some(200);
    let s = text(&known(), &o);
    assert!(line(&s, "Filter:").contains("pid 200 (105 of 1000 samples)"));
    assert_eq!(numbers(line(&s, "Total samples:")), [105.0, 100.0]);
    assert!(line(&s, "  spin").starts_with("  95.2%"));
    assert!(!s.contains("(pid 200)"), "one process: no repeated section");
    o.filter.pid = Some(999);
    let s = text(&known(), &o);
    assert!(s.contains("No samples pass the filter"));
    let mut o = ReportOptions::default();
    o.filter.mode = Some(Mode::Kernel);
    let s = text(&known(), &o);
    assert!(line(&s, "read_zero [k]").starts_with(" 100.0%"));
}

#[test]
fn flat_tables_by_dso_process_and_thread() {
    let p = known();
    let by = |by| {
        text(
            &p,
            &ReportOptions {
                by,
                ..Default::default()
            },
        )
    };
    let s = by(By::Dso);
    assert_eq!(numbers(line(&s, "  work ")), [83.0, 830.0]);
    assert_eq!(numbers(line(&s, "[kernel.kallsyms]")), [6.5, 65.0]);
    assert!(!s.contains("Highest-scoring"));
    let s = by(By::Process);
    assert_eq!(numbers(line(&s, "helper (200)")), [10.5, 200.0, 105.0]);
    let s = by(By::Thread);
    assert!(line(&s, "[spinner]").starts_with("  10.0%"));
    assert!(s.contains("<1% (1 thread)"));
}

#[test]
fn max_rows_truncates_with_an_other_line() {
    let o = ReportOptions {
        max_rows: Some(2),
        ..Default::default()
    };
    let s = text(&known(), &o);
    // 1000 - 500 - 250
    assert!(line(&s, "(other 5 functions)").starts_with("  25.0%"));
}

#[test]
fn lost_throttled_warnings_and_unfinalized_files_are_reported() {
    let mut b = Builder::new();
    let f = b.func("f", "x");
    b.samples(1, 1, Mode::User, &[f], 990);
    let mut p = b.finish(&[(0, 4), (1, 6)]);
    p.stats
        .as_mut()
        .unwrap()
        .per_cpu
        .get_mut(&1)
        .unwrap()
        .throttled = 2;
    p.warnings
        .push("build-id of /bin/x changed since recording".into());
    let s = text(&p, &ReportOptions::default());
    let lost = line(&s, "Lost samples:");
    assert!(
        lost.contains("10 (1.00% of 1000 generated) — cpu0 4, cpu1 6"),
        "{lost}"
    );
    assert!(line(&s, "Throttled:").contains("2 times") && s.contains("— cpu1 2"));
    assert!(s.contains("Warning: build-id of /bin/x changed"));
    p.stats = None;
    p.lost_in_stream = 3;
    let s = text(&p, &ReportOptions::default());
    assert!(line(&s, "Lost samples:").starts_with("Lost samples: 3 "));
    assert!(s.contains("Not finalized"));
}

#[test]
fn empty_profile_renders_without_panicking() {
    let p = Profile::default();
    let s = text(&p, &ReportOptions::default());
    assert!(s.contains("No samples"));
    let mut out = Vec::new();
    render_top(&p, 5, &mut out).unwrap();
    render_collapsed(&p, &ReportOptions::default(), &mut out).unwrap();
}

/// Thirty `cc1`-like processes: one row per name under `By::Comm`, with the process count;
/// small names fold into "process names", small processes into "processes".
#[test]
fn by_comm_groups_the_processes_of_one_name() {
    let mut b = Builder::new();
    let f = b.func("parse", "cc1");
    let g = b.func("wait", "make");
    for pid in 10..13 {
        b.process(pid, "cc1", &[(pid, "cc1")]);
        b.samples(pid, pid, Mode::User, &[f], 300);
    }
    b.process(20, "make", &[(20, "make")]);
    b.samples(20, 20, Mode::User, &[g], 94);
    for (pid, name) in [(30, "sh"), (31, "cat")] {
        b.process(pid, name, &[(pid, name)]);
        b.samples(pid, pid, Mode::User, &[g], 3);
    }
    let p = b.finish(&[]);
    let by = |by| {
        text(
            &p,
            &ReportOptions {
                by,
                ..Default::default()
            },
        )
    };
    let s = by(By::Comm);
    assert!(s.contains("Samples by process name"), "{s}");
    let cc1 = line(&s, " cc1 ");
    assert!(
        cc1.starts_with("  90.0%") && cc1.ends_with(" 900  3 processes"),
        "{cc1}"
    );
    assert!(line(&s, " make ").ends_with("94  1 process"));
    assert!(s.contains("<1% (2 process names)"), "{s}");
    let s = by(By::Process);
    assert_eq!(s.matches("cc1 (").count(), 3, "{s}");
    assert!(
        s.contains("<1% (2 processes)"),
        "the plural of process:\n{s}"
    );
}

#[test]
fn the_top_table_names_the_processes_a_filter_kept() {
    let p = known();
    let with = |pid: Option<u32>, comm: Option<&str>| {
        text(
            &p,
            &ReportOptions {
                filter: hood_model::profile::aggregate::Filter {
                    pid,
                    comm: comm.map(str::to_string),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
    };
    assert!(with(None, None).contains("Highest-scoring functions, all processes"));
    let s = with(None, Some("helper"));
    assert!(
        s.contains("Highest-scoring functions, processes named helper"),
        "{s}"
    );
    assert!(!s.contains("all processes"), "{s}");
    let s = with(Some(100), None);
    assert!(s.contains("Highest-scoring functions, pid 100"), "{s}");
}

#[test]
fn long_names_are_cut_to_their_column_and_no_line_passes_the_width() {
    let mut b = Builder::new();
    b.process(7, "prog", &[(7, "prog")]);
    let long = format!("ns::Table<{}>::find", "std::pair<int, long>, ".repeat(150));
    let f = b.func(&long, "prog");
    let main = b.func("main", "prog");
    b.samples(7, 7, Mode::User, &[f, main], 90);
    b.samples(7, 7, Mode::User, &[main], 10);
    let mut prof = b.finish(&[]);
    prof.warnings.push(format!(
        "binary /usr/lib/{} changed since recording",
        "x".repeat(30)
    ));
    for width in [40usize, 60, 80, 200] {
        for graph in [CallGraph::None, CallGraph::Caller, CallGraph::Callee] {
            let opts = ReportOptions {
                width,
                call_graph: graph,
                ..ReportOptions::default()
            };
            let s = text(&prof, &opts);
            for l in s.lines() {
                assert!(l.chars().count() <= width, "{width} {graph:?}: {l:?}");
            }
            // The row keeps the start of the name and, where there is room, the process.
            let row = s
                .lines()
                .find(|l| l.contains("ns::Table<std"))
                .unwrap_or_else(|| panic!("{width}: no row in\n{s}"));
            assert!(row.contains('…'), "{row}");
            if width >= 60 && graph == CallGraph::None {
                assert!(row.ends_with("prog (7)"), "{width}: {row}");
            }
            // Warnings are wrapped, not cut: every word is there.
            let joined: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(joined.contains("changed since recording"), "{width}:\n{s}");
        }
    }
    let unlimited = ReportOptions {
        width: usize::MAX,
        ..ReportOptions::default()
    };
    assert!(text(&prof, &unlimited).contains(&long));
}

/// Thirty short `cc1` processes and one long `make`: the default top table joins each
/// function over the processes of one name and counts them; the sections stay per process.
#[test]
fn default_functions_join_the_processes_of_one_name() {
    let mut b = Builder::new();
    let parse = b.func("parse", "cc1");
    let emit = b.func("emit", "cc1");
    let wait = b.func("wait", "make");
    for pid in 10..40 {
        b.process(pid, "cc1", &[(pid, "cc1")]);
        b.samples(pid, pid, Mode::User, &[parse], 20);
        b.samples(pid, pid, Mode::User, &[emit], 5);
    }
    b.process(5, "make", &[(5, "make")]);
    b.samples(5, 5, Mode::User, &[wait], 250);
    let p = b.finish(&[]);
    let s = text(&p, &ReportOptions::default());
    let top: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("Highest-scoring"))
        .skip(2)
        .take(3)
        .collect();
    // 600 of 1000 samples in parse over 30 processes, 250 in make's wait, 150 in emit.
    assert!(
        top[0].starts_with("  60.0%")
            && top[0].contains("parse")
            && top[0].ends_with("cc1 (30 processes)"),
        "{s}"
    );
    assert!(
        top[1].starts_with("  25.0%") && top[1].ends_with("make (5)"),
        "{s}"
    );
    assert!(
        top[2].starts_with("  15.0%") && top[2].ends_with("cc1 (30 processes)"),
        "{s}"
    );
    // Each cc1 process is 2.5%: its own section, as before.
    assert!(s.contains("cc1 (pid 10)"), "{s}");
    assert!(s.contains("make (pid 5)"), "{s}");
}
