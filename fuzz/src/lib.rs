//! What each fuzz target feeds its input to: hood's readers of bytes it does not trust. Each
//! function must return (any error is fine) without panicking, aborting, overflowing or
//! allocating beyond a bound derived from the input's size. See docs/fuzzing.md.
#![forbid(unsafe_code)]

use hood_abi::parse::{slot_parts, ThreadView};
use hood_abi::{
    parse_funcs, parse_tags, trace_slot_read_len, HeaderView, TraceThreadView, HEADER_AREA_SIZE,
    MODE_CALLS, MODE_TRACE, TAGS_AREA_SIZE, THREAD_HEADER_SIZE,
};
use hood_format::{FileKind, Reader, Writer};
use hood_raw::maps::MappedFile;
use hood_model::profile::RawRecording;
use hood_model::profile::{build_profile, Resolved, Resolver};

/// The hood-format container: header, every chunk (CRCs, zstd), warnings, kind check.
pub fn container(data: &[u8]) {
    let Ok(mut r) = Reader::from_bytes(data.to_vec(), "fuzz") else {
        return;
    };
    let _ = hood_format::expect_kind(&r, FileKind::Profile, "hood report");
    for c in r.chunks() {
        if c.is_err() {
            break;
        }
    }
    let _ = r.warnings();
}

/// A call-path table (`calls::PROCESS` payload), then what `hood calls report` derives.
pub fn calls(data: &[u8]) {
    let Ok(p) = hood_tracemodel::calls::decode_process(data, 0) else {
        return;
    };
    for per_thread in [false, true] {
        let _ = hood_tracemodel::calls::path_rows(&p, per_thread);
        let _ = hood_tracemodel::calls::function_rows(&p, per_thread);
    }
    let _ = p.flag_notes();
    let again = hood_tracemodel::calls::encode_process(&p);
    let _ = hood_tracemodel::calls::decode_process(&again, 0);
}

/// Chunks framed plainly (`u16 tag, u32 length, payload`, repeated) wrapped into a valid
/// container of `kind` (checksums computed, nothing compressed), so that mutations reach the
/// payload decoders instead of failing a checksum. [`frame`] makes such inputs from a file.
pub fn framed_file(data: &[u8], kind: FileKind) -> Option<Reader> {
    let mut w = Writer::new(Vec::new(), std::path::Path::new("fuzz"), kind).ok()?;
    let mut rest = data;
    while rest.len() >= 6 {
        let tag = u32::from(u16::from_le_bytes([rest[0], rest[1]]));
        let len = u32::from_le_bytes([rest[2], rest[3], rest[4], rest[5]]) as usize;
        let body = &rest[6..];
        let take = len.min(body.len());
        w.write_chunk(tag, &body[..take], false).ok()?;
        rest = &body[take..];
    }
    Reader::from_bytes(w.finish().ok()?, "fuzz").ok()
}

/// The framing [`framed_file`] reads: each `(tag, payload)` as `u16 tag, u32 length, payload`.
pub fn frame(chunks: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (tag, payload) in chunks {
        out.extend_from_slice(&(*tag as u16).to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}

/// A trace file (kind Trace): metadata, processes, events of both encodings, switches, irqs.
pub fn trace(data: &[u8]) {
    // Read as `hood trace report` reads a file: twice, everything but the events, then them.
    if let (Some(a), Some(b)) = (
        framed_file(data, FileKind::Trace),
        framed_file(data, FileKind::Trace),
    ) {
        let _ = hood_tracemodel::trace::load_readers(a, b);
    }
}

/// Bytes `len` at `off` of a segment image, as the recorder reads them (`None` past its end).
fn at(img: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    img.get(start..end)
}

/// A /dev/shm segment image of either mode, read as `hood calls get` and `hood trace record`
/// read one: header, maps text, tag and function tables, every used thread slot.
pub fn segment(img: &[u8]) {
    let Some(head) = at(img, 0, HEADER_AREA_SIZE) else {
        return;
    };
    let Ok(h) = HeaderView::parse(head) else {
        return;
    };
    if (img.len() as u64) < h.total_size {
        return;
    }
    let _maps = at(img, h.maps_offset, h.maps_len).map(String::from_utf8_lossy);
    if h.mode == MODE_TRACE {
        if let Some(t) = at(img, h.tags_offset, TAGS_AREA_SIZE) {
            let _ = parse_tags(&h, t);
        }
        if let Some(f) = at(img, h.funcs_offset, u64::from(h.funcs_used) * 8) {
            let _ = parse_funcs(&h, f);
        }
    }
    for i in 0..h.threads_used {
        let off = h.slot_offset(i);
        let Some(th) = at(img, off, THREAD_HEADER_SIZE as u64) else {
            return;
        };
        let ok = match h.mode {
            MODE_CALLS => {
                let parts = slot_parts(&h, th);
                let mut bufs = vec![th];
                for (o, len) in parts.into_iter().skip(1) {
                    match off.checked_add(o).and_then(|s| at(img, s, len)) {
                        Some(b) => bufs.push(b),
                        None => return,
                    }
                }
                ThreadView::parse_parts(&h, bufs[0], bufs[1], bufs[2]).is_ok()
            }
            MODE_TRACE => match at(img, off, trace_slot_read_len(&h, th)) {
                Some(b) => TraceThreadView::parse(&h, b).is_ok(),
                None => return,
            },
            _ => return,
        };
        if !ok {
            return;
        }
    }
}

/// The /proc text parsers: the first byte picks one, the rest is the file's text.
pub fn procfs(data: &[u8]) {
    use hood_procfs::parse;
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 14 {
        0 => {
            let mut t = hood_monitor::TaskRaw::default();
            let _ = parse::parse_stat(rest, &mut t);
        }
        1 => drop(parse::parse_status(&text)),
        2 => drop(parse::parse_io(&text)),
        3 => drop(parse::parse_cmdline(rest)),
        4 => drop(parse::parse_meminfo(&text)),
        5 => drop(parse::parse_loadavg(&text)),
        6 => drop(parse::parse_uptime(&text)),
        7 => drop(parse::parse_proc_stat(&text)),
        8 => drop(parse::parse_irq_table(&text)),
        9 => drop(parse::parse_cpuinfo_mhz(&text)),
        10 => drop(parse::parse_passwd(&text)),
        11 => drop(parse::parse_auxv(rest)),
        _ => {
            for line in text.lines() {
                let _ = hood_raw::maps::parse_maps_line(line);
            }
        }
    }
}

/// Names nothing: the profile is derived from the file alone.
struct NoSymbols;

impl Resolver for NoSymbols {
    fn kernel(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; addrs.len()]
    }
    fn file(&mut self, _: &MappedFile, offsets: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; offsets.len()]
    }
    fn vdso(&mut self, offsets: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; offsets.len()]
    }
    fn perf_map(&mut self, _: u32, addrs: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; addrs.len()]
    }
    fn symfile(&mut self, addrs: &[u64]) -> Vec<Option<Resolved>> {
        vec![None; addrs.len()]
    }
    fn warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// A whole `hood record` file (framed as in [`framed_file`]): the raw records decoded and the profile built from them (address
/// spaces, chains, counts), its `--labels` events charged, and the labels reports rendered.
pub fn profile(data: &[u8]) {
    let Some(r) = framed_file(data, FileKind::Profile) else {
        return;
    };
    let Ok(raw) = RawRecording::read_with(r, &mut |_| {}) else {
        return;
    };
    let prof = build_profile(&raw, &mut NoSymbols);
    let Some(r) = framed_file(data, FileKind::Profile) else {
        return;
    };
    if let Ok(Some(mut labels)) = hood_model::labels::LabelsRecording::read(r) {
        let Ok(labeled) = labels.analyze(&prof) else {
            return;
        };
        let view = hood_report::labels::LabeledView {
            prof: &prof,
            labeled: &labeled,
            source: "fuzz",
            pid: None,
            comm: None,
        };
        let _ = hood_report::labels::gprof::render_labels_gprof(&view, &mut std::io::sink());
    }
}

/// A perf.data file in either of perf's layouts, read as `hood report -i` reads it (header,
/// attributes, id lists, features, records matched to their event), then the profile built.
pub fn perfdata(data: &[u8]) {
    let name = std::path::Path::new("fuzz.data");
    let Ok(imp) = hood_model::perfdata::load_bytes(name, data, None) else {
        return;
    };
    let _ = build_profile(&imp.raw, &mut NoSymbols);
}

/// A JIT map `/tmp/perf-PID.map` as the report reads one: at most the recording's cap of whole
/// lines, as lossy UTF-8, symbolized for the addresses its lines name (each start, middle and
/// end) and a few others.
pub fn perfmap(data: &[u8]) {
    let cap = 64 << 20;
    let bytes = match data.len() > cap {
        true => {
            let cut = &data[..cap];
            &cut[..cut.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1)]
        }
        false => data,
    };
    let text = String::from_utf8_lossy(bytes);
    let mut addrs = vec![0, 1, u64::MAX, u64::MAX - 1];
    for line in text.lines().take(64) {
        let mut t = line.split_whitespace();
        let (Some(start), Some(size)) = (t.next(), t.next()) else {
            continue;
        };
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        if let (Some(start), Some(size)) = (hex(start), hex(size)) {
            addrs.extend([start, start.wrapping_add(size / 2), start.wrapping_add(size)]);
        }
    }
    thread_local! {
        static SYM: std::cell::RefCell<Option<hood_symbols::Symbolizer>> =
            std::cell::RefCell::new(
                hood_symbols::Symbolizer::new(hood_symbols::SymbolizerOptions::default()).ok(),
            );
    }
    SYM.with(|s| {
        if let Some(sym) = s.borrow_mut().as_mut() {
            let _ = sym.symbolize_perf_map(1, &text, &addrs);
        }
    });
}

/// Addresses to look up in an image: the ELF entry point's neighbourhood and words taken from
/// the input, so that mutations steer lookups into the tables they change.
fn probe_addresses(data: &[u8]) -> Vec<u64> {
    let mut a: Vec<u64> = data
        .chunks_exact(8)
        .rev()
        .take(16)
        .map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
        .collect();
    a.extend([0, 0x1000, 0x1130, u64::MAX]);
    a
}

/// An ELF file's unwind and debug sections as hood reads them: each section through
/// `hood_symbols::section_data` with the unwinder's cap (zlib and zstd sections decompressed
/// within the ratio and size limits), the build-id, then the unwinder's image (its section
/// caps included) and the lookups it makes per frame: `.eh_frame_hdr`'s table, the CIE's
/// signal-frame mark, the return-address rule.
pub fn unwind(data: &[u8]) {
    let _ = hood_symbols::build_id_from_bytes(data);
    if let Ok(file) = object::File::parse(data) {
        for name in [
            ".eh_frame",
            ".eh_frame_hdr",
            ".debug_frame",
            ".debug_info",
            ".debug_line",
            ".debug_abbrev",
            ".debug_str",
        ] {
            let _ = hood_symbols::section_data(&file, name, 64 << 20);
        }
    }
    let Ok(image) = hood_unwind::Image::parse("fuzz".to_string(), data) else {
        return;
    };
    let _ = image.has_cfi();
    for a in probe_addresses(data) {
        let _ = image.svma_of_offset(a);
        let _ = image.is_signal_trampoline(a);
        let _ = image.ra_undefined(a);
    }
}

/// The sanitiser every text renderer passes process, file and kernel text through: whatever
/// the bytes, the result holds no control character (C0, DEL, C1) nor a direction override,
/// and text without any comes back unchanged.
pub fn sanitizer(data: &[u8]) {
    let bad = |c: char| {
        matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    let out = hood_report::safe::bytes(data);
    assert!(!out.chars().any(bad), "{data:?} -> {out:?}");
    if let Ok(s) = std::str::from_utf8(data) {
        let t = hood_report::safe::text(s);
        assert!(!t.chars().any(bad), "{s:?} -> {t:?}");
        assert_eq!(t, out);
        if !s.chars().any(bad) {
            assert_eq!(t, s, "clean text changed");
        }
    }
}
