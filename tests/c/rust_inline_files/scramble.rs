// The macro of tests/c/rust_inline_files.rs, in a file of its own: its code carries the
// lines of this file wherever it is expanded.
macro_rules! scramble {
    ($x:ident, $k:expr) => {
        $x ^= $x >> 29; // MACRO-LINE
        $x = $x.wrapping_mul(0xbf58_476d_1ce4_e5b9 ^ $k);
        $x ^= $x >> 32;
    };
}
