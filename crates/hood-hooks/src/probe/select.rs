//! Which functions `--probe` selects: the specs resolved in the command's executable or in
//! each attached process's own files, the keys they are known by in the output, and what the
//! selection probes, in words.

use std::collections::HashMap;
use std::path::PathBuf;

use hood_symbols::probe::{self as spec, ProbeSpec, Scope, Selection, CONFIRM_ABOVE};
use hood_symbols::SymbolError;

use super::{ProbeConfig, ProbeRun, COST_PER_CALL_NS};
use crate::HooksError;

/// The functions `cfg` selects, each file opened and checked; an error when a spec selects
/// nothing, or selects more than [`CONFIRM_ABOVE`] functions without
/// `--yes` (saying what they would cost).
pub fn select(cfg: &ProbeConfig) -> Result<Selection, HooksError> {
    let specs: Vec<ProbeSpec> = cfg
        .specs
        .iter()
        .map(|s| spec::parse_spec(s))
        .collect::<Result<_, _>>()?;
    let sel = match &cfg.run {
        ProbeRun::Command(argv) => {
            let prog = argv.first().ok_or(HooksError::NoCommand)?;
            let exe = crate::trace::filter::which(prog)
                .ok_or_else(|| HooksError::Config(format!("command not found: {prog}")))?;
            let scope = Scope {
                exe,
                exe_name: prog.clone(),
                mapped: Vec::new(),
            };
            // A library not among those the program needs may be loaded later (dlopen):
            // its spec waits for it, said in a note.
            let mut specs = specs;
            let mut waiting = Vec::new();
            loop {
                match spec::select(&specs, &scope) {
                    Ok(mut sel) => {
                        sel.notes.splice(0..0, waiting);
                        break sel;
                    }
                    Err(SymbolError::ProbeLibraryAbsent { spec: text, reason }) => {
                        specs.retain(|s| s.text != text);
                        waiting.push(waiting_note(&text, &reason));
                        if specs.is_empty() {
                            break Selection {
                                notes: waiting,
                                ..Selection::default()
                            };
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        ProbeRun::Pids(pids) => select_in_processes(&specs, pids)?,
    };
    if sel.points.len() > CONFIRM_ABOVE && !cfg.yes {
        return Err(HooksError::Config(format!(
            "--probe {} selects {} functions: each call of one costs the program about {:.1} µs \
             (two kernel traps), so a program making a million such calls a second runs several \
             times slower; narrow the selection, or add --yes to go ahead",
            cfg.specs.join(" --probe "),
            sel.points.len(),
            COST_PER_CALL_NS as f64 / 1000.0
        )));
    }
    Ok(sel)
}

/// Each spec resolved in each process's own executable and libraries (processes may run
/// different programs, or other versions of a library), the functions of all put together. A
/// spec that selects nothing in some of the processes is said in a note; one that selects
/// nothing in any of them is an error (the first process's), as with one process.
pub(super) fn select_in_processes(
    specs: &[ProbeSpec],
    pids: &[u32],
) -> Result<Selection, HooksError> {
    if pids.is_empty() {
        return Err(HooksError::Config("no process given".into()));
    }
    let scopes: Vec<(u32, Scope)> = pids
        .iter()
        .map(|&pid| Ok((pid, attached_scope(pid)?)))
        .collect::<Result<_, HooksError>>()?;
    let mut all = Selection::default();
    for spec in specs {
        let mut first_error = None;
        let mut misses = Vec::new();
        let mut hit = false;
        for (pid, scope) in &scopes {
            match spec::select(std::slice::from_ref(spec), scope) {
                Ok(sel) => {
                    hit = true;
                    all.merge(sel);
                }
                Err(e) => {
                    misses.push(format!("pid {pid}: {e}"));
                    first_error.get_or_insert(e);
                }
            }
        }
        match (hit, first_error) {
            (false, Some(SymbolError::ProbeLibraryAbsent { spec: text, reason })) => {
                all.notes.push(waiting_note(&text, &reason));
            }
            (false, Some(e)) => return Err(e.into()),
            (true, Some(_)) => all.notes.extend(misses.into_iter().map(|m| {
                format!(
                    "{m}; --probe {} is probed in the other processes",
                    spec.text
                )
            })),
            _ => {}
        }
    }
    Ok(all)
}

/// What a spec whose library is not there yet says: it waits for a `dlopen`.
pub(super) fn waiting_note(text: &str, reason: &str) -> String {
    let reason = reason.split("; name the library").next().unwrap_or(reason);
    format!(
        "--probe {text}: {reason}; waiting: probed if a process loads such a library (dlopen) while hood records"
    )
}

/// The file names a running process's image needs or has mapped: libraries it maps later
/// but its executable does not need are ones it loads itself (dlopen).
pub(super) fn attached_needed(pid: u32) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let Ok(scope) = attached_scope(pid) else {
        return out;
    };
    for (_, shown) in &scope.mapped {
        out.insert(shown.rsplit('/').next().unwrap_or(shown).to_string());
    }
    if let Ok(f) = hood_format::untrusted::open(&scope.exe, hood_format::untrusted::Policy::NAMED) {
        if let Ok(d) = spec::dependencies(&f, &scope.exe) {
            out.extend(d);
        }
    }
    out
}

/// The executable and mapped libraries of a running process, opened through
/// `/proc/PID/exe` and `/proc/PID/map_files` (the very files mapped, whatever their paths
/// hold now).
pub(super) fn attached_scope(pid: u32) -> Result<Scope, HooksError> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let exe_link = proc_dir.join("exe");
    let shown = std::fs::read_link(&exe_link).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            HooksError::Perf(hood_perf::PerfError::NoSuchProcess(pid as i32))
        } else {
            HooksError::Io {
                what: format!(
                    "reading {} (is pid {pid} a kernel thread?)",
                    exe_link.display()
                ),
                source: e,
            }
        }
    })?;
    let mut mapped: Vec<(PathBuf, String)> = Vec::new();
    hood_procfs::process::for_each_maps_line(pid, |line| {
        let Some(m) = hood_raw::maps::parse_maps_line(line) else {
            return true;
        };
        let path = m.path.trim_end();
        if !m.is_exec()
            || !path.starts_with('/')
            || path.ends_with(" (deleted)")
            || mapped.iter().any(|(_, p)| p == path)
        {
            return true;
        }
        // map_files names a mapping by its range in hex (leading zeros optional).
        let range = format!("{:x}-{:x}", m.start, m.end);
        mapped.push((proc_dir.join("map_files").join(range), path.to_string()));
        true
    })
    .map_err(|source| HooksError::Io {
        what: format!("reading {}", proc_dir.join("maps").display()),
        source,
    })?;
    Ok(Scope {
        exe: exe_link,
        exe_name: shown.to_string_lossy().into_owned(),
        mapped,
    })
}

/// The key (address) each function is known by in the output: its address in its file, with
/// the file's index above bit 48 when two functions of different files have the same address.
/// The inlined copies of one function share one key (they are one row), the first copy's
/// address with bit 47 set (it lies inside another function, whose key its address is).
pub(super) fn keys(sel: &Selection) -> Vec<u64> {
    let mut first: HashMap<(usize, &str), u64> = HashMap::new();
    let base: Vec<u64> = sel
        .points
        .iter()
        .map(|p| {
            let inlined = p.entry_only == Some(spec::EntryOnly::Inlined);
            *first
                .entry((p.object, p.name.as_str()))
                .or_insert(p.addr | (u64::from(inlined) << 47))
        })
        .collect();
    let mut owners: HashMap<u64, Vec<usize>> = HashMap::new();
    for (p, &k) in sel.points.iter().zip(&base) {
        let o = owners.entry(k).or_default();
        if !o.contains(&p.object) {
            o.push(p.object);
        }
    }
    sel.points
        .iter()
        .zip(&base)
        .map(|(p, &k)| {
            if owners[&k].len() > 1 {
                k | ((p.object as u64 + 1) << 48)
            } else {
                k
            }
        })
        .collect()
}

/// What a selection probes, in words: `3 functions`, `2 functions with entry and return
/// probes, 4 inlined copies at entry only (counted, no time)`.
pub(super) fn probes_what(sel: &Selection) -> String {
    let count =
        |k: Option<spec::EntryOnly>| sel.points.iter().filter(|p| p.entry_only == k).count();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let (timed, go, inlined) = (
        count(None),
        count(Some(spec::EntryOnly::Go)),
        count(Some(spec::EntryOnly::Inlined)),
    );
    if go == 0 && inlined == 0 {
        return plural(timed, "function", "functions");
    }
    let mut parts = Vec::new();
    if timed > 0 {
        parts.push(format!(
            "{} with entry and return probes",
            plural(timed, "function", "functions")
        ));
    }
    if go > 0 {
        parts.push(format!(
            "{} at entry only (counted, no time)",
            plural(go, "Go function", "Go functions")
        ));
    }
    if inlined > 0 {
        parts.push(format!(
            "{} at entry only (counted, no time)",
            plural(inlined, "inlined copy", "inlined copies")
        ));
    }
    parts.join(", ")
}
