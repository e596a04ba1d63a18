//! The assembled library the unwinder's tests walk: glibc's `clone3`/`clone` layout (one FDE
//! ending before the `syscall`, the thread's outermost FDE after `test; jl; je; ret`), a
//! caller, and code without any FDE.

use std::path::{Path, PathBuf};

use hood_unwind::{Options, Unwinder};
use object::{Object as _, ObjectSymbol as _};

const CLONE_LIKE: &str = r#"
    .text
    .globl fake_clone
    .type fake_clone, @function
fake_clone:
    .cfi_startproc
    mov $435, %eax
    .cfi_endproc
    syscall
    .globl after_syscall
after_syscall:
    test %rax, %rax
    jl 2f
    je 1f
    .globl parent_ret
parent_ret:
    ret
1:
    .cfi_startproc
    .cfi_undefined rip
    xor %ebp, %ebp
    call *%rdx
    hlt
    .cfi_endproc
2:
    .cfi_startproc
    ret
    .cfi_endproc

    .globl creator
    .type creator, @function
creator:
    .cfi_startproc
    .cfi_undefined rip
    call fake_clone
    .globl creator_ra
creator_ra:
    hlt
    .cfi_endproc

    .globl bare
bare:
    nop
    nop
    ret
    .fill 32, 1, 0x90
    .section .note.GNU-stack,"",@progbits
"#;

/// The assembled library and the addresses (svma) of its symbols.
pub fn build(dir: &Path) -> (PathBuf, impl Fn(&str) -> u64) {
    let src = dir.join("clone_like.S");
    std::fs::write(&src, CLONE_LIKE).unwrap();
    let so = dir.join("libclonelike.so");
    let st = std::process::Command::new("gcc")
        .args(["-shared", "-nostdlib", "-Wl,--eh-frame-hdr", "-o"])
        .arg(&so)
        .arg(&src)
        .status()
        .expect("gcc must be installed to assemble the test library");
    assert!(st.success(), "gcc failed");
    let bytes = std::fs::read(&so).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let syms: Vec<(String, u64)> = file
        .symbols()
        .filter_map(|s| Some((s.name().ok()?.to_string(), s.address())))
        .collect();
    let at = move |name: &str| {
        syms.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no symbol {name}"))
            .1
    };
    (so, at)
}

pub const BASE: u64 = 0x7f00_0000_0000;
pub const SP: u64 = 0x7ffe_0000_1000;

pub fn unwinder(so: &Path) -> Unwinder {
    let mut u = Unwinder::new(Options::default());
    let len = std::fs::metadata(so).unwrap().len() + 0x10000;
    u.mmap(7, BASE, len, 0, so.to_str().unwrap(), None);
    u
}
