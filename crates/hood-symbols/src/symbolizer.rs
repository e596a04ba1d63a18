//! The [`Symbolizer`]: one per report, caching every parsed source.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use blazesym::symbolize;

use crate::demangle::DemangleCache;
use crate::text::{parse_kallsyms_owned, parse_nm, parse_perf_map_lenient, SkippedLine};
use crate::{Resolution, SymbolError, SymbolTable, SymbolizerOptions, Unresolved};

/// Whether an ELF file may be read, decided once per file: the file to read and its
/// build-id, or why not.
pub(crate) type Verdict = Result<(PathBuf, Option<crate::BuildId>), Unresolved>;

/// Where a report's answers for ELF files came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SymbolStats {
    /// File offsets answered from the symbol cache, without reading symbol tables or DWARF.
    pub from_cache: u64,
    /// File offsets answered by reading the files' symbol tables and DWARF.
    pub from_files: u64,
}

/// Resolves addresses of every kind a hood recording holds; see the
/// crate documentation. Construct once per report and reuse: parsed ELF
/// files, kallsyms, perf maps and the symfile are cached.
///
/// Not `Send`: blazesym's caches are single-threaded. Symbolize on the
/// thread that created it (or create one per thread).
pub struct Symbolizer {
    pub(crate) opts: SymbolizerOptions,
    pub(crate) blaze: symbolize::Symbolizer,
    /// Memoizing demangler; `None` when demangling is off. blazesym's own
    /// demangling is off so that every source shares this memo.
    pub(crate) demangler: Option<DemangleCache>,
    kernel: Option<SymbolTable>,
    symfile: Option<SymbolTable>,
    /// (path as recorded, expected build-id) → verdict.
    pub(crate) files: HashMap<(PathBuf, Option<crate::BuildId>), Verdict>,
    /// Device and inode of each binary whose build-id was checked: what is read later must be
    /// that file.
    pub(crate) checked: HashMap<PathBuf, (u64, u64)>,
    /// binary as read → its separate debug file, if any.
    pub(crate) debug_files: HashMap<PathBuf, Option<crate::debugfile::DebugFile>>,
    /// Files whose DWARF parser panicked: read for names only from then on.
    pub(crate) dwarf_broken: HashSet<PathBuf>,
    /// The debuginfod client, when configured.
    pub(crate) debuginfod: Option<crate::debuginfod::Debuginfod>,
    /// Decompressed copies of compressed DWARF, when a cache is configured.
    pub(crate) unpacker: Option<crate::unpacked::Unpacker>,
    /// Kept answers per binary, when a symbol cache is configured.
    pub(crate) answers: Option<crate::answers::Answers>,
    /// Binaries whose answers are not kept in this report (reading them was warned about).
    pub(crate) unkept: HashSet<PathBuf>,
    pub(crate) stats: SymbolStats,
    /// binary as read → its PLT stubs.
    pub(crate) plts: HashMap<PathBuf, crate::plt::Plt>,
    /// image key → (hash of the bytes, temp file holding them or why not).
    pub(crate) images: HashMap<String, (u64, Result<tempfile::TempPath, Unresolved>)>,
    /// pid → (hash of the map text, parsed table).
    perf_maps: HashMap<u32, (u64, SymbolTable)>,
    warnings: Vec<String>,
    warned: HashSet<String>,
}

/// A larger `--symfile` is refused (nm's output for the largest binaries is a few hundred MB
/// less than this).
pub(crate) const MAX_SYMFILE: u64 = 1 << 30;

impl Symbolizer {
    /// Creates a symbolizer; reads and parses `opts.symfile` if given.
    ///
    /// Errors: the symfile cannot be read ([`SymbolError::Io`]) or has a
    /// malformed line ([`SymbolError::BadLine`], naming file and line).
    pub fn new(opts: SymbolizerOptions) -> Result<Self, SymbolError> {
        let symfile = match &opts.symfile {
            Some(path) => {
                let text = hood_format::untrusted::read_all(path, crate::open::DEBUG, MAX_SYMFILE)
                    .map_err(crate::open::refused)?;
                let text = String::from_utf8_lossy(&text);
                Some(parse_nm(&path.display().to_string(), &text)?)
            }
            None => None,
        };
        let blaze = symbolize::Symbolizer::builder()
            .enable_code_info(true)
            .enable_inlined_fns(opts.inlined)
            .enable_demangling(false)
            // Separate debug files are found here (debugfile.rs), by build-id and debug
            // link with their checks; blazesym is handed the file to read.
            .set_debug_dirs(Some(Vec::<PathBuf>::new()))
            // Files are handed over as /proc/self/fd/N (elf.rs): a number reused for another
            // file must be seen as another file (blazesym compares device, inode, size and
            // time on every use when reloading is on).
            .enable_auto_reload(true)
            .build();
        let demangler = opts.demangle.then(|| DemangleCache::new(opts.full_names));
        let debuginfod = opts
            .debuginfod
            .clone()
            .map(crate::debuginfod::Debuginfod::new);
        let unpacker = opts.dwarf_cache.clone().map(crate::unpacked::Unpacker::new);
        let answers = opts.symbol_cache.clone().map(crate::answers::Answers::new);
        Ok(Symbolizer {
            opts,
            blaze,
            demangler,
            kernel: None,
            symfile,
            files: HashMap::new(),
            checked: HashMap::new(),
            debug_files: HashMap::new(),
            dwarf_broken: HashSet::new(),
            debuginfod,
            unpacker,
            answers,
            unkept: HashSet::new(),
            stats: SymbolStats::default(),
            plts: HashMap::new(),
            images: HashMap::new(),
            perf_maps: HashMap::new(),
            warnings: Vec::new(),
            warned: HashSet::new(),
        })
    }

    /// Loads the stored text of `/proc/kallsyms` (replacing any earlier
    /// one) and returns the number of code symbols it provides. Text read
    /// without privileges (all addresses zero) provides none, with a
    /// warning that says so. Given a `String`, the text is indexed in place, not copied.
    pub fn set_kallsyms(&mut self, text: impl Into<String>) -> usize {
        let (table, skipped) = parse_kallsyms_owned(text.into());
        self.set_kernel_table(table, skipped)
    }

    /// Installs a kernel table parsed elsewhere (e.g. on another thread with
    /// [`parse_kallsyms_owned`](crate::text::parse_kallsyms_owned)) and the lines
    /// that parse skipped; returns the number of code symbols, as
    /// [`set_kallsyms`](Self::set_kallsyms) does.
    pub fn set_kernel_table(&mut self, table: SymbolTable, skipped: Vec<SkippedLine>) -> usize {
        if let Some((line, reason)) = skipped.first() {
            self.warn(
                "kallsyms-bad-lines".into(),
                format!(
                    "kallsyms: {} malformed line(s) skipped (first at line {line}: {reason})",
                    skipped.len()
                ),
            );
        }
        if !table.is_empty() && table.all_zero() {
            self.warn(
                "kallsyms-zero".into(),
                "kallsyms: every address is zero: the recording machine hid kernel \
                 addresses from the recorder (kernel.kptr_restrict, or, for an ordinary user, \
                 kernel.perf_event_paranoid >= 2); kernel frames are left unresolved. Fix: \
                 record again as root (`hood record` names the setting that hides them)"
                    .into(),
            );
            self.kernel = None;
            return 0;
        }
        let n = table.text_len();
        self.kernel = Some(table);
        n
    }

    /// Resolves kernel addresses against the kallsyms given to
    /// [`set_kallsyms`](Self::set_kallsyms); without one, every address is
    /// [`Unresolved::NoSource`] (warned once).
    pub fn symbolize_kernel(&mut self, addrs: &[u64]) -> Vec<Resolution> {
        match &self.kernel {
            Some(table) => addrs.iter().map(|&a| table.lookup(a)).collect(),
            None => {
                if !addrs.is_empty() {
                    self.warn(
                        "kallsyms-none".into(),
                        "no usable kernel symbol table in the recording; \
                         kernel frames are left unresolved"
                            .into(),
                    );
                }
                vec![Err(Unresolved::NoSource); addrs.len()]
            }
        }
    }

    /// Resolves absolute addresses of process `pid` against the text of its
    /// JIT map `/tmp/perf-PID.map` (`START SIZE NAME`, hex). The text is
    /// parsed once per pid (again only if a different text is given);
    /// malformed lines are skipped with one warning naming the first.
    pub fn symbolize_perf_map(
        &mut self,
        pid: u32,
        map_text: &str,
        addrs: &[u64],
    ) -> Vec<Resolution> {
        let hash = hash_of(map_text.as_bytes());
        if self.perf_maps.get(&pid).map(|(h, _)| *h) != Some(hash) {
            let (table, skipped) = parse_perf_map_lenient(map_text);
            if let Some((line, reason)) = skipped.first() {
                self.warn(
                    format!("perf-map-{pid}"),
                    format!(
                        "/tmp/perf-{pid}.map: {} malformed line(s) skipped \
                         (first at line {line}: {reason}; expected \"START SIZE NAME\" in hex)",
                        skipped.len()
                    ),
                );
            }
            self.perf_maps.insert(pid, (hash, table));
        }
        let dm = &mut self.demangler;
        match self.perf_maps.get(&pid) {
            Some((_, table)) => addrs.iter().map(|&a| named(table, a, dm)).collect(),
            None => vec![Err(Unresolved::NoSource); addrs.len()],
        }
    }

    /// Resolves absolute addresses against the nm-format `--symfile`; without
    /// one, every address is [`Unresolved::NoSource`].
    pub fn symbolize_symfile(&mut self, addrs: &[u64]) -> Vec<Resolution> {
        let dm = &mut self.demangler;
        match &self.symfile {
            Some(table) => addrs.iter().map(|&a| named(table, a, dm)).collect(),
            None => vec![Err(Unresolved::NoSource); addrs.len()],
        }
    }

    /// Warnings gathered so far, one per problem file or source, in the
    /// order they arose, e.g. "binary /usr/bin/x changed since recording
    /// (build-id abc… recorded, def… now); its frames are left unresolved".
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// How many ELF file offsets were answered from the symbol cache and how many from the
    /// files themselves, so far.
    pub fn stats(&self) -> SymbolStats {
        self.stats
    }

    /// Records `msg` unless a warning with the same `key` was recorded.
    pub(crate) fn warn(&mut self, key: String, msg: String) {
        if self.warned.insert(key) {
            self.warnings.push(msg);
        }
    }
}

/// Looks `addr` up in a text table and demangles the name if asked.
fn named(table: &SymbolTable, addr: u64, demangler: &mut Option<DemangleCache>) -> Resolution {
    let mut sym = table.lookup(addr)?;
    if let Some(d) = demangler {
        d.apply(&mut sym.name);
    }
    Ok(sym)
}

/// A 64-bit hash to notice that a cached source was replaced.
pub(crate) fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}
