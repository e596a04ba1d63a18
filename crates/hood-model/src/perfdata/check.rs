//! Checks on untrusted perf.data bytes made before linux-perf-data sees them.
//!
//! The parser trusts sizes and counts from the file: a damaged header can make it allocate
//! terabytes (which aborts the process), divide by a zero attribute size, or overflow a
//! call-chain length. Everything it would trust is bounded here by the file's real length.

use linux_perf_data::linux_perf_event_reader::{
    RawEventRecord, ReadFormat, RecordType, SampleFormat,
};

/// Size of `struct perf_file_header`.
const HEADER_SIZE: u64 = 104;
/// Feature bit of HEADER_EVENT_DESC.
const FEAT_EVENT_DESC: u32 = 12;

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A section `{offset, size}` must lie inside the file.
fn section_ok(offset: u64, size: u64, file_len: u64) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= file_len)
}

/// Validate the file header, the attribute and data sections, the feature section table and
/// the event-description feature. `bytes` is the whole file. A data section cut short (or
/// never sized, as when perf was killed) is repaired in place to end at the end of the file,
/// with the feature sections dropped; that is returned as a warning. Other damage is an
/// error saying what is wrong.
pub fn header(bytes: &mut [u8]) -> Result<Option<String>, String> {
    let len = bytes.len() as u64;
    let field = |b: &[u8], at| u64_at(b, at).ok_or("the file header is cut short");
    if field(bytes, 8)? != HEADER_SIZE {
        return Err(format!(
            "header size {} (expected {HEADER_SIZE}; big-endian or very old perf files are not supported)",
            field(bytes, 8)?
        ));
    }
    let attr_size = field(bytes, 16)?;
    if !(64..=4096).contains(&attr_size) {
        return Err(format!("attribute size {attr_size} is implausible"));
    }
    let (attrs_off, attrs_size) = (field(bytes, 24)?, field(bytes, 32)?);
    let (data_off, data_size) = (field(bytes, 40)?, field(bytes, 48)?);
    if !section_ok(attrs_off, attrs_size, len) {
        return Err("the attribute section lies outside the file".into());
    }
    if data_off < HEADER_SIZE || data_off > len {
        return Err(format!(
            "the data section starts at byte {data_off}, outside the file"
        ));
    }
    if data_size == 0 || !section_ok(data_off, data_size, len) {
        let note = format!(
            "the data section was not finalized or is cut short (header says {data_size} bytes, the file holds {}); reading to the end of the file, without perf's header features (was `perf record` killed?)",
            len - data_off
        );
        bytes[48..56].copy_from_slice(&(len - data_off).to_le_bytes());
        bytes[72..104].fill(0);
        return Ok(Some(note));
    }
    let mut note = None;
    let (start, end) = (data_off as usize, (data_off + data_size) as usize);
    if let Some(bad) = first_bad_record(&bytes[start..end]) {
        let from = start + bad as usize;
        note = Some(format!(
            "a damaged record at byte {bad} of the data section; the {} bytes from there on are skipped",
            end - from
        ));
        if (end - from).is_multiple_of(8) {
            // Overwrite the rest with empty FINISHED_ROUND records, keeping the features.
            for rec in bytes[from..end].chunks_exact_mut(8) {
                rec[..4].copy_from_slice(&RECORD_FINISHED_ROUND.to_le_bytes());
                rec[4..6].fill(0);
                rec[6..8].copy_from_slice(&8u16.to_le_bytes());
            }
        } else {
            bytes[48..56].copy_from_slice(&bad.to_le_bytes());
            bytes[72..104].fill(0);
        }
    }
    // Feature sections: a table of {offset, size} right after the data, one per set bit.
    let bits: Vec<u64> = (0..4)
        .map(|i| field(bytes, 72 + 8 * i))
        .collect::<Result<_, _>>()?;
    let mut at = (data_off + data_size) as usize;
    for feat in 0..256u32 {
        if bits[(feat / 64) as usize] & (1 << (feat % 64)) == 0 {
            continue;
        }
        let (off, size) = (
            u64_at(bytes, at).ok_or("the feature table is cut short")?,
            u64_at(bytes, at + 8).ok_or("the feature table is cut short")?,
        );
        at += 16;
        if !section_ok(off, size, len) {
            return Err(format!("feature section {feat} lies outside the file"));
        }
        if feat == FEAT_EVENT_DESC {
            event_desc(&bytes[off as usize..(off + size) as usize])?;
        }
    }
    Ok(note)
}

/// PERF_RECORD_AUXTRACE: its trace data follows the record, sized by the body's first u64.
const RECORD_AUXTRACE: u32 = 71;
/// PERF_RECORD_FINISHED_ROUND: an empty record perf uses to mark sorting rounds.
const RECORD_FINISHED_ROUND: u32 = 68;

/// Walk the records of a data section; the offset of the first one whose size is impossible
/// (smaller than its header, past the end, or an AUXTRACE payload past the end).
fn first_bad_record(data: &[u8]) -> Option<u64> {
    let mut at = 0usize;
    while at < data.len() {
        let typ = u32_at(data, at)?;
        let size = match data.get(at + 6..at + 8) {
            Some(b) => u16::from_le_bytes([b[0], b[1]]) as usize,
            None => return Some(at as u64),
        };
        if size < 8 || at + size > data.len() {
            return Some(at as u64);
        }
        let mut next = at + size;
        if typ == RECORD_AUXTRACE {
            match u64_at(data, at + 8)
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| next.checked_add(n))
            {
                Some(end) if end <= data.len() => next = end,
                _ => return Some(at as u64),
            }
        }
        at = next;
    }
    None
}

/// HEADER_EVENT_DESC: nr, attr_size, then per event the attr, nr_ids, a string and the ids.
fn event_desc(s: &[u8]) -> Result<(), String> {
    let bad = || "the event description section is damaged".to_string();
    let nr = u32_at(s, 0).ok_or_else(bad)? as usize;
    let attr_size = u32_at(s, 4).ok_or_else(bad)? as usize;
    if attr_size < 64 || nr.saturating_mul(attr_size + 8) > s.len() {
        return Err(bad());
    }
    let mut at = 8usize;
    for _ in 0..nr {
        at += attr_size;
        let ids = u32_at(s, at).ok_or_else(bad)? as usize;
        let slen = u32_at(s, at + 4).ok_or_else(bad)? as usize;
        at = at
            .checked_add(8 + slen)
            .and_then(|a| a.checked_add(ids.checked_mul(8)?))
            .filter(|&a| a <= s.len())
            .ok_or_else(bad)?;
    }
    Ok(())
}

/// Whether a sample record's call-chain length fits in the record (the parser multiplies it
/// by 8 unchecked).
pub fn sample(rec: &RawEventRecord) -> bool {
    if rec.record_type != RecordType::SAMPLE {
        return true;
    }
    let info = &rec.parse_info;
    let fmt = info.sample_format;
    if !fmt.contains(SampleFormat::CALLCHAIN) {
        return true;
    }
    let body = rec.data.as_slice();
    let fixed = [
        SampleFormat::IDENTIFIER,
        SampleFormat::IP,
        SampleFormat::TID,
        SampleFormat::TIME,
        SampleFormat::ADDR,
        SampleFormat::ID,
        SampleFormat::STREAM_ID,
        SampleFormat::CPU,
        SampleFormat::PERIOD,
    ];
    let mut at = 8 * fixed.iter().filter(|&&f| fmt.contains(f)).count();
    if fmt.contains(SampleFormat::READ) {
        // Mirror the parser's reading of the read values.
        let rf = info.read_format;
        let extra = [
            ReadFormat::TOTAL_TIME_ENABLED,
            ReadFormat::TOTAL_TIME_RUNNING,
        ]
        .iter()
        .filter(|&&f| rf.contains(f))
        .count();
        if rf.contains(ReadFormat::GROUP) {
            at += 8 * (1 + extra + usize::from(rf.contains(ReadFormat::ID)));
        } else {
            let Some(nr) = u64_at(&body, at) else {
                return false;
            };
            let per = 8 * (1 + usize::from(rf.contains(ReadFormat::ID))) as u64;
            match nr
                .checked_mul(per)
                .and_then(|n| n.checked_add(8 * (1 + extra) as u64))
            {
                Some(n) if n <= body.len() as u64 => at += n as usize,
                _ => return false,
            }
        }
    }
    match u64_at(&body, at) {
        Some(n) => n <= (body.len().saturating_sub(at + 8) / 8) as u64,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(typ: u32, size: u16) -> Vec<u8> {
        let mut r = typ.to_le_bytes().to_vec();
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&size.to_le_bytes());
        r.resize(size as usize, 0);
        r
    }

    #[test]
    fn record_walk_finds_impossible_sizes() {
        let mut d = rec(9, 16);
        d.extend(rec(3, 24));
        assert_eq!(first_bad_record(&d), None);
        let mut bad = d.clone();
        bad.extend(rec(9, 4000)[..32].to_vec()); // says 4000 bytes, has 32
        assert_eq!(first_bad_record(&bad), Some(40));
        let mut aux = d.clone();
        let mut a = rec(RECORD_AUXTRACE, 48);
        a[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        aux.extend(a);
        assert_eq!(first_bad_record(&aux), Some(40));
    }

    #[test]
    fn header_errors_and_repairs() {
        assert!(header(&mut b"PERFILE2".to_vec()).is_err());
        let mut h = vec![0u8; 104];
        h[..8].copy_from_slice(b"PERFILE2");
        h[8..16].copy_from_slice(&HEADER_SIZE.to_le_bytes());
        h[16..24].copy_from_slice(&0u64.to_le_bytes());
        assert!(header(&mut h.clone())
            .unwrap_err()
            .contains("attribute size"));
        h[16..24].copy_from_slice(&128u64.to_le_bytes());
        h[40..48].copy_from_slice(&104u64.to_le_bytes()); // data at 104, size 0: unfinished
        h[72] = 0xff; // features that are not there
        let mut f = h.clone();
        f.extend(rec(9, 16));
        let note = header(&mut f).unwrap().expect("repaired");
        assert!(note.contains("not finalized"), "{note}");
        assert_eq!(u64_at(&f, 48), Some(16));
        assert_eq!(&f[72..104], &[0u8; 32]);
    }
}
