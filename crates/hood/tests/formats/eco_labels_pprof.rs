//! `hood report --labels --format pprof` read back by a real pprof client (`go tool pprof
//! -tags`, Debian's golang-go): every sample carries the process it is charged to, and the
//! counts per charged process and per async kind equal `hood report --labels`'s, on loopback
//! UDP where the receive softirq runs in the sender's syscall but serves the receiver.

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use common::*;

/// `go tool pprof -tags [-tagfocus=FOCUS]`: key → value → sample count.
fn pprof_tags(file: &Path, focus: Option<&str>) -> HashMap<String, HashMap<String, u64>> {
    let mut cmd = common::go_tool_pprof(file.parent().unwrap());
    cmd.args(["-tags", "-sample_index=samples"]);
    if let Some(f) = focus {
        cmd.arg(format!("-tagfocus={f}"));
    }
    let out = cmd
        .arg(file)
        .output()
        .expect("`go` must be installed for this test (apt-get install golang-go)");
    assert!(out.status.success(), "go tool pprof -tags: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // " key: Total N" then "   N (P%): value" lines.
    let mut tags: HashMap<String, HashMap<String, u64>> = HashMap::new();
    let mut key = None;
    for line in stdout.lines() {
        if let Some((k, _)) = line.trim().split_once(": Total ") {
            key = Some(k.to_string());
        } else if let (Some(k), Some((count, value))) = (&key, line.split_once("): ")) {
            let n: f64 = count
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or_else(|| panic!("bad tag line {line:?}"));
            let e = tags.entry(k.clone()).or_default();
            *e.entry(value.to_string()).or_default() += n as u64;
        }
    }
    assert!(
        tags.contains_key("charged_comm"),
        "no charged_comm tag:\n{stdout}"
    );
    tags
}

#[test]
fn pprof_labels_charge_the_udp_receive_path_to_the_receiver() {
    if !privileged("pprof_labels_charge_the_udp_receive_path_to_the_receiver") {
        return;
    }
    let _serial = exclusive();
    ensure_tracefs();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("udp.data");
    let pb = dir.path().join("udp.pb.gz");
    record_labels_udp(&file, "0");
    let out = run(hood()
        .args(["report", "--labels", "--format", "pprof", "-i"])
        .arg(&file)
        .arg("-o")
        .arg(&pb));
    assert!(out.status.success(), "{}", text(&out));

    // hood's own labeled view: samples per charged process, and its async NET_RX samples.
    let out = run(hood()
        .args(["report", "--labels", "--format", "collapsed", "-i"])
        .arg(&file));
    assert!(out.status.success(), "{}", text(&out));
    let mut charged: HashMap<String, u64> = HashMap::new();
    let mut async_rx: HashMap<String, u64> = HashMap::new();
    for (frames, n) in folded(&out.stdout) {
        *charged.entry(frames[0].clone()).or_default() += n;
        if frames.get(1).map(String::as_str) == Some("[async NET_RX]") {
            *async_rx.entry(frames[0].clone()).or_default() += n;
        }
    }

    let all = pprof_tags(&pb, None);
    assert_eq!(
        all["charged_comm"], charged,
        "pprof vs hood report --labels"
    );
    let recv = pprof_tags(&pb, Some("charged_comm=udp_recv"));
    let recv_rx = recv
        .get("async")
        .and_then(|a| a.get("NET_RX"))
        .copied()
        .unwrap_or(0);
    assert_eq!(Some(&recv_rx), async_rx.get("udp_recv"), "{recv:?}");
    assert!(recv_rx >= 20, "too few receive samples to judge: {recv:?}");
    // Much of the receiver's work ran inside the sender (loopback: softirq in sendto), and
    // the labels say both: where it ran (`comm`) and whom it served (`charged_comm`).
    let ran_in_sender = recv["comm"].get("udp_send").copied().unwrap_or(0);
    assert!(
        ran_in_sender > 0 && ran_in_sender <= recv_rx,
        "receiver-charged samples that ran in the sender: {ran_in_sender} of {recv_rx} NET_RX: {recv:?}"
    );
    let send = pprof_tags(&pb, Some("charged_comm=udp_send"));
    assert!(
        send.get("async").and_then(|a| a.get("NET_RX")).is_none(),
        "the sender is charged with receive work: {send:?}"
    );
    eprintln!(
        "charged: {charged:?}; receiver NET_RX {recv_rx}, of which {ran_in_sender} ran in the sender"
    );
}
