//! Renderer tests on a hand-built profile: a sender whose sendto() ran the receive softirq for
//! a receiver, charged as the attribution would.

use hood_model::labels::{AsyncKind, Attribution, Charge, Labeled};
use hood_model::profile::{Func, Mode, Process, Profile, RecordMeta, Sample};

use super::*;

fn func(name: &str, kernel: bool) -> Func {
    Func {
        name: name.into(),
        dso: if kernel { "[kernel.kallsyms]" } else { "app" }.into(),
        kernel,
        resolved: true,
        inlined: false,
        start_line: 0,
    }
}

/// Funcs: 0 main(u) 1 sendto(u) 2 entry_SYSCALL_64(k) 3 udp_sendmsg(k) 4 handle_softirqs(k)
/// 5 net_rx_action(k) 6 udp_queue_rcv_one_skb(k) 7 recv(u).
fn fixture() -> (Profile, Labeled) {
    let funcs = vec![
        func("main", false),
        func("sendto", false),
        func("entry_SYSCALL_64", true),
        func("udp_sendmsg", true),
        func("handle_softirqs", true),
        func("net_rx_action", true),
        func("udp_queue_rcv_one_skb", true),
        func("recv", false),
    ];
    let stacks = vec![
        vec![],
        // leaf first: transmit in the sender's syscall
        vec![3, 2, 1, 0],
        // receive softirq inside the sender's syscall
        vec![6, 5, 4, 3, 2, 1, 0],
        // receiver in user space
        vec![7, 0],
    ];
    let s = |pid, stack, mode, time| Sample {
        pid,
        tid: pid,
        cpu: 0,
        time,
        period: 1_000_000,
        mode,
        stack,
        locs: 0,
    };
    let samples = vec![
        s(10, 1, Mode::Kernel, 1),
        s(10, 2, Mode::Kernel, 2),
        s(10, 2, Mode::Kernel, 3),
        s(20, 3, Mode::User, 4),
    ];
    let charges = vec![
        Charge::Sync(10),
        Charge::Async(20, AsyncKind::NetRx),
        Charge::Other(AsyncKind::NetRx),
        Charge::Sync(20),
    ];
    let prof = Profile {
        meta: RecordMeta {
            event: "cpu-clock".into(),
            ..RecordMeta::default()
        },
        processes: vec![
            Process {
                pid: 10,
                comm: "sender".into(),
                threads: vec![],
            },
            Process {
                pid: 20,
                comm: "receiver".into(),
                threads: vec![],
            },
        ],
        funcs,
        stacks,
        samples,
        ..Profile::default()
    };
    let labeled = Labeled {
        attribution: Attribution {
            charges,
            ..Attribution::default()
        },
        finalized: true,
        ..Labeled::default()
    };
    (prof, labeled)
}

fn render(f: impl Fn(&LabeledView<'_>, &mut Vec<u8>)) -> String {
    render_for(None, f)
}

/// `render` of the samples charged to processes named `comm` (`--comm`).
fn render_for(comm: Option<&str>, f: impl Fn(&LabeledView<'_>, &mut Vec<u8>)) -> String {
    let (prof, labeled) = fixture();
    render_of(&prof, &labeled, comm, f)
}

fn render_of(
    prof: &Profile,
    labeled: &Labeled,
    comm: Option<&str>,
    f: impl Fn(&LabeledView<'_>, &mut Vec<u8>),
) -> String {
    let v = LabeledView {
        prof,
        labeled,
        source: "t.data",
        pid: None,
        comm,
    };
    let mut out = Vec::new();
    f(&v, &mut out);
    String::from_utf8(out).expect("utf-8")
}

#[test]
fn collapsed_moves_the_softirq_frames_under_the_consumer() {
    let out = render(|v, o| render_labels_collapsed(v, o).expect("render"));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(
        &"receiver;[async NET_RX];handle_softirqs_[k];net_rx_action_[k];udp_queue_rcv_one_skb_[k] 1"
    ), "{out}");
    assert!(lines.contains(
        &"[other];[async NET_RX];handle_softirqs_[k];net_rx_action_[k];udp_queue_rcv_one_skb_[k] 1"
    ), "{out}");
    assert!(
        lines.contains(&"sender;main;sendto;entry_SYSCALL_64_[k];udp_sendmsg_[k] 1"),
        "{out}"
    );
    assert!(lines.contains(&"receiver;main;recv 1"), "{out}");
    assert_eq!(lines.len(), 4, "{out}");
}

#[test]
fn text_splits_kernel_time_and_uses_seed_naming() {
    let out = render(|v, o| render_labels_text(v, 0.0, o).expect("render"));
    assert!(out.contains("events complete"), "{out}");
    let recv = out
        .lines()
        .find(|l| l.starts_with("== 20 receiver"))
        .expect("receiver section");
    assert!(
        recv.contains("kernel 1 = sync 0 + async NET_RX 1 + async BLOCK 0"),
        "{recv}"
    );
    assert!(out.contains("20k:udp_queue_rcv_one_skb"), "{out}");
    assert!(out.contains("20u:recv"), "{out}");
    assert!(out.contains("10k:udp_sendmsg"), "{out}");
    assert!(out.contains("[other]k:udp_queue_rcv_one_skb"), "{out}");
    assert!(!out.contains("10k:udp_queue_rcv_one_skb"), "{out}");
}

#[test]
fn gprof_graph_crosses_the_user_kernel_boundary() {
    let out = render(|v, o| render_labels_gprof(v, o).expect("render"));
    assert!(out.contains("Flat profile"), "{out}");
    // The sender's entry for sendto lists the kernel entry as its child.
    let block: Vec<&str> = out
        .split("-----------------------------------------------")
        .find(|b| {
            b.lines()
                .any(|l| l.starts_with('[') && l.contains("10u:sendto"))
        })
        .expect("sendto entry")
        .lines()
        .collect();
    let at = block
        .iter()
        .position(|l| l.starts_with('[') && l.contains("10u:sendto"))
        .expect("primary line");
    assert!(
        block[at + 1..]
            .iter()
            .any(|l| l.contains("10k:entry_SYSCALL_64")),
        "{block:#?}"
    );
    // The receiver's async node calls the moved softirq frames.
    assert!(out.contains("20k:[async NET_RX]"), "{out}");
    let asyn: Vec<&str> = out
        .split("-----------------------------------------------")
        .find(|b| {
            b.lines()
                .any(|l| l.starts_with('[') && l.contains("20k:[async NET_RX]"))
        })
        .expect("async entry")
        .lines()
        .collect();
    assert!(
        asyn.iter().any(|l| l.contains("20k:handle_softirqs")),
        "{asyn:#?}"
    );
}

#[test]
fn text_header_states_the_filter() {
    let out = render_for(Some("receiver"), |v, o| {
        render_labels_text(v, 0.0, o).expect("render")
    });
    let line = out
        .lines()
        .find(|l| l.contains("filter:"))
        .unwrap_or_else(|| panic!("no filter line:\n{out}"));
    assert!(
        line.ends_with("filter: samples charged to processes named receiver (2 of 4 samples)"),
        "{line}"
    );
    let unfiltered = render(|v, o| render_labels_text(v, 0.0, o).expect("render"));
    assert!(!unfiltered.contains("filter:"), "{unfiltered}");
}

/// Found by fuzzing: sample periods come from the file, and their sum overflowed (a panic in
/// debug builds, a wrong seconds-per-sample in release).
#[test]
fn gprof_survives_periods_that_overflow_their_sum() {
    let (mut prof, labeled) = fixture();
    for s in &mut prof.samples {
        s.period = u64::MAX / 2;
    }
    let out = render_of(&prof, &labeled, None, |v, o| {
        render_labels_gprof(v, o).expect("render")
    });
    assert!(out.contains("Flat profile"), "{out}");
}
