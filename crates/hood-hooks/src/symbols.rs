//! Naming the function addresses of each process at collection time, through its mappings
//! (live /proc/PID/maps, else the copy in the segment) and hood-symbols.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use hood_procfs::process::MAX_EXEC_MAPS_BYTES;
use hood_raw::maps::AddressSpace;
use hood_symbols::{Symbolizer, SymbolizerOptions};
use hood_tracemodel::calls::ProcessCalls;

/// The executable file mappings in `text` (a /proc/PID/maps text), each holding the index of
/// its path in the returned list.
fn parse_maps(text: &str) -> (AddressSpace<usize>, Vec<String>) {
    let mut space = AddressSpace::default();
    let mut paths: Vec<String> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for m in text
        .lines()
        .filter_map(hood_raw::maps::parse_maps_line)
        .filter(|m| m.is_exec() && m.path.starts_with('/'))
    {
        let i = *index.entry(m.path).or_insert_with(|| {
            paths.push(m.path.to_string());
            paths.len() - 1
        });
        space.insert(m.start, m.end, m.offset, i);
    }
    (space, paths)
}

/// Name each function address through the executable mappings in `maps_text` (a
/// /proc/PID/maps text), batched per file. Addresses without a symbol are left out; `notes`
/// says how many and why.
pub fn name_functions(
    funcs: &[u64],
    maps_text: &str,
    sym: &mut Symbolizer,
    notes: &mut Vec<String>,
) -> BTreeMap<u64, String> {
    let (maps, paths) = parse_maps(maps_text);
    let mut by_file: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    let mut unmapped = 0usize;
    for &f in funcs {
        match maps
            .lookup(f)
            .and_then(|(i, off)| Some((paths.get(i)?, off)))
        {
            Some((path, offset)) => by_file.entry(path).or_default().push((f, offset)),
            None => unmapped += 1,
        }
    }
    let mut out = BTreeMap::new();
    for (file, list) in by_file {
        let offs: Vec<u64> = list.iter().map(|&(_, o)| o).collect();
        let res = sym.symbolize_file(Path::new(file), None, &offs);
        let mut missing = 0usize;
        for (&(addr, _), r) in list.iter().zip(res) {
            match r {
                Ok(s) if s.offset == 0 => {
                    out.insert(addr, s.name);
                }
                Ok(s) => {
                    out.insert(addr, format!("{}+{:#x}", s.name, s.offset));
                }
                Err(_) => missing += 1,
            }
        }
        if missing > 0 {
            notes.push(format!(
                "{missing} functions in {file} have no symbol (stripped?); shown as addresses"
            ));
        }
    }
    if unmapped > 0 {
        notes.push(format!(
            "{unmapped} function addresses were outside the recorded mappings; shown as addresses"
        ));
    }
    out
}

/// Fill `p.symbols` for every function address in its tables.
pub fn resolve(p: &mut ProcessCalls, live: bool, segment_maps: &str, sym: &mut Symbolizer) {
    let live_maps = if live {
        hood_procfs::process::exec_maps(p.pid, MAX_EXEC_MAPS_BYTES).map(|(m, _)| m)
    } else {
        None
    };
    let mut funcs: Vec<u64> = p
        .threads
        .iter()
        .flat_map(|t| t.paths.iter().map(|e| e.func))
        .filter(|&f| f != 0)
        .collect();
    funcs.sort_unstable();
    funcs.dedup();
    let names = name_functions(
        &funcs,
        live_maps.as_deref().unwrap_or(segment_maps),
        sym,
        &mut p.notes,
    );
    p.symbols.extend(names);
}

/// A symbolizer with default options.
pub fn symbolizer() -> Result<Symbolizer, crate::HooksError> {
    Ok(Symbolizer::new(SymbolizerOptions::default())?)
}
