//! The segment directory and its segments: reading hood-rt segments into `ProcessCalls`
//! (without names), the private directories of running recorders and the stale ones killed
//! recorders leave. Nothing in a segment is trusted: bad magic, version or sizes skip it with
//! a warning, and a file planted by another user (a link, a FIFO, a sparse file claiming
//! gigabytes, a file of someone other than the process it names) is skipped before it can hang
//! hood, make it allocate, or make it write (see [`ShmFile`]).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use hood_abi::{HeaderView, ThreadView, NO_PARENT, THREAD_EXITED, THREAD_HEADER_SIZE};
use hood_proc::shm::ShmFile;
use hood_tracemodel::calls::{Limits, PathEntry, ProcessCalls, ThreadCalls};

use crate::HooksError;

/// One decoded segment.
pub struct Segment {
    /// File path.
    pub path: PathBuf,
    /// Header.
    pub header: HeaderView,
    /// Maps text copied by the runtime.
    pub maps: String,
    /// Thread slots.
    pub threads: Vec<ThreadView>,
    /// The checked file (`hood calls reset` writes through it).
    pub file: ShmFile,
}

/// Directory segments live in: `$HOOD_SHM_DIR` or /dev/shm.
pub fn shm_dir() -> PathBuf {
    std::env::var_os("HOOD_SHM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(hood_abi::DEFAULT_SHM_DIR))
}

/// [`scan`] of each of `dirs`, sorted as one.
pub fn scan_dirs(
    dirs: &[PathBuf],
    pid: Option<u32>,
    write: bool,
    warnings: &mut Vec<String>,
) -> Vec<Segment> {
    let mut out: Vec<Segment> = dirs
        .iter()
        .flat_map(|d| scan(d, pid, write, warnings))
        .collect();
    out.sort_by_key(|s| (s.header.start_mono_ns, s.header.pid));
    out
}

/// Where `hood calls get/reset` look: the segment directory `base`, the private directories
/// of the `hood calls run`s in it (each keeps its command's segments there), and, for one
/// pid, the directory its environment names (`HOOD_SHM_DIR`, when readable).
pub fn search_dirs(base: &Path, pid: Option<u32>) -> Vec<PathBuf> {
    let mut dirs = vec![base.to_path_buf()];
    if let Ok(rd) = std::fs::read_dir(base) {
        let mut runs: Vec<PathBuf> = rd
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(PRIVATE_DIRS[0])
                    && e.file_type().is_ok_and(|t| t.is_dir())
                    // Another user's (mode 0700): left out here, explained by why_not_found.
                    && std::fs::read_dir(e.path()).is_ok()
            })
            .map(|e| e.path())
            .collect();
        runs.sort();
        dirs.extend(runs);
    }
    if let Some(d) = pid.and_then(|p| hood_procfs::process::environ_var(p, "HOOD_SHM_DIR")) {
        // Compared resolved: `/dev/shm/` and `/dev/shm` must not be scanned twice.
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        };
        let d = PathBuf::from(d);
        if d.is_dir() && !dirs.iter().any(|x| same(x, &d)) {
            dirs.push(d);
        }
    }
    dirs
}

/// Why no call-path segment of `pid` was found in `base` or the directories
/// [`search_dirs`] adds: what the process is, where its segment would be, and what to do.
pub fn why_not_found(pid: u32, base: &Path) -> String {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if !proc_dir.exists() {
        return format!(
            "no process with pid {pid}, and no segment of it in {} or in the directories of \
            running `hood calls run`s: check the pid (a process started by `hood calls run` is \
            collected by it when it ends)",
            base.display()
        );
    }
    let comm = hood_procfs::process::comm(pid).unwrap_or_default();
    let who = format!("pid {pid} ({comm})");
    let mut runs_rt = false;
    if let Err(e) = hood_procfs::process::for_each_maps_line(pid, |line| {
        runs_rt = line.contains("libhood_rt");
        !runs_rt
    }) {
        return format!(
            "{who} has no segment in {}, and /proc/{pid}/maps cannot be read ({e}) to tell \
            whether it runs hood-rt: run hood as the process's user or as root",
            base.display()
        );
    }
    let dir = hood_procfs::process::environ_var(pid, "HOOD_SHM_DIR");
    if hood_procfs::process::environ_var(pid, "HOOD_MODE").as_deref() == Some("trace") {
        return format!(
            "{who} runs hood-rt in trace mode (started by `hood trace record`): its segment \
            holds trace events, not call-path tables; `hood trace record` writes them to its \
            file when the program ends"
        );
    }
    if !runs_rt && dir.is_none() {
        return format!(
            "{who} does not run hood-rt (libhood_rt.so is not mapped and no HOOD_SHM_DIR is in \
            its environment): start it with `hood calls run -- PROG` or \
            LD_PRELOAD=/path/to/libhood_rt.so, built with -finstrument-functions"
        );
    }
    if let Some(run_dir) = dir
        .as_deref()
        .map(Path::new)
        .filter(|d| d.parent() == Some(base))
        .filter(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(PRIVATE_DIRS[0]))
        })
    {
        if let Err(e) = std::fs::read_dir(run_dir) {
            let owner = std::fs::metadata(run_dir)
                .map(|m| format!("uid {}", m.uid()))
                .unwrap_or_else(|_| "another user".into());
            return format!(
                "{who} was started by `hood calls run`; its segment is in {}, which belongs to \
                {owner} and cannot be read ({e}): run `hood calls get/reset` as that user or \
                as root",
                run_dir.display()
            );
        }
    }
    match dir {
        Some(d) => format!(
            "{who} runs hood-rt with HOOD_SHM_DIR={d}, but no segment hood-rt-{pid}-* of call \
            paths is there: HOOD_DISABLE=1 is set, or the runtime could not create it (it says \
            why on the program's stderr)"
        ),
        None => format!(
            "{who} runs hood-rt, but no segment hood-rt-{pid}-* of call paths is in {} (its \
            environment cannot be read to find another HOOD_SHM_DIR: run hood as the \
            process's user or root, or set HOOD_SHM_DIR as the program has it)",
            base.display()
        ),
    }
}

/// Read every segment in `dir` (of `pid` only, if given), opened for writing too with `write`.
/// Unreadable, invalid or untrusted segments are skipped and described in `warnings`.
pub fn scan(dir: &Path, pid: Option<u32>, write: bool, warnings: &mut Vec<String>) -> Vec<Segment> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        warnings.push(format!("cannot read segment directory {}", dir.display()));
        return Vec::new();
    };
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let path = ent.path();
        if !ent
            .file_name()
            .to_string_lossy()
            .starts_with(hood_abi::SEGMENT_PREFIX)
        {
            continue;
        }
        if pid.is_some() && name_pid(&path) != pid {
            continue;
        }
        match read_segment(&path, write) {
            Ok(s) => out.push(s),
            Err(e) => warnings.push(format!("skipping segment {}: {e}", path.display())),
        }
    }
    out.sort_by_key(|s| (s.header.start_mono_ns, s.header.pid));
    out
}

/// Whether a segment directory gained entries since the last look (inotify), so that a watcher
/// lists it only then: a run that starts thousands of processes keeps their finished segments
/// in the directory, and listing it at every round of the recorder and the pre-faulter cost
/// time in proportion to all of them, for a new entry now and then. Where the watch cannot be
/// set up, every look lists the directory, as before.
pub(crate) struct DirWatch {
    fd: Option<std::os::fd::OwnedFd>,
    /// List at the next look whatever the watch says: at first, and after a look that left a
    /// file to look at again ([`DirWatch::again`]).
    pending: bool,
}

impl DirWatch {
    /// Watch `dir` for entries created in it or moved into it (the directory itself is not
    /// followed if it is a link).
    pub(crate) fn new(dir: &Path) -> DirWatch {
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)
            .ok()
            .filter(|fd| {
                let flags = WatchFlags::CREATE
                    | WatchFlags::MOVED_TO
                    | WatchFlags::ONLYDIR
                    | WatchFlags::DONT_FOLLOW;
                inotify::add_watch(fd, dir, flags).is_ok()
            });
        DirWatch { fd, pending: true }
    }

    /// True when the directory should be listed now: something was added since the last look
    /// (or the kernel's event queue overflowed), a file was left for another look, this is
    /// the first look, or there is no watch.
    pub(crate) fn changed(&mut self) -> bool {
        let mut any = std::mem::take(&mut self.pending);
        let Some(fd) = &self.fd else {
            return true;
        };
        // The events themselves do not matter, only that there were some.
        let mut buf = [0u8; 4096];
        loop {
            match rustix::io::read(fd, &mut buf) {
                Ok(0) => break,
                Ok(_) => any = true,
                Err(rustix::io::Errno::INTR) => continue,
                Err(rustix::io::Errno::AGAIN) => break,
                Err(_) => {
                    any = true;
                    break;
                }
            }
        }
        any
    }

    /// The last look left a file to look at again (its header was not written yet): list
    /// the directory at the next look too.
    pub(crate) fn again(&mut self) {
        self.pending = true;
    }
}

/// The segment files in `dir` whose names `known` does not hold yet (a process that started
/// since the last look), as (file name, path); nothing when `dir` cannot be read. Watchers key
/// what they hold by file name: a look at a directory of many finished segments hashes a few
/// bytes per entry and builds no path for the ones it knows.
pub(crate) fn new_segments(dir: &Path, known: impl Fn(&OsStr) -> bool) -> Vec<(OsString, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name();
            (name
                .as_bytes()
                .starts_with(hood_abi::SEGMENT_PREFIX.as_bytes())
                && !known(&name))
            .then(|| (name, e.path()))
        })
        .collect()
}

/// Where a segment file name says it comes from: `hood-rt-PID-START`.
pub fn name_pid(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix(hood_abi::SEGMENT_PREFIX)?;
    rest.split('-').next()?.parse().ok()
}

/// An opened segment of the expected mode: its file, header and maps text. `other` names the
/// command that reads segments of the other mode, for the message.
pub(crate) fn open_segment(
    path: &Path,
    mode: u32,
    other: &str,
    write: bool,
) -> Result<(ShmFile, HeaderView, String), HooksError> {
    let mut f = ShmFile::open(path, write, name_pid(path))?;
    let len = f.size()?;
    let head = f
        .read_fixed(0, hood_abi::HEADER_AREA_SIZE, "the header")
        .map_err(|_| HooksError::Segment(format!("shorter than a header ({len} bytes)")))?;
    let header = HeaderView::parse(&head).map_err(|e| HooksError::Segment(e.to_string()))?;
    if header.mode != mode {
        return Err(HooksError::Segment(format!(
            "a segment of the other mode (read by {other})"
        )));
    }
    if let Some(p) = name_pid(path).filter(|&p| p != header.pid) {
        return Err(HooksError::Segment(format!(
            "named for pid {p} but its header says pid {}: remove it",
            header.pid
        )));
    }
    if len < header.total_size {
        return Err(HooksError::Segment(format!(
            "truncated: {len} bytes, header says {}",
            header.total_size
        )));
    }
    let maps = f.read(header.maps_offset, header.maps_len, "the maps text")?;
    Ok((f, header, String::from_utf8_lossy(&maps).into_owned()))
}

/// Read every used thread slot: `parts` names the byte ranges of a slot (offset from the slot
/// start, length) to copy from its thread header, `parse` decodes them (`Some(tid)` keeps it;
/// unused slots have tid 0).
pub(crate) fn read_slots<T, E: std::fmt::Display>(
    f: &mut ShmFile,
    header: &HeaderView,
    parts: impl Fn(&[u8]) -> Vec<(u64, u64)>,
    parse: impl Fn(&HeaderView, &[Vec<u8>]) -> Result<T, E>,
    tid: impl Fn(&T) -> u32,
) -> Result<Vec<T>, HooksError> {
    let mut threads = Vec::new();
    for i in 0..header.threads_used {
        let off = header.slot_offset(i);
        let what = format!("thread slot {i}");
        let th = f.read(off, THREAD_HEADER_SIZE as u64, &what)?;
        let mut bufs = vec![th];
        for (o, len) in parts(&bufs[0]).into_iter().skip(1) {
            bufs.push(f.read(off + o, len, &what)?);
        }
        match parse(header, &bufs) {
            Ok(t) if tid(&t) != 0 => threads.push(t),
            Ok(_) => {}
            Err(e) => return Err(HooksError::Segment(format!("thread slot {i}: {e}"))),
        }
    }
    Ok(threads)
}

fn read_segment(path: &Path, write: bool) -> Result<Segment, HooksError> {
    let (mut f, header, maps) = open_segment(path, hood_abi::MODE_CALLS, "hood trace", write)?;
    let threads = read_slots(
        &mut f,
        &header,
        |th| hood_abi::parse::slot_parts(&header, th).to_vec(),
        |h, b| ThreadView::parse_parts(h, &b[0], &b[1], &b[2]),
        |t| t.tid,
    )?;
    Ok(Segment {
        path: path.to_owned(),
        header,
        maps,
        threads,
        file: f,
    })
}

/// Prefixes of the private segment directories `hood calls run` and `hood trace record` create
/// in the segment directory, named `PREFIX-PID-START` (the recorder's pid and its start time,
/// /proc/PID/stat field 22).
const PRIVATE_DIRS: [&str; 2] = ["hood-calls-run-", "hood-trace-"];

/// Create this recorder's private segment directory (mode 0700) in `base`; `kind` is
/// `calls-run` or `trace`. Stale ones left by killed recorders are removed first, each said to
/// `note` (see [`clean_stale`]).
pub fn private_dir(
    base: &Path,
    kind: &str,
    note: &mut dyn FnMut(String),
) -> Result<PathBuf, HooksError> {
    use std::os::unix::fs::DirBuilderExt;
    clean_stale(base, note);
    let pid = std::process::id();
    let start = hood_procfs::state_and_start(pid as i32).map_or(0, |(_, t)| t);
    let dir = base.join(format!("hood-{kind}-{pid}-{start}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|source| HooksError::Io {
            what: format!("creating the segment directory {}", dir.display()),
            source,
        })?;
    Ok(dir)
}

/// Whether the private directory `name` may still be in use: its recorder runs (same pid and
/// start time, or a process named hood under that pid, for directories named by older hoods
/// with a clock value), or a process whose segment is in it runs (an orphaned traced program
/// still writing).
fn private_dir_in_use(dir: &Path, name: &str) -> bool {
    let Some(rest) = PRIVATE_DIRS.iter().find_map(|p| name.strip_prefix(p)) else {
        return true;
    };
    let mut it = rest.splitn(2, '-');
    let (Some(Ok(pid)), Some(Ok(start))) = (
        it.next().map(str::parse::<i32>),
        it.next().map(str::parse::<u64>),
    ) else {
        return true;
    };
    if let Some((state, t)) = hood_procfs::state_and_start(pid) {
        let comm = u32::try_from(pid)
            .ok()
            .and_then(hood_procfs::process::comm)
            .unwrap_or_default();
        if !matches!(state, 'Z' | 'X') && (t == start || comm.starts_with("hood")) {
            return true;
        }
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return true;
    };
    rd.flatten()
        .any(|e| name_pid(&e.path()).is_some_and(pid_alive))
}

/// Remove the private segment directories in `base` that killed recorders left behind (their
/// recorder and every process with a segment in them are gone), saying so to `note` (one line
/// each: `removed DIR, …` or `warning: cannot remove DIR, …`; the caller prints it, and a
/// closed standard error must not stop it). Only real directories of the caller are
/// considered; links and other users' directories are left alone.
pub fn clean_stale(base: &Path, note: &mut dyn FnMut(String)) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        if !PRIVATE_DIRS.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let path = ent.path();
        let Ok(md) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !md.is_dir() || md.uid() != me || private_dir_in_use(&path, &name) {
            continue;
        }
        let held: u64 = std::fs::read_dir(&path)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.blocks() * 512)
                    .sum()
            })
            .unwrap_or(0);
        note(match std::fs::remove_dir_all(&path) {
            Ok(()) => format!(
                "removed {}, left behind by a killed recorder (its process is gone; {:.1} MB freed)",
                path.display(),
                held as f64 / 1e6
            ),
            Err(e) => format!(
                "warning: cannot remove {}, left behind by a killed recorder: {e}",
                path.display()
            ),
        });
    }
}

/// Whether `pid` is a live (not zombie or dead) process.
pub fn pid_alive(pid: u32) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(hood_procfs::state_and_start)
        .is_some_and(|(state, _)| !matches!(state, 'Z' | 'X'))
}

/// Whether the process of each segment is still live: (segment index → state, end ticks).
/// A pid with several segments was re-exec'd: all but the newest are finished.
pub fn to_processes(segs: &[Segment]) -> Vec<(ProcessCalls, bool)> {
    let mut newest: HashMap<u32, u64> = HashMap::new();
    for s in segs {
        let e = newest.entry(s.header.pid).or_insert(0);
        *e = (*e).max(s.header.start_mono_ns);
    }
    let now_mono = hood_proc::clock::monotonic_ns();
    segs.iter()
        .map(|s| {
            let h = &s.header;
            let last = s
                .threads
                .iter()
                .map(|t| t.last_ticks.max(t.exit_ticks))
                .max()
                .unwrap_or(h.start_ticks);
            let (state, end, live) = if h.state == hood_abi::STATE_EXITED {
                (hood_tracemodel::ProcessState::Exited, h.exit_ticks, false)
            } else if newest.get(&h.pid) != Some(&h.start_mono_ns) {
                (hood_tracemodel::ProcessState::Exec, last, false)
            } else if pid_alive(h.pid) {
                let dt = now_mono.saturating_sub(h.start_mono_ns) as u128;
                (
                    hood_tracemodel::ProcessState::Running,
                    h.start_ticks + (dt * h.ticks_per_sec as u128 / 1_000_000_000) as u64,
                    true,
                )
            } else {
                (hood_tracemodel::ProcessState::Gone, last, false)
            };
            (decode(s, state, end), live)
        })
        .collect()
}

fn decode(s: &Segment, state: hood_tracemodel::ProcessState, end: u64) -> ProcessCalls {
    decode_threads(&s.header, &s.threads, state, end)
}

/// The tables of one exited thread of the process whose header is `h` (a slot a recorder
/// takes before giving it to a new thread).
pub fn exited_thread_calls(h: &HeaderView, t: &ThreadView) -> Option<ThreadCalls> {
    decode_threads(
        h,
        std::slice::from_ref(t),
        hood_tracemodel::ProcessState::Running,
        t.exit_ticks,
    )
    .threads
    .pop()
}

fn decode_threads(
    h: &HeaderView,
    slots: &[ThreadView],
    state: hood_tracemodel::ProcessState,
    end: u64,
) -> ProcessCalls {
    let mut notes = Vec::new();
    let mut threads = Vec::new();
    let mut begin = u64::MAX;
    for t in slots {
        let t_end = if t.state == THREAD_EXITED && t.exit_ticks != 0 {
            t.exit_ticks
        } else {
            end
        };
        begin = begin.min(t.reset_ticks);
        let mut paths: Vec<PathEntry> = t
            .nodes
            .iter()
            .map(|n| PathEntry {
                parent: (n.parent != NO_PARENT).then_some(n.parent),
                func: n.func,
                calls: n.calls,
                own_ticks: n.own_ticks,
                running_ticks: 0,
                running: false,
            })
            .collect();
        for (i, f) in t.frames.iter().enumerate() {
            let next = match t.frames.get(i + 1) {
                Some(n) => n.entry_ticks.saturating_sub(h.comp_child_ticks),
                None => t_end,
            };
            let so_far = next
                .saturating_sub(f.entry_ticks)
                .saturating_sub(f.deeper_ticks);
            if let Some(p) = paths.get_mut(f.node as usize) {
                p.running_ticks += so_far as i64;
                p.running = true;
            }
        }
        let reset_pending = t.seen_gen != h.reset_gen;
        if reset_pending {
            notes.push(format!("thread {} has not honoured the reset yet (no function entry or exit since); its numbers predate the reset", t.tid));
        }
        threads.push(ThreadCalls {
            tid: t.tid,
            exited: t.state == THREAD_EXITED,
            mismatched: t.mismatched,
            lost_calls: t.lost_calls,
            folded_calls: t.folded_calls,
            folded_paths: t.folded_paths,
            flags: t.flags,
            reset_pending,
            paths,
        });
    }
    if state == hood_tracemodel::ProcessState::Gone {
        notes.push("process died without running its exit handlers (killed?); running calls are timed to its last hook".into());
    }
    let begin = if begin == u64::MAX {
        h.start_ticks
    } else {
        begin
    };
    let span_ns =
        (end.saturating_sub(begin) as u128 * 1_000_000_000 / h.ticks_per_sec as u128) as u64;
    ProcessCalls {
        pid: h.pid,
        ppid: h.ppid,
        exe: h.exe_path.clone(),
        ticks_per_sec: h.ticks_per_sec,
        clock: hood_tracemodel::Clock::of_segment(h.clock),
        compensate: h.compensate,
        comp_self_ticks: h.comp_self_ticks,
        comp_child_ticks: h.comp_child_ticks,
        flags: h.flags | slots.iter().fold(0, |a, t| a | t.flags),
        limits: Limits {
            max_paths: h.max_paths,
            max_depth: h.max_depth,
            max_path_len: h.max_path_len,
            max_threads: h.max_threads,
        },
        state,
        span_ns,
        threads,
        symbols: Default::default(),
        notes,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #[test]
    fn a_directory_is_listed_again_only_when_it_gained_entries() {
        let d = tempfile::tempdir().unwrap();
        let mut w = super::DirWatch::new(d.path());
        assert!(w.changed(), "the first look lists the directory");
        assert!(!w.changed(), "nothing happened since");
        std::fs::write(d.path().join("hood-rt-1-1"), b"x").unwrap();
        assert!(w.changed(), "a file was created");
        assert!(!w.changed());
        std::fs::write(d.path().join("hood-rt-1-1"), b"rewritten").unwrap();
        assert!(!w.changed(), "a write to a known file is not a new entry");
        let other = tempfile::tempdir_in(d.path().parent().unwrap()).unwrap();
        std::fs::write(other.path().join("f"), b"x").unwrap();
        std::fs::rename(other.path().join("f"), d.path().join("hood-rt-2-2")).unwrap();
        assert!(w.changed(), "a file was moved in");
        w.again();
        assert!(w.changed(), "a file was left for another look");
        assert!(!w.changed());
        // No watch (a directory that is not there): every look lists.
        let mut none = super::DirWatch::new(&d.path().join("missing"));
        assert!(none.changed() && none.changed());
    }

    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    /// A FIFO at `path` (nobody writes it: opening it for reading would block).
    pub(crate) fn fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
    }

    #[test]
    fn segment_names_say_their_pid() {
        assert_eq!(
            super::name_pid(Path::new("/dev/shm/hood-rt-42-1234")),
            Some(42)
        );
        assert_eq!(super::name_pid(Path::new("/dev/shm/hood-rt-x-1")), None);
        assert_eq!(super::name_pid(Path::new("/dev/shm/other-42-1")), None);
    }

    #[test]
    fn planted_files_are_skipped_with_a_warning_naming_them() {
        let d = tempfile::tempdir().unwrap();
        fifo(&d.path().join("hood-rt-4242-1"));
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("hood-rt-4243-1")).unwrap();
        std::fs::write(d.path().join("hood-rt-4244-1"), b"short").unwrap();
        std::fs::write(d.path().join("unrelated"), b"x").unwrap();
        let mut warnings = Vec::new();
        let segs = super::scan(d.path(), None, false, &mut warnings);
        assert!(segs.is_empty());
        warnings.sort();
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        for (w, (pid, why)) in warnings.iter().zip([
            (4242, "not a regular file"),
            (4243, "symbolic link"),
            (4244, "shorter than a header (5 bytes)"),
        ]) {
            assert!(
                w.contains(&format!("hood-rt-{pid}-1")) && w.contains(why),
                "{w}"
            );
        }
        // One pid only: the others are not even opened.
        let mut warnings = Vec::new();
        super::scan(d.path(), Some(4244), false, &mut warnings);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn private_dirs_are_made_for_this_recorder_and_stale_ones_removed() {
        let base = tempfile::tempdir().unwrap();
        let dir = super::private_dir(base.path(), "trace", &mut |_| {}).unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("hood-trace-{}-", std::process::id())),
            "{name}"
        );
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Left by a recorder that is gone (pid above the kernel's limit), with a segment of a
        // process that is gone too: removed by the next recorder.
        let stale = base.path().join("hood-calls-run-4194305-77");
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("hood-rt-4194306-1"), b"x").unwrap();
        // Named like one, but a link: never followed or removed.
        let target = tempfile::tempdir().unwrap();
        let link = base.path().join("hood-trace-4194305-78");
        std::os::unix::fs::symlink(target.path(), &link).unwrap();
        // A running process's segment in it: its program still writes there.
        let busy = base.path().join("hood-trace-4194305-79");
        std::fs::create_dir(&busy).unwrap();
        std::fs::write(busy.join(format!("hood-rt-{}-1", std::process::id())), b"x").unwrap();
        let mut said = Vec::new();
        super::clean_stale(base.path(), &mut |m| said.push(m));
        assert!(!stale.exists());
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(&format!("removed {}, left behind", stale.display())),
            "{said:?}"
        );
        assert!(link.exists() && target.path().exists());
        assert!(busy.exists());
        assert!(dir.exists(), "this recorder's own directory removed");
        // A second one for the same recorder: an error naming the directory.
        let e = super::private_dir(base.path(), "trace", &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("creating the segment directory {}", dir.display())),
            "{e}"
        );
    }

    #[test]
    fn liveness_follows_proc() {
        assert!(super::pid_alive(std::process::id()));
        assert!(!super::pid_alive(4_194_305));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped: a zombie is not live.
        let t = std::time::Instant::now();
        while !matches!(hood_procfs::state_and_start(pid as i32), Some(('Z', _))) {
            assert!(t.elapsed().as_secs() < 30, "`true` did not end");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!super::pid_alive(pid));
        child.wait().unwrap();
    }
}
