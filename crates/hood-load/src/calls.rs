//! A call-path recording (a Calls-kind file, written by `hood calls run`/`get` and `--probe`)
//! read back: its processes' call-path tables and the collection's description.

use std::path::Path;

use hood_format::{tags, FileKind, Reader};
use hood_tracemodel::calls::{decode_process, CallsMeta, ProcessCalls};

use crate::LoadError;

/// A Calls file as read.
pub struct CallsFile {
    /// One entry per process, in file order.
    pub procs: Vec<ProcessCalls>,
    /// The collection's description (command, time), when its chunk is there and readable.
    pub meta: Option<CallsMeta>,
}

/// Read a Calls file; the reader's warnings (truncation) go to `warn`.
pub fn read(path: &Path, warn: &mut dyn FnMut(&str)) -> Result<CallsFile, LoadError> {
    let mut r = Reader::open(path)?;
    hood_format::expect_kind(&r, FileKind::Calls, "hood calls report")?;
    let mut procs = Vec::new();
    let mut meta = None;
    let mut saw_meta = false;
    for c in r.chunks() {
        let c = c?;
        match c.tag {
            tags::calls::META => {
                saw_meta = true;
                meta = meta.or_else(|| serde_json::from_slice(&c.data).ok());
            }
            tags::calls::PROCESS => {
                procs.push(decode_process(&c.data, c.offset).map_err(|source| {
                    LoadError::CallsDecode {
                        path: path.to_path_buf(),
                        source,
                    }
                })?)
            }
            _ => {}
        }
    }
    for w in r.warnings() {
        warn(w);
    }
    if !saw_meta && procs.is_empty() {
        return Err(LoadError::NoCallPaths(path.to_path_buf()));
    }
    Ok(CallsFile { procs, meta })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use hood_format::Writer;
    use hood_tracemodel::calls::{encode_process, Limits, PAYLOAD_VERSION};

    use super::*;

    fn process(pid: u32, exe: &str) -> ProcessCalls {
        ProcessCalls {
            pid,
            ppid: 1,
            exe: exe.into(),
            ticks_per_sec: 1_000_000_000,
            clock: hood_tracemodel::Clock::Monotonic,
            compensate: false,
            comp_self_ticks: 0,
            comp_child_ticks: 0,
            flags: 0,
            limits: Limits::default(),
            state: hood_tracemodel::ProcessState::Exited,
            span_ns: 5,
            threads: Vec::new(),
            symbols: BTreeMap::from([(0x1000, "main".to_string())]),
            notes: vec!["a note".into()],
        }
    }

    /// A Calls file as the format has it (docs/format.md): META, then one PROCESS chunk per
    /// process.
    fn write(path: &Path, meta: Option<&CallsMeta>, procs: &[ProcessCalls]) {
        let mut w = Writer::create(path, FileKind::Calls).unwrap();
        if let Some(m) = meta {
            w.write_chunk(tags::calls::META, &serde_json::to_vec(m).unwrap(), false)
                .unwrap();
        }
        for p in procs {
            w.write_chunk(tags::calls::PROCESS, &encode_process(p), true)
                .unwrap();
        }
        w.commit().unwrap();
    }

    #[test]
    fn a_written_file_reads_back_with_its_meta() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.data");
        let procs = vec![process(7, "/bin/a"), process(8, "/bin/b")];
        let meta = CallsMeta {
            version: PAYLOAD_VERSION,
            command: "run".into(),
            argv: vec!["prog".to_string(), "x".to_string()],
            collected_realtime_ns: 1,
        };
        write(&path, Some(&meta), &procs);
        let mut warnings = Vec::new();
        let back = read(&path, &mut |w| warnings.push(w.to_string())).unwrap();
        assert_eq!(back.procs, procs);
        assert_eq!(back.meta, Some(meta));
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn a_file_without_call_paths_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.calls");
        write(&path, None, &[]);
        match read(&path, &mut |_| {}) {
            Err(e @ LoadError::NoCallPaths(_)) => {
                assert!(
                    e.to_string().ends_with("no call-path data in this file"),
                    "{e}"
                )
            }
            other => panic!("an empty file: {:?}", other.map(|f| f.procs.len())),
        }
    }

    #[test]
    fn a_file_of_another_kind_or_a_missing_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("not-calls");
        std::fs::write(&other, b"plain text, not a hood file").unwrap();
        assert!(read(&other, &mut |_| {}).is_err());
        let missing = dir.path().join("missing");
        match read(&missing, &mut |_| {}) {
            Err(LoadError::Format(_)) => {}
            other => panic!("a missing file: {:?}", other.map(|f| f.procs.len())),
        }
    }
}
