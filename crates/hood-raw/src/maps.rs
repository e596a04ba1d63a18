//! Address spaces over time: which file (and file offset) an address of a process meant at
//! the moment of a sample. Built from the /proc snapshot at start and mmap/fork/exec records.

use std::collections::{BTreeMap, HashMap};

/// Index of a mapped file in [`Files`].
pub type FileId = u32;

/// A mapped file (or pseudo-file like `[vdso]`), with its build-id when known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MappedFile {
    /// Path or pseudo-name as the kernel reported it.
    pub path: String,
    /// Build-id bytes.
    pub build_id: Option<Vec<u8>>,
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

#[derive(Debug, Clone, Copy)]
struct Map {
    end: u64,
    pgoff: u64,
    file: FileId,
}

/// One process's mappings.
#[derive(Debug, Clone, Default)]
pub struct AddressSpace {
    maps: BTreeMap<u64, Map>,
}

impl AddressSpace {
    /// Add a mapping, replacing whatever overlapped it.
    pub fn insert(&mut self, start: u64, end: u64, pgoff: u64, file: FileId) {
        if end <= start {
            return;
        }
        let overlapping: Vec<(u64, Map)> = self
            .maps
            .range(..end)
            .rev()
            .take_while(|(&s, m)| m.end > start || s >= start)
            .filter(|(_, m)| m.end > start)
            .map(|(&s, &m)| (s, m))
            .collect();
        for (s, m) in overlapping {
            self.maps.remove(&s);
            if s < start {
                self.maps.insert(s, Map { end: start, ..m });
            }
            if m.end > end {
                let pgoff = m.pgoff.wrapping_add(end - s);
                self.maps.insert(
                    end,
                    Map {
                        end: m.end,
                        pgoff,
                        ..m
                    },
                );
            }
        }
        self.maps.insert(start, Map { end, pgoff, file });
    }

    /// The file and file offset of `addr`.
    pub fn lookup(&self, addr: u64) -> Option<(FileId, u64)> {
        let (&start, m) = self.maps.range(..=addr).next_back()?;
        if addr >= m.end {
            return None;
        }
        // A file offset past u64 (a hostile mmap record's pgoff) maps nothing.
        Some((m.file, (addr - start).checked_add(m.pgoff)?))
    }

    /// The mapping that holds `addr`: (start, end, file offset of start).
    pub fn mapping_of(&self, addr: u64) -> Option<(u64, u64, u64)> {
        let (&start, m) = self.maps.range(..=addr).next_back()?;
        (addr < m.end).then_some((start, m.end, m.pgoff))
    }

    /// Forget everything (exec).
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
    build_ids: &BTreeMap<String, String>,
    space: &mut AddressSpace,
) {
    for m in text.lines().filter_map(parse_maps_line) {
        if !m.is_exec() {
            continue;
        }
        let path = m.path.to_string();
        let build_id = build_ids.get(&path).and_then(|h| hex_decode(h));
        let file = files.intern(MappedFile { path, build_id });
        space.insert(m.start, m.end, m.offset, file);
    }
}

/// Decode lowercase/uppercase hex; `None` on bad input.
pub fn hex_decode(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Encode bytes as lowercase hex.
pub fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
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
