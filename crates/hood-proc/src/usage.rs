//! What the recorder and its commands cost, and who runs the recorder.

/// Whose CPU time [`cpu_seconds`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// This process (all its threads).
    SelfProcess,
    /// Its children that have ended and been waited for (and theirs).
    Children,
}

/// User + system CPU seconds of this process or its waited-for children (`getrusage`); 0 if
/// the kernel does not answer.
pub fn cpu_seconds(whose: Whose) -> f64 {
    let who = match whose {
        Whose::SelfProcess => libc::RUSAGE_SELF,
        Whose::Children => libc::RUSAGE_CHILDREN,
    };
    // SAFETY: all-zero is a valid rusage (plain integers); getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage and `who` one of the two values getrusage takes.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0.0;
    }
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(ru.ru_utime) + s(ru.ru_stime)
}

/// The peak resident size of this program in bytes since it was executed: `VmHWM` of
/// /proc/self/status, the high-water mark of this process's own address space. Not
/// `getrusage`'s `ru_maxrss`: exec keeps the high-water mark of the address space it replaces
/// in `ru_maxrss`, which is the launcher's peak when it started hood with vfork or
/// posix_spawn (a 300 MB IDE or test binary would put hood at 300 MB before it read a
/// byte), or its size at fork otherwise. `ru_maxrss` only where /proc is not mounted; 0 if
/// the kernel answers neither.
pub fn peak_resident_bytes() -> u64 {
    own_peak_kib()
        .unwrap_or_else(ru_maxrss_kib)
        .saturating_mul(1024)
}

/// `VmHWM` (KiB) of /proc/self/status, read through a bounded buffer.
fn own_peak_kib() -> Option<u64> {
    use std::io::Read;
    // The file is about 1.5 KiB; 16 KiB holds it with room to spare.
    let mut text = Vec::with_capacity(4096);
    std::fs::File::open("/proc/self/status")
        .ok()?
        .take(16 * 1024)
        .read_to_end(&mut text)
        .ok()?;
    vm_hwm_kib(&text)
}

/// The `VmHWM:  N kB` line of a status text.
fn vm_hwm_kib(status: &[u8]) -> Option<u64> {
    status.split(|&b| b == b'\n').find_map(|line| {
        let rest = line.strip_prefix(b"VmHWM:")?;
        let rest = std::str::from_utf8(rest).ok()?;
        let mut words = rest.split_ascii_whitespace();
        let n = words.next()?.parse().ok()?;
        (words.next() == Some("kB")).then_some(n)
    })
}

/// `ru_maxrss` of this process (KiB; it includes what exec inherited); 0 if unknown.
fn ru_maxrss_kib() -> u64 {
    // SAFETY: all-zero is a valid rusage (plain integers); getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage and RUSAGE_SELF a value getrusage takes.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    u64::try_from(ru.ru_maxrss).unwrap_or(0)
}

/// The machine's physical memory in bytes (`sysconf`); 0 if unknown.
pub fn physical_memory_bytes() -> u64 {
    // SAFETY: sysconf only reads system configuration; these names are valid on Linux.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    match (u64::try_from(pages), u64::try_from(size)) {
        (Ok(p), Ok(s)) => p.saturating_mul(s),
        _ => 0,
    }
}

/// Whether the recorder runs with the effective user id of root.
pub fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The nice value a recorder's thread takes while it records, where it may (root, or
/// CAP_SYS_NICE): with 64 busy threads on 2 CPUs, a recorder at nice 0 gets 1/65 of the CPUs'
/// time and its rings overflow (31-41 % of samples lost, measured by
/// bench/unwind/threads.sh); at -10 it gets its turn and loses none.
pub const RECORDER_NICE: i32 = -10;

/// The calling thread's scheduling priority, raised to [`RECORDER_NICE`] by
/// [`raise_recorder_priority`] and put back when dropped (a recorder that runs inside a
/// long-lived thread, `hood serve`'s, leaves it as it found it).
#[derive(Debug)]
pub struct RaisedPriority {
    old: Option<i32>,
}

impl RaisedPriority {
    /// Whether the priority was raised.
    pub fn raised(&self) -> bool {
        self.old.is_some()
    }
}

impl Drop for RaisedPriority {
    fn drop(&mut self) {
        if let Some(old) = self.old {
            // Lowering one's own priority is always allowed.
            let _ = rustix::process::setpriority_process(None, old);
        }
    }
}

/// Raise the calling thread's priority (Linux's nice, which is per thread: processes forked
/// before are not affected, threads it starts later inherit it) to [`RECORDER_NICE`], if it is
/// lower and the process may; otherwise leave it.
pub fn raise_recorder_priority() -> RaisedPriority {
    let old = rustix::process::getpriority_process(None)
        .ok()
        .filter(|&n| n > RECORDER_NICE)
        .filter(|_| rustix::process::setpriority_process(None, RECORDER_NICE).is_ok());
    RaisedPriority { old }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorder_priority_is_raised_where_allowed_and_put_back() {
        // A thread of its own, so the test runner's threads keep theirs.
        std::thread::spawn(|| {
            let before = rustix::process::getpriority_process(None).unwrap();
            {
                let p = raise_recorder_priority();
                let now = rustix::process::getpriority_process(None).unwrap();
                if p.raised() {
                    assert_eq!(now, RECORDER_NICE);
                } else {
                    assert_eq!(now, before, "not raised, not changed");
                    assert!(before <= RECORDER_NICE || !running_as_root());
                }
            }
            assert_eq!(rustix::process::getpriority_process(None).unwrap(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn own_cpu_time_grows_with_work() {
        // Spin until the kernel has charged 50 ms more (however loaded the machine is); a
        // getrusage that does not count would spin until the limit.
        let a = cpu_seconds(Whose::SelfProcess);
        let limit = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut x = 0u64;
        while cpu_seconds(Whose::SelfProcess) < a + 0.05 {
            assert!(std::time::Instant::now() < limit, "CPU time stuck at {a}");
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
    }

    #[test]
    fn children_time_counts_a_waited_child() {
        let before = cpu_seconds(Whose::Children);
        let mut c = crate::child::Child::spawn(
            &[
                "sh",
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
            ],
            &[],
        )
        .unwrap();
        assert!(c.wait().unwrap().success());
        assert!(cpu_seconds(Whose::Children) > before);
    }

    #[test]
    fn the_status_line_is_read_and_anything_else_refused() {
        assert_eq!(
            vm_hwm_kib(b"Name:\tx\nVmPeak:\t 9 kB\nVmHWM:\t    1128 kB\n"),
            Some(1128)
        );
        assert_eq!(vm_hwm_kib(b"VmHWM:\t1 kB"), Some(1));
        for bad in [
            &b""[..],
            b"VmHWM:\n",
            b"VmHWM: 12 MB\n",
            b"VmHWM: -1 kB\n",
            b"VmHWM: 99999999999999999999999 kB\n",
            b"VmHWM: \xff kB\n",
            b"XVmHWM: 5 kB\n",
        ] {
            assert_eq!(vm_hwm_kib(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_peak_grows_with_what_this_program_touches() {
        // (That it leaves out the launcher's peak: report_memory's memory cap test.)
        let before = peak_resident_bytes();
        let mut big = vec![0u8; 64 << 20];
        for i in (0..big.len()).step_by(4096) {
            big[i] = 1;
        }
        std::hint::black_box(&big);
        assert!(peak_resident_bytes() >= before.max(64 << 20), "{before}");
    }

    #[test]
    fn root_is_euid_zero() {
        assert_eq!(running_as_root(), rustix::process::geteuid().as_raw() == 0);
    }
}
