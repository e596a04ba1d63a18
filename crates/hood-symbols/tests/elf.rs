//! ELF symbolization by file offset on real gcc-built programs and libc.

mod common;

use common::{binutils, compile, func_offset, loaded_libc, split_debug, OTHER, PROG};
use hood_symbols::{read_build_id, Symbolizer, SymbolizerOptions, Unresolved};

fn symbolizer() -> Symbolizer {
    Symbolizer::new(SymbolizerOptions::default()).expect("symbolizer")
}

/// Every function of PROG resolves at its first, second and last byte.
fn check_program(extra: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", PROG, extra);
    let id = read_build_id(&bin)
        .expect("read build-id")
        .expect("gcc emits a build-id");
    let mut s = symbolizer();
    let names = ["alpha", "beta", "gamma_fn", "main"];
    let mut offsets = Vec::new();
    let mut want = Vec::new();
    for name in names {
        let (off, size) = func_offset(&bin, name, false);
        assert!(size > 1, "{name} has size {size}");
        for delta in [0, 1, size - 1] {
            offsets.push(off + delta);
            want.push((name, delta, size));
        }
    }
    // Offset 0 is the ELF header: no function there.
    offsets.push(0);
    let got = s.symbolize_file(&bin, Some(&id), &offsets);
    assert_eq!(got.len(), offsets.len());
    for (g, (name, delta, size)) in got.iter().zip(&want) {
        let sym = g.as_ref().unwrap_or_else(|e| panic!("{name}+{delta}: {e}"));
        assert_eq!(sym.name, *name);
        assert_eq!(sym.offset, *delta);
        assert_eq!(sym.size, Some(*size));
    }
    assert_eq!(got.last(), Some(&Err(Unresolved::NoSymbol)));
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
}

#[test]
fn pie_executable_resolves_by_file_offset() {
    check_program(&["-pie", "-fPIE"]);
}

#[test]
fn non_pie_executable_resolves_by_file_offset() {
    check_program(&["-no-pie", "-fno-PIE"]);
}

#[test]
fn mangled_names_demangle_short_or_full_unless_turned_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", PROG, &[]);
    let (off, _) = func_offset(&bin, "_Z5deltai", false);
    let mut on = symbolizer();
    assert_eq!(
        on.symbolize_file(&bin, None, &[off])[0]
            .as_ref()
            .map(|s| s.name.as_str()),
        Ok("delta")
    );
    let mut full = Symbolizer::new(SymbolizerOptions {
        full_names: true,
        ..SymbolizerOptions::default()
    })
    .expect("symbolizer");
    assert_eq!(
        full.symbolize_file(&bin, None, &[off])[0]
            .as_ref()
            .map(|s| s.name.as_str()),
        Ok("delta(int)")
    );
    let off_opts = SymbolizerOptions {
        demangle: false,
        ..SymbolizerOptions::default()
    };
    let mut off_s = Symbolizer::new(off_opts).expect("symbolizer");
    assert_eq!(
        off_s.symbolize_file(&bin, None, &[off])[0]
            .as_ref()
            .map(|s| s.name.as_str()),
        Ok("_Z5deltai")
    );
}

#[test]
fn loaded_libc_resolves_through_dynsym() {
    let libc = loaded_libc();
    let id = read_build_id(&libc).expect("libc build-id");
    let mut s = symbolizer();
    let mut offsets = Vec::new();
    for name in ["getpid", "malloc", "write"] {
        let (off, _) = func_offset(&libc, name, true);
        offsets.push(off + 1);
    }
    let got = s.symbolize_file(&libc, id.as_ref(), &offsets);
    for (g, name) in got.iter().zip(["getpid", "malloc", "write"]) {
        let sym = g.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        // libc exports aliases (__getpid, __libc_malloc, __write): any of
        // them names the same code.
        assert!(sym.name.contains(name), "{name} resolved as {}", sym.name);
        assert_eq!(sym.offset, 1);
    }
}

#[test]
fn changed_binary_is_a_build_id_mismatch_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", PROG, &[]);
    let old_id = read_build_id(&bin).expect("read").expect("build-id");
    let (off, _) = func_offset(&bin, "alpha", false);
    // Recompile something else to the very same path.
    compile(dir.path(), "prog", OTHER, &[]);
    let new_id = read_build_id(&bin).expect("read").expect("build-id");
    assert_ne!(old_id, new_id);

    let mut s = symbolizer();
    let got = s.symbolize_file(&bin, Some(&old_id), &[off, off + 1]);
    assert_eq!(got, vec![Err(Unresolved::BuildIdMismatch); 2]);
    s.symbolize_file(&bin, Some(&old_id), &[off]);
    assert_eq!(s.warnings().len(), 1, "warned once: {:?}", s.warnings());
    let w = &s.warnings()[0];
    assert!(w.contains(&bin.display().to_string()), "{w}");
    assert!(w.contains("changed since recording"), "{w}");
    assert!(w.contains(&old_id.to_string()), "{w}");

    // The current build-id is accepted.
    let (main_off, _) = func_offset(&bin, "main", false);
    assert_eq!(
        s.symbolize_file(&bin, Some(&new_id), &[main_off])[0]
            .as_ref()
            .map(|x| x.name.as_str()),
        Ok("main")
    );

    // A file without any build-id while one was recorded is a mismatch too.
    compile(dir.path(), "prog", PROG, &["-Wl,--build-id=none"]);
    assert_eq!(read_build_id(&bin).expect("read"), None);
    let mut s = symbolizer();
    assert_eq!(
        s.symbolize_file(&bin, Some(&old_id), &[off]),
        vec![Err(Unresolved::BuildIdMismatch)]
    );
    assert!(s.warnings()[0].contains("none now"), "{:?}", s.warnings());
}

#[test]
fn missing_and_non_elf_files_are_reported_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gone = dir.path().join("no-such-binary");
    let mut s = symbolizer();
    assert_eq!(
        s.symbolize_file(&gone, None, &[0x1000, 0x2000]),
        vec![Err(Unresolved::FileMissing); 2]
    );
    assert_eq!(
        s.symbolize_file(&gone, None, &[0x3000]),
        vec![Err(Unresolved::FileMissing)]
    );
    assert_eq!(s.warnings().len(), 1);
    assert!(
        s.warnings()[0].contains("no-such-binary"),
        "{:?}",
        s.warnings()
    );

    let text = dir.path().join("script.sh");
    std::fs::write(&text, "#!/bin/sh\necho not elf\n").expect("write");
    assert_eq!(
        s.symbolize_file(&text, None, &[4]),
        vec![Err(Unresolved::NotElf)]
    );
    assert_eq!(s.warnings().len(), 2);
    assert!(s.symbolize_file(&text, None, &[]).is_empty());
    // A device node is refused without being read.
    assert_eq!(
        s.symbolize_file(std::path::Path::new("/dev/zero"), None, &[0]),
        vec![Err(Unresolved::NotElf)]
    );
    assert!(s.warnings()[2].contains("/dev/zero"), "{:?}", s.warnings());
}

#[test]
fn root_prefix_finds_recorded_paths_elsewhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", PROG, &[]);
    let root = dir.path().join("sysroot");
    std::fs::create_dir_all(root.join("usr/bin")).expect("mkdir");
    std::fs::copy(&bin, root.join("usr/bin/prog")).expect("copy");
    let (off, _) = func_offset(&bin, "beta", false);
    let opts = SymbolizerOptions {
        root: Some(root),
        ..SymbolizerOptions::default()
    };
    let mut s = Symbolizer::new(opts).expect("symbolizer");
    let got = s.symbolize_file(std::path::Path::new("/usr/bin/prog"), None, &[off + 2]);
    assert_eq!(
        got[0].as_ref().map(|x| (x.name.as_str(), x.offset)),
        Ok(("beta", 2))
    );
}

#[test]
fn vdso_image_resolves_from_memory() {
    // Read this process's [vdso] bytes the way the recorder stores them.
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let line = maps
        .lines()
        .find(|l| l.ends_with("[vdso]"))
        .expect("a [vdso] mapping");
    let range = line.split_whitespace().next().expect("range");
    let (lo, hi) = range.split_once('-').expect("range form");
    let lo = u64::from_str_radix(lo, 16).expect("hex");
    let hi = u64::from_str_radix(hi, 16).expect("hex");
    let mut image = vec![0u8; (hi - lo) as usize];
    let mem = std::fs::File::open("/proc/self/mem").expect("open /proc/self/mem");
    std::os::unix::fs::FileExt::read_exact_at(&mem, &mut image, lo).expect("read vdso");

    // Where clock_gettime lives, per binutils on a copy of the image.
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("vdso.so");
    std::fs::write(&copy, &image).expect("write copy");
    let (off, _) = func_offset(&copy, "__vdso_clock_gettime", true);

    let mut s = symbolizer();
    let got = s.symbolize_image("[vdso]", &image, &[off, off + 3]);
    for g in &got {
        let sym = g.as_ref().expect("vdso symbol");
        assert!(sym.name.contains("clock_gettime"), "{}", sym.name);
    }
    assert_eq!(got[1].as_ref().map(|x| x.offset), Ok(3));
    // Bytes that are not ELF under another key.
    assert_eq!(
        s.symbolize_image("[junk]", b"not an elf image", &[1]),
        vec![Err(Unresolved::NotElf)]
    );
}

#[test]
fn a_stripped_binary_resolves_through_its_debug_file_by_build_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", PROG, &["-pie", "-fPIE"]);
    // Offsets of the static and global functions, read before stripping.
    let want: Vec<(&str, u64)> = ["gamma_fn", "alpha"]
        .iter()
        .map(|&n| (n, func_offset(&bin, n, false).0 + 1))
        .collect();
    let debug = dir.path().join("debug");
    split_debug(&bin, &debug, &[]);
    let st = std::process::Command::new("strip")
        .arg("-s")
        .arg(&bin)
        .status()
        .expect("strip");
    assert!(st.success());
    let offsets: Vec<u64> = want.iter().map(|w| w.1).collect();
    let names = |dirs: Vec<std::path::PathBuf>| -> Vec<Option<String>> {
        let mut s = Symbolizer::new(SymbolizerOptions {
            debug_dirs: dirs,
            ..SymbolizerOptions::default()
        })
        .expect("symbolizer");
        s.symbolize_file(&bin, None, &offsets)
            .into_iter()
            .map(|r| r.ok().map(|s| s.name))
            .collect()
    };
    // Stripped: the static function is gone from the binary's own tables.
    assert_eq!(names(vec![])[0], None);
    assert_eq!(
        names(vec![debug.clone()]),
        [Some("gamma_fn".to_string()), Some("alpha".to_string())]
    );
    // A debug file of another build (other build-id inside) is not trusted.
    let other = compile(dir.path(), "other", OTHER, &[]);
    let id = read_build_id(&bin).unwrap().unwrap().to_string();
    let dbg = debug
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    std::fs::copy(&other, &dbg).unwrap();
    assert_eq!(names(vec![debug])[0], None);
}

#[test]
fn a_stripped_binary_resolves_through_its_gnu_debuglink_with_the_right_crc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bindir = dir.path().join("bin");
    std::fs::create_dir(&bindir).unwrap();
    let bin = compile(&bindir, "prog", PROG, &["-g", "-pie", "-fPIE"]);
    let want = func_offset(&bin, "gamma_fn", false).0 + 1;
    let dbg = dir.path().join("prog.debug");
    binutils(&[
        "objcopy".as_ref(),
        "--only-keep-debug".as_ref(),
        bin.as_os_str(),
        dbg.as_os_str(),
    ]);
    binutils(&["strip".as_ref(), "-s".as_ref(), bin.as_os_str()]);
    let link = format!("--add-gnu-debuglink={}", dbg.display());
    binutils(&["objcopy".as_ref(), link.as_ref(), bin.as_os_str()]);
    // No build-id lookup can succeed: only the link leads to the debug file.
    let resolve = |dirs: Vec<std::path::PathBuf>| {
        let mut s = Symbolizer::new(SymbolizerOptions {
            debug_dirs: dirs,
            ..SymbolizerOptions::default()
        })
        .expect("symbolizer");
        s.symbolize_file(&bin, None, &[want]).remove(0).ok()
    };
    assert_eq!(
        resolve(vec![]),
        None,
        "the link's file is not in any searched place yet"
    );
    let global = dir.path().join("global");
    let rel = bindir.strip_prefix("/").unwrap();
    let places = [
        bindir.join("prog.debug"),
        bindir.join(".debug/prog.debug"),
        global.join(rel).join("prog.debug"),
        global.join("prog.debug"),
    ];
    for place in &places {
        std::fs::create_dir_all(place.parent().unwrap()).unwrap();
        std::fs::copy(&dbg, place).unwrap();
        let sym = resolve(vec![global.clone()])
            .unwrap_or_else(|| panic!("no name through the debug link at {}", place.display()));
        assert_eq!(sym.name, "gamma_fn", "{}", place.display());
        // The DWARF of the debug file gives the line.
        let code = sym.code.expect("file:line from the debug file");
        assert!(code.file.ends_with("prog.c") && code.line > 0, "{code:?}");
        // The same file with one byte more has another CRC: never read.
        let mut bytes = std::fs::read(place).unwrap();
        bytes.push(0);
        std::fs::write(place, &bytes).unwrap();
        assert_eq!(resolve(vec![global.clone()]), None, "{}", place.display());
        std::fs::remove_file(place).unwrap();
    }
}

/// File ranges of the named sections, per `readelf -SW`.
fn section_ranges(path: &std::path::Path, names: &[&str]) -> Vec<(u64, u64)> {
    let out = std::process::Command::new("readelf")
        .arg("-SW")
        .arg(path)
        .output()
        .expect("readelf");
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split(']').nth(1)?.split_whitespace().collect();
            names
                .contains(cols.first()?)
                .then(|| (hex(cols[3]), hex(cols[4])))
        })
        .collect()
}

#[test]
fn damaged_dwarf_never_takes_the_names_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = compile(dir.path(), "prog", PROG, &["-g", "-O2"]);
    let want = func_offset(&good, "alpha", false).0 + 2;
    let ranges = section_ranges(&good, &[".debug_info", ".debug_line", ".debug_abbrev"]);
    assert_eq!(ranges.len(), 3, "sections of {}", good.display());
    let bytes = std::fs::read(&good).unwrap();
    // A small deterministic generator: the same damage on every run.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..40 {
        let mut b = bytes.clone();
        for _ in 0..1 + round % 8 {
            let (off, size) = ranges[(next() % 3) as usize];
            let at = (off + next() % size.max(1)) as usize;
            b[at] = next() as u8;
        }
        let bad = dir.path().join(format!("bad{round}"));
        std::fs::write(&bad, &b).unwrap();
        let mut s = Symbolizer::new(SymbolizerOptions::default()).expect("symbolizer");
        let got = s.symbolize_file(&bad, None, &[want, want + 1, 0]);
        assert_eq!(got.len(), 3);
        // The symbol table is intact: alpha keeps its name whatever the DWARF says.
        assert_eq!(
            got[0].as_ref().map(|s| s.name.as_str()),
            Ok("alpha"),
            "round {round}: {got:?}"
        );
    }
}
