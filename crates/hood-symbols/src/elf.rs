//! ELF symbolization by file offset through blazesym: files on disk
//! (checked against the recorded build-id) and in-memory images.

use std::fs::File;
use std::io::{ErrorKind, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{CodeInfo, Input, Reason, Symbolized};

use crate::debugfile::{has_dwarf, DebugFile};
use crate::plt::Plt;
use crate::symbolizer::{hash_of, Verdict};
use crate::{
    build_id_from_bytes, BuildId, InlinedFrame, Resolution, SourceLine, Sym, SymbolError,
    Symbolizer, Unresolved,
};

const LEFT: &str = "its frames are left unresolved";

impl Symbolizer {
    /// Resolves file offsets inside the ELF file `path` (as recorded; the
    /// [`root`](crate::SymbolizerOptions::root) prefix is applied). The
    /// caller converts runtime addresses to file offsets with the mapping's
    /// page offset, so executables, PIE and shared libraries are all alike.
    ///
    /// If `expected_build_id` (from the recording) is given and the file now
    /// on disk has another build-id or none, every offset is
    /// [`Unresolved::BuildIdMismatch`]; a missing file gives
    /// [`Unresolved::FileMissing`]. Both are warned about once per file.
    /// Names come from the ELF symbol tables (`.symtab`, `.dynsym`) of the file or its
    /// separate debug file, as perf names functions (DWARF only for functions they lack);
    /// where there is DWARF, each answer also carries file:line, the functions inlined at
    /// the offset and the function's start line. Offsets on PLT stubs are named after their
    /// relocation's symbol (`memcmp@plt`).
    pub fn symbolize_file(
        &mut self,
        path: &Path,
        expected_build_id: Option<&BuildId>,
        file_offsets: &[u64],
    ) -> Vec<Resolution> {
        if file_offsets.is_empty() {
            return Vec::new();
        }
        let key = (path.to_path_buf(), expected_build_id.copied());
        let verdict = match self.files.get(&key) {
            Some(v) => v.clone(),
            None => {
                let v = self.check_file(path, expected_build_id);
                self.files.insert(key, v.clone());
                v
            }
        };
        match verdict {
            Ok((real, id)) => {
                let dbg = self.debug_file(&real, path, id.as_ref());
                let shown = path.display().to_string();
                let key = self.answers_key(&real, id.as_ref(), dbg.as_ref());
                let Some(key) = key else {
                    let out = self.read_answers(&real, dbg.as_ref(), &shown, file_offsets);
                    return self.demangled(out);
                };
                // Kept answers first; the rest are read from the files and kept.
                let mut warnings = Vec::new();
                let mut out: Vec<Resolution> = vec![Err(Unresolved::NoSymbol); file_offsets.len()];
                let mut missing: Vec<usize> = Vec::new();
                let demangler = &mut self.demangler;
                match self
                    .answers
                    .as_mut()
                    .and_then(|a| a.table(&key, &mut |k, m| warnings.push((k, m))))
                {
                    Some(table) => {
                        for (i, o) in file_offsets.iter().enumerate() {
                            match table.map.get(o) {
                                Some(r) => out[i] = r.clone(),
                                None => missing.push(i),
                            }
                        }
                        if let Some(d) = demangler.as_mut().filter(|_| !table.seeded) {
                            table.seeded = true;
                            for ((full, raw), name) in &table.names {
                                if *full == d.full() {
                                    d.seed(raw, name);
                                }
                            }
                        }
                    }
                    None => missing.extend(0..file_offsets.len()),
                }
                for (k, m) in warnings.drain(..) {
                    self.warn(k, m);
                }
                self.stats.from_cache += (file_offsets.len() - missing.len()) as u64;
                if missing.is_empty() {
                    return self.demangled(out);
                }
                let offs: Vec<u64> = missing.iter().map(|&i| file_offsets[i]).collect();
                let before = self.warnings().len();
                let got = self.read_answers(&real, dbg.as_ref(), &shown, &offs);
                if self.warnings().len() > before {
                    // Read with problems (warned about): not kept, in this report.
                    self.unkept.insert(real.clone());
                }
                let keep = !self.unkept.contains(&real) && !self.dwarf_broken.contains(&real);
                if let Some(a) = self.answers.as_mut().filter(|_| keep) {
                    a.add(&key, &offs, &got);
                }
                for (&i, r) in missing.iter().zip(got) {
                    out[i] = r;
                }
                let out = self.demangled(out);
                let full = self.demangler.as_ref().map(|d| d.full());
                if let Some(a) = self.answers.as_mut().filter(|_| keep) {
                    if let Some(full) = full {
                        a.add_names(&key, full, &offs, missing.iter().map(|&i| &out[i]));
                    }
                    a.save(&key, &mut |k, m| warnings.push((k, m)));
                }
                for (k, m) in warnings {
                    self.warn(k, m);
                }
                out
            }
            Err(why) => vec![Err(why); file_offsets.len()],
        }
    }

    /// The name of `real`'s kept answers (`None` without a symbol cache).
    fn answers_key(
        &self,
        real: &Path,
        id: Option<&BuildId>,
        dbg: Option<&DebugFile>,
    ) -> Option<String> {
        self.answers.as_ref()?;
        let debug = match dbg {
            Some(d) => crate::answers::debug_tag(&d.path)?,
            None => "0".to_string(),
        };
        crate::answers::key(real, id, &debug, self.opts.inlined)
    }

    /// The raw answers (names not demangled) for offsets of the binary `real`, read from its
    /// symbol tables and DWARF (or its debug file's), PLT stubs named.
    fn read_answers(
        &mut self,
        real: &Path,
        dbg: Option<&DebugFile>,
        shown: &str,
        offsets: &[u64],
    ) -> Vec<Resolution> {
        self.stats.from_files += offsets.len() as u64;
        let mut out = match dbg {
            Some(dbg) => self.blaze_debug(dbg, shown, offsets),
            None => self.blaze_offsets(real, shown, offsets),
        };
        self.name_plt_stubs(real, offsets, &mut out);
        out
    }

    /// Names the offsets that fall on PLT stubs `func@plt` (no symbol covers them; the
    /// symbol tables would name the code before `.plt`, usually `_init`).
    fn name_plt_stubs(&mut self, real: &Path, offsets: &[u64], out: &mut [Resolution]) {
        let plt = self
            .plts
            .entry(real.to_path_buf())
            .or_insert_with(|| Plt::read(real));
        for (&off, r) in offsets.iter().zip(out.iter_mut()) {
            if let Some(sym) = plt.lookup(off) {
                *r = Ok(sym);
            }
        }
    }

    /// The separate debug file of the binary `real` (mapped as `recorded`, build-id `id`),
    /// looked for once.
    fn debug_file(
        &mut self,
        real: &Path,
        recorded: &Path,
        id: Option<&BuildId>,
    ) -> Option<DebugFile> {
        if let Some(found) = self.debug_files.get(real) {
            return found.clone();
        }
        let dirs: Vec<PathBuf> = self
            .opts
            .debug_dirs
            .iter()
            .map(|d| self.rooted(d))
            .collect();
        let mut found = DebugFile::find(real, recorded, id, &dirs);
        if found.is_none() && self.debuginfod.is_some() && !has_dwarf(real) {
            if let Some(id) = id {
                let mut warnings = Vec::new();
                let what = recorded.display().to_string();
                let fetched = self
                    .debuginfod
                    .as_mut()
                    .and_then(|d| d.fetch(id, &what, &mut |k, m| warnings.push((k, m))));
                for (k, m) in warnings {
                    self.warn(k, m);
                }
                found = fetched.and_then(|path| DebugFile::at(real, path));
            }
        }
        self.debug_files.insert(real.to_path_buf(), found.clone());
        found
    }

    /// The file to read `real`'s DWARF from: its decompressed copy in the DWARF cache if it
    /// has compressed DWARF and a cache is configured, else `real` itself.
    fn dwarf_file(&mut self, real: &Path) -> PathBuf {
        let Some(unpacker) = self.unpacker.as_mut() else {
            return real.to_path_buf();
        };
        let mut warnings = Vec::new();
        let path = unpacker.dwarf_path(real, &mut |k, m| warnings.push((k, m)));
        for (k, m) in warnings {
            self.warn(k, m);
        }
        path
    }

    /// Offsets of a binary resolved in its debug file, by virtual address.
    fn blaze_debug(&mut self, dbg: &DebugFile, shown: &str, offsets: &[u64]) -> Vec<Resolution> {
        let mut order: Vec<(u64, usize)> = offsets
            .iter()
            .enumerate()
            .filter_map(|(i, &o)| dbg.vaddr(o).map(|v| (v, i)))
            .collect();
        order.sort_unstable();
        let vaddrs: Vec<u64> = order.iter().map(|&(v, _)| v).collect();
        let answers = self.blaze_sorted(&dbg.path, shown, Input::VirtOffset(&vaddrs));
        let mut out = vec![Err(Unresolved::NoSymbol); offsets.len()];
        for ((_, i), r) in order.into_iter().zip(answers) {
            out[i] = r;
        }
        out
    }

    /// Resolves offsets into an ELF image held in memory, such as the
    /// `[vdso]` bytes stored in the recording. `key` names the image (for
    /// example `"[vdso]"`); the image is written to a private temporary
    /// file once per key (again only if different bytes come with the key).
    pub fn symbolize_image(&mut self, key: &str, image: &[u8], offsets: &[u64]) -> Vec<Resolution> {
        if offsets.is_empty() {
            return Vec::new();
        }
        let hash = hash_of(image);
        if self.images.get(key).map(|(h, _)| *h) != Some(hash) {
            let stored = self.store_image(key, image);
            self.images.insert(key.to_string(), (hash, stored));
        }
        let real = match self.images.get(key) {
            Some((_, Ok(tmp))) => tmp.to_path_buf(),
            Some((_, Err(why))) => return vec![Err(why.clone()); offsets.len()],
            None => return vec![Err(Unresolved::NoSource); offsets.len()],
        };
        let out = self.blaze_offsets(&real, key, offsets);
        self.demangled(out)
    }

    /// Checks that the image is ELF and writes it to a temporary file.
    fn store_image(&mut self, key: &str, image: &[u8]) -> Result<tempfile::TempPath, Unresolved> {
        if let Err(e) = build_id_from_bytes(image) {
            self.warn(format!("image {key}"), format!("image {key}: {e}; {LEFT}"));
            return Err(Unresolved::NotElf);
        }
        let written = tempfile::Builder::new()
            .prefix("hood-image-")
            .tempfile()
            .and_then(|mut f| f.write_all(image).map(|()| f.into_temp_path()));
        written.map_err(|e| {
            let msg = format!("cannot write image {key} to a temporary file: {e}");
            self.warn(format!("image {key}"), format!("{msg}; {LEFT}"));
            Unresolved::Other(msg)
        })
    }

    /// Decides once whether `path` may be read: present, ELF, same build-id.
    fn check_file(&mut self, path: &Path, expected: Option<&BuildId>) -> Verdict {
        let shown = path.display().to_string();
        let mut real = self.rooted(path);
        if !real.exists() {
            // "/usr/bin/x (deleted)" in the maps of a process whose binary was
            // replaced: the path without the suffix is worth a try, the
            // build-id check below guards against reading the wrong file.
            if let Some(stripped) = shown.strip_suffix(" (deleted)") {
                real = self.rooted(Path::new(stripped));
            }
        }
        // Device nodes, FIFOs and other non-files (a mapped /dev/zero, a GPU aperture, a
        // FIFO planted where a deleted binary was) are never opened: reading one could block
        // or have effects. Nor is a symbolic link followed: a mapped path never is one.
        let actual = match crate::open::open(&real, crate::open::BINARY).and_then(|f| {
            if let Ok(md) = f.metadata() {
                self.checked.insert(real.clone(), (md.dev(), md.ino()));
            }
            crate::elfread::build_id_of_file(f, &real)
        }) {
            Ok(id) => id,
            Err(SymbolError::Refused(e)) => {
                self.warn(shown.clone(), format!("{e}; {LEFT}"));
                return Err(Unresolved::NotElf);
            }
            Err(SymbolError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                let msg = format!(
                    "binary {shown} not found ({}); {LEFT}",
                    self.where_looked(&real)
                );
                self.warn(shown, msg);
                return Err(Unresolved::FileMissing);
            }
            Err(SymbolError::NotElf { reason, .. }) => {
                self.warn(
                    shown.clone(),
                    format!("{shown} is not an ELF file ({reason}); {LEFT}"),
                );
                return Err(Unresolved::NotElf);
            }
            Err(e) => {
                self.warn(shown, format!("{e}; {LEFT}"));
                return Err(Unresolved::Other(e.to_string()));
            }
        };
        if let Some(exp) = expected {
            if actual.as_ref() != Some(exp) {
                let now = actual.map_or("none".to_string(), |id| id.to_string());
                let msg = format!(
                    "binary {shown} changed since recording (build-id {exp} recorded, {now} now); {LEFT}"
                );
                self.warn(shown, msg);
                return Err(Unresolved::BuildIdMismatch);
            }
        }
        Ok((real, actual))
    }

    /// `path` under the configured root, if any.
    fn rooted(&self, path: &Path) -> PathBuf {
        match &self.opts.root {
            Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
            None => path.to_path_buf(),
        }
    }

    /// Where a missing file was looked for and what the user can do.
    fn where_looked(&self, real: &Path) -> String {
        match &self.opts.root {
            Some(_) => format!("looked for {}", real.display()),
            None => "put the profiled binary back in place or give --symfile".to_string(),
        }
    }

    /// One blazesym batch for one file; `shown` names it in warnings.
    /// Offsets are looked up in ascending order (neighbouring lookups then
    /// touch the same parts of the symbol tables) and answered in the
    /// caller's order.
    fn blaze_offsets(&mut self, real: &Path, shown: &str, offsets: &[u64]) -> Vec<Resolution> {
        if offsets.is_sorted() {
            return self.blaze_sorted(real, shown, Input::FileOffset(offsets));
        }
        let mut order: Vec<usize> = (0..offsets.len()).collect();
        order.sort_unstable_by_key(|&i| offsets[i]);
        let sorted: Vec<u64> = order.iter().map(|&i| offsets[i]).collect();
        let answers = self.blaze_sorted(real, shown, Input::FileOffset(&sorted));
        let mut out = vec![Err(Unresolved::NoSymbol); offsets.len()];
        for (i, r) in order.into_iter().zip(answers) {
            out[i] = r;
        }
        out
    }

    /// `path` opened through the door for blazesym, which opens what it is given itself (and
    /// looks for `PATH.dwp` beside it): blazesym is handed `/proc/self/fd/N` of the checked
    /// file, so a FIFO or another file renamed over the path after the checks is never read.
    /// A binary checked by [`Self::check_file`] must still be the file checked.
    fn held(&mut self, path: &Path, shown: &str) -> Result<(File, PathBuf), Unresolved> {
        let (policy, checked) = match self.checked.get(path) {
            Some(&id) => (crate::open::BINARY, Some(id)),
            None => (crate::open::DEBUG, None),
        };
        let f = crate::open::open(path, policy).map_err(|e| {
            let msg = e.to_string();
            self.warn(format!("read {shown}"), format!("{msg}; {LEFT}"));
            Unresolved::Other(msg)
        })?;
        let id = f.metadata().map(|m| (m.dev(), m.ino())).ok();
        if checked.is_some() && id != checked {
            let msg = format!("{} was replaced while it was read", path.display());
            self.warn(format!("read {shown}"), format!("{msg}; {LEFT}"));
            return Err(Unresolved::Other(msg));
        }
        let fd_path = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        Ok((f, fd_path))
    }

    fn blaze_sorted(&mut self, real: &Path, shown: &str, input: Input<&[u64]>) -> Vec<Resolution> {
        let n = match input {
            Input::FileOffset(a) | Input::VirtOffset(a) | Input::AbsAddr(a) => a.len(),
        };
        let (_file, fd_path) = match self.held(real, shown) {
            Ok(h) => h,
            Err(why) => return vec![Err(why); n],
        };
        // Names from the symbol tables, as perf names functions: DWARF's names of C++
        // members and templates are their bare declarations (`fold<...>`).
        let elf = Source::Elf(Elf {
            debug_syms: false,
            ..Elf::new(&fd_path)
        });
        let mut out: Vec<Resolution> = match self.blaze.symbolize(&elf, input) {
            Ok(found) => found.into_iter().map(convert).collect(),
            Err(e) => {
                let msg = format!("cannot read symbols of {shown}: {e}");
                self.warn(format!("read {shown}"), format!("{msg}; {LEFT}"));
                return vec![Err(Unresolved::Other(msg)); n];
            }
        };
        // DWARF, where the file has it: file:line and the functions inlined there. A file
        // whose DWARF cannot be read (corrupt, compressed in an unknown way) keeps its names.
        if self.dwarf_broken.contains(real) {
            return out;
        }
        // A decompression bomb (a section claiming far more than its bytes can hold): not
        // decompressed by anyone, said once.
        if let Some(why) = crate::unpacked::oversized(real) {
            self.dwarf_broken.insert(real.to_path_buf());
            self.warn(
                format!("dwarf {shown}"),
                format!(
                    "the debug info of {shown} is not read: {why}; its functions are named \
                     without inlined functions or source lines"
                ),
            );
            return out;
        }
        let dwarf_file = self.dwarf_file(real);
        let (_dwarf_held, dwarf_fd_path) = if dwarf_file == real {
            (None, fd_path.clone())
        } else {
            match self.held(&dwarf_file, shown) {
                Ok((f, p)) => (Some(f), p),
                Err(_) => return out,
            }
        };
        // blazesym follows a file's debug links itself, unchecked: not from where another
        // user can plant the target.
        if let Some(why) = crate::debugfile::unchecked_link(&dwarf_fd_path) {
            self.dwarf_broken.insert(real.to_path_buf());
            self.warn(
                format!("dwarf {shown}"),
                format!(
                    "the debug info of {shown} is not read: {why}; its functions are named \
                     without inlined functions or source lines (keep the binary and the \
                     files it links to in directories only root or you can write)"
                ),
            );
            return out;
        }
        let dwarf = Source::Elf(Elf::new(&dwarf_fd_path));
        // The DWARF parser meets bytes nobody checked (a hostile binary, a truncated debug
        // file): should it panic, the file keeps its symbol-table names and its DWARF is not
        // read again in this report.
        let blaze = &self.blaze;
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            blaze
                .symbolize(&dwarf, input)
                .map(|found| found.into_iter().map(convert).collect::<Vec<_>>())
        }));
        let answer = match answer {
            Ok(a) => a,
            Err(_) => {
                self.dwarf_broken.insert(real.to_path_buf());
                self.warn(
                    format!("dwarf {shown}"),
                    format!(
                        "the debug info of {shown} could not be parsed (the parser gave up); \
                         its functions are named without inlined functions or source lines"
                    ),
                );
                return out;
            }
        };
        match answer {
            Ok(found) => {
                for (r, d) in out.iter_mut().zip(found) {
                    match (r, d) {
                        (Ok(sym), Ok(d)) => {
                            sym.code = d.code;
                            sym.inlined = d.inlined;
                        }
                        // A function DWARF knows and the symbol tables do not.
                        (r @ Err(_), Ok(d)) => *r = Ok(d),
                        _ => {}
                    }
                }
                let blaze = &self.blaze;
                let filled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    start_lines(blaze, &dwarf, input, &mut out);
                    crate::decl::fill_inlined_start_lines(real, &dwarf_file, input, &mut out);
                }));
                if filled.is_err() {
                    self.dwarf_broken.insert(real.to_path_buf());
                }
            }
            Err(e) => self.warn(
                format!("dwarf {shown}"),
                format!(
                    "cannot read the debug info of {shown} ({e}); its functions are named \
                     without inlined functions or source lines"
                ),
            ),
        }
        out
    }

    /// `out` with every name demangled (when demangling is on).
    fn demangled(&mut self, mut out: Vec<Resolution>) -> Vec<Resolution> {
        if let Some(d) = self.demangler.as_mut() {
            for sym in out.iter_mut().flatten() {
                d.apply(&mut sym.name);
                for f in &mut sym.inlined {
                    d.apply(&mut f.name);
                }
            }
        }
        out
    }
}

/// Fills [`Sym::start_line`]: the line of each function's first instruction, one lookup per
/// function (the symbol's start is the looked-up offset minus its distance from it).
fn start_lines(
    blaze: &blazesym::symbolize::Symbolizer,
    dwarf: &Source<'_>,
    input: Input<&[u64]>,
    out: &mut [Resolution],
) {
    let (offsets, kind) = match input {
        Input::FileOffset(a) => (a, 0),
        Input::VirtOffset(a) => (a, 1),
        Input::AbsAddr(a) => (a, 2),
    };
    let starts_of = |(o, r): (&u64, &Resolution)| {
        r.as_ref()
            .ok()
            .filter(|s| s.code.is_some())
            .and_then(|s| o.checked_sub(s.offset))
    };
    let mut starts: Vec<u64> = offsets
        .iter()
        .zip(out.iter())
        .filter_map(starts_of)
        .collect();
    starts.sort_unstable();
    starts.dedup();
    if starts.is_empty() {
        return;
    }
    let again = match kind {
        0 => Input::FileOffset(&starts[..]),
        1 => Input::VirtOffset(&starts[..]),
        _ => Input::AbsAddr(&starts[..]),
    };
    let Ok(found) = blaze.symbolize(dwarf, again) else {
        return;
    };
    let lines: Vec<Option<u32>> = found
        .into_iter()
        .map(|f| match f {
            Symbolized::Sym(s) => s.code_info.and_then(|c| c.line).filter(|&l| l > 0),
            Symbolized::Unknown(_) => None,
        })
        .collect();
    for (o, r) in offsets.iter().zip(out.iter_mut()) {
        let Some(start) = starts_of((o, r)) else {
            continue;
        };
        if let (Ok(sym), Ok(i)) = (r, starts.binary_search(&start)) {
            sym.start_line = lines.get(i).copied().flatten();
        }
    }
}

/// blazesym's source position → ours (`None` when it names no file).
fn source_line(c: &CodeInfo<'_>) -> Option<SourceLine> {
    if c.file.is_empty() {
        return None;
    }
    Some(SourceLine {
        file: c.to_path().to_string_lossy().into_owned(),
        line: c.line.unwrap_or(0),
    })
}

/// blazesym's answer for one offset → ours.
fn convert(s: Symbolized<'_>) -> Resolution {
    match s {
        Symbolized::Sym(sym) => Ok(Sym {
            name: sym.name.into_owned(),
            offset: sym.offset as u64,
            size: sym.size.map(|s| s as u64).filter(|&s| s > 0),
            code: sym.code_info.as_deref().and_then(source_line),
            // blazesym lists them outermost first.
            inlined: sym
                .inlined
                .iter()
                .rev()
                .map(|f| InlinedFrame {
                    name: f.name.to_string(),
                    code: f.code_info.as_ref().and_then(source_line),
                    start_line: None,
                })
                .collect(),
            start_line: None,
        }),
        Symbolized::Unknown(Reason::IgnoredError) => {
            Err(Unresolved::Other("error while reading symbols".to_string()))
        }
        Symbolized::Unknown(_) => Err(Unresolved::NoSymbol),
    }
}
