//! The model's [`Resolver`] implemented with hood-symbols, fed from what the recording stored.

use std::collections::BTreeMap;
use std::path::Path;

use hood_model::profile::maps::MappedFile;
use hood_model::profile::Resolver;
use hood_symbols::text::SkippedLine;
use hood_symbols::{Resolution, SymbolTable, Symbolizer, SymbolizerOptions};

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
    /// Build from the recording's side data (`full_names`: whole C++ signatures); `kernel_job` yields its kallsyms table (`None`:
    /// the recording holds none).
    pub fn new(
        symfile: Option<&Path>,
        full_names: bool,
        kernel_job: Option<KernelJob<'a>>,
        vdso: &'a [u8],
        perf_maps: &'a BTreeMap<u32, String>,
    ) -> anyhow::Result<SymResolver<'a>> {
        let sym = Symbolizer::new(SymbolizerOptions {
            symfile: symfile.map(Path::to_path_buf),
            full_names,
            ..SymbolizerOptions::default()
        })?;
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

fn names(r: Vec<Resolution>) -> Vec<Option<String>> {
    r.into_iter().map(|x| x.ok().map(|s| s.name)).collect()
}

impl Resolver for SymResolver<'_> {
    fn kernel(&mut self, addrs: &[u64]) -> Vec<Option<String>> {
        self.wait_for_kernel();
        if !self.has_kallsyms && !addrs.is_empty() {
            self.extra
                .push("the recording holds no kallsyms (kernel addresses were hidden); kernel frames are unresolved".into());
            return vec![None; addrs.len()];
        }
        names(self.sym.symbolize_kernel(addrs))
    }

    fn file(&mut self, file: &MappedFile, offsets: &[u64]) -> Vec<Option<String>> {
        names(
            self.sym
                .symbolize_file(Path::new(&file.path), file.build_id.as_deref(), offsets),
        )
    }

    fn vdso(&mut self, offsets: &[u64]) -> Vec<Option<String>> {
        if self.vdso.is_empty() {
            return vec![None; offsets.len()];
        }
        names(self.sym.symbolize_image("[vdso]", self.vdso, offsets))
    }

    fn perf_map(&mut self, pid: u32, addrs: &[u64]) -> Vec<Option<String>> {
        match self.perf_maps.get(&pid) {
            Some(text) => names(self.sym.symbolize_perf_map(pid, text, addrs)),
            None => vec![None; addrs.len()],
        }
    }

    fn symfile(&mut self, addrs: &[u64]) -> Vec<Option<String>> {
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
