//! Names users can read (issue 12, item 6), on real recordings of known programs:
//! - samples on PLT stubs are charged to `func@plt`, not to the symbol before `.plt`;
//! - C++ names are shortened as perf prints them (no parameter lists or return types),
//!   `--full-names` gives the whole signature;
//! - the text report keeps every line within the width it was given, cutting long names
//!   with `…`.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

/// Builds tests/c/`src` with `compiler` and `flags` into `dir`.
fn build(dir: &Path, compiler: &str, src: &str, flags: &[&str]) -> PathBuf {
    let out = dir.join(src.split('.').next().unwrap());
    let st = common::command(compiler)
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(repo().join("tests/c").join(src))
        .status()
        .unwrap_or_else(|e| panic!("{compiler} must be installed to build {src}: {e}"));
    assert!(st.success(), "{compiler} failed on {src}");
    out
}

/// Records `prog ARGS` at a high rate into `dir/NAME.data`.
fn record_prog(dir: &Path, prog: &Path, args: &[&str]) -> PathBuf {
    let data = dir.join("names.data");
    let mut all = vec!["-F", "2999", "--", prog.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = record(&data, &all);
    assert!(out.status.success(), "{}", text(&out));
    data
}

/// Self samples per leaf frame of the program's process. These tests are about the names of
/// functions in symbol tables: inlined frames (report_inline.rs) are left out.
fn leaves(data: &Path, comm: &str, extra: &[&str]) -> std::collections::HashMap<String, u64> {
    let mut args = vec!["--no-inline"];
    args.extend_from_slice(extra);
    leaf_counts(&collapsed(data, &args), comm)
}

#[test]
fn samples_on_plt_stubs_are_charged_to_func_at_plt() {
    if !privileged("samples_on_plt_stubs_are_charged_to_func_at_plt") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    for (i, bind) in ["-Wl,-z,lazy", "-Wl,-z,now"].into_iter().enumerate() {
        let sub = dir.path().join(i.to_string());
        std::fs::create_dir(&sub).unwrap();
        let prog = build(
            &sub,
            "gcc",
            "plt_calls.c",
            &["-O2", "-g", "-fno-builtin", "-fno-omit-frame-pointer", bind],
        );
        let data = record_prog(&sub, &prog, &["1500"]);
        let leaf = leaves(&data, "plt_calls", &[]);
        let plt: u64 = ["memcmp@plt", "strlen@plt", "abs@plt"]
            .iter()
            .filter_map(|n| leaf.get(*n))
            .sum();
        let total: u64 = leaf.values().sum();
        // The stubs are one jump each, about as long as the tiny calls: some 3-6 % of samples.
        assert!(
            plt > 0,
            "{bind}: no sample charged to memcmp@plt/strlen@plt/abs@plt among {total}: {leaf:?}"
        );
        assert!(
            !leaf.contains_key("_init"),
            "{bind}: PLT samples charged to _init: {leaf:?}"
        );
        assert!(
            leaf.keys().all(|k| !k.starts_with("plt_calls+0x")),
            "{bind}: unresolved frames in the program: {leaf:?}"
        );
        plt_addresses_lie_in_the_plt(&sub, &prog, &data);
    }
}

/// Every pprof location named `*@plt` has a sampled address that, translated through its
/// mapping, lies in `.plt` or `.plt.sec` (per readelf) of its file, and some in the program do.
fn plt_addresses_lie_in_the_plt(dir: &Path, prog: &Path, data: &Path) {
    let pb = dir.join("plt.pb.gz");
    let out = run(hood()
        .args(["report", "--format", "pprof", "-i"])
        .arg(data)
        .arg("-o")
        .arg(&pb));
    assert!(out.status.success(), "{}", text(&out));
    let Ok(raw) = go_tool_pprof(dir).arg("-raw").arg(&pb).output() else {
        eprintln!("not run here: the address check needs `go` (apt-get install golang-go)");
        return;
    };
    assert!(raw.status.success(), "go tool pprof -raw:\n{}", text(&raw));
    let raw = String::from_utf8_lossy(&raw.stdout).into_owned();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    // "[12] .plt PROGBITS 0000000000001020 001020 000050 10 AX 0 0 16": file ranges.
    let plt_of = |file: &Path| -> Vec<std::ops::Range<u64>> {
        let sections = common::command("readelf")
            .arg("-SW")
            .arg(file)
            .output()
            .unwrap();
        String::from_utf8_lossy(&sections.stdout)
            .lines()
            .filter_map(|l| {
                let cols: Vec<&str> = l.split(']').nth(1)?.split_whitespace().collect();
                matches!(cols.first(), Some(&".plt") | Some(&".plt.sec")).then(|| {
                    let (off, size) = (hex(cols[3]), hex(cols[4]));
                    off..off + size
                })
            })
            .collect()
    };
    let plt = plt_of(prog);
    assert!(
        !plt.is_empty(),
        "readelf shows no .plt in {}",
        prog.display()
    );
    let mut maps = std::collections::HashMap::new();
    for l in raw.lines().skip_while(|l| *l != "Mappings").skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let (Some(id), Some(r)) = (f.first().and_then(|i| i.strip_suffix(':')), f.get(1)) {
            let r: Vec<u64> = r.split('/').map(hex).collect();
            maps.insert(
                id.to_string(),
                (r[0], r[2], f.get(2).copied().unwrap_or("")),
            );
        }
    }
    let mut seen = 0;
    for l in raw.lines().skip_while(|l| *l != "Locations").skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 || !f[3].ends_with("@plt") {
            continue;
        }
        let m = f[2].strip_prefix("M=").expect("a mapping");
        let (start, offset, file) = maps[m];
        // A sample may also land in a library's own PLT (ld.so's `_dl_catch_exception@plt`):
        // each stub is checked against the sections of the file it is in.
        let ranges = if Path::new(file) == prog {
            plt.clone()
        } else {
            plt_of(Path::new(file))
        };
        let file_offset = hex(f[1]) - start + offset;
        assert!(
            ranges.iter().any(|r| r.contains(&file_offset)),
            "{l}: file offset {file_offset:#x} outside .plt/.plt.sec of {file}: {ranges:x?}"
        );
        seen += usize::from(Path::new(file) == prog);
    }
    assert!(seen > 0, "no @plt location of the program in:\n{raw}");
}

/// The hot function of templates.cpp, short and whole.
const SHORT_PREFIX: &str = "outer::inner::Table<std::__cxx11::basic_string<char";
const FOLD: &str = "::fold<main::{lambda(unsigned long, unsigned long)#1}>";

#[test]
fn cpp_names_are_short_by_default_and_whole_with_full_names() {
    if !privileged("cpp_names_are_short_by_default_and_whole_with_full_names") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build(
        dir.path(),
        "g++",
        "templates.cpp",
        &["-O2", "-g", "-fno-omit-frame-pointer"],
    );
    let data = record_prog(dir.path(), &prog, &["1000"]);

    let short = leaves(&data, "templates", &[]);
    let (hot, n) = short
        .iter()
        .max_by_key(|(_, &n)| n)
        .expect("samples of templates");
    assert!(
        hot.starts_with(SHORT_PREFIX) && hot.contains(FOLD),
        "hottest frame is not Table::fold: {hot} ({n} samples) in {short:?}"
    );
    // No parameter list and no return type: nothing after the template arguments but
    // gcc's clone suffix, and the name starts with the namespace.
    let after = &hot[hot.find(FOLD).unwrap() + FOLD.len()..];
    assert!(
        after.is_empty() || after.starts_with(" [clone"),
        "short name keeps its parameters: {hot}"
    );

    let full = leaves(&data, "templates", &["--full-names"]);
    let whole = full
        .keys()
        .find(|k| k.contains(FOLD))
        .unwrap_or_else(|| panic!("no fold frame with --full-names: {full:?}"));
    assert!(
        whole.starts_with("unsigned long outer::inner::Table<"),
        "--full-names lost the return type: {whole}"
    );
    assert!(
        whole.contains(">(std::map<") && whole.contains(") const"),
        "--full-names lost the parameter list: {whole}"
    );
    assert_eq!(full[whole], short[hot], "same samples under either name");
}

#[test]
fn the_text_report_fits_the_width_it_is_given() {
    if !privileged("the_text_report_fits_the_width_it_is_given") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build(
        dir.path(),
        "g++",
        "templates.cpp",
        &["-O2", "-g", "-fno-omit-frame-pointer"],
    );
    let data = record_prog(dir.path(), &prog, &["600"]);
    for width in [60usize, 80, 132] {
        for extra in [
            &[][..],
            &["--full-names"][..],
            &["--call-graph", "caller"][..],
            &["--call-graph", "callee", "--full-names"][..],
        ] {
            let out = run(hood()
                .args(["report", "--no-inline", "--width", &width.to_string(), "-i"])
                .arg(&data)
                .args(extra));
            assert!(out.status.success(), "{}", text(&out));
            let report = String::from_utf8(out.stdout).unwrap();
            let widest = report.lines().map(|l| l.chars().count()).max().unwrap();
            assert!(
                widest <= width,
                "--width {width} {extra:?}: a line of {widest} characters:\n{report}"
            );
            // The hot function is named (cut to its column), with the process beside it.
            // Short names start with the namespace, whole ones with the return type.
            let start = if extra.contains(&"--full-names") {
                "unsigned long o"
            } else {
                "outer::inner::T"
            };
            let row = report
                .lines()
                .find(|l| l.contains(start))
                .unwrap_or_else(|| panic!("--width {width} {extra:?}: no Table row:\n{report}"));
            assert!(row.contains('…'), "long name not cut: {row}");
            if extra.is_empty() {
                assert!(
                    row.trim_end()
                        .ends_with(&format!("templates ({})", pid_of(&report))),
                    "process column lost: {row}"
                );
            }
        }
    }
    // Without a limit the whole name is printed.
    let out = run(hood()
        .args([
            "report",
            "--no-inline",
            "--width",
            "0",
            "--full-names",
            "-i",
        ])
        .arg(&data));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(
        report
            .lines()
            .any(|l| l.contains(FOLD) && l.contains(") const")),
        "--width 0 cut the name:\n{report}"
    );
}

/// The pid in the report's "templates (PID)" label.
fn pid_of(report: &str) -> String {
    let at = report.find("templates (").expect("a templates (PID) label") + "templates (".len();
    report[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect()
}

/// Whether `name` ends a path segment with a Rust symbol hash (`::h` + 16 hex digits).
fn has_rust_hash(name: &str) -> bool {
    name.match_indices("::h").any(|(at, _)| {
        let rest = &name[at + 3..];
        rest.len() >= 16 && rest[..16].chars().all(|c| c.is_ascii_hexdigit())
    })
}

#[test]
fn rust_names_carry_no_hash() {
    if !privileged("rust_names_carry_no_hash") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build(
        dir.path(),
        "rustc",
        "rust_spin.rs",
        &["-O", "-g", "-C", "force-frame-pointers=yes"],
    );
    // The symbol does carry a hash: the report takes it off.
    let nm = common::command("nm")
        .arg(&prog)
        .output()
        .expect("nm (binutils)");
    let syms = String::from_utf8_lossy(&nm.stdout);
    assert!(
        syms.lines().any(|l| l.contains("4spin17h")),
        "rustc no longer mangles with a hash:\n{syms}"
    );
    let data = record_prog(dir.path(), &prog, &["800"]);
    for extra in [&[][..], &["--full-names"][..]] {
        let leaf = leaves(&data, "rust_spin", extra);
        let (hot, _) = leaf.iter().max_by_key(|(_, &n)| n).expect("samples");
        assert_eq!(hot, "rust_spin::spin", "{extra:?}: {leaf:?}");
        let hashed: Vec<&String> = leaf.keys().filter(|k| has_rust_hash(k)).collect();
        assert!(
            hashed.is_empty(),
            "{extra:?}: names with hashes: {hashed:?}"
        );
    }
}
