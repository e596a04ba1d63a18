//! The unwind information of one ELF image (an executable, a shared library, the vDSO),
//! read once and shared by every process that maps it.
//!
//! The files are untrusted: they are opened through hood-format's door
//! ([`hood_format::untrusted`]: no final symlink, no blocking on a FIFO planted under a mapped
//! path, no device opened), only regular files are read, only the few sections unwinding needs
//! are read (never the whole file), and every size comes from the file's real length, never
//! from what its headers claim (a compressed section's claimed size only bounds what its
//! stream may produce).

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gimli::{BaseAddresses, EhFrame, EhFrameHdr, LittleEndian, UnwindSection};
use object::read::ReadCache;
use object::{Object as _, ObjectSection as _, ObjectSegment as _, ObjectSymbol as _, ReadRef};
use rustc_hash::FxHashMap;

use crate::UnwindError;

/// Files bigger than this are not read for unwind information (no real ELF image is).
const MAX_IMAGE_BYTES: u64 = 8 << 30;
/// An unwind section bigger than this is ignored (the biggest real ones, a browser's, are
/// a few tens of MB).
pub(crate) const MAX_SECTION_BYTES: u64 = 64 << 20;

/// Section bytes shared between every module made from one image.
pub(crate) type Bytes = Arc<[u8]>;

/// One `PT_LOAD` segment.
#[derive(Debug, Clone, Copy)]
struct Load {
    offset: u64,
    vaddr: u64,
    filesz: u64,
    exec: bool,
}

/// A section's stated address range and its bytes.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub svma: Range<u64>,
    pub data: Bytes,
}

/// What unwinding needs from one ELF image.
#[derive(Debug)]
pub struct Image {
    /// The path it was read from (or a pseudo-name such as `[vdso]`).
    pub name: String,
    loads: Vec<Load>,
    pub(crate) text: Option<Range<u64>>,
    pub(crate) got: Option<Range<u64>>,
    pub(crate) eh_frame: Option<Section>,
    pub(crate) eh_frame_hdr: Option<Section>,
    pub(crate) debug_frame: Option<Bytes>,
    /// The GNU build-id note.
    pub(crate) build_id: Option<hood_raw::BuildId>,
    /// The entry point (`e_entry`; 0 for a library).
    pub(crate) entry: u64,
    /// Unwind sections not read: over [`MAX_SECTION_BYTES`] or stored sparse.
    pub(crate) refused: Vec<String>,
    /// Go's own signal trampolines (`runtime.sigreturn.abi0`, named
    /// `runtime.sigreturn__sigaction.abi0` since Go 1.20): the `sa_restorer` a Go program
    /// without cgo installs, which the kernel makes its handler's return address. Its
    /// `.debug_frame` has no mark for signal frames, so the symbol says it.
    go_restorers: Vec<u64>,
    /// What `.eh_frame_hdr` said about addresses asked before ([`Image::facts`]): a walk asks
    /// about the same few addresses over and over (its last frame, a leaf's FDE), and each
    /// answer costs a table search and an FDE parse.
    facts: Mutex<FxHashMap<u64, Option<FdeFacts>>>,
}

/// Addresses whose facts an image keeps; past this the memo starts over (an image's hot
/// addresses are a few hundred).
const MAX_FACTS: usize = 1 << 14;

/// What the FDE covering an address says, as far as the walk asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FdeFacts {
    /// Its CIE marks a signal trampoline (`S`).
    trampoline: bool,
    /// The address is the FDE's first one.
    starts_here: bool,
    /// The row for the address says the return address is undefined.
    ra_undefined: bool,
}

/// Whether every entry of `.eh_frame_hdr`'s table can be read and points into `.eh_frame` or
/// after its start: gimli computes an FDE's offset as `pointer - eh_frame_ptr` and overflows
/// on a table pointing before it (found by the `unwind` fuzz target). Checked once per image,
/// so that no lookup meets such an entry.
fn hdr_table_sound(
    hdr: &Section,
    eh: &Section,
    text: Option<std::ops::Range<u64>>,
    got: Option<std::ops::Range<u64>>,
) -> bool {
    let bases = BaseAddresses::default()
        .set_eh_frame_hdr(hdr.svma.start)
        .set_eh_frame(eh.svma.start)
        .set_text(text.map_or(0, |t| t.start))
        .set_got(got.map_or(0, |g| g.start));
    let Ok(parsed) = EhFrameHdr::new(&hdr.data[..], LittleEndian).parse(&bases, 8) else {
        // Every lookup fails to parse it too, and finds nothing.
        return true;
    };
    let (Ok(start), Some(table)) = (parsed.eh_frame_ptr().direct(), parsed.table()) else {
        return true;
    };
    let mut entries = table.iter(&bases);
    loop {
        match entries.next() {
            Ok(Some((_, fde))) => {
                if fde.direct().is_ok_and(|p| p < start) {
                    return false;
                }
            }
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

impl Image {
    /// Whether the image carries call frame information of any kind.
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    /// The address the image states for file offset `pgoff` of a mapping, and whether the
    /// segment holding it is executable.
    pub fn svma_of_offset(&self, pgoff: u64) -> Option<u64> {
        // A mapping starts at the page holding its segment's first byte, so compare against
        // page-aligned segment starts; prefer executable segments (the mapping is one).
        let holds = |l: &&Load| {
            let aligned = l.offset & !0xfff;
            pgoff >= aligned && pgoff < l.offset.saturating_add(l.filesz.max(1))
        };
        let l = self
            .loads
            .iter()
            .filter(holds)
            .find(|l| l.exec)
            .or_else(|| self.loads.iter().find(holds))?;
        (l.vaddr.checked_sub(l.offset)?).checked_add(pgoff)
    }

    /// Whether `svma` lies in the first instructions after the entry point: a frame there is
    /// the process's (or the dynamic loader's) first, whatever its call frame information
    /// says about a caller.
    pub(crate) fn is_entry(&self, svma: u64) -> bool {
        self.entry != 0 && svma >= self.entry && svma - self.entry < 64
    }

    /// Whether the code at `svma` (a return address minus one) belongs to a signal trampoline
    /// (its CIE carries the `S` augmentation, as glibc's `__restore_rt` does).
    pub fn is_signal_trampoline(&self, svma: u64) -> bool {
        self.facts(svma).is_some_and(|f| f.trampoline)
    }

    /// Whether `svma` is the first instruction of Go's signal trampoline: a return address
    /// equal to it is the one the kernel pushed for Go's signal handler.
    pub(crate) fn is_go_restorer(&self, svma: u64) -> bool {
        self.go_restorers.contains(&svma)
    }

    /// Whether `svma` lies in Go's signal trampoline (`mov $15, %eax; syscall`: 7 and 2
    /// bytes), where the stack pointer is at the kernel's `struct ucontext`.
    pub(crate) fn in_go_restorer(&self, svma: u64) -> bool {
        self.go_restorers
            .iter()
            .any(|&r| svma >= r && svma - r < 16)
    }

    /// Whether call frame information covers the code at `svma`. Only `.eh_frame_hdr`'s
    /// table can say no; an image with `.debug_frame` alone is taken as covered.
    pub(crate) fn covers(&self, svma: u64) -> bool {
        if self.eh_frame_hdr.is_none() {
            return self.has_cfi();
        }
        self.facts(svma).is_some()
    }

    /// Whether the call frame information for `svma` says the return address is undefined
    /// (`.cfi_undefined rip`): the outermost frame of a thread or process (`_start`, glibc's
    /// `clone3`/`clone`). `None` when only `.debug_frame` describes the image, which this does
    /// not look up.
    pub fn ra_undefined(&self, svma: u64) -> Option<bool> {
        self.eh_frame_hdr.as_ref()?;
        Some(self.facts(svma).is_some_and(|f| f.ra_undefined))
    }

    /// Whether `svma`, which no FDE covers, lies in the few bytes just before a thread's
    /// outermost frame (an FDE whose return address is undefined): glibc's `clone3` and
    /// `clone` leave the `syscall` and the instructions after it (`test; jl; je; ret`,
    /// at most 16 bytes) without call frame information, and a new thread's first samples
    /// land there before it calls its start function.
    pub(crate) fn before_thread_start(&self, svma: u64) -> bool {
        self.eh_frame_hdr.is_some()
            && self.facts(svma).is_none()
            && (1..=16u64)
                .map(|k| svma.wrapping_add(k))
                .find_map(|a| self.facts(a))
                .is_some_and(|f| f.starts_here && f.ra_undefined)
    }

    /// Whether an FDE begins exactly at `svma` (a function's first instruction: a pointer
    /// to it on the stack is a function pointer, never a return address).
    pub(crate) fn fde_starts_at(&self, svma: u64) -> bool {
        self.facts(svma).is_some_and(|f| f.starts_here)
    }

    /// What the FDE `.eh_frame_hdr` gives for `svma` says (`None` when none covers it),
    /// remembered per address.
    fn facts(&self, svma: u64) -> Option<FdeFacts> {
        let mut memo = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&known) = memo.get(&svma) {
            return known;
        }
        let facts = self.with_fde(svma, |fde, eh_frame, bases| {
            let mut ctx = gimli::UnwindContext::new();
            FdeFacts {
                trampoline: fde.cie().is_signal_trampoline(),
                starts_here: fde.initial_address() == svma,
                ra_undefined: fde
                    .unwind_info_for_address(eh_frame, bases, &mut ctx, svma)
                    .is_ok_and(|row| {
                        matches!(
                            row.register(gimli::X86_64::RA),
                            Some(gimli::RegisterRule::Undefined)
                        )
                    }),
            }
        });
        if memo.len() >= MAX_FACTS {
            memo.clear();
        }
        memo.insert(svma, facts);
        facts
    }

    /// Run `f` on the FDE that `.eh_frame_hdr` gives for `svma`; `None` when none covers it.
    fn with_fde<T>(
        &self,
        svma: u64,
        f: impl FnOnce(
            &gimli::FrameDescriptionEntry<gimli::EndianSlice<'_, LittleEndian>>,
            &EhFrame<gimli::EndianSlice<'_, LittleEndian>>,
            &BaseAddresses,
        ) -> T,
    ) -> Option<T> {
        let (hdr, eh) = (self.eh_frame_hdr.as_ref()?, self.eh_frame.as_ref()?);
        let bases = BaseAddresses::default()
            .set_eh_frame_hdr(hdr.svma.start)
            .set_eh_frame(eh.svma.start)
            .set_text(self.text.as_ref().map_or(0, |t| t.start))
            .set_got(self.got.as_ref().map_or(0, |g| g.start));
        let parsed = EhFrameHdr::new(&hdr.data[..], LittleEndian)
            .parse(&bases, 8)
            .ok()?;
        let table = parsed.table()?;
        let mut eh_frame = EhFrame::new(&eh.data[..], LittleEndian);
        eh_frame.set_address_size(8);
        let fde = table
            .fde_for_address(&eh_frame, &bases, svma, EhFrame::cie_from_offset)
            .ok()?;
        Some(f(&fde, &eh_frame, &bases))
    }

    /// Read the unwind information of the ELF image in `data`, named `name`, with the caps
    /// the unwinder reads a file with (public for the `unwind` fuzz target).
    pub fn parse<'d, R: ReadRef<'d>>(name: String, data: R) -> Result<Image, UnwindError> {
        Image::parse_dense(name, data, &|_| true)
    }

    /// [`Image::parse`], reading only the sections whose file range `dense` accepts (one
    /// stored whole, not a hole of a sparse file that costs nothing on disk and everything
    /// in memory).
    fn parse_dense<'d, R: ReadRef<'d>>(
        name: String,
        data: R,
        dense: &dyn Fn(std::ops::Range<u64>) -> bool,
    ) -> Result<Image, UnwindError> {
        let file = object::File::parse(data).map_err(|e| UnwindError::Elf {
            path: name.clone(),
            reason: e.to_string(),
        })?;
        let loads = file
            .segments()
            .map(|s| {
                let (offset, filesz) = s.file_range();
                Load {
                    offset,
                    vaddr: s.address(),
                    filesz,
                    exec: match s.flags() {
                        object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                        _ => false,
                    },
                }
            })
            .collect();
        let range = |name: &str| {
            let s = file.section_by_name(name)?;
            let start = s.address();
            Some(start..start.checked_add(s.size())?)
        };
        // Compressed sections (zlib or zstd, `SHF_COMPRESSED` or GNU's `.zdebug_`) are read
        // decompressed: Go compresses its `.debug_frame`, its only call frame information.
        let refused = std::cell::RefCell::new(Vec::new());
        let bytes = |name: &str| -> Option<Section> {
            if let Some(s) = file.section_by_name(name) {
                if s.size() > MAX_SECTION_BYTES {
                    refused.borrow_mut().push(format!(
                        "{name} ({} bytes, over the cap of {} MiB)",
                        s.size(),
                        MAX_SECTION_BYTES >> 20
                    ));
                    return None;
                }
                if let Some((offset, size)) = s.file_range() {
                    if !dense(offset..offset.saturating_add(size)) {
                        refused.borrow_mut().push(format!(
                            "{name} ({size} bytes, not stored: a hole of a sparse file)"
                        ));
                        return None;
                    }
                }
            }
            let (start, data) = hood_symbols::section_data(&file, name, MAX_SECTION_BYTES)?;
            Some(Section {
                svma: start..start.checked_add(data.len() as u64)?,
                data: Arc::from(&*data),
            })
        };
        let eh_frame_hdr = bytes(".eh_frame_hdr");
        // Without the header's table, an `.eh_frame` that describes no function (only the
        // terminator that `-fno-asynchronous-unwind-tables` leaves) is no information at all.
        let eh_frame =
            bytes(".eh_frame").filter(|eh| eh_frame_hdr.is_some() || describes_code(&eh.data));
        let eh_frame_hdr = eh_frame_hdr.filter(|hdr| {
            eh_frame.as_ref().is_some_and(|eh| {
                let sound = hdr_table_sound(hdr, eh, range(".text"), range(".got"));
                if !sound {
                    refused.borrow_mut().push(
                        ".eh_frame_hdr (its table points before .eh_frame or cannot be read)"
                            .to_string(),
                    );
                }
                sound
            })
        });
        let debug_frame = bytes(".debug_frame").map(|s| s.data);
        let go_restorers = go_restorers(&file, dense);
        Ok(Image {
            name,
            loads,
            text: range(".text"),
            got: range(".got"),
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            build_id: file
                .build_id()
                .ok()
                .flatten()
                .and_then(hood_raw::BuildId::from_bytes),
            entry: file.entry(),
            refused: refused.into_inner(),
            go_restorers,
            facts: Mutex::default(),
        })
    }

    /// Read an image from a file on disk; see the module notes for what is trusted.
    pub(crate) fn read(path: &Path, name: String) -> Result<(Image, FileId), UnwindError> {
        let (file, id) = open_regular(path)?;
        let holes = file.try_clone().ok();
        let cache = ReadCache::new(file);
        let dense = |r: std::ops::Range<u64>| holes.as_ref().is_some_and(|f| no_hole(f, r));
        let image = Image::parse_dense(name, &cache, &dense)?;
        Ok((image, id))
    }

    /// Add `.debug_frame` from a separate debug file when the image itself has no call frame
    /// information (a stripped binary whose distribution moved everything to a -dbg package).
    pub(crate) fn add_debug_frame_from(&mut self, debug_file: &Path) {
        if self.has_cfi() {
            return;
        }
        if let Ok((dbg, _)) = Image::read(debug_file, String::new()) {
            self.debug_frame = dbg.debug_frame;
        }
    }
}

/// The addresses of Go's signal trampolines in a Go binary (one with `.gopclntab`), from its
/// symbol table: read only when the table and its strings are within [`MAX_SECTION_BYTES`]
/// and stored whole.
fn go_restorers<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    dense: &dyn Fn(std::ops::Range<u64>) -> bool,
) -> Vec<u64> {
    const NAMES: [&str; 4] = [
        "runtime.sigreturn.abi0",
        "runtime.sigreturn__sigaction.abi0",
        "runtime.sigreturn",
        "runtime.sigreturn__sigaction",
    ];
    if file.section_by_name(".gopclntab").is_none() {
        return Vec::new();
    }
    let sound = [".symtab", ".strtab"].iter().all(|name| {
        file.section_by_name(name).is_some_and(|s| {
            s.size() <= MAX_SECTION_BYTES
                && s.file_range()
                    .is_some_and(|(o, n)| dense(o..o.saturating_add(n)))
        })
    });
    if !sound {
        return Vec::new();
    }
    file.symbols()
        .filter(|s| s.address() != 0 && s.name().is_ok_and(|n| NAMES.contains(&n)))
        .map(|s| s.address())
        .collect()
}

/// Whether `range` of `file` is stored whole: no hole of a sparse file lies in it. A 64 MiB
/// `.eh_frame` of a user's binary that is one hole takes 4 KiB of their disk and would take
/// 64 MiB (twice, while it is read) of the recorder's memory per binary.
fn no_hole(file: &File, range: std::ops::Range<u64>) -> bool {
    if range.is_empty() {
        return true;
    }
    // The next hole at or after the start; the file's end counts as one.
    match rustix::fs::seek(file, rustix::fs::SeekFrom::Hole(range.start)) {
        Ok(hole) => hole >= range.end,
        // A file system without SEEK_HOLE reports none: the range is kept.
        Err(_) => true,
    }
}

/// Whether an `.eh_frame` section holds at least one FDE (checked without the header table).
fn describes_code(data: &[u8]) -> bool {
    let mut eh = EhFrame::new(data, LittleEndian);
    eh.set_address_size(8);
    let bases = BaseAddresses::default();
    let mut entries = eh.entries(&bases);
    while let Ok(Some(e)) = entries.next() {
        if matches!(e, gimli::CieOrFde::Fde(_)) {
            return true;
        }
    }
    false
}

/// Identity of a file on disk: a changed or replaced file is a different image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

/// Open `path` for reading: no final symlink, no blocking on a FIFO, regular files only,
/// of a size an ELF image can have.
pub(crate) fn open_regular(path: &Path) -> Result<(File, FileId), UnwindError> {
    let io = |e: std::io::Error| UnwindError::Open {
        path: path.to_path_buf(),
        source: e,
    };
    let file = hood_format::untrusted::open(path, hood_format::untrusted::Policy::NO_LINK)
        .map_err(|e| match e {
            hood_format::FormatError::Io { source, .. } => io(source),
            _ => UnwindError::NotAnImage {
                path: path.to_path_buf(),
            },
        })?;
    let md = file.metadata().map_err(io)?;
    if !md.file_type().is_file() || md.len() > MAX_IMAGE_BYTES {
        return Err(UnwindError::NotAnImage {
            path: path.to_path_buf(),
        });
    }
    let id = FileId {
        dev: md.dev(),
        ino: md.ino(),
        size: md.len(),
        mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
    };
    Ok((file, id))
}

/// Where to look for a mapped file: inside the process's root first (containers), then the
/// path as recorded.
pub(crate) fn candidate_paths(pid: Option<u32>, path: &str) -> Vec<PathBuf> {
    let mut out = Vec::with_capacity(2);
    if let Some(pid) = pid {
        out.push(PathBuf::from(format!("/proc/{pid}/root{path}")));
    }
    out.push(PathBuf::from(path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memo answers as the tables do, also after it starts over.
    #[test]
    fn remembered_facts_equal_the_tables_answers() {
        let exe = std::env::current_exe().expect("test binary");
        let (image, _) = Image::read(&exe, "test".into()).expect("readable ELF");
        let text = image.text.clone().expect("a .text section");
        let step = ((text.end - text.start) / (MAX_FACTS as u64 + 100)).max(1);
        let addrs: Vec<u64> = (text.start..text.end).step_by(step as usize).collect();
        assert!(addrs.len() > MAX_FACTS, "enough addresses to fill the memo");
        let fresh: Vec<Option<FdeFacts>> = addrs
            .iter()
            .map(|&a| {
                image.facts.lock().unwrap().clear();
                image.facts(a)
            })
            .collect();
        assert!(fresh.iter().filter(|f| f.is_some()).count() > addrs.len() / 2);
        for round in 0..2 {
            for (a, want) in addrs.iter().zip(&fresh) {
                assert_eq!(image.facts(*a), *want, "round {round} at {a:#x}");
            }
            assert!(image.facts.lock().unwrap().len() <= MAX_FACTS);
        }
    }
}
