//! Limits and switches from the environment (read once, at process start).

/// Runtime configuration.
pub struct Config {
    /// Thread slots.
    pub max_threads: u32,
    /// Stack frames per thread.
    pub max_depth: u32,
    /// Path nodes per thread.
    pub max_paths: u32,
    /// Longest call path kept.
    pub max_path_len: u32,
    /// Hash index size (power of two >= 2 * max_paths).
    pub hash_size: u32,
    /// Overhead compensation on.
    pub compensate: bool,
    /// Use CLOCK_MONOTONIC even where an invariant TSC exists.
    pub force_mono: bool,
    /// The TSC's rate a recorder measured (`HOOD_TSC_HZ`), so that this process need not; 0
    /// when unset or not a CPU's rate.
    pub tsc_hz: u64,
    /// Runtime disabled (`HOOD_DISABLE=1`).
    pub disabled: bool,
    /// Trace mode (`HOOD_MODE=trace`, set by `hood trace record`).
    pub trace: bool,
    /// Trace events per thread buffer (`HOOD_TRACE_BUFFER`).
    pub trace_capacity: u64,
    /// When a buffer is full: `HOOD_TRACE_FULL=stop` (default), `wrap` (keep the newest) or
    /// `stream` (a ring a recorder drains while the program runs).
    pub trace_full: u32,
    /// Start with tracing off until `hood_trace_on()` (`HOOD_TRACE_START=off`).
    pub trace_start_off: bool,
    dir: [u8; 512],
    dir_len: usize,
    filter: [u8; 512],
    filter_len: usize,
}

fn env(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: `name` is NUL terminated by every caller; getenv returns a pointer into the
    // environment (or null), which lives for the process unless someone calls setenv.
    let p = unsafe { libc::getenv(name.as_ptr() as *const libc::c_char) };
    if p.is_null() {
        return None;
    }
    // SAFETY: getenv returned a NUL-terminated string.
    Some(unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes())
}

/// A whole number of decimal digits, saturating; `None` for anything else.
fn digits(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in v {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.saturating_mul(10).saturating_add((b - b'0') as u64);
    }
    Some(n)
}

fn env_u32(name: &[u8], default: u32, min: u32, max: u32) -> u32 {
    match env(name).map(digits) {
        Some(Some(n)) => n.clamp(min as u64, max as u64) as u32,
        _ => default,
    }
}

/// `HOOD_TSC_HZ`, set by `hood trace record` and `hood calls run`: the TSC's rate they
/// measured once. Anything that is not a CPU's rate (100 MHz – 10 GHz) is ignored, and this
/// process measures its own.
fn tsc_hz() -> u64 {
    match env(b"HOOD_TSC_HZ\0").and_then(digits) {
        Some(hz) if (100_000_000..=10_000_000_000).contains(&hz) => hz,
        _ => 0,
    }
}

/// `HOOD_CLOCK`: `monotonic` forces CLOCK_MONOTONIC; unset or `tsc` keeps the default. Any
/// other value is named on standard error once (hood itself refuses it before starting a
/// program; this is for programs run without hood), and the default is used.
fn clock_is_monotonic() -> bool {
    match env(b"HOOD_CLOCK\0") {
        None | Some(b"tsc") => false,
        Some(b"monotonic") => true,
        Some(other) => {
            let parts: [&[u8]; 3] = [
                b"hood-rt: HOOD_CLOCK=",
                other,
                b" is not understood: use tsc or monotonic; using tsc\n",
            ];
            for p in parts {
                // SAFETY: writing a valid buffer to fd 2; a failed write is ignored.
                let _ = unsafe { libc::write(2, p.as_ptr().cast(), p.len()) };
            }
            false
        }
    }
}

impl Config {
    /// Read `HOOD_*` variables (see docs/calls.md).
    pub fn from_env() -> Self {
        let max_paths = env_u32(b"HOOD_MAX_PATHS\0", 16384, 2, 1 << 24);
        let mut c = Config {
            max_threads: env_u32(b"HOOD_MAX_THREADS\0", 2048, 1, 65536),
            max_depth: env_u32(b"HOOD_MAX_DEPTH\0", 65536, 1, 1 << 20),
            max_paths,
            max_path_len: env_u32(b"HOOD_MAX_PATH_LEN\0", 256, 1, 1 << 20),
            hash_size: (max_paths as u64 * 2).next_power_of_two() as u32,
            compensate: env(b"HOOD_COMPENSATE\0") != Some(b"0"),
            force_mono: clock_is_monotonic(),
            tsc_hz: tsc_hz(),
            disabled: env(b"HOOD_DISABLE\0") == Some(b"1"),
            trace: env(b"HOOD_MODE\0") == Some(b"trace"),
            trace_capacity: env_u32(b"HOOD_TRACE_BUFFER\0", 1 << 23, 16, 1 << 30) as u64,
            trace_full: match env(b"HOOD_TRACE_FULL\0") {
                Some(b"wrap") => hood_abi::TRACE_FULL_WRAP,
                Some(b"stream") => hood_abi::TRACE_FULL_STREAM,
                _ => hood_abi::TRACE_FULL_STOP,
            },
            trace_start_off: env(b"HOOD_TRACE_START\0") == Some(b"off"),
            dir: [0; 512],
            dir_len: 0,
            filter: [0; 512],
            filter_len: 0,
        };
        if let Some(f) = env(b"HOOD_TRACE_FILTER\0") {
            let n = f.len().min(c.filter.len() - 1);
            c.filter[..n].copy_from_slice(&f[..n]);
            c.filter_len = n;
        }
        let dir = env(b"HOOD_SHM_DIR\0").unwrap_or(hood_abi::DEFAULT_SHM_DIR.as_bytes());
        let n = dir.len().min(c.dir.len());
        c.dir[..n].copy_from_slice(&dir[..n]);
        c.dir_len = n;
        c
    }

    /// Path of the filter table written by `hood trace record` (NUL terminated), if any.
    pub fn filter_path(&self) -> Option<&[u8]> {
        (self.filter_len > 0).then(|| &self.filter[..self.filter_len + 1])
    }

    /// Segment directory.
    pub fn dir(&self) -> &[u8] {
        &self.dir[..self.dir_len]
    }
}

#[cfg(test)]
mod tests {
    use super::digits;

    #[test]
    fn numbers_from_the_environment_are_digits_only() {
        assert_eq!(digits(b"2100000000"), Some(2_100_000_000));
        assert_eq!(digits(b"99999999999999999999999"), Some(u64::MAX));
        for bad in [&b""[..], b"-1", b"2.1e9", b" 5", b"0x10"] {
            assert_eq!(digits(bad), None, "{bad:?}");
        }
    }
}
