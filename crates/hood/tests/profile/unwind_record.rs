//! Complete user stacks for code built without frame pointers: known-answer programs whose
//! true call chains are known by construction (depth, recursion, a signal handler, threads, a
//! linked and a dlopen'ed library, all -O2 -fomit-frame-pointer), real programs nobody here
//! wrote (Debian's gzip, python3, a Rust release build), a perf `--call-graph dwarf` file read
//! with `-i`, stacks deeper than the copy completed by growing it, and stacks deeper than the
//! largest copy marked as truncated.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use common::*;

/// The known-answer program and its libraries, built once per test process.
struct Known {
    dir: common::Scratch,
    nofp: PathBuf,
    fp: PathBuf,
    dl: PathBuf,
}

fn gcc(args: &[&str]) {
    let st = common::command("gcc")
        .args(args)
        .status()
        .expect("gcc must be installed to build the test workloads");
    assert!(st.success(), "gcc {args:?} failed");
}

fn known() -> &'static Known {
    static K: OnceLock<Known> = OnceLock::new();
    common::once(&K, || {
        let dir = common::Scratch::new("unwind-known");
        let d = dir.path().to_str().unwrap().to_string();
        let src = repo().join("tests/c");
        let lib = src.join("unwind_lib.c");
        let lib = lib.to_str().unwrap();
        let prog = src.join("unwind_known.c");
        let prog = prog.to_str().unwrap();
        let nofp = ["-O2", "-g", "-fomit-frame-pointer"];
        let mut a = nofp.to_vec();
        let libso = format!("{d}/libunwlib.so");
        a.extend(["-fPIC", "-shared", "-o", &libso, lib]);
        gcc(&a);
        let dlso = format!("{d}/libunwdl.so");
        let mut a = nofp.to_vec();
        a.extend(["-fPIC", "-shared", "-DLIB_PREFIX=dl_", "-o", &dlso, lib]);
        gcc(&a);
        let rpath = format!("-Wl,-rpath,{d}");
        let ldir = format!("-L{d}");
        for (out, fp) in [
            ("uk_nofp", "-fomit-frame-pointer"),
            ("uk_fp", "-fno-omit-frame-pointer"),
        ] {
            let o = format!("{d}/{out}");
            gcc(&[
                "-O2",
                "-g",
                fp,
                "-o",
                &o,
                prog,
                &ldir,
                "-lunwlib",
                &rpath,
                "-ldl",
                "-lpthread",
            ]);
        }
        Known {
            nofp: dir.path().join("uk_nofp"),
            fp: dir.path().join("uk_fp"),
            dl: dir.path().join("libunwdl.so"),
            dir,
        }
    })
}

/// A stack's frames without the process name and without kernel frames.
fn user_frames(frames: &[String]) -> Vec<&str> {
    frames
        .iter()
        .skip(1)
        .map(String::as_str)
        .filter(|f| !f.ends_with("_[k]"))
        .collect()
}

/// Of the samples of `comm` whose user stack ends in `leaf` (possibly inside `spin`), the
/// share that `ok` accepts, and how many there were.
fn share(
    stacks: &[(Vec<String>, u64)],
    comm: &str,
    leaf: &str,
    ok: impl Fn(&[&str]) -> bool,
) -> (f64, u64, Vec<String>) {
    let (mut good, mut all) = (0, 0);
    let mut bad = Vec::new();
    for (frames, n) in stacks {
        if frames.first().map(String::as_str) != Some(comm) {
            continue;
        }
        let u = user_frames(frames);
        let inner = match u.last() {
            Some(&"spin") => u.len().checked_sub(2).map(|i| u[i]),
            other => other.copied(),
        };
        if inner != Some(leaf) {
            continue;
        }
        all += n;
        if ok(&u) {
            good += n;
        } else if bad.len() < 5 {
            bad.push(u.join(";"));
        }
    }
    (100.0 * good as f64 / all.max(1) as f64, all, bad)
}

/// Whether `u` holds `want` as a contiguous run ending at the leaf (or just before `spin`).
fn ends_with_chain(u: &[&str], want: &[&str]) -> bool {
    let u = match u.last() {
        Some(&"spin") => &u[..u.len() - 1],
        _ => u,
    };
    u.ends_with(want) && !u.iter().any(|f| f.starts_with("[truncated"))
}

fn record_known(file: &Path, prog: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--", prog.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = record(file, &all);
    assert!(out.status.success(), "{}", text(&out));
    out
}

fn assert_chain(mode: &str, leaf: &str, want: &[&str]) {
    if !privileged(mode) {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join(format!("{mode}.hood"));
    let dl = k.dl.to_str().unwrap().to_string();
    let out = record_known(&file, &k.nofp, &[mode, "1200", &dl]);
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n, bad) = share(&stacks, "uk_nofp", leaf, |u| ends_with_chain(u, want));
    assert!(
        n >= 100,
        "{mode}: only {n} samples in {leaf}\n{}",
        text(&out)
    );
    assert!(
        pct >= 95.0,
        "{mode}: {pct:.1}% of {n} samples in {leaf} have the chain {want:?}; e.g. {bad:#?}"
    );
}

#[test]
fn depth_without_frame_pointers_is_complete() {
    assert_chain(
        "depth",
        "depth_leaf",
        &["main", "d1", "d2", "d3", "d4", "d5", "depth_leaf"],
    );
}

#[test]
fn recursion_keeps_every_level() {
    let mut want = vec!["main"];
    want.extend(std::iter::repeat_n("rec", 30));
    want.push("rec_leaf");
    assert_chain("recurse", "rec_leaf", &want);
}

#[test]
fn linked_library_without_frame_pointers() {
    assert_chain(
        "lib",
        "lib_leaf",
        &["main", "lib_outer", "lib_inner", "lib_leaf"],
    );
}

#[test]
fn dlopened_library_without_frame_pointers() {
    assert_chain(
        "dlopen",
        "dl_leaf",
        &["main", "dl_outer", "dl_inner", "dl_leaf"],
    );
}

#[test]
fn threads_reach_their_start() {
    assert_chain(
        "threads",
        "thread_leaf",
        &["start_thread", "thread_fn", "thread_leaf"],
    );
}

#[test]
fn signal_handler_stacks_continue_into_the_interrupted_code() {
    if !privileged("signal_frames") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join("signal.hood");
    let out = record_known(&file, &k.nofp, &["signal", "1500"]);
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n, bad) = share(&stacks, "uk_nofp", "handler_leaf", |u| {
        let pos = |f: &str| u.iter().position(|x| *x == f);
        let (Some(m), Some(l), Some(h)) = (pos("main"), pos("sig_loop"), pos("on_alarm")) else {
            return false;
        };
        // main -> sig_loop (or code it was in when interrupted), then the signal trampoline,
        // named as glibc names it, -> on_alarm -> handler_leaf.
        l == m + 1
            && h > l + 1
            && u[h - 1] == "__restore_rt"
            && u.get(h + 1) == Some(&"handler_leaf")
    });
    assert!(n >= 50, "only {n} samples in the handler\n{}", text(&out));
    assert!(pct >= 95.0, "{pct:.1}% of {n}: e.g. {bad:#?}");
}

#[test]
fn stacks_deeper_than_the_copy_are_marked_and_the_header_says_why() {
    if !privileged("deep_truncated") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join("deep.hood");
    record_known(&file, &k.nofp, &["deep", "1000"]);
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n, bad) = share(&stacks, "uk_nofp", "deep_leaf", |u| {
        u.first() == Some(&"[truncated: stack copy too small]") && !u.contains(&"main")
    });
    assert!(
        n >= 100 && pct >= 95.0,
        "{pct:.1}% of {n} marked; e.g. {bad:#?}"
    );
    // 800 KiB of stack: deeper than the largest copy the recorder grows to, and the fix
    // says so.
    let rep = run(hood().arg("report").arg("-i").arg(&file));
    let t = String::from_utf8_lossy(&rep.stdout);
    assert!(
        t.contains("Truncated:")
            && t.contains("stack copy too small")
            && t.contains("the recorder grew the stack copy to 65528 bytes")
            && t.contains("-fno-omit-frame-pointer"),
        "header:\n{t}"
    );
    // A fixed copy: the fix offers a bigger one.
    let fixed = k.dir.path().join("deep-fixed.hood");
    let out = record(
        &fixed,
        &[
            "--call-graph",
            "auto,8192",
            "--",
            k.nofp.to_str().unwrap(),
            "deep",
            "300",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let rep = run(hood().arg("report").arg("-i").arg(&fixed));
    let t = String::from_utf8_lossy(&rep.stdout);
    assert!(t.contains("--call-graph auto,32768"), "header:\n{t}");
}

/// A recursion of 10 frames of 4 KiB each (about 41 KiB of stack, no frame pointers): a
/// fixed 8 KiB copy cuts every stack, and the recorder grows the copy (8 → 16 → 32 → 64 KiB)
/// until its stacks reach `main`, whether it started the program or attached to it.
#[test]
fn stacks_deeper_than_the_copy_are_completed_by_growing_it() {
    if !privileged("grow_copy") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let mut want = vec!["main"];
    want.extend(std::iter::repeat_n("big", 10));
    want.push("deep_leaf");
    let complete = |u: &[&str]| ends_with_chain(u, &want) && u.first() == Some(&"_start");
    // Fixed at 8 KiB: never grown, every stack cut.
    let fixed = k.dir.path().join("deep10-fixed.hood");
    let prog = k.nofp.to_str().unwrap();
    let out = record(
        &fixed,
        &["--call-graph", "auto,8192", "--", prog, "deep10", "1500"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("grown"), "{}", text(&out));
    let stacks = collapsed(&fixed, &["--min-percent", "0"]);
    let (pct, n, bad) = share(&stacks, "uk_nofp", "deep_leaf", |u| {
        u.first() == Some(&"[truncated: stack copy too small]") && !u.contains(&"main")
    });
    assert!(
        n >= 100 && pct >= 95.0,
        "fixed copy: {pct:.1}% of {n} cut; e.g. {bad:#?}"
    );
    // The default copy, for a command it starts and for a process it attaches to.
    let mut child = None;
    for name in ["cmd", "pid"] {
        let pid;
        let args = match name {
            "cmd" => vec!["--", prog, "deep10", "4000"],
            _ => {
                let c = child.insert(
                    common::command(&k.nofp)
                        .args(["deep10", "60000"])
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap(),
                );
                std::thread::sleep(std::time::Duration::from_millis(200));
                pid = c.id().to_string();
                vec!["-p", pid.as_str(), "-d", "4"]
            }
        };
        let file = k.dir.path().join(format!("deep10-{name}.hood"));
        let out = record(&file, &args);
        let said = text(&out);
        assert!(out.status.success(), "{name}: {said}");
        assert!(
            said.contains(
                "user stack copy grown from 8192 bytes while stacks were cut by it: 16384 bytes at"
            ) && said.contains("; 65528 bytes at the end"),
            "{name}: {said}"
        );
        let stacks = collapsed(&file, &["--min-percent", "0"]);
        let (pct, n, bad) = share(&stacks, "uk_nofp", "deep_leaf", complete);
        // The first half second or so of samples, before the copy has grown, stay cut.
        assert!(
            n >= 100 && pct >= 50.0,
            "{name}: {pct:.1}% of {n} reach main; e.g. {bad:#?}\n{said}"
        );
        let rep = run(hood().arg("report").arg("-i").arg(&file));
        let t = String::from_utf8_lossy(&rep.stdout);
        assert!(
            t.contains("Stack copy:  grown from 8192 to 65528 bytes while stacks were cut by it"),
            "{name}: header:\n{t}"
        );
    }
    if let Some(mut c) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The address ranges of the FDEs `readelf` lists in `file` (`.eh_frame` and `.debug_frame`).
fn fde_ranges(file: &Path) -> Vec<(u64, u64)> {
    let out = common::command("readelf")
        .arg("--debug-dump=frames")
        .arg(file)
        .output()
        .expect("readelf (binutils) is installed with gcc");
    assert!(out.status.success(), "readelf {}", file.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let pc = l.split(" FDE ").nth(1)?.split("pc=").nth(1)?;
            let (a, b) = pc.trim().split_once("..")?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect()
}

/// The address of the symbol `name` in `file`, as `nm` lists it.
fn symbol_address(file: &Path, name: &str) -> u64 {
    let out = common::command("nm")
        .arg(file)
        .output()
        .expect("nm (binutils)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            let (a, _, n) = (w.next()?, w.next()?, w.next()?);
            (n == name).then(|| u64::from_str_radix(a, 16).ok())?
        })
        .unwrap_or_else(|| panic!("{name} not in {}", file.display()))
}

/// Code that keeps a frame pointer but has no call frame information (as V8's builtins in
/// node, or hand-written assembly), inside a stack of code that has it: stepped out of by
/// its frame pointer, and the walk goes on with the call frame information of the code it
/// returns to. Samples in the leaf without it, and in code with it called back from there,
/// reach `main`.
#[test]
fn frame_pointer_code_without_cfi_inside_a_dwarf_stack_is_walked() {
    if !privileged("fp_inside_dwarf") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let d = k.dir.path().join("fpmix");
    std::fs::create_dir_all(&d).unwrap();
    let obj = d.join("nocfi.o");
    let prog = d.join("uk_fpmix");
    gcc(&[
        "-O2",
        "-fno-omit-frame-pointer",
        "-mno-omit-leaf-frame-pointer",
        "-fno-asynchronous-unwind-tables",
        "-fno-unwind-tables",
        "-c",
        "-o",
        obj.to_str().unwrap(),
        repo().join("tests/c/unwind_nocfi.c").to_str().unwrap(),
    ]);
    gcc(&[
        "-O2",
        "-g",
        "-fomit-frame-pointer",
        "-o",
        prog.to_str().unwrap(),
        repo().join("tests/c/unwind_fpmix.c").to_str().unwrap(),
        obj.to_str().unwrap(),
    ]);
    // The premise, checked: the object has no FDE, and none in the program covers its code,
    // while the program's own functions have theirs.
    assert!(fde_ranges(&obj).is_empty(), "nocfi.o has FDEs");
    let fdes = fde_ranges(&prog);
    let covered = |a: u64| fdes.iter().any(|&(s, e)| s <= a && a < e);
    for f in ["nocfi_leaf", "nocfi_mid"] {
        assert!(!covered(symbol_address(&prog, f)), "{f} has an FDE");
    }
    assert!(
        covered(symbol_address(&prog, "cb_leaf")),
        "cb_leaf has no FDE"
    );

    let file = d.join("fpmix.hood");
    let out = record_known(&file, &prog, &["1500"]);
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    for (leaf, want) in [
        (
            "nocfi_leaf",
            &["main", "outer", "nocfi_mid", "nocfi_leaf"][..],
        ),
        (
            "cb_leaf",
            &["main", "outer", "nocfi_mid", "fpmix_callback", "cb_leaf"][..],
        ),
    ] {
        let (pct, n, bad) = share(&stacks, "uk_fpmix", leaf, |u| ends_with_chain(u, want));
        assert!(n >= 100, "only {n} samples in {leaf}\n{}", text(&out));
        assert!(
            pct >= 95.0,
            "{pct:.1}% of {n} samples in {leaf} have the chain {want:?}; e.g. {bad:#?}"
        );
    }
}

#[test]
fn a_zeroed_return_address_is_marked_as_a_failed_unwind_not_passed_off_as_complete() {
    if !privileged("clobbered") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join("clobbered.hood");
    record_known(&file, &k.nofp, &["clobbered", "1000"]);
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n, bad) = share(&stacks, "uk_nofp", "clob_leaf", |u| {
        u.strip_suffix(&["spin"]).unwrap_or(u)
            == [
                "[truncated: unwinding failed in uk_nofp]",
                "clob_mid",
                "clob_leaf",
            ]
    });
    assert!(
        n >= 100 && pct >= 95.0,
        "{pct:.1}% of {n} marked as failed; e.g. {bad:#?}"
    );
}

#[test]
fn auto_continues_deep_stacks_with_frame_pointers() {
    if !privileged("auto_splice") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join("deep60.hood");
    let out = record_known(&file, &k.fp, &["deep60", "1000"]);
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let mut want = vec!["main"];
    want.extend(std::iter::repeat_n("big", 60));
    want.push("deep_leaf");
    let (pct, n, bad) = share(&stacks, "uk_fp", "deep_leaf", |u| ends_with_chain(u, &want));
    assert!(
        n >= 100 && pct >= 95.0,
        "{pct:.1}% of {n}; e.g. {bad:#?}\n{}",
        text(&out)
    );
    // With `dwarf` (no frame-pointer chain) the same stacks stop at the copy, and say so.
    let file = k.dir.path().join("deep60-dwarf.hood");
    let prog = k.fp.to_str().unwrap();
    let out = record(
        &file,
        &["--call-graph", "dwarf", "--", prog, "deep60", "600"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n, _) = share(&stacks, "uk_fp", "deep_leaf", |u| {
        u.first() == Some(&"[truncated: stack copy too small]")
    });
    assert!(n >= 50 && pct >= 95.0, "dwarf: {pct:.1}% of {n} marked");
}

/// 200 frames of code with frame pointers: the kernel's frame-pointer chain continues the
/// stack past the copy and stops at kernel.perf_event_max_stack; the frame and the header's
/// fix name that setting and its value, not hand-written assembly.
#[test]
fn stacks_deeper_than_the_kernels_chain_name_perf_event_max_stack() {
    if !privileged("deeper_than_max_stack") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if max >= 200 {
        eprintln!("not run here: kernel.perf_event_max_stack is {max}, the 200 frames fit");
        return;
    }
    let file = k.dir.path().join("deep200-fp.hood");
    record_known(&file, &k.fp, &["deep", "1000"]);
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n, bad) = share(&stacks, "uk_fp", "deep_leaf", |u| {
        u.first() == Some(&"[truncated: deeper than kernel.perf_event_max_stack]")
    });
    assert!(
        n >= 100 && pct >= 95.0,
        "{pct:.1}% of {n} marked; e.g. {bad:#?}"
    );
    let rep = run(hood().args(["report", "--width", "0", "-i"]).arg(&file));
    let t = String::from_utf8_lossy(&rep.stdout);
    let fix = t
        .lines()
        .skip_while(|l| !l.starts_with("Truncated:"))
        .nth(1)
        .unwrap_or_else(|| panic!("no Truncated: header line:\n{t}"));
    assert_eq!(
        fix.trim(),
        format!(
            "Fix: the kernel's call chain, which continues a stack deeper than the stack copy \
             by frame pointers, stops at kernel.perf_event_max_stack frames ({max} when \
             recorded): raise it for the recording (`sudo sysctl \
             kernel.perf_event_max_stack=1024`), or copy more of the stack (`hood record \
             --call-graph auto,65528`)"
        ),
        "header:\n{t}"
    );
}

#[test]
fn frame_pointer_mode_still_works_and_shows_what_it_misses() {
    if !privileged("fp_mode") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join("fp-mode.hood");
    let prog = k.fp.to_str().unwrap();
    let out = record(&file, &["--call-graph", "fp", "--", prog, "depth", "600"]);
    assert!(out.status.success(), "{}", text(&out));
    let rep = run(hood().arg("report").arg("-i").arg(&file));
    assert!(
        String::from_utf8_lossy(&rep.stdout).contains("user stacks: frame pointers"),
        "{}",
        text(&rep)
    );
    let bad = run(hood().args(["record", "--call-graph", "lbr", "--", "true"]));
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("choose fp, dwarf"), "{}", text(&bad));
}

#[test]
fn attached_and_system_wide_recordings_unwind_running_processes() {
    if !privileged("attach_unwind") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let mut child = common::command(&k.nofp)
        .args(["depth", "20000"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let want = ["main", "d1", "d2", "d3", "d4", "d5", "depth_leaf"];
    for (name, args) in [
        ("pid", vec!["-p".to_string(), child.id().to_string()]),
        ("all", vec!["-a".to_string()]),
    ] {
        let file = k.dir.path().join(format!("attach-{name}.hood"));
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend(["-d", "1"]);
        let out = record(&file, &a);
        assert!(out.status.success(), "{name}: {}", text(&out));
        let stacks = collapsed(&file, &["--min-percent", "0"]);
        let (pct, n, bad) = share(&stacks, "uk_nofp", "depth_leaf", |u| {
            ends_with_chain(u, &want)
        });
        assert!(
            n >= 100 && pct >= 95.0,
            "{name}: {pct:.1}% of {n}; e.g. {bad:#?}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Share of `comm`'s samples with user frames whose stack is complete and holds `entry`.
fn reach(stacks: &[(Vec<String>, u64)], comm: &str, entry: impl Fn(&str) -> bool) -> (f64, u64) {
    let (mut good, mut all) = (0, 0);
    for (frames, n) in stacks {
        if frames.first().map(String::as_str) != Some(comm) {
            continue;
        }
        let u = user_frames(frames);
        if u.is_empty() {
            continue;
        }
        all += n;
        if u.iter().any(|f| entry(f)) && !u.iter().any(|f| f.starts_with("[truncated")) {
            good += n;
        }
    }
    (100.0 * good as f64 / all.max(1) as f64, all)
}

#[test]
fn debian_gzip_stacks_reach_libc_start() {
    if !privileged("gzip_unwind") {
        return;
    }
    let Some(gzip) = ["/usr/bin/gzip", "/bin/gzip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("not run here: no gzip on this machine");
        return;
    };
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    // Compressible but not trivial input: a few words in a pseudo-random order.
    let words = [
        "stack ",
        "frame ",
        "unwind ",
        "pointer ",
        "dwarf ",
        "eh_frame\n",
    ];
    let mut x = 12345u64;
    let mut data = Vec::with_capacity(24 << 20);
    while data.len() < 24 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend_from_slice(words[(x % 6) as usize].as_bytes());
        data.push(b'a' + (x >> 8) as u8 % 26);
    }
    let input = dir.path().join("in.txt");
    std::fs::write(&input, &data).unwrap();
    let file = dir.path().join("gzip.hood");
    let out = record(
        &file,
        &["--", gzip, "-9", "-k", "-f", input.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n) = reach(&stacks, "gzip", |f| f.starts_with("__libc_start"));
    assert!(
        n >= 200 && pct >= 95.0,
        "gzip: {pct:.1}% of {n}\n{}",
        text(&out)
    );
}

#[test]
fn python3_stacks_reach_main() {
    if !privileged("python_unwind") {
        return;
    }
    let Some(py) = ["/usr/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("not run here: no /usr/bin/python3 on this machine");
        return;
    };
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("py.hood");
    let script = "def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)\nfib(33)\n";
    let out = record(&file, &["--", py, "-S", "-c", script]);
    assert!(out.status.success(), "{}", text(&out));
    // The process is named after the path it was started by (a symlink here).
    let comm = Path::new(py)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n) = reach(&stacks, &comm, |f| f == "Py_BytesMain" || f == "main");
    assert!(
        n >= 200 && pct >= 95.0,
        "{comm}: {pct:.1}% of {n}\n{}",
        text(&out)
    );
}

/// A Rust program whose time goes to BTreeMap inserts and lookups.
const BTREE_CHURN: &str = r#"use std::collections::BTreeMap;
#[inline(never)]
fn churn(rounds: u64) -> u64 {
    let mut m = BTreeMap::new();
    let mut x = 88172645463325252u64;
    let mut sum = 0;
    for _ in 0..rounds {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        *m.entry(x % 50_000).or_insert(0u64) += 1;
        if let Some(v) = m.get(&(x % 7_919)) { sum += *v; }
    }
    sum + m.len() as u64
}
fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3_000_000);
    println!("{}", churn(n));
}
"#;

#[test]
fn rust_release_build_stacks_reach_main() {
    if !privileged("rust_unwind") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let bin = cargo_release_build(dir.path(), "btree", BTREE_CHURN, "");
    let file = dir.path().join("rust.hood");
    let out = record(&file, &["--", bin.to_str().unwrap(), "4000000"]);
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n) = reach(&stacks, "btree", |f| f == "main");
    assert!(
        n >= 200 && pct >= 95.0,
        "rust: {pct:.1}% of {n}\n{}",
        text(&out)
    );
    assert!(
        stacks
            .iter()
            .any(|(f, _)| f.iter().any(|x| x.contains("btree::churn"))),
        "the program's own function is named"
    );
}

#[test]
fn perf_dwarf_files_are_unwound_by_report() {
    if !privileged("perf_dwarf_input") {
        return;
    }
    if common::command("perf").arg("--version").output().is_err() {
        eprintln!("not run here: perf is not installed");
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join("perf-dwarf.data");
    let mut ok = false;
    let mut last = String::new();
    // Debian's perf 6.1 sometimes dies on its own in its build-id code; that is perf's bug,
    // not a failure of hood, so it is retried and, if it persists, reported and skipped.
    for _ in 0..3 {
        let out = common::command("perf")
            .args([
                "record",
                "-N",
                "-q",
                "--call-graph",
                "dwarf",
                "-F",
                "999",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .arg(&k.nofp)
            .args(["depth", "800"])
            .output()
            .unwrap();
        if out.status.success() && file.exists() {
            ok = true;
            break;
        }
        last = text(&out);
    }
    if !ok {
        eprintln!(
            "not run here: perf record itself failed three times (not hood's failure):\n{last}"
        );
        return;
    }
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let want = ["main", "d1", "d2", "d3", "d4", "d5", "depth_leaf"];
    let (pct, n, bad) = share(&stacks, "uk_nofp", "depth_leaf", |u| {
        ends_with_chain(u, &want)
    });
    assert!(
        n >= 100 && pct >= 95.0,
        "perf.data: {pct:.1}% of {n}; e.g. {bad:#?}"
    );
}

#[test]
fn python_perf_trampolines_show_python_frames_inside_complete_stacks() {
    if !privileged("python_perf_jit") {
        return;
    }
    // CPython 3.12+ `-X perf`: each Python call goes through a JIT trampoline named in
    // /tmp/perf-PID.map; the trampolines have neither unwind information nor frame pointers.
    let Some(py) = python_with_perf_support() else {
        eprintln!("not run here: no python3.12 or later on this machine");
        return;
    };
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fibs.py");
    std::fs::write(
        &script,
        "def fib(n): return n if n < 2 else fib(n-1) + fib(n-2)\n\
         def work():\n    for _ in range(200): fib(22)\nwork()\n",
    )
    .unwrap();
    let file = dir.path().join("pyperf.hood");
    // Every Python call is a C-level recursion here, so the default 8 KiB copy does not reach
    // the entry of a 22-deep fib: the header says to raise it, and this is that fix.
    let out = record(
        &file,
        &[
            "--call-graph",
            "auto,65528",
            "--",
            &py,
            "-X",
            "perf",
            script.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (mut fib, mut good) = (0, 0);
    for (frames, n) in &stacks {
        let u = user_frames(frames);
        if !frames[0].starts_with("python3.1") || !u.iter().any(|f| f.starts_with("py::fib:")) {
            continue;
        }
        fib += n;
        let pos = |p: &str| u.iter().position(|f| f.starts_with(p));
        let ordered = matches!(
            (pos("Py_BytesMain"), pos("py::<module>:"), pos("py::work:"), pos("py::fib:")),
            (Some(a), Some(b), Some(c), Some(d)) if a < b && b < c && c < d
        );
        if ordered && !u.iter().any(|f| f.starts_with("[truncated")) {
            good += n;
        }
    }
    assert!(fib >= 200, "only {fib} samples in fib\n{}", text(&out));
    assert!(
        good as f64 >= 0.95 * fib as f64,
        "{good} of {fib} fib samples complete with <module> > work > fib"
    );
}

/// A CPython 3.12 or later (`-X perf` exists since 3.12): on PATH, or installed by pyenv.
fn python_with_perf_support() -> Option<String> {
    let works = |p: &str| {
        common::command(p)
            .args(["-c", "import sys; assert sys.version_info >= (3, 12)"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    for name in ["python3.13", "python3.12"] {
        if works(name) {
            return Some(name.to_string());
        }
    }
    let root = std::env::var("PYENV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".pyenv")
        });
    let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().into_owned();
            let minor: u32 = v.strip_prefix("3.")?.split('.').next()?.parse().ok()?;
            (minor >= 12).then(|| e.path().join(format!("bin/python3.{minor}")))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|p| p.display().to_string())
        .find(|p| works(p))
}

/// Build `unwind_lib.c` with `flags` as `DIR/libunwlib.so` in a directory of its own.
fn lib_variant(k: &Known, name: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    let dir = k.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let so = dir.join("libunwlib.so");
    let src = repo().join("tests/c/unwind_lib.c");
    let mut args = flags.to_vec();
    args.extend([
        "-fPIC",
        "-shared",
        "-o",
        so.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    gcc(&args);
    (dir, so)
}

/// Record the known-answer program's `lib` mode with the library found in `dir` first.
fn record_with_lib(k: &Known, dir: &Path, name: &str) -> (PathBuf, std::process::Output) {
    let file = k.dir.path().join(format!("{name}.hood"));
    let out = run(hood()
        .args(["record", "-o"])
        .arg(&file)
        .arg("--")
        .arg(&k.nofp)
        .args(["lib", "1000"])
        .env("LD_LIBRARY_PATH", dir));
    assert!(out.status.success(), "{}", text(&out));
    (file, out)
}

#[test]
fn library_without_unwind_info_is_marked_and_warned_about_once() {
    if !privileged("no_cfi_library") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let (dir, _) = lib_variant(
        k,
        "nocfi",
        &[
            "-O2",
            "-fomit-frame-pointer",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
        ],
    );
    let (file, out) = record_with_lib(k, &dir, "nocfi");
    let err = String::from_utf8_lossy(&out.stderr);
    let so = dir.join("libunwlib.so");
    let want = format!(
        "hood: {} has no call frame information (.eh_frame or .debug_frame), and where a \
         stack met its code no frame pointer led on, so stacks through its code stop \
         there. Fix: install its debug file under /usr/lib/debug/.build-id, or rebuild it \
         with -fasynchronous-unwind-tables (the gcc/clang default) or \
         -fno-omit-frame-pointer",
        so.display()
    );
    assert_eq!(
        err.lines().filter(|l| *l == want).count(),
        1,
        "one warning for the library, word for word:\n{want}\n--- got:\n{err}"
    );
    assert_eq!(err.matches("call frame information").count(), 1, "{err}");
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let (pct, n, bad) = share(&stacks, "uk_nofp", "lib_leaf", |u| {
        u.first() == Some(&"[truncated: no unwind info in libunwlib.so]")
    });
    assert!(
        n >= 100 && pct >= 95.0,
        "{pct:.1}% of {n} marked; e.g. {bad:#?}"
    );
}

#[test]
fn many_short_lived_processes_keep_complete_stacks() {
    if !privileged("short_lived_unwind") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let file = k.dir.path().join("short.hood");
    // 2 at a time, 40 processes of 40 ms, each forked by the shell, exec'd and exited while
    // recorded (make -j2's pattern).
    let prog = k.nofp.to_str().unwrap();
    let script = format!("for i in $(seq 20); do {prog} depth 40 & {prog} recurse 40 & wait; done");
    let out = record(&file, &["--", "sh", "-c", &script]);
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let want = ["main", "d1", "d2", "d3", "d4", "d5", "depth_leaf"];
    let (pct, n, bad) = share(&stacks, "uk_nofp", "depth_leaf", |u| {
        ends_with_chain(u, &want)
    });
    assert!(
        n >= 200 && pct >= 95.0,
        "depth: {pct:.1}% of {n}; e.g. {bad:#?}"
    );
    let mut want = vec!["main"];
    want.extend(std::iter::repeat_n("rec", 30));
    want.push("rec_leaf");
    let (pct, n, bad) = share(&stacks, "uk_nofp", "rec_leaf", |u| {
        ends_with_chain(u, &want)
    });
    assert!(
        n >= 200 && pct >= 95.0,
        "recurse: {pct:.1}% of {n}; e.g. {bad:#?}"
    );
}

/// Removes a file when dropped (a debug file placed under /usr/lib/debug for one test).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn debug_frame_from_a_separate_debug_file_found_by_build_id() {
    if !privileged("debug_frame_by_build_id") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    // Call frame information only in .debug_frame, which then moves to a debug file.
    let (dir, so) = lib_variant(
        k,
        "dbgfile",
        &[
            "-O2",
            "-g",
            "-fomit-frame-pointer",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
            "-Wl,--build-id",
        ],
    );
    let dbg = dir.join("libunwlib.debug");
    for args in [
        vec![
            "--only-keep-debug",
            so.to_str().unwrap(),
            dbg.to_str().unwrap(),
        ],
        vec!["--strip-debug", so.to_str().unwrap()],
    ] {
        let st = common::command("objcopy").args(&args).status().unwrap();
        assert!(st.success(), "objcopy {args:?}");
    }
    let id = build_id_hex(&so);
    let place = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    std::fs::create_dir_all(place.parent().unwrap()).unwrap();
    std::fs::copy(&dbg, &place).unwrap();
    let _cleanup = RemoveOnDrop(place);
    let (file, _) = record_with_lib(k, &dir, "dbgfile");
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let want = ["main", "lib_outer", "lib_inner", "lib_leaf"];
    let (pct, n, bad) = share(&stacks, "uk_nofp", "lib_leaf", |u| {
        ends_with_chain(u, &want)
    });
    assert!(n >= 100 && pct >= 95.0, "{pct:.1}% of {n}; e.g. {bad:#?}");
}

/// The GNU build-id of an ELF file, as lowercase hex (from `readelf -n`).
fn build_id_hex(path: &Path) -> String {
    let out = common::command("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .expect("the library has a build-id")
}

#[test]
fn compressed_debug_frame_is_read_in_every_form() {
    if !privileged("compressed_debug_frame") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    // Call frame information only in .debug_frame, compressed as linkers and objcopy do:
    // SHF_COMPRESSED with zlib or zstd, and GNU's older `.zdebug_frame`. binutils leaves a
    // section uncompressed when that would not make it smaller, so the library gets 300 more
    // functions to make its .debug_frame worth compressing.
    let pad = k.dir.path().join("pad.c");
    let mut src = String::from("int pad0(int x) { return x; }\n");
    for i in 1..300 {
        src += &format!(
            "int pad{i}(int x) {{ return x * {i} + pad{}(x ^ {i}); }}\n",
            i - 1
        );
    }
    std::fs::write(&pad, src).unwrap();
    for (how, shows) in [
        ("zlib", "ZLIB"),
        ("zstd", "ZSTD"),
        ("zlib-gnu", ".zdebug_frame"),
    ] {
        let name = format!("z-{how}");
        let (dir, so) = lib_variant(
            k,
            &name,
            &[
                "-O2",
                "-g",
                "-fomit-frame-pointer",
                "-fno-asynchronous-unwind-tables",
                "-fno-unwind-tables",
                pad.to_str().unwrap(),
            ],
        );
        let st = common::command("objcopy")
            .arg(format!("--compress-debug-sections={how}"))
            .arg(&so)
            .status()
            .unwrap();
        assert!(st.success(), "objcopy --compress-debug-sections={how}");
        let sections = common::command("readelf")
            .arg("-t")
            .arg(&so)
            .output()
            .unwrap();
        let sections = String::from_utf8_lossy(&sections.stdout);
        // The section's entry (name, then its lines) says how it is compressed.
        let entry: String = sections
            .lines()
            .skip_while(|l| !l.contains("debug_frame"))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(entry.contains(shows), "{how}: not compressed:\n{entry}");
        let (file, out) = record_with_lib(k, &dir, &name);
        let stacks = collapsed(&file, &["--min-percent", "0"]);
        let want = ["main", "lib_outer", "lib_inner", "lib_leaf"];
        let (pct, n, bad) = share(&stacks, "uk_nofp", "lib_leaf", |u| {
            ends_with_chain(u, &want)
        });
        assert!(
            n >= 100 && pct >= 95.0,
            "{how}: {pct:.1}% of {n}; e.g. {bad:#?}\n{}",
            text(&out)
        );
    }
}

/// `tests/go/split.go` built with the installed Go (offline, its caches in `dir`).
fn go_split(dir: &Path) -> PathBuf {
    go_build(dir, "split.go", "gosplit")
}

/// `tests/go/SRC` built offline as `dir/BIN`.
fn go_build(dir: &Path, src: &str, bin: &str) -> PathBuf {
    let bin = dir.join(bin);
    let out = common::command("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(repo().join("tests/go").join(src))
        .current_dir(dir)
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("GOCACHE", dir.join("gocache"))
        .env("GOPATH", dir.join("gopath"))
        .env("HOME", dir)
        .output()
        .expect("`go` must be installed for this test (apt-get install golang-go)");
    assert!(out.status.success(), "go build: {}", text(&out));
    bin
}

#[test]
fn go_frameless_leaves_keep_their_callers_and_runtime_threads_their_roots() {
    if !privileged("go_unwind") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let bin = go_split(dir.path());
    let file = dir.path().join("go.hood");
    let out = record(&file, &["--", bin.to_str().unwrap(), "3"]);
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    // Every sample in the frameless leaf: runtime.goexit -> runtime.main -> main.main ->
    // one of the three callers -> main.leaf, split 50/30/20 by construction.
    let mut by_caller = std::collections::HashMap::new();
    let (mut leaf, mut bad) = (0u64, Vec::new());
    for (frames, n) in &stacks {
        if frames.first().map(String::as_str) != Some("gosplit") {
            continue;
        }
        let u = user_frames(frames);
        if u.last() != Some(&"main.leaf") {
            continue;
        }
        leaf += n;
        match u.as_slice() {
            ["runtime.goexit.abi0", "runtime.main", "main.main", caller, "main.leaf"] => {
                *by_caller.entry(caller.to_string()).or_insert(0u64) += n;
            }
            _ if bad.len() < 5 => bad.push(u.join(";")),
            _ => {}
        }
    }
    let exact: u64 = ["main.workA", "main.workB", "main.workC"]
        .iter()
        .map(|c| by_caller.get(*c).copied().unwrap_or(0))
        .sum();
    assert!(
        leaf >= 500,
        "only {leaf} samples in main.leaf\n{}",
        text(&out)
    );
    let pct = 100.0 * exact as f64 / leaf as f64;
    assert!(
        pct >= 95.0,
        "{pct:.1}% of {leaf} leaf samples have their caller: {by_caller:?}; e.g. {bad:#?}"
    );
    for (caller, want) in [
        ("main.workA", 50.0),
        ("main.workB", 30.0),
        ("main.workC", 20.0),
    ] {
        let got = 100.0 * by_caller.get(caller).copied().unwrap_or(0) as f64 / exact as f64;
        assert!(
            (got - want).abs() <= 6.0,
            "{caller}: {got:.1}% of the leaf's samples, {want}% by construction: {by_caller:?}"
        );
    }
    // The runtime's own threads start in runtime.clone (its `CALL` of mstart), with nothing
    // made up beneath.
    let garbage: Vec<String> = stacks
        .iter()
        .filter(|(f, _)| f.first().map(String::as_str) == Some("gosplit"))
        .map(|(f, _)| user_frames(f))
        .filter(|u| u.contains(&"runtime.mstart.abi0") && u.first() != Some(&"runtime.clone.abi0"))
        .map(|u| u.join(";"))
        .collect();
    assert!(garbage.is_empty(), "runtime threads: {garbage:#?}");
}

/// Go's own signal handler (`runtime.sigtramp.abi0`, on Go's alternate signal stack): a
/// sample in it goes on through Go's trampoline, named (`runtime.sigreturn.abi0`; the kernel
/// makes its first instruction the handler's return address), into the interrupted code and
/// its callers. The interrupted code's stack is not in the copy (the handler ran on another
/// stack), so the kernel's frame-pointer chain, which Go keeps, continues it.
#[test]
fn go_signal_handler_stacks_continue_through_gos_trampoline() {
    if !privileged("go_sigtramp") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let bin = go_build(dir.path(), "sigframe.go", "gosigframe");
    let file = dir.path().join("gosig.hood");
    let out = record(&file, &["--", bin.to_str().unwrap(), "6"]);
    assert!(out.status.success(), "{}", text(&out));
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let mut want: Vec<&str> = vec!["runtime.goexit.abi0", "runtime.main", "main.main"];
    want.extend(std::iter::repeat_n("main.deep", 41));
    want.push("main.spin");
    let (mut n, mut good, mut bad) = (0u64, 0u64, Vec::new());
    for (frames, count) in &stacks {
        if frames.first().map(String::as_str) != Some("gosigframe") {
            continue;
        }
        let u = user_frames(frames);
        let Some(h) = u.iter().position(|f| *f == "runtime.sigtramp.abi0") else {
            continue;
        };
        n += count;
        let ok = u.starts_with(&want)
            && h > want.len()
            && matches!(
                u[h - 1],
                "runtime.sigreturn.abi0" | "runtime.sigreturn__sigaction.abi0"
            )
            && !u
                .iter()
                .any(|f| f.starts_with("[truncated") || f.starts_with("gosigframe+0x"));
        if ok {
            good += count;
        } else if bad.len() < 5 {
            bad.push(u.join(";"));
        }
    }
    assert!(n >= 20, "only {n} samples in Go's handler\n{}", text(&out));
    let pct = 100.0 * good as f64 / n as f64;
    assert!(
        pct >= 90.0,
        "{pct:.1}% of {n} handler samples; e.g. {bad:#?}"
    );
}

/// Node.js with `--perf-basic-prof`: V8's builtins lie in node's text without call frame
/// information, and its JIT code in anonymous memory. The warning names node with words that
/// are true (nothing is said about frame pointers, which V8 keeps), and says nothing about
/// `//anon` (memory, not a binary anyone rebuilds).
#[test]
fn node_warnings_are_true_word_for_word() {
    if !privileged("node_warnings") {
        return;
    }
    let Some(node) = ["/usr/bin/node", "/usr/bin/nodejs", "/usr/local/bin/node"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        eprintln!("not run here: no node on this machine");
        return;
    };
    let node = std::fs::canonicalize(node).unwrap();
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("node.hood");
    let script = "function fib(n){return n<2?n:fib(n-1)+fib(n-2)}\n\
                  const end=Date.now()+1500;let s=0;\n\
                  while(Date.now()<end){s+=fib(20);const a=[];\
                  for(let i=0;i<1000;i++)a.push(String(i));s+=a.join(',').length}\n\
                  console.log(s)\n";
    let js = dir.path().join("busy.js");
    std::fs::write(&js, script).unwrap();
    // node writes a V8 log beside it with --perf-basic-prof: in the temporary directory.
    let out = run(hood()
        .arg("record")
        .arg("-o")
        .arg(&file)
        .arg("--")
        .arg(&node)
        .arg("--perf-basic-prof")
        .arg(&js)
        .current_dir(dir.path()));
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("//anon") && !err.contains("keeps no frame pointer"),
        "{err}"
    );
    let want = format!(
        "hood: {}: some of its code is not described by its call frame information \
             (.eh_frame), and where a stack met that code no frame pointer led on, so stacks \
             through it stop there; such code is generated or written by hand (V8's builtins \
             in node, assembly). Fix: nothing to fix when the report's share of these stacks \
             is small; for your own assembly, add call frame information (`.cfi_` directives) \
             or keep a frame pointer (`push rbp; mov rbp, rsp`)",
        node.display()
    );
    // Whether a sample stops in a builtin depends on the run; when one does, these words.
    for line in err.lines().filter(|l| l.contains("call frame information")) {
        assert_eq!(line, want, "{err}");
    }
}

/// The raw-copy fallback (issue 24): samples whose stack copy the recorder keeps raw (as it
/// does when its unwinding falls behind the rings; `HOOD_KEEP_STACK_COPIES=1` keeps every one)
/// are unwound by the report, with the recorder's unwinder, to the chains the recorder finds:
/// for a library opened after the start (its mmap record replayed) and for a process attached
/// with `-p` (its mappings from the start-up snapshot). The summary and the report header
/// count them.
#[test]
fn samples_kept_raw_are_unwound_by_the_report_to_the_recorders_chains() {
    if !privileged("raw_fallback") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let dl = k.dl.to_str().unwrap().to_string();
    let nofp = k.nofp.to_str().unwrap().to_string();
    let mut child = common::command(&k.nofp)
        .args(["depth", "20000"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let pid = child.id().to_string();
    let cases: [(&str, Vec<&str>, &str, Vec<&str>); 2] = [
        (
            "dlopen",
            vec!["--", &nofp, "dlopen", "3000", &dl],
            "dl_leaf",
            vec!["main", "dl_outer", "dl_inner", "dl_leaf"],
        ),
        (
            "pid",
            vec!["-p", &pid, "-d", "2"],
            "depth_leaf",
            vec!["main", "d1", "d2", "d3", "d4", "d5", "depth_leaf"],
        ),
    ];
    for (name, args, leaf, want) in cases {
        let mut shares = Vec::new();
        for keep in [false, true] {
            let file = k.dir.path().join(format!("raw-{name}-{keep}.hood"));
            let mut c = hood();
            c.arg("record").arg("-o").arg(&file).args(&args);
            if keep {
                c.env("HOOD_KEEP_STACK_COPIES", "1");
            }
            let out = run(&mut c);
            let err = text(&out);
            assert!(out.status.success(), "{name}: {err}");
            let header = run(hood().args(["report", "-i"]).arg(&file));
            let header = text(&header);
            let kept = header
                .lines()
                .find_map(|l| l.strip_prefix("Unwound now: "))
                .and_then(|l| l.split(' ').next())
                .and_then(|n| n.parse::<u64>().ok());
            if keep {
                let n = kept.unwrap_or_else(|| panic!("{name}: no `Unwound now` line:\n{header}"));
                assert!(n >= 100, "{name}: {n} kept raw\n{header}");
                assert!(
                    err.contains(&format!(
                        "{n} samples stored with their raw stack copy, to be unwound by the report"
                    )),
                    "{name}: {err}"
                );
            } else {
                assert_eq!(kept, None, "{name}: nothing is kept raw unasked\n{header}");
            }
            let stacks = collapsed(&file, &["--min-percent", "0"]);
            let (pct, n, bad) = share(&stacks, "uk_nofp", leaf, |u| ends_with_chain(u, &want));
            assert!(
                n >= 100 && pct >= 95.0,
                "{name}, kept raw {keep}: {pct:.1}% of {n} samples in {leaf} have {want:?}; e.g. {bad:#?}"
            );
            shares.push(pct);
        }
        assert!(
            (shares[0] - shares[1]).abs() <= 3.0,
            "{name}: {:.1}% unwound live against {:.1}% at report time",
            shares[0],
            shares[1]
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// 64 busy threads at the default 999 Hz (issue 24): with the rings the recorder sizes by
/// default (and the raw-copy fallback when its unwinding falls behind), the kernel drops no
/// sample, and the threads' stacks reach their start. On 2 CPUs the threads leave the
/// recorder little time, which is the point; the summary, the report header and the file's
/// counts must all say 0 lost.
#[test]
fn sixty_four_busy_threads_lose_no_samples() {
    if !privileged("threads_64") {
        return;
    }
    let _serial = exclusive();
    let k = known();
    let prog = k.dir.path().join("busy_threads");
    let src = repo().join("bench/unwind/threads.c");
    gcc(&[
        "-O2",
        "-g",
        "-fomit-frame-pointer",
        "-pthread",
        "-o",
        prog.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    let file = k.dir.path().join("threads64.hood");
    let out = record(
        &file,
        &["-F", "999", "--", prog.to_str().unwrap(), "64", "3"],
    );
    let err = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(", 0 lost;"), "samples were lost:\n{err}");
    let rep = run(hood().args(["report", "-i"]).arg(&file));
    let rep = text(&rep);
    assert!(rep.contains("\nLost samples: 0\n"), "{rep}");
    let stacks = collapsed(&file, &["--min-percent", "0"]);
    let mut by_thread = 0u64;
    let (pct, n, bad) = share(&stacks, "busy_threads", "leaf", |u| {
        ends_with_chain(u, &["start_thread", "spin", "mid", "leaf"])
    });
    for (frames, c) in &stacks {
        if frames.first().map(String::as_str) == Some("busy_threads") {
            by_thread += c;
        }
    }
    assert!(
        by_thread >= 500,
        "only {by_thread} samples of the threads:\n{err}"
    );
    assert!(
        n >= 300 && pct >= 95.0,
        "{pct:.1}% of {n} samples in leaf reach start_thread; e.g. {bad:#?}"
    );
}
