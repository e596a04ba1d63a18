//! Writing Calls-kind files (hood-format container, chunks tags::calls::*); hood-load reads
//! them back.

use std::path::Path;

use hood_format::{tags, FileKind, FormatError, OutputFile, Writer};
use hood_tracemodel::calls::{encode_process, CallsMeta, ProcessCalls, PAYLOAD_VERSION};

use crate::HooksError;

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

/// The processes of a Calls file as written, read back chunk by chunk with the reader's
/// warnings, for the writer's tests (hood-load is the reader users get).
#[cfg(test)]
pub(crate) fn written(path: &Path) -> (Vec<ProcessCalls>, Vec<String>) {
    let mut r = hood_format::Reader::open(path).expect("a readable file");
    assert_eq!(r.kind(), FileKind::Calls);
    let procs = r
        .chunks()
        .map(|c| c.expect("a whole chunk"))
        .filter(|c| c.tag == tags::calls::PROCESS)
        .map(|c| hood_tracemodel::calls::decode_process(&c.data, c.offset).expect("a process"))
        .collect();
    (procs, r.warnings().to_vec())
}
