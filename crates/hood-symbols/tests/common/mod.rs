//! Test helpers: build C programs with gcc and find where their functions
//! live with binutils (nm, readelf), independently of the crate under test.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A program with three known functions (`alpha`, `beta` global, `gamma_fn`
/// static) and one with a C++-mangled symbol name (`_Z5deltai`).
pub const PROG: &str = r#"
#include <stdio.h>
__attribute__((noinline)) int alpha(int x) { int s = 0; for (int i = 0; i < x * 100; i++) s += i * i; return s; }
__attribute__((noinline)) int beta(int x) { return alpha(x) * 3 + x; }
__attribute__((noinline)) static int gamma_fn(int x) { int s = 1; for (int i = 0; i < x; i++) s = s * 7 + beta(i); return s; }
int delta(int x) __asm__("_Z5deltai");
__attribute__((noinline)) int delta(int x) { return gamma_fn(x) ^ 5; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", delta(argc)); return 0; }
"#;

/// A different program, to replace the first at the same path.
pub const OTHER: &str = r#"
int main(void) { return 3; }
"#;

/// Inlined helpers at -O2 (`sq` and `sum_sq` inside `work`), so answers carry lines and
/// inlined frames; `printf` is a PLT call.
pub const INLINED: &str = r#"
#include <stdio.h>
static inline int sq(int x) { return x * x; }
static inline int sum_sq(int n) { int s = 0; for (int i = 0; i < n; i++) s += sq(i); return s; }
__attribute__((noinline)) int work(int n) { int t = 0; for (int k = 0; k < n; k++) t ^= sum_sq(k); return t; }
__attribute__((noinline)) int outer(int n) { return work(n) + work(n / 2); }
int main(int argc, char **argv) { (void)argv; printf("%d\n", outer(argc * 1000)); return 0; }
"#;

/// Every 3rd byte of `work`, `outer` and `main` of a program built from [`INLINED`], as file
/// offsets.
pub fn inlined_offsets(bin: &Path) -> Vec<u64> {
    let mut v = Vec::new();
    for f in ["work", "outer", "main"] {
        let (off, size) = func_offset(bin, f, false);
        v.extend((0..size).step_by(3).map(|d| off + d));
    }
    v
}

/// The files in `dir` whose names end with `suffix`, sorted (none if `dir` is missing).
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.to_string_lossy().ends_with(suffix));
    v.sort();
    v
}

/// Compiles `src` into `dir/name` with `-O1 -fno-omit-frame-pointer` plus
/// `extra` flags and returns the binary's path.
pub fn compile(dir: &Path, name: &str, src: &str, extra: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).expect("write C source");
    let out = dir.join(name);
    let status = Command::new("gcc")
        .args(["-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&out)
        .arg(&c)
        .args(extra)
        .status()
        .expect("run gcc");
    assert!(status.success(), "gcc failed for {name}");
    out
}

fn run(cmd: &str, args: &[&str], path: &Path) -> String {
    let out = Command::new(cmd).args(args).arg(path).output().expect(cmd);
    assert!(
        out.status.success(),
        "{cmd} {args:?} {} failed",
        path.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(address, size)` of symbol `name` per `nm -S` (add `-D` for dynamic).
pub fn nm_symbol(path: &Path, name: &str, dynamic: bool) -> (u64, u64) {
    let args: &[&str] = if dynamic { &["-S", "-D"] } else { &["-S"] };
    for line in run("nm", args, path).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 && (f[3] == name || f[3].split('@').next() == Some(name)) {
            let addr = u64::from_str_radix(f[0], 16).expect("nm address");
            let size = u64::from_str_radix(f[1], 16).expect("nm size");
            return (addr, size);
        }
    }
    panic!("symbol {name} not found by nm in {}", path.display());
}

/// Converts a virtual address of the ELF file to its file offset using the
/// PT_LOAD program headers printed by `readelf -lW`.
pub fn vaddr_to_offset(path: &Path, vaddr: u64) -> u64 {
    let hexnum =
        |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("readelf hex");
    for line in run("readelf", &["-lW"], path).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"LOAD") && f.len() >= 6 {
            let (off, va, filesz) = (hexnum(f[1]), hexnum(f[2]), hexnum(f[4]));
            if vaddr >= va && vaddr < va + filesz {
                return vaddr - va + off;
            }
        }
    }
    panic!("{vaddr:#x} is in no PT_LOAD of {}", path.display());
}

/// File offset and size of function `name` in `path`.
pub fn func_offset(path: &Path, name: &str, dynamic: bool) -> (u64, u64) {
    let (addr, size) = nm_symbol(path, name, dynamic);
    (vaddr_to_offset(path, addr), size)
}

/// Path of the libc this test process has mapped, from /proc/self/maps.
pub fn loaded_libc() -> PathBuf {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    for line in maps.lines() {
        if let Some(path) = line.split_whitespace().nth(5) {
            let file = path.rsplit('/').next().unwrap_or("");
            if file.starts_with("libc.so") || (file.starts_with("libc-") && file.ends_with(".so")) {
                return PathBuf::from(path);
            }
        }
    }
    panic!("no libc mapped in this process");
}

/// Run a binutils command (`objcopy`, `strip`: `args[0]` with the rest), which must succeed.
pub fn binutils(args: &[&std::ffi::OsStr]) {
    let st = Command::new(args[0])
        .args(&args[1..])
        .status()
        .expect("binutils (objcopy, strip) come with gcc");
    assert!(st.success(), "{args:?}");
}

/// `objcopy --only-keep-debug` (plus `extra` objcopy options) of `bin`, placed as
/// `DIR/.build-id/XX/YYYY.debug`.
pub fn split_debug(bin: &Path, dir: &Path, extra: &[&str]) {
    let id = hood_symbols::read_build_id(bin).unwrap().expect("build-id");
    let h = id.to_string();
    let sub = dir.join(".build-id").join(&h[..2]);
    std::fs::create_dir_all(&sub).unwrap();
    let dbg = sub.join(format!("{}.debug", &h[2..]));
    let mut args: Vec<&std::ffi::OsStr> = vec!["objcopy".as_ref(), "--only-keep-debug".as_ref()];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    args.extend([bin.as_os_str(), dbg.as_os_str()]);
    binutils(&args);
}
