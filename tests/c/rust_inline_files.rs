// Known answer for source files of inlined code (issue 24): `mix` is inlined into
// `outer_loop` (#[inline(always)]), and part of its body is the `scramble!` macro, defined in
// another file (rust_inline_files/scramble.rs). rustc gives the macro's code the lines of its
// definition, so the code of one inlined function lies in two source files: the lines of
// `mix` at a sampled address are in this file (MIX-LINE) or in scramble.rs (MACRO-LINE),
// each as `addr2line -i` says, and pprof must name each line's own file.
// Usage: rust_inline_files ROUNDS
use std::hint::black_box;

#[path = "rust_inline_files/scramble.rs"]
#[macro_use]
mod scramble;

#[inline(always)]
fn mix(mut x: u64, k: u64) -> u64 {
    for r in 0..64u64 {
        x = x.rotate_left(7) ^ (r + k); // MIX-LINE
        scramble!(x, k);
    }
    x
}

#[inline(never)]
fn outer_loop(n: u64) -> u64 {
    let mut acc = 1u64;
    for i in 0..n {
        acc = acc.wrapping_add(mix(black_box(acc ^ i), i & 7)); // CALL-LINE
    }
    acc
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    black_box(outer_loop(n));
}
