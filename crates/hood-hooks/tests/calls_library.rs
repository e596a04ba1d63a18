//! The `calls` recorder as a library: its file written (and its chunks read back), what `get` and `reset`
//! answer when no instrumented process is there, and a missing runtime library named.

use std::collections::BTreeMap;

use hood_format::tags;
use hood_hooks::calls::{self, GetConfig, Got, Message, Reset, RunConfig};
use hood_hooks::HooksError;
use hood_tracemodel::calls::{decode_process, CallsMeta, Limits, ProcessCalls};

fn process(pid: u32, exe: &str) -> ProcessCalls {
    ProcessCalls {
        pid,
        ppid: 1,
        exe: exe.into(),
        ticks_per_sec: 1_000_000_000,
        clock: hood_tracemodel::Clock::Monotonic,
        compensate: false,
        comp_self_ticks: 0,
        comp_child_ticks: 0,
        flags: 0,
        limits: Limits::default(),
        state: hood_tracemodel::ProcessState::Exited,
        span_ns: 5,
        threads: Vec::new(),
        symbols: BTreeMap::from([(0x1000, "main".to_string())]),
        notes: vec!["a note".into()],
    }
}

#[test]
fn a_written_file_reads_back_with_its_meta() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.data");
    let procs = vec![process(7, "/bin/a"), process(8, "/bin/b")];
    let argv = vec!["prog".to_string(), "x".to_string()];
    assert!(calls::write(&path, "run", &argv, &procs).unwrap() > 0);
    // Read chunk by chunk as the format has it (hood-load's reader has its own tests).
    let mut r = hood_format::Reader::open(&path).unwrap();
    assert_eq!(r.kind(), hood_format::FileKind::Calls);
    let mut back = Vec::new();
    let mut meta = None;
    for c in r.chunks() {
        let c = c.unwrap();
        match c.tag {
            tags::calls::META => meta = Some(serde_json::from_slice::<CallsMeta>(&c.data).unwrap()),
            tags::calls::PROCESS => back.push(decode_process(&c.data, c.offset).unwrap()),
            _ => {}
        }
    }
    let warnings = r.warnings();
    assert_eq!(back, procs);
    let meta = meta.expect("meta");
    assert_eq!((meta.command.as_str(), meta.argv), ("run", argv));
    assert!(meta.collected_realtime_ns > 0);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn get_reset_and_run_say_why_they_did_nothing() {
    // One test: it sets the process's environment.
    let shm = tempfile::tempdir().unwrap();
    std::env::set_var("HOOD_SHM_DIR", shm.path());
    let out = shm.path().join("out.data");
    let mut said = Vec::new();
    let cfg = GetConfig {
        pid: None,
        output: out.clone(),
        keep: false,
    };
    match calls::get(&cfg, &mut |m| said.push(m)).unwrap() {
        Got::Nothing(why) => assert!(
            why.contains("no instrumented processes in")
                && why.contains(&shm.path().display().to_string()),
            "{why}"
        ),
        Got::Written(p) => panic!("{} processes in an empty directory", p.len()),
    }
    assert!(!out.exists(), "no file without tables");
    match calls::reset(None, &mut |m| said.push(m)).unwrap() {
        Reset::Nothing(why) => assert!(why.contains("no running instrumented processes"), "{why}"),
        Reset::Done(n) => panic!("{n} resets in an empty directory"),
    }
    assert_eq!(said, Vec::<Message>::new());

    std::env::set_var("HOOD_RT_LIB", shm.path().join("no-such-lib.so"));
    let run = RunConfig {
        output: out.clone(),
        keep: false,
        argv: vec!["true".into()],
    };
    match calls::run(&run, &mut hood_proc::steer::NoSteer, &mut |_| {}) {
        Err(e @ HooksError::Runtime(_)) => {
            let text = e.to_string();
            assert!(
                text.contains("HOOD_RT_LIB=") && text.contains("libhood_rt.so"),
                "{text}"
            );
        }
        other => panic!("ran without a runtime: {:?}", other.map(|r| r.exit)),
    }
    assert!(!out.exists(), "no file when the command never ran");
}
