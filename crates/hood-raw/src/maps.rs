//! Address spaces over time: which file (and file offset) an address of a process meant at
//! the moment of a sample. Built from the /proc snapshot at start and mmap/fork/exec/exit
//! records: [`AddressSpace`] is one process's mappings, [`Processes`] follows them through
//! exec, fork and exit.

use std::collections::{BTreeMap, HashMap};

use rustc_hash::FxHashMap;

use crate::BuildId;

/// Index of a mapped file in [`Files`].
pub type FileId = u32;

/// A mapped file (or pseudo-file like `[vdso]`), with its build-id when known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MappedFile {
    /// Path or pseudo-name as the kernel reported it.
    pub path: String,
    /// Its build-id, when known.
    pub build_id: Option<BuildId>,
}

impl MappedFile {
    /// Whether this is anonymous memory (JIT code lives here).
    pub fn is_anon(&self) -> bool {
        self.path.is_empty() || self.path.starts_with("//anon") || self.path.starts_with("[anon")
    }

    /// Whether this is a kernel-provided pseudo-file such as `[vdso]`, `[stack]`, `[heap]`.
    pub fn is_pseudo(&self) -> bool {
        self.path.starts_with('[')
    }

    /// The file's base name for display.
    pub fn short_name(&self) -> &str {
        if self.path.is_empty() {
            return "[anon]";
        }
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// Interned mapped files.
#[derive(Debug, Default)]
pub struct Files {
    /// Files by id.
    pub list: Vec<MappedFile>,
    index: HashMap<MappedFile, FileId>,
}

impl Files {
    /// Intern a file.
    pub fn intern(&mut self, f: MappedFile) -> FileId {
        if let Some(&id) = self.index.get(&f) {
            return id;
        }
        let id = self.list.len() as FileId;
        self.list.push(f.clone());
        self.index.insert(f, id);
        id
    }
}

/// Mappings followed per process. Ordinary processes have hundreds, large ones a few
/// thousand; a user's process can make 65,530, each naming a path of up to 4 KiB: past this
/// many, [`AddressSpace::insert`] refuses new ones (a cap on what one process may make root's
/// recorder, or a hostile recording make its reader, hold).
pub const MAX_MAPPINGS: usize = 16_384;

/// One mapping of an [`AddressSpace`], keyed there by its first address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapped<T> {
    /// One past the last address.
    pub end: u64,
    /// File offset of the first address.
    pub pgoff: u64,
    /// What the mapping holds (the file, or what the owner derived from it).
    pub value: T,
}

/// A change [`AddressSpace::insert_with`] made, told to its caller so that what it keeps
/// beside the mappings (an unwinder's modules) follows.
#[derive(Debug)]
pub enum Change<'a, T> {
    /// The mapping that started at this address is gone.
    Removed(u64),
    /// A mapping now lies at `start..end` (the new one, or what a new one left of an old one).
    Added {
        /// First address.
        start: u64,
        /// One past the last address.
        end: u64,
        /// File offset of `start`.
        pgoff: u64,
        /// The mapping's value.
        value: &'a T,
    },
}

/// One process's mappings: the workspace's one tracker of which file an address belongs to,
/// used by the profile model, the unwinder and the hook recorders. A new mapping replaces
/// whatever it overlaps; the parts of an old mapping on either side of it stay, with their
/// file offsets moved along.
#[derive(Debug, Clone)]
pub struct AddressSpace<T> {
    maps: BTreeMap<u64, Mapped<T>>,
}

impl<T> Default for AddressSpace<T> {
    fn default() -> Self {
        AddressSpace {
            maps: BTreeMap::new(),
        }
    }
}

impl<T: Clone> AddressSpace<T> {
    /// Map `start..end` from file offset `pgoff` to `value`, replacing what it overlaps;
    /// `false` (and nothing changed) when that would make more than [`MAX_MAPPINGS`], or
    /// when the range is empty.
    pub fn insert(&mut self, start: u64, end: u64, pgoff: u64, value: T) -> bool {
        self.insert_with(start, end, pgoff, value, |_| {})
    }

    /// [`insert`](Self::insert), telling `on` each mapping removed and added, removals first.
    pub fn insert_with(
        &mut self,
        start: u64,
        end: u64,
        pgoff: u64,
        value: T,
        mut on: impl FnMut(Change<'_, T>),
    ) -> bool {
        if end <= start {
            return false;
        }
        // The mappings held do not overlap, so those the new one overlaps are the last ones
        // starting below its end, back to the first that ends at or before its start: found
        // from the end, never by walking the whole process (which made 30,000 mappings
        // quadratic).
        let overlapping: Vec<u64> = self
            .maps
            .range(..end)
            .rev()
            .take_while(|(_, m)| m.end > start)
            .map(|(&s, _)| s)
            .collect();
        let first_kept = overlapping.last().is_some_and(|&s| s < start);
        let last_kept = overlapping.first().is_some_and(|s| self.maps[s].end > end);
        let after = self.maps.len() - overlapping.len()
            + usize::from(first_kept)
            + usize::from(last_kept)
            + 1;
        if after > MAX_MAPPINGS && after > self.maps.len() {
            return false;
        }
        let mut kept = Vec::new();
        for s in overlapping {
            let Some(m) = self.maps.remove(&s) else {
                continue;
            };
            on(Change::Removed(s));
            if s < start {
                kept.push((
                    s,
                    Mapped {
                        end: start,
                        ..m.clone()
                    },
                ));
            }
            if m.end > end {
                let pgoff = m.pgoff.wrapping_add(end - s);
                kept.push((end, Mapped { pgoff, ..m }));
            }
        }
        kept.push((start, Mapped { end, pgoff, value }));
        for (s, m) in kept {
            on(Change::Added {
                start: s,
                end: m.end,
                pgoff: m.pgoff,
                value: &m.value,
            });
            self.maps.insert(s, m);
        }
        true
    }
}

impl<T> AddressSpace<T> {
    /// The mapping that holds `addr`, with its first address.
    pub fn get(&self, addr: u64) -> Option<(u64, &Mapped<T>)> {
        let (&start, m) = self.maps.range(..=addr).next_back()?;
        (addr < m.end).then_some((start, m))
    }

    /// The mapping that holds `addr`: (start, end, file offset of start).
    pub fn mapping_of(&self, addr: u64) -> Option<(u64, u64, u64)> {
        self.get(addr).map(|(start, m)| (start, m.end, m.pgoff))
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.maps.clear();
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// Whether there are no mappings.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// The mappings in address order, each with its first address.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Mapped<T>)> {
        self.maps.iter().map(|(&s, m)| (s, m))
    }
}

impl<T: Copy> AddressSpace<T> {
    /// The value and file offset of `addr`.
    pub fn lookup(&self, addr: u64) -> Option<(T, u64)> {
        let (start, m) = self.get(addr)?;
        // A file offset past u64 (a hostile mmap record's pgoff) maps nothing.
        Some((m.value, (addr - start).checked_add(m.pgoff)?))
    }
}

/// The processes of a recording and what each holds of its mappings (`P`: an
/// [`AddressSpace`], or that and what its owner keeps beside it), followed through exec,
/// fork and exit: the workspace's one place for those rules.
#[derive(Debug, Clone)]
pub struct Processes<P> {
    by_pid: FxHashMap<u32, P>,
}

impl<P> Default for Processes<P> {
    fn default() -> Self {
        Processes {
            by_pid: FxHashMap::default(),
        }
    }
}

impl<P: Clone + Default> Processes<P> {
    /// `pid`'s state.
    pub fn get(&self, pid: u32) -> Option<&P> {
        self.by_pid.get(&pid)
    }

    /// `pid`'s state, empty for a process first seen now (it mapped something before the
    /// recording saw it start).
    pub fn entry(&mut self, pid: u32) -> &mut P {
        self.by_pid.entry(pid).or_default()
    }

    /// Set `pid`'s state (its mappings read from /proc at the start).
    pub fn insert(&mut self, pid: u32, p: P) {
        self.by_pid.insert(pid, p);
    }

    /// `pid` called exec: its old mappings are gone.
    pub fn exec(&mut self, pid: u32) -> &mut P {
        let p = self.entry(pid);
        *p = P::default();
        p
    }

    /// `pid` was made by fork from `ppid`. A new process starts with a copy of its parent's
    /// mappings (none when the parent is unknown) and gives `true`; a new thread
    /// (`pid == ppid`) shares its process's and changes nothing.
    pub fn fork(&mut self, ppid: u32, pid: u32) -> bool {
        if ppid == pid {
            return false;
        }
        let p = self.by_pid.get(&ppid).cloned().unwrap_or_default();
        self.by_pid.insert(pid, p);
        true
    }

    /// `pid`'s main thread exited: its mappings are forgotten (a later fork may reuse the
    /// pid).
    pub fn exit(&mut self, pid: u32) -> Option<P> {
        self.by_pid.remove(&pid)
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapsLine<'a> {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Permissions, e.g. `r-xp`.
    pub perms: &'a str,
    /// File offset of `start`.
    pub offset: u64,
    /// Device, `major:minor` in hex.
    pub dev: &'a str,
    /// Inode number (0 for anonymous memory).
    pub inode: u64,
    /// Path or pseudo-name (`[vdso]`, `[heap]`); empty for anonymous memory. Paths may hold
    /// spaces; a deleted file ends in ` (deleted)`.
    pub path: &'a str,
}

impl MapsLine<'_> {
    /// Whether the mapping is executable.
    pub fn is_exec(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}

/// Parse one line of `/proc/PID/maps`; `None` for anything not of its shape. This is the
/// workspace's one reader of that format.
pub fn parse_maps_line(line: &str) -> Option<MapsLine<'_>> {
    let mut rest = line;
    let mut field = || {
        let t = rest.trim_start_matches(' ');
        let end = t.find(' ').unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        (!f.is_empty()).then_some(f)
    };
    let range = field()?;
    let perms = field()?;
    let offset = field()?;
    let dev = field()?;
    let inode = field()?;
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    if end < start || perms.len() != 4 {
        return None;
    }
    Some(MapsLine {
        start,
        end,
        perms,
        offset: u64::from_str_radix(offset, 16).ok()?,
        dev,
        inode: inode.parse().ok()?,
        path: rest.trim_start_matches(' ').trim_end_matches(['\n', '\r']),
    })
}

/// Parse the raw text of /proc/PID/maps into `space`, executable mappings only.
pub fn load_proc_maps(
    text: &str,
    files: &mut Files,
    build_ids: &BTreeMap<String, BuildId>,
    space: &mut AddressSpace<FileId>,
) {
    for m in text.lines().filter_map(parse_maps_line) {
        if !m.is_exec() {
            continue;
        }
        let path = m.path.to_string();
        let build_id = build_ids.get(&path).copied();
        let file = files.intern(MappedFile { path, build_id });
        space.insert(m.start, m.end, m.offset, file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_insert_splits_and_replaces() {
        let mut s = AddressSpace::default();
        s.insert(0x1000, 0x5000, 0, 1);
        s.insert(0x2000, 0x3000, 0x100, 2);
        assert_eq!(s.lookup(0x1800), Some((1, 0x800)));
        assert_eq!(s.lookup(0x2010), Some((2, 0x110)));
        assert_eq!(s.lookup(0x4000), Some((1, 0x3000)));
        assert_eq!(s.lookup(0x5000), None);
        assert_eq!(s.len(), 3);
        s.insert(0x0, 0x10000, 0, 3);
        assert_eq!(s.len(), 1);
        assert_eq!(s.lookup(0x2010), Some((3, 0x2010)));
    }

    /// What an insert tells its caller: the old mapping goes, its two remains and the new
    /// mapping come, so an owner's side state (an unwinder's modules) matches the mappings.
    #[test]
    fn an_insert_tells_what_it_removed_and_added() {
        let mut s = AddressSpace::default();
        s.insert(0x1000, 0x5000, 0x10, 'a');
        let mut changes = Vec::new();
        assert!(
            s.insert_with(0x2000, 0x3000, 0, 'b', |c| changes.push(match c {
                Change::Removed(at) => format!("-{at:#x}"),
                Change::Added {
                    start,
                    end,
                    pgoff,
                    value,
                } => format!("+{start:#x}..{end:#x}@{pgoff:#x}{value}"),
            }))
        );
        assert_eq!(
            changes,
            [
                "-0x1000",
                "+0x1000..0x2000@0x10a",
                "+0x3000..0x5000@0x2010a",
                "+0x2000..0x3000@0x0b"
            ]
        );
        let got: Vec<(u64, u64, char)> = s.iter().map(|(a, m)| (a, m.end, m.value)).collect();
        assert_eq!(
            got,
            [
                (0x1000, 0x2000, 'a'),
                (0x2000, 0x3000, 'b'),
                (0x3000, 0x5000, 'a')
            ]
        );
        // An empty range maps nothing.
        assert!(!s.insert(0x9000, 0x9000, 0, 'c'));
        assert_eq!(s.len(), 3);
    }

    /// A new mapping over the end of one and the start of the next trims both; over several
    /// whole ones it takes their place.
    #[test]
    fn an_insert_across_neighbours_trims_them_and_replaces_those_inside() {
        let mut s = AddressSpace::default();
        for (i, at) in [0x1000u64, 0x2000, 0x3000, 0x4000].into_iter().enumerate() {
            s.insert(at, at + 0x1000, 0, i as u32);
        }
        s.insert(0x1800, 0x3800, 0, 9);
        assert_eq!(s.mapping_of(0x1000), Some((0x1000, 0x1800, 0)));
        assert_eq!(s.lookup(0x1800), Some((9, 0)));
        assert_eq!(s.lookup(0x3800), Some((2, 0x800)));
        assert_eq!(s.mapping_of(0x3800), Some((0x3800, 0x4000, 0x800)));
        assert_eq!(s.lookup(0x4000), Some((3, 0)));
        assert_eq!(s.len(), 4);
    }

    /// Past the cap a new mapping is refused, but one that replaces mappings (and so does
    /// not grow the process) is not, and splitting one in two counts both remains.
    #[test]
    fn the_cap_refuses_growth_only() {
        let mut s = AddressSpace::default();
        for i in 0..MAX_MAPPINGS as u64 {
            assert!(s.insert(i * 0x2000, i * 0x2000 + 0x1000, 0, 0u8));
        }
        let past = MAX_MAPPINGS as u64 * 0x2000;
        assert!(!s.insert(past, past + 0x1000, 0, 1));
        assert_eq!(s.lookup(past), None);
        assert!(s.insert(0, 0x1000, 0, 2), "a replacement is not refused");
        assert_eq!(s.lookup(0), Some((2, 0)));
        assert!(!s.insert(0x2400, 0x2800, 0, 3), "a split grows by two");
        assert_eq!(s.lookup(0x2400), Some((0, 0x400)));
        assert_eq!(s.len(), MAX_MAPPINGS);
    }

    /// exec empties a process's mappings; fork copies the parent's into a new process (and
    /// none for an unknown parent), and later changes to either do not reach the other; a
    /// new thread changes nothing; exit forgets the process.
    #[test]
    fn exec_fork_and_exit_follow_processes() {
        let mut p: Processes<AddressSpace<u32>> = Processes::default();
        p.entry(10).insert(0x1000, 0x2000, 0, 1);
        assert!(!p.fork(10, 10), "a thread shares its process's mappings");
        assert!(p.fork(10, 11));
        assert_eq!(p.get(11).and_then(|s| s.lookup(0x1000)), Some((1, 0)));
        p.entry(11).insert(0x1000, 0x2000, 0, 2);
        assert_eq!(p.get(10).and_then(|s| s.lookup(0x1000)), Some((1, 0)));
        p.exec(11).insert(0x5000, 0x6000, 0, 3);
        let child = p.get(11).unwrap();
        assert_eq!((child.lookup(0x1000), child.len()), (None, 1));
        assert!(p.fork(99, 12));
        assert!(p.get(12).is_some_and(AddressSpace::is_empty));
        assert!(p.exit(10).is_some());
        assert!(p.get(10).is_none());
        assert!(p.get(11).is_some());
    }

    /// Found by fuzzing: a mapping whose file offset is near u64::MAX (from a hostile mmap
    /// record) overflowed the offset of an address in it (a panic in debug builds, a wrong
    /// offset in release); such an address now maps to nothing.
    #[test]
    fn a_file_offset_past_u64_maps_nothing() {
        let mut s = AddressSpace::default();
        s.insert(0x1000, 0x3000, u64::MAX - 0x10, 1);
        assert_eq!(s.lookup(0x1008), Some((1, u64::MAX - 0x8)));
        assert_eq!(s.lookup(0x2000), None);
    }

    #[test]
    fn proc_maps_keep_executable_lines_with_spaces_in_paths() {
        let text = "55d0a0000000-55d0a0001000 r--p 00000000 fe:00 12 /usr/bin/my prog\n\
                    55d0a0001000-55d0a0002000 r-xp 00001000 fe:00 12 /usr/bin/my prog\n\
                    7ffd1000-7ffd3000 r-xp 00000000 00:00 0 [vdso]\nbad line\n";
        let mut files = Files::default();
        let mut s = AddressSpace::default();
        load_proc_maps(text, &mut files, &BTreeMap::new(), &mut s);
        let (f, off) = s.lookup(0x55d0a0001010).unwrap();
        assert_eq!(files.list[f as usize].path, "/usr/bin/my prog");
        assert_eq!(off, 0x1010);
        assert_eq!(s.lookup(0x55d0a0000010), None);
        assert_eq!(
            files.list[s.lookup(0x7ffd1000).unwrap().0 as usize].path,
            "[vdso]"
        );
    }

    #[test]
    fn maps_lines_parse_every_field_and_refuse_other_shapes() {
        let l =
            parse_maps_line("7f00-7f10 r-xp 0000a000 fe:01 4242    /lib/x y.so (deleted)").unwrap();
        assert_eq!(
            (l.start, l.end, l.offset, l.inode),
            (0x7f00, 0x7f10, 0xa000, 4242)
        );
        assert_eq!(
            (l.perms, l.dev, l.path),
            ("r-xp", "fe:01", "/lib/x y.so (deleted)")
        );
        assert!(l.is_exec());
        let anon = parse_maps_line("1000-2000 rw-p 00000000 00:00 0").unwrap();
        assert_eq!(anon.path, "");
        assert!(!anon.is_exec());
        for bad in [
            "",
            "zz-1 r-xp 0 0:0 0 /a",
            "2000-1000 r-xp 0 0:0 0",
            "1-2 r-xp 0 0:0",
            "1-2 rx 0 0:0 0",
        ] {
            assert_eq!(parse_maps_line(bad), None, "{bad:?}");
        }
    }
}
