//! PLT stubs are named `func@plt` (as perf and objdump name them), not after the symbol
//! before `.plt`: checked against the stub addresses objdump prints for gcc-built programs
//! in each PLT layout (lazy `.plt`, `-z now`, IBT's `.plt.sec`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{compile, vaddr_to_offset};
use hood_symbols::{Symbolizer, SymbolizerOptions};

const CALLS: &str = r#"
#include <string.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    (void)argv;
    char a[16] = "abcdef", b[16] = "abcdeg";
    size_t n = 0;
    for (int i = 0; i < argc * 3; i++) {
        n += strlen(a) + (size_t)memcmp(a, b, 6);
        void *p = malloc(16);
        free(p);
    }
    return (int)n & 1;
}
"#;

/// `name@plt` → vaddr of every stub objdump labels in `.plt` and `.plt.sec`.
fn objdump_stubs(bin: &Path) -> BTreeMap<String, u64> {
    let out = Command::new("objdump")
        .args(["-d", "-j", ".plt", "-j", ".plt.sec"])
        .arg(bin)
        .output()
        .expect("objdump (binutils) must be installed for this test");
    assert!(out.status.success(), "objdump failed on {}", bin.display());
    let mut stubs = BTreeMap::new();
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        // "0000000000001030 <memcmp@plt>:"
        let Some((addr, rest)) = line.split_once(" <") else {
            continue;
        };
        let Some(name) = rest.strip_suffix(">:") else {
            continue;
        };
        if let (Ok(a), true) = (u64::from_str_radix(addr, 16), name.ends_with("@plt")) {
            stubs.insert(name.to_string(), a);
        }
    }
    stubs
}

fn check(flags: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(dir.path(), "calls", CALLS, flags);
    let stubs = objdump_stubs(&bin);
    for want in ["strlen@plt", "memcmp@plt", "malloc@plt", "free@plt"] {
        assert!(
            stubs.contains_key(want),
            "objdump shows no {want} in {flags:?}: {stubs:?}"
        );
    }
    let mut s = Symbolizer::new(SymbolizerOptions::default()).expect("symbolizer");
    let mut offsets = Vec::new();
    let mut want = Vec::new();
    for (name, &vaddr) in &stubs {
        let off = vaddr_to_offset(&bin, vaddr);
        for delta in [0, 4, 15] {
            offsets.push(off + delta);
            want.push((name.clone(), delta));
        }
    }
    let got = s.symbolize_file(&bin, None, &offsets);
    for (g, (name, delta)) in got.iter().zip(&want) {
        let sym = g
            .as_ref()
            .unwrap_or_else(|e| panic!("{name}+{delta} unresolved ({e}) with {flags:?}"));
        assert_eq!(
            (sym.name.as_str(), sym.offset),
            (name.as_str(), *delta),
            "with {flags:?}"
        );
    }
}

#[test]
fn lazy_binding_plt_stubs_are_named_after_their_targets() {
    check(&["-fno-builtin", "-fcf-protection=none", "-Wl,-z,lazy"]);
}

#[test]
fn bind_now_plt_stubs_are_named_after_their_targets() {
    check(&["-fno-builtin", "-fcf-protection=none", "-Wl,-z,now"]);
}

#[test]
fn ibt_plt_sec_stubs_are_named_after_their_targets() {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("SKIPPED: .plt.sec is x86-64 only");
        return;
    }
    check(&["-fno-builtin", "-fcf-protection=full", "-Wl,-z,now"]);
    check(&["-fno-builtin", "-fcf-protection=full", "-Wl,-z,lazy"]);
}

#[test]
fn the_resolver_stub_plt0_has_no_function_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = compile(
        dir.path(),
        "calls",
        CALLS,
        &["-fno-builtin", "-fcf-protection=none", "-Wl,-z,lazy"],
    );
    let out = Command::new("readelf")
        .args(["-SW"])
        .arg(&bin)
        .output()
        .expect("readelf");
    let text = String::from_utf8_lossy(&out.stdout);
    // "[12] .plt PROGBITS 0000000000001020 001020 000050 10 AX 0 0 16"
    let line = text
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == ".plt"))
        .expect("a .plt section");
    let cols: Vec<&str> = line.split(']').nth(1).unwrap().split_whitespace().collect();
    let off = u64::from_str_radix(cols[3], 16).unwrap();
    let mut s = Symbolizer::new(SymbolizerOptions::default()).expect("symbolizer");
    let got = s.symbolize_file(&bin, None, &[off, off + 8]);
    for g in got {
        let name = g.map(|s| s.name).unwrap_or_default();
        assert!(
            !name.ends_with("@plt"),
            "PLT0 (the lazy resolver) was named {name}"
        );
    }
}
