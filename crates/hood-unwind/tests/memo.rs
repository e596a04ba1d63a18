//! A walk is remembered by the process's mappings, the registers and every stack word it
//! read: the same stack is recalled, not walked again; a change in any word it read, or in
//! the mappings, walks again. Built on the same assembled library as `thread_roots`.

mod common;

use common::{build, unwinder, BASE, SP};
use hood_unwind::{Unwinder, UserRegs};

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
