// Rust release build (default profile: no frame pointers), BTreeMap-heavy. run.sh generates a
// Cargo project around this file in a temp dir. Usage: btree UNITS
use std::collections::BTreeMap;

#[inline(never)]
fn fill(m: &mut BTreeMap<u64, u64>, n: u64, seed: u64) {
    for i in 0..n {
        *m.entry((seed + i).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40).or_insert(0) += i;
    }
}

#[inline(never)]
fn probe(m: &BTreeMap<u64, u64>, n: u64, seed: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        let k = (seed * 7 + i).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
        if let Some(v) = m.get(&k) {
            acc = acc.wrapping_add(*v);
        }
        acc = acc.wrapping_add(m.range(k..).next().map_or(0, |(_, v)| *v));
    }
    acc
}

#[inline(never)]
fn round(seed: u64) -> u64 {
    let mut m = BTreeMap::new();
    fill(&mut m, 50_000, seed);
    let r = probe(&m, 50_000, seed);
    m.retain(|k, _| k % 3 != 0);
    r.wrapping_add(m.len() as u64)
}

fn main() {
    let units: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut acc = 0u64;
    for u in 0..units * 4 {
        acc = acc.wrapping_add(round(u));
    }
    println!("{acc}");
}
