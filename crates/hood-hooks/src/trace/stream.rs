//! Streaming (`hood trace record`'s default): while the program runs, the recorder takes every
//! thread's new events out of its ring in the segment and appends them to the trace file, so a
//! run of any length loses nothing as long as the recorder keeps up.
//!
//! The protocol (hood-abi `TRACE_FULL_STREAM`): the thread appends at `trace_written` (release
//! store after the event word); the recorder reads `trace_written`, copies the events between
//! its own count of events taken and that, and only then stores the new count in the slot's
//! `trace_read`, freeing the ring slots. The thread reloads `trace_read` (acquire) when it
//! reaches the end of the room it last saw, and counts an event as dropped only when the whole
//! ring is events not yet taken. The recorder keeps its own count; the segment's value is never
//! read back, so a confused or hostile process cannot make it read outside the ring.
//!
//! Reads go through the checked segment descriptor (`pread`), straight into the chunk buffer
//! (at most `MAX_EVENTS_PER_CHUNK` events), so no allocation is sized by a segment's claim. The
//! words are stored as they are (EVENTS version 3): the recorder does no work per event.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hood_abi::{stream_span, HeaderView, ThreadHeader, THREAD_HEADER_SIZE};
use hood_format::{tags, Writer};
use hood_tracemodel::trace::{
    events_header, ProcessTrace, ThreadInfo, EVENTS_HEADER, PAYLOAD_VERSION,
};

use hood_proc::shm::ShmFile;
use hood_procfs::process::MAX_EXEC_MAPS_BYTES;
use hood_symbols::Symbolizer;

use crate::segments;
use crate::HooksError;

/// Events per EVENTS chunk at most (and per read: the buffer is bounded by this, never by a
/// segment's claim).
const CHUNK_EVENTS: usize = hood_tracemodel::trace::MAX_EVENTS_PER_CHUNK;

/// One thread of a streamed segment.
struct StreamThread {
    tid: u32,
    /// Events taken out of the ring so far.
    taken: u64,
    /// Full timestamp of the last event taken (the next chunk's anchor).
    anchor: u64,
    started: bool,
}

/// One streamed segment.
struct StreamSeg {
    file: ShmFile,
    header: HeaderView,
    threads: Vec<StreamThread>,
    /// The copy of /proc/PID/maps the process made at its start.
    maps: String,
    /// Function-table entries in the provisional PROCESS chunk written last.
    funcs_written: Option<u32>,
    funcs_at: Option<Instant>,
    /// Provisional PROCESS chunks written (they come quickly at first, see
    /// [`provisional_every`]).
    provisionals: u32,
    /// The function table read so far, and the names found for its addresses.
    funcs: Vec<u64>,
    names: BTreeMap<u64, String>,
    /// The addresses already given to the symbolizer (named or not).
    looked: BTreeSet<u64>,
    /// Why some functions have no name (from the symbolizer).
    name_notes: Vec<String>,
    /// Threads that exited and were taken whole, whose slots were given back for new
    /// threads: what the final PROCESS chunk says of them (their slots no longer do), and the
    /// hook events of their signal handlers not recorded.
    retired: Vec<ThreadInfo>,
    retired_nested: u64,
    /// Finished: the process exited (or exec'd) and its last events were taken.
    done: bool,
}

impl StreamSeg {
    /// The thread slots the process has used so far (at most its header's number of slots).
    fn threads_used(&self) -> Result<u32, HooksError> {
        let b = self.file.read_fixed(
            hood_abi::parse::THREADS_USED_OFFSET as u64,
            4,
            "threads_used",
        )?;
        Ok(u32_at(&b, 0).min(self.header.max_threads))
    }
}

/// The streaming half of the recorder.
pub struct Streamer {
    dir: PathBuf,
    /// Every segment file seen, by name (in the order they are drained); `None`: not a
    /// streamed trace segment. Finished ones stay, marked `done`, for the names and threads
    /// the end of the recording asks for.
    segs: BTreeMap<OsString, Option<StreamSeg>>,
    /// The newest segment of each pid (start time): an older one was left by an exec.
    newest: HashMap<u32, u64>,
    /// Whether the directory gained segments since the last look.
    watch: segments::DirWatch,
    payload: Vec<u8>,
    /// Names the functions of the provisional PROCESS chunks (`None`: it could not be made;
    /// functions are then shown by address until the end).
    sym: Option<Symbolizer>,
    /// Events written to the file.
    pub events: u64,
    /// Events the ring's owner overwrote before they were taken (a broken protocol; 0).
    pub skipped: u64,
    /// Segments skipped, with why.
    pub warnings: Vec<String>,
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]))
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]))
}

impl Streamer {
    /// Stream the segments that appear in `dir`.
    pub fn new(dir: &Path) -> Streamer {
        Streamer {
            dir: dir.to_owned(),
            segs: BTreeMap::new(),
            newest: HashMap::new(),
            watch: segments::DirWatch::new(dir),
            payload: Vec::new(),
            sym: crate::symbols::symbolizer().ok(),
            events: 0,
            skipped: 0,
            warnings: Vec::new(),
        }
    }

    /// One round: pick up new segments, append every thread's new events to `w` and free
    /// their ring slots. Returns the events taken.
    pub fn drain<W: Write>(&mut self, w: &mut Writer<W>) -> Result<u64, HooksError> {
        self.scan();
        let mut moved = 0;
        let Streamer {
            dir,
            segs,
            newest,
            payload,
            sym,
            skipped,
            warnings,
            ..
        } = self;
        for (name, s) in segs.iter_mut() {
            let Some(s) = s.as_mut().filter(|s| !s.done) else {
                continue;
            };
            // Segments of a pid that has a newer segment were left by exec: finish them.
            let exec_left = newest.get(&s.header.pid) != Some(&s.header.start_mono_ns);
            let state = s
                .file
                .read_fixed(hood_abi::parse::STATE_OFFSET as u64, 4, "the state")
                .map(|b| u32_at(&b, 0))
                .unwrap_or(0);
            let finished = exec_left || state == hood_abi::STATE_EXITED;
            if s.funcs_written.is_none()
                || s.funcs_at
                    .is_some_and(|t| t.elapsed() >= provisional_every(s.provisionals))
            {
                provisional_process(s, !exec_left, sym.as_mut(), w)?;
            }
            match drain_seg(s, w, payload) {
                Ok((n, lost)) => {
                    moved += n;
                    *skipped += lost;
                }
                // A write to the trace file that failed (a full disk) ends the recording, not
                // one segment's streaming: the caller stops the run and says why.
                Err(e @ HooksError::Format(_)) => return Err(e),
                Err(e) => {
                    warnings.push(format!(
                        "segment {}: {e}; events after that were not recorded",
                        dir.join(name).display()
                    ));
                    s.done = true;
                }
            }
            if finished {
                s.done = true;
                release_rings(s);
            }
        }
        self.events += moved;
        if moved > 0 {
            w.flush()?;
        }
        Ok(moved)
    }

    fn scan(&mut self) {
        if !self.watch.changed() {
            return;
        }
        for (name, path) in segments::new_segments(&self.dir, |n| self.segs.contains_key(n)) {
            match segments::open_segment(&path, hood_abi::MODE_TRACE, "hood calls", true) {
                Ok((file, header, maps)) if header.trace_full == hood_abi::TRACE_FULL_STREAM => {
                    let newest = self.newest.entry(header.pid).or_insert(0);
                    *newest = (*newest).max(header.start_mono_ns);
                    self.segs.insert(
                        name,
                        Some(StreamSeg {
                            file,
                            header,
                            maps,
                            threads: Vec::new(),
                            funcs_written: None,
                            funcs_at: None,
                            provisionals: 0,
                            funcs: Vec::new(),
                            names: BTreeMap::new(),
                            looked: BTreeSet::new(),
                            name_notes: Vec::new(),
                            retired: Vec::new(),
                            retired_nested: 0,
                            done: false,
                        }),
                    );
                }
                Ok(_) => {
                    self.segs.insert(name, None);
                }
                // Not ready yet (header being written): look again next round.
                Err(_) => self.watch.again(),
            }
        }
    }
}

impl Streamer {
    /// The names found while streaming for the functions of the process `pid` started at
    /// `start_mono_ns` (from its live mappings: they include libraries it loaded later and
    /// unloaded again, which its segment's copies may not).
    pub fn names(&self, pid: u32, start_mono_ns: u64) -> Option<&BTreeMap<u64, String>> {
        self.segs
            .values()
            .flatten()
            .find(|s| s.header.pid == pid && s.header.start_mono_ns == start_mono_ns)
            .map(|s| &s.names)
    }

    /// The threads of the process `pid` started at `start_mono_ns` whose slots were given
    /// back to it for new threads, and the hook events of their signal handlers that were not
    /// recorded.
    pub fn retired(&self, pid: u32, start_mono_ns: u64) -> (&[ThreadInfo], u64) {
        self.segs
            .values()
            .flatten()
            .find(|s| s.header.pid == pid && s.header.start_mono_ns == start_mono_ns)
            .map_or((&[][..], 0), |s| (&s.retired[..], s.retired_nested))
    }
}

/// Time between two provisional PROCESS chunks of a process whose function table grows: 50 ms
/// after the first, doubling up to a second, so a trace cut in its first moments names its
/// functions without a chunk per round for the whole run.
fn provisional_every(written: u32) -> Duration {
    Duration::from_millis((50u64 << written.min(5)).min(1000))
}

/// A PROCESS chunk with what is known while the process runs (its clock, its function table
/// and the names of its functions, read through its mappings as they appear): a file whose
/// recorder was killed, or that was cut short, still reads with names for every function
/// known to the last one. The final chunk written at the end replaces it. `live`: the process
/// still runs this image, so its /proc/PID/maps describes these addresses.
fn provisional_process<W: Write>(
    s: &mut StreamSeg,
    live: bool,
    sym: Option<&mut Symbolizer>,
    w: &mut Writer<W>,
) -> Result<(), HooksError> {
    let h = &s.header;
    let used = s
        .file
        .read_fixed(hood_abi::parse::FUNCS_USED_OFFSET as u64, 4, "funcs_used")
        .map(|b| u32_at(&b, 0).min(h.max_funcs))
        .unwrap_or(0);
    s.funcs_at = Some(Instant::now());
    if s.funcs_written == Some(used) {
        return Ok(());
    }
    // The whole table each time (at most `max_funcs` entries): an entry claimed but not yet
    // stored reads 0 and is read again next time.
    if let Ok(b) = s
        .file
        .read_fixed(h.funcs_offset, used as u64 * 8, "the function table")
    {
        s.funcs = (0..used as usize).map(|i| u64_at(&b, i * 8)).collect();
    }
    if let Some(sym) = sym {
        let mut new: Vec<u64> = s
            .funcs
            .iter()
            .copied()
            .filter(|&a| a != 0 && !s.looked.contains(&a))
            .collect();
        new.sort_unstable();
        new.dedup();
        s.looked.extend(new.iter().copied());
        if !new.is_empty() {
            // The mappings at the process's start first (no pid reuse can change them), then
            // its live ones for libraries loaded since.
            let mut maps = s.maps.clone();
            if live {
                if let Some((m, _)) = hood_procfs::process::exec_maps(h.pid, MAX_EXEC_MAPS_BYTES) {
                    maps.push('\n');
                    maps.push_str(&m);
                }
            }
            let mut notes = Vec::new();
            s.names
                .extend(crate::symbols::name_functions(&new, &maps, sym, &mut notes));
            for n in notes {
                if !s.name_notes.contains(&n) && s.name_notes.len() < 16 {
                    s.name_notes.push(n);
                }
            }
        }
    }
    let mut notes = vec!["the recording ended while this process ran (the recorder was stopped, or the file is cut short): functions first called in its last moments may be shown by address".to_string()];
    notes.extend(s.name_notes.iter().cloned());
    let p = ProcessTrace {
        funcs: s.funcs.clone(),
        symbols: s.names.clone(),
        notes,
        probe_cost: None,
        probe_cost_stepped: None,
        probe_stepped: Vec::new(),
        ..super::collect::process_of(h)
    };
    let v = serde_json::json!({"version": PAYLOAD_VERSION, "process": p});
    w.write_chunk(tags::trace::PROCESS, &serde_json::to_vec(&v)?, true)?;
    s.funcs_written = Some(used);
    s.provisionals += 1;
    Ok(())
}

/// Take every thread's new events of one segment: (events taken, events skipped).
fn drain_seg<W: Write>(
    s: &mut StreamSeg,
    w: &mut Writer<W>,
    payload: &mut Vec<u8>,
) -> Result<(u64, u64), HooksError> {
    let h = &s.header;
    let used = s.threads_used()?;
    let cap = h.trace_capacity;
    let (mut total, mut skipped) = (0, 0);
    // Slots of exited threads taken whole, with their headers: given back after the walk.
    let mut exited = Vec::new();
    for i in 0..used {
        let slot = h.slot_offset(i);
        let mut th = s
            .file
            .read_fixed(slot, THREAD_HEADER_SIZE as u64, "a thread header")?;
        // `pread` copies bytes with no promise that an 8-byte counter is read whole: a torn
        // `trace_written` could claim events not yet written. A second read bounds it, and the
        // smaller of the two is used (the counter only grows).
        let wo = core::mem::offset_of!(ThreadHeader, trace_written);
        let again = s
            .file
            .read_fixed(slot + wo as u64, 8, "a thread header")
            .map(|b| u64_at(&b, 0))?;
        if again < u64_at(&th, wo) {
            th[wo..wo + 8].copy_from_slice(&again.to_le_bytes());
        }
        // The slot is published (tid, reset_ticks) once its state is set (release).
        let state = u32_at(&th, core::mem::offset_of!(ThreadHeader, state));
        if state == 0 {
            continue;
        }
        while s.threads.len() <= i as usize {
            s.threads.push(StreamThread {
                tid: 0,
                taken: 0,
                anchor: 0,
                started: false,
            });
        }
        let t = &mut s.threads[i as usize];
        if !t.started {
            t.tid = u32_at(&th, core::mem::offset_of!(ThreadHeader, tid));
            t.anchor = u64_at(&th, core::mem::offset_of!(ThreadHeader, reset_ticks));
            t.started = true;
        }
        let (first, count, lost) = stream_span(h, &th, t.taken);
        skipped += lost;
        if count == 0 {
            if state == hood_abi::THREAD_EXITED {
                exited.push((i, th));
            }
            continue;
        }
        // A thread silent for hours: re-anchor on the clock's present, estimated from the
        // segment's calibration, so the truncated timestamps restore (they keep 2^46 ticks).
        let est = h.start_ticks.wrapping_add(
            ((hood_proc::clock::monotonic_ns().saturating_sub(h.start_mono_ns)) as u128
                * h.ticks_per_sec as u128
                / 1_000_000_000) as u64,
        );
        if (est.wrapping_sub(t.anchor) as i64) > (1i64 << 44) {
            t.anchor = est;
        }
        // Whole blocks of the ring go to the file as they are (a header, then the words):
        // nothing is decoded or compressed per event; the report restores the timestamps.
        let mut n = 0;
        while n < count {
            let take = (count - n).min(CHUNK_EVENTS as u64);
            let len = EVENTS_HEADER + take as usize * 8;
            if payload.len() < len {
                payload.resize(len, 0);
            }
            let chunk = &mut payload[..len];
            chunk[..EVENTS_HEADER].copy_from_slice(&events_header(
                h.pid,
                t.tid,
                h.start_mono_ns,
                t.anchor,
            ));
            let mut m = 0;
            while m < take {
                let idx = (first + n + m) % cap;
                let run = (take - m).min(cap - idx);
                let off = slot + THREAD_HEADER_SIZE as u64 + idx * hood_abi::TRACE_EVENT_SIZE;
                let at = EVENTS_HEADER + m as usize * 8;
                s.file
                    .read_into(off, &mut chunk[at..at + run as usize * 8], "the event ring")
                    .map_err(|e| HooksError::Segment(format!("thread {}: {e}", t.tid)))?;
                m += run;
            }
            n += take;
            // Release the slots only after the copy: the thread may overwrite them from now
            // on. Each chunk's are released at once, so a program outrunning the recorder
            // gets room back before the rest of a long drain.
            t.taken = first + n;
            s.file
                .write_at(
                    &t.taken.to_le_bytes(),
                    slot + core::mem::offset_of!(ThreadHeader, trace_read) as u64,
                )
                .map_err(|e| HooksError::Segment(format!("writing the read position: {e}")))?;
            t.anchor = next_anchor(t.anchor, &chunk[EVENTS_HEADER..]);
            w.write_chunk(tags::trace::EVENTS, chunk, false)?;
        }
        total += count;
    }
    for (i, th) in exited {
        retire(s, i, &th)?;
    }
    Ok((total, skipped))
}

/// A finished segment's event rings, every event of which was taken, are given back to the
/// system: a run that starts thousands of processes (a build, a test suite) would otherwise
/// hold each one's ring pages in the segment directory's memory until it ends. What the end
/// of the recording reads of the segment (its header, function table, maps and thread
/// headers) stays. Where the file system cannot punch holes the memory stays, as before.
fn release_rings(s: &StreamSeg) {
    let h = &s.header;
    let used = s.threads_used().unwrap_or(0);
    let ring = h.trace_capacity.saturating_mul(hood_abi::TRACE_EVENT_SIZE);
    for i in 0..used {
        let _ = s
            .file
            .release(h.slot_offset(i) + THREAD_HEADER_SIZE as u64, ring);
    }
}

/// Slot `i`'s thread has exited and every event of it was taken (`th`: its header as read at
/// the start of this round, when it already said so): keep what the final PROCESS chunk needs
/// of it, clear the slot's tid and state, and mark it free so a new thread of the process can
/// claim it (hood-abi `FREE_SLOTS_OFFSET`). A process that starts threads per request then
/// never runs out of slots. Slots past `REUSABLE_SLOTS` are not given back.
fn retire(s: &mut StreamSeg, i: u32, th: &[u8]) -> Result<(), HooksError> {
    if i >= hood_abi::REUSABLE_SLOTS {
        return Ok(());
    }
    let t = &mut s.threads[i as usize];
    let exit_ticks = u64_at(th, core::mem::offset_of!(ThreadHeader, exit_ticks));
    s.retired.push(ThreadInfo {
        tid: t.tid,
        exit_ticks: (exit_ticks != 0).then_some(exit_ticks),
        written: t.taken,
        dropped: u64_at(th, core::mem::offset_of!(ThreadHeader, trace_dropped)),
        overwritten: 0,
    });
    s.retired_nested += u64_at(th, core::mem::offset_of!(ThreadHeader, lost_calls));
    *t = StreamThread {
        tid: 0,
        taken: 0,
        anchor: 0,
        started: false,
    };
    let slot = s.header.slot_offset(i);
    let fail = |e| HooksError::Segment(format!("giving back thread slot {i}: {e}"));
    // tid and state (the first 8 bytes) cleared first: a reader skips the slot from now on,
    // and the runtime publishes it again (state, release) once a new thread has set it up.
    s.file.write_at(&[0u8; 8], slot).map_err(fail)?;
    s.file
        .write_at(
            &[hood_abi::SLOT_FREE],
            hood_abi::FREE_SLOTS_OFFSET + i as u64,
        )
        .map_err(fail)?;
    Ok(())
}

/// The full timestamp of the last of `words` (raw event words), the next chunk's anchor. The
/// anchor is within 2^44 ticks of the present (re-anchored above when it is not) and the last
/// event was written before now, so that word alone restores it.
fn next_anchor(anchor: u64, words: &[u8]) -> u64 {
    match words.len().checked_sub(8) {
        Some(o) => hood_abi::restore_ticks(anchor, u64_at(words, o)),
        None => anchor,
    }
}

#[cfg(test)]
mod tests {
    use hood_format::{FileKind, Writer};

    #[test]
    fn planted_files_are_not_streamed_and_do_not_hang() {
        let d = tempfile::tempdir().unwrap();
        crate::segments::tests::fifo(&d.path().join("hood-rt-4242-1"));
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("hood-rt-4243-1")).unwrap();
        std::fs::write(d.path().join("hood-rt-4244-1"), vec![0u8; 8192]).unwrap();
        let mut w = Writer::new(Vec::new(), d.path(), FileKind::Trace).unwrap();
        let header_len = w.bytes_written();
        let mut s = super::Streamer::new(d.path());
        for _ in 0..3 {
            assert_eq!(s.drain(&mut w).unwrap(), 0);
        }
        assert_eq!((s.events, s.skipped), (0, 0));
        assert_eq!(w.bytes_written(), header_len, "something written");
    }
}
