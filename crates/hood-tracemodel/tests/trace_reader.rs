//! The two-pass trace reader on files built here: damaged event chunks give an answer or a
//! clear error, never a panic.

use hood_format::{tags, FileKind, Reader, Writer};
use hood_tracemodel::trace::{scan_reader, TraceMeta};

fn file(version: u32, events: &[u8]) -> Vec<u8> {
    let meta = TraceMeta {
        version,
        argv: vec!["prog".into()],
        buffer: 1024,
        full: "stop".into(),
        filters: Vec::new(),
        excludes: Vec::new(),
        sched: false,
        collected_realtime_ns: 0,
        irq: None,
        wake: None,
    };
    let mut w = Writer::new(Vec::new(), std::path::Path::new("t"), FileKind::Trace).unwrap();
    w.write_chunk(
        tags::trace::META,
        &serde_json::to_vec(&meta).unwrap(),
        false,
    )
    .unwrap();
    w.write_chunk(tags::trace::EVENTS, events, false).unwrap();
    w.finish().unwrap()
}

/// Found by fuzzing: an EVENTS chunk of just its pid and tid, in a file of word-encoded
/// events, made the first pass read the segment start past the chunk's end (a panic).
#[test]
fn an_events_chunk_shorter_than_its_header_is_not_read_past_its_end() {
    // Version 2 (varint steps) and version 3 (raw words) share the 24-byte header.
    for version in [2, 3] {
        for len in 8..24 {
            let mut ev = vec![0u8; len];
            ev[..4].copy_from_slice(&7u32.to_le_bytes());
            ev[4..8].copy_from_slice(&8u32.to_le_bytes());
            let r = Reader::from_bytes(file(version, &ev), "t").unwrap();
            if let Ok(head) = scan_reader(r) {
                assert!(head.threads.iter().all(|t| (t.pid, t.tid) == (7, 8)));
            }
        }
    }
}
