//! Round trips, truncation at every byte, corruption of every byte, and random input.

use std::path::Path;

use hood_format::{expect_kind, FileKind, FormatError, Reader, Writer};
use proptest::prelude::*;

fn sample_file(kind: FileKind) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), Path::new("mem"), kind).unwrap();
    w.write_chunk(0x0101, b"{\"meta\":1}", false).unwrap();
    let big: Vec<u8> = (0..5000u32).flat_map(|i| (i % 17).to_le_bytes()).collect();
    w.write_chunk(0x0103, &big, true).unwrap();
    w.write_chunk(0x0109, b"", true).unwrap();
    w.finish().unwrap()
}

/// Tagged payloads and the reader's warnings.
type ReadBack = (Vec<(u32, Vec<u8>)>, Vec<String>);

fn read_all(bytes: Vec<u8>) -> Result<ReadBack, FormatError> {
    let mut r = Reader::from_bytes(bytes, "mem")?;
    let mut out = Vec::new();
    for c in r.chunks() {
        let c = c?;
        out.push((c.tag, c.data));
    }
    Ok((out, r.warnings().to_vec()))
}

#[test]
fn round_trip_keeps_tags_and_payloads() {
    let bytes = sample_file(FileKind::Profile);
    let (chunks, warnings) = read_all(bytes.clone()).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[0], (0x0101, b"{\"meta\":1}".to_vec()));
    let big: Vec<u8> = (0..5000u32).flat_map(|i| (i % 17).to_le_bytes()).collect();
    assert_eq!(chunks[1].1, big);
    assert!(
        bytes.len() < big.len(),
        "compressible payload was stored compressed"
    );
    assert_eq!(chunks[2], (0x0109, Vec::new()));
}

#[test]
fn every_cut_reads_the_whole_chunks_before_it() {
    let bytes = sample_file(FileKind::Profile);
    let (full, _) = read_all(bytes.clone()).unwrap();
    for cut in 0..bytes.len() {
        match read_all(bytes[..cut].to_vec()) {
            Ok((chunks, warnings)) => {
                assert!(chunks.len() < full.len(), "cut at {cut} lost nothing?");
                assert_eq!(&full[..chunks.len()], &chunks[..]);
                let at_boundary = warnings.is_empty();
                if !at_boundary {
                    assert!(warnings[0].contains("cut short"), "{warnings:?}");
                }
            }
            Err(FormatError::NotHood { hint, .. }) => {
                assert!(cut < 32, "cut {cut}: {hint}");
                // An empty file is called empty; a cut header says how much there is.
                match cut {
                    0 => assert_eq!(hint, " (the file is empty)"),
                    n => assert!(hint.contains(&format!("only {n} bytes")), "{hint}"),
                }
            }
            Err(e) => panic!("cut at {cut}: unexpected error {e}"),
        }
    }
}

#[test]
fn every_flipped_byte_is_an_error_naming_an_offset_or_a_bad_header() {
    let bytes = sample_file(FileKind::Profile);
    let (full, _) = read_all(bytes.clone()).unwrap();
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x5a;
        match read_all(damaged) {
            Ok((chunks, _)) => {
                // Only the reserved/unused header bytes may change without detection.
                assert_eq!(chunks, full, "flip at {i} silently changed data");
            }
            Err(FormatError::CorruptChunk { offset, .. }) => assert!(offset <= i as u64),
            Err(FormatError::BadHeader { .. }) | Err(FormatError::NotHood { .. }) => {
                assert!(i < 32)
            }
            Err(e) => panic!("flip at {i}: unexpected {e}"),
        }
    }
}

#[test]
fn wrong_kind_names_the_reading_command() {
    let r = Reader::from_bytes(sample_file(FileKind::Calls), "x.data").unwrap();
    let err = expect_kind(&r, FileKind::Profile, "hood report").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("hood calls report"), "{msg}");
}

#[test]
fn perf_data_files_are_recognised() {
    let mut bytes = b"PERFILE2".to_vec();
    bytes.resize(200, 0);
    let err = Reader::from_bytes(bytes, "perf.data").unwrap_err();
    assert!(err.to_string().contains("perf record"), "{err}");
}

#[test]
fn file_round_trip_and_missing_file_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.data");
    let mut w = Writer::create(&path, FileKind::Trace).unwrap();
    w.write_chunk(7, b"hello", true).unwrap();
    w.sync().unwrap();
    w.commit().unwrap();
    let mut r = Reader::open(&path).unwrap();
    assert_eq!(r.kind(), FileKind::Trace);
    let c = r.next_chunk().unwrap().unwrap();
    assert_eq!((c.tag, c.offset, c.data.as_slice()), (7, 32, &b"hello"[..]));
    let err = Reader::open(&dir.path().join("nope.data")).unwrap_err();
    assert!(err.to_string().contains("nope.data"));
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = read_all(bytes);
    }

    #[test]
    fn mutated_files_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
                                 cut in any::<usize>()) {
        let mut bytes = sample_file(FileKind::Profile);
        for (at, v) in edits {
            let n = bytes.len();
            bytes[at % n] = v;
        }
        let n = bytes.len();
        bytes.truncate(cut % (n + 1));
        let _ = read_all(bytes);
    }
}

/// What the read-ahead reader gives: the same as `read_all`, errors shown as text.
fn read_all_prefetched(bytes: Vec<u8>) -> Result<ReadBack, String> {
    let mut r = Reader::from_bytes(bytes, "mem")
        .map_err(|e| e.to_string())?
        .prefetch();
    let mut out = Vec::new();
    let mut data = vec![0xee; 7]; // stale contents must never leak into a payload
    while let Some(c) = r.next_chunk_into(&mut data).map_err(|e| e.to_string())? {
        out.push((c.tag, data.clone()));
    }
    Ok((out, r.warnings().to_vec()))
}

#[test]
fn reading_ahead_on_a_thread_gives_the_same_chunks_warnings_and_errors() {
    let bytes = sample_file(FileKind::Profile);
    let plain = |b: Vec<u8>| read_all(b).map_err(|e| e.to_string());
    assert_eq!(read_all_prefetched(bytes.clone()), plain(bytes.clone()));
    for cut in 0..bytes.len() {
        let b = bytes[..cut].to_vec();
        assert_eq!(read_all_prefetched(b.clone()), plain(b), "cut at {cut}");
    }
    for i in (0..bytes.len()).step_by(3) {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        assert_eq!(read_all_prefetched(b.clone()), plain(b), "flip at {i}");
    }
}

#[test]
fn deferred_payloads_are_read_at_the_end_exactly_and_checked() {
    let bytes = sample_file(FileKind::Profile);
    let (want, _) = read_all(bytes.clone()).unwrap();
    // The compressed payload 0x0103 is left in the file, then read: the same bytes, from a
    // plain and from a read-ahead reader (which hands it out only at the end).
    let mut r = Reader::from_bytes(bytes.clone(), "mem").unwrap();
    r.defer(0x0103);
    let mut data = Vec::new();
    let mut deferred = None;
    while let Some(c) = r.next_chunk_into(&mut data).unwrap() {
        if c.tag == 0x0103 {
            assert!(data.is_empty(), "a deferred payload is not read");
            deferred = c.deferred;
        } else {
            assert!(c.deferred.is_none());
        }
    }
    let d = deferred.expect("0x0103 deferred");
    assert_eq!(r.read_deferred(&d).unwrap(), want[1].1);
    // Its first bytes alone, the rest left compressed: the same bytes as the whole one's
    // beginning, and all of it when more are asked for than it holds.
    for n in [0, 1, 4, want[1].1.len(), want[1].1.len() + 10] {
        let end = n.min(want[1].1.len());
        assert_eq!(
            r.read_deferred_prefix(&d, n).unwrap(),
            want[1].1[..end],
            "{n}"
        );
    }

    let mut p = Reader::from_bytes(bytes.clone(), "mem").unwrap();
    p.defer(0x0103);
    let mut p = p.prefetch();
    let mut deferred = None;
    while let Some(c) = p.next_chunk_into(&mut data).unwrap() {
        deferred = deferred.or(c.deferred);
        if deferred.is_none() {
            assert_eq!(p.read_deferred(&d).unwrap(), None, "not before the end");
        }
    }
    assert_eq!(p.read_deferred(&d).unwrap(), Some(want[1].1.clone()));

    // A damaged deferred payload is an error naming its chunk as soon as the reader passes
    // it, whether or not the caller would have read it: a damaged file is never taken as
    // sound.
    let (mut at, mut payload) = (32usize, None);
    while at + 40 <= bytes.len() {
        let tag = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
        let len = u64::from_le_bytes(bytes[at + 16..at + 24].try_into().unwrap()) as usize;
        if tag == 0x0103 {
            payload = Some((at, at + 40 + len / 2));
        }
        at += 40 + len;
    }
    let (chunk_at, flip) = payload.unwrap();
    let mut bad = bytes.clone();
    bad[flip] ^= 0x5a;
    let mut r = Reader::from_bytes(bad, "mem").unwrap();
    r.defer(0x0103);
    let err = loop {
        match r.next_chunk_into(&mut data) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("the damaged deferred payload went unnoticed"),
            Err(e) => break e.to_string(),
        }
    };
    assert!(
        err.contains(&format!("offset {chunk_at}")) && err.contains("checksum"),
        "{err}"
    );
}

/// A disk that fills up once, part-way through a write (the write that follows fails), and
/// then has room again (on a tmpfs, the writer's own lock file is removed at the end and
/// frees a page).
struct FillsOnce {
    bytes: Vec<u8>,
    room: usize,
    full: bool,
    refused: bool,
}

impl std::io::Write for FillsOnce {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.full && !self.refused {
            self.refused = true;
            return Err(std::io::Error::from_raw_os_error(28));
        }
        if !self.full && self.bytes.len() + buf.len() > self.room {
            self.full = true;
            let n = self.room - self.bytes.len();
            self.bytes.extend_from_slice(&buf[..n]);
            return Ok(n);
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn nothing_is_written_after_a_failed_write() {
    let big: Vec<u8> = (0..40_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let mut disk = FillsOnce {
        bytes: Vec::new(),
        room: 1000,
        full: false,
        refused: false,
    };
    let mut w = Writer::new(&mut disk, Path::new("mem"), FileKind::Profile).unwrap();
    w.write_chunk(0x0101, b"{\"meta\":1}", false).unwrap();
    let whole = w.bytes_written();
    let failed = w.write_chunk(0x0103, &big, false).unwrap_err();
    assert!(failed.to_string().contains("os error 28"), "{failed}");
    assert_eq!(w.bytes_written(), whole);
    // The disk has room again; the writer still writes nothing, so the file ends inside the
    // chunk that failed instead of holding a later chunk after a gap.
    let again = w.write_chunk(0x0109, b"end", false).unwrap_err();
    assert!(again.to_string().contains("earlier write"), "{again}");
    assert!(w.flush().is_err());
    drop(w);
    assert_eq!(disk.bytes.len(), 1000);
    let (chunks, warnings) = read_all(disk.bytes).unwrap();
    assert_eq!(chunks, vec![(0x0101, b"{\"meta\":1}".to_vec())]);
    assert!(warnings[0].contains("cut short"), "{warnings:?}");
}
