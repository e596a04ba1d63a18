//! Known answer for `--probe` on a Rust program built the ordinary way (`rustc -O`, or cargo's
//! release profile: no hooks): main calls known::leaf 7 times, known::branch 5 times (each
//! calls leaf twice) and Counter::bump 3 times.

mod known {
    #[inline(never)]
    pub fn leaf(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_add(1)
    }

    #[inline(never)]
    pub fn branch(x: u64) -> u64 {
        leaf(x) ^ leaf(x + 1)
    }

    pub struct Counter {
        pub n: u64,
    }

    impl Counter {
        #[inline(never)]
        pub fn bump(&mut self, by: u64) -> u64 {
            self.n += std::hint::black_box(by);
            self.n
        }
    }
}

fn main() {
    let mut s = 0u64;
    for i in 0..7 {
        s = s.wrapping_add(known::leaf(i));
    }
    for i in 0..5 {
        s = s.wrapping_add(known::branch(i));
    }
    let mut c = known::Counter { n: 0 };
    for i in 0..3 {
        s = s.wrapping_add(c.bump(i));
    }
    println!("{s}");
}
