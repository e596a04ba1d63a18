//! Property tests: /proc parsers fed random or mutated text never panic, and known tricky
//! inputs parse right.

use hood_monitor::TaskRaw;
use hood_procfs::parse::*;
use proptest::prelude::*;

const STAT: &str = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 6 0 5000 104857600 24576 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";

#[test]
fn comm_with_spaces_and_parens_parses() {
    let mut t = TaskRaw::default();
    parse_stat(STAT.as_bytes(), &mut t).expect("valid stat line");
    assert_eq!(t.pid, 1234);
    assert_eq!(t.name, "my (odd) name");
    assert_eq!(t.state, 'S');
    assert_eq!(t.ppid, 1);
    assert_eq!((t.utime, t.stime), (250, 75));
    assert_eq!((t.priority, t.nice), (20, 0));
    assert_eq!(t.num_threads, 6);
    assert_eq!(t.start_time, 5000);
    assert_eq!(t.vsize, 104_857_600);
    assert_eq!(t.rss_pages, 24_576);
    assert_eq!(t.processor, 1);
}

#[test]
fn comm_ending_in_paren_and_space() {
    let line = STAT.replace("my (odd) name", ") x) ");
    let mut t = TaskRaw::default();
    parse_stat(line.as_bytes(), &mut t).expect("valid stat line");
    assert_eq!(t.name, ") x) ");
    assert_eq!(t.num_threads, 6);
}

#[test]
fn stat_number_edge_cases() {
    let with = |field: &str| STAT.replace(" 250 75 ", &format!(" {field} 75 "));
    let mut t = TaskRaw::default();
    parse_stat(with("+7").as_bytes(), &mut t).expect("plus sign");
    assert_eq!(t.utime, 7);
    for bad in ["18446744073709551616", "-1", "1x", "+"] {
        assert!(parse_stat(with(bad).as_bytes(), &mut t).is_none(), "{bad}");
    }
    let neg = STAT.replace(" 20 0 6 ", " -100 -20 6 ");
    parse_stat(neg.as_bytes(), &mut t).expect("negative priority");
    assert_eq!((t.priority, t.nice), (-100, -20));
    let min = STAT.replace(" 20 0 6 ", " -9223372036854775808 0 6 ");
    parse_stat(min.as_bytes(), &mut t).expect("i64::MIN");
    assert_eq!(t.priority, i64::MIN);
}

#[test]
fn truncated_stat_is_rejected() {
    let mut t = TaskRaw::default();
    for cut in [0, 5, 30, 60] {
        assert!(
            parse_stat(&STAT.as_bytes()[..cut], &mut t).is_none(),
            "cut at {cut}"
        );
    }
}

#[test]
fn irq_table_keeps_short_lines_and_descriptions() {
    let text = "           CPU0       CPU1\n  0:         22          0   IO-APIC   2-edge      timer\nNMI:          1          2   Non-maskable interrupts\nERR:          0\nbogus line\n";
    let t = parse_irq_table(text);
    assert_eq!(t.len(), 3);
    assert_eq!(t[0].id, "0");
    assert_eq!(t[0].per_cpu, vec![22, 0]);
    assert_eq!(t[0].description, "IO-APIC 2-edge timer");
    assert_eq!(t[1].per_cpu, vec![1, 2]);
    assert_eq!(t[2].per_cpu, vec![0]);
}

#[test]
fn status_and_io_fields() {
    let st = parse_status("Name:\tx\nTgid:\t7\nUid:\t1000\t1000\t1000\t1000\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n");
    assert_eq!(st.uid, Some(1000));
    assert_eq!(st.tgid, Some(7));
    let ctx = st.ctx.expect("both switch lines present");
    assert_eq!((ctx.voluntary, ctx.involuntary), (12, 3));
    let io = parse_io("rchar: 10\nwchar: 20\nsyscr: 3\nsyscw: 4\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n").expect("io");
    assert_eq!(
        (io.rchar, io.wchar, io.syscr, io.syscw, io.write_bytes),
        (10, 20, 3, 4, 4096)
    );
    assert!(parse_io("garbage\n").is_none());
}

#[test]
fn schedstat_fields() {
    assert_eq!(
        parse_schedstat(b"195255049 25843476 641\n"),
        Some((195255049, 641))
    );
    assert_eq!(parse_schedstat(b"1 2"), None);
    assert_eq!(parse_schedstat(b""), None);
    assert_eq!(parse_schedstat(b"x 2 3"), None);
}

fn all_parsers(s: &str) {
    let mut t = TaskRaw::default();
    let _ = parse_stat(s.as_bytes(), &mut t);
    let _ = parse_status(s);
    let _ = parse_io(s);
    let _ = parse_cmdline(s.as_bytes());
    let _ = parse_meminfo(s);
    let _ = parse_loadavg(s);
    let _ = parse_uptime(s);
    let _ = parse_proc_stat(s);
    let _ = parse_irq_table(s);
    let _ = parse_cpuinfo_mhz(s);
    let _ = parse_passwd(s);
    let _ = parse_auxv(s.as_bytes());
    let _ = parse_schedstat(s.as_bytes());
}

proptest! {
    #[test]
    fn random_text_never_panics(s in "\\PC{0,400}") {
        all_parsers(&s);
    }

    #[test]
    fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut t = TaskRaw::default();
        let _ = parse_stat(&b, &mut t);
        let _ = parse_auxv(&b);
        let _ = parse_schedstat(&b);
        all_parsers(&String::from_utf8_lossy(&b));
    }

    #[test]
    fn mutated_stat_never_panics(pos in 0usize..STAT.len(), len in 0usize..20, ins in "[ ()0-9a-z-]{0,12}") {
        let mut s = STAT.to_string();
        let end = (pos + len).min(s.len());
        s.replace_range(pos..end, &ins);
        let mut t = TaskRaw::default();
        let _ = parse_stat(s.as_bytes(), &mut t);
    }

    #[test]
    fn any_comm_roundtrips(name in "[ -~]{0,15}") {
        let line = STAT.replace("my (odd) name", &name);
        let mut t = TaskRaw::default();
        prop_assert!(parse_stat(line.as_bytes(), &mut t).is_some());
        prop_assert_eq!(t.name, name);
        prop_assert_eq!(t.num_threads, 6);
    }

    #[test]
    fn stat_numbers_roundtrip(
        utime in any::<u64>(), stime in any::<u64>(), prio in any::<i64>(), nice in -20i64..20,
        threads in any::<u32>(), start in any::<u64>(), rss in any::<i64>(), cpu in 0i32..4096,
    ) {
        let line = format!("77 (n) R 1 77 77 0 -1 0 0 0 0 0 {utime} {stime} 0 0 {prio} {nice} {threads} 0 {start} 4096 {rss} 0 0 0 0 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0\n");
        let mut t = TaskRaw::default();
        prop_assert!(parse_stat(line.as_bytes(), &mut t).is_some());
        prop_assert_eq!((t.utime, t.stime, t.priority, t.nice), (utime, stime, prio, nice));
        prop_assert_eq!((t.num_threads, t.start_time, t.processor), (threads, start, cpu));
        prop_assert_eq!(t.rss_pages, rss.max(0) as u64);
    }

    #[test]
    fn mutated_tables_never_panic(lines in proptest::collection::vec("[A-Z0-9: ]{0,40}", 0..10)) {
        let text = format!("   CPU0 CPU1\n{}", lines.join("\n"));
        all_parsers(&text);
    }
}
