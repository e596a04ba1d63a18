//! Inputs the `unwind` fuzz target found (fuzz/, docs/fuzzing.md), kept so they stay fixed.

use hood_unwind::Image;

/// The lookups the fuzz target makes: words from the end of the input, and a few fixed ones.
fn probe(data: &[u8]) {
    let image = match Image::parse("finding".to_string(), data) {
        Ok(i) => i,
        Err(_) => return,
    };
    let mut addrs: Vec<u64> = data
        .chunks_exact(8)
        .rev()
        .take(16)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
        .collect();
    addrs.extend([0, 0x1000, 0x1130, u64::MAX]);
    for a in addrs {
        let _ = image.svma_of_offset(a);
        let _ = image.is_signal_trampoline(a);
        let _ = image.ra_undefined(a);
    }
}

/// An `.eh_frame_hdr` table entry pointing before `.eh_frame`: gimli's offset subtraction
/// overflowed (a panic in debug builds, a wrapped offset in release ones).
#[test]
fn an_eh_frame_hdr_entry_before_eh_frame_is_refused() {
    let data = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fde-before-eh-frame.elf"),
    )
    .unwrap();
    probe(&data);
}
