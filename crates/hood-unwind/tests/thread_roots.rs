//! A new thread's first instructions are its root, not code without unwind information.
//!
//! glibc's `clone3` and `clone` (x86-64) end one FDE before the `syscall` and start the
//! thread's outermost FDE (`.cfi_undefined rip`) after `test; jl; je; ret`: a sample taken in
//! the new thread between the two was marked `[truncated: no unwind info in libc.so.6]` and
//! the recorder warned that libc has code without unwind information. The same layout is
//! built here from assembly, so the test does not depend on one glibc build.

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
fn a_new_thread_right_after_clone_is_complete_and_warned_about_by_no_one() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let mut u = unwinder(&so);
    // The new thread: its stack holds no caller (the word at sp is not a return address).
    let ip = BASE + at("after_syscall");
    let mut out = Vec::new();
    let t = u.unwind(
        7,
        UserRegs {
            ip,
            sp: SP,
            bp: 0x1234,
        },
        &[0u8; 256],
        &mut out,
    );
    assert_eq!(t, None, "a thread's root is complete: {out:x?}");
    assert_eq!(out, vec![ip]);
    assert_eq!(u.take_warnings(), Vec::<String>::new());
}

#[test]
fn the_parent_leaving_clone_continues_into_its_caller() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let mut u = unwinder(&so);
    let ip = BASE + at("parent_ret");
    let ra = BASE + at("creator_ra");
    let mut stack = vec![0u8; 256];
    stack[..8].copy_from_slice(&ra.to_le_bytes());
    let mut out = Vec::new();
    let t = u.unwind(7, UserRegs { ip, sp: SP, bp: 0 }, &stack, &mut out);
    assert_eq!(t, None, "{out:x?}");
    assert_eq!(out, vec![ip, ra]);
    assert_eq!(u.take_warnings(), Vec::<String>::new());
}

#[test]
fn a_function_pointer_on_the_new_threads_stack_is_no_caller() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let mut u = unwinder(&so);
    // `clone` leaves the start function's address at the new thread's stack pointer: a
    // function's first byte, which no call returns to.
    let ip = BASE + at("after_syscall");
    let mut stack = vec![0u8; 256];
    stack[..8].copy_from_slice(&(BASE + at("creator")).to_le_bytes());
    let mut out = Vec::new();
    let t = u.unwind(7, UserRegs { ip, sp: SP, bp: 0 }, &stack, &mut out);
    assert_eq!(t, None, "{out:x?}");
    assert_eq!(out, vec![ip]);
}

#[test]
fn other_code_without_call_frame_information_is_still_marked_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let mut u = unwinder(&so);
    // `bare` has no FDE and no thread start follows it within 16 bytes.
    let ip = BASE + at("bare");
    let mut out = Vec::new();
    let t = u.unwind(7, UserRegs { ip, sp: SP, bp: 0 }, &[0u8; 256], &mut out);
    assert_eq!(t, Some(hood_unwind::Truncation::NoUnwindInfo), "{out:x?}");
    let name = so.to_str().unwrap();
    assert_eq!(
        u.take_warnings(),
        vec![format!(
            "{name}: some of its code is not described by its call frame information \
             (.eh_frame), so stacks through that code stop there; such code is generated or \
             written by hand (V8's builtins in node, assembly). Fix: if that code keeps frame \
             pointers, `hood record --call-graph fp` follows them"
        )]
    );
}
