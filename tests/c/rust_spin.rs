// Known answer: the hot code is a generic Rust function, `rust_spin::spin`; its symbol carries
// a hash (legacy mangling `..4spin17h<16 hex digits>E`) that reports must not show.
// Usage: rust_spin MILLISECONDS
use std::hint::black_box;
use std::time::{Duration, Instant};

#[inline(never)]
fn spin<T: Copy + Into<u64>>(xs: &[T], rounds: u64) -> u64 {
    let mut acc = 0u64;
    for r in 0..rounds {
        for &x in xs {
            acc = acc.wrapping_mul(6364136223846793005).wrapping_add(x.into() ^ r);
        }
    }
    acc
}

fn main() {
    let ms: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let xs: Vec<u32> = (0..256).collect();
    let end = Instant::now() + Duration::from_millis(ms);
    let mut sink = 0u64;
    while Instant::now() < end {
        sink ^= spin(black_box(&xs), 100);
    }
    black_box(sink);
}
