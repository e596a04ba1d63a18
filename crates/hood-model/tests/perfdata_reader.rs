//! hood's perf.data reader on files built here byte by byte, in both of perf's layouts: what
//! they hold is read back exactly, and damaged or lying files give an answer or a clear
//! error, never a panic, a hang or an allocation sized by the file's claims.

use hood_model::perfdata::{load, load_bytes};
use hood_raw::attr::sample;
use hood_raw::perfdata::PerfFile;
use hood_raw::records::Event;
use proptest::prelude::*;

const ST: u64 = sample::IDENTIFIER
    | sample::IP
    | sample::TID
    | sample::TIME
    | sample::CPU
    | sample::PERIOD
    | sample::CALLCHAIN;

/// A 128-byte perf_event_attr: cpu-clock (config 0) or task-clock (1), by frequency,
/// sample_id_all.
fn attr(config: u64) -> Vec<u8> {
    let mut a = vec![0u8; 128];
    a[0..4].copy_from_slice(&1u32.to_le_bytes());
    a[4..8].copy_from_slice(&128u32.to_le_bytes());
    a[8..16].copy_from_slice(&config.to_le_bytes());
    a[16..24].copy_from_slice(&999u64.to_le_bytes());
    a[24..32].copy_from_slice(&ST.to_le_bytes());
    a[40..48].copy_from_slice(&((1u64 << 10) | (1 << 18)).to_le_bytes());
    a
}

fn record(typ: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&typ.to_le_bytes());
    r.extend_from_slice(&misc.to_le_bytes());
    r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
    r.extend_from_slice(body);
    r
}

fn words(ws: &[u64]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A sample of event `id` in process `pid` at `time` on `cpu`, with a user call chain.
fn sample_rec(id: u64, pid: u32, time: u64, cpu: u32, chain: &[u64]) -> Vec<u8> {
    let mut b = words(&[id, chain[0], u64::from(pid) | (u64::from(pid) << 32), time]);
    b.extend_from_slice(&words(&[u64::from(cpu), 1_001_001]));
    b.extend_from_slice(&words(&[chain.len() as u64 + 1, (-512i64) as u64]));
    b.extend_from_slice(&words(chain));
    record(9, 2, &b)
}

/// The sample_id trailer of side-band records: tid, time, cpu, identifier.
fn trailer(pid: u32, time: u64, cpu: u32, id: u64) -> Vec<u8> {
    words(&[
        u64::from(pid) | (u64::from(pid) << 32),
        time,
        u64::from(cpu),
        id,
    ])
}

fn comm_rec(pid: u32, name: &str, time: u64, id: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    let mut n = name.as_bytes().to_vec();
    n.resize(16, 0);
    b.extend_from_slice(&n);
    b.extend_from_slice(&trailer(pid, time, 0, id));
    record(3, 1 << 13, &b)
}

fn mmap2_rec(pid: u32, start: u64, len: u64, path: &str, id: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&words(&[start, len, 0]));
    b.extend_from_slice(&[0u8; 24]); // maj, min, ino, generation
    b.extend_from_slice(&[5, 0, 0, 0, 2, 0, 0, 0]); // prot, flags
    let mut p = path.as_bytes().to_vec();
    p.resize((p.len() + 8) & !7, 0);
    b.extend_from_slice(&p);
    b.extend_from_slice(&trailer(pid, 1, 0, id));
    record(10, 2, &b)
}

/// `perf_header_string`.
fn hstring(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.resize((b.len() + 8) & !7, 0);
    let mut out = (b.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&b);
    out
}

/// The records of the known-answer file: two events (ids 11 and 22), one process, 30
/// samples of event 11 and 20 of event 22 spread over two CPUs.
fn records() -> Vec<u8> {
    let mut d = Vec::new();
    d.extend(comm_rec(7, "work", 1, 0)); // synthesized from /proc: id 0
    d.extend(mmap2_rec(7, 0x400000, 0x1000, "/usr/bin/work", 11));
    for i in 0..50u64 {
        let (id, chain) = if i % 5 < 3 {
            (11, [0x400100, 0x400200])
        } else {
            (22, [0x400300, 0x400200])
        };
        d.extend(sample_rec(id, 7, 100 + i, (i % 2) as u32, &chain));
    }
    d.extend(record(68, 0, &[])); // FINISHED_ROUND
    d
}

fn event_desc() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&2u32.to_le_bytes());
    b.extend_from_slice(&128u32.to_le_bytes());
    for (config, name, id) in [(0, "cpu-clock", 11u64), (1, "task-clock", 22)] {
        b.extend_from_slice(&attr(config));
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&hstring(name));
        b.extend_from_slice(&id.to_le_bytes());
    }
    b
}

fn cmdline() -> Vec<u8> {
    let mut b = 2u32.to_le_bytes().to_vec();
    b.extend(hstring("perf"));
    b.extend(hstring("record"));
    b
}

fn build_id_feature() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(-1i32).to_le_bytes());
    let mut id = [0u8; 24];
    id[..20].copy_from_slice(&[0xab; 20]);
    id[20] = 20;
    b.extend_from_slice(&id);
    b.extend(hstring("[kernel.kallsyms]").split_off(4));
    record(67, 1 | (1 << 15), &b)
}

/// The seekable layout: header, attributes with their id lists, data, feature table.
fn seekable() -> Vec<u8> {
    let mut f = vec![0u8; 104];
    f[..8].copy_from_slice(b"PERFILE2");
    f[8..16].copy_from_slice(&104u64.to_le_bytes());
    f[16..24].copy_from_slice(&144u64.to_le_bytes());
    // Id lists, then the attribute section.
    let ids_at = f.len() as u64;
    f.extend(words(&[11, 22]));
    let attrs_at = f.len() as u64;
    for (i, config) in [0u64, 1].iter().enumerate() {
        f.extend(attr(*config));
        f.extend(words(&[ids_at + 8 * i as u64, 8]));
    }
    let data_at = f.len() as u64;
    let data = records();
    f.extend(&data);
    let table_at = f.len();
    // Features: BUILD_ID (2), HOSTNAME (3), CMDLINE (11), EVENT_DESC (12).
    let feats: Vec<(u64, Vec<u8>)> = vec![
        (2, build_id_feature()),
        (3, hstring("testhost")),
        (11, cmdline()),
        (12, event_desc()),
    ];
    f.resize(table_at + 16 * feats.len(), 0);
    let mut bits = 0u64;
    for (n, (id, body)) in feats.iter().enumerate() {
        bits |= 1 << id;
        let at = f.len() as u64;
        f.extend(body);
        let e = table_at + 16 * n;
        f[e..e + 8].copy_from_slice(&at.to_le_bytes());
        f[e + 8..e + 16].copy_from_slice(&(body.len() as u64).to_le_bytes());
    }
    f[24..32].copy_from_slice(&attrs_at.to_le_bytes());
    f[32..40].copy_from_slice(&288u64.to_le_bytes());
    f[40..48].copy_from_slice(&data_at.to_le_bytes());
    f[48..56].copy_from_slice(&(data.len() as u64).to_le_bytes());
    f[72..80].copy_from_slice(&bits.to_le_bytes());
    f
}

/// The streamed layout (`perf record -o -`): attributes and features as records.
fn streamed() -> Vec<u8> {
    let mut f = b"PERFILE2".to_vec();
    f.extend(16u64.to_le_bytes());
    for (config, id) in [(0u64, 11u64), (1, 22)] {
        let mut b = attr(config);
        b.extend(id.to_le_bytes());
        f.extend(record(64, 0, &b));
    }
    for (id, body) in [(3u64, hstring("testhost")), (12, event_desc())] {
        let mut b = id.to_le_bytes().to_vec();
        b.extend(body);
        f.extend(record(80, 0, &b));
    }
    f.extend(records());
    f
}

fn write(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    // Under cargo's own scratch directory for integration tests (target/tmp), not /tmp: each
    // run overwrites the same few files instead of leaving a directory behind.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hood-perfdata-reader");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn check_known_answer(path: &std::path::Path, seekable: bool) {
    let imp = load(path, None).unwrap();
    let raw = &imp.raw;
    assert!(raw.warnings.is_empty(), "{:?}", raw.warnings);
    let samples: Vec<_> = raw
        .decoded
        .events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Sample { pid, cpu, ip, .. } => Some((*pid, *cpu, *ip, e.time)),
            _ => None,
        })
        .collect();
    assert_eq!(samples.len(), 50);
    assert_eq!(samples.iter().filter(|s| s.2 == 0x400100).count(), 30);
    assert_eq!(samples.iter().filter(|s| s.1 == 1).count(), 25);
    assert!(samples.windows(2).all(|w| w[0].3 <= w[1].3));
    let stats = raw.stats.as_ref().unwrap();
    assert_eq!(stats.per_cpu[&0].samples + stats.per_cpu[&1].samples, 50);
    assert_eq!(raw.meta.event, "cpu-clock");
    assert_eq!(raw.meta.freq_hz, 999);
    assert_eq!(raw.meta.hostname, "testhost");
    assert!(
        raw.meta
            .notes
            .iter()
            .any(|n| n.contains("2 events (cpu-clock, task-clock)")),
        "{:?}",
        raw.meta.notes
    );
    let comm = raw.decoded.events.iter().any(
        |e| matches!(&e.event, Event::Comm { comm, exec: true, pid: 7, .. } if comm == "work"),
    );
    let mmap = raw.decoded.events.iter().any(
        |e| matches!(&e.event, Event::Mmap(m) if m.filename == "/usr/bin/work" && m.start == 0x400000),
    );
    assert!(comm && mmap);
    if seekable {
        assert_eq!(raw.meta.command, vec!["perf", "record"]);
        assert_eq!(
            imp.kernel_build_id.map(|id| id.to_string()).as_deref(),
            Some(&"ab".repeat(20)[..])
        );
    }
}

#[test]
fn seekable_file_reads_back_exactly() {
    check_known_answer(&write("seekable.data", &seekable()), true);
}

#[test]
fn streamed_file_reads_back_exactly() {
    check_known_answer(&write("streamed.data", &streamed()), false);
}

#[test]
fn samples_of_an_undescribed_event_are_skipped_and_said() {
    let mut f = seekable();
    let bytes = sample_rec(99, 7, 1, 0, &[0x400100]);
    // Replace the first sample (after the comm and mmap records) by one of id 99.
    let data_at = u64::from_le_bytes(f[40..48].try_into().unwrap()) as usize;
    let first = data_at
        + comm_rec(7, "work", 1, 0).len()
        + mmap2_rec(7, 0x400000, 0x1000, "/usr/bin/work", 11).len();
    f[first..first + bytes.len()].copy_from_slice(&bytes);
    let imp = load(&write("unknown-id.data", &f), None).unwrap();
    assert!(
        imp.raw
            .warnings
            .iter()
            .any(|w| w.contains("1 records name an event id")),
        "{:?}",
        imp.raw.warnings
    );
}

#[test]
fn a_file_cut_anywhere_reads_what_is_there_or_says_why_not() {
    for f in [seekable(), streamed()] {
        for cut in 0..f.len() {
            let p = write("cut.data", &f[..cut]);
            match load(&p, None) {
                Ok(imp) => {
                    let n = imp.raw.decoded.events.len();
                    assert!(n <= 52, "cut at {cut}: {n} events");
                }
                Err(e) => assert!(
                    e.to_string().contains("not a readable perf.data file"),
                    "{e}"
                ),
            }
        }
    }
}

#[test]
fn lying_sizes_and_counts_are_refused_without_allocating_them() {
    let f = seekable();
    let set = |at: usize, v: u64| {
        let mut g = f.clone();
        g[at..at + 8].copy_from_slice(&v.to_le_bytes());
        g
    };
    // Attribute size, attribute section, data section, feature bits set for sections the
    // table does not have.
    for g in [
        set(16, 0),
        set(16, u64::MAX),
        set(24, u64::MAX - 4),
        set(32, u64::MAX),
        set(40, u64::MAX),
        set(40, 3),
        set(48, u64::MAX),
        set(72, u64::MAX),
        set(80, u64::MAX),
    ] {
        let p = write("lying.data", &g);
        if let Ok(imp) = load(&p, None) {
            assert!(imp.raw.decoded.events.len() <= 52);
        }
    }
    // Counts inside features: a command line of 4 billion strings, an event description of
    // 4 billion events.
    let pf = PerfFile::parse(&f).unwrap();
    assert_eq!(pf.features.cmdline.len(), 2);
    let mut g = f.clone();
    let at = find(&g, &cmdline()).unwrap();
    g[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let at = find(&g, &event_desc()).unwrap();
    g[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let imp = load(&write("counts.data", &g), None).unwrap();
    assert!(
        imp.raw
            .warnings
            .iter()
            .any(|w| w.contains("header features are damaged")),
        "{:?}",
        imp.raw.warnings
    );
    assert_eq!(
        imp.raw
            .decoded
            .events
            .iter()
            .filter(|e| matches!(e.event, Event::Sample { .. }))
            .count(),
        50
    );
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn not_perf_data_names_the_reason() {
    for (bytes, why) in [
        (b"2ELIFREP\x68\0\0\0\0\0\0\0".to_vec(), "big-endian"),
        (b"PERFILE1\x68\0\0\0\0\0\0\0".to_vec(), "magic"),
        (b"PERFILE2\x50\0\0\0\0\0\0\0".to_vec(), "header size is 80"),
        (b"PERF".to_vec(), "shorter"),
    ] {
        let e = load(&write("not.data", &bytes), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(why) && e.contains("not.data"), "{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn mutated_files_never_panic(
        streamed_layout in any::<bool>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut f = if streamed_layout { streamed() } else { seekable() };
        for (at, v) in flips {
            let i = at.index(f.len());
            f[i] = v;
        }
        if let Ok(imp) = load_bytes(std::path::Path::new("mutated.data"), &f, None) {
            prop_assert!(imp.raw.decoded.events.len() <= f.len() / 8);
        }
    }
}

/// Found by fuzzing: lost-sample counts come from the file, and their sum overflowed.
#[test]
fn lost_counts_that_overflow_their_sum_saturate() {
    let mut f = streamed();
    for _ in 0..2 {
        // PERF_RECORD_LOST: id, count; then the sample_id trailer.
        let mut b = words(&[11, u64::MAX - 1]);
        b.extend(trailer(7, 5, 0, 11));
        f.extend(record(2, 0, &b));
    }
    let imp = load_bytes(std::path::Path::new("lost.data"), &f, None).unwrap();
    let prof = hood_model::profile::build_profile(&imp.raw, &mut Nothing);
    assert_eq!(prof.lost_in_stream, u64::MAX);
    assert_eq!(imp.raw.stats.unwrap().lost(), u64::MAX);
}

/// Names nothing.
struct Nothing;

impl hood_model::profile::Resolver for Nothing {
    fn kernel(&mut self, a: &[u64]) -> Vec<Option<hood_model::profile::Resolved>> {
        vec![None; a.len()]
    }
    fn file(
        &mut self,
        _: &hood_raw::maps::MappedFile,
        a: &[u64],
    ) -> Vec<Option<hood_model::profile::Resolved>> {
        vec![None; a.len()]
    }
    fn vdso(&mut self, a: &[u64]) -> Vec<Option<hood_model::profile::Resolved>> {
        vec![None; a.len()]
    }
    fn perf_map(&mut self, _: u32, a: &[u64]) -> Vec<Option<hood_model::profile::Resolved>> {
        vec![None; a.len()]
    }
    fn symfile(&mut self, a: &[u64]) -> Vec<Option<hood_model::profile::Resolved>> {
        vec![None; a.len()]
    }
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}
