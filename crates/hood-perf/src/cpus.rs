//! Online CPUs and the threads of a process, as the kernel lists them.

use std::io;
use std::path::Path;

use crate::PerfError;

/// Parses a kernel CPU list such as `0-1,4,6-7` into CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let lo: u32 = lo
            .trim()
            .parse()
            .map_err(|_| format!("bad CPU number in {part:?}"))?;
        let hi: u32 = hi
            .trim()
            .parse()
            .map_err(|_| format!("bad CPU number in {part:?}"))?;
        if hi < lo {
            return Err(format!("bad CPU range {part:?}"));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The online CPUs, from /sys/devices/system/cpu/online.
pub fn online_cpus() -> Result<Vec<u32>, PerfError> {
    let path = Path::new("/sys/devices/system/cpu/online");
    let text = std::fs::read_to_string(path).map_err(|source| PerfError::File {
        path: path.into(),
        source,
    })?;
    let cpus = parse_cpu_list(&text).map_err(|msg| PerfError::File {
        path: path.into(),
        source: io::Error::new(io::ErrorKind::InvalidData, msg),
    })?;
    if cpus.is_empty() {
        return Err(PerfError::File {
            path: path.into(),
            source: io::Error::new(io::ErrorKind::InvalidData, "no online CPU listed"),
        });
    }
    Ok(cpus)
}

/// The thread ids of process `pid`, from /proc/PID/task (sorted).
pub fn threads_of(pid: i32) -> Result<Vec<i32>, PerfError> {
    if pid <= 0 {
        return Err(PerfError::NoSuchProcess(pid));
    }
    let dir = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&dir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => PerfError::NoSuchProcess(pid),
        _ => PerfError::File {
            path: dir.clone().into(),
            source: e,
        },
    })?;
    let mut tids: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    if tids.is_empty() {
        return Err(PerfError::NoSuchProcess(pid));
    }
    Ok(tids)
}

#[cfg(test)]
mod tests {
    use super::parse_cpu_list;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1,4\n").unwrap(), vec![0, 1, 4]);
        assert_eq!(parse_cpu_list("3").unwrap(), vec![3]);
        assert_eq!(parse_cpu_list("0-2,6-7").unwrap(), vec![0, 1, 2, 6, 7]);
        assert!(parse_cpu_list("2-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("").unwrap().is_empty());
    }
}
