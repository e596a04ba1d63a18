//! Processes' executable mappings over time, and the images behind them.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use framehop::x86_64::{CacheX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};
use hood_raw::maps::{AddressSpace, Change, Processes};
use rustc_hash::FxHashMap;

use crate::image::{candidate_paths, Bytes, FileId, Image};
use crate::{Options, Stats, Truncation, UserRegs};

/// After this many module changes, framehop's rule cache (keyed by a 16-bit generation that
/// wraps) is started afresh so an old rule can never be taken for a new module's.
const CACHE_RESET_CHANGES: u32 = 30_000;
/// Executable mappings followed per process (the one cap of hood-raw's address spaces): past
/// this many, new ones are not followed (counted in [`Stats::mappings_dropped`], said once per
/// process).
pub use hood_raw::maps::MAX_MAPPINGS;
/// A process whose code addresses miss every known mapping has its `/proc/PID/maps` re-read
/// at most this often.
const REFRESH_EVERY: Duration = Duration::from_millis(250);

/// What the unwinder holds of one executable mapping.
#[derive(Debug, Clone)]
pub(crate) struct Mapped {
    /// Where svma 0 of the image lies in the process.
    pub bias: u64,
    /// `None`: anonymous memory (JIT code) or a file that could not be read.
    pub image: Option<Arc<Image>>,
    /// Path or pseudo-name as recorded.
    pub name: Arc<str>,
}

/// One process's executable mappings and framehop's view of them.
#[derive(Clone, Default)]
pub(crate) struct Space {
    pub fh: UnwinderX86_64<Bytes>,
    pub maps: AddressSpace<Mapped>,
}

impl Space {
    /// The mapping holding `addr`.
    pub(crate) fn lookup(&self, addr: u64) -> Option<&Mapped> {
        self.maps.get(addr).map(|(_, m)| &m.value)
    }

    /// Put `m` at `start..end` (from file offset `pgoff`) in place of what it overlaps (the parts of an old mapping
    /// outside it stay); `false` (and nothing changed) when that would make more than
    /// [`MAX_MAPPINGS`].
    fn insert(
        &mut self,
        (start, end, pgoff): (u64, u64, u64),
        m: Mapped,
        changes: &mut u32,
    ) -> bool {
        let fh = &mut self.fh;
        self.maps.insert_with(start, end, pgoff, m, |c| match c {
            Change::Removed(s) => {
                fh.remove_module(s);
                *changes += 1;
            }
            Change::Added {
                start, end, value, ..
            } => {
                if let Some(img) = &value.image {
                    let info = ExplicitModuleSectionInfo {
                        base_svma: 0,
                        text_svma: img.text.clone(),
                        got_svma: img.got.clone(),
                        eh_frame_svma: img.eh_frame.as_ref().map(|s| s.svma.clone()),
                        eh_frame: img.eh_frame.as_ref().map(|s| s.data.clone()),
                        eh_frame_hdr_svma: img.eh_frame_hdr.as_ref().map(|s| s.svma.clone()),
                        eh_frame_hdr: img.eh_frame_hdr.as_ref().map(|s| s.data.clone()),
                        debug_frame: img.debug_frame.clone(),
                        ..Default::default()
                    };
                    fh.add_module(Module::new(
                        value.name.to_string(),
                        start..end,
                        value.bias,
                        info,
                    ));
                    *changes += 1;
                }
            }
        })
    }
}

/// Unwinds the user stacks of samples, following processes' mappings over time.
pub struct Unwinder {
    opts: Options,
    /// Images by file identity (`None`: not an ELF image hood can read).
    images: FxHashMap<FileId, Option<Arc<Image>>>,
    /// Paths that could not be opened, so they are not retried for every mapping.
    unreadable: BTreeSet<String>,
    /// Mapping names, each held once however many mappings name it.
    names: rustc_hash::FxHashSet<Arc<str>>,
    /// Size of `names` at which the unused ones are dropped.
    names_high: usize,
    vdso: Option<Arc<Image>>,
    pub(crate) spaces: Processes<Space>,
    pub(crate) cache: CacheX86_64,
    changes: u32,
    refreshed: FxHashMap<u32, Instant>,
    /// Images already warned about, and warnings not yet taken.
    warned: BTreeSet<String>,
    warnings: Vec<String>,
    pub(crate) stats: Stats,
    /// Set by the last walk that ended at a signal frame whose interrupted code's stack was
    /// not copied: the index in its chain of the signal trampoline's frame.
    pub(crate) other_stack_at: Option<usize>,
}

impl Unwinder {
    /// An unwinder that knows no process yet.
    pub fn new(opts: Options) -> Unwinder {
        Unwinder {
            opts,
            images: FxHashMap::default(),
            unreadable: BTreeSet::new(),
            names: Default::default(),
            names_high: 1024,
            vdso: None,
            spaces: Processes::default(),
            cache: CacheX86_64::new(),
            changes: 0,
            refreshed: FxHashMap::default(),
            warned: BTreeSet::new(),
            warnings: Vec::new(),
            stats: Stats::default(),
            other_stack_at: None,
        }
    }

    /// The vDSO image every process maps as `[vdso]` (the same kernel's, so the recorder's
    /// own copy will do).
    pub fn set_vdso(&mut self, bytes: &[u8]) {
        self.vdso = Image::parse("[vdso]".into(), bytes).ok().map(Arc::new);
    }

    /// What the unwinder did so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// When the last [`Unwinder::unwind`] stopped right after a signal frame because the
    /// interrupted code's stack was not in the copy (a handler on an alternate signal stack,
    /// as Go's are, or a stack deeper than the copy), the index in its `out` of the signal
    /// trampoline's frame: the frames before it are the handler's, and a frame-pointer chain
    /// taken by the kernel goes on past the one just before it into the interrupted code's
    /// callers. The interrupted instruction follows the trampoline.
    pub fn signal_stack_switch(&self) -> Option<usize> {
        self.other_stack_at
    }

    /// Notes for the user gathered since the last call (an image with no unwind information,
    /// once per image).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Load every executable mapping of `pid` from the text of its `/proc/PID/maps`.
    pub fn load_proc_maps(&mut self, pid: u32, text: &str) {
        for m in text.lines().filter_map(hood_raw::maps::parse_maps_line) {
            if m.is_exec() {
                self.mmap(pid, m.start, m.end - m.start, m.offset, m.path, None);
            }
        }
    }

    /// `pid` mapped `len` bytes of `path` at `start` from file offset `pgoff` (an executable
    /// mapping; `build_id` when the kernel reported it).
    pub fn mmap(
        &mut self,
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &str,
        build_id: Option<&hood_raw::BuildId>,
    ) {
        let Some(end) = start.checked_add(len).filter(|_| len > 0) else {
            return;
        };
        let image = self.image_for(pid, path, build_id);
        let bias = image
            .as_ref()
            .and_then(|i| i.svma_of_offset(pgoff))
            .and_then(|svma| start.checked_sub(svma));
        let image = image.filter(|_| bias.is_some());
        let name = match self.names.get(path) {
            Some(n) => n.clone(),
            None => {
                if self.names.len() >= self.names_high {
                    // Names no mapping holds any more go, so a process that maps ever new
                    // paths does not grow the set.
                    self.names.retain(|n| Arc::strong_count(n) > 1);
                    self.names_high = (2 * self.names.len()).max(1024);
                }
                let n: Arc<str> = Arc::from(path);
                self.names.insert(n.clone());
                n
            }
        };
        let m = Mapped {
            bias: bias.unwrap_or(0),
            image,
            name,
        };
        if !self
            .spaces
            .entry(pid)
            .insert((start, end, pgoff), m, &mut self.changes)
        {
            self.stats.mappings_dropped += 1;
            if self.warned.insert(format!("mappings of {pid}")) {
                self.warnings.push(format!(
                    "pid {pid}: more than {MAX_MAPPINGS} executable mappings; those past them \
                     are not followed (a cap on what one process may make root's recorder \
                     hold), so stacks through their code end early"
                ));
            }
        }
        if self.changes >= CACHE_RESET_CHANGES {
            self.cache = CacheX86_64::new();
            self.changes = 0;
        }
    }

    /// A new process `pid` forked from `ppid` (threads share their process's mappings and
    /// need no call).
    pub fn fork(&mut self, ppid: u32, pid: u32) {
        self.spaces.fork(ppid, pid);
    }

    /// `pid` called exec: its old mappings are gone.
    pub fn exec(&mut self, pid: u32) {
        self.spaces.exec(pid);
    }

    /// `pid` exited.
    pub fn exit(&mut self, pid: u32) {
        self.spaces.exit(pid);
        self.refreshed.remove(&pid);
    }

    /// Unwind one sample of `pid` from `regs` over `stack` (the bytes copied from `regs.sp`
    /// upwards), appending the instruction pointer and then the return addresses to `out`
    /// (an address that is an interrupted instruction rather than a return address, below a
    /// signal frame, is stored plus one, so that every frame after the first can be looked
    /// up at `address - 1`). Returns why the chain stops early, if it does.
    pub fn unwind(
        &mut self,
        pid: u32,
        regs: UserRegs,
        stack: &[u8],
        out: &mut Vec<u64>,
    ) -> Option<Truncation> {
        if self.opts.live {
            let known = self
                .spaces
                .get(pid)
                .is_some_and(|s| s.lookup(regs.ip).is_some());
            if !known {
                self.refresh(pid);
            }
        }
        // The rules come from files any user can write: should a malformed one trip a bug in
        // the parsers, this sample's stack is marked as failed and the recording goes on.
        let mark = out.len();
        let t = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::walk::walk(self, pid, regs, stack, out)
        }))
        .unwrap_or_else(|_| {
            out.truncate(mark);
            out.push(regs.ip);
            Some(Truncation::Failed)
        });
        self.stats.stacks += 1;
        match t {
            None => self.stats.complete += 1,
            Some(t) => {
                self.stats.truncated[t.code() as usize] += 1;
                if t == Truncation::NoUnwindInfo {
                    self.warn_no_cfi(pid, out.last().copied());
                }
            }
        }
        t
    }

    /// Re-read `/proc/PID/maps` with [`Options::read_maps`](crate::Options::read_maps) (a
    /// process started or mapped code before the recorder saw it).
    fn refresh(&mut self, pid: u32) {
        let Some(read_maps) = self.opts.read_maps.clone() else {
            return;
        };
        let now = Instant::now();
        if self
            .refreshed
            .get(&pid)
            .is_some_and(|t| now.duration_since(*t) < REFRESH_EVERY)
        {
            return;
        }
        self.refreshed.insert(pid, now);
        // Line by line: a process of a user's can have 65,530 mappings of 4 KiB paths, a
        // quarter of a gigabyte of text; only its executable lines are kept, up to the cap.
        read_maps.read(pid, &mut |line| {
            self.load_proc_maps(pid, line);
            true
        });
    }

    /// Warn once per image about code that stopped a stack for want of call frame
    /// information. Only an ELF image read from a file is named: anonymous memory (`//anon`,
    /// JIT code) is no binary anyone can rebuild, and its truncation frame says what it is.
    fn warn_no_cfi(&mut self, pid: u32, addr: Option<u64>) {
        let Some(m) = addr.and_then(|a| self.spaces.get(pid)?.lookup(a.saturating_sub(1))) else {
            return;
        };
        let Some(image) = m.image.as_ref().filter(|_| m.name.starts_with('/')) else {
            return;
        };
        if self.warned.insert(m.name.to_string()) {
            self.warnings.push(no_cfi_warning(&m.name, image.has_cfi()));
        }
    }

    /// The image behind `path` as `pid` sees it, read once per file.
    fn image_for(
        &mut self,
        pid: u32,
        path: &str,
        build_id: Option<&hood_raw::BuildId>,
    ) -> Option<Arc<Image>> {
        if path == "[vdso]" {
            return self.vdso.clone();
        }
        if !path.starts_with('/') || path.ends_with(" (deleted)") {
            return None;
        }
        let pid = self.opts.live.then_some(pid);
        for candidate in candidate_paths(pid, path) {
            if candidate.as_os_str() == path && self.unreadable.contains(path) {
                return None;
            }
            let Ok((file, id)) = crate::image::open_regular(&candidate) else {
                continue;
            };
            drop(file);
            if let Some(known) = self.images.get(&id) {
                return known.clone().filter(|i| build_id_matches(i, build_id));
            }
            let image =
                Image::read(&candidate, path.to_string())
                    .ok()
                    .map(|(mut img, _)| {
                        if !img.has_cfi() {
                            if let Some(dbg) = img.build_id.as_ref().and_then(|b| {
                                hood_symbols::debug_file_path(b, &self.opts.debug_dirs)
                            }) {
                                img.add_debug_frame_from(&dbg);
                            }
                        }
                        Arc::new(img)
                    });
            if let Some(img) = image.as_ref().filter(|i| !i.refused.is_empty()) {
                if self.warned.insert(format!("refused {path}")) {
                    self.warnings.push(format!(
                        "{path}: unwind information not read: {}; stacks through its code end \
                         there (hood keeps no unwind section over {} MiB, nor one that is a \
                         hole of a sparse file)",
                        img.refused.join(", "),
                        crate::image::MAX_SECTION_BYTES >> 20
                    ));
                }
            }
            self.stats.images += u64::from(image.is_some());
            self.images.insert(id, image.clone());
            return image.filter(|i| build_id_matches(i, build_id));
        }
        self.unreadable.insert(path.to_string());
        None
    }

    /// Directories searched for debug files.
    pub fn debug_dirs(&self) -> &[PathBuf] {
        &self.opts.debug_dirs
    }
}

/// A file whose build-id differs from the one the kernel reported is another build of the
/// binary: its unwind rules would be wrong.
fn build_id_matches(image: &Image, want: Option<&hood_raw::BuildId>) -> bool {
    match (want, image.build_id.as_ref()) {
        (Some(w), Some(have)) => w == have,
        _ => true,
    }
}

impl hood_raw::replay::StackUnwinder for Unwinder {
    fn mmap(&mut self, m: &hood_raw::records::Mapping) {
        Unwinder::mmap(
            self,
            m.pid,
            m.start,
            m.len,
            m.pgoff,
            &m.filename,
            m.build_id.as_ref(),
        );
    }
    fn exec(&mut self, pid: u32) {
        Unwinder::exec(self, pid);
    }
    fn fork(&mut self, ppid: u32, pid: u32) {
        Unwinder::fork(self, ppid, pid);
    }
    fn exit(&mut self, pid: u32) {
        Unwinder::exit(self, pid);
    }
    fn unwind(
        &mut self,
        pid: u32,
        regs: [u64; 3],
        stack: &[u8],
        out: &mut Vec<u64>,
    ) -> Option<Truncation> {
        let [ip, sp, bp] = regs;
        Unwinder::unwind(self, pid, UserRegs { ip, sp, bp }, stack, out)
    }
}

/// The warning for an image whose code stopped a stack for want of call frame information:
/// one that has none at all, or one whose `.eh_frame` leaves some code out (code generated or
/// written by hand: V8's builtins in node, assembly). The walk follows frame pointers through
/// such code where a step by them is plausible, so a stack stopped there met none to follow.
pub(crate) fn no_cfi_warning(name: &str, has_cfi: bool) -> String {
    if has_cfi {
        format!(
            "{name}: some of its code is not described by its call frame information \
             (.eh_frame), and where a stack met that code no frame pointer led on, so stacks \
             through it stop there; such code is generated or written by hand (V8's builtins \
             in node, assembly). Fix: nothing to fix when the report's share of these stacks \
             is small; for your own assembly, add call frame information (`.cfi_` directives) \
             or keep a frame pointer (`push rbp; mov rbp, rsp`)"
        )
    } else {
        format!(
            "{name} has no call frame information (.eh_frame or .debug_frame), and where a \
             stack met its code no frame pointer led on, so stacks through its code stop \
             there. Fix: install its debug file under /usr/lib/debug/.build-id, or rebuild it \
             with -fasynchronous-unwind-tables (the gcc/clang default) or \
             -fno-omit-frame-pointer"
        )
    }
}
