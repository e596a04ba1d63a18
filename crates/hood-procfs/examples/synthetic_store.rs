//! Writes a monitor store of synthetic time for `bench/monitor/record.sh`: one real snapshot of
//! this system, then N intervals STEP seconds apart ending now, each process's CPU times and
//! the CPUs' advanced a little (some processes busy, most idle), through the recorder's own
//! `StoreWriter::append`.
//!
//! With `--no-index` it writes no per-process index, as hoods before it did (to time the
//! whole-snapshot path).
//!
//! usage: synthetic_store DIR INTERVALS STEP_SECS [--no-index]

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use hood_procfs::store::{record_scan, StoreLimits, StoreWriter};
use hood_procfs::ProcReader;

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let no_index = args.len() == 5 && args[4] == "--no-index";
    if no_index {
        args.pop();
    }
    if args.len() != 4 {
        eprintln!("usage: synthetic_store DIR INTERVALS STEP_SECS [--no-index]");
        std::process::exit(2);
    }
    let dir = PathBuf::from(&args[1]);
    let n: u64 = args[2].parse().expect("INTERVALS is a number");
    let step: u64 = args[3].parse().expect("STEP_SECS is a number");
    let mut base = ProcReader::new()
        .snapshot(&record_scan())
        .expect("reading /proc");
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64;
    let start_ms = now_ms - (n as i64) * step as i64 * 1000;
    let mut w = StoreWriter::create(&dir, StoreLimits::default()).expect("creating the store");
    if no_index {
        w = w.without_index();
    }
    let hz = base.clk_tck.max(1);
    let mut bytes = 0u64;
    for i in 0..n {
        base.taken_ns += step * 1_000_000_000;
        base.uptime_s += step as f64;
        for (k, t) in base.tasks.iter_mut().enumerate() {
            // One in ten processes busy (up to half a CPU), the rest idle.
            if (k as u64 + i / 60).is_multiple_of(10) {
                t.utime += (k as u64 * 7 + i) % (step * hz / 2 + 1);
                t.stime += i % 3;
            }
        }
        let busy = step * hz / 4;
        base.cpu_total.user += busy;
        base.cpu_total.idle += step * hz * base.cpus.len().max(1) as u64 - busy;
        base.wall_time_s = (start_ms / 1000) + (i * step) as i64;
        let a = w
            .append(&base, start_ms + (i * step * 1000) as i64)
            .expect("appending");
        bytes += a.bytes;
    }
    bytes += w.finish();
    println!(
        "{n} intervals, {bytes} bytes, {} processes",
        base.tasks.len()
    );
}
