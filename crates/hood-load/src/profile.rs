//! Reading a recording back: the records interpreted by hood-model, every unique address named
//! once by hood-symbols from what the recording stored (kallsyms, the vDSO, JIT perf maps) and
//! from the files on disk. The one loader behind `hood report`, `annotate`, `diff` and serve's
//! profile endpoint.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use hood_model::labels::LabelsRecording;
use hood_model::profile::{
    build_profile, Profile, RawRecording, Resolved, ResolvedFrame, Resolver,
};
use hood_raw::maps::MappedFile;
use hood_symbols::text::SkippedLine;
use hood_symbols::{Resolution, SourceLine, SymbolTable, Symbolizer, SymbolizerOptions};

use crate::LoadError;

/// How long [`load_profile_timed`] took, and where the names of file addresses came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadTiming {
    /// Reading the file (and indexing the kernel's symbols beside it), ms.
    pub load_ms: f64,
    /// Interpreting the records and symbolizing, ms.
    pub symbolize_ms: f64,
    /// File addresses answered from the symbol cache.
    pub from_cache: u64,
    /// File addresses read from symbol tables and debug info.
    pub from_files: u64,
}

/// Load the recording at `path` (hood's own, or a perf.data file) and symbolize each unique
/// address once, with `opts`. The kernel's symbols are indexed on a second thread while the
/// records are read and interpreted.
pub fn load_profile(path: &Path, opts: SymbolizerOptions) -> Result<Profile, LoadError> {
    load_profile_timed(path, opts).map(|(p, _)| p)
}

/// [`load_profile`], with the two phases' times and how many file addresses the symbol cache
/// answered (what `HOOD_TIMING` shows).
pub fn load_profile_timed(
    path: &Path,
    opts: SymbolizerOptions,
) -> Result<(Profile, LoadTiming), LoadError> {
    load(path, opts, false).map(|(p, _, t)| (p, t))
}

/// [`load_profile_timed`], with the recording's `--labels` part (`None`: recorded without
/// it) read in the same pass over the file.
pub fn load_profile_labeled(
    path: &Path,
    opts: SymbolizerOptions,
) -> Result<(Profile, Option<LabelsRecording>, LoadTiming), LoadError> {
    load(path, opts, true)
}

fn load(
    path: &Path,
    opts: SymbolizerOptions,
    labels: bool,
) -> Result<(Profile, Option<LabelsRecording>, LoadTiming), LoadError> {
    let t0 = Instant::now();
    std::thread::scope(|scope| {
        let mut job = None;
        let mut index_kallsyms = |text: String| {
            if text.is_empty() {
                return;
            }
            // Shared so that, should no thread be had, the text is still here to index inline.
            let text = std::sync::Arc::new(std::sync::Mutex::new(Some(text)));
            let take = |t: &std::sync::Mutex<Option<String>>| {
                let text = t.lock().ok()?.take()?;
                Some(hood_symbols::text::parse_kallsyms_owned(text))
            };
            let theirs = std::sync::Arc::clone(&text);
            let spawned = std::thread::Builder::new()
                .name("kallsyms".into())
                .spawn_scoped(scope, move || take(&theirs));
            job = Some(match spawned {
                Ok(handle) => Box::new(move || handle.join().ok().flatten()) as KernelJob,
                Err(_) => Box::new(move || take(&text)) as KernelJob,
            });
        };
        let mut raw = if hood_model::perfdata::is_perf_data(path) {
            let mut raw = crate::perfdata::import_perf_data(path)?;
            index_kallsyms(std::mem::take(&mut raw.kallsyms));
            raw
        } else if labels {
            RawRecording::load_with_labels(path, &mut index_kallsyms)?
        } else {
            RawRecording::load_with(path, &mut index_kallsyms)?
        };
        unwind_kept_copies(&mut raw);
        let labels = raw.labels.take();
        let t1 = Instant::now();
        let mut resolver = SymResolver::new(opts, job, &raw.vdso, &raw.perf_maps)?;
        let prof = build_profile(&raw, &mut resolver);
        let stats = resolver.sym.stats();
        let timing = LoadTiming {
            load_ms: (t1 - t0).as_secs_f64() * 1e3,
            symbolize_ms: t1.elapsed().as_secs_f64() * 1e3,
            from_cache: stats.from_cache,
            from_files: stats.from_files,
        };
        Ok((prof, labels, timing))
    })
}

/// Unwind the samples the recorder kept with their raw stack copy (its unwinding fell behind)
/// with the recorder's unwinder, against the binaries on this machine as `perf report` does,
/// told the recording's vDSO image and the mappings of the processes of its start-up snapshot.
fn unwind_kept_copies(raw: &mut RawRecording) {
    if raw.stack_copies.is_empty() {
        return;
    }
    let mut unwinder = hood_unwind::Unwinder::new(hood_unwind::Options::default());
    if !raw.vdso.is_empty() {
        unwinder.set_vdso(&raw.vdso);
    }
    for p in &raw.snapshot.processes {
        unwinder.load_proc_maps(p.pid, &p.maps);
    }
    raw.unwind_stack_copies(&mut unwinder);
    raw.warnings.extend(unwinder.take_warnings());
}

/// The kernel's symbol table, being indexed (on another thread) while the records are read;
/// `None` if indexing failed.
type KernelJob<'a> = Box<dyn FnOnce() -> Option<(SymbolTable, Vec<SkippedLine>)> + 'a>;

/// Symbolizes from a recording's kallsyms, vdso image and perf maps, and from files on disk.
struct SymResolver<'a> {
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
    /// Build from the symbolizer's options and the recording's side data; `kernel_job`
    /// yields its kallsyms table (`None`: the recording holds none).
    fn new(
        opts: SymbolizerOptions,
        kernel_job: Option<KernelJob<'a>>,
        vdso: &'a [u8],
        perf_maps: &'a BTreeMap<u32, String>,
    ) -> Result<SymResolver<'a>, LoadError> {
        let has_symfile = opts.symfile.is_some();
        let sym = Symbolizer::new(opts)?;
        Ok(SymResolver {
            sym,
            vdso,
            perf_maps,
            has_symfile,
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
                .map(|f| ResolvedFrame {
                    start_line: f.start_line.unwrap_or(0),
                    ..frame(f.name, f.code)
                })
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
                .symbolize_file(Path::new(&file.path), file.build_id.as_ref(), offsets),
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
