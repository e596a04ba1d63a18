//! cgroup v2: each process's cgroup (`/proc/PID/cgroup`, the `0::` line) and, for the cgroups
//! that hold processes and their ancestors, CPU (`cpu.stat`), memory (`memory.current`), I/O
//! (`io.stat`) and pressure (`*.pressure`).
//!
//! The cgroup v2 hierarchy is found in `/proc/self/mountinfo` (`/sys/fs/cgroup`, or
//! `/sys/fs/cgroup/unified` on a hybrid system); files are opened below its held descriptor
//! with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so a path never leaves the hierarchy
//! or follows a link, and read up to 64 KiB each.

use std::os::fd::OwnedFd;

use hood_monitor::{CgroupRaw, PressureRaw};
use rustix::fs::{Mode, OFlags, ResolveFlags};

use crate::parse::parse_psi;

/// Bytes read of one cgroup file at most.
const MAX_FILE: usize = 64 << 10;
/// cgroups read per snapshot at most (bounded memory and time).
pub const MAX_CGROUPS: usize = 4096;

/// The cgroup v2 path of the `0::` line of a `/proc/PID/cgroup` text.
pub fn parse_proc_cgroup(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .filter(|p| p.starts_with('/'))
}

/// The mount point of the cgroup v2 hierarchy's root in a `mountinfo` text.
pub fn cgroup2_mount(mountinfo: &str) -> Option<String> {
    mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        if post.split_ascii_whitespace().next()? != "cgroup2" {
            return None;
        }
        let f: Vec<&str> = pre.split_ascii_whitespace().collect();
        (f.get(3) == Some(&"/")).then(|| f.get(4).map(|m| m.replace("\\040", " ")))?
    })
}

/// The held cgroup v2 root, and a read buffer.
#[derive(Debug)]
pub struct CgroupReader {
    root: OwnedFd,
    buf: Vec<u8>,
}

impl CgroupReader {
    /// Open the hierarchy mounted at `mount`.
    pub fn open(mount: &str) -> Option<CgroupReader> {
        let root = rustix::fs::open(
            mount,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .ok()?;
        Some(CgroupReader {
            root,
            buf: Vec::new(),
        })
    }

    /// The text of `file` in the cgroup `path` (`/` for the root), when readable.
    fn read(&mut self, path: &str, file: &str) -> Option<&str> {
        let rel = path.trim_start_matches('/');
        // The kernel's names: no `.`, `..` or empty components; refused if seen anyway.
        if rel.split('/').any(|c| c == "." || c == "..") || rel.contains("//") {
            return None;
        }
        let full = match rel.is_empty() {
            true => file.to_string(),
            false => format!("{rel}/{file}"),
        };
        let fd = rustix::fs::openat2(
            &self.root,
            full.as_str(),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        )
        .ok()?;
        self.buf.resize(MAX_FILE, 0);
        let mut len = 0;
        while len < MAX_FILE {
            match rustix::io::read(&fd, &mut self.buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return None,
            }
        }
        std::str::from_utf8(&self.buf[..len]).ok()
    }

    /// The counters of the cgroup `path`; `None` when it is gone or has no `cpu.stat`.
    pub fn read_cgroup(&mut self, path: &str) -> Option<CgroupRaw> {
        let mut c = CgroupRaw {
            path: path.to_string(),
            ..CgroupRaw::default()
        };
        let stat = self.read(path, "cpu.stat")?;
        for l in stat.lines() {
            let mut it = l.split_ascii_whitespace();
            let (Some(k), Some(v)) = (it.next(), it.next().and_then(|v| v.parse().ok())) else {
                continue;
            };
            match k {
                "usage_usec" => c.usage_us = v,
                "user_usec" => c.user_us = v,
                "system_usec" => c.system_us = v,
                _ => {}
            }
        }
        c.memory_bytes = self
            .read(path, "memory.current")
            .and_then(|t| t.trim().parse().ok());
        c.io_bytes = self.read(path, "io.stat").map(|t| {
            let mut rw = (0u64, 0u64);
            for kv in t.split_ascii_whitespace() {
                match kv.split_once('=') {
                    Some(("rbytes", v)) => rw.0 = rw.0.saturating_add(v.parse().unwrap_or(0)),
                    Some(("wbytes", v)) => rw.1 = rw.1.saturating_add(v.parse().unwrap_or(0)),
                    _ => {}
                }
            }
            rw
        });
        let mut pr = PressureRaw::default();
        for (file, slot) in [
            ("cpu.pressure", &mut pr.cpu),
            ("memory.pressure", &mut pr.memory),
            ("io.pressure", &mut pr.io),
        ] {
            *slot = self.read(path, file).map(parse_psi);
        }
        c.pressure = pr;
        Some(c)
    }

    /// The cgroups of `paths` and all their ancestors (up to [`MAX_CGROUPS`]), parents
    /// first.
    pub fn read_tree<'a>(&mut self, paths: impl IntoIterator<Item = &'a str>) -> Vec<CgroupRaw> {
        let mut all = std::collections::BTreeSet::new();
        for p in paths {
            let mut cur = p;
            while all.len() < MAX_CGROUPS && all.insert(cur.to_string()) {
                match cur.rfind('/') {
                    Some(0) if cur != "/" => cur = "/",
                    Some(i) if i > 0 => cur = &cur[..i],
                    _ => break,
                }
            }
        }
        all.iter().filter_map(|p| self.read_cgroup(p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_line_and_mount_are_found_and_others_ignored() {
        let t = "12:memory:/x\n0::/system.slice/cron.service\n";
        assert_eq!(parse_proc_cgroup(t), Some("/system.slice/cron.service"));
        assert_eq!(parse_proc_cgroup("3:cpu:/\n"), None);
        let mi = "36 25 0:31 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
                  40 25 0:35 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup2_mount(mi).as_deref(), Some("/sys/fs/cgroup/unified"));
        // A bind mount of a sub-tree is not the root.
        assert_eq!(
            cgroup2_mount("1 2 0:3 /sub /mnt rw - cgroup2 cgroup2 rw\n"),
            None
        );
    }
}
