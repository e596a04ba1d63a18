//! A new thread's first instructions are its root, not code without unwind information.
//!
//! glibc's `clone3` and `clone` (x86-64) end one FDE before the `syscall` and start the
//! thread's outermost FDE (`.cfi_undefined rip`) after `test; jl; je; ret`: a sample taken in
//! the new thread between the two was marked `[truncated: no unwind info in libc.so.6]` and
//! the recorder warned that libc has code without unwind information. The same layout is
//! built here from assembly, so the test does not depend on one glibc build.

mod common;

use common::{build, unwinder, BASE, SP};
use hood_unwind::UserRegs;

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
             (.eh_frame), and where a stack met that code no frame pointer led on, so stacks \
             through it stop there; such code is generated or written by hand (V8's builtins \
             in node, assembly). Fix: nothing to fix when the report's share of these stacks \
             is small; for your own assembly, add call frame information (`.cfi_` directives) \
             or keep a frame pointer (`push rbp; mov rbp, rsp`)"
        )]
    );
}
