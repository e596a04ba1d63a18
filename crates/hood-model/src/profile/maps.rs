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
        Some((m.file, addr - start + m.pgoff))
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

/// Parse the raw text of /proc/PID/maps into `space`, executable mappings only.
pub fn load_proc_maps(
    text: &str,
    files: &mut Files,
    build_ids: &BTreeMap<String, String>,
    space: &mut AddressSpace,
) {
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let (Some(range), Some(perms), Some(off)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let _dev = it.next();
        let _inode = it.next();
        let path: String = it.collect::<Vec<_>>().join(" ");
        if !perms.contains('x') {
            continue;
        }
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(s), Ok(e), Ok(off)) = (
            u64::from_str_radix(s, 16),
            u64::from_str_radix(e, 16),
            u64::from_str_radix(off, 16),
        ) else {
            continue;
        };
        let build_id = build_ids.get(&path).and_then(|h| hex_decode(h));
        let file = files.intern(MappedFile { path, build_id });
        space.insert(s, e, off, file);
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
}
