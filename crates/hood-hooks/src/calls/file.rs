//! Writing and reading Calls-kind files (hood-format container, chunks tags::calls::*).

use std::path::Path;

use hood_format::{tags, FileKind, FormatError, OutputFile, Reader, Writer};
use hood_tracemodel::calls::{
    decode_process, encode_process, CallsMeta, ProcessCalls, PAYLOAD_VERSION,
};

use crate::HooksError;

/// A Calls file as read.
pub struct CallsFile {
    /// One entry per process, in file order.
    pub procs: Vec<ProcessCalls>,
    /// The collection's description (command, time), when its chunk is there and readable.
    pub meta: Option<CallsMeta>,
}

/// Start a Calls file for `path` (see [`Writer::create`]: it replaces `path` only when put in
/// place); unless it is written in place (a pipe), it reads as a valid file of no processes
/// at once.
pub fn create(
    path: &Path,
    command: &str,
    argv: &[String],
) -> Result<Writer<OutputFile>, HooksError> {
    let mut w = Writer::create(path, FileKind::Calls)?;
    if !w.in_place_output() {
        body(&mut w, &meta(command, argv)?, &[])?;
        w.flush()?;
    }
    Ok(w)
}

/// Make `w` hold `procs`: a new whole content (a reader sees the previous complete one until
/// then), or, written in place, the chunks appended once. The bytes of the file.
pub fn rewrite(
    w: &mut Writer<OutputFile>,
    command: &str,
    argv: &[String],
    procs: &[ProcessCalls],
) -> Result<u64, HooksError> {
    let meta = meta(command, argv)?;
    if w.in_place_output() {
        body(w, &meta, procs)?;
        w.flush()?;
        return Ok(w.bytes_written());
    }
    Ok(w.rewrite(|w| body(w, &meta, procs))?)
}

/// Write a whole Calls file of `procs` and put it in place of `path` (the previous file stays
/// until this one is complete); the bytes written.
pub fn write(
    path: &Path,
    command: &str,
    argv: &[String],
    procs: &[ProcessCalls],
) -> Result<u64, HooksError> {
    let mut w = create(path, command, argv)?;
    rewrite(&mut w, command, argv, procs)?;
    Ok(w.commit()?)
}

/// The META chunk's payload.
fn meta(command: &str, argv: &[String]) -> Result<Vec<u8>, HooksError> {
    let realtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let meta = CallsMeta {
        version: PAYLOAD_VERSION,
        command: command.into(),
        argv: argv.to_vec(),
        collected_realtime_ns: realtime,
    };
    Ok(serde_json::to_vec(&meta)?)
}

/// META then one PROCESS chunk per process.
fn body<W: std::io::Write>(
    w: &mut Writer<W>,
    meta: &[u8],
    procs: &[ProcessCalls],
) -> Result<(), FormatError> {
    w.write_chunk(tags::calls::META, meta, false)?;
    for p in procs {
        w.write_chunk(tags::calls::PROCESS, &encode_process(p), true)?;
    }
    Ok(())
}

/// Read a Calls file; the reader's warnings (truncation) go to `warn`.
pub fn read(path: &Path, warn: &mut dyn FnMut(&str)) -> Result<CallsFile, HooksError> {
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
                    HooksError::Decode {
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
        return Err(HooksError::NoCallPaths(path.to_path_buf()));
    }
    Ok(CallsFile { procs, meta })
}
