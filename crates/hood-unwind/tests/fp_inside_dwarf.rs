//! Code without call frame information inside an image that has it (V8's builtins in node,
//! hand-written assembly) is stepped out of by its frame pointer where that step is
//! plausible, and the walk goes on with the rules of the code it returns to; where it is not,
//! the stack stays marked. framehop alone took the word at the stack pointer for a first
//! frame's return address there, which is right only at a function's first instruction.

mod common;

use common::{build, unwinder, BASE, SP};
use hood_unwind::{Truncation, UserRegs};

/// A stack copy of 256 bytes from `SP` with `words` written at their offsets.
fn stack(words: &[(u64, u64)]) -> Vec<u8> {
    let mut s = vec![0u8; 256];
    for &(off, w) in words {
        let o = off as usize;
        s[o..o + 8].copy_from_slice(&w.to_le_bytes());
    }
    s
}

#[test]
fn a_frame_pointer_step_out_of_code_without_cfi_resumes_the_dwarf_walk() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let mut u = unwinder(&so);
    // `bare` (no FDE) keeps a frame: rbp points at [caller's rbp, return address], and the
    // return address is in `creator`, whose call frame information says it is the root.
    let ip = BASE + at("bare") + 1;
    let ra = BASE + at("creator_ra");
    let bp = SP + 0x40;
    let mut out = Vec::new();
    let t = u.unwind(
        7,
        UserRegs { ip, sp: SP, bp },
        &stack(&[(0x40, 0), (0x48, ra)]),
        &mut out,
    );
    assert_eq!(t, None, "{out:x?}");
    assert_eq!(out, vec![ip, ra]);
    assert_eq!(u.stats().fp_steps, 1);
    assert_eq!(u.take_warnings(), Vec::<String>::new());
}

#[test]
fn an_implausible_frame_pointer_leaves_the_stack_marked() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let ip = BASE + at("bare") + 1;
    let ra = BASE + at("creator_ra");
    let cases = [
        // below the stack pointer
        ("below sp", SP - 0x40, stack(&[])),
        // the word it points at is no return address: outside every mapping
        (
            "return address unmapped",
            SP + 0x40,
            stack(&[(0x48, 0x1234_5678)]),
        ),
        // a function's first instruction is a function pointer, not a return address
        (
            "function pointer",
            SP + 0x40,
            stack(&[(0x48, BASE + at("creator"))]),
        ),
        // far above the stack pointer: the register holds something else
        ("far above", SP + (1 << 24), stack(&[])),
    ];
    for (what, bp, s) in cases {
        let mut u = unwinder(&so);
        let mut out = Vec::new();
        let t = u.unwind(7, UserRegs { ip, sp: SP, bp }, &s, &mut out);
        assert_eq!(t, Some(Truncation::NoUnwindInfo), "{what}: {out:x?}");
        assert_eq!(out, vec![ip], "{what}");
        assert!(!out.contains(&ra));
    }
}

#[test]
fn a_frame_pointer_past_the_copy_is_marked_as_the_copy_too_small() {
    let dir = tempfile::tempdir().unwrap();
    let (so, at) = build(dir.path());
    let mut u = unwinder(&so);
    let ip = BASE + at("bare") + 1;
    let mut out = Vec::new();
    let t = u.unwind(
        7,
        UserRegs {
            ip,
            sp: SP,
            bp: SP + 0x1000,
        },
        &stack(&[]),
        &mut out,
    );
    assert_eq!(t, Some(Truncation::StackCopyTooSmall), "{out:x?}");
}
