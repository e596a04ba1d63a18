//! The model's [`Resolver`] implemented with hood-symbols, fed from what the recording stored.

use std::collections::BTreeMap;
use std::path::Path;

use hood_model::profile::maps::MappedFile;
use hood_model::profile::{Resolved, ResolvedFrame, Resolver};
use hood_symbols::text::SkippedLine;
use hood_symbols::{Resolution, SourceLine, SymbolTable, Symbolizer, SymbolizerOptions};

pub use super::args::SymbolOpts;

/// The symbolizer's options for the user's: `--debug-dir`s before the default directories,
/// debuginfod from the environment unless `--no-debuginfod`.
pub fn symbolizer_options(opts: &SymbolOpts) -> SymbolizerOptions {
    let defaults = SymbolizerOptions::default();
    let mut debug_dirs = opts.debug_dirs.clone();
    debug_dirs.extend(defaults.debug_dirs.iter().cloned());
    SymbolizerOptions {
        symfile: opts.symfile.clone(),
        full_names: opts.full_names,
        inlined: !opts.no_inline,
        debug_dirs,
        debuginfod: if opts.no_debuginfod {
            None
        } else {
            hood_symbols::DebuginfodConfig::from_env()
        },
        dwarf_cache: hood_symbols::DwarfCacheConfig::from_env(),
        ..defaults
    }
}

/// The kernel's symbol table, being indexed (on another thread) while the records are read;
/// `None` if indexing failed.
pub type KernelJob<'a> = Box<dyn FnOnce() -> Option<(SymbolTable, Vec<SkippedLine>)> + 'a>;

/// Symbolizes from a recording's kallsyms, vdso image and perf maps, and from files on disk.
pub struct SymResolver<'a> {
    sym: Symbolizer,
    vdso: &'a [u8],
    perf_maps: &'a BTreeMap<u32, String>,
    has_symfile: bool,
    /// Waited for at the first kernel address.
    kernel_job: Option<KernelJob<'a>>,
    has_kallsyms: bool,
    extra: Vec<String>,
}

impl<'a> SymResolver<'a> {
    /// Build from the user's symbol options and the recording's side data; `kernel_job`
    /// yields its kallsyms table (`None`: the recording holds none).
    pub fn new(
        opts: &SymbolOpts,
        kernel_job: Option<KernelJob<'a>>,
        vdso: &'a [u8],
        perf_maps: &'a BTreeMap<u32, String>,
    ) -> anyhow::Result<SymResolver<'a>> {
        let symfile = opts.symfile.as_deref();
        let sym = Symbolizer::new(symbolizer_options(opts))?;
        Ok(SymResolver {
            sym,
            vdso,
            perf_maps,
            has_symfile: symfile.is_some(),
            kernel_job,
            has_kallsyms: false,
            extra: Vec::new(),
        })
    }

    /// Install the kernel table once its indexing is done.
    fn wait_for_kernel(&mut self) {
        if let Some(job) = self.kernel_job.take() {
            match job() {
                Some((table, skipped)) => {
                    self.has_kallsyms = true;
                    self.sym.set_kernel_table(table, skipped);
                }
                None => self.extra.push(
                    "indexing the recording's kallsyms failed; kernel frames are unresolved".into(),
                ),
            }
        }
    }
}

/// The symbolizer's answers as the model takes them: inlined functions (innermost first),
/// then the function itself, each with its file:line.
fn names(r: Vec<Resolution>) -> Vec<Option<Resolved>> {
    fn frame(name: String, code: Option<SourceLine>) -> ResolvedFrame {
        let (file, line) = code.map_or((None, 0), |c| (Some(c.file), c.line));
        ResolvedFrame {
            name,
            file,
            line,
            start_line: 0,
        }
    }
    r.into_iter()
        .map(|x| {
            let s = x.ok()?;
            let mut frames: Vec<ResolvedFrame> = s
                .inlined
                .into_iter()
                .map(|f| frame(f.name, f.code))
                .collect();
            frames.push(ResolvedFrame {
                start_line: s.start_line.unwrap_or(0),
                ..frame(s.name, s.code)
            });
            Some(Resolved { frames })
        })
        .collect()
}

impl Resolver for SymResolver<'_> {
    fn kernel(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>> {
        self.wait_for_kernel();
        if !self.has_kallsyms && !addrs.is_empty() {
            self.extra
                .push("the recording holds no kallsyms (kernel addresses were hidden); kernel frames are unresolved".into());
            return vec![None; addrs.len()];
        }
        names(self.sym.symbolize_kernel(addrs))
    }

    fn file(&mut self, file: &MappedFile, offsets: &[u64]) -> Vec<Option<Resolved>> {
        names(
            self.sym
                .symbolize_file(Path::new(&file.path), file.build_id.as_deref(), offsets),
        )
    }

    fn vdso(&mut self, offsets: &[u64]) -> Vec<Option<Resolved>> {
        if self.vdso.is_empty() {
            return vec![None; offsets.len()];
        }
        names(self.sym.symbolize_image("[vdso]", self.vdso, offsets))
    }

    fn perf_map(&mut self, pid: u32, addrs: &[u64]) -> Vec<Option<Resolved>> {
        match self.perf_maps.get(&pid) {
            Some(text) => names(self.sym.symbolize_perf_map(pid, text, addrs)),
            None => vec![None; addrs.len()],
        }
    }

    fn symfile(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>> {
        if !self.has_symfile {
            return vec![None; addrs.len()];
        }
        names(self.sym.symbolize_symfile(addrs))
    }

    fn warnings(&mut self) -> Vec<String> {
        let mut w = self.sym.warnings().to_vec();
        w.append(&mut self.extra);
        w
    }
}
