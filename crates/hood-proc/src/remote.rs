//! Another process's memory: faulting in, from the recorder, the pages of a file mapping the
//! process shares with it, so that the process's own first writes to them take no page fault.
//!
//! Reading one byte of each page with `process_vm_readv` makes the kernel fault the page in
//! *the target's* address space (allocating it; the mapping is shared and writable, so the
//! target's later writes find it mapped). Where the kernel refuses the remote read (another
//! user's set-user-ID program, ptrace restrictions), the pages are only allocated in the file
//! with `fallocate`, which still takes the allocation off the target.

use std::io;
use std::os::fd::AsFd;

use crate::ProcError;

/// Page size the faults are issued at.
pub const PAGE: u64 = 4096;
/// Pages faulted per system call (IOV_MAX).
const BATCH: usize = 1024;

/// What [`fault_pages`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FaultStats {
    /// Pages faulted into the target process.
    pub pages: u64,
    /// Pages only allocated in the file (`fallocate` fallback).
    pub allocated: u64,
}

/// Fault in the pages of file offsets `[from, to)` of `file`, which process `pid` maps
/// (shared, from offset 0) at address `base`; with no `base`, or when the kernel does not let
/// hood read that process, the pages are only allocated in the file. Returns the pages done
/// and adds them to `stats`.
///
/// An error means the mapping is no longer there to fault into: the process is gone
/// (`ESRCH`), or the range is unmapped (`EFAULT`: it exec'd or is exiting).
pub fn fault_pages(
    pid: i32,
    base: Option<u64>,
    file: impl AsFd,
    from: u64,
    to: u64,
    stats: &mut FaultStats,
) -> Result<u64, ProcError> {
    let pages = to.saturating_sub(from).div_ceil(PAGE);
    let Some(base) = base else {
        // A failed allocation costs the target nothing it would not pay anyway: not an error.
        let _ = crate::shm::allocate(&file, from, pages * PAGE);
        stats.allocated += pages;
        return Ok(pages);
    };
    let mut sink = [0u8; BATCH];
    let mut done = 0;
    while done < pages {
        let n = ((pages - done) as usize).min(BATCH);
        let addrs = (0..n as u64).map(|k| base + from + (done + k) * PAGE);
        let r = match touch(pid, addrs, &mut sink[..n]) {
            Ok(r) => r as u64,
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                // Not allowed to read that process: allocate only.
                return fault_pages(pid, None, file, from + done * PAGE, to, stats)
                    .map(|p| done + p);
            }
            Err(source) => {
                return Err(ProcError::Sys {
                    what: format!("process_vm_readv({pid})"),
                    source,
                })
            }
        };
        stats.pages += r;
        done += r;
        if r < n as u64 {
            return Err(ProcError::Sys {
                what: format!("process_vm_readv({pid})"),
                source: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{r} of {n} pages read: the mapping ends there"),
                ),
            });
        }
    }
    Ok(done)
}

/// Read one byte at each of `addrs` in process `pid` into `sink` (one byte per address;
/// `sink.len()` addresses at most): the bytes read.
fn touch(pid: i32, addrs: impl Iterator<Item = u64>, sink: &mut [u8]) -> io::Result<usize> {
    let remote: Vec<libc::iovec> = addrs
        .take(sink.len())
        .map(|a| libc::iovec {
            iov_base: a as *mut libc::c_void,
            iov_len: 1,
        })
        .collect();
    let local: Vec<libc::iovec> = sink[..remote.len()]
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: (b as *mut u8).cast(),
            iov_len: 1,
        })
        .collect();
    // SAFETY: `local` describes one-byte buffers inside `sink`, which is borrowed mutably for
    // the whole call and outlives it; the kernel writes at most one byte into each. The remote
    // addresses are only read by the kernel, in process `pid` (a bad one fails the call with
    // EFAULT or ends it short; it never touches our memory). Both vectors have `len()` entries.
    let r = unsafe {
        libc::process_vm_readv(
            pid,
            local.as_ptr(),
            local.len() as libc::c_ulong,
            remote.as_ptr(),
            remote.len() as libc::c_ulong,
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    /// Resident KiB of the mapping starting at `addr` in this process (/proc/self/smaps).
    fn rss_kib(addr: u64) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{addr:x}-");
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&head));
        lines.next().expect("mapping in smaps");
        lines
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    #[test]
    fn pages_are_faulted_into_the_target_or_only_allocated() {
        use std::os::unix::fs::MetadataExt;
        const LEN: usize = 1 << 20;
        let dir = std::path::Path::new("/dev/shm");
        let dir = if dir.is_dir() {
            dir.to_owned()
        } else {
            std::env::temp_dir()
        };
        for remote in [true, false] {
            let p = dir.join(format!("hood-prefault-{}-{remote}", std::process::id()));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&p)
                .unwrap();
            f.set_len(LEN as u64).unwrap();
            // SAFETY: a shared mapping of our own file (std has no mmap); unmapped below.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    LEN,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    f.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(addr, libc::MAP_FAILED);
            assert_eq!(rss_kib(addr as u64), 0);
            let mut stats = super::FaultStats::default();
            let base = remote.then_some(addr as u64);
            // Ourselves as the "traced process": the kernel path is the same.
            let n = super::fault_pages(
                std::process::id() as i32,
                base,
                &f,
                4096,
                LEN as u64,
                &mut stats,
            )
            .unwrap();
            assert_eq!(n, (LEN / 4096 - 1) as u64);
            let blocks = f.metadata().unwrap().blocks() * 512;
            let rss = rss_kib(addr as u64);
            // SAFETY: unmapping the mapping created above.
            unsafe { libc::munmap(addr, LEN) };
            std::fs::remove_file(&p).unwrap();
            assert_eq!(
                blocks,
                (LEN - 4096) as u64,
                "pages allocated (remote {remote})"
            );
            if remote {
                assert_eq!((stats.pages, rss), (n, (LEN as u64 - 4096) / 1024));
            } else {
                assert_eq!((stats.allocated, rss), (n, 0));
            }
        }
    }

    #[test]
    fn an_unmapped_range_ends_the_faulting() {
        let p = std::env::temp_dir().join(format!("hood-prefault-gone-{}", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        let mut stats = super::FaultStats::default();
        // Address 4096 is never mapped in a Linux process (mmap_min_addr).
        let e = super::fault_pages(
            std::process::id() as i32,
            Some(0),
            &f,
            4096,
            3 * 4096,
            &mut stats,
        )
        .unwrap_err();
        assert!(e.to_string().contains("process_vm_readv"), "{e}");
        assert_eq!(stats, super::FaultStats::default());
    }
}
