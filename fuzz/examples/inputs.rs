//! Make the fuzz targets' starting inputs from files hood wrote: `inputs OUTDIR FILE...`.
//! Each hood-format file becomes a `container` input (large chunks left out, rewritten with
//! valid checksums), a framed `profile` or `trace` input, and, for call-path files, one `calls`
//! input per process table. Other files are copied to `perfdata/` (files written by `perf
//! record`), `segment/` (hood-rt segments, named `hood-rt-*`) or, prefixed with the selector
//! byte of their parser, to `procfs/`.

use std::path::{Path, PathBuf};

use hood_format::{tags, FileKind, Reader, Writer};

/// Payloads kept whole up to this size; record chunks are cut to it (a cut record is a case
/// the readers handle), other larger chunks (kernel symbols, the vDSO image) left out.
const KEEP: usize = 16 * 1024;

fn write(dir: &Path, sub: &str, name: &str, bytes: &[u8]) {
    let d = dir.join(sub);
    std::fs::create_dir_all(&d).expect("input directory");
    std::fs::write(d.join(name), bytes).expect("input file");
}

/// The /proc parser selector (see `hood_fuzz::procfs`) for a file named `name`.
fn proc_selector(name: &str) -> Option<u8> {
    Some(match name {
        "stat" => 0,
        "status" => 1,
        "io" => 2,
        "cmdline" => 3,
        "meminfo" => 4,
        "loadavg" => 5,
        "uptime" => 6,
        "proc_stat" => 7,
        "interrupts" | "softirqs" => 8,
        "cpuinfo" => 9,
        "passwd" => 10,
        "auxv" => 11,
        "maps" => 12,
        _ => return None,
    })
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let out = PathBuf::from(args.next().expect("usage: inputs OUTDIR FILE..."));
    for file in args.map(PathBuf::from) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&file).expect("input file");
        let Ok(mut r) = Reader::from_bytes(bytes.clone(), &name) else {
            if bytes.starts_with(b"PERFILE2") {
                write(&out, "perfdata", &name, &bytes);
            } else if name.starts_with(hood_abi::SEGMENT_PREFIX) {
                write(&out, "segment", &name, &bytes);
            } else if let Some(sel) = proc_selector(&name) {
                let mut b = vec![sel];
                b.extend_from_slice(&bytes[..bytes.len().min(KEEP)]);
                write(&out, "procfs", &name, &b);
            } else {
                eprintln!("inputs: {name}: neither a hood file nor a known /proc file; left out");
            }
            continue;
        };
        let kind = r.kind();
        let mut chunks = Vec::new();
        for c in r.chunks() {
            let c = c.expect("a whole file");
            if c.tag == tags::calls::PROCESS && kind == FileKind::Calls {
                write(&out, "calls", &format!("{name}-{}", chunks.len()), &c.data);
            }
            let mut data = c.data;
            let records = matches!(c.tag, tags::profile::PERF_RECORDS | tags::trace::EVENTS);
            if data.len() > KEEP {
                if !records {
                    continue;
                }
                data.truncate(KEEP);
            }
            chunks.push((c.tag, data));
        }
        let mut w = Writer::new(Vec::new(), Path::new(&name), kind).unwrap();
        for (tag, data) in &chunks {
            w.write_chunk(*tag, data, true).unwrap();
        }
        write(&out, "container", &name, &w.finish().unwrap());
        match kind {
            FileKind::Profile => write(&out, "profile", &name, &hood_fuzz::frame(&chunks)),
            FileKind::Trace => write(&out, "trace", &name, &hood_fuzz::frame(&chunks)),
            _ => {}
        }
    }
}
