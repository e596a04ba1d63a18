//! A walk is remembered by the process's mappings, the registers and every stack word it
//! read: the same stack is recalled, not walked again; a change in any word it read, or in
//! the mappings, walks again. Built on the same assembled library as `thread_roots`.

use std::path::{Path, PathBuf};

use hood_unwind::{Options, Unwinder, UserRegs};
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
fn build(dir: &Path) -> (PathBuf, impl Fn(&str) -> u64) {
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

const BASE: u64 = 0x7f00_0000_0000;
const SP: u64 = 0x7ffe_0000_1000;

fn unwinder(so: &Path) -> Unwinder {
    let mut u = Unwinder::new(Options::default());
    let len = std::fs::metadata(so).unwrap().len() + 0x10000;
    u.mmap(7, BASE, len, 0, so.to_str().unwrap(), None);
    u
}

#[test]
fn a_walk_is_recalled_only_while_every_word_it_read_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let mut u = unwinder(&so);
    let ip = BASE + at("parent_ret");
    let ra = BASE + at("creator_ra");
    let regs = UserRegs { ip, sp: SP, bp: 0 };
    let mut stack = vec![0u8; 256];
    stack[..8].copy_from_slice(&ra.to_le_bytes());
    let walk = |u: &mut Unwinder, stack: &[u8]| {
        let mut out = Vec::new();
        let t = u.unwind(7, regs, stack, &mut out);
        (t, out)
    };
    let first = walk(&mut u, &stack);
    assert_eq!(first, (None, vec![ip, ra]));
    assert_eq!(u.stats().recalled, 0);
    // The same stack again, and one that differs only in a word the walk never read.
    assert_eq!(walk(&mut u, &stack), first);
    stack[200] = 0x55;
    assert_eq!(walk(&mut u, &stack), first);
    assert_eq!(u.stats().recalled, 2);
    // The return address changed: walked again, and the answer follows the new word.
    stack[..8].copy_from_slice(&(BASE + at("creator")).to_le_bytes());
    let changed = walk(&mut u, &stack);
    assert_ne!(changed, first);
    assert_eq!(u.stats().recalled, 2);
    // A shorter copy: a word past its end may be the one a walk needed.
    stack[..8].copy_from_slice(&ra.to_le_bytes());
    assert_eq!(walk(&mut u, &stack[..128]), first);
    assert_eq!(u.stats().recalled, 2);
    // The full copy again: walked once (the short copy's walk took its place), then recalled.
    assert_eq!(walk(&mut u, &stack), first);
    assert_eq!(walk(&mut u, &stack), first);
    assert_eq!(u.stats().recalled, 3);
    // New mappings: every earlier walk is forgotten.
    u.mmap(7, 0x1000_0000, 0x1000, 0, "[anon:jit]", None);
    assert_eq!(walk(&mut u, &stack), first);
    assert_eq!(u.stats().recalled, 3);
    assert_eq!(u.stats().stacks, 8);
}
