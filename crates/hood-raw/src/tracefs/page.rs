//! Raw tracefs ring-buffer pages (as `per_cpu/cpuN/trace_pipe_raw` hands them out).
//!
//! A page: u64 base timestamp, a commit word whose low 30 bits are the length of the data
//! (bit 31: events were lost before this page; bit 30: their count is stored after the data),
//! then events. Each event starts with a u32 header: 5-bit `type_len`, 27-bit `time_delta`.
//! `type_len` 1..=28: data of `type_len * 4` bytes follows; 0: a u32 length (including
//! itself) precedes the data; 29: padding (its u32 gives the length; zero delta and length
//! mean the rest of the page is empty); 30: time extend (delta = next u32 << 27 | delta);
//! 31: absolute timestamp (same encoding).

use super::format::EventFormat;
use crate::bytes::u32_at;

/// Where the page header's fields sit (from `events/header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset and size of the commit word.
    pub commit: (usize, usize),
    /// Offset of the event data.
    pub data: usize,
}

impl Default for PageLayout {
    fn default() -> Self {
        PageLayout {
            commit: (8, 8),
            data: 16,
        }
    }
}

impl PageLayout {
    /// From the text of `events/header_page`; defaults for fields it lacks.
    pub fn from_header_page(text: &str) -> PageLayout {
        let f = EventFormat::parse(text);
        let d = PageLayout::default();
        PageLayout {
            commit: f
                .fields
                .iter()
                .find(|x| x.name == "commit")
                .map_or(d.commit, |x| (x.offset, x.size)),
            data: f.field("data").map_or(d.data, |x| x.offset),
        }
    }
}

/// What decoding a page found besides its events.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PageInfo {
    /// Events the kernel reports lost before this page (`Some(0)`: lost, count unknown).
    pub missed: Option<u64>,
    /// Bytes that did not decode (a corrupt page stops at the first bad header).
    pub malformed: bool,
    /// Data events found.
    pub events: u64,
}

const COMMIT_LEN_MASK: u64 = (1 << 30) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

/// Decode one page, calling `on_event(timestamp_ns, record)` for each data event in order.
/// Never panics on damaged input: decoding stops at the first inconsistency.
pub fn decode_page(
    page: &[u8],
    layout: PageLayout,
    on_event: &mut dyn FnMut(u64, &[u8]),
) -> PageInfo {
    let mut info = PageInfo::default();
    let Some(base) = page.get(0..8) else {
        info.malformed = true;
        return info;
    };
    let mut ts = u64::from_le_bytes(base.try_into().unwrap_or([0; 8]));
    let (co, cs) = layout.commit;
    let commit = match page.get(co..co + cs) {
        Some(b) if cs == 8 => u64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
        Some(b) if cs == 4 => u64::from(u32::from_le_bytes(b.try_into().unwrap_or([0; 4]))),
        _ => {
            info.malformed = true;
            return info;
        }
    };
    let len = (commit & COMMIT_LEN_MASK) as usize;
    let start = layout.data;
    let Some(end) = start.checked_add(len).filter(|&e| e <= page.len()) else {
        info.malformed = true;
        return info;
    };
    if commit & MISSED_EVENTS != 0 {
        let stored = if commit & MISSED_STORED != 0 {
            page.get(end..end + 8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        } else {
            None
        };
        info.missed = Some(stored.unwrap_or(0));
    }
    let mut at = start;
    while at + 4 <= end {
        let Some(h) = u32_at(page, at) else { break };
        let type_len = h & 0x1f;
        let delta = u64::from(h >> 5);
        match type_len {
            29 => {
                let Some(n) = u32_at(page, at + 4) else { break };
                if delta == 0 && n == 0 {
                    break;
                }
                at += 4 + n as usize;
            }
            30 | 31 => {
                let Some(hi) = u32_at(page, at + 4) else {
                    info.malformed = true;
                    break;
                };
                let v = (u64::from(hi) << 27) | delta;
                ts = if type_len == 30 {
                    ts.wrapping_add(v)
                } else {
                    v
                };
                at += 8;
            }
            _ => {
                // A data event, `n` bytes after its header word: with type_len 0, `n` is the
                // next word (which the `n` bytes include) and the data follow it; otherwise
                // the data are type_len words.
                let (data, n) = match type_len {
                    0 => {
                        let Some(n) = u32_at(page, at + 4) else {
                            info.malformed = true;
                            break;
                        };
                        (at + 8, n as usize)
                    }
                    _ => (at + 4, type_len as usize * 4),
                };
                let stop = at + 4 + n;
                if stop < data || stop > end {
                    info.malformed = true;
                    break;
                }
                ts = ts.wrapping_add(delta);
                on_event(ts, &page[data..stop]);
                info.events += 1;
                at = stop;
            }
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(events: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (delta, rec) in events {
            let words = rec.len().div_ceil(4);
            data.extend_from_slice(&((delta << 5) | words as u32).to_le_bytes());
            data.extend_from_slice(rec);
            data.resize(data.len() + words * 4 - rec.len(), 0);
        }
        let mut p = 1000u64.to_le_bytes().to_vec();
        p.extend_from_slice(&(data.len() as u64).to_le_bytes());
        p.extend_from_slice(&data);
        p.resize(4096, 0);
        p
    }

    #[test]
    fn decodes_deltas_in_order() {
        let p = page(&[(5, vec![1; 8]), (7, vec![2; 12])]);
        let mut got = Vec::new();
        let info = decode_page(&p, PageLayout::default(), &mut |t, r| {
            got.push((t, r[0], r.len()))
        });
        assert_eq!(got, vec![(1005, 1, 8), (1012, 2, 12)]);
        assert_eq!(info.events, 2);
        assert!(!info.malformed && info.missed.is_none());
    }

    #[test]
    fn time_extend_and_long_events() {
        let mut data = Vec::new();
        data.extend_from_slice(&((3u32 << 5) | 30).to_le_bytes());
        data.extend_from_slice(&1u32.to_le_bytes()); // + (1 << 27) + 3
        data.extend_from_slice(&(1u32 << 5).to_le_bytes()); // type_len 0, delta 1
        data.extend_from_slice(&8u32.to_le_bytes());
        data.extend_from_slice(&[9, 9, 9, 9]);
        let mut p = 0u64.to_le_bytes().to_vec();
        p.extend_from_slice(&(data.len() as u64 | MISSED_EVENTS).to_le_bytes());
        p.extend_from_slice(&data);
        let mut got = Vec::new();
        let info = decode_page(&p, PageLayout::default(), &mut |t, r| {
            got.push((t, r.to_vec()))
        });
        assert_eq!(got, vec![((1 << 27) + 4, vec![9, 9, 9, 9])]);
        assert_eq!(info.missed, Some(0));
    }

    #[test]
    fn damaged_pages_stop_without_panicking() {
        let p = page(&[(5, vec![1; 8])]);
        for cut in 0..40 {
            let _ = decode_page(&p[..cut], PageLayout::default(), &mut |_, _| {});
        }
        let mut bad = p.clone();
        bad[8..16].copy_from_slice(&(1u64 << 20).to_le_bytes());
        assert!(decode_page(&bad, PageLayout::default(), &mut |_, _| {}).malformed);
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut page = vec![0u8; 4096];
        for round in 0..2000 {
            for b in page.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            // Keep the commit length plausible half of the time so events get parsed.
            if round % 2 == 0 {
                page[8..16].copy_from_slice(&(x % 4080).to_le_bytes());
            }
            let mut n = 0u64;
            let info = decode_page(&page, PageLayout::default(), &mut |_, r| {
                n += 1;
                assert!(r.len() <= 4080);
            });
            assert_eq!(info.events, n);
        }
    }
}
