//! Real-kernel test of attaching to another running process: its later
//! children are followed (inherit) and wait() reports when all have exited.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use hood_perf::{SamplingConfig, Session, Target};

#[test]
fn attach_follows_children_and_reports_hangup() {
    if !privileged(1, "attach_follows_children_and_reports_hangup") {
        return;
    }
    // The parent spins in shell builtins (so we attach before any fork: a `sleep` forked
    // between opening and enabling the events would inherit them with no FORK record, and
    // its samples would look unrelated), then forks a subshell that spins too; the trailing
    // `exit` keeps dash from exec'ing the subshell in place.
    let script = "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; \
                  (j=0; while [ $j -lt 100000 ]; do j=$((j+1)); done); exit 0";
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let mut s = Session::open(&SamplingConfig::default(), &Target::Tasks(vec![pid])).unwrap();
    s.enable().unwrap();
    let mut got = Collected::default();
    collect(&mut s, Duration::from_secs(60), &mut got);
    assert!(
        got.hangup,
        "wait() never reported that the attached process exited"
    );
    assert!(child.wait().unwrap().success());

    let recs: Vec<Rec> = got.records().into_values().flatten().collect();
    let forks: Vec<(u32, u32)> = recs
        .iter()
        .filter(|r| r.ty == RECORD_FORK)
        .map(|r| (u32_at(&r.body, 0), u32_at(&r.body, 4)))
        .collect();
    let samples: Vec<Sample> = recs
        .iter()
        .filter(|r| r.ty == RECORD_SAMPLE)
        .map(sample)
        .collect();
    assert!(
        samples.iter().any(|x| x.pid == pid as u32),
        "no samples of the attached pid {pid}"
    );
    let child_pids: Vec<u32> = forks
        .iter()
        .filter(|f| f.1 == pid as u32)
        .map(|f| f.0)
        .collect();
    assert!(
        !child_pids.is_empty(),
        "no FORK record with parent {pid}: {forks:?}"
    );
    assert!(
        samples.iter().any(|x| child_pids.contains(&x.pid)),
        "the forked subshell (pids {child_pids:?}) was not followed"
    );
    assert!(
        samples
            .iter()
            .all(|x| x.pid == pid as u32 || child_pids.contains(&x.pid)),
        "samples of unrelated processes"
    );
}
