//! Reading hood-rt segments from the segment directory into `ProcessCalls` (without names).
//! Nothing in a segment is trusted: bad magic, version or sizes skip it with a warning.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use hood_abi::{HeaderView, ThreadView, NO_PARENT, THREAD_EXITED, THREAD_HEADER_SIZE};
use hood_model::calls::{Limits, PathEntry, ProcessCalls, ThreadCalls};

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
}

/// Directory segments live in: `$HOOD_SHM_DIR` or /dev/shm.
pub fn shm_dir() -> PathBuf {
    std::env::var_os("HOOD_SHM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(hood_abi::DEFAULT_SHM_DIR))
}

/// Read every segment in `dir` (of `pid` only, if given). Unreadable or invalid segments are
/// skipped and described in `warnings`.
pub fn scan(dir: &Path, pid: Option<u32>, warnings: &mut Vec<String>) -> Vec<Segment> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        warnings.push(format!("cannot read segment directory {}", dir.display()));
        return Vec::new();
    };
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(hood_abi::SEGMENT_PREFIX) else {
            continue;
        };
        let seg_pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some() && seg_pid != pid {
            continue;
        }
        let path = ent.path();
        match read_segment(&path) {
            Ok(s) => out.push(s),
            Err(e) => warnings.push(format!("skipping segment {}: {e}", path.display())),
        }
    }
    out.sort_by_key(|s| (s.header.start_mono_ns, s.header.pid));
    out
}

/// An opened segment of the expected mode: its file, header and maps text. `other` names the
/// command that reads segments of the other mode, for the message.
pub(crate) fn open_segment(
    path: &Path,
    mode: u32,
    other: &str,
) -> Result<(File, HeaderView, String), String> {
    let f = File::open(path).map_err(|e| e.to_string())?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    let mut head = vec![0u8; hood_abi::HEADER_AREA_SIZE as usize];
    f.read_exact_at(&mut head, 0)
        .map_err(|_| format!("shorter than a header ({len} bytes)"))?;
    let header = HeaderView::parse(&head).map_err(|e| e.to_string())?;
    if header.mode != mode {
        return Err(format!("a segment of the other mode (read by {other})"));
    }
    if len < header.total_size {
        return Err(format!(
            "truncated: {len} bytes, header says {}",
            header.total_size
        ));
    }
    let mut maps = vec![0u8; header.maps_len as usize];
    f.read_exact_at(&mut maps, header.maps_offset)
        .map_err(|e| e.to_string())?;
    Ok((f, header, String::from_utf8_lossy(&maps).into_owned()))
}

/// Read every used thread slot: `read_len` sizes a slot from its thread header, `parse` decodes
/// it (`Some(tid)` keeps it; unused slots have tid 0).
pub(crate) fn read_slots<T, E: std::fmt::Display>(
    f: &File,
    header: &HeaderView,
    read_len: impl Fn(&[u8]) -> u64,
    parse: impl Fn(&HeaderView, &[u8]) -> Result<T, E>,
    tid: impl Fn(&T) -> u32,
) -> Result<Vec<T>, String> {
    let mut threads = Vec::new();
    for i in 0..header.threads_used {
        let off = header.slot_offset(i);
        let mut th = vec![0u8; THREAD_HEADER_SIZE];
        f.read_exact_at(&mut th, off).map_err(|e| e.to_string())?;
        let mut slot = vec![0u8; read_len(&th) as usize];
        f.read_exact_at(&mut slot, off).map_err(|e| e.to_string())?;
        match parse(header, &slot) {
            Ok(t) if tid(&t) != 0 => threads.push(t),
            Ok(_) => {}
            Err(e) => return Err(format!("thread slot {i}: {e}")),
        }
    }
    Ok(threads)
}

fn read_segment(path: &Path) -> Result<Segment, String> {
    let (f, header, maps) = open_segment(path, hood_abi::MODE_CALLS, "hood trace")?;
    let threads = read_slots(
        &f,
        &header,
        |th| header.slot_read_len(hood_abi::parse::slot_paths_used(th)),
        ThreadView::parse,
        |t| t.tid,
    )?;
    Ok(Segment {
        path: path.to_owned(),
        header,
        maps,
        threads,
    })
}

/// Whether `pid` is a live (not zombie or dead) process.
pub(crate) fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit(')')
            .next()
            .map(|r| !r.trim_start().starts_with(['Z', 'X']))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// CLOCK_MONOTONIC now, in ns (the runtime's start instant is recorded on this clock).
fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill; std offers no way to read
    // CLOCK_MONOTONIC as an absolute value.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether the process of each segment is still live: (segment index → state, end ticks).
/// A pid with several segments was re-exec'd: all but the newest are finished.
pub fn to_processes(segs: &[Segment]) -> Vec<(ProcessCalls, bool)> {
    let mut newest: HashMap<u32, u64> = HashMap::new();
    for s in segs {
        let e = newest.entry(s.header.pid).or_insert(0);
        *e = (*e).max(s.header.start_mono_ns);
    }
    let now_mono = mono_ns();
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
                ("exited", h.exit_ticks, false)
            } else if newest.get(&h.pid) != Some(&h.start_mono_ns) {
                ("exec", last, false)
            } else if pid_alive(h.pid) {
                let dt = now_mono.saturating_sub(h.start_mono_ns) as u128;
                (
                    "running",
                    h.start_ticks + (dt * h.ticks_per_sec as u128 / 1_000_000_000) as u64,
                    true,
                )
            } else {
                ("gone", last, false)
            };
            (decode(s, state, end), live)
        })
        .collect()
}

fn decode(s: &Segment, state: &str, end: u64) -> ProcessCalls {
    let h = &s.header;
    let mut notes = Vec::new();
    let mut threads = Vec::new();
    let mut begin = u64::MAX;
    for t in &s.threads {
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
            flags: t.flags,
            reset_pending,
            paths,
        });
    }
    if state == "gone" {
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
        clock: if h.clock == hood_abi::CLOCK_TSC {
            "tsc".into()
        } else {
            "monotonic".into()
        },
        compensate: h.compensate,
        comp_self_ticks: h.comp_self_ticks,
        comp_child_ticks: h.comp_child_ticks,
        flags: h.flags | s.threads.iter().fold(0, |a, t| a | t.flags),
        limits: Limits {
            max_paths: h.max_paths,
            max_depth: h.max_depth,
            max_path_len: h.max_path_len,
            max_threads: h.max_threads,
        },
        state: state.into(),
        span_ns,
        threads,
        symbols: Default::default(),
        notes,
    }
}
