//! Property tests: arbitrary text and bytes never make the parsers panic,
//! and what they accept can be looked up safely.

use hood_symbols::text::{parse_kallsyms, parse_nm, parse_perf_map, parse_perf_map_lenient};
use hood_symbols::{
    build_id_from_bytes, function_symbols, read_build_id, Symbolizer, SymbolizerOptions,
};
use proptest::prelude::*;
use std::sync::OnceLock;

/// A small gcc-built ELF executable (built once), for mutation.
fn small_elf() -> &'static [u8] {
    static ELF: OnceLock<Vec<u8>> = OnceLock::new();
    ELF.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = dir.path().join("t.c");
        std::fs::write(&c, "int main(void) { return 0; }\n").expect("write");
        let out = dir.path().join("t");
        let ok = std::process::Command::new("gcc")
            .arg("-o")
            .arg(&out)
            .arg(&c)
            .status()
            .expect("gcc");
        assert!(ok.success(), "gcc failed");
        let bytes = std::fs::read(&out).expect("read binary");
        assert!(
            build_id_from_bytes(&bytes).expect("valid ELF").is_some(),
            "gcc emits a build-id"
        );
        bytes
    })
}

/// Lines that look almost right: hex-ish fields, letters, odd spacing.
fn near_lines() -> impl Strategy<Value = String> {
    prop::collection::vec(
        "[0-9a-fA-Fx ]{0,20}[ \t][tTwWdDU?-]{0,2}[ \t]{0,2}[a-z_\\[\\] ]{0,12}",
        0..20,
    )
    .prop_map(|lines| lines.join("\n"))
}

proptest! {
    #[test]
    fn text_parsers_never_panic(text in any::<String>(), addrs in prop::collection::vec(any::<u64>(), 0..16)) {
        let (k, _) = parse_kallsyms(&text);
        let (p, _) = parse_perf_map_lenient(&text);
        let _ = parse_perf_map("m", &text);
        let n = parse_nm("s", &text);
        for a in &addrs {
            let _ = k.lookup(*a);
            let _ = p.lookup(*a);
            if let Ok(n) = &n { let _ = n.lookup(*a); }
        }
        let mut s = Symbolizer::new(SymbolizerOptions::default()).unwrap();
        s.set_kallsyms(&text);
        let _ = s.symbolize_kernel(&addrs);
        let _ = s.symbolize_perf_map(1, &text, &addrs);
    }

    #[test]
    fn near_miss_lines_never_panic(text in near_lines(), addrs in prop::collection::vec(any::<u64>(), 0..16)) {
        let (k, _) = parse_kallsyms(&text);
        let (p, _) = parse_perf_map_lenient(&text);
        if let Ok(n) = parse_nm("s", &text) {
            for a in &addrs { let _ = n.lookup(*a); }
        }
        for a in &addrs {
            if let Ok(sym) = k.lookup(*a) { prop_assert!(sym.offset <= *a); }
            if let Ok(sym) = p.lookup(*a) { prop_assert!(sym.offset <= *a); }
        }
    }

    #[test]
    fn build_id_parser_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = build_id_from_bytes(&bytes);
    }

    #[test]
    fn mutated_elf_never_panics(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        header_flips in prop::collection::vec((0usize..64, any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut img = small_elf().to_vec();
        // The section header table sits at the end of a gcc binary, the ELF
        // header at the start: mutate both regions and random bytes.
        let tail = img.len().saturating_sub(2048);
        for (n, (i, b)) in flips.into_iter().enumerate() {
            let at = if n % 2 == 0 { i.index(img.len()) } else { tail + i.index(img.len() - tail) };
            img[at] = b;
        }
        for (at, b) in header_flips { img[at] = b; }
        let _ = build_id_from_bytes(&img);
        let cut = cut.index(img.len());
        let cut_img = &img[..cut];
        let from_bytes = build_id_from_bytes(cut_img);
        // The same bytes as a file: read through positioned reads, not a slice, they give
        // the same answer, and the symbol table reader never panics on them either.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("mutated");
        std::fs::write(&path, cut_img).expect("write");
        let from_file = read_build_id(&path);
        prop_assert_eq!(from_bytes.ok(), from_file.ok());
        let _ = function_symbols(&path);
    }
}

/// kallsyms-like text: addresses from a small range so that symbols collide and interleave,
/// code and data types, some module symbols.
fn kallsyms_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            0u64..64,
            prop::sample::select(vec!['t', 'T', 'w', 'd', 'D', 'b']),
            "[a-z_]{1,6}",
            any::<bool>(),
        ),
        0..60,
    )
    .prop_map(|syms| {
        syms.iter()
            .map(|(a, t, n, m)| {
                let module = if *m { "\t[mod]" } else { "" };
                format!(
                    "{:016x} {t} {n}{module}",
                    0xffff_0000_0000_1000u64 + a * 0x10
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

proptest! {
    /// The kallsyms lines a recording keeps for its kernel addresses name those addresses
    /// exactly as the whole text does.
    #[test]
    fn kallsyms_subset_resolves_like_the_whole(
        text in kallsyms_text(),
        addrs in prop::collection::vec(0u64..0x500, 0..20),
    ) {
        let addrs: Vec<u64> = addrs.iter().map(|a| 0xffff_0000_0000_0f00 + a).collect();
        let sub = hood_symbols::text::kallsyms_subset(&text, addrs.iter().copied());
        prop_assert!(sub.len() <= text.len() + 1);
        let (full, _) = parse_kallsyms(&text);
        let (part, _) = parse_kallsyms(&sub);
        for a in addrs {
            prop_assert_eq!(full.lookup(a), part.lookup(a), "address {:#x}", a);
            prop_assert_eq!(full.lookup(a - 1), part.lookup(a - 1), "address {:#x} - 1", a);
        }
    }
}

#[test]
fn kallsyms_subset_of_the_running_kernel_is_small() {
    let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
        println!("not run here: /proc/kallsyms unreadable");
        return;
    };
    let (full, _) = parse_kallsyms(&text);
    if full.is_empty() || text.lines().all(|l| l.starts_with("0000000000000000")) {
        println!("not run here: kernel addresses are hidden");
        return;
    }
    // Every 997th line's address plus 1: a few hundred addresses spread over the kernel.
    let addrs: Vec<u64> = text
        .lines()
        .step_by(997)
        .filter_map(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .map(|a| a + 1)
        .collect();
    let sub = hood_symbols::text::kallsyms_subset(&text, addrs.iter().copied());
    let (part, _) = parse_kallsyms(&sub);
    for &a in &addrs {
        assert_eq!(full.lookup(a), part.lookup(a), "address {a:#x}");
    }
    assert!(
        sub.len() * 50 < text.len(),
        "{} of {} bytes kept for {} addresses",
        sub.len(),
        text.len(),
        addrs.len()
    );
}
