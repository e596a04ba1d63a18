//! The `calls` recorder: collecting the call-path tables hood-rt keeps in its segments into
//! Calls-kind files (`hood calls run`, `get`, `reset`); hood-load reads those files back.

pub(crate) mod file;
mod run;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hood_tracemodel::calls::{ProcessCalls, ThreadCalls};

pub use file::write;
pub use run::{get, reset, run, GetConfig, Got, Ran, Reset, RunConfig};

use crate::{segments, symbols, HooksError};

/// A line for the user while collecting; the caller prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Something wrong with a segment, which is skipped (the text names it).
    Warning(String),
    /// What the collection did or could not do.
    Note(String),
}

/// Read the segments in `dirs` (one pid's, or all) into named call-path tables; the
/// segments' warnings go to `say`. Also the segment files of processes that have ended.
pub fn collect(
    dirs: &[PathBuf],
    pid: Option<u32>,
    say: &mut dyn FnMut(Message),
) -> Result<(Vec<ProcessCalls>, Vec<PathBuf>), HooksError> {
    collect_with(dirs, pid, &HashMap::new(), say)
}

/// [`collect`], with the threads `calls run` took out of slots it gave back (by pid) added
/// to their process (its current image) before the functions are named.
pub(crate) fn collect_with(
    dirs: &[PathBuf],
    pid: Option<u32>,
    retired: &HashMap<u32, Vec<ThreadCalls>>,
    say: &mut dyn FnMut(Message),
) -> Result<(Vec<ProcessCalls>, Vec<PathBuf>), HooksError> {
    let mut warnings = Vec::new();
    let segs = segments::scan_dirs(dirs, pid, false, &mut warnings);
    for w in warnings {
        say(Message::Warning(w));
    }
    let mut sym = symbols::symbolizer()?;
    let mut procs = Vec::new();
    let mut finished = Vec::new();
    for (seg, (mut p, live)) in segs.iter().zip(segments::to_processes(&segs)) {
        if p.state != hood_tracemodel::ProcessState::Exec {
            if let Some(r) = retired.get(&p.pid) {
                p.threads.extend(r.iter().cloned());
            }
        }
        symbols::resolve(&mut p, live, &seg.maps, &mut sym);
        if !live {
            finished.push(seg.path.clone());
        }
        procs.push(p);
    }
    Ok((procs, finished))
}

/// Build-ids of the processes' executables, read from the files now (a call-path file does
/// not record them).
#[derive(Debug, Default)]
pub struct ExeBuildIds {
    /// Executable path → build-id.
    pub ids: HashMap<String, hood_symbols::BuildId>,
    /// What was found, one line per executable (for the output's comments).
    pub comments: Vec<String>,
    /// The executables whose build-id could not be read, and why.
    pub warnings: Vec<String>,
}

/// Read the build-ids of `procs`' executables: a rebuilt or deleted executable gets none,
/// with a comment that says so.
pub fn exe_build_ids(procs: &[ProcessCalls]) -> ExeBuildIds {
    let mut out = ExeBuildIds::default();
    for p in procs {
        if out.ids.contains_key(&p.exe) {
            continue;
        }
        match hood_symbols::read_build_id(Path::new(&p.exe)) {
            Ok(Some(id)) => {
                out.comments
                    .push(format!("build-id of {} read at report time", p.exe));
                out.ids.insert(p.exe.clone(), id);
            }
            Ok(None) => out.comments.push(format!("{} has no build-id", p.exe)),
            Err(e) => {
                out.warnings.push(format!("no build-id for {}: {e}", p.exe));
                out.comments.push(format!("no build-id for {}: {e}", p.exe));
            }
        }
    }
    out
}
