//! Every reading command takes its recording and its process and thread filters the same way
//! (issue 30, item 4; docs/cli.md, "One convention"): `-i FILE` (or `--input FILE`; the older
//! `hood calls report FILE` still works), `-p/--pid PID` and `--tid TID`. A filter that
//! matches nothing exits 1 and names the option (docs/cli.md's exit status 1).
//!
//! One table: for each command, the recording of a program whose four threads do the work
//! (tests/c/calls_threads.c), and how to read which threads an answer shows.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;
use common::{hood, run, text};

/// pid_max is at most 2^22: no process or thread has this ID.
const NO_SUCH_ID: &str = "4999999";

/// The threads (pid, tid) a JSON answer shows.
type Threads = fn(&serde_json::Value) -> BTreeSet<(u32, u32)>;

/// One reading command of the table.
struct Reader {
    /// The command words (`["calls", "report"]`), before the options.
    words: &'static [&'static str],
    /// Words after the options (annotate's function).
    tail: &'static [&'static str],
    /// Options that make the answer JSON, when the command has it.
    json: &'static [&'static str],
    /// The threads a JSON answer shows.
    threads: Option<Threads>,
    /// Whether the recording may be named after the options too (`calls report FILE`).
    positional: bool,
}

fn json_threads(v: &serde_json::Value) -> BTreeSet<(u32, u32)> {
    v.as_array()
        .expect("threads array")
        .iter()
        .map(|t| {
            (
                t["pid"].as_u64().unwrap() as u32,
                t["tid"].as_u64().unwrap() as u32,
            )
        })
        .collect()
}

fn report_threads(v: &serde_json::Value) -> BTreeSet<(u32, u32)> {
    json_threads(&v["threads"])
}

fn trace_threads(v: &serde_json::Value) -> BTreeSet<(u32, u32)> {
    json_threads(&v["analysis"]["threads"])
}

fn calls_threads(v: &serde_json::Value) -> BTreeSet<(u32, u32)> {
    let mut out = BTreeSet::new();
    for p in v["processes"].as_array().expect("processes") {
        let pid = p["pid"].as_u64().unwrap() as u32;
        // The rows of `--threads` name their thread.
        for r in p["rows"].as_array().expect("rows") {
            if let Some(tid) = r["tid"].as_u64() {
                out.insert((pid, tid as u32));
            }
        }
    }
    out
}

const READERS: &[Reader] = &[
    Reader {
        words: &["report"],
        tail: &[],
        json: &["--format", "json"],
        threads: Some(report_threads),
        positional: false,
    },
    Reader {
        words: &["annotate"],
        tail: &["work"],
        json: &[],
        threads: None,
        positional: false,
    },
    Reader {
        words: &["calls", "report"],
        tail: &[],
        json: &["--format", "json", "--threads"],
        threads: Some(calls_threads),
        positional: true,
    },
    Reader {
        words: &["trace", "report"],
        tail: &[],
        json: &["--format", "json"],
        threads: Some(trace_threads),
        positional: true,
    },
];

/// `hood WORDS OPTS TAIL`.
fn read(r: &Reader, opts: &[&str]) -> Output {
    run(hood().args(r.words).args(opts).args(r.tail))
}

fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The three recordings of calls_threads: a profile, call paths and a trace.
fn recordings(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let prog = common::instrumented("calls_threads", dir, &["-pthread"], &[]);
    let p = prog.to_str().unwrap();
    let rt = common::runtime_release_dir().join("libhood_rt.so");
    // Four busy threads: not beside the sampling and timing tests of this binary.
    let _one = common::exclusive();
    let mut files = Vec::new();
    for (words, name, n) in [
        (&["record"][..], "prof.data", "3000000"),
        (&["calls", "run"], "calls.data", "2000"),
        (&["trace", "record"], "trace.data", "2000"),
    ] {
        let file = dir.join(name);
        let out = run(hood()
            .args(words)
            .arg("-o")
            .arg(&file)
            .args(["--", p, n])
            .env("HOOD_RT_LIB", &rt)
            .env("HOOD_SHM_DIR", dir));
        assert!(out.status.success(), "hood {words:?}:\n{}", text(&out));
        files.push((name, file));
    }
    files
}

#[test]
fn every_reading_command_takes_i_p_and_tid_the_same_way() {
    if !common::privileged("every_reading_command_takes_i_p_and_tid_the_same_way") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let files = recordings(dir.path());
    let file_of = |r: &Reader| -> PathBuf {
        let name = match r.words[0] {
            "calls" => "calls.data",
            "trace" => "trace.data",
            _ => "prof.data",
        };
        files.iter().find(|(n, _)| *n == name).unwrap().1.clone()
    };
    for r in READERS {
        let what = format!("hood {}", r.words.join(" "));
        let f = file_of(r);
        let f = f.to_str().unwrap();
        // -i FILE and --input FILE read the same recording.
        let short = read(r, &["-i", f]);
        assert_eq!(short.status.code(), Some(0), "{what} -i:\n{}", text(&short));
        let long = read(r, &["--input", f]);
        assert_eq!(short.stdout, long.stdout, "{what}: -i and --input");
        if r.positional {
            let named = run(hood().args(r.words).arg(f));
            assert_eq!(short.stdout, named.stdout, "{what}: -i FILE and FILE");
        }
        // The threads of the recording: the program's process and its four workers (the
        // JSON answer's, or the profile's for annotate).
        let all: BTreeSet<(u32, u32)> = match r.threads {
            Some(threads) => threads(&json_of(&read(r, &[&["-i", f][..], r.json].concat()))),
            None => report_threads(&json_of(&run(hood()
                .args(["report", "--format", "json", "-i"])
                .arg(f)))),
        };
        let pid = all.iter().next().expect("threads").0;
        let workers: Vec<u32> = all.iter().map(|t| t.1).filter(|&t| t != pid).collect();
        assert!(workers.len() >= 2, "{what}: threads {all:?}");
        let (pid_s, tid_s) = (pid.to_string(), workers[1].to_string());
        // -p and --pid are one option; the process's threads pass.
        let p_short = read(r, &[&["-i", f, "-p", &pid_s][..], r.json].concat());
        let p_long = read(r, &[&["-i", f, "--pid", &pid_s][..], r.json].concat());
        assert_eq!(
            p_short.status.code(),
            Some(0),
            "{what} -p:\n{}",
            text(&p_short)
        );
        assert_eq!(p_short.stdout, p_long.stdout, "{what}: -p and --pid");
        // --tid keeps one thread, alone or with its process's -p.
        for opts in [&["--tid", &tid_s][..], &["-p", &pid_s, "--tid", &tid_s]] {
            let out = read(r, &[&["-i", f][..], opts, r.json].concat());
            assert_eq!(
                out.status.code(),
                Some(0),
                "{what} {opts:?}:\n{}",
                text(&out)
            );
            if let Some(threads) = r.threads {
                assert_eq!(
                    threads(&json_of(&out)),
                    BTreeSet::from([(pid, workers[1])]),
                    "{what} {opts:?}"
                );
            } else {
                assert_ne!(out.stdout, short.stdout, "{what} {opts:?}: narrowed");
            }
        }
        // Nothing matches: exit 1, the option named (annotate's own words name the function).
        for opt in ["--pid", "--tid"] {
            let out = read(r, &["-i", f, opt, NO_SUCH_ID]);
            assert_eq!(out.status.code(), Some(1), "{what} {opt}:\n{}", text(&out));
            if r.words[0] != "annotate" {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    err.contains(&format!("{opt} {NO_SUCH_ID}")),
                    "{what} {opt}: {err}"
                );
            }
        }
    }
}

/// `hood diff` takes its two recordings as `-i BASE -i NEW` too (its filters are by name,
/// as pids differ between two runs).
#[test]
fn diff_takes_its_two_recordings_with_i() {
    if !common::privileged("diff_takes_its_two_recordings_with_i") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spinner = common::c_program("spinner");
    let (a, b) = (dir.path().join("a.data"), dir.path().join("b.data"));
    let serial = common::exclusive();
    for f in [&a, &b] {
        let out = common::record(f, &["--", spinner.to_str().unwrap(), "200"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    drop(serial);
    let named = run(hood().args(["diff", "--format", "json"]).arg(&a).arg(&b));
    let flags = run(hood()
        .args(["diff", "--format", "json", "-i"])
        .arg(&a)
        .arg("--input")
        .arg(&b));
    assert_eq!(named.status.code(), Some(0), "{}", text(&named));
    assert_eq!(named.stdout, flags.stdout);
    let one = run(hood().args(["diff", "-i"]).arg(&a));
    assert_eq!(one.status.code(), Some(2), "{}", text(&one));
    assert!(text(&one).contains("-i BASE -i NEW"), "{}", text(&one));
}

/// `hood ps` narrows the same way: `-p PID` one process, `-H -p PID` its threads, `--tid TID`
/// one thread; the older `-t PID` and `-a` still work; an ID that matches nothing exits 1.
#[test]
fn ps_takes_p_tid_and_h_as_the_readers_do() {
    // This test process and a thread of its own that lives until the test ends (a harness
    // thread running another test may end while ps runs, as one did on CI).
    let me = std::process::id();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let keeper = std::thread::spawn(move || {
        // "/proc/thread-self" links to "PID/task/TID".
        let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
        let tid: u32 = link
            .file_name()
            .and_then(|n| n.to_str()?.parse().ok())
            .expect("a tid in /proc/thread-self");
        tid_tx.send(tid).unwrap();
        let _ = stop_rx.recv();
    });
    let other: u32 = tid_rx.recv().unwrap();
    assert_ne!(other, me);
    // The ID column of each row.
    let ids = |args: &[&str]| -> (Option<i32>, BTreeSet<u32>) {
        let out = run(hood().arg("ps").args(args));
        let ids = String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        (out.status.code(), ids)
    };
    let me_s = me.to_string();
    let other_s = other.to_string();
    assert_eq!(ids(&["-p", &me_s]), (Some(0), BTreeSet::from([me])));
    assert_eq!(ids(&["--pid", &me_s]), (Some(0), BTreeSet::from([me])));
    let (code, threads) = ids(&["-H", "-p", &me_s]);
    assert_eq!(code, Some(0));
    assert!(
        threads.contains(&me) && threads.contains(&other),
        "{threads:?}"
    );
    assert_eq!(ids(&["-t", &me_s]), (Some(0), threads.clone()), "-t PID");
    assert_eq!(
        ids(&["--tid", &other_s]),
        (Some(0), BTreeSet::from([other]))
    );
    let (code, all) = ids(&["-a"]);
    assert_eq!(code, Some(0));
    assert!(all.contains(&other), "-a lists every thread");
    for opt in ["-p", "--tid"] {
        let out = run(hood().args(["ps", opt, NO_SUCH_ID]));
        assert_eq!(out.status.code(), Some(1), "ps {opt}:\n{}", text(&out));
    }
    drop(stop_tx);
    keeper.join().unwrap();
}

/// The IDs of a JSON frame's tasks and of its threads.
type Frame = (BTreeSet<u32>, BTreeSet<u32>);

/// Each JSON frame `hood top ARGS` printed, its exit status and what it said on stderr.
fn top_json(args: &[&str]) -> (Vec<Frame>, Option<i32>, String) {
    let out = run(hood().arg("top").args(args));
    let ids = |v: &serde_json::Value| -> BTreeSet<u32> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t["pid"].as_u64().unwrap() as u32)
                    .collect()
            })
            .unwrap_or_default()
    };
    let frames = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON frame per line");
            (ids(&v["tasks"]), ids(&v["threads"]))
        })
        .collect();
    (
        frames,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `hood top` narrows as the readers do: `-p PID[,PID]` those processes (with `-H` their
/// threads), `--tid TID` one thread (shown as threads), in batch frames and with `--replay`;
/// an ID no task has exits 1 and names it, alone (the IDs that matched are not named).
#[test]
fn top_takes_p_and_tid_as_the_readers_do() {
    let me = std::process::id();
    let parent = std::os::unix::process::parent_id();
    // A thread of this test's own that lives until the test ends (the harness's other
    // threads come and go with the other tests).
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (end_tx, end_rx) = std::sync::mpsc::channel::<()>();
    let keeper = std::thread::spawn(move || {
        let me = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
        let tid: u32 = me.file_name().unwrap().to_str().unwrap().parse().unwrap();
        tid_tx.send(tid).unwrap();
        let _ = end_rx.recv();
    });
    let other = tid_rx.recv().unwrap();
    let (me_s, other_s) = (me.to_string(), other.to_string());
    let live = ["-b", "-n", "1", "--delay", "0.1", "--json"];
    let both = format!("{me},{parent}");
    for p in [&["-p", &me_s][..], &["--pid", &me_s]] {
        let (frames, code, err) = top_json(&[&live[..], p].concat());
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(frames.len(), 1, "{err}");
        assert_eq!(frames[0].0, BTreeSet::from([me]), "top {p:?}");
    }
    let (frames, code, err) = top_json(&[&live[..], &["-p", &both]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(frames[0].0, BTreeSet::from([me, parent]), "-p {both}");
    // -H -p: the process's threads, this one among them.
    let (frames, code, err) = top_json(&[&live[..], &["-H", "-p", &me_s]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        frames[0].1.contains(&me) && frames[0].1.contains(&other),
        "{:?}",
        frames[0].1
    );
    // --tid: that thread alone, and its process.
    let (frames, code, err) = top_json(&[&live[..], &["--tid", &other_s]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(frames[0], (BTreeSet::from([me]), BTreeSet::from([other])));
    // Nothing matches: exit 1, each unmatched option named, the matched one not.
    for (opt, val) in [
        ("--pid", NO_SUCH_ID.to_string()),
        ("--tid", NO_SUCH_ID.to_string()),
        ("--pid", format!("{me},{NO_SUCH_ID}")),
    ] {
        let (frames, code, err) = top_json(&[&live[..], &[opt, &val]].concat());
        assert_eq!(code, Some(1), "top {opt} {val}: {err}");
        assert!(frames.is_empty(), "top {opt} {val}: printed a frame");
        assert!(err.contains(&format!("{opt} {NO_SUCH_ID}")), "{err}");
        assert!(!err.contains(&format!("--pid {me}")), "{err}");
    }
    // The text frames of -b narrow too: this process's row, no other's.
    let out = run(hood().args(["top", "-b", "-n", "1", "--delay", "0.1", "-p", &me_s]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rows: Vec<u32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("PID"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(rows, [me], "{}", text(&out));

    // A store of two intervals, replayed with -p (this process lives through it).
    let d = tempfile::tempdir().unwrap();
    let store = d.path().join("store");
    let out = run(hood()
        .args(["top", "--delay", "0.2", "-n", "2", "--record"])
        .arg(&store));
    assert!(out.status.success(), "{}", text(&out));
    let dir = store.to_str().unwrap();
    let (frames, code, err) = top_json(&["-b", "--json", "--replay", dir, "-p", &me_s]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(frames.len(), 2, "{err}");
    assert!(
        frames.iter().all(|f| f.0 == BTreeSet::from([me])),
        "{frames:?}"
    );
    let (_, code, err) = top_json(&["-b", "--json", "--replay", dir, "-p", NO_SUCH_ID]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&format!("--pid {NO_SUCH_ID}")), "{err}");
    // The store holds processes: --tid with --replay is refused as a usage error.
    let (_, code, err) = top_json(&["-b", "--replay", dir, "--tid", &other_s]);
    assert_eq!(code, Some(2), "{err}");
    drop(end_tx);
    keeper.join().unwrap();
}

/// Each reading command given a recording of a kind it does not read says, in one message,
/// what the file is, the command that reads it, and what this command reads (issue 23).
#[test]
fn a_recording_of_another_kind_names_the_command_that_reads_it() {
    use hood_format::{FileKind, Writer};
    let dir = tempfile::tempdir().unwrap();
    let hood_file = |name: &str, kind: FileKind| {
        let p = dir.path().join(name);
        Writer::create(&p, kind).unwrap().commit().unwrap();
        p
    };
    let profile = hood_file("x.hood", FileKind::Profile);
    let calls = hood_file("x.calls", FileKind::Calls);
    let trace = hood_file("x.trace", FileKind::Trace);
    let monitor = hood_file("x.seg", FileKind::Monitor);
    let perf = dir.path().join("perf.data");
    let mut bytes = b"PERFILE2".to_vec();
    bytes.resize(200, 0);
    std::fs::write(&perf, bytes).unwrap();

    let is = |p: &Path, what: &str, reader: &str| {
        format!(
            "{} is {what}; read it with `{reader}`",
            p.display(),
            reader = reader.replace("FILE", &p.display().to_string())
        )
    };
    let as_profile = |p: &Path| {
        is(
            p,
            "a sampled-profile recording (hood record)",
            "hood report -i FILE",
        )
    };
    let as_perf = |p: &Path| is(p, "a perf.data file (perf record)", "hood report -i FILE");
    let as_calls = |p: &Path| {
        is(
            p,
            "a call-path recording (hood calls run)",
            "hood calls report -i FILE",
        )
    };
    let as_trace = |p: &Path| {
        is(
            p,
            "an event-trace recording (hood trace record)",
            "hood trace report -i FILE",
        )
    };
    let as_monitor = |p: &Path| {
        is(
            p,
            "a monitor-store segment (hood top --record)",
            "hood top --replay DIR",
        )
    };
    let cases = [
        ("report", &calls, as_calls(&calls)),
        ("report", &trace, as_trace(&trace)),
        ("report", &monitor, as_monitor(&monitor)),
        ("annotate", &calls, as_calls(&calls)),
        ("annotate", &trace, as_trace(&trace)),
        ("calls report", &profile, as_profile(&profile)),
        ("calls report", &perf, as_perf(&perf)),
        ("calls report", &trace, as_trace(&trace)),
        ("trace report", &profile, as_profile(&profile)),
        ("trace report", &perf, as_perf(&perf)),
        ("trace report", &calls, as_calls(&calls)),
    ];
    for (command, file, is) in cases {
        let reads = match command {
            "calls report" => "call-path recordings (hood calls run)",
            "trace report" => "event traces (hood trace record)",
            _ => "sampled profiles (hood record, perf record)",
        };
        let tail: &[&str] = if command == "annotate" {
            &["main"]
        } else {
            &[]
        };
        let out = run(hood()
            .args(command.split(' '))
            .arg("-i")
            .arg(file)
            .args(tail));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command} {file:?}: {err}");
        assert_eq!(
            err.trim_end(),
            format!("hood: error: {is}; `hood {command}` reads {reads}"),
            "{command} {file:?}"
        );
    }
    // `hood diff` reads profiles, call paths and traces; a monitor segment is none of them.
    let out = run(hood()
        .args(["diff", "-i"])
        .arg(&profile)
        .arg("-i")
        .arg(&monitor));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "hood: error: {}; `hood diff` reads profiles, call-path recordings or event traces",
            as_monitor(&monitor)
        )
    );
}
