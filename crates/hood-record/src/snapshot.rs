//! What the report needs besides the samples, captured at record time: processes and their
//! mappings at start, kallsyms, the vdso image, build-ids and JIT perf maps. A perf.data file
//! lacks some of them; [`import_perf_data`] takes them from this system when it can.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use hood_model::profile::{ProcSnapshot, ProcSnapshotChunk};

/// Snapshot `pids` (or every process when `None`) from /proc. Vanished processes are skipped.
pub fn processes(pids: Option<&[i32]>) -> ProcSnapshotChunk {
    match pids {
        Some(p) => processes_of(p.iter().map(|&p| p as u32).collect()),
        None => processes_of(all_pids()),
    }
}

/// The processes now running that `earlier` does not hold: those started between a snapshot
/// and the moment the events were enabled, whose fork and exec the events did not see.
pub fn processes_since(earlier: &ProcSnapshotChunk) -> ProcSnapshotChunk {
    let known: BTreeSet<u32> = earlier.processes.iter().map(|p| p.pid).collect();
    processes_of(
        all_pids()
            .into_iter()
            .filter(|p| !known.contains(p))
            .collect(),
    )
}

fn all_pids() -> Vec<u32> {
    fs::read_dir("/proc")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn processes_of(list: Vec<u32>) -> ProcSnapshotChunk {
    let mut out = ProcSnapshotChunk::default();
    let mut files = BTreeSet::new();
    for pid in list {
        let base = format!("/proc/{pid}");
        let Ok(maps) = fs::read_to_string(format!("{base}/maps")) else {
            continue;
        };
        let comm = read_trim(&format!("{base}/comm"));
        let mut threads = Vec::new();
        if let Ok(rd) = fs::read_dir(format!("{base}/task")) {
            for e in rd.flatten() {
                if let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                    threads.push((tid, read_trim(&format!("{base}/task/{tid}/comm"))));
                }
            }
        }
        threads.sort();
        for m in maps.lines().filter_map(hood_raw::maps::parse_maps_line) {
            if m.is_exec() && m.path.starts_with('/') {
                files.insert(m.path.to_string());
            }
        }
        out.processes.push(ProcSnapshot {
            pid,
            comm,
            maps,
            threads,
        });
    }
    out.build_ids = build_ids(files.iter().map(String::as_str));
    out
}

/// Build-ids (hex) of the given ELF files; unreadable files are left out.
pub fn build_ids<'a>(paths: impl Iterator<Item = &'a str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for p in paths {
        if let Ok(Some(id)) = hood_symbols::read_build_id(Path::new(p)) {
            out.insert(p.to_string(), hood_symbols::hex(&id));
        }
    }
    out
}

fn read_trim(path: &str) -> String {
    fs::read_to_string(path)
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

/// The text of /proc/kallsyms, or `None` with addresses hidden (kptr_restrict) or unreadable.
pub fn kallsyms() -> Option<String> {
    let text = fs::read_to_string("/proc/kallsyms").ok()?;
    let hidden = text
        .lines()
        .take(50)
        .all(|l| l.starts_with("0000000000000000"));
    (!hidden).then_some(text)
}

/// The kernel's build-id from /sys/kernel/notes.
pub fn kernel_build_id() -> Option<String> {
    let notes = fs::read("/sys/kernel/notes").ok()?;
    hood_symbols::build_id_from_notes(&notes).map(|id| hood_symbols::hex(&id))
}

/// The `[vdso]` ELF image of this process (the same for every process on this kernel).
pub fn vdso() -> Option<Vec<u8>> {
    let maps = fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let range = line.split_ascii_whitespace().next()?;
    let (s, e) = range.split_once('-')?;
    let (s, e) = (
        u64::from_str_radix(s, 16).ok()?,
        u64::from_str_radix(e, 16).ok()?,
    );
    use std::io::{Read, Seek, SeekFrom};
    let mut mem = fs::File::open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(s)).ok()?;
    let mut buf = vec![0u8; (e - s) as usize];
    mem.read_exact(&mut buf).ok()?;
    Some(buf)
}

/// /tmp/perf-PID.map text of each pid that has one.
pub fn perf_maps(pids: &BTreeSet<u32>) -> Vec<(u32, String)> {
    pids.iter()
        .filter_map(|&pid| {
            Some((
                pid,
                fs::read_to_string(format!("/tmp/perf-{pid}.map")).ok()?,
            ))
        })
        .collect()
}

/// Host name and kernel release.
pub fn uname() -> (String, String) {
    (
        read_trim("/proc/sys/kernel/hostname"),
        read_trim("/proc/sys/kernel/osrelease"),
    )
}

/// Import a perf.data file. perf does not store kallsyms or the `[vdso]` image: when the file
/// was recorded on the running kernel (same build-id, or same release if it stored none),
/// they are taken from this system; otherwise kernel frames stay unresolved, with a warning.
/// Stack copies of `perf record --call-graph dwarf` are unwound against the binaries on this
/// machine, as perf report does.
pub fn import_perf_data(
    path: &Path,
) -> Result<hood_model::profile::RawRecording, hood_model::ModelError> {
    let mut unwinder = hood_unwind::Unwinder::new(hood_unwind::Options::default());
    if let Some(v) = vdso() {
        unwinder.set_vdso(&v);
    }
    let imp = hood_model::perfdata::load(path, Some(&mut unwinder))?;
    let mut raw = imp.raw;
    let st = unwinder.stats();
    if st.stacks > 0 && st.complete < st.stacks {
        raw.warnings.push(format!(
            "{} of {} user stack copies in {} were unwound only in part (see the [truncated: …] frames)",
            st.stacks - st.complete,
            st.stacks,
            path.display()
        ));
    }
    let running = kernel_build_id();
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let same_kernel = match (&imp.kernel_build_id, &running) {
        (Some(a), Some(b)) => a == b,
        _ if raw.meta.kernel_release.is_empty() => {
            raw.warnings.push(format!(
                "{} does not say which kernel recorded it; kernel frames are named from this system's",
                path.display()
            ));
            true
        }
        _ => raw.meta.kernel_release == release.trim(),
    };
    if same_kernel {
        raw.kallsyms = kallsyms().unwrap_or_default();
        raw.vdso = vdso().unwrap_or_default();
    } else {
        raw.warnings.push(format!(
            "{} was recorded on another kernel ({}); kernel frames are unresolved",
            path.display(),
            raw.meta.kernel_release
        ));
    }
    Ok(raw)
}
