//! `hood record --labels` / `hood report --labels` on known-answer workloads, run for real:
//! loopback UDP (perf charges the receive softirq to the sender; hood must charge it to the
//! receiver), O_DIRECT disk reads (completions charged to the reader), and the system's
//! tracing state left as found, also after the recorder is killed.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// Whether `frames` contain any of `names`.
fn has(frames: &[String], names: &[&str]) -> bool {
    frames
        .iter()
        .any(|f| names.contains(&f.strip_suffix("_[k]").unwrap_or(f)))
}

fn sum(stacks: &[(Vec<String>, u64)], pred: impl Fn(&[String]) -> bool) -> u64 {
    stacks.iter().filter(|(f, _)| pred(f)).map(|(_, n)| n).sum()
}

fn report(file: &Path, args: &[&str]) -> String {
    let out = run(hood().arg("report").arg("-i").arg(file).args(args));
    assert!(out.status.success(), "report failed:\n{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a run could change in tracefs: the instances, and the top-level enabled events,
/// tracing switch and tracer.
fn tracing_state() -> String {
    let root = Path::new(TRACEFS);
    let mut names: Vec<String> = std::fs::read_dir(root.join("instances"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                // Other tools' instances (e.g. a concurrently running `hood top --irq-time`
                // test) come and go on their own; a killed earlier run's instance is removed by
                // the next recorder. What a labels run must not leave behind is its own.
                .filter(|n| n.starts_with("hood-labels-") && !stale(n))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_default();
    format!(
        "instances: {names:?}\nset_event: {}\ntracing_on: {}\ncurrent_tracer: {}",
        read("set_event"),
        read("tracing_on"),
        read("current_tracer")
    )
}

/// A `hood-labels-PID` instance whose recorder is dead.
fn stale(name: &str) -> bool {
    name.strip_prefix("hood-labels-")
        .is_some_and(|pid| !Path::new("/proc").join(pid).exists())
}

#[test]
fn udp_receive_path_is_charged_to_the_receiver() {
    if !privileged("udp_receive_path_is_charged_to_the_receiver") {
        return;
    }
    let _serial = exclusive();
    ensure_tracefs();
    let before = tracing_state();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("udp.data");
    // Everything traced (no budget): the attribution itself is under test.
    record_labels_udp(&file, "0");
    assert_eq!(tracing_state(), before, "tracing state changed by the run");

    let rx = ["net_rx_action", "__netif_receive_skb", "process_backlog"];
    // Plain profile: perf's view puts the receive softirq on the sender.
    let plain = collapsed(&file, &[]);
    let perf_rx_on_sender = sum(&plain, |f| f[0] == "udp_send" && has(f, &rx));
    assert!(
        perf_rx_on_sender >= 20,
        "too few receive-path samples on the sender to judge ({perf_rx_on_sender}):\n{plain:?}"
    );
    // Labeled: the receive path belongs to the receiver, marked as async NET_RX work.
    let labeled = collapsed(&file, &["--labels"]);
    let rx_on_receiver = sum(&labeled, |f| {
        f[0] == "udp_recv" && f.get(1).map(String::as_str) == Some("[async NET_RX]") && has(f, &rx)
    });
    let rx_left_on_sender = sum(&labeled, |f| f[0] == "udp_send" && has(f, &rx));
    assert!(
        rx_on_receiver as f64 >= 0.8 * perf_rx_on_sender as f64,
        "receiver got {rx_on_receiver} of {perf_rx_on_sender} receive-path samples (sender kept {rx_left_on_sender})"
    );
    assert!(
        (rx_left_on_sender as f64) < 0.2 * perf_rx_on_sender as f64,
        "sender kept {rx_left_on_sender} of {perf_rx_on_sender} receive-path samples"
    );
    eprintln!(
        "receive-path samples: perf puts {perf_rx_on_sender} on the sender; labeled: receiver {rx_on_receiver}, sender {rx_left_on_sender}"
    );
    // The sender keeps its transmit path.
    let tx = ["udp_sendmsg", "udp_send_skb", "ip_send_skb"];
    // Softirq frames inside sendto() are receive work even where no receive function shows.
    let softirq = ["handle_softirqs", "__do_softirq"];
    let tx_plain = sum(&plain, |f| {
        f[0] == "udp_send" && has(f, &tx) && !has(f, &rx) && !has(f, &softirq)
    });
    let tx_labeled = sum(&labeled, |f| f[0] == "udp_send" && has(f, &tx));
    assert!(tx_plain > 0, "no transmit samples at all");
    assert!(
        tx_labeled as f64 >= 0.9 * tx_plain as f64,
        "sender's transmit path shrank from {tx_plain} to {tx_labeled} samples"
    );
    // Text report: complete event stream, the receiver's async share, PIDu:/PIDk: naming.
    let txt = report(&file, &["--labels"]);
    // The event stream is complete, or the shortfall against the kernel's counts is reported
    // (a starved recorder on a loaded machine can fall behind a packet flood).
    assert!(
        txt.contains("events complete")
            || txt.contains("traced events missing (received/kernel per CPU"),
        "{txt}"
    );
    let recv_line = txt
        .lines()
        .find(|l| l.starts_with("== ") && l.contains("udp_recv"))
        .unwrap_or_else(|| panic!("no receiver section:\n{txt}"));
    assert!(!recv_line.contains("async NET_RX 0 "), "{recv_line}");
    // The flat list shows own time above 1 %, so which receive function clears that bar
    // depends on the machine: any of the receive path's own-time functions will do, named
    // with the receiver's pid and the kernel mark.
    let recv_pid = recv_line
        .trim_start_matches("== ")
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let rx_own = [
        "net_rx_action",
        "__netif_receive_skb",
        "process_backlog",
        "udp_queue_rcv_one_skb",
        "__udp4_lib_rcv",
        "__udp_enqueue_schedule_skb",
        "udp_rcv",
        "ip_rcv",
        "ip_local_deliver",
    ];
    assert!(
        txt.lines().any(|l| rx_own
            .iter()
            .any(|f| l.contains(&format!("{recv_pid}k:{f}")))),
        "no PIDk: receive functions for the receiver {recv_pid}:\n{txt}"
    );
    // gprof: the receiver's synthetic async frame calls the softirq frames; user -> kernel
    // edges of the sender's sendto cross the boundary.
    let g = report(&file, &["--labels", "--format", "gprof"]);
    assert!(g.contains("Call graph:"), "{g}");
    assert!(g.contains("k:[async NET_RX]"), "{g}");
    let sender_pid = txt
        .lines()
        .find(|l| l.contains("udp_send") && !l.starts_with("=="))
        .and_then(|l| l.split_whitespace().next())
        .expect("sender row")
        .to_string();
    let boundary = g.lines().any(|l| l.contains(&format!("{sender_pid}u:")))
        && g.lines().any(|l| l.contains(&format!("{sender_pid}k:")));
    assert!(
        boundary,
        "sender has no user and kernel functions in the graph:\n{g}"
    );
}

#[test]
fn direct_io_completions_are_charged_to_the_reader() {
    if !privileged("direct_io_completions_are_charged_to_the_reader") {
        return;
    }
    let _serial = exclusive();
    ensure_tracefs();
    // The data file must live on the machine's block device, not on tmpfs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let done = [
        "blk_done_softirq",
        "virtblk_done",
        "blk_mq_end_request",
        "blk_update_request",
    ];
    // Completions are short: a run can catch too few of them to judge the charging by (3 of
    // a usual 25-110 was seen once). Such a run is repeated, up to three in all; the charging
    // is then asserted on the last run.
    let mut attempt = 0;
    let (labeled, all, reader_async) = loop {
        attempt += 1;
        let (labeled, rest) = record_dio(dir.path());
        let all = sum(&labeled, |f| has(f, &done));
        let reader_async = sum(&labeled, |f| {
            f[0] == "dio_reader"
                && f.get(1).map(String::as_str) == Some("[async BLOCK]")
                && has(f, &done)
        });
        eprintln!(
            "run {attempt}: completion samples: {all}, charged to the reader as async BLOCK: {reader_async}"
        );
        if all >= 5 || attempt == 3 {
            assert!(
                all >= 5,
                "too few completion samples ({all}) in {attempt} runs; reader: {}",
                rest.trim()
            );
            break (labeled, all, reader_async);
        }
    };
    assert!(
        reader_async as f64 >= 0.8 * all as f64,
        "reader got {reader_async} of {all} completion samples:\n{:?}",
        labeled
            .iter()
            .filter(|(f, _)| has(f, &done))
            .collect::<Vec<_>>()
    );
}

/// One `hood record --labels -a` of the O_DIRECT reader in `dir`: the labeled folded stacks
/// and what the reader printed at the end.
fn record_dio(dir: &Path) -> (Vec<(Vec<String>, u64)>, String) {
    let data = dir.join("dio.bin");
    let file = dir.join("dio.data");
    let prog = c_program("labels_dio");
    let mut reader = common::command(&prog)
        .arg(&data)
        .arg("8")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start reader");
    // Wait until it has written its file and started reading.
    let mut line = String::new();
    let mut stdout = std::io::BufReader::new(reader.stdout.take().expect("reader stdout"));
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("reader output");
    assert_eq!(line.trim(), "reading", "reader failed to start");
    // A high rate: completions are short, and each sample in one counts.
    let out = record(&file, &["--labels", "-a", "-F", "4999", "-d", "4"]);
    let _ = reader.wait();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stdout, &mut rest);
    assert!(out.status.success(), "{}", text(&out));
    (collapsed(&file, &["--labels"]), rest)
}

#[test]
fn killed_recorder_leaves_an_instance_the_next_run_removes() {
    if !privileged("killed_recorder_leaves_an_instance_the_next_run_removes") {
        return;
    }
    let _serial = exclusive();
    ensure_tracefs();
    let before = tracing_state();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("killed.data");
    let mut rec = hood()
        .args(["record", "--labels", "-a", "-d", "30", "-o"])
        .arg(&file)
        .stderr(Stdio::null())
        .spawn()
        .expect("start recorder");
    let name = format!("hood-labels-{}", rec.id());
    let inst = Path::new(TRACEFS).join("instances").join(&name);
    let t0 = Instant::now();
    while !inst.join("tracing_on").exists() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(inst.is_dir(), "recorder never created {name}");
    // Long enough for the recorder to flush its first chunks (it writes at least every second).
    std::thread::sleep(Duration::from_millis(2500));
    rec.kill().expect("SIGKILL");
    let _ = rec.wait();
    assert!(
        inst.is_dir(),
        "a SIGKILLed recorder cannot clean up; {name} should remain"
    );
    // The killed run's file, beside the output it did not replace, is readable and says it
    // was not finalized.
    assert!(
        !file.exists(),
        "a killed recorder put its unfinished file in place"
    );
    let left = hood_format::left_by_killed_writers(&file);
    assert_eq!(left.len(), 1, "{left:?}");
    let out = run(hood().args(["report", "--labels", "-i"]).arg(&left[0]));
    let txt = text(&out);
    assert!(txt.contains("not finalized"), "{txt}");
    // The next run removes the stale instance and leaves everything as before.
    let out = record(
        &dir.path().join("next.data"),
        &["--labels", "-a", "-d", "0.5"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(!inst.exists(), "stale {name} not removed");
    assert_eq!(
        tracing_state(),
        before,
        "tracing state differs after kill + rerun"
    );
}

#[test]
fn gprof_without_labels_and_labels_without_events_explain_themselves() {
    if !privileged("gprof_without_labels_and_labels_without_events_explain_themselves") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain.data");
    let prog = c_program("spinner");
    let out = record(&file, &["-F", "499", "--", prog.to_str().unwrap(), "300"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(hood().args(["report", "--labels", "-i"]).arg(&file));
    assert!(!out.status.success());
    assert!(
        text(&out).contains("recorded without --labels"),
        "{}",
        text(&out)
    );
    let out = run(hood()
        .args(["report", "--format", "gprof", "-i"])
        .arg(&file));
    assert!(!out.status.success());
    assert!(text(&out).contains("add --labels"), "{}", text(&out));
}

#[test]
fn over_budget_run_says_so_and_still_charges_the_receiver() {
    if !privileged("over_budget_run_says_so_and_still_charges_the_receiver") {
        return;
    }
    let _serial = exclusive();
    ensure_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("budget.data");
    // Loopback UDP produces far more than 20000 events/s.
    record_labels_udp(&file, "20000");
    let txt = report(&file, &["--labels"]);
    let note = txt
        .lines()
        .find(|l| l.contains("cost control ACTIVE"))
        .unwrap_or_else(|| panic!("no budget note:\n{txt}"));
    assert!(note.contains("20000 events/s"), "{note}");
    // Extrapolated or traced, the receive path still belongs to the receiver.
    let rx = ["net_rx_action", "__netif_receive_skb", "process_backlog"];
    let plain = collapsed(&file, &[]);
    let perf_rx = sum(&plain, |f| f[0] == "udp_send" && has(f, &rx));
    let labeled = collapsed(&file, &["--labels"]);
    let on_receiver = sum(&labeled, |f| f[0] == "udp_recv" && has(f, &rx));
    eprintln!("over budget: perf puts {perf_rx} receive samples on the sender, labels give the receiver {on_receiver}");
    assert!(perf_rx >= 20, "too few receive samples ({perf_rx})");
    assert!(
        on_receiver as f64 >= 0.8 * perf_rx as f64,
        "receiver got {on_receiver} of {perf_rx}"
    );
}

#[test]
fn tcp_receive_work_goes_to_the_reader_and_acks_to_the_sender() {
    if !privileged("tcp_receive_work_goes_to_the_reader_and_acks_to_the_sender") {
        return;
    }
    let _serial = exclusive();
    ensure_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tcp.data");
    let prog = c_program("labels_tcp");
    let out = record(&file, &["--labels", "--", prog.to_str().unwrap(), "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let rx = ["net_rx_action", "__netif_receive_skb", "process_backlog"];
    let plain = collapsed(&file, &[]);
    let perf_rx = sum(&plain, |f| has(f, &rx));
    let labeled = collapsed(&file, &["--labels"]);
    let async_of = |who: &str| {
        sum(&labeled, |f| {
            f[0] == who && f.get(1).map(String::as_str) == Some("[async NET_RX]") && has(f, &rx)
        })
    };
    let (reader, sender) = (async_of("tcp_recv"), async_of("tcp_send"));
    let other = sum(&labeled, |f| f[0] == "[other]" && has(f, &rx));
    eprintln!("tcp: {perf_rx} receive-path samples; reader {reader}, sender (acks) {sender}, [other] {other}");
    assert!(perf_rx >= 20, "too few receive samples ({perf_rx})");
    assert!(reader > 0, "no receive work charged to the reader");
    assert!(
        (other as f64) < 0.2 * perf_rx as f64,
        "{other} of {perf_rx} receive samples unclaimed"
    );
    assert!(
        (reader + sender) as f64 >= 0.8 * perf_rx as f64,
        "only {} of {perf_rx} receive samples charged to the two ends",
        reader + sender
    );
}

/// The `HOOD_TIMING` count of chunk payloads the report read.
fn chunks_read(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("hood: ")?
                .strip_suffix(" chunks read from recordings")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no HOOD_TIMING chunk count line:\n{stderr}"))
}

#[test]
fn a_labels_report_reads_the_file_once() {
    if !privileged("a_labels_report_reads_the_file_once") {
        return;
    }
    let _serial = exclusive();
    ensure_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("once.data");
    let out = record(
        &file,
        &[
            "--labels",
            "-F",
            "999",
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    // What the file holds: every chunk is read once, except the whole kallsyms text, which
    // a report reads only when the file lacks the lines its samples use. The labels pages
    // too are decompressed whole once, streamed in time order (one chunk per CPU in memory
    // instead of every event); before that only the first block of each is decompressed,
    // to learn which CPU it holds, which does not count as reading its payload.
    let mut r = hood_format::Reader::open(&file).unwrap();
    let tags: Vec<u32> = r.chunks().map(|c| c.unwrap().tag).collect();
    let labels_pages = tags
        .iter()
        .filter(|&&t| t == hood_format::tags::profile::LABELS_PAGES)
        .count();
    assert!(labels_pages > 0, "no labels pages recorded: {tags:?}");
    let unread = match tags.contains(&hood_format::tags::profile::KALLSYMS_USED) {
        true => tags
            .iter()
            .filter(|&&t| t == hood_format::tags::profile::KALLSYMS)
            .count(),
        false => 0,
    };
    let once = (tags.len() - unread) as u64;
    let out = run(hood()
        .args(["report", "--labels", "-i"])
        .arg(&file)
        .env("HOOD_TIMING", "1"));
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        chunks_read(&stderr),
        once,
        "{} chunks in the file, {unread} of them the kallsyms text left unread, {labels_pages} labels pages",
        tags.len()
    );
    // The plain report reads the same chunks (its labels pages are checked, not kept).
    let out = run(hood()
        .args(["report", "-i"])
        .arg(&file)
        .env("HOOD_TIMING", "1"));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(chunks_read(&String::from_utf8_lossy(&out.stderr)), once);
}
