//! Owns names and lines: ELF symbols, DWARF lines and inlined frames, separate debug files,
//! debuginfod, the DWARF cache, the symbol cache of answers per binary, kallsyms, perf maps,
//! symfiles, and the source text and machine code `hood annotate` shows. May depend on
//! blazesym, object and ureq, on hood-format for its door to untrusted files (every file
//! here is opened through [`hood_format::untrusted`]), and on hood-raw for [`BuildId`].
//!
//! Address → symbol resolution for hood reports.
//!
//! The report pipeline aggregates raw sample addresses first, converts each
//! user address to (mapped file, file offset) itself, and then asks this
//! crate to name each *unique* location once, in batches per source:
//!
//! * ELF files by file offset ([`Symbolizer::symbolize_file`]) — executables,
//!   PIE and shared libraries alike, checked against the build-id recorded
//!   at recording time; with DWARF (in the file or a separate debug file) each
//!   answer also carries file:line and the functions inlined there;
//! * in-memory ELF images such as the recorded `[vdso]`
//!   ([`Symbolizer::symbolize_image`]);
//! * the kernel, from a stored copy of `/proc/kallsyms`
//!   ([`Symbolizer::set_kallsyms`], [`Symbolizer::symbolize_kernel`]);
//! * JIT perf maps `/tmp/perf-PID.map` ([`Symbolizer::symbolize_perf_map`]);
//! * an nm-format `--symfile` as the last resort
//!   ([`Symbolizer::symbolize_symfile`]).
//!
//! The other way round, [`function_symbols`] lists an ELF file's functions by address, for
//! `hood trace record --filter/--exclude` to turn name globs into address ranges.
//!
//! Every lookup answers with a [`Resolution`]: a [`Sym`] or the reason
//! ([`Unresolved`]) it has no name. Problems that concern a whole file
//! (missing, changed since recording) are also reported once, in words, via
//! [`Symbolizer::warnings`].
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod answers;
mod cache;
mod debugfile;
mod debuginfod;
mod decl;
mod demangle;
mod elf;
mod elfread;
mod error;
mod funcs;
mod inlined;
mod open;
mod plt;
pub mod probe;
mod section;
mod source;
mod symbolizer;
mod table;
pub mod text;
mod unpacked;

use std::fmt;
use std::path::PathBuf;

pub use answers::{SymbolCacheConfig, DEFAULT_MAX_BYTES as SYMBOL_CACHE_DEFAULT_MAX_BYTES};
pub use debugfile::debug_file_path;
pub use debuginfod::{DebuginfodConfig, Progress};
pub use demangle::{demangle, demangle_short};
pub use elfread::{build_id_from_bytes, build_id_from_notes, kernel_build_id, read_build_id};
pub use error::SymbolError;
pub use funcs::{function_symbols, function_symbols_of, FunctionSymbol};
pub use hood_raw::BuildId;
pub use section::section_data;
pub use source::{read_source, read_source_for, FunctionCode};
pub use symbolizer::{SymbolStats, Symbolizer};
pub use table::SymbolTable;
pub use unpacked::{DwarfCacheConfig, DEFAULT_MAX_BYTES as DWARF_CACHE_DEFAULT_MAX_BYTES};

/// A resolved symbol.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sym {
    /// Function name (demangled if [`SymbolizerOptions::demangle`]); kernel
    /// module functions are named `func [module]`.
    pub name: String,
    /// Distance of the looked-up address from the symbol's start.
    pub offset: u64,
    /// Symbol size in bytes, when the source records it.
    pub size: Option<u64>,
    /// Source file and line of the address within this function, from DWARF line tables:
    /// where the address is in inlined code, the line of the outermost inlined call.
    /// `None` without debug info (and for text sources such as kallsyms).
    pub code: Option<SourceLine>,
    /// Functions inlined at the address, innermost first (what `addr2line -i` prints
    /// before the function itself); empty without DWARF or when
    /// [`SymbolizerOptions::inlined`] is off.
    pub inlined: Vec<InlinedFrame>,
    /// The line of the function's first instruction (where its definition starts, as
    /// compilers attribute the prologue), from DWARF.
    pub start_line: Option<u32>,
}

/// A source position: file path (as the compiler recorded it, directory joined) and line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceLine {
    /// Path of the source file.
    pub file: String,
    /// 1-based line (0: the compiler gave the address no line).
    pub line: u32,
}

/// One inlined function at an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlinedFrame {
    /// Its name (demangled like [`Sym::name`]).
    pub name: String,
    /// Where in it the address is: for the innermost frame the address's own line, for
    /// the others the line of the call inlined into them.
    pub code: Option<SourceLine>,
    /// The line its definition starts on (DWARF's `DW_AT_decl_line`), as pprof's
    /// `Function.start_line` wants it.
    pub start_line: Option<u32>,
}

/// Why a location has no symbol name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Unresolved {
    /// The mapped file is not present (at the path under
    /// [`SymbolizerOptions::root`]).
    FileMissing,
    /// The file on disk is not the one that was profiled: its build-id
    /// differs from (or lacks) the recorded one.
    BuildIdMismatch,
    /// The source was read but no code symbol covers the location.
    NoSymbol,
    /// The file or image is not a valid ELF object.
    NotElf,
    /// No source to ask: no kallsyms in the recording, no `--symfile` given.
    NoSource,
    /// Anything else (unreadable file, parse failure), in words.
    Other(String),
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unresolved::FileMissing => f.write_str("file missing"),
            Unresolved::BuildIdMismatch => f.write_str("binary changed since recording"),
            Unresolved::NoSymbol => f.write_str("no symbol"),
            Unresolved::NotElf => f.write_str("not an ELF file"),
            Unresolved::NoSource => f.write_str("no symbol source"),
            Unresolved::Other(s) => f.write_str(s),
        }
    }
}

/// The answer for one address or offset.
pub type Resolution = Result<Sym, Unresolved>;

/// Configuration of a [`Symbolizer`] (built by the binary from its CLI).
#[derive(Clone, Debug)]
pub struct SymbolizerOptions {
    /// An nm-format symbol file (`nm prog > syms`) for [`Symbolizer::symbolize_symfile`].
    pub symfile: Option<PathBuf>,
    /// Demangle Rust and C++ names (default `true`).
    pub demangle: bool,
    /// Keep whole demangled signatures, C++ parameter lists and return types included
    /// (default `false`: names are shortened as perf prints them, `ns::Class<T>::method`;
    /// Rust names never carry their hash).
    pub full_names: bool,
    /// Prefix for every file path, e.g. a copy of the profiled machine's
    /// root file system (default none: paths are used as recorded).
    pub root: Option<PathBuf>,
    /// Directories searched for separate debug files, in order: by build-id
    /// (`DIR/.build-id/XX/YYYY.debug`, with the same build-id inside), then by the binary's
    /// `.gnu_debuglink` (`DIR/BINARY_DIR/NAME` and `DIR/NAME`, with the CRC it names; the
    /// binary's own directory and its `.debug/` are tried first). A binary's debug file is
    /// read instead of the binary (default `/usr/lib/debug`, under [`root`](Self::root) if
    /// set).
    pub debug_dirs: Vec<PathBuf>,
    /// Read DWARF debug info for inlined functions (default `true`); file:line is read
    /// either way when the binary or its debug file has DWARF.
    pub inlined: bool,
    /// Fetch the debug files of binaries that have neither DWARF nor a local debug file
    /// from debuginfod servers (default `None`; [`DebuginfodConfig::from_env`] reads
    /// `DEBUGINFOD_URLS` as perf and gdb do).
    pub debuginfod: Option<DebuginfodConfig>,
    /// Keep decompressed copies of files whose DWARF is compressed (Debian's debug files),
    /// so that later reports read it in place (default `None`;
    /// [`DwarfCacheConfig::from_env`] gives the cache `hood report` uses).
    pub dwarf_cache: Option<DwarfCacheConfig>,
    /// Keep each binary's answers by build-id, so that later reports answer the same
    /// offsets without reading its symbol tables and DWARF again (default `None`;
    /// [`SymbolCacheConfig::from_env`] gives the cache `hood report` uses).
    pub symbol_cache: Option<SymbolCacheConfig>,
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        SymbolizerOptions {
            symfile: None,
            demangle: true,
            full_names: false,
            root: None,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            inlined: true,
            debuginfod: None,
            dwarf_cache: None,
            symbol_cache: None,
        }
    }
}
