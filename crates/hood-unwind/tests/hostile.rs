//! The unwinder reads ELF files any local user can write and stack bytes any process controls:
//! damaged unwind sections and random stacks must give marked, bounded chains — never a panic,
//! a hang or a chain longer than the limit.

use hood_unwind::{Options, Unwinder, UserRegs, MAX_FRAMES};

/// xorshift: deterministic, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// File offset and size of section `name` in a 64-bit little-endian ELF image.
fn section(elf: &[u8], name: &str) -> Option<(usize, usize)> {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let strtab = u64_at(shoff + shstrndx * shentsize + 0x18);
    (0..shnum).find_map(|i| {
        let sh = shoff + i * shentsize;
        let n = strtab + u32_at(sh);
        let end = elf[n..].iter().position(|&b| b == 0)?;
        (&elf[n..n + end] == name.as_bytes()).then(|| (u64_at(sh + 0x18), u64_at(sh + 0x20)))
    })
}

#[test]
fn damaged_unwind_sections_and_random_stacks_never_panic() {
    let exe = std::fs::read("/proc/self/exe").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let targets: Vec<(usize, usize)> = [".eh_frame", ".eh_frame_hdr", ".text"]
        .iter()
        .filter_map(|n| section(&exe, n))
        .collect();
    assert!(targets.len() >= 2, "the test binary has unwind sections");
    let text = section(&exe, ".text").unwrap();
    for round in 0..30 {
        let mut img = exe.clone();
        for _ in 0..(1 + rng.next() % 64) {
            let (off, len) = targets[(rng.next() % targets.len() as u64) as usize];
            let at = off + (rng.next() as usize % len.max(1));
            img[at] = rng.next() as u8;
        }
        if round % 7 == 0 {
            img.truncate((rng.next() as usize) % img.len());
        }
        let path = dir.path().join(format!("img{round}"));
        std::fs::write(&path, &img).unwrap();
        let mut u = Unwinder::new(Options::default());
        let base = 0x5555_0000_0000u64;
        u.mmap(
            1,
            base,
            img.len() as u64 + 0x10_0000,
            0,
            path.to_str().unwrap(),
            None,
        );
        for _ in 0..40 {
            let stack: Vec<u8> = (0..1024)
                .map(|i| {
                    // Some words point back into the image, so frames chain for a while.
                    if i % 8 == 0 && rng.next().is_multiple_of(3) {
                        0
                    } else {
                        rng.next() as u8
                    }
                })
                .collect();
            let sp = 0x7fff_0000_0000u64;
            let ip = base + text.0 as u64 + rng.next() % text.1 as u64;
            let bp = sp + rng.next() % 2048;
            let mut out = Vec::new();
            let _ = u.unwind(1, UserRegs { ip, sp, bp }, &stack, &mut out);
            assert!(
                !out.is_empty() && out.len() <= MAX_FRAMES + 1,
                "{} frames",
                out.len()
            );
        }
    }
}

#[test]
fn unknown_processes_and_empty_stacks_are_marked_not_mapped() {
    let mut u = Unwinder::new(Options::default());
    let mut out = Vec::new();
    let t = u.unwind(
        424242,
        UserRegs {
            ip: 0x1000,
            sp: 0x2000,
            bp: 0,
        },
        &[],
        &mut out,
    );
    assert_eq!(t, Some(hood_unwind::Truncation::NotMapped));
    assert_eq!(out, vec![0x1000]);
}

#[test]
fn a_sparse_unwind_section_is_not_read_and_is_named() {
    // Issue 29, R2: 64 MiB unwind sections stored sparse (240 KB on disk for 8 binaries) made
    // `record -a` take 1.78 GB.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("p.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let plain = dir.path().join("p");
    let st = std::process::Command::new("gcc")
        .args([
            "-O1",
            "-fno-asynchronous-unwind-tables",
            "-fno-unwind-tables",
            "-o",
        ])
        .arg(&plain)
        .arg(&src)
        .status()
        .expect("gcc");
    assert!(st.success());
    let zeros = dir.path().join("zeros");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let img = dir.path().join("img");
    let st = std::process::Command::new("objcopy")
        .arg(format!("--add-section=.debug_frame={}", zeros.display()))
        .arg(&plain)
        .arg(&img)
        .status()
        .expect("objcopy");
    assert!(st.success());
    // Whatever objcopy wrote, the section becomes a hole: 64 MiB that take no disk.
    let bytes = std::fs::read(&img).unwrap();
    let (off, len) = section(&bytes, ".debug_frame").expect(".debug_frame");
    drop(bytes);
    let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    let start = (off as u64).div_ceil(4096) * 4096;
    let end = (off + len) as u64 / 4096 * 4096;
    rustix::fs::fallocate(
        &f,
        rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE,
        start,
        end - start,
    )
    .expect("punch a hole (needs a file system with holes)");
    drop(f);

    let mut u = Unwinder::new(Options::default());
    let path = img.to_str().unwrap();
    u.mmap(1, 0x5555_0000_0000, 0x10_0000, 0, path, None);
    let w = u.take_warnings();
    assert!(
        w.iter()
            .any(|w| w.contains(path) && w.contains(".debug_frame") && w.contains("sparse")),
        "no warning naming the file, the section and the rule: {w:?}"
    );
}

/// A process with more executable mappings than the cap (a user's 30,000 mappings of long
/// paths took root's recorder 1.46 GB): the rest are dropped, counted and said once; the
/// mappings it keeps are still followed, and replacing one of them is not refused.
#[test]
fn mappings_past_the_cap_are_dropped_counted_and_said_once() {
    use hood_unwind::MAX_MAPPINGS;
    let mut u = Unwinder::new(Options::default());
    let long = format!("//anon/{}", "x".repeat(4000));
    let over = 1000usize;
    for i in 0..(MAX_MAPPINGS + over) as u64 {
        // One page each, a page apart, so none overlaps another.
        u.mmap(7, 0x10_0000 + i * 0x2000, 0x1000, 0, &long, None);
    }
    assert_eq!(u.stats().mappings_dropped, over as u64);
    let w = u.take_warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("pid 7") && w[0].contains(&MAX_MAPPINGS.to_string()),
        "{w:?}"
    );
    // A mapping over a kept one replaces it.
    u.mmap(7, 0x10_0000, 0x1000, 0, "//anon", None);
    assert_eq!(u.stats().mappings_dropped, over as u64);
    // Another process has its own cap.
    u.mmap(8, 0x10_0000, 0x1000, 0, &long, None);
    assert_eq!(u.stats().mappings_dropped, over as u64);
}
