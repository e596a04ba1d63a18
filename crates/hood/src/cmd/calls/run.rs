//! `hood calls run`, `get` and `reset`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hood_model::calls::ProcessCalls;
use hood_proc::child::{Child, Exit};
use hood_proc::signal::{self, Forwarder};

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

fn collect(
    dirs: &[PathBuf],
    pid: Option<u32>,
) -> anyhow::Result<(Vec<ProcessCalls>, Vec<PathBuf>)> {
    collect_noting(dirs, pid, true)
}

/// `collect`, printing the segments' warnings only when `say`.
fn collect_noting(
    dirs: &[PathBuf],
    pid: Option<u32>,
    say: bool,
) -> anyhow::Result<(Vec<ProcessCalls>, Vec<PathBuf>)> {
    let mut warnings = Vec::new();
    let segs = segments::scan_dirs(dirs, pid, false, &mut warnings);
    for w in warnings.iter().filter(|_| say) {
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

/// While the command runs, the tables collected so far replace the output file every second
/// (every four times what one snapshot costs, when that is longer), so a `hood calls run`
/// killed at any moment, SIGKILL included, leaves a complete file of its last snapshot.
struct Snapshots<'a> {
    dir: &'a Path,
    cfg: &'a RunConfig,
    next: Instant,
    /// No (more) snapshots: the output is a special file, or writing one failed.
    off: bool,
    /// When the file last received a snapshot with tables.
    last: Option<Instant>,
}

impl Snapshots<'_> {
    /// Time between snapshots, at least.
    const EVERY: Duration = Duration::from_secs(1);

    fn tick(&mut self) {
        if Instant::now() < self.next || self.off {
            return;
        }
        let t = Instant::now();
        let written = collect_noting(std::slice::from_ref(&self.dir.to_path_buf()), None, false)
            .and_then(|(procs, _)| match procs.is_empty() {
                true => Ok(()),
                false => file::write(&self.cfg.output, "run", &self.cfg.argv, &procs).map(|_| {
                    self.last = Some(Instant::now());
                }),
            });
        if let Err(e) = written {
            // The final write at the end will say what is wrong; no message every second.
            eprintln!("hood calls: warning: writing a snapshot of the tables: {e:#}; the file is written when the command ends");
            self.off = true;
        }
        self.next = Instant::now() + Self::EVERY.max(t.elapsed() * 4);
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
    let (prog, _) = cfg.argv.split_first().context("no command given")?;
    // A valid (empty) file from the start: a run killed before the first snapshot leaves a
    // readable file, not none. A pipe or other special file is written once, at the end.
    let special = std::fs::metadata(&cfg.output).is_ok_and(|m| !m.is_file());
    if !special {
        for t in hood_format::Writer::remove_stale_temps(&cfg.output) {
            eprintln!(
                "hood calls: removed {}, left by a `hood calls run` killed while writing",
                t.display()
            );
        }
        file::write(&cfg.output, "run", &cfg.argv, &[])?;
    }
    // Before the spawn, so a signal arriving right after it is not lost.
    let mut signals = Forwarder::install()?;
    // The command is killed (SIGKILL) when `hood calls run` dies, however it dies, rather than
    // run on unobserved with nobody to collect its tables.
    let child = Child::spawn(
        &cfg.argv,
        &[
            ("LD_PRELOAD".into(), preload),
            ("HOOD_SHM_DIR".into(), dir.clone().into_os_string()),
        ],
    );
    let mut snapshots = Snapshots {
        dir: &dir,
        cfg: &cfg,
        next: Instant::now() + Snapshots::EVERY,
        off: special,
        last: None,
    };
    let status = match child {
        Ok(mut c) => signals.wait(&mut c, &mut || snapshots.tick()),
        Err(e) => Err(e),
    };
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e.into());
        }
    };
    if let Some(sig) = signals.received() {
        eprintln!(
            "hood calls: {} received; {prog} {}; collecting its tables",
            signal::name(sig),
            match status {
                Exit::Signal(s) => format!("was ended by {}", signal::name(s)),
                Exit::Code(c) => format!("exited with status {c}"),
            }
        );
    }
    let (procs, _) = collect(std::slice::from_ref(&dir), None)?;
    if !cfg.keep {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("hood calls: segments kept in {}", dir.display());
    }
    if procs.is_empty() {
        if !special {
            let _ = std::fs::remove_file(&cfg.output);
        }
        eprintln!(
            "hood calls: {prog} produced no call-path tables: was it built with -finstrument-functions \
             (gcc/clang) and dynamically linked? See docs/calls.md"
        );
    } else {
        let last = snapshots.last;
        file::write(&cfg.output, "run", &cfg.argv, &procs).with_context(|| match last {
            Some(t) => format!(
                "{} keeps the tables as of {:.1} s before the command ended (its last snapshot)",
                cfg.output.display(),
                t.elapsed().as_secs_f64()
            ),
            None => format!("{} holds no tables", cfg.output.display()),
        })?;
        summary(&procs, &cfg.output);
    }
    Ok(match status {
        Exit::Code(c) => ExitCode::from(c.clamp(0, 255) as u8),
        Exit::Signal(s) => ExitCode::from(128u8.wrapping_add(s as u8)),
    })
}

pub fn get(cfg: GetConfig) -> anyhow::Result<ExitCode> {
    let base = segments::shm_dir();
    segments::clean_stale(&base);
    let dirs = segments::search_dirs(&base, cfg.pid);
    let (procs, finished) = collect(&dirs, cfg.pid)?;
    if procs.is_empty() {
        match cfg.pid {
            Some(pid) => eprintln!("hood calls get: {}", segments::why_not_found(pid, &base)),
            None => eprintln!(
                "hood calls get: no instrumented processes in {} (programs must be built with -finstrument-functions and run with libhood_rt)",
                base.display()
            ),
        }
        return Ok(ExitCode::from(1));
    }
    file::write(&cfg.output, "get", &[], &procs)?;
    summary(&procs, &cfg.output);
    if !cfg.keep {
        // Segments in a private directory belong to the `hood calls run` that made it: it
        // collects them when its command ends.
        for f in finished
            .iter()
            .filter(|f| f.parent() == Some(base.as_path()))
        {
            let _ = std::fs::remove_file(f);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn reset(pid: Option<u32>) -> anyhow::Result<ExitCode> {
    let base = segments::shm_dir();
    segments::clean_stale(&base);
    let dirs = segments::search_dirs(&base, pid);
    let mut warnings = Vec::new();
    let segs = segments::scan_dirs(&dirs, pid, true, &mut warnings);
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
        match pid {
            Some(p) if segs.is_empty() => {
                eprintln!("hood calls reset: {}", segments::why_not_found(p, &base))
            }
            Some(p) => eprintln!("hood calls reset: pid {p} has ended: nothing to reset"),
            None => eprintln!(
                "hood calls reset: no running instrumented processes in {}",
                base.display()
            ),
        }
        return Ok(ExitCode::from(1));
    }
    eprintln!(
        "hood calls reset: {n} process{} will reset at their next function entry or exit",
        if n == 1 { "" } else { "es" }
    );
    Ok(ExitCode::SUCCESS)
}
