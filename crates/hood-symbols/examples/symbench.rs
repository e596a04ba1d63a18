//! Measures symbolization throughput on this machine: ~20k unique file
//! offsets inside functions of ~30 system shared libraries plus 10k kernel
//! addresses from /proc/kallsyms, the batch shape a `hood report` of a
//! system-wide recording produces. Prints figures; asserts nothing.
//!
//! Run: `cargo run --release -p hood-symbols --example symbench`

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Instant;

use blazesym::inspect::{self, Inspector};
use blazesym::SymType;
use hood_symbols::{read_build_id, Symbolizer, SymbolizerOptions};

const FILES: usize = 30;
const USER_OFFSETS: usize = 20_000;
const KERNEL_ADDRS: usize = 10_000;

/// A tiny deterministic generator (xorshift), so runs are comparable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Function symbols of one ELF file as (file offset, size).
fn functions(inspector: &Inspector, path: &PathBuf) -> Vec<(u64, u64)> {
    let mut src = inspect::source::Elf::new(path);
    src.debug_syms = false;
    let mut out = Vec::new();
    let _ = inspector.for_each(&inspect::source::Source::Elf(src), |s| {
        if let (SymType::Function, Some(off), Some(size)) = (s.sym_type, s.file_offset, s.size) {
            if size > 0 {
                out.push((off, size as u64));
            }
        }
        ControlFlow::Continue(())
    });
    out
}

fn main() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let inspector = Inspector::new();
    let mut libs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/x86_64-linux-gnu")
        .expect("read /usr/lib/x86_64-linux-gnu")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().contains(".so"))
        // Many names are symlinks to one library: keep each file once.
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    libs.sort();
    libs.dedup();
    let mut files = Vec::new();
    for lib in libs {
        let funcs = functions(&inspector, &lib);
        if funcs.len() >= 200 {
            files.push((lib, funcs));
        }
        if files.len() == FILES {
            break;
        }
    }
    if std::env::var_os("SYMBENCH_LIST").is_some() {
        for (path, funcs) in &files {
            println!("{} ({} functions)", path.display(), funcs.len());
        }
    }
    let per_file = USER_OFFSETS / files.len().max(1);
    let mut batches = Vec::new();
    for (path, funcs) in &files {
        let mut offs: Vec<u64> = (0..per_file)
            .map(|_| {
                let (off, size) = funcs[(rng.next() as usize) % funcs.len()];
                off + rng.next() % size
            })
            .collect();
        offs.sort_unstable();
        offs.dedup();
        batches.push((path.clone(), offs));
    }
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    let ktext: Vec<u64> = kallsyms
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let a = u64::from_str_radix(f.next()?, 16).ok()?;
            matches!(f.next()?, "t" | "T").then_some(a)
        })
        .collect();
    let mut kaddrs: Vec<u64> = (0..KERNEL_ADDRS)
        .filter(|_| !ktext.is_empty())
        .map(|_| ktext[(rng.next() as usize) % ktext.len()] + rng.next() % 16)
        .collect();
    kaddrs.sort_unstable();
    kaddrs.dedup();
    let ids: Vec<Option<hood_symbols::BuildId>> = batches
        .iter()
        .map(|(p, _)| read_build_id(p).ok().flatten())
        .collect();

    // Each round starts from a fresh Symbolizer (cold caches); the minimum
    // over rounds is reported, as other work on the machine only adds time.
    let rounds: u32 = std::env::var("SYMBENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let opts = SymbolizerOptions {
        demangle: std::env::var_os("SYMBENCH_NO_DEMANGLE").is_none(),
        ..SymbolizerOptions::default()
    };
    let mut best = [f64::INFINITY; 5];
    let mut s = Symbolizer::new(opts.clone()).expect("symbolizer");
    let (mut kok, mut uok, mut uoffs, mut n_ksyms) = (0, 0, 0, 0);
    for _ in 0..rounds.max(1) {
        let t0 = Instant::now();
        s = Symbolizer::new(opts.clone()).expect("symbolizer");
        n_ksyms = s.set_kallsyms(&kallsyms);
        let t_kallsyms = t0.elapsed();
        let t1 = Instant::now();
        let kres = s.symbolize_kernel(&kaddrs);
        let t_kernel = t1.elapsed();
        let t2 = Instant::now();
        (uoffs, uok) = (0, 0);
        for ((path, offs), id) in batches.iter().zip(&ids) {
            let res = s.symbolize_file(path, id.as_ref(), offs);
            uoffs += offs.len();
            uok += res.iter().filter(|r| r.is_ok()).count();
        }
        let t_user = t2.elapsed();
        let total = t0.elapsed();
        let t3 = Instant::now();
        for ((path, offs), id) in batches.iter().zip(&ids) {
            let _ = s.symbolize_file(path, id.as_ref(), offs);
        }
        let t_warm = t3.elapsed();
        kok = kres.iter().filter(|r| r.is_ok()).count();
        for (b, t) in best
            .iter_mut()
            .zip([t_kallsyms, t_kernel, t_user, total, t_warm])
        {
            *b = b.min(ms(t));
        }
    }
    let [b_kallsyms, b_kernel, b_user, b_total, b_warm] = best;
    println!("best of {rounds} rounds, each with a fresh symbolizer:");
    println!("kallsyms: {n_ksyms} text symbols parsed in {b_kallsyms:.1} ms");
    println!(
        "kernel:   {kok}/{} unique addresses resolved in {b_kernel:.1} ms",
        kaddrs.len()
    );
    println!(
        "user:     {uok}/{uoffs} unique offsets in {} files resolved in {b_user:.1} ms \
         (again on the warm symbolizer: {b_warm:.1} ms)",
        batches.len()
    );
    println!("total (new + kallsyms + kernel + user): {b_total:.1} ms");
    for w in s.warnings() {
        println!("warning: {w}");
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
