//! `hood serve` without a token on loopback (issue 29, R11): another local user must get
//! neither a whole-machine profile nor kernel symbols from root's server, which
//! `perf_event_paranoid` 2 denies them; root on the same machine, or anyone with the token,
//! gets both. The other user's requests are made by curl running as that user.

use crate::common;

use std::io::Read;
use std::process::{Child, Stdio};

use common::serve::{get, Serve};
use common::*;
use prost::Message;

/// A process that spends its time in the kernel (reading /dev/zero), killed when dropped.
struct InKernel(Child);

impl InKernel {
    fn start() -> InKernel {
        InKernel(
            common::command("dd")
                .args(["if=/dev/zero", "of=/dev/null", "bs=64k"])
                .stderr(Stdio::null())
                .spawn()
                .expect("dd"),
        )
    }
}

impl Drop for InKernel {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` with curl as the user `uid`/`gid` (setpriv, no supplementary group of root's):
/// (status, body).
fn get_as(uid: u32, gid: u32, port: u16, path: &str, headers: &[&str]) -> (u16, Vec<u8>) {
    let mut cmd = common::command("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .args(["--clear-groups", "curl"]);
    cmd.args(["-s", "--max-time", "60", "-o", "-", "-w", "\n%{http_code}"]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd
        .arg(format!("http://127.0.0.1:{port}{path}"))
        .output()
        .expect("curl");
    let at = out
        .stdout
        .iter()
        .rposition(|&b| b == b'\n')
        .expect("curl's status line");
    let code = String::from_utf8_lossy(&out.stdout[at + 1..])
        .trim()
        .parse()
        .expect("status");
    (code, out.stdout[..at].to_vec())
}

fn decode(gz: &[u8]) -> hood_report::pprof::proto::Profile {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut bytes)
        .expect("gzip");
    hood_report::pprof::proto::Profile::decode(bytes.as_slice()).expect("profile.proto")
}

/// (names of the functions at kernel locations, kernel addresses) of a profile.
fn kernel_frames(p: &hood_report::pprof::proto::Profile) -> (Vec<String>, Vec<u64>) {
    let kernel_maps: Vec<u64> = p
        .mapping
        .iter()
        .filter(|m| p.string_table[m.filename as usize] == "[kernel.kallsyms]")
        .map(|m| m.id)
        .collect();
    let mut names = Vec::new();
    let mut addrs = Vec::new();
    for l in p
        .location
        .iter()
        .filter(|l| kernel_maps.contains(&l.mapping_id))
    {
        addrs.push(l.address);
        for line in &l.line {
            if let Some(f) = p.function.iter().find(|f| f.id == line.function_id) {
                names.push(p.string_table[f.name as usize].clone());
            }
        }
    }
    names.sort();
    names.dedup();
    (names, addrs)
}

#[test]
fn an_unauthenticated_local_user_gets_one_process_without_kernel_symbols() {
    if !privileged("an_unauthenticated_local_user_gets_one_process_without_kernel_symbols")
        || !root("an_unauthenticated_local_user_gets_one_process_without_kernel_symbols")
    {
        return;
    }
    let _l = exclusive();
    let (uid, gid) = other_user();
    let busy = InKernel::start();
    let pid = busy.0.id();
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&[], tmp.path(), Stdio::null());
    let one = format!("/debug/pprof/profile?seconds=1&pid={pid}");

    // Root on this machine: its socket is root's, so everything, kernel symbols included.
    let (code, body) = get(s.port, &one, &[]);
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let (root_names, _) = kernel_frames(&decode(&body));
    assert!(
        root_names.iter().any(|n| n != "[kernel.kallsyms]"),
        "the premise: root's profile of dd names kernel functions: {root_names:?}"
    );
    let (code, body) = get(s.port, "/debug/pprof/profile?seconds=1", &[]);
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));

    // Another user: no whole-machine profile, with a message that says how to get one.
    let (code, body) = get_as(uid, gid, s.port, "/debug/pprof/profile?seconds=1", &[]);
    let text = String::from_utf8_lossy(&body);
    assert_eq!(code, 403, "{text}");
    assert!(
        text.contains("needs authentication") && text.contains("--token"),
        "{text}"
    );
    // One process: its samples, but no kernel function named and no kernel address.
    let (code, body) = get_as(uid, gid, s.port, &one, &[]);
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let p = decode(&body);
    assert!(p.sample.iter().map(|s| s.value[0]).sum::<i64>() > 0);
    let (names, addrs) = kernel_frames(&p);
    assert_eq!(
        names,
        ["[kernel.kallsyms]"],
        "kernel symbols reached another user"
    );
    assert!(
        addrs.iter().all(|&a| a == 0),
        "kernel addresses: {addrs:x?}"
    );
    for f in &p.function {
        let n = &p.string_table[f.name as usize];
        assert!(
            n == "[kernel.kallsyms]" || !root_names.contains(n),
            "kernel function {n} reached another user"
        );
    }
}

#[test]
fn the_token_unlocks_whole_machine_profiles_for_anyone_who_has_it() {
    if !privileged("the_token_unlocks_whole_machine_profiles_for_anyone_who_has_it")
        || !root("the_token_unlocks_whole_machine_profiles_for_anyone_who_has_it")
    {
        return;
    }
    let _l = exclusive();
    let (uid, gid) = other_user();
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&["--token", "s3cret"], tmp.path(), Stdio::null());
    let all = "/debug/pprof/profile?seconds=1";
    let (code, _) = get_as(uid, gid, s.port, all, &[]);
    assert_eq!(code, 401);
    let (code, body) = get_as(uid, gid, s.port, all, &["Authorization: Bearer s3cret"]);
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let (names, _) = kernel_frames(&decode(&body));
    assert!(
        names.iter().any(|n| n != "[kernel.kallsyms]"),
        "a token holder's profile names kernel functions: {names:?}"
    );
}
