//! `hood calls run`, `get` and `reset`.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context};
use hood_model::calls::ProcessCalls;

use super::{file, segments, symbols};

/// Plain config of `hood calls run`.
pub struct RunConfig {
    pub output: PathBuf,
    pub keep: bool,
    pub argv: Vec<String>,
}

/// Plain config of `hood calls get`.
pub struct GetConfig {
    pub pid: Option<u32>,
    pub output: PathBuf,
    pub keep: bool,
}

/// Where libhood_rt.so is: `$HOOD_RT_LIB`, next to the hood binary, or ../lib/hood/.
pub(crate) fn runtime_library() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("HOOD_RT_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!(
                "HOOD_RT_LIB={} does not name a file; point it at libhood_rt.so",
                p.display()
            );
        }
        return Ok(p);
    }
    let exe = std::env::current_exe().context("locating the hood executable")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for cand in [
        dir.join("libhood_rt.so"),
        dir.join("../lib/hood/libhood_rt.so"),
        dir.join("deps/libhood_rt.so"),
    ] {
        if cand.is_file() {
            return Ok(cand);
        }
    }
    bail!(
        "cannot find libhood_rt.so next to {}: build it with `cargo build --release -p hood-rt` \
         (it lands next to the hood binary) or set HOOD_RT_LIB=/path/to/libhood_rt.so",
        exe.display()
    )
}

fn collect(dir: &Path, pid: Option<u32>) -> anyhow::Result<(Vec<ProcessCalls>, Vec<PathBuf>)> {
    let mut warnings = Vec::new();
    let segs = segments::scan(dir, pid, false, &mut warnings);
    for w in &warnings {
        eprintln!("hood: warning: {w}");
    }
    let mut sym = symbols::symbolizer()?;
    let mut procs = Vec::new();
    let mut finished = Vec::new();
    for (seg, (mut p, live)) in segs.iter().zip(segments::to_processes(&segs)) {
        symbols::resolve(&mut p, live, &seg.maps, &mut sym);
        if !live {
            finished.push(seg.path.clone());
        }
        procs.push(p);
    }
    Ok((procs, finished))
}

fn summary(procs: &[ProcessCalls], out: &Path) {
    let paths: usize = procs
        .iter()
        .flat_map(|p| &p.threads)
        .map(|t| t.paths.len().saturating_sub(1))
        .sum();
    eprintln!(
        "hood calls: {} process{}, {paths} call paths written to {} (read it with `hood calls report {}`)",
        procs.len(),
        if procs.len() == 1 { "" } else { "es" },
        out.display(),
        out.display()
    );
    for p in procs {
        for n in p.flag_notes() {
            eprintln!("hood calls: warning: pid {}: {n}", p.pid);
        }
    }
}

pub fn run(cfg: RunConfig) -> anyhow::Result<ExitCode> {
    let lib = runtime_library()?;
    let dir = segments::private_dir(&segments::shm_dir(), "calls-run")?;
    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut s = lib.clone().into_os_string();
            s.push(":");
            s.push(old);
            s
        }
        _ => lib.clone().into_os_string(),
    };
    let (prog, args) = cfg.argv.split_first().context("no command given")?;
    let status = Command::new(prog)
        .args(args)
        .env("LD_PRELOAD", &preload)
        .env("HOOD_SHM_DIR", &dir)
        .status();
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            bail!("cannot run {prog}: {e}");
        }
    };
    let (procs, _) = collect(&dir, None)?;
    if !cfg.keep {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("hood calls: segments kept in {}", dir.display());
    }
    if procs.is_empty() {
        eprintln!(
            "hood calls: {prog} produced no call-path tables: was it built with -finstrument-functions \
             (gcc/clang) and dynamically linked? See docs/calls.md"
        );
    } else {
        file::write(&cfg.output, "run", &cfg.argv, &procs)?;
        summary(&procs, &cfg.output);
    }
    Ok(match status.code() {
        Some(c) => ExitCode::from(c.clamp(0, 255) as u8),
        None => ExitCode::from(128u8.wrapping_add(status.signal().unwrap_or(0) as u8)),
    })
}

pub fn get(cfg: GetConfig) -> anyhow::Result<ExitCode> {
    let dir = segments::shm_dir();
    segments::clean_stale(&dir);
    let (procs, finished) = collect(&dir, cfg.pid)?;
    if procs.is_empty() {
        eprintln!(
            "hood calls get: no instrumented processes{} in {} (programs must be built with -finstrument-functions and run with libhood_rt)",
            cfg.pid.map(|p| format!(" with pid {p}")).unwrap_or_default(),
            dir.display()
        );
        return Ok(ExitCode::from(1));
    }
    file::write(&cfg.output, "get", &[], &procs)?;
    summary(&procs, &cfg.output);
    if !cfg.keep {
        for f in finished {
            let _ = std::fs::remove_file(f);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn reset(pid: Option<u32>) -> anyhow::Result<ExitCode> {
    let dir = segments::shm_dir();
    segments::clean_stale(&dir);
    let mut warnings = Vec::new();
    let segs = segments::scan(&dir, pid, true, &mut warnings);
    for w in &warnings {
        eprintln!("hood: warning: {w}");
    }
    let mut n = 0;
    for (seg, (_, live)) in segs.iter().zip(segments::to_processes(&segs)) {
        if !live {
            continue;
        }
        // Through the descriptor that was checked: the path may name another file by now.
        let off = hood_abi::parse::RESET_GEN_OFFSET as u64;
        let b = seg
            .file
            .read_fixed(off, 4, "the reset counter")
            .map_err(|e| anyhow::anyhow!("{}: {e}", seg.path.display()))?;
        let gen = u32::from_le_bytes([b[0], b[1], b[2], b[3]]).wrapping_add(1);
        seg.file
            .write_at(&gen.to_le_bytes(), off)
            .with_context(|| format!("writing the reset counter of {}", seg.path.display()))?;
        n += 1;
    }
    if n == 0 {
        eprintln!(
            "hood calls reset: no running instrumented processes{} in {}",
            pid.map(|p| format!(" with pid {p}")).unwrap_or_default(),
            dir.display()
        );
        return Ok(ExitCode::from(1));
    }
    eprintln!(
        "hood calls reset: {n} process{} will reset at their next function entry or exit",
        if n == 1 { "" } else { "es" }
    );
    Ok(ExitCode::SUCCESS)
}
