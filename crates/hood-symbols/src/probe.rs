//! Probe specs (`hood trace record --probe`, `hood calls run --probe`): which functions of which
//! ELF files a uprobe goes on, and where in the file each one starts.
//!
//! A spec is `GLOB` (functions of the main executable) or `OBJECT:GLOB` (`libc.so.6:malloc`,
//! `libc:str*`, `/usr/lib/x.so:f`, `prog:Foo::bar`; the first `:` not part of a `::` splits
//! them). `GLOB` (`*` any run, `?` one character) is matched against a function's raw symbol
//! name, its demangled name without parameters (`ns::Box<int>::get`) and its whole demangled
//! signature. `OBJECT` names the executable (its file name), a library by file name (`libc`
//! stands for `libc.so*`), glob, or path.
//!
//! Every file is opened once, through [`hood_format::untrusted`], and kept open: the uprobe is
//! placed on that very file (through `/proc/self/fd`), whatever is renamed over its path later.
//! A function's file offset comes from the executable `PT_LOAD` segment holding its address.
//! Go executables are recognised (`.go.buildinfo`, `.gopclntab`): a uretprobe replaces the
//! return address on the goroutine's stack, which Go's stack growth copies and checks, so their
//! functions get an entry probe only ([`EntryOnly::Go`]): calls counted, no times.
//!
//! A function the compiler also inlined into its callers has copies no symbol names: they are
//! found in the file's DWARF (`DW_TAG_inlined_subroutine`, this crate's `inlined` module) and
//! probed at the address each is entered at, entry only ([`EntryOnly::Inlined`]: an inlined
//! copy has no return to probe), under the function's name with [`INLINED_SUFFIX`].

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use object::elf::{
    DT_NEEDED, DT_RPATH, DT_RUNPATH, EM_X86_64, PF_X, PT_INTERP, PT_LOAD, SHT_DYNAMIC,
};
use object::read::elf::{Dyn as _, FileHeader as _, ProgramHeader as _, SectionHeader as _};
use object::read::ReadCache;

use crate::elfread::{sections64, MAX_TABLE};
use crate::open::Policy;
use crate::SymbolError;

/// More matching functions than this are refused unless the caller says yes (`--yes`).
pub const CONFIRM_ABOVE: usize = 1000;

/// Most ELF files looked at for one selection (the executable and its libraries).
const MAX_OBJECTS: usize = 256;

/// One `--probe` spec, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSpec {
    /// The spec as given.
    pub text: String,
    /// The object part (`libc.so.6`), if any.
    pub object: Option<String>,
    /// The function glob.
    pub pattern: String,
}

/// Split `text` at its first `:` that is not part of a `::`.
pub fn parse_spec(text: &str) -> Result<ProbeSpec, SymbolError> {
    let b = text.as_bytes();
    let split = (0..b.len())
        .find(|&i| b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':'));
    let (object, pattern) = match split {
        Some(i) => (Some(text[..i].to_string()), text[i + 1..].to_string()),
        None => (None, text.to_string()),
    };
    let bad = |reason: &str| SymbolError::Probe {
        spec: text.to_string(),
        reason: reason.to_string(),
    };
    if pattern.is_empty() {
        return Err(bad(
            "no function named: write GLOB, or OBJECT:GLOB (e.g. 'parse_*', 'libc.so.6:malloc')",
        ));
    }
    if object.as_deref() == Some("") {
        return Err(bad(
            "empty object before ':': write OBJECT:GLOB or just GLOB",
        ));
    }
    Ok(ProbeSpec {
        text: text.to_string(),
        object,
        pattern,
    })
}

/// Simple glob: `*` any run, `?` any one character.
pub fn glob(pat: &str, s: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pat.chars().collect(), s.chars().collect());
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// An ELF file probes may go on, opened and checked.
#[derive(Debug)]
pub struct ProbeObject {
    /// Its path (as found or named).
    pub path: PathBuf,
    /// The open file: the uprobe is placed on this one (`/proc/self/fd/N`).
    pub file: File,
    /// Why return probes cannot be used in it (a Go executable), if so: its functions are
    /// probed at entry only.
    pub no_returns: Option<String>,
}

/// Appended to the name of a function's inlined copies (their calls are counted apart from
/// the out-of-line copy's, which have times).
pub const INLINED_SUFFIX: &str = " [inlined]";

/// Why a point gets an entry probe and no return probe: its calls are counted, not timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryOnly {
    /// A copy of the function the compiler inlined into a caller (found in DWARF): there is no
    /// return to probe.
    Inlined,
    /// A function of a Go program: a return probe would corrupt the goroutine's stack.
    Go,
}

/// One function a probe goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbePoint {
    /// Index into [`Selection::objects`].
    pub object: usize,
    /// Demangled name without parameters (the name reports show).
    pub name: String,
    /// The symbol as the file has it.
    pub symbol: String,
    /// Its address as the file has it (unrelocated).
    pub addr: u64,
    /// Its offset in the file: what the uprobe is placed at.
    pub offset: u64,
    /// An entry probe only, and why; `None`: an entry and a return probe.
    pub entry_only: Option<EntryOnly>,
}

/// What a set of specs selected.
#[derive(Debug, Default)]
pub struct Selection {
    /// The files.
    pub objects: Vec<ProbeObject>,
    /// The functions, one per file offset, in spec order.
    pub points: Vec<ProbePoint>,
    /// Notes for the user (libraries skipped, aliases merged).
    pub notes: Vec<String>,
}

impl Selection {
    /// Add `other`'s functions (those of another spec, or of another process): a file both
    /// hold (the same device and inode) is one object, a function at an offset already
    /// selected in it one point; notes are kept once.
    pub fn merge(&mut self, other: Selection) {
        let id = |f: &File| f.metadata().ok().map(|m| (m.dev(), m.ino()));
        let mut index = Vec::with_capacity(other.objects.len());
        for o in other.objects {
            let key = id(&o.file);
            let at = self
                .objects
                .iter()
                .position(|x| key.is_some() && id(&x.file) == key);
            index.push(at.unwrap_or_else(|| {
                self.objects.push(o);
                self.objects.len() - 1
            }));
        }
        for mut p in other.points {
            p.object = index[p.object];
            if !self
                .points
                .iter()
                .any(|q| q.object == p.object && q.offset == p.offset)
            {
                self.points.push(p);
            }
        }
        for n in other.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }
}

/// Where the functions of a selection may live.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The main executable: the command's file, or `/proc/PID/exe` of an attached process.
    pub exe: PathBuf,
    /// The name the user knows it by (`prog` of `prog:Foo::bar`).
    pub exe_name: String,
    /// Libraries the process has mapped (`/proc/PID/map_files/…` or paths), with the path the
    /// maps show; empty for a command not started yet (its `DT_NEEDED` are looked up instead).
    pub mapped: Vec<(PathBuf, String)>,
}

/// The facts of one ELF file a selection needs.
struct Facts {
    /// Executable PT_LOAD segments: (vaddr, filesz, offset).
    loads: Vec<(u64, u64, u64)>,
    go: bool,
    /// An x86-64 file (whose Go stack checks [`go_body`] reads).
    x86_64: bool,
    needed: Vec<String>,
    runpath: Vec<String>,
}

fn facts(file: &File, path: &Path) -> Result<Facts, SymbolError> {
    let data = ReadCache::new(file);
    let not_elf = |reason: &'static str| SymbolError::NotElf {
        what: path.display().to_string(),
        reason,
    };
    let elf = sections64(&data).map_err(not_elf)?;
    let (h, e) = (elf.header, elf.endian);
    let phnum = h
        .phnum(e, &data)
        .map_err(|_| not_elf("no program header count"))? as u64;
    if phnum.saturating_mul(u64::from(h.e_phentsize(e))) > MAX_TABLE {
        return Err(not_elf("a program header table larger than any real one"));
    }
    let phdrs = h
        .program_headers(e, &data)
        .map_err(|_| not_elf("program headers outside the file"))?;
    let loads = phdrs
        .iter()
        .filter(|p| p.p_type(e) == PT_LOAD && p.p_flags(e) & PF_X != 0)
        .map(|p| (p.p_vaddr(e), p.p_filesz(e), p.p_offset(e)))
        .collect();
    let mut go = false;
    let mut needed = Vec::new();
    let mut runpath = Vec::new();
    for s in elf.table.iter() {
        if let Ok(name) = elf.table.section_name(e, s) {
            go |= name == b".go.buildinfo" || name == b".gopclntab";
        }
        if s.sh_type(e) != SHT_DYNAMIC || s.sh_size(e) > MAX_TABLE {
            continue;
        }
        let Ok(Some((dyns, link))) = s.dynamic(e, &data) else {
            continue;
        };
        let Ok(strings) = elf.table.strings(e, &data, link) else {
            continue;
        };
        for d in dyns {
            let tag = d.d_tag(e);
            if !matches!(tag, DT_NEEDED | DT_RUNPATH | DT_RPATH) {
                continue;
            }
            let Ok(v) = strings.get(d.d_val(e) as u32) else {
                continue;
            };
            let v = String::from_utf8_lossy(v).into_owned();
            if tag == DT_NEEDED {
                needed.push(v);
            } else {
                runpath.extend(v.split(':').filter(|x| !x.is_empty()).map(String::from));
            }
        }
    }
    Ok(Facts {
        loads,
        go,
        x86_64: h.e_machine(e) == EM_X86_64,
        needed,
        runpath,
    })
}

/// The file offset of `addr`, from the executable segment holding it.
fn file_offset(loads: &[(u64, u64, u64)], addr: u64) -> Option<u64> {
    loads
        .iter()
        .find(|&&(va, sz, _)| addr >= va && addr - va < sz)
        .map(|&(va, _, off)| addr - va + off)
}

/// The directories a library named in `DT_NEEDED` is looked for in, after the executable's
/// `RUNPATH`: `LD_LIBRARY_PATH` (the command inherits hood's environment), then the usual
/// system directories.
fn search_dirs(runpath: &[String], origin: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = runpath
        .iter()
        .map(|r| PathBuf::from(r.replace("$ORIGIN", &origin.to_string_lossy())))
        .collect();
    if let Some(p) = std::env::var_os("LD_LIBRARY_PATH") {
        v.extend(std::env::split_paths(&p).filter(|d| d.is_absolute()));
    }
    for d in [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
        "/usr/local/lib",
    ] {
        v.push(PathBuf::from(d));
    }
    v
}

/// A library found in a system directory: a link is followed (library directories are made
/// of them) to a regular file owned by root.
const SYSTEM_LIB: Policy = Policy {
    follow_link: true,
    owner: Some(0),
};

/// Whether the object part of a spec names the library `base` (a file name).
fn names_library(want: &str, base: &str) -> bool {
    glob(want, base)
        || base
            .strip_prefix(want)
            .is_some_and(|r| r.starts_with(".so"))
}

struct Candidate {
    path: PathBuf,
    /// The file name the user matches against.
    base: String,
    policy: Policy,
}

/// Resolve `specs` in `scope`. Errors: a spec that matches no function (with what was looked
/// at), an executable that cannot be read, a Go executable.
pub fn select(specs: &[ProbeSpec], scope: &Scope) -> Result<Selection, SymbolError> {
    let mut sel = Selection::default();
    // Main executable first: always object 0.
    let exe_file = crate::open::open(&scope.exe, Policy::NAMED)?;
    let exe_facts = facts(&exe_file, &scope.exe)?;
    let origin = scope
        .exe
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    if let Ok(m) = exe_file.metadata() {
        seen.insert((m.dev(), m.ino()));
    }
    let go_reason = |path: &Path| {
        format!(
            "{} is a Go program: a return probe would replace the return address on the \
             goroutine's stack, which Go copies when the stack grows and checks when it unwinds \
             (the program could crash), so its functions are probed at entry only: their calls \
             are counted exactly, with no times",
            path.display()
        )
    };
    sel.objects.push(ProbeObject {
        path: scope.exe.clone(),
        file: exe_file,
        no_returns: exe_facts.go.then(|| go_reason(&scope.exe)),
    });
    let mut all_facts = vec![exe_facts];
    // Libraries, loaded only when a spec names one.
    let wants_lib = specs.iter().any(|s| {
        s.object
            .as_deref()
            .is_some_and(|o| !names_exe(o, scope) && !o.is_empty())
    });
    let mut libs: Vec<Candidate> = Vec::new();
    if wants_lib {
        if scope.mapped.is_empty() {
            // Breadth first through DT_NEEDED.
            let dirs = search_dirs(&all_facts[0].runpath, &origin);
            let mut queue: Vec<String> = all_facts[0].needed.clone();
            let mut names: HashSet<String> = HashSet::new();
            while let Some(n) = queue.first().cloned() {
                queue.remove(0);
                if !names.insert(n.clone()) || libs.len() >= MAX_OBJECTS {
                    continue;
                }
                let found = dirs.iter().map(|d| d.join(&n)).find(|p| p.is_file());
                let Some(p) = found else {
                    sel.notes.push(format!(
                        "library {n} (needed by {}) not found in the usual directories; name it by path to probe it",
                        scope.exe.display()
                    ));
                    continue;
                };
                if let Ok(f) = crate::open::open(&p, SYSTEM_LIB) {
                    if let Ok(fx) = facts(&f, &p) {
                        queue.extend(fx.needed.iter().cloned());
                    }
                }
                libs.push(Candidate {
                    base: n,
                    path: p,
                    policy: SYSTEM_LIB,
                });
            }
        } else {
            for (open_at, shown) in &scope.mapped {
                let base = shown.rsplit('/').next().unwrap_or(shown).to_string();
                libs.push(Candidate {
                    path: open_at.clone(),
                    base,
                    policy: Policy::NAMED,
                });
            }
        }
    }
    // Per spec, per object: the matching functions.
    let mut by_offset: BTreeMap<(usize, u64), usize> = BTreeMap::new();
    // Go functions probed at their first instruction (no stack check recognised).
    let mut go_unchecked: Vec<String> = Vec::new();
    for spec in specs {
        let mut targets: Vec<usize> = Vec::new();
        match spec.object.as_deref() {
            None => targets.push(0),
            Some(o) if names_exe(o, scope) => targets.push(0),
            Some(o) if o.contains('/') => {
                // A path: opened as named.
                let p = PathBuf::from(o);
                let f = crate::open::open(&p, Policy::NAMED)?;
                let key = f.metadata().map(|m| (m.dev(), m.ino())).ok();
                let idx = match sel
                    .objects
                    .iter()
                    .position(|x| x.file.metadata().ok().map(|m| (m.dev(), m.ino())) == key)
                {
                    Some(i) => i,
                    None => {
                        let fx = facts(&f, &p)?;
                        sel.objects.push(ProbeObject {
                            no_returns: fx.go.then(|| go_reason(&p)),
                            path: p,
                            file: f,
                        });
                        all_facts.push(fx);
                        sel.objects.len() - 1
                    }
                };
                targets.push(idx);
            }
            Some(o) => {
                for c in libs.iter().filter(|c| names_library(o, &c.base)) {
                    let f = match crate::open::open(&c.path, c.policy) {
                        Ok(f) => f,
                        Err(e) => {
                            sel.notes
                                .push(format!("{}: not probed: {e}", c.path.display()));
                            continue;
                        }
                    };
                    let Ok(m) = f.metadata() else { continue };
                    let key = (m.dev(), m.ino());
                    let idx = if seen.insert(key) {
                        let fx = match facts(&f, &c.path) {
                            Ok(fx) => fx,
                            Err(e) => {
                                sel.notes
                                    .push(format!("{}: not probed: {e}", c.path.display()));
                                continue;
                            }
                        };
                        sel.objects.push(ProbeObject {
                            no_returns: fx.go.then(|| go_reason(&c.path)),
                            path: c.path.clone(),
                            file: f,
                        });
                        all_facts.push(fx);
                        sel.objects.len() - 1
                    } else {
                        match sel.objects.iter().position(|x| {
                            x.file.metadata().ok().map(|m| (m.dev(), m.ino())) == Some(key)
                        }) {
                            Some(i) => i,
                            None => continue,
                        }
                    };
                    if !targets.contains(&idx) {
                        targets.push(idx);
                    }
                }
                if targets.is_empty() {
                    let have: Vec<&str> = libs.iter().map(|c| c.base.as_str()).collect();
                    return Err(SymbolError::ProbeLibraryAbsent {
                        spec: spec.text.clone(),
                        reason: format!(
                            "no library named {o:?} {} (it has: {}); name the library by its file name (libc.so.6) or path",
                            if scope.mapped.is_empty() {
                                format!("among the libraries {} needs", scope.exe.display())
                            } else {
                                "among the libraries the process has mapped".to_string()
                            },
                            if have.is_empty() { "none".to_string() } else { have.join(", ") }
                        ),
                    });
                }
            }
        }
        let before = sel.points.len();
        for &idx in &targets {
            let obj = &sel.objects[idx];
            let syms = crate::funcs::function_symbols_of(
                obj.file.try_clone().map_err(|source| SymbolError::Io {
                    path: obj.path.clone(),
                    source,
                })?,
                &obj.path,
            )?;
            // Go's runtime.morestack entry points, which a function's stack check calls.
            let morestack: Vec<u64> = syms
                .iter()
                .filter(|s| s.name.starts_with("runtime.morestack"))
                .map(|s| s.addr)
                .collect();
            for s in syms {
                let short = crate::demangle::demangle_short(&s.name);
                let matched = glob(&spec.pattern, &s.name)
                    || glob(&spec.pattern, &short)
                    || (short != s.name
                        && glob(&spec.pattern, &crate::demangle::demangle(&s.name)));
                if !matched {
                    continue;
                }
                let Some(offset) = file_offset(&all_facts[idx].loads, s.addr) else {
                    continue;
                };
                if by_offset.contains_key(&(idx, offset)) {
                    continue;
                }
                by_offset.insert((idx, offset), sel.points.len());
                let go = sel.objects[idx].no_returns.is_some();
                // A Go function is entered again after its stack grew (runtime.morestack
                // jumps back to its first instruction): its probe goes after the stack check.
                let offset = if go {
                    let f = &sel.objects[idx].file;
                    match go_body_at(f, &all_facts[idx], offset, s.addr, s.size, &morestack) {
                        GoEntry::Body(d) => offset + d,
                        GoEntry::NoCheck => offset,
                        GoEntry::Unrecognised => {
                            go_unchecked.push(short.clone());
                            offset
                        }
                    }
                } else {
                    offset
                };
                sel.points.push(ProbePoint {
                    object: idx,
                    name: short,
                    symbol: s.name,
                    addr: s.addr,
                    offset,
                    entry_only: go.then_some(EntryOnly::Go),
                });
            }
            inlined_points(spec, idx, &all_facts[idx], &mut sel, &mut by_offset);
        }
        if sel.points.len() == before {
            let objs: Vec<String> = targets
                .iter()
                .map(|&i| sel.objects[i].path.display().to_string())
                .collect();
            return Err(SymbolError::Probe {
                spec: spec.text.clone(),
                reason: format!(
                    "no function of {} matches {:?} (or all it matches are probed already); list the names with `nm -C {}`",
                    objs.join(", "),
                    spec.pattern,
                    objs.first().map(String::as_str).unwrap_or("")
                ),
            });
        }
    }
    // Go: said once per program.
    for (i, o) in sel.objects.iter().enumerate() {
        if let Some(why) = &o.no_returns {
            if sel.points.iter().any(|p| p.object == i) && !sel.notes.contains(why) {
                sel.notes.push(why.clone());
            }
        }
    }
    if !go_unchecked.is_empty() {
        let n = go_unchecked.len();
        go_unchecked.truncate(5);
        sel.notes.push(format!(
            "{n} Go function{} ({}{}) probed at {} first instruction: hood does not recognise {} \
             stack check (it reads x86-64's), so a call that grows its goroutine's stack \
             runs that instruction twice and is counted twice",
            if n == 1 { "" } else { "s" },
            go_unchecked.join(", "),
            if n > 5 { ", …" } else { "" },
            if n == 1 { "its" } else { "their" },
            if n == 1 { "its" } else { "their" },
        ));
    }
    Ok(sel)
}

/// What a file mapped into a process while hood records is to that process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MappedRole {
    /// The executable of an image it has just exec'd: `GLOB` and `PROG:GLOB` specs.
    Exe,
    /// A library its executable (or one of its libraries) needs (`DT_NEEDED`, the program
    /// interpreter): `OBJECT:GLOB` specs that name it, as at the start.
    Needed,
    /// A library it loaded itself (`dlopen`, a plugin): `OBJECT:GLOB` specs that name it and
    /// `GLOB` specs (the program's own code).
    Loaded,
}

/// The libraries `file` needs (`DT_NEEDED`) and its program interpreter (`PT_INTERP`), by
/// file name: what a loader maps with it, told apart from what the program loads itself.
pub fn dependencies(file: &File, path: &Path) -> Result<Vec<String>, SymbolError> {
    let mut names = facts(file, path)?.needed;
    let data = ReadCache::new(file);
    if let Ok(elf) = sections64(&data) {
        let (h, e) = (elf.header, elf.endian);
        if let Ok(phdrs) = h.program_headers(e, &data) {
            for p in phdrs.iter().filter(|p| p.p_type(e) == PT_INTERP) {
                // A path no longer than a path can be.
                if p.p_filesz(e) > 4096 {
                    continue;
                }
                if let Ok(b) = p.data(e, &data) {
                    let s = String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(&[]))
                        .into_owned();
                    if let Some(base) = s.rsplit('/').next().filter(|b| !b.is_empty()) {
                        names.push(base.to_string());
                    }
                }
            }
        }
    }
    Ok(names)
}

/// Whether `spec` names functions of a file mapped as `shown` in `role`.
pub fn applies_to_mapped(spec: &ProbeSpec, shown: &str, role: MappedRole) -> bool {
    let base = shown.rsplit('/').next().unwrap_or(shown);
    match (spec.object.as_deref(), role) {
        (None, MappedRole::Exe | MappedRole::Loaded) => true,
        (None, MappedRole::Needed) => false,
        (Some(o), MappedRole::Exe) => o == shown || (!base.is_empty() && glob(o, base)),
        (Some(o), _) if o.contains('/') => o == shown,
        (Some(o), _) => names_library(o, base),
    }
}

/// Resolve `specs` in one file a process mapped while hood records (the executable of an
/// image it exec'd, a library it loaded), opened at `open_at` (`/proc/PID/map_files/…`: the
/// very file mapped) and shown as `shown` (the path the kernel reported). Only the specs that
/// apply to the file in its `role` are looked at; one that selects nothing here is no error
/// (it is about another file), a file that cannot be read is a note.
pub fn select_mapped(
    specs: &[ProbeSpec],
    open_at: &Path,
    shown: &str,
    role: MappedRole,
) -> Selection {
    let scope = Scope {
        exe: open_at.to_path_buf(),
        exe_name: shown.to_string(),
        mapped: Vec::new(),
    };
    let mut all = Selection::default();
    for s in specs {
        if !applies_to_mapped(s, shown, role) {
            continue;
        }
        let here = ProbeSpec {
            text: s.text.clone(),
            object: None,
            pattern: s.pattern.clone(),
        };
        match select(std::slice::from_ref(&here), &scope) {
            Ok(mut sel) => {
                for o in sel.objects.iter_mut() {
                    o.path = PathBuf::from(shown);
                }
                all.merge(sel);
            }
            Err(SymbolError::Probe { .. }) => {}
            Err(e) => {
                let n = format!("{shown}: not probed: {e}");
                if !all.notes.contains(&n) {
                    all.notes.push(n);
                }
            }
        }
    }
    all
}

/// Where a Go function's probe goes.
#[derive(Debug, PartialEq, Eq)]
enum GoEntry {
    /// This many bytes in: after its stack check.
    Body(u64),
    /// At its first instruction: it calls no `runtime.morestack` (a leaf Go marks nosplit),
    /// so nothing enters it twice.
    NoCheck,
    /// At its first instruction, though it calls `runtime.morestack`: a stack check hood
    /// does not read (another architecture, another form).
    Unrecognised,
}

/// Most bytes of a Go function read to look for its call of `runtime.morestack`.
const MAX_GO_FUNCTION: u64 = 1 << 20;

/// Where the probe of the Go function at file `offset` (address `addr`, `size` bytes, 0 if
/// unknown) goes, read from `file`; `morestack`: the addresses of `runtime.morestack*`. Go's
/// amd64 prologue compares the stack pointer (or, for a frame over 128 bytes, `r12 = rsp -
/// N`) with the goroutine's stack guard at `[r14 + 16]` and jumps (`jbe`) to a block that
/// calls `runtime.morestack` and jumps back to the first instruction: a probe there counts a
/// call once more each time the stack grows; after the `jbe`, once.
fn go_body_at(
    file: &File,
    facts: &Facts,
    offset: u64,
    addr: u64,
    size: u64,
    morestack: &[u64],
) -> GoEntry {
    use std::os::unix::fs::FileExt as _;
    let mut head = [0u8; 24];
    let n = file.read_at(&mut head, offset).unwrap_or(0);
    if facts.x86_64 {
        if let Some(d) = go_body(&head[..n]).filter(|&d| size == 0 || d < size) {
            return GoEntry::Body(d);
        }
    }
    // Does it call runtime.morestack (`call rel32` to one of them)?
    let len = size.min(MAX_GO_FUNCTION) as usize;
    let mut body = vec![0u8; len];
    let n = file.read_at(&mut body, offset).unwrap_or(0);
    let calls_morestack = facts.x86_64
        && body[..n].windows(5).enumerate().any(|(i, w)| {
            w[0] == 0xe8 && {
                let rel = i32::from_le_bytes([w[1], w[2], w[3], w[4]]);
                let next = addr.wrapping_add(i as u64 + 5);
                morestack.contains(&next.wrapping_add(rel as i64 as u64))
            }
        });
    if calls_morestack || (!facts.x86_64 && !morestack.is_empty()) {
        GoEntry::Unrecognised
    } else {
        GoEntry::NoCheck
    }
}

/// After the stack check at the start of a Go function's bytes `b` (x86-64), if there is one
/// hood reads.
fn go_body(b: &[u8]) -> Option<u64> {
    let mut i = 0;
    // lea r12, [rsp + disp32] / [rsp + disp8]
    let cmp: &[u8] = if b.starts_with(&[0x4c, 0x8d, 0xa4, 0x24]) {
        i = 8;
        &[0x4d, 0x3b, 0x66, 0x10]
    } else if b.starts_with(&[0x4c, 0x8d, 0x64, 0x24]) {
        i = 5;
        &[0x4d, 0x3b, 0x66, 0x10]
    } else {
        // cmp rsp, [r14 + 16]
        &[0x49, 0x3b, 0x66, 0x10]
    };
    if b.get(i..i + 4)? != cmp {
        return None;
    }
    i += 4;
    // jbe rel32 / rel8
    match b.get(i..)? {
        [0x0f, 0x86, _, _, _, _, ..] => Some(i as u64 + 6),
        [0x76, _, ..] => Some(i as u64 + 2),
        _ => None,
    }
}

/// Add to `sel` the inlined copies, in the DWARF of object `idx`, of the functions `spec`
/// names, each at its entry address (entry only), and say how many under which name. A copy at
/// an offset already probed (a function entered at once into an inlined call) is left to that
/// probe and said.
fn inlined_points(
    spec: &ProbeSpec,
    idx: usize,
    facts: &Facts,
    sel: &mut Selection,
    by_offset: &mut BTreeMap<(usize, u64), usize>,
) {
    let obj = &sel.objects[idx];
    if obj.no_returns.is_some() {
        // Go's compiler emits no DW_TAG_inlined_subroutine a probe could use here; its
        // functions are entry-only already.
        return;
    }
    let found = crate::inlined::inlined_copies(&obj.file, &mut |name, linkage| {
        let raw = linkage.unwrap_or(name);
        let short = linkage.map_or_else(|| name.to_string(), crate::demangle::demangle_short);
        glob(&spec.pattern, raw)
            || glob(&spec.pattern, name)
            || glob(&spec.pattern, &short)
            || (linkage.is_some() && glob(&spec.pattern, &crate::demangle::demangle(raw)))
    });
    let path = obj.path.display().to_string();
    // Per function: copies probed, copies left to another probe at the same offset.
    let mut per: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for c in found.copies {
        let short = c
            .linkage
            .as_deref()
            .map_or_else(|| c.name.clone(), crate::demangle::demangle_short);
        let name = format!("{short}{INLINED_SUFFIX}");
        let Some(offset) = file_offset(&facts.loads, c.entry) else {
            continue;
        };
        let n = per.entry(short.clone()).or_default();
        if by_offset.contains_key(&(idx, offset)) {
            n.1 += 1;
            continue;
        }
        n.0 += 1;
        by_offset.insert((idx, offset), sel.points.len());
        sel.points.push(ProbePoint {
            object: idx,
            name,
            symbol: c.linkage.unwrap_or(c.name),
            addr: c.entry,
            offset,
            entry_only: Some(EntryOnly::Inlined),
        });
    }
    for (f, (probed, shared)) in per {
        let mut note = format!(
            "{f}: {probed} cop{} inlined into {} caller{} (DWARF of {path}) probed at entry only, \
             counted as `{f}{INLINED_SUFFIX}` with no time (an inlined copy has no return to probe)",
            if probed == 1 { "y" } else { "ies" },
            if probed == 1 { "its" } else { "their" },
            if probed == 1 { "" } else { "s" },
        );
        if shared > 0 {
            note.push_str(&format!(
                "; {shared} more start where a probed function starts and are counted as that function"
            ));
        }
        if !sel.notes.contains(&note) {
            sel.notes.push(note);
        }
    }
    if found.no_entry > 0 {
        sel.notes.push(format!(
            "{}: {} inlined cop{} of functions {:?} matches have no entry address in DWARF: not probed",
            path,
            found.no_entry,
            if found.no_entry == 1 { "y" } else { "ies" },
            spec.pattern
        ));
    }
    if found.capped {
        sel.notes.push(format!(
            "{path}: more than {} inlined copies match {:?}: only the first are probed; narrow the selection",
            crate::inlined::MAX_COPIES,
            spec.pattern
        ));
    }
}

/// Whether the object part of a spec names the main executable.
fn names_exe(o: &str, scope: &Scope) -> bool {
    let base = scope.exe_name.rsplit('/').next().unwrap_or(&scope.exe_name);
    o == scope.exe_name || (!base.is_empty() && glob(o, base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_split_at_the_first_lone_colon() {
        let s = parse_spec("libc.so.6:malloc").unwrap();
        assert_eq!(
            (s.object.as_deref(), s.pattern.as_str()),
            (Some("libc.so.6"), "malloc")
        );
        let s = parse_spec("Foo::bar").unwrap();
        assert_eq!((s.object, s.pattern.as_str()), (None, "Foo::bar"));
        let s = parse_spec("prog:ns::Foo::bar*").unwrap();
        assert_eq!(
            (s.object.as_deref(), s.pattern.as_str()),
            (Some("prog"), "ns::Foo::bar*")
        );
        assert!(parse_spec("libc:").is_err());
        assert!(parse_spec(":f").is_err());
        assert!(parse_spec("").is_err());
    }

    #[test]
    fn library_names_and_globs() {
        assert!(names_library("libc", "libc.so.6"));
        assert!(names_library("libc.so.6", "libc.so.6"));
        assert!(names_library("libstdc++*", "libstdc++.so.6"));
        assert!(!names_library("libc", "libcrypto.so.3"));
        assert!(glob("parse_*", "parse_line"));
        assert!(!glob("parse_?", "parse_ab"));
    }

    /// Go's amd64 stack checks, as go 1.19 emits them (objdump of tests/go/probe_known.go):
    /// the probe goes after the `jbe` to runtime.morestack.
    #[test]
    fn go_stack_checks_are_stepped_over() {
        // lea -0xa0(%rsp),%r12; cmp 0x10(%r14),%r12; jbe rel32; sub $0x120,%rsp
        let big = [
            0x4c, 0x8d, 0xa4, 0x24, 0x60, 0xff, 0xff, 0xff, 0x4d, 0x3b, 0x66, 0x10, 0x0f, 0x86,
            0xbe, 0x00, 0x00, 0x00, 0x48, 0x81, 0xec,
        ];
        assert_eq!(go_body(&big), Some(18));
        // cmp 0x10(%r14),%rsp; jbe rel8; push %rbp
        let small = [0x49, 0x3b, 0x66, 0x10, 0x76, 0x20, 0x55];
        assert_eq!(go_body(&small), Some(6));
        // lea disp8 form
        let mid = [
            0x4c, 0x8d, 0x64, 0x24, 0xf0, 0x4d, 0x3b, 0x66, 0x10, 0x76, 0x10,
        ];
        assert_eq!(go_body(&mid), Some(11));
        // No stack check (a leaf Go marks nosplit): its first instruction.
        assert_eq!(go_body(&[0x48, 0x8d, 0x04, 0x40, 0xc3]), None);
        // Truncated or another jump: not recognised.
        assert_eq!(go_body(&[0x49, 0x3b, 0x66, 0x10, 0x0f]), None);
        assert_eq!(go_body(&[0x49, 0x3b, 0x66, 0x10, 0x74, 0x20]), None);
        assert_eq!(go_body(&[]), None);
    }

    #[test]
    fn offsets_come_from_the_executable_segment() {
        let loads = [(0x1000, 0x500, 0x1000), (0x401000, 0x2000, 0x3000)];
        assert_eq!(file_offset(&loads, 0x1010), Some(0x1010));
        assert_eq!(file_offset(&loads, 0x401234), Some(0x3234));
        assert_eq!(file_offset(&loads, 0x403000), None);
        assert_eq!(file_offset(&loads, 0), None);
    }

    /// This test binary's own `main`: found, at an offset inside the file that holds the same
    /// bytes as the address in the running image.
    #[test]
    fn own_main_is_found_with_its_offset() {
        let exe = std::env::current_exe().unwrap();
        let scope = Scope {
            exe: exe.clone(),
            exe_name: exe.to_string_lossy().into_owned(),
            mapped: Vec::new(),
        };
        let sel = select(&[parse_spec("main").unwrap()], &scope).unwrap();
        let main = sel.points.iter().find(|p| p.symbol == "main").unwrap();
        let len = std::fs::metadata(&exe).unwrap().len();
        assert!(main.offset > 0 && main.offset < len);
        assert!(sel.objects[0].no_returns.is_none());
        // libc's getpid through the DT_NEEDED search.
        let sel = select(&[parse_spec("libc.so.6:getpid").unwrap()], &scope).unwrap();
        assert!(sel.points.iter().any(|p| p.name.contains("getpid")));
        assert!(sel.objects.len() >= 2);
        let e = select(&[parse_spec("no_such_function_*").unwrap()], &scope).unwrap_err();
        assert!(e.to_string().contains("no function of"), "{e}");
        let e = select(&[parse_spec("libnosuch:f").unwrap()], &scope).unwrap_err();
        assert!(e.to_string().contains("no library named"), "{e}");
        assert!(matches!(e, SymbolError::ProbeLibraryAbsent { .. }), "{e:?}");
    }

    #[test]
    fn specs_apply_to_a_mapped_file_by_its_role() {
        let s = |t: &str| parse_spec(t).unwrap();
        let lib = "/usr/lib/libplugin.so.1";
        // A bare glob: the program's own code, its plugins included, not what it needs.
        assert!(applies_to_mapped(&s("f*"), "/bin/prog", MappedRole::Exe));
        assert!(applies_to_mapped(&s("f*"), lib, MappedRole::Loaded));
        assert!(!applies_to_mapped(&s("f*"), lib, MappedRole::Needed));
        // A library by name, glob or path, whether needed or loaded; never the program.
        for role in [MappedRole::Needed, MappedRole::Loaded] {
            assert!(applies_to_mapped(&s("libplugin:f"), lib, role));
            assert!(applies_to_mapped(&s("libplugin.so.1:f"), lib, role));
            assert!(applies_to_mapped(&s("libplug*:f"), lib, role));
            assert!(applies_to_mapped(
                &s("/usr/lib/libplugin.so.1:f"),
                lib,
                role
            ));
            assert!(!applies_to_mapped(&s("/lib/libplugin.so.1:f"), lib, role));
            assert!(!applies_to_mapped(&s("libc:f"), lib, role));
        }
        assert!(!applies_to_mapped(
            &s("libplugin:f"),
            "/bin/prog",
            MappedRole::Exe
        ));
        // The exec'd program by its name.
        assert!(applies_to_mapped(
            &s("prog:main"),
            "/bin/prog",
            MappedRole::Exe
        ));
        assert!(!applies_to_mapped(
            &s("other:main"),
            "/bin/prog",
            MappedRole::Exe
        ));
    }
}
