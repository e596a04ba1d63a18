//! Build-ids from raw note areas (/sys/kernel/notes).

#[test]
fn finds_the_gnu_build_id_among_other_notes() {
    let mut notes = Vec::new();
    // An unrelated note first: namesz 4 ("Xen\0"), descsz 4, type 1.
    notes.extend_from_slice(&[4, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0]);
    notes.extend_from_slice(b"Xen\0");
    notes.extend_from_slice(&[9, 9, 9, 9]);
    // The GNU build-id: namesz 4, descsz 5 (padded to 8), type 3.
    notes.extend_from_slice(&[4, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0]);
    notes.extend_from_slice(b"GNU\0");
    notes.extend_from_slice(&[1, 2, 3, 4, 5, 0, 0, 0]);
    assert_eq!(
        hood_symbols::build_id_from_notes(&notes).map(|id| id.as_bytes().to_vec()),
        Some(vec![1, 2, 3, 4, 5])
    );
    assert_eq!(hood_symbols::build_id_from_notes(&notes[..20]), None);
    assert_eq!(hood_symbols::build_id_from_notes(&[]), None);
}

#[test]
fn the_running_kernel_has_one_when_readable() {
    if let Ok(notes) = std::fs::read("/sys/kernel/notes") {
        if notes.windows(4).any(|w| w == b"GNU\0") {
            let id = hood_symbols::build_id_from_notes(&notes).expect("kernel build-id");
            assert!(id.as_bytes().len() >= 16, "{id:?}");
        }
    }
}
