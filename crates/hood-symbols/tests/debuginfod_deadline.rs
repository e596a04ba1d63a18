//! A debuginfod server that trickles its answer a byte at a time, each byte well within the
//! read timeout, must not keep a report waiting (issue 29, R9): the download ends at the
//! overall deadline (`DEBUGINFOD_MAXTIME`) with a warning naming it.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use common::compile;
use hood_symbols::{DebuginfodConfig, Symbolizer, SymbolizerOptions};

/// Far longer than the deadline the test sets; reaching it means hood hung.
const HUNG: Duration = Duration::from_secs(60);

#[test]
fn a_trickling_server_is_cut_off_at_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(
        dir.path(),
        "prog",
        "int main(void) { return 0; }\n",
        &["-g"],
    );
    common::binutils(&["strip".as_ref(), "--strip-debug".as_ref(), bin.as_os_str()]);

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            let mut head = [0u8; 4096];
            let _ = c.read(&mut head);
            let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
            // A byte every 100 ms, for at most 10 minutes, until hood hangs up.
            for _ in 0..6000 {
                if c.write_all(b"\x7f").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    });

    let cache = dir.path().join("cache");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = Symbolizer::new(SymbolizerOptions {
            debuginfod: Some(DebuginfodConfig {
                urls: vec![format!("http://127.0.0.1:{port}")],
                cache,
                timeout: Duration::from_secs(2),
                max_time: Duration::from_secs(3),
                max_size: 1 << 30,
                progress: None,
            }),
            ..SymbolizerOptions::default()
        })
        .expect("symbolizer");
        let _ = s.symbolize_file(&bin, None, &[0x1000]);
        let _ = tx.send(s.warnings().to_vec());
    });
    let warnings = rx
        .recv_timeout(HUNG)
        .expect("the report still waits on a trickling debuginfod server");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("debuginfod") && w.contains("DEBUGINFOD_MAXTIME")),
        "no warning naming the deadline: {warnings:?}"
    );
}
