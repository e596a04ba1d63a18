//! Reading hood-rt trace segments from the private segment directory into the trace model, and
//! naming function addresses through each process's recorded mappings. Nothing in a segment is
//! trusted: invalid ones are skipped with a warning naming the file.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use hood_abi::{
    parse_funcs, parse_tags, trace_slot_read_len, HeaderView, TraceThreadView, TAGS_AREA_SIZE,
    THREAD_EXITED,
};
use hood_tracemodel::trace::{ProcessTrace, ThreadInfo};

use crate::segments;
use crate::HooksError;
use hood_symbols::{Symbolizer, SymbolizerOptions};

/// One decoded trace segment.
struct Seg {
    header: HeaderView,
    maps: String,
    tags: Vec<Option<String>>,
    funcs: Vec<u64>,
    threads: Vec<TraceThreadView>,
}

/// One thread's event words as the runtime wrote them (oldest first), with the anchor their
/// full timestamps are restored from and the segment (pid, start) whose function table their
/// indices refer to.
pub struct SegEvents {
    /// The segment's process.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// When the segment was created (CLOCK_MONOTONIC ns): with `pid`, which segment.
    pub start_mono_ns: u64,
    /// A full timestamp within 2^45 ticks of the first event, to restore the events' full
    /// timestamps from (each from the one before).
    pub anchor_ticks: u64,
    /// The event words, oldest first.
    pub words: Vec<u64>,
}

fn read_segment(path: &Path) -> Result<Seg, HooksError> {
    let (mut f, header, maps) =
        segments::open_segment(path, hood_abi::MODE_TRACE, "hood calls", false)?;
    let tagb = f.read_fixed(header.tags_offset, TAGS_AREA_SIZE, "the tag table")?;
    let tags = parse_tags(&header, &tagb);
    let funcb = f.read(
        header.funcs_offset,
        header.funcs_used as u64 * 8,
        "the function table",
    )?;
    let funcs = parse_funcs(&header, &funcb);
    let threads = segments::read_slots(
        &mut f,
        &header,
        |th| vec![(0, 0), (0, trace_slot_read_len(&header, th))],
        |h, b| TraceThreadView::parse(h, &b[1]),
        |t| t.tid,
    )?;
    Ok(Seg {
        header,
        maps,
        tags,
        funcs,
        threads,
    })
}

/// What a segment's header says of its process (no threads, names or notes yet).
pub fn process_of(h: &HeaderView) -> ProcessTrace {
    ProcessTrace {
        pid: h.pid,
        ppid: h.ppid,
        exe: h.exe_path.clone(),
        clock: hood_tracemodel::Clock::of_segment(h.clock),
        ticks_per_sec: h.ticks_per_sec,
        start_ticks: h.start_ticks,
        start_mono_ns: h.start_mono_ns,
        state: hood_tracemodel::ProcessState::Running,
        flags: 0,
        capacity: h.trace_capacity,
        full: match h.trace_full {
            hood_abi::TRACE_FULL_WRAP => "wrap",
            hood_abi::TRACE_FULL_STREAM => "stream",
            _ => "stop",
        }
        .into(),
        threads: Vec::new(),
        symbols: Default::default(),
        tags: Default::default(),
        funcs: Vec::new(),
        notes: Vec::new(),
        probe_cost: None,
        probe_cost_stepped: None,
        probe_stepped: Vec::new(),
    }
}

/// The note on hook events of signal handlers not recorded (hood-rt's trace hooks).
pub fn nested_note(n: u64) -> String {
    format!(
        "{n} function entries and exits of signal handlers were not recorded: the handler interrupted one of the runtime's hooks (a window of a few instructions), so its time counts to the function it interrupted"
    )
}

/// Read every trace segment in `dir`.
pub fn collect(dir: &Path, warnings: &mut Vec<String>) -> (Vec<ProcessTrace>, Vec<SegEvents>) {
    let mut segs = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for ent in rd.flatten() {
            let name = ent.file_name().to_string_lossy().into_owned();
            if !name.starts_with(hood_abi::SEGMENT_PREFIX) {
                continue;
            }
            match read_segment(&ent.path()) {
                Ok(s) => segs.push(s),
                Err(e) => warnings.push(format!("skipping segment {}: {e}", ent.path().display())),
            }
        }
    } else {
        warnings.push(format!("cannot read segment directory {}", dir.display()));
    }
    segs.sort_by_key(|s| (s.header.start_mono_ns, s.header.pid));
    let mut newest: HashMap<u32, u64> = HashMap::new();
    for s in &segs {
        let e = newest.entry(s.header.pid).or_insert(0);
        *e = (*e).max(s.header.start_mono_ns);
    }
    let mut sym = Symbolizer::new(SymbolizerOptions::default()).ok();
    let mut procs = Vec::new();
    let mut events = Vec::new();
    for s in segs {
        let h = &s.header;
        let state = if h.state == hood_abi::STATE_EXITED {
            hood_tracemodel::ProcessState::Exited
        } else if newest.get(&h.pid) != Some(&h.start_mono_ns) {
            hood_tracemodel::ProcessState::Exec
        } else if segments::pid_alive(h.pid) {
            hood_tracemodel::ProcessState::Running
        } else {
            hood_tracemodel::ProcessState::Gone
        };
        let mut notes = Vec::new();
        if state == hood_tracemodel::ProcessState::Gone {
            notes.push("process ended without running its exit handlers (killed or crashed); its events up to then are kept".to_string());
        }
        if h.flags & hood_abi::FLAG_FUNC_OVERRUN != 0 {
            notes.push(format!(
                "more than {} distinct functions: later ones are shown as [unknown function] (use --filter)",
                h.max_funcs
            ));
        }
        let nested: u64 = s.threads.iter().map(|t| t.nested).sum();
        if nested > 0 {
            notes.push(nested_note(nested));
        }
        if h.threads_unmeasured > 0 {
            let m = format!(
                "{} threads of pid {} were not traced: all {} thread slots were in use when they started (their calls are missing); raise HOOD_MAX_THREADS",
                h.threads_unmeasured, h.pid, h.max_threads
            );
            warnings.push(m.clone());
            notes.push(m);
        }
        let funcs: BTreeSet<u64> = s.funcs.iter().copied().filter(|&a| a != 0).collect();
        let mut symbols = match sym.as_mut() {
            Some(sym) => {
                let list: Vec<u64> = funcs.iter().copied().collect();
                crate::symbols::name_functions(&list, &s.maps, sym, &mut notes)
            }
            None => BTreeMap::new(),
        };
        if h.flags & hood_abi::FLAG_FUNC_OVERRUN != 0 || s.funcs.contains(&0) {
            symbols.insert(0, "[unknown function]".to_string());
        }
        let tags = s
            .tags
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((i as u64, l.clone()?)))
            .collect();
        procs.push(ProcessTrace {
            state,
            flags: h.flags,
            threads: s
                .threads
                .iter()
                .map(|t| ThreadInfo {
                    tid: t.tid,
                    exit_ticks: (t.state == THREAD_EXITED && t.exit_ticks != 0)
                        .then_some(t.exit_ticks),
                    written: t.written,
                    dropped: t.dropped,
                    overwritten: t.overwritten,
                })
                .collect(),
            symbols,
            tags,
            funcs: s.funcs,
            notes,
            probe_cost: None,
            probe_cost_stepped: None,
            probe_stepped: Vec::new(),
            ..process_of(h)
        });
        for t in s.threads {
            events.push(SegEvents {
                pid: h.pid,
                tid: t.tid,
                start_mono_ns: h.start_mono_ns,
                anchor_ticks: t.anchor_ticks,
                words: t.events,
            });
        }
    }
    (procs, events)
}

#[cfg(test)]
mod tests {
    #[test]
    fn bad_segments_and_directories_are_warnings() {
        let d = tempfile::tempdir().unwrap();
        crate::segments::tests::fifo(&d.path().join("hood-rt-4242-1"));
        std::fs::write(d.path().join("hood-rt-4244-1"), vec![0u8; 8192]).unwrap();
        let mut warnings = Vec::new();
        let (procs, events) = super::collect(d.path(), &mut warnings);
        assert!(procs.is_empty() && events.is_empty());
        warnings.sort();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("hood-rt-4242-1") && warnings[0].contains("not a regular file"),
            "{warnings:?}"
        );
        // All zeros: no magic.
        assert!(warnings[1].starts_with(&format!(
            "skipping segment {}",
            d.path().join("hood-rt-4244-1").display()
        )));
        let gone = d.path().join("gone");
        let mut warnings = Vec::new();
        super::collect(&gone, &mut warnings);
        assert_eq!(
            warnings,
            [format!("cannot read segment directory {}", gone.display())]
        );
    }
}
