//! `hood annotate [-i FILE] FUNCTION`: the samples of one function per source line, with the
//! source text beside them; `--asm`: per instruction, with the disassembly.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use hood_model::profile::aggregate::Filter;
use hood_report::profile::annotate as ann;

use super::report::{load_profile, SymbolOpts};

/// Source files larger than this are not shown.
const MAX_SOURCE: u64 = 16 << 20;

/// Arguments of `hood annotate`.
#[derive(Debug, Clone, Args)]
pub struct AnnotateArgs {
    /// The function: its name as `hood report` prints it (without ` (inlined)`); a part of a
    /// name is enough when it matches one function only.
    pub function: String,
    /// Recording to read (hood's own, or a perf.data file written by `perf record`).
    #[arg(short = 'i', long = "input", default_value = "hood.data")]
    pub input: PathBuf,
    /// Only this process (`-p/--pid`), only this thread (`--tid`).
    #[command(flatten)]
    pub select: crate::cmd::select::Select,
    /// Only processes with this name.
    #[arg(long = "comm")]
    pub comm: Option<String>,
    /// Source lines shown around each sampled line.
    #[arg(long = "context", default_value_t = ann::DEFAULT_CONTEXT)]
    pub context: u32,
    /// Samples per machine instruction instead, with the disassembly (x86-64, AT&T syntax as
    /// objdump prints it) and the source line of each sampled instruction. The bytes are read
    /// from the binary on disk (checked against the recorded build-id).
    #[arg(long = "asm")]
    pub asm: bool,
    /// Read sources recorded under OLD from NEW instead (repeatable; the first match wins), as
    /// gdb's `set substitute-path`: e.g. Rust's standard library, recorded under
    /// `/rustc/HASH/`, is in `$(rustc --print sysroot)/lib/rustlib/src/rust/` with rust-src.
    #[arg(long = "source-map", value_name = "OLD=NEW", value_parser = parse_map)]
    pub source_map: Vec<(String, String)>,
    /// How code is named.
    #[command(flatten)]
    pub symbols: SymbolOpts,
}

/// Run `hood annotate`.
pub fn run(args: &AnnotateArgs) -> anyhow::Result<ExitCode> {
    crate::cmd::note_killed_writers(&args.input, hood_format::FileKind::Profile);
    let prof = hood_load::open_for(&args.input, hood_load::Command::Annotate)
        .map_err(anyhow::Error::from)
        .and_then(|_| load_profile(&args.input, &args.symbols))
        .map_err(|e| {
            super::missing_file(
                e,
                &args.input,
                "record one with `hood record -- COMMAND`, or name a recording with -i FILE",
            )
        })?;
    for w in &prof.warnings {
        errln!("hood: warning: {}", super::clean(w));
    }
    let funcs = match ann::find_functions(&prof, &args.function) {
        Ok(f) => f,
        // Nothing found (exit status 1, docs/cli.md), not a usage error.
        Err(candidates) if candidates.is_empty() => {
            errln!(
                "hood: {}: no function named {:?} was sampled; see `hood report -i {}` for the names",
                super::clean(args.input.display()),
                args.function,
                super::clean(args.input.display())
            );
            return Ok(ExitCode::from(1));
        }
        Err(candidates) => anyhow::bail!(
            "{:?} is part of several function names; give one whole:\n  {}",
            args.function,
            candidates
                .iter()
                .map(super::clean)
                .collect::<Vec<_>>()
                .join("\n  ")
        ),
    };
    if funcs
        .iter()
        .all(|&f| prof.funcs.get(f as usize).is_some_and(|f| f.kernel))
    {
        anyhow::bail!(
            "{} is kernel code: hood names the kernel from kallsyms, which has no line \
             information (the kernel's DWARF, vmlinux, is not read yet)",
            args.function
        );
    }
    let filter = Filter {
        pid: args.select.pid,
        tid: args.select.tid,
        comm: args.comm.clone(),
        ..Filter::default()
    };
    let a = ann::annotate(&prof, &filter, &funcs);
    let mut out = BufWriter::new(std::io::stdout().lock());
    let name = prof
        .funcs
        .get(funcs[0] as usize)
        .map_or(args.function.clone(), |f| f.name.clone());
    if args.asm {
        let (dso, found) = function_bytes(&prof, &a, &args.symbols)?;
        let code = ann::Code {
            dso: &dso,
            bytes: &found.bytes,
            start: found.start,
        };
        ann::render_asm(&prof, &name, &a, &code, &mut out)?;
    } else {
        // As root, a source file is shown only if the sampled binaries' owners could read it
        // (the DWARF naming it is theirs): None when running as another user.
        let owners: Option<Vec<u32>> = rustix::process::geteuid().is_root().then(|| {
            use std::os::unix::fs::MetadataExt;
            let mut uids: Vec<u32> = a
                .offsets
                .keys()
                .filter_map(|(dso, _)| prof.dso_files.get(dso))
                .filter_map(|f| std::fs::metadata(&f.path).ok())
                .map(|md| md.uid())
                .collect();
            uids.sort_unstable();
            uids.dedup();
            uids
        });
        let mut source = |path: &str| {
            let mapped = args
                .source_map
                .iter()
                .find_map(|(old, new)| {
                    path.strip_prefix(old.as_str()).map(|rest| {
                        format!(
                            "{}/{}",
                            new.trim_end_matches('/'),
                            rest.trim_start_matches('/')
                        )
                    })
                })
                .unwrap_or_else(|| path.to_string());
            let path = std::path::Path::new(&mapped);
            match &owners {
                Some(owners) => hood_symbols::read_source_for(path, MAX_SOURCE, owners),
                None => hood_symbols::read_source(path, MAX_SOURCE),
            }
            .map_err(|e| e.to_string())
        };
        ann::render_annotate(&prof, &name, &a, args.context, &mut source, &mut out)?;
    }
    out.flush()?;
    if a.samples == 0 {
        errln!(
            "hood: {} has no samples of its own (it only called others)",
            super::clean(&name)
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Longest function disassembled.
const MAX_FUNCTION: u64 = 1 << 20;

/// The machine code holding most of the function's samples: (file, code), from the symbol
/// covering its hottest instruction.
fn function_bytes(
    prof: &hood_model::profile::Profile,
    a: &ann::Annotation,
    opts: &SymbolOpts,
) -> anyhow::Result<(String, hood_symbols::FunctionCode)> {
    let Some(((dso, off), _)) = a.offsets.iter().max_by_key(|(_, v)| v.0) else {
        anyhow::bail!("no sampled instruction of the function lies in a mapped file (JIT code?)");
    };
    let file = prof
        .dso_files
        .get(dso)
        .ok_or_else(|| anyhow::anyhow!("{dso}: its path is not in the recording"))?;
    let mut sym = hood_symbols::Symbolizer::new(super::report::symbolizer_options(opts))?;
    let code = sym.function_code(
        std::path::Path::new(&file.path),
        file.build_id.as_ref(),
        *off,
        MAX_FUNCTION,
    )?;
    Ok((dso.clone(), code))
}

/// `OLD=NEW` of `--source-map`.
fn parse_map(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((old, new)) if !old.is_empty() && !new.is_empty() => {
            Ok((old.to_string(), new.to_string()))
        }
        _ => Err(format!(
            "{s:?}: give OLD=NEW, e.g. /rustc/HASH=$(rustc --print sysroot)/lib/rustlib/src/rust"
        )),
    }
}
