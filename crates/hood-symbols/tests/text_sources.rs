//! Kernel kallsyms, JIT perf maps and nm-format symfiles, on real inputs.

mod common;

use common::{compile, nm_symbol, PROG};
use hood_symbols::{SymbolError, Symbolizer, SymbolizerOptions, Unresolved};

fn symbolizer() -> Symbolizer {
    Symbolizer::new(SymbolizerOptions::default()).expect("symbolizer")
}

/// Names of code symbols at `addr` in kallsyms text (aliases share addresses).
fn text_names_at(kallsyms: &str, addr: u64) -> Vec<String> {
    kallsyms
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let a = u64::from_str_radix(f.first()?, 16).ok()?;
            (a == addr && matches!(*f.get(1)?, "t" | "T" | "w" | "W"))
                .then(|| f.get(2).map(|s| s.to_string()))?
        })
        .collect()
}

#[test]
fn real_kallsyms_resolves_schedule() {
    let text = std::fs::read_to_string("/proc/kallsyms").expect("read /proc/kallsyms");
    let addr = text
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && f[2] == "schedule").then(|| u64::from_str_radix(f[0], 16).ok())?
        })
        .expect("schedule in /proc/kallsyms");
    if addr == 0 {
        // kptr_restrict hides addresses from unprivileged readers.
        assert!(
            std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref() != Ok("1"),
            "kallsyms addresses hidden"
        );
        println!("SKIPPED (needs root or CAP_PERFMON): real_kallsyms_resolves_schedule");
        let mut s = symbolizer();
        assert_eq!(s.set_kallsyms(&text), 0);
        assert!(s.warnings()[0].contains("kptr_restrict"));
        return;
    }
    let mut s = symbolizer();
    let n = s.set_kallsyms(&text);
    assert!(n > 1000, "only {n} kernel text symbols");
    let names = text_names_at(&text, addr);
    let got = s.symbolize_kernel(&[addr, addr + 1]);
    let first = got[0].as_ref().expect("schedule resolves");
    assert!(
        names.contains(&first.name),
        "{} not among {names:?}",
        first.name
    );
    assert_eq!(first.offset, 0);
    let second = got[1].as_ref().expect("schedule+1 resolves");
    assert_eq!(
        (second.name.as_str(), second.offset),
        (first.name.as_str(), 1)
    );
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
}

#[test]
fn kernel_without_kallsyms_is_no_source() {
    let mut s = symbolizer();
    assert_eq!(
        s.symbolize_kernel(&[0xffffffff81000000]),
        vec![Err(Unresolved::NoSource)]
    );
    assert_eq!(s.warnings().len(), 1);
    // Zeroed addresses (read without privileges) load nothing, with a hint.
    assert_eq!(
        s.set_kallsyms("0000000000000000 T _stext\n0000000000000000 t foo\n"),
        0
    );
    assert!(s.warnings().iter().any(|w| w.contains("kptr_restrict")));
}

#[test]
fn kallsyms_module_symbols_carry_the_module_name() {
    let mut s = symbolizer();
    s.set_kallsyms(
        "ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n\
         ffffffffc0300000 T ext4_read\t[ext4]\nffffffffc0300100 d ext4_data\t[ext4]\n",
    );
    let got = s.symbolize_kernel(&[0xffffffffc0300010, 0xffffffffc0300100, 0xffffffffc0201002]);
    assert_eq!(
        got[0].as_ref().map(|x| x.name.as_str()),
        Ok("ext4_read [ext4]")
    );
    assert_eq!(got[1], Err(Unresolved::NoSymbol));
    assert_eq!(
        got[2].as_ref().map(|x| (x.name.as_str(), x.offset)),
        Ok(("ftrace_trampoline [__builtin__ftrace]", 2))
    );
}

#[test]
fn kallsyms_lines_of_unusual_shape_mix_with_the_kernel_s_own() {
    // The kernel's exact shape is indexed in place; other spacing, CRLF line ends and
    // 8-digit addresses go through the general parser; garbage is counted, not fatal.
    let mut s = symbolizer();
    let n = s.set_kallsyms(
        "ffffffff81000000 T first\n\
         ffffffff81000100   t   spaced_out\r\n\
         81000200 T short_addr\n\
         not a symbol line at all\n\
         ffffffff81000300 t mod_fn\t[m]\n\
         ffffffff81000400 D data_after\n",
    );
    assert_eq!(n, 4);
    let got = s.symbolize_kernel(&[
        0xffffffff81000010,
        0xffffffff81000101,
        0x81000201,
        0xffffffff81000301,
        0xffffffff81000400,
    ]);
    let names: Vec<_> = got
        .iter()
        .map(|r| r.as_ref().map(|x| x.name.as_str()).ok())
        .collect();
    assert_eq!(
        names,
        [
            Some("first"),
            Some("spaced_out"),
            Some("short_addr"),
            Some("mod_fn [m]"),
            None
        ]
    );
    assert!(s
        .warnings()
        .iter()
        .any(|w| w.contains("1 malformed line(s)") && w.contains("line 4")));
}

#[test]
fn perf_map_resolves_absolute_addresses_and_skips_bad_lines() {
    let map = "7f3a00001000 40 LazyCompile:*fib app.js:1\n\
               7f3a00001040 20 _ZN3jit4stub17h0123456789abcdefE\n\
               this line is broken\n\
               7f3a00002000 10 Interpreter\n";
    let mut s = symbolizer();
    let got = s.symbolize_perf_map(
        4242,
        map,
        &[
            0x7f3a00001000,
            0x7f3a0000103f,
            0x7f3a00001041,
            0x7f3a00001060,
            0x7f3a0000200f,
        ],
    );
    assert_eq!(
        got[0].as_ref().map(|x| x.name.as_str()),
        Ok("LazyCompile:*fib app.js:1")
    );
    assert_eq!(
        got[1].as_ref().map(|x| (x.offset, x.size)),
        Ok((0x3f, Some(0x40)))
    );
    assert_eq!(got[2].as_ref().map(|x| x.name.as_str()), Ok("jit::stub"));
    assert_eq!(got[3], Err(Unresolved::NoSymbol));
    assert_eq!(got[4].as_ref().map(|x| x.name.as_str()), Ok("Interpreter"));
    assert_eq!(s.warnings().len(), 1);
    let w = &s.warnings()[0];
    assert!(
        w.contains("/tmp/perf-4242.map") && w.contains("line 3"),
        "{w}"
    );
    // Strict parsing reports the same line as an error.
    let err = hood_symbols::text::parse_perf_map("/tmp/perf-4242.map", map).unwrap_err();
    assert!(matches!(err, SymbolError::BadLine { line: 3, .. }), "{err}");
    // A new text for the same pid replaces the old table.
    let got = s.symbolize_perf_map(4242, "7f3a00001000 8 Replaced\n", &[0x7f3a00001004]);
    assert_eq!(got[0].as_ref().map(|x| x.name.as_str()), Ok("Replaced"));
}

#[test]
fn nm_output_of_a_real_binary_works_as_symfile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", PROG, &["-no-pie", "-fno-PIE"]);
    for nm_args in [&["-n"][..], &["-S", "-n"][..]] {
        let out = std::process::Command::new("nm")
            .args(nm_args)
            .arg(&bin)
            .output()
            .expect("nm");
        assert!(out.status.success());
        let symfile = dir.path().join("prog.syms");
        std::fs::write(&symfile, &out.stdout).expect("write symfile");
        let opts = SymbolizerOptions {
            symfile: Some(symfile),
            ..SymbolizerOptions::default()
        };
        let mut s = Symbolizer::new(opts).expect("nm output parses");
        let (alpha, _) = nm_symbol(&bin, "alpha", false);
        let (delta, _) = nm_symbol(&bin, "_Z5deltai", false);
        let got = s.symbolize_symfile(&[alpha + 3, delta]);
        assert_eq!(
            got[0].as_ref().map(|x| (x.name.as_str(), x.offset)),
            Ok(("alpha", 3)),
            "{nm_args:?}"
        );
        assert_eq!(
            got[1].as_ref().map(|x| x.name.as_str()),
            Ok("delta"),
            "{nm_args:?}: names are short by default"
        );
    }
    assert_eq!(
        symbolizer().symbolize_symfile(&[1]),
        vec![Err(Unresolved::NoSource)]
    );
}

#[test]
fn malformed_symfile_names_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.syms");
    std::fs::write(
        &path,
        "0000000000401000 T main\n0000000000401010 T\nzzzz T x\n",
    )
    .expect("write");
    let opts = SymbolizerOptions {
        symfile: Some(path.clone()),
        ..SymbolizerOptions::default()
    };
    let err = Symbolizer::new(opts)
        .err()
        .expect("malformed symfile is an error");
    let msg = err.to_string();
    assert!(msg.contains("bad.syms:2"), "{msg}");
    assert!(msg.contains("nm output"), "{msg}");

    let opts = SymbolizerOptions {
        symfile: Some(dir.path().join("absent.syms")),
        ..SymbolizerOptions::default()
    };
    let err = Symbolizer::new(opts)
        .err()
        .expect("missing symfile is an error");
    assert!(err.to_string().contains("absent.syms"), "{err}");
}
