//! Measures what streaming costs the reader: system-wide sampling for a few
//! seconds, every ring drained into a counting sink, then samples, lost
//! records and this process's own CPU time are printed.
//!
//! Usage: `cargo run --release -p hood-perf --example drain_cost -- [SECS] [HZ]`
//! (run a CPU-bound load on every CPU alongside to measure the busy case).

use std::time::{Duration, Instant};

use hood_perf::{SamplingConfig, Session, Target};

fn cpu_seconds() -> f64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `ru` is a valid rusage for getrusage to fill.
    let ru = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr());
        ru.assume_init()
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().map_or(Ok(10), |s| s.parse())?;
    let hz: u64 = args.next().map_or(Ok(4999), |s| s.parse())?;
    let cfg = SamplingConfig {
        freq_hz: hz,
        ..SamplingConfig::default()
    };
    let mut s = Session::open(&cfg, &Target::System)?;
    for n in s.notes() {
        eprintln!("note: {n}");
    }
    let (mut samples, mut lost, mut bytes, mut wakeups) = (0u64, 0u64, 0u64, 0u64);
    // Partial record carried between slices (a record can straddle the wrap).
    let mut carry: Vec<Vec<u8>> =
        vec![Vec::new(); s.cpus().iter().max().map_or(1, |m| *m as usize + 1)];
    let cpu0 = cpu_seconds();
    let end = Instant::now() + Duration::from_secs(secs);
    s.enable()?;
    while Instant::now() < end {
        s.wait(Duration::from_millis(200))?;
        wakeups += 1;
        bytes += s.drain(&mut |cpu, data| {
            let c = &mut carry[cpu as usize];
            c.extend_from_slice(data);
            let mut off = 0;
            while off + 8 <= c.len() {
                let size = u16::from_ne_bytes([c[off + 6], c[off + 7]]) as usize;
                if size < 8 || off + size > c.len() {
                    break;
                }
                match u32::from_ne_bytes([c[off], c[off + 1], c[off + 2], c[off + 3]]) {
                    9 => samples += 1,
                    2 => lost += u64::from_ne_bytes(c[off + 16..off + 24].try_into().unwrap()),
                    _ => {}
                }
                off += size;
            }
            c.drain(..off);
            Ok(())
        })? as u64;
    }
    s.disable()?;
    let cpu = cpu_seconds() - cpu0;
    println!(
        "{secs} s at {hz} Hz on {} CPUs: {samples} samples, {lost} lost, {:.1} MB, {wakeups} wakeups, reader CPU {cpu:.3} s",
        s.cpus().len(),
        bytes as f64 / 1e6
    );
    Ok(())
}
