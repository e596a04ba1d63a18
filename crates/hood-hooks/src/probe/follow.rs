//! Following probed processes where they exec a program or load a library (`--probe`).
//!
//! Each CPU's ring also holds the probed tasks' side-band records (hood-perf's tracking
//! event): `PERF_RECORD_MMAP2` of every new executable mapping, `COMM` of every exec, `FORK`
//! and `EXIT`. Read in time order with the hits, they say what each file mapped is to its
//! process: the executable of an image it has just exec'd (its first mapping after the exec),
//! a library that image needs (its `DT_NEEDED`, theirs, the program interpreter), or one it
//! loaded itself (`dlopen`). The specs that apply to the file in that role are resolved in it
//! (opened through `/proc/PID/map_files`: the very file mapped, through hood's door for
//! untrusted files), the functions not probed yet in that process get their probes, on all of
//! its threads (inherited by the threads and children it starts from then on). Uprobes belong
//! to a file: a probe already placed on a file (the start's, or one placed for a parent before
//! it forked) is not placed twice, and the probes of an image left by exec stay on its file,
//! where they fire again only if the new image maps that same file.
//!
//! Calls made between the mapping and the probe's placement (a few milliseconds: the next
//! round of hood's reader) are not seen; each late placement is said in the notes with its
//! time.

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use hood_format::untrusted::{self, Policy};
use hood_perf::{UprobePoint, UprobeRecorder, UPROBE_SAMPLE_TYPE};
use hood_proc::clock::monotonic_ns;
use hood_raw::attr::Attr;
use hood_raw::frames::for_each_frame;
use hood_raw::records::{kind, Decoded, Event};
use hood_symbols::probe::{self as spec, EntryOnly, MappedRole, ProbeObject, ProbeSpec, Selection};

/// A side-band record of a followed task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Track {
    /// The process exec'd a program.
    Exec { pid: u32 },
    /// A new executable mapping of a file (or pseudo-file).
    Mmap {
        pid: u32,
        start: u64,
        len: u64,
        path: String,
    },
    /// A new process (not a thread).
    Fork { pid: u32, ppid: u32 },
    /// A process ended (its main thread).
    Exit { pid: u32 },
}

/// The side-band records in one CPU's raw ring bytes, with their times. Malformed bytes end
/// the decoding (false).
pub(super) fn decode_tracking(b: &[u8], cpu: u32, out: &mut Vec<(u64, Track)>) -> bool {
    let attr = Attr {
        sample_type: UPROBE_SAMPLE_TYPE,
        // sample_id_all: the records end with the hits' sample id.
        flags: 1 << 18,
        ..Default::default()
    };
    let mut d = Decoded::default();
    let framed = for_each_frame(b, |f| {
        if matches!(
            f.ty,
            kind::MMAP | kind::MMAP2 | kind::COMM | kind::FORK | kind::EXIT
        ) {
            let body = f.bytes.get(8..).unwrap_or(&[]);
            let _ = d.push_record(&attr, Some(cpu), f.ty, f.misc, body);
        }
    })
    .is_ok();
    for e in d.events {
        let t = match e.event {
            Event::Comm {
                pid, exec: true, ..
            } => Track::Exec { pid },
            Event::Mmap(m) => Track::Mmap {
                pid: m.pid,
                start: m.start,
                len: m.len,
                path: m.filename,
            },
            Event::Fork { pid, ppid, .. } if pid != ppid => Track::Fork { pid, ppid },
            Event::Exit { pid, tid } if pid == tid => Track::Exit { pid },
            _ => continue,
        };
        out.push((e.time, t));
    }
    framed && d.malformed == 0
}

/// A function probed late, for the outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NewPoint {
    /// Its index among the recorder's points (a hit's `point`).
    pub index: u32,
    /// The name reports show.
    pub name: String,
    /// The key (address) it is known by in the output.
    pub key: u64,
    /// An entry probe only.
    pub entry_only: bool,
    /// The kernel single-steps its first instruction (the dearer kind of probe).
    pub stepped: bool,
}

/// What the outputs are told of a side-band record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Told {
    /// A new image of `pid` from this record's time on.
    Exec { pid: u32 },
    /// The executable of `pid`'s current image.
    Exe { pid: u32, path: String },
}

/// A file's identity: device and inode.
type FileId = (u64, u64);

fn file_id(f: &std::fs::File) -> Option<FileId> {
    f.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// What hood knows of a followed process.
#[derive(Debug, Clone, Default)]
struct ProcState {
    /// Exec'd: its next mapping is the new image's executable.
    awaiting_exe: bool,
    /// Its image's libraries are known (else every library is taken as needed).
    known: bool,
    /// File names its image needs (loaded with it, not by the program).
    needed: HashSet<String>,
    /// Points probed late in it, with when (CLOCK_MONOTONIC ns).
    placed: HashMap<u32, u64>,
}

/// Follows the probed processes, placing probes where they exec or load a library.
pub(super) struct Follower {
    specs: Vec<ProbeSpec>,
    yes: bool,
    start_mono_ns: u64,
    /// The command hood started: its first exec is the start, not a new image.
    root: Option<u32>,
    root_exec_seen: bool,
    procs: HashMap<u32, ProcState>,
    /// Points probed in every process followed (the start's).
    everywhere: HashSet<u32>,
    /// Points resolved per file and role.
    resolved: HashMap<(FileId, MappedRole), Vec<u32>>,
    /// Point per (file, offset).
    by_offset: HashMap<(FileId, u64), u32>,
    /// Key → the file whose function it is; the key of an inlined function per file.
    keys: HashMap<u64, FileId>,
    inlined_keys: HashMap<(FileId, String), u64>,
    /// Files in order of first sight (a key's high bits tell two apart).
    ordinals: HashMap<FileId, u64>,
    /// Files probed late, held open.
    objects: Vec<ProbeObject>,
    /// Notes for the output (libraries not probed, and why).
    pub notes: Vec<String>,
    /// One line per late placement: what, where, from when.
    pub late: Vec<String>,
    /// (key, name) of the functions probed late, for the caller to take.
    pub named: Vec<(u64, String)>,
}

impl Follower {
    /// Follow from the start's selection (`sel`, whose points have `keys`), for the
    /// command `root` (hood's child) or the attached processes `attached` (with the file
    /// names their images need or have mapped).
    pub(super) fn new(
        specs: Vec<ProbeSpec>,
        yes: bool,
        start_mono_ns: u64,
        sel: &Selection,
        keys: &[u64],
        root: Option<u32>,
        attached: Vec<(u32, HashSet<String>)>,
    ) -> Follower {
        let ids: Vec<Option<FileId>> = sel.objects.iter().map(|o| file_id(&o.file)).collect();
        let mut f = Follower {
            specs,
            yes,
            start_mono_ns,
            root,
            root_exec_seen: false,
            procs: HashMap::new(),
            everywhere: (0..sel.points.len() as u32).collect(),
            resolved: HashMap::new(),
            by_offset: HashMap::new(),
            keys: HashMap::new(),
            inlined_keys: HashMap::new(),
            ordinals: HashMap::new(),
            objects: Vec::new(),
            notes: Vec::new(),
            late: Vec::new(),
            named: Vec::new(),
        };
        for id in ids.iter().flatten() {
            let n = f.ordinals.len() as u64;
            f.ordinals.entry(*id).or_insert(n);
        }
        for (i, (p, &k)) in sel.points.iter().zip(keys).enumerate() {
            let Some(Some(id)) = ids.get(p.object) else {
                continue;
            };
            f.by_offset.insert((*id, p.offset), i as u32);
            f.keys.insert(k, *id);
            if p.entry_only == Some(EntryOnly::Inlined) {
                f.inlined_keys.insert((*id, p.name.clone()), k);
            }
        }
        if let Some(pid) = root {
            f.procs.insert(
                pid,
                ProcState {
                    awaiting_exe: true,
                    known: true,
                    ..ProcState::default()
                },
            );
        }
        for (pid, needed) in attached {
            f.procs.insert(
                pid,
                ProcState {
                    known: true,
                    needed,
                    ..ProcState::default()
                },
            );
        }
        f
    }

    /// Handle one side-band record of time `time`: place the probes it calls for in `rec`
    /// (the functions new to the output in `new`), and say what the outputs must know.
    pub(super) fn handle(
        &mut self,
        time: u64,
        t: Track,
        rec: &mut UprobeRecorder,
        new: &mut Vec<NewPoint>,
    ) -> Option<Told> {
        match t {
            Track::Exec { pid } => {
                let st = self.procs.entry(pid).or_default();
                st.awaiting_exe = true;
                st.known = true;
                st.needed.clear();
                if self.root == Some(pid) && !self.root_exec_seen {
                    self.root_exec_seen = true;
                    return None;
                }
                Some(Told::Exec { pid })
            }
            Track::Mmap {
                pid,
                start,
                len,
                path,
            } => self.mapped(time, pid, start, len, path, rec, new),
            Track::Fork { pid, ppid } => {
                let parent = self.procs.get(&ppid).cloned().unwrap_or_default();
                // Probes placed in the parent before the fork are inherited; those placed
                // after, on a file the child has mapped too, are placed in the child.
                let missing: Vec<u32> = parent
                    .placed
                    .iter()
                    .filter(|&(_, &at)| at > time)
                    .map(|(&p, _)| p)
                    .collect();
                let mut child = ProcState {
                    awaiting_exe: false,
                    ..parent
                };
                child.placed.retain(|_, at| *at <= time);
                self.procs.insert(pid, child);
                self.place(pid, &missing, rec);
                None
            }
            Track::Exit { pid } => {
                self.procs.remove(&pid);
                None
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn mapped(
        &mut self,
        time: u64,
        pid: u32,
        start: u64,
        len: u64,
        path: String,
        rec: &mut UprobeRecorder,
        new: &mut Vec<NewPoint>,
    ) -> Option<Told> {
        if !path.starts_with('/') {
            return None;
        }
        let base = path.rsplit('/').next().unwrap_or(&path).to_string();
        let st = self.procs.entry(pid).or_default();
        let role = if st.awaiting_exe {
            st.awaiting_exe = false;
            MappedRole::Exe
        } else if !st.known || st.needed.contains(&base) {
            MappedRole::Needed
        } else {
            MappedRole::Loaded
        };
        let told = (role == MappedRole::Exe).then(|| Told::Exe {
            pid,
            path: path.clone(),
        });
        let open_at = format!(
            "/proc/{pid}/map_files/{start:x}-{:x}",
            start.saturating_add(len)
        );
        // Gone already (the process ended or unmapped it): nothing to probe.
        let Ok(file) = untrusted::open(Path::new(&open_at), Policy::NAMED) else {
            return told;
        };
        let Some(id) = file_id(&file) else {
            return told;
        };
        // What it needs is loaded with it, not by the program.
        if let Ok(deps) = spec::dependencies(&file, Path::new(&path)) {
            st.needed.extend(deps);
        }
        if !self
            .specs
            .iter()
            .any(|s| spec::applies_to_mapped(s, &path, role))
        {
            return told;
        }
        let wanted = match self.resolved.get(&(id, role)) {
            Some(w) => w.clone(),
            None => {
                let w = self.resolve(&open_at, &path, role, rec, new);
                self.resolved.insert((id, role), w.clone());
                w
            }
        };
        let st = self.procs.entry(pid).or_default();
        let missing: Vec<u32> = wanted
            .into_iter()
            .filter(|p| !self.everywhere.contains(p) && !st.placed.contains_key(p))
            .collect();
        if let Some(at) = self.place(pid, &missing, rec) {
            let what = match role {
                MappedRole::Exe => "the program it exec'd",
                MappedRole::Needed => "a library its program needs",
                MappedRole::Loaded => "a library it loaded (dlopen)",
            };
            let s = |ns: u64| ns.saturating_sub(self.start_mono_ns) as f64 / 1e9;
            self.late.push(format!(
                "{path} ({what}, pid {pid}): {} function{} probed from {:.3} s after the start (mapped at {:.3} s); calls made before were not seen",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                s(at),
                s(time),
            ));
        }
        told
    }

    /// Probe `points` in every thread of `pid` now; returns when, if any was placed.
    fn place(&mut self, pid: u32, points: &[u32], rec: &mut UprobeRecorder) -> Option<u64> {
        if points.is_empty() {
            return None;
        }
        let tasks = hood_perf::threads_of(pid as i32).ok()?;
        match rec.attach(points, &tasks) {
            Ok(0) => None,
            Ok(_) => {
                let at = monotonic_ns();
                let st = self.procs.entry(pid).or_default();
                for &p in points {
                    st.placed.insert(p, at);
                }
                Some(at)
            }
            Err(e) => {
                self.note(format!("pid {pid}: probes not placed: {e}"));
                None
            }
        }
    }

    fn note(&mut self, n: String) {
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    /// The points the specs select in a file mapped as `shown` in `role`, defined in `rec`
    /// where new.
    fn resolve(
        &mut self,
        open_at: &str,
        shown: &str,
        role: MappedRole,
        rec: &mut UprobeRecorder,
        new: &mut Vec<NewPoint>,
    ) -> Vec<u32> {
        let sel = spec::select_mapped(&self.specs, Path::new(open_at), shown, role);
        for n in &sel.notes {
            self.note(n.clone());
        }
        let ids: Vec<Option<FileId>> = sel.objects.iter().map(|o| file_id(&o.file)).collect();
        let fresh = sel
            .points
            .iter()
            .filter(|p| {
                ids.get(p.object)
                    .copied()
                    .flatten()
                    .is_some_and(|id| !self.by_offset.contains_key(&(id, p.offset)))
            })
            .count();
        if fresh > spec::CONFIRM_ABOVE && !self.yes {
            self.note(format!(
                "{shown}: not probed: the specs select {fresh} of its functions (more than {}); narrow them or add --yes",
                spec::CONFIRM_ABOVE
            ));
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut define: Vec<UprobePoint> = Vec::new();
        let mut pending: Vec<(FileId, u64, NewPoint)> = Vec::new();
        for p in &sel.points {
            let Some(Some(id)) = ids.get(p.object).copied() else {
                continue;
            };
            if let Some(&i) = self.by_offset.get(&(id, p.offset)) {
                if !out.contains(&i) {
                    out.push(i);
                }
                continue;
            }
            let n = self.ordinals.len() as u64;
            let ordinal = *self.ordinals.entry(id).or_insert(n);
            let inlined = p.entry_only == Some(EntryOnly::Inlined);
            let key = match self.inlined_keys.get(&(id, p.name.clone())) {
                Some(&k) if inlined => k,
                _ => {
                    let base = p.addr | (u64::from(inlined) << 47);
                    let mut k = base;
                    let mut bump = ordinal + 1;
                    while self.keys.get(&k).is_some_and(|&other| other != id) {
                        k = base | (bump << 48);
                        bump += 1;
                    }
                    self.keys.insert(k, id);
                    if inlined {
                        self.inlined_keys.insert((id, p.name.clone()), k);
                    }
                    k
                }
            };
            define.push(UprobePoint {
                path: format!("/proc/self/fd/{}", sel.objects[p.object].file.as_raw_fd()),
                offset: p.offset,
                returns: p.entry_only.is_none(),
            });
            pending.push((
                id,
                p.offset,
                NewPoint {
                    index: 0,
                    name: p.name.clone(),
                    key,
                    entry_only: p.entry_only.is_some(),
                    stepped: super::calibrate::stepped_at(&sel.objects[p.object].file, p.offset),
                },
            ));
        }
        if !define.is_empty() {
            match rec.add_points(&define) {
                Ok(first) => {
                    for (k, (id, offset, np)) in pending.into_iter().enumerate() {
                        let i = first + k as u32;
                        self.by_offset.insert((id, offset), i);
                        out.push(i);
                        self.named.push((np.key, np.name.clone()));
                        new.push(NewPoint { index: i, ..np });
                    }
                }
                Err(e) => self.note(format!("{shown}: not probed: {e}")),
            }
        }
        // The files stay open as long as their probes may be placed.
        self.objects.extend(sel.objects);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A side-band record as the kernel writes it (header, body, then the sample id: pid/tid,
    /// time, cpu, identifier).
    fn record(ty: u32, misc: u16, body: &[u8], pid: u32, time: u64) -> Vec<u8> {
        let mut r = Vec::new();
        let size = 8 + body.len() + 32;
        r.extend_from_slice(&ty.to_le_bytes());
        r.extend_from_slice(&misc.to_le_bytes());
        r.extend_from_slice(&(size as u16).to_le_bytes());
        r.extend_from_slice(body);
        r.extend_from_slice(&pid.to_le_bytes());
        r.extend_from_slice(&pid.to_le_bytes());
        r.extend_from_slice(&time.to_le_bytes());
        r.extend_from_slice(&0u64.to_le_bytes());
        r.extend_from_slice(&7u64.to_le_bytes());
        r
    }

    fn mmap2(pid: u32, start: u64, len: u64, path: &str) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&start.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&[0u8; 24]);
        b.extend_from_slice(&[0u8; 8]);
        b.extend_from_slice(path.as_bytes());
        b.resize((b.len() + 8) & !7, 0);
        b
    }

    #[test]
    fn side_band_records_are_read_and_bad_bytes_end_them() {
        let mut ring = record(10, 2, &mmap2(42, 0x7000, 0x2000, "/lib/libx.so"), 42, 5);
        let mut comm = Vec::new();
        comm.extend_from_slice(&42u32.to_le_bytes());
        comm.extend_from_slice(&42u32.to_le_bytes());
        comm.extend_from_slice(b"prog\0\0\0\0");
        ring.extend(record(3, 1 << 13, &comm, 42, 6));
        // A thread's start is no new process; a process's is.
        let fork = |pid: u32, ppid: u32, time: u64| {
            let mut b = Vec::new();
            for v in [pid, ppid, pid + 1, ppid] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&time.to_le_bytes());
            b
        };
        ring.extend(record(7, 0, &fork(42, 42, 7), 42, 7));
        ring.extend(record(7, 0, &fork(43, 42, 8), 43, 8));
        let mut out = Vec::new();
        assert!(decode_tracking(&ring, 0, &mut out));
        assert_eq!(
            out,
            vec![
                (
                    5,
                    Track::Mmap {
                        pid: 42,
                        start: 0x7000,
                        len: 0x2000,
                        path: "/lib/libx.so".into()
                    }
                ),
                (6, Track::Exec { pid: 42 }),
                (8, Track::Fork { pid: 43, ppid: 42 }),
            ]
        );
        // Cut anywhere, or garbage: no panic, what came before is kept.
        for cut in 0..ring.len() {
            let mut out = Vec::new();
            let _ = decode_tracking(&ring[..cut], 0, &mut out);
            assert!(out.len() <= 3);
        }
        let mut out = Vec::new();
        let junk: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let _ = decode_tracking(&junk, 0, &mut out);
    }
}
