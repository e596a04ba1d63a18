//! Where inlined functions start: each inlined frame carries the line its function is
//! declared on (DWARF's `DW_AT_decl_line`), as pprof's `Function.start_line` wants it. Known
//! answers from a program built by the test: `sq` is defined on line 4 and `sum_sq` on line
//! 5 of its source, and both are inlined into `work` at -O2; in C++, a member function
//! declared in its class (line 4) and defined outside it (line 7), and a template.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{compile, func_offset};
use hood_symbols::{Symbolizer, SymbolizerOptions};

const C_SRC: &str = r#"
#include <stdio.h>
/* line 3 */
static inline int sq(int x) { return x * x; }
static inline int sum_sq(int n) { int s = 0; for (int i = 0; i < n; i++) s += sq(i); return s; }
__attribute__((noinline)) int work(int n) { int t = 0; for (int k = 0; k < n; k++) t ^= sum_sq(k); return t; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", work(argc * 1000)); return 0; }
"#;

/// Every inlined frame of every byte of `func` in `bin`: name → the start lines it was given.
fn inlined_starts(bin: &Path, func: &str) -> BTreeMap<String, Vec<Option<u32>>> {
    let (off, size) = func_offset(bin, func, false);
    let offs: Vec<u64> = (0..size).map(|d| off + d).collect();
    starts_at(bin, &offs, SymbolizerOptions::default())
}

/// Every inlined frame at `offs` of `bin`: name → the start lines it was given.
fn starts_at(
    bin: &Path,
    offs: &[u64],
    opts: SymbolizerOptions,
) -> BTreeMap<String, Vec<Option<u32>>> {
    let mut sym = Symbolizer::new(opts).expect("symbolizer");
    let mut seen: BTreeMap<String, Vec<Option<u32>>> = BTreeMap::new();
    for r in sym.symbolize_file(bin, None, offs).into_iter().flatten() {
        for f in r.inlined {
            let v = seen.entry(f.name).or_default();
            if !v.contains(&f.start_line) {
                v.push(f.start_line);
            }
        }
    }
    seen
}

#[test]
fn inlined_c_functions_start_on_their_declaration_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", C_SRC, &["-O2", "-g"]);
    let seen = inlined_starts(&bin, "work");
    assert_eq!(seen.get("sq"), Some(&vec![Some(4)]), "{seen:?}");
    assert_eq!(seen.get("sum_sq"), Some(&vec![Some(5)]), "{seen:?}");
}

#[test]
fn a_stripped_binary_gets_them_from_its_debug_file_compressed_or_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "prog", C_SRC, &["-O2", "-g"]);
    let (off, size) = func_offset(&bin, "work", false);
    let offs: Vec<u64> = (0..size).map(|d| off + d).collect();
    let debug = dir.path().join("debug");
    // Compressed as Debian compresses its debug files, and read without the DWARF cache.
    common::split_debug(&bin, &debug, &["--compress-debug-sections=zlib"]);
    common::binutils(&["strip".as_ref(), "-s".as_ref(), bin.as_os_str()]);
    let seen = starts_at(
        &bin,
        &offs,
        SymbolizerOptions {
            debug_dirs: vec![debug],
            dwarf_cache: None,
            ..SymbolizerOptions::default()
        },
    );
    assert_eq!(seen.get("sq"), Some(&vec![Some(4)]), "{seen:?}");
    assert_eq!(seen.get("sum_sq"), Some(&vec![Some(5)]), "{seen:?}");
}

const CPP_SRC: &str = r#"
#include <cstdio>
struct Acc {
    inline long add(long x);
    long total = 0;
};
inline long Acc::add(long x) { total += x * 3 + 1; return total; }
template <typename T> inline T twice(T x) { T s = 0; for (T j = 0; j < x % 7; j++) s += x ^ j; return s; }
__attribute__((noinline)) long work(int n) {
    Acc a;
    for (int i = 0; i < n; i++) a.add(twice<long>(i));
    return a.total;
}
int main(int argc, char **) { std::printf("%ld\n", work(argc * 1000)); return 0; }
"#;

#[test]
fn inlined_cpp_members_start_where_they_are_defined() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("prog.cc");
    std::fs::write(&src, CPP_SRC).expect("write C++ source");
    let bin = dir.path().join("prog");
    let status = std::process::Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("run g++");
    assert!(status.success(), "g++ failed");
    let work = common::nm_symbol(&bin, "_Z4worki", false);
    assert!(work.1 > 0, "no work in the binary");
    let seen = inlined_starts(&bin, "_Z4worki");
    let line_of = |name: &str| {
        seen.iter()
            .find(|(k, _)| k.contains(name))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(line_of("add"), Some(vec![Some(7)]), "{seen:?}");
    assert_eq!(line_of("twice"), Some(vec![Some(8)]), "{seen:?}");
}

/// `helper` is defined on line 2 of its own file; link-time optimization inlines it into
/// `work` of another file, so DWARF refers to its declaration in another compilation unit.
const LTO_A: &str = "/* helper, inlined into work() of b.c by -flto */\nint helper(int x)\n{\n\tint s = 0;\n\tfor (int i = 0; i < x % 13; i++) s += x ^ i;\n\treturn s;\n}\n";
const LTO_B: &str = r#"#include <stdio.h>
int helper(int x);
__attribute__((noinline)) int work(int n) { int t = 0; for (int k = 0; k < n; k++) t += helper(k); return t; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", work(argc * 1000)); return 0; }
"#;

#[test]
fn functions_inlined_across_files_by_lto_start_where_their_file_says() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.c"), dir.path().join("b.c"));
    std::fs::write(&a, LTO_A).unwrap();
    std::fs::write(&b, LTO_B).unwrap();
    let bin = dir.path().join("prog");
    let out = std::process::Command::new("gcc")
        .args(["-O2", "-g", "-flto", "-o"])
        .arg(&bin)
        .arg(&a)
        .arg(&b)
        .output()
        .expect("run gcc");
    if !out.status.success() {
        println!(
            "not run here: gcc cannot link with -flto: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    let seen = inlined_starts(&bin, "work");
    assert_eq!(seen.get("helper"), Some(&vec![Some(2)]), "{seen:?}");
}
