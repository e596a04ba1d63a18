//! What the report needs besides the samples, captured at record time: processes and their
//! mappings at start, kallsyms, the vdso image, build-ids and JIT perf maps. A perf.data file
//! lacks some of them; [`import_perf_data`] takes them from this system when it can.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use hood_model::profile::{ProcSnapshot, ProcSnapshotChunk, MAX_SNAPSHOT_MAPS};
use hood_procfs::process::{self, MapsBudget};

/// Snapshot `pids` (or every process when `None`) from /proc, their maps read within
/// `budget` (the recording's). Vanished processes are skipped.
pub fn processes(pids: Option<&[i32]>, budget: &MapsBudget) -> ProcSnapshotChunk {
    match pids {
        Some(p) => processes_of(p.iter().map(|&p| p as u32).collect(), budget),
        None => processes_of(process::pids(), budget),
    }
}

/// The processes now running that `earlier` does not hold: those started between a snapshot
/// and the moment the events were enabled, whose fork and exec the events did not see.
pub fn processes_since(earlier: &ProcSnapshotChunk, budget: &MapsBudget) -> ProcSnapshotChunk {
    let known: BTreeSet<u32> = earlier.processes.iter().map(|p| p.pid).collect();
    processes_of(
        process::pids()
            .into_iter()
            .filter(|p| !known.contains(p))
            .collect(),
        budget,
    )
}

/// Bytes of executable-mapping text one snapshot keeps over all its processes: 16 processes
/// at [`MAX_SNAPSHOT_MAPS`] each, or about 100,000 processes of ordinary programs (some 350
/// bytes each on a test VM). Without it, a user's many processes, each under the per-process
/// cap, could still make root's recorder hold and store gigabytes.
pub const MAX_SNAPSHOT_TEXT: usize = 32 << 20;

fn processes_of(list: Vec<u32>, budget: &MapsBudget) -> ProcSnapshotChunk {
    processes_within(list, MAX_SNAPSHOT_MAPS, MAX_SNAPSHOT_TEXT, budget)
}

/// The snapshot of `list`, each process keeping at most `per_process` bytes of executable
/// mappings and all of them together at most `total`. Past `total`, the processes with the
/// most text are cut first, each down to an equal share (halved until the whole fits), so
/// one user's many large processes neither blow up the snapshot nor leave the others
/// unnamed. What is cut is counted in each process's `maps_dropped`.
fn processes_within(
    list: Vec<u32>,
    per_process: usize,
    total: usize,
    budget: &MapsBudget,
) -> ProcSnapshotChunk {
    let mut out = ProcSnapshotChunk::default();
    let mut share = per_process;
    let mut held = 0usize;
    for pid in list {
        let Some(process::ExecMaps {
            text: maps,
            dropped: maps_dropped,
            unread: maps_unread,
        }) = budget.exec_maps(pid, share)
        else {
            continue;
        };
        let comm = process::comm(pid).unwrap_or_default();
        // In tid order.
        let threads = process::tids(pid)
            .into_iter()
            .map(|tid| (tid, process::thread_comm(pid, tid).unwrap_or_default()))
            .collect();
        held += maps.len();
        out.processes.push(ProcSnapshot {
            pid,
            comm,
            maps,
            threads,
            maps_dropped,
            maps_unread,
        });
        while held > total {
            let largest = out
                .processes
                .iter()
                .map(|p| p.maps.len())
                .max()
                .unwrap_or(0);
            share = share.min(largest) / 2;
            held = out.processes.iter_mut().map(|p| cut_maps(p, share)).sum();
        }
    }
    let mut files = BTreeSet::new();
    for p in &out.processes {
        for m in p.maps.lines().filter_map(hood_raw::maps::parse_maps_line) {
            if m.is_exec() && m.path.starts_with('/') {
                files.insert(m.path.to_string());
            }
        }
    }
    out.build_ids = build_ids(files.iter().map(String::as_str));
    out
}

/// Cut `p`'s maps text to its whole lines within `limit` bytes, counting the lines cut in
/// `maps_dropped`; returns the length kept.
fn cut_maps(p: &mut ProcSnapshot, limit: usize) -> usize {
    if p.maps.len() > limit {
        let keep = p.maps.as_bytes()[..limit]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let cut = p.maps[keep..].lines().count() as u64;
        p.maps_dropped = p.maps_dropped.saturating_add(cut);
        p.maps.truncate(keep);
        p.maps.shrink_to_fit();
    }
    p.maps.len()
}

/// How many of the first processes whose mappings were cut are named one by one; the rest
/// are summed up in one line, so a user's many processes cannot flood root's terminal.
const NAMED_CUTS: usize = 3;

/// What the recorder says of the processes whose executable mappings did not all fit in the
/// snapshot: one line for each of the first few, one line summing up the rest. Those cut
/// short by the recording's budget of maps reads are left to `budget`'s own note.
pub(crate) fn dropped_maps_notes(snap: &ProcSnapshotChunk, budget: &MapsBudget) -> Vec<String> {
    let caps = format!(
        "root's recorder keeps at most {} MiB of them per process and {} MiB over all \
         processes, cutting the largest first",
        MAX_SNAPSHOT_MAPS >> 20,
        MAX_SNAPSHOT_TEXT >> 20
    );
    let unread = format!(
        "nor any past the first {} MiB of the file, which were not read",
        process::MAX_MAPS_READ >> 20
    );
    let cut: Vec<&ProcSnapshot> = snap
        .processes
        .iter()
        .filter(|p| p.maps_dropped > 0 || (p.maps_unread && !budget.short_of(p.pid)))
        .collect();
    let mut notes: Vec<String> = cut
        .iter()
        .take(NAMED_CUTS)
        .map(|p| {
            let more = if p.maps_unread && !budget.short_of(p.pid) {
                format!(", {unread}")
            } else {
                String::new()
            };
            format!(
                "pid {} ({}): {} executable mappings of /proc/{}/maps were not kept{more} \
                 ({caps}); samples in them stay unnamed",
                p.pid, p.comm, p.maps_dropped, p.pid
            )
        })
        .collect();
    if cut.len() > NAMED_CUTS {
        let rest = &cut[NAMED_CUTS..];
        let unread_n = rest
            .iter()
            .filter(|p| p.maps_unread && !budget.short_of(p.pid))
            .count();
        let more = if unread_n > 0 {
            format!(
                ", nor any past the first {} MiB of the maps of {unread_n} of them",
                process::MAX_MAPS_READ >> 20
            )
        } else {
            String::new()
        };
        notes.push(format!(
            "{} more processes: {} executable mappings not kept{more} ({caps}); samples in \
             them stay unnamed",
            rest.len(),
            rest.iter().map(|p| p.maps_dropped).sum::<u64>()
        ));
    }
    notes
}

/// Build-ids of the given ELF files; unreadable files are left out.
pub fn build_ids<'a>(
    paths: impl Iterator<Item = &'a str>,
) -> BTreeMap<String, hood_symbols::BuildId> {
    let mut out = BTreeMap::new();
    for p in paths {
        if let Ok(Some(id)) = hood_symbols::read_build_id(Path::new(p)) {
            out.insert(p.to_string(), id);
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

/// The kernel's entry code of system calls and page faults in `kallsyms`: the address ranges
/// of `entry_SYSCALL_64` (up to the next symbol after `entry_SYSCALL_64_after_hwframe`),
/// `do_syscall_64`, `asm_exc_page_fault` and `exc_page_fault`. A blocked thread whose kernel
/// stack runs through them waits inside a system call or a page fault. Empty when the text
/// names no system call entry (then waits cannot be told apart).
pub fn wait_entry_ranges(kallsyms: &str) -> Vec<(u64, u64)> {
    let mut starts: Vec<(u64, &str)> = Vec::new();
    let mut all: Vec<u64> = Vec::new();
    for line in kallsyms.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(a), Some(_), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(a, 16) else {
            continue;
        };
        all.push(addr);
        if matches!(
            name,
            "entry_SYSCALL_64"
                | "entry_SYSCALL_64_after_hwframe"
                | "do_syscall_64"
                | "asm_exc_page_fault"
                | "exc_page_fault"
        ) {
            starts.push((addr, name));
        }
    }
    all.sort_unstable();
    let end_after = |addr: u64| {
        let i = all.partition_point(|&a| a <= addr);
        all.get(i).copied()
    };
    let find = |n: &str| starts.iter().find(|(_, s)| *s == n).map(|&(a, _)| a);
    let mut out = Vec::new();
    if let Some(lo) = find("entry_SYSCALL_64") {
        let last = find("entry_SYSCALL_64_after_hwframe").unwrap_or(lo);
        if let Some(hi) = end_after(last.max(lo)) {
            out.push((lo, hi));
        }
    }
    if out.is_empty() {
        return out;
    }
    for name in ["do_syscall_64", "asm_exc_page_fault", "exc_page_fault"] {
        if let Some(hi) = find(name).and_then(|lo| Some((lo, end_after(lo)?))) {
            out.push(hi);
        }
    }
    out
}

/// The kernel's build-id from /sys/kernel/notes.
pub fn kernel_build_id() -> Option<hood_symbols::BuildId> {
    let notes = fs::read("/sys/kernel/notes").ok()?;
    hood_symbols::build_id_from_notes(&notes)
}

/// The `[vdso]` ELF image of this process (the same for every process on this kernel).
pub fn vdso() -> Option<Vec<u8>> {
    process::own_vdso()
}

/// The part of a JIT map kept in a recording. Maps are text a JIT appends to (a few MB for a
/// large Java or node process); a file any user can plant in /tmp may claim any size (sparse),
/// so only its beginning, whole lines, is read beyond this.
pub const MAX_PERF_MAP: u64 = 64 << 20;

/// The longest line of a JIT map kept: an address, a size and a name (C++ and Java names run
/// to a few KiB). A longer one is left out, and the zeros of a file's holes are never read.
const MAX_PERF_MAP_LINE: usize = 64 << 10;

/// The /tmp/perf-PID.map text of each pid that has one, and warnings about the maps that are
/// not read (or not whole). A map is read as perf reads it: a regular file, not a symbolic
/// link, owned by root or by the process's user (any user can write to /tmp), never blocking.
pub fn perf_maps(pids: &BTreeSet<u32>) -> (Vec<(u32, String)>, Vec<String>) {
    perf_maps_in(Path::new("/tmp"), pids, MAX_PERF_MAP, 0)
}

/// [`perf_maps`] in `dir`, keeping at most `max` bytes of each. The map of a process that is
/// gone must belong to root or to `gone_owner`.
pub(crate) fn perf_maps_in(
    dir: &Path,
    pids: &BTreeSet<u32>,
    max: u64,
    gone_owner: u32,
) -> (Vec<(u32, String)>, Vec<String>) {
    use hood_format::untrusted::{read_lines, Policy};
    let mut maps = Vec::new();
    let mut warnings = Vec::new();
    for &pid in pids {
        let path = dir.join(format!("perf-{pid}.map"));
        // The process's user owns /proc/PID; a process that is gone has none, and then only
        // root's map or `gone_owner`'s is read.
        let uid = process::uid(pid).unwrap_or(gone_owner);
        // Read a line at a time, the holes of a sparse file skipped: a map claiming
        // gigabytes costs what its lines hold, at most `max`.
        match read_lines(&path, Policy::owned_by_root_or(uid), max, MAX_PERF_MAP_LINE) {
            Ok(l) => {
                if l.cut {
                    warnings.push(format!(
                        "{}: larger than {} MiB; only its first {} MiB are kept, so JIT \
                         functions named further on stay unnamed",
                        path.display(),
                        max >> 20,
                        max >> 20
                    ));
                }
                if l.dropped > 0 {
                    warnings.push(format!(
                        "{}: {} lines left out (longer than {} KiB, or in a stretch of the \
                         file that holds no data)",
                        path.display(),
                        l.dropped,
                        MAX_PERF_MAP_LINE >> 10
                    ));
                }
                maps.push((pid, String::from_utf8_lossy(&l.text).into_owned()));
            }
            Err(hood_format::FormatError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => warnings.push(format!("JIT map not read: {e}")),
        }
    }
    (maps, warnings)
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
    // JIT maps, read at report time as `perf report` reads them: /tmp/perf-PID.map of each
    // sampled process, through the same checks as a recording's (not a link, not blocking,
    // owned by root or the process's user). The processes of a perf.data file have usually
    // exited; then the map may also belong to the owner of the perf.data file, who recorded
    // them (perf report trusts maps of the user running it).
    let pids: BTreeSet<u32> = raw
        .decoded
        .events
        .iter()
        .filter_map(|t| match t.event {
            hood_raw::records::Event::Sample { pid, .. } if pid != 0 && pid != u32::MAX => {
                Some(pid)
            }
            _ => None,
        })
        .collect();
    let owner = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).map_or(0, |m| m.uid())
    };
    let (maps, warnings) = perf_maps_in(Path::new("/tmp"), &pids, MAX_PERF_MAP, owner);
    raw.perf_maps.extend(maps);
    raw.warnings.extend(warnings);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::{Duration, Instant};

    #[test]
    fn planted_perf_maps_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        // This process's own map (root's or its user's file) is kept whole.
        std::fs::write(dir.path().join(format!("perf-{me}.map")), "1000 10 jit_a\n").unwrap();
        // A FIFO, a link and a directory at the paths of other pids.
        let fifo = dir.path().join("perf-1.map");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o666),
            0,
        )
        .unwrap();
        symlink("/etc/passwd", dir.path().join("perf-2.map")).unwrap();
        std::fs::create_dir(dir.path().join("perf-3.map")).unwrap();
        let t = Instant::now();
        let (maps, warnings) =
            perf_maps_in(dir.path(), &BTreeSet::from([1, 2, 3, me, 4]), 1 << 20, 0);
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(maps, vec![(me, "1000 10 jit_a\n".to_string())]);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("perf-1.map is a FIFO"), "{warnings:?}");
        assert!(
            warnings[1].contains("perf-2.map is a symbolic link"),
            "{warnings:?}"
        );
        assert!(
            warnings[2].contains("perf-3.map is a directory"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_huge_perf_map_is_cut_at_a_whole_line_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let path = dir.path().join(format!("perf-{me}.map"));
        let line = "7f0000001000 10 a_jit_function_name\n";
        std::fs::write(&path, line.repeat(100)).unwrap();
        // Sparse beyond the lines: claims 8 GiB.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        let (maps, warnings) = perf_maps_in(dir.path(), &BTreeSet::from([me]), 1000, 0);
        let kept = &maps[0].1;
        assert_eq!(kept.len(), 1000 / line.len() * line.len());
        assert!(kept.ends_with('\n'));
        assert!(
            warnings[0].contains(&path.display().to_string())
                && warnings[0].contains("larger than"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_sparse_perf_map_costs_only_its_lines() {
        // Attack 18/19 of issue 29: a map claiming 10 GiB, its lines at the start and the end.
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let path = dir.path().join(format!("perf-{me}.map"));
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(10 << 30).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"1000 10 first\n", 0).unwrap();
        f.write_all_at(b"\n2000 10 last\n", 5 << 30).unwrap();
        let (maps, warnings) = perf_maps_in(dir.path(), &BTreeSet::from([me]), MAX_PERF_MAP, 0);
        let kept = &maps[0].1;
        assert!(kept.starts_with("1000 10 first\n"), "{:?}", &kept[..20]);
        assert!(kept.len() <= MAX_PERF_MAP as usize);
        // Where the file system knows holes, the lines past it are kept too and nothing is
        // cut; elsewhere the zeros are read up to the bound as overlong lines, left out.
        assert!(
            kept.ends_with("\n2000 10 last\n")
                || warnings.iter().any(|w| w.contains("larger than")),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_snapshot_past_its_total_cuts_the_largest_processes_and_counts_every_line_cut() {
        // Sleeping processes (whose mappings stay as they are) of two programs.
        let mut kids: Vec<std::process::Child> = (0..6)
            .map(|i| {
                let mut c = std::process::Command::new("sh");
                c.args([
                    "-c",
                    if i % 2 == 0 {
                        "exec sleep 60"
                    } else {
                        "sleep 60; :"
                    },
                ]);
                c.spawn().unwrap()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let pids: Vec<u32> = kids.iter().map(|k| k.id()).collect();
        let budget = MapsBudget::default();
        let whole = processes_within(pids.clone(), MAX_SNAPSHOT_MAPS, usize::MAX, &budget);
        let whole_len: usize = whole.processes.iter().map(|p| p.maps.len()).sum();
        assert_eq!(whole.processes.len(), pids.len());
        assert!(whole.processes.iter().all(|p| p.maps_dropped == 0));
        let total = whole_len / 2;
        let cut = processes_within(pids, MAX_SNAPSHOT_MAPS, total, &budget);
        for k in &mut kids {
            let _ = k.kill();
            let _ = k.wait();
        }
        assert_eq!(cut.processes.len(), whole.processes.len());
        let kept_len: usize = cut.processes.iter().map(|p| p.maps.len()).sum();
        assert!(
            kept_len <= total,
            "kept {kept_len} bytes over a total of {total}"
        );
        let mut largest_kept = 0;
        let mut smallest_cut = usize::MAX;
        for (c, w) in cut.processes.iter().zip(&whole.processes) {
            assert_eq!(c.pid, w.pid);
            // Whole lines, the first ones, and every line left out counted.
            assert!(w.maps.starts_with(&c.maps), "pid {}: {:?}", c.pid, c.maps);
            assert!(c.maps.is_empty() || c.maps.ends_with('\n'));
            assert_eq!(
                c.maps.lines().count() as u64 + c.maps_dropped,
                w.maps.lines().count() as u64,
                "pid {}",
                c.pid
            );
            largest_kept = largest_kept.max(c.maps.len());
            if c.maps_dropped > 0 {
                smallest_cut = smallest_cut.min(w.maps.len());
            }
        }
        // Largest first: no process keeps more than any process that was cut had.
        assert!(smallest_cut < usize::MAX, "nothing was cut");
        assert!(
            largest_kept <= smallest_cut,
            "{largest_kept} kept, {smallest_cut} cut"
        );
        // The build-ids are of the files the kept lines name.
        assert!(cut.build_ids.len() <= whole.build_ids.len());
        // Said: the first few one by one, the rest summed up in one line.
        let notes = dropped_maps_notes(&cut, &budget);
        let cut_procs: Vec<&ProcSnapshot> = cut
            .processes
            .iter()
            .filter(|p| p.maps_dropped > 0)
            .collect();
        assert_eq!(
            notes.len(),
            cut_procs.len().min(NAMED_CUTS + 1),
            "{notes:?}"
        );
        for (n, p) in notes.iter().take(NAMED_CUTS).zip(&cut_procs) {
            assert!(
                n.starts_with(&format!("pid {} ", p.pid))
                    && n.contains(&format!("{} executable mappings", p.maps_dropped))
                    && n.contains("32 MiB over all processes"),
                "{n}"
            );
        }
        if cut_procs.len() > NAMED_CUTS {
            let rest = &cut_procs[NAMED_CUTS..];
            let sum: u64 = rest.iter().map(|p| p.maps_dropped).sum();
            assert!(
                notes[NAMED_CUTS]
                    .starts_with(&format!("{} more processes: {sum} executable", rest.len())),
                "{notes:?}"
            );
        }
    }

    #[test]
    fn another_users_perf_map_is_refused() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIPPED (needs root to chown): another_users_perf_map_is_refused");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let path = dir.path().join(format!("perf-{me}.map"));
        std::fs::write(&path, "1000 10 evil\n").unwrap();
        rustix::fs::chown(&path, Some(rustix::fs::Uid::from_raw(4242)), None).unwrap();
        // This process runs as root: only root's map is its.
        let (maps, warnings) = perf_maps_in(dir.path(), &BTreeSet::from([me]), 1 << 20, 0);
        assert!(maps.is_empty());
        assert!(warnings[0].contains("uid 4242"), "{warnings:?}");
    }
}

#[cfg(test)]
mod syscall_entry_tests {
    use super::*;

    #[test]
    fn the_entry_code_ends_at_the_next_symbol() {
        let text = "ffffffff81000040 T asm_sysvec_x\n\
                    ffffffff81000080 T entry_SYSCALL_64\n\
                    ffffffff810000ac T entry_SYSCALL_64_safe_stack\n\
                    ffffffff810000ba T entry_SYSCALL_64_after_hwframe\n\
                    ffffffff81000200 T entry_SYSRETQ_unsafe_stack\n\
                    ffffffff821ecbe0 T do_syscall_64\n\
                    ffffffff821ecd00 T __pfx_something\n";
        assert_eq!(
            wait_entry_ranges(text),
            vec![
                (0xffffffff81000080, 0xffffffff81000200),
                (0xffffffff821ecbe0, 0xffffffff821ecd00)
            ]
        );
        assert!(wait_entry_ranges("ffffffff81000040 T asm_sysvec_x\n").is_empty());
    }
}
