//! What the report needs besides the samples, captured at record time: processes and their
//! mappings at start, the vdso image and build-ids. kallsyms and the JIT perf maps are read by
//! hood-procfs (`hood_procfs::host`, which reads them for a perf.data file's report too) and
//! the kernel's build-id by hood-symbols; the recorder imports them from there.

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

/// The kernel's text symbols in a `kallsyms` text, for finding code by name: each symbol's
/// address, type and name, and where each ends (at the next symbol). Module symbols (a line
/// ending in `[module]`) and hidden addresses (0, for a reader without the right) are left
/// out.
struct KernelText<'a> {
    symbols: Vec<(u64, &'a str, &'a str)>,
    /// Every symbol's address, sorted.
    starts: Vec<u64>,
}

impl<'a> KernelText<'a> {
    fn parse(kallsyms: &'a str) -> KernelText<'a> {
        let mut symbols = Vec::new();
        for line in kallsyms.lines() {
            let mut f = line.split_ascii_whitespace();
            let (Some(a), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            match u64::from_str_radix(a, 16) {
                Ok(addr) if addr != 0 && f.next().is_none() => symbols.push((addr, kind, name)),
                _ => continue,
            }
        }
        let mut starts: Vec<u64> = symbols.iter().map(|&(a, ..)| a).collect();
        starts.sort_unstable();
        starts.dedup();
        KernelText { symbols, starts }
    }

    /// The address of the text symbol `name`.
    fn find(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|&&(_, kind, n)| n == name && matches!(kind, "t" | "T"))
            .map(|&(a, ..)| a)
    }

    /// Where the symbol at `addr` ends: the next symbol's address.
    fn end_of(&self, addr: u64) -> Option<u64> {
        let i = self.starts.partition_point(|&a| a <= addr);
        self.starts.get(i).copied()
    }
}

/// The kernel's entry code of system calls and page faults in `kallsyms`: the address ranges
/// of `entry_SYSCALL_64` (up to the next symbol after `entry_SYSCALL_64_after_hwframe`),
/// `do_syscall_64`, `asm_exc_page_fault` and `exc_page_fault`. A blocked thread whose kernel
/// stack runs through them waits inside a system call or a page fault. Empty when the text
/// names no system call entry (then waits cannot be told apart).
pub fn wait_entry_ranges(kallsyms: &str) -> Vec<(u64, u64)> {
    let text = KernelText::parse(kallsyms);
    let mut out = Vec::new();
    if let Some(lo) = text.find("entry_SYSCALL_64") {
        let last = text.find("entry_SYSCALL_64_after_hwframe").unwrap_or(lo);
        if let Some(hi) = text.end_of(last.max(lo)) {
            out.push((lo, hi));
        }
    }
    if out.is_empty() {
        return out;
    }
    for name in ["do_syscall_64", "asm_exc_page_fault", "exc_page_fault"] {
        if let Some(r) = text.find(name).and_then(|lo| Some((lo, text.end_of(lo)?))) {
            out.push(r);
        }
    }
    out
}

/// The kernel code in `kallsyms` that tells the context of a task session's waker from its
/// kernel stack, as `(start, end, common_flags bits)` ranges (hood-unwind's
/// `Rewriter::set_wake_outputs`): a soft interrupt's handler loop (`handle_softirqs`, or
/// `__do_softirq` before 6.8), a hard interrupt's entry (`asm_common_interrupt`,
/// `common_interrupt` and the `sysvec_*` system vectors, the timer's included) and an NMI's
/// (`asm_exc_nmi`, `exc_nmi`, `default_do_nmi`); each ends at the next symbol. Empty unless
/// both a soft and a hard interrupt's code are found (names of x86-64 kernels; elsewhere a
/// session samples every wake-up with the tracepoint, whose flags the kernel sets).
pub fn interrupt_ranges(kallsyms: &str) -> Vec<(u64, u64, u8)> {
    use hood_raw::records::trace_flags::{HARDIRQ, NMI, SOFTIRQ};
    let text = KernelText::parse(kallsyms);
    let mut out: Vec<(u64, u64, u8)> = text
        .symbols
        .iter()
        .filter(|&&(_, kind, _)| matches!(kind, "t" | "T"))
        .filter_map(|&(lo, _, name)| {
            let flags = match name {
                "handle_softirqs" | "__do_softirq" => SOFTIRQ,
                "asm_exc_nmi" | "exc_nmi" | "default_do_nmi" => NMI,
                "asm_common_interrupt" | "common_interrupt" => HARDIRQ,
                n if n.starts_with("asm_sysvec_")
                    || n.starts_with("sysvec_")
                    || n.starts_with("__sysvec_") =>
                {
                    HARDIRQ
                }
                _ => return None,
            };
            Some((lo, text.end_of(lo)?, flags))
        })
        .collect();
    let has = |f: u8| out.iter().any(|&(.., g)| g == f);
    if !has(SOFTIRQ) || !has(HARDIRQ) {
        return Vec::new();
    }
    out.sort_unstable();
    out
}

/// The `[vdso]` ELF image of this process (the same for every process on this kernel).
pub fn vdso() -> Option<Vec<u8>> {
    process::own_vdso()
}

/// Host name and kernel release.
pub fn uname() -> (String, String) {
    (
        read_trim("/proc/sys/kernel/hostname"),
        read_trim("/proc/sys/kernel/osrelease"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
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
        std::thread::sleep(std::time::Duration::from_millis(300));
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
}

#[cfg(test)]
mod syscall_entry_tests {
    use super::*;

    #[test]
    fn interrupt_code_is_found_by_name_and_ends_at_the_next_symbol() {
        use hood_raw::records::trace_flags::{HARDIRQ, NMI, SOFTIRQ};
        let text = "\
ffffffff81000100 T handle_softirqs
ffffffff81000180 t run_ksoftirqd
ffffffff81000200 T asm_sysvec_apic_timer_interrupt
ffffffff81000220 T sysvec_apic_timer_interrupt
ffffffff81000300 T __sysvec_apic_timer_interrupt
ffffffff81000340 T asm_common_interrupt
ffffffff81000360 T asm_exc_nmi
ffffffff81000400 T do_syscall_64
ffffffff81000500 d sysvec_table
ffffffffc0000000 t sysvec_fake\t[somemodule]
";
        let r = interrupt_ranges(text);
        assert_eq!(
            r,
            vec![
                (0xffffffff81000100, 0xffffffff81000180, SOFTIRQ),
                (0xffffffff81000200, 0xffffffff81000220, HARDIRQ),
                (0xffffffff81000220, 0xffffffff81000300, HARDIRQ),
                (0xffffffff81000300, 0xffffffff81000340, HARDIRQ),
                (0xffffffff81000340, 0xffffffff81000360, HARDIRQ),
                (0xffffffff81000360, 0xffffffff81000400, NMI),
            ]
        );
        // Without a soft interrupt's handler loop (another architecture, or names this
        // code does not know): nothing, so the session samples wake-ups with the tracepoint.
        assert!(interrupt_ranges(&text.replace("handle_softirqs", "other")).is_empty());
        // Hidden addresses (kptr_restrict) name no code.
        let hidden: String = text
            .lines()
            .map(|l| format!("0000000000000000{}\n", &l[16..]))
            .collect();
        assert!(interrupt_ranges(&hidden).is_empty());
        // This machine's kernel has them (when its symbols are readable).
        if let Some(k) = hood_procfs::host::kallsyms()
            .filter(|k| k.lines().any(|l| !l.starts_with("0000000000000000")))
        {
            if k.contains(" handle_softirqs") || k.contains(" __do_softirq") {
                assert!(!interrupt_ranges(&k).is_empty());
            }
        }
    }

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
