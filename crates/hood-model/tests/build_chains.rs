//! Interpreting samples whose call chains repeat while the process's mappings change: the
//! same addresses must resolve against the mappings in force when each sample was taken.

use hood_model::profile::{build_profile, RawRecording, Resolved, ResolvedFrame, Resolver};
use hood_raw::maps::MappedFile;
use hood_raw::records::{Event, Mapping, Timed, CONTEXT_USER};

/// Names a location `FILE@OFFSET`, so a test sees which file an address resolved in; with
/// `inline`, offsets 0x100 and 0x180 are code of `inner` (line 7 of in.h) inlined into
/// `outer` at line 3 of out.c; only 0x180's answer knows where `inner` starts (line 5).
struct ByFile {
    inline: bool,
    /// Name kernel addresses `k@ADDR` (otherwise they stay unresolved).
    kernel: bool,
    /// Every file asked about, with the build-id it came with.
    seen: Vec<(String, Option<hood_model::profile::BuildId>)>,
}

impl ByFile {
    fn new(inline: bool, kernel: bool) -> ByFile {
        ByFile {
            inline,
            kernel,
            seen: Vec::new(),
        }
    }
}

impl Resolver for ByFile {
    fn kernel(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>> {
        addrs
            .iter()
            .map(|a| self.kernel.then(|| Resolved::name(format!("k@{a:#x}"))))
            .collect()
    }
    fn file(&mut self, file: &MappedFile, offsets: &[u64]) -> Vec<Option<Resolved>> {
        self.seen.push((file.path.clone(), file.build_id));
        offsets
            .iter()
            .map(|&o| {
                let name = format!("{}@{o:#x}", file.path);
                if !(self.inline && (o == 0x100 || o == 0x180)) {
                    return Some(Resolved::name(name));
                }
                let frame = |name: &str, file: &str, line| ResolvedFrame {
                    name: name.into(),
                    file: Some(file.into()),
                    line,
                    start_line: 0,
                };
                let inner = ResolvedFrame {
                    start_line: if o == 0x180 { 5 } else { 0 },
                    ..frame("inner", "in.h", 7)
                };
                Some(Resolved {
                    frames: vec![inner, frame(&name, "out.c", 3)],
                })
            })
            .collect()
    }
    fn vdso(&mut self, offsets: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; offsets.len()]
    }
    fn perf_map(&mut self, _pid: u32, addrs: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; addrs.len()]
    }
    fn symfile(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; addrs.len()]
    }
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}

fn at(time: u64, event: Event) -> Timed {
    Timed {
        time,
        ring_cpu: 0,
        event,
    }
}

fn map(pid: u32, file: &str) -> Event {
    Event::Mmap(Box::new(Mapping {
        pid,
        start: 0x40_0000,
        len: 0x1000,
        pgoff: 0,
        filename: file.into(),
        build_id: None,
    }))
}

fn sample(pid: u32, chain: (u32, u32)) -> Event {
    Event::Sample {
        pid,
        tid: pid,
        cpu: 0,
        ip: 0x40_0100,
        period: 1,
        cpumode: 2,
        chain,
    }
}

#[test]
fn a_repeated_chain_follows_mmap_exec_and_fork() {
    let mut raw = RawRecording::default();
    // One chain shared by every sample: leaf 0x400100, caller returns to 0x400201.
    raw.decoded.chains = vec![CONTEXT_USER, 0x40_0100, 0x40_0201];
    let chain = (0, 3);
    raw.decoded.events = vec![
        at(1, map(10, "/a")),
        at(2, sample(10, chain)),
        at(3, sample(10, chain)),
        at(4, map(10, "/b")),
        at(5, sample(10, chain)),
        at(
            6,
            Event::Fork {
                pid: 11,
                ppid: 10,
                tid: 11,
            },
        ),
        at(7, sample(11, chain)),
        at(
            8,
            Event::Comm {
                pid: 10,
                tid: 10,
                comm: "new".into(),
                exec: true,
            },
        ),
        at(9, map(10, "/c")),
        at(10, sample(10, chain)),
        at(11, sample(11, chain)),
    ];
    let prof = build_profile(&raw, &mut ByFile::new(false, false));
    let leaf_and_caller: Vec<(u32, String, String)> = prof
        .samples
        .iter()
        .map(|s| {
            let st = &prof.stacks[s.stack as usize];
            let name = |i: usize| prof.funcs[st[i] as usize].name.clone();
            (s.pid, name(0), name(1))
        })
        .collect();
    let want = |pid, f: &str| (pid, format!("{f}@0x100"), format!("{f}@0x200"));
    assert_eq!(
        leaf_and_caller,
        [
            want(10, "/a"),
            want(10, "/a"),
            want(10, "/b"),
            want(11, "/b"),
            want(10, "/c"),
            want(11, "/b"),
        ]
    );
}

#[test]
fn the_first_frame_of_each_context_is_the_exact_address_the_rest_are_return_addresses() {
    use hood_raw::records::CONTEXT_KERNEL;
    let mut raw = RawRecording::default();
    // A page fault on the first instruction of a function (0x400200): the user part starts
    // with that exact address, which a lookup one byte back would give to the function before.
    raw.decoded.chains = vec![
        CONTEXT_KERNEL,
        0xffff_ffff_8100_0010,
        0xffff_ffff_8100_0201,
        CONTEXT_USER,
        0x40_0200,
        0x40_0301,
    ];
    raw.decoded.events = vec![
        at(1, map(10, "/a")),
        at(
            2,
            Event::Sample {
                pid: 10,
                tid: 10,
                cpu: 0,
                ip: 0xffff_ffff_8100_0010,
                period: 1,
                cpumode: 1,
                chain: (0, 6),
            },
        ),
    ];
    let prof = build_profile(&raw, &mut ByFile::new(false, true));
    let st = &prof.stacks[prof.samples[0].stack as usize];
    let names: Vec<&str> = st
        .iter()
        .map(|&f| prof.funcs[f as usize].name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "k@0xffffffff81000010",
            "k@0xffffffff81000200",
            "/a@0x200",
            "/a@0x300"
        ]
    );
}

#[test]
fn an_inlined_function_is_a_frame_of_its_own_and_a_line_of_its_location() {
    let mut raw = RawRecording::default();
    raw.decoded.chains = vec![CONTEXT_USER, 0x40_0100, 0x40_0201];
    raw.decoded.events = vec![at(1, map(10, "/a")), at(2, sample(10, (0, 3)))];
    let prof = build_profile(&raw, &mut ByFile::new(true, false));
    let s = &prof.samples[0];
    let names: Vec<String> = prof.stacks[s.stack as usize]
        .iter()
        .map(|&f| prof.funcs[f as usize].label().into_owned())
        .collect();
    assert_eq!(names, ["inner (inlined)", "/a@0x100", "/a@0x200"]);
    // By location: two locations, the leaf with two lines, innermost first.
    let locs = &prof.loc_stacks[s.locs as usize];
    assert_eq!(locs.len(), 2);
    let leaf = &prof.locations[locs[0] as usize];
    let lines: Vec<(String, Option<&str>, u32)> = prof
        .lines_of(leaf)
        .iter()
        .map(|l| {
            (
                prof.funcs[l.func as usize].name.clone(),
                prof.source_file(l),
                l.line,
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            ("inner".to_string(), Some("in.h"), 7),
            ("/a@0x100".to_string(), Some("out.c"), 3)
        ]
    );
    assert_eq!(prof.funcs[leaf.func as usize].name, "/a@0x100");
    let caller = &prof.locations[locs[1] as usize];
    assert_eq!(prof.lines_of(caller).len(), 1);
    assert_eq!(prof.source_file(&prof.lines_of(caller)[0]), None);
}

#[test]
fn an_inlined_function_whose_start_line_only_some_answers_know_stays_one_function() {
    let mut raw = RawRecording::default();
    raw.decoded.chains = vec![CONTEXT_USER, 0x40_0100, CONTEXT_USER, 0x40_0180];
    let mut second = sample(10, (2, 2));
    if let Event::Sample { ip, .. } = &mut second {
        *ip = 0x40_0180;
    }
    raw.decoded.events = vec![
        at(1, map(10, "/a")),
        at(2, sample(10, (0, 2))),
        at(3, second),
    ];
    let prof = build_profile(&raw, &mut ByFile::new(true, false));
    let inner: Vec<_> = prof.funcs.iter().filter(|f| f.name == "inner").collect();
    assert_eq!(inner.len(), 1, "{:?}", prof.funcs);
    assert_eq!(inner[0].start_line, 5, "{:?}", prof.funcs);
    let leaves: Vec<u32> = prof
        .samples
        .iter()
        .map(|s| prof.stacks[s.stack as usize][0])
        .collect();
    assert_eq!(leaves[0], leaves[1], "both samples are in the one inner");
}

#[test]
fn a_wait_recorded_without_a_stack_says_so() {
    use hood_model::profile::meta::OffCpuMeta;
    use hood_raw::records::{example_sched_formats, SchedLayout, TASK_UNINTERRUPTIBLE};
    let formats = example_sched_formats(1, 2);
    let mut raw = RawRecording::default();
    raw.meta.mode = hood_model::profile::RecordMode::System;
    raw.meta.off_cpu = Some(OffCpuMeta {
        formats: formats.clone(),
        min_ns: 0,
        all_wakeups: true,
        stack_rate: 0,
    });
    raw.decoded.sched = SchedLayout::from_formats(&formats);
    assert!(raw.decoded.sched.is_some());
    let switch = |tid, next_tid| Event::SwitchOut {
        pid: tid,
        tid,
        cpu: 0,
        state: TASK_UNINTERRUPTIBLE,
        next_tid,
        chain: (0, 0),
    };
    // Thread 10 leaves the CPU with no stack recorded; thread 20 hands the CPU back to it.
    raw.decoded.events = vec![at(1_000_000, switch(10, 20)), at(9_000_000, switch(20, 10))];
    let prof = build_profile(&raw, &mut ByFile::new(false, true));
    let wait = prof
        .off_cpu
        .iter()
        .find(|s| s.tid == 10)
        .expect("thread 10's wait");
    assert_eq!(wait.period, 8_000_000);
    let names: Vec<&str> = prof.stacks[wait.stack as usize]
        .iter()
        .map(|&f| prof.funcs[f as usize].name.as_str())
        .collect();
    assert_eq!(names, [hood_model::profile::build::NO_STACK]);
}

#[test]
fn an_all_zero_build_id_names_no_build() {
    let mut raw = RawRecording::default();
    raw.decoded.chains = vec![CONTEXT_USER, 0x40_0100];
    let zero = |file: &str| {
        Event::Mmap(Box::new(Mapping {
            build_id: hood_model::profile::BuildId::from_bytes(&[0; 20]),
            ..match map(10, file) {
                Event::Mmap(m) => *m,
                _ => unreachable!(),
            }
        }))
    };
    raw.decoded.events = vec![at(1, zero("/a")), at(2, sample(10, (0, 2)))];
    // A perf.data's build-id table can hold zeros too.
    raw.decoded.events.push(at(3, map(11, "/b")));
    raw.decoded.events.push(at(4, sample(11, (0, 2))));
    raw.build_ids.insert(
        "/b".into(),
        hood_model::profile::BuildId::from_hex(&"00".repeat(20)).unwrap(),
    );
    let mut files = ByFile::new(false, false);
    build_profile(&raw, &mut files);
    let mut seen = files.seen;
    seen.sort();
    assert_eq!(seen, [("/a".to_string(), None), ("/b".to_string(), None)]);
}
