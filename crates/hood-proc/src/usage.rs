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

/// Whether the recorder runs with the effective user id of root.
pub fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn root_is_euid_zero() {
        assert_eq!(running_as_root(), rustix::process::geteuid().as_raw() == 0);
    }
}
