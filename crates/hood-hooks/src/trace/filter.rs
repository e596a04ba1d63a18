//! Turning `--filter/--exclude` globs into the address-range table hood-rt reads at start
//! (format in crates/hood-rt/src/filter.rs). Names are resolved here, once, from the symbol
//! tables of the executable and the libraries `ldd` lists (read by
//! [`hood_symbols::function_symbols`]); the runtime only compares
//! addresses. Functions in objects loaded later with dlopen are traced only when no
//! `--filter` was given (and no library `--exclude` names them: unknown to the table).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Simple glob: `*` any run, `?` any one character (the one `--probe` specs use too).
pub use hood_symbols::probe::glob;

fn is_lib_glob(g: &str) -> bool {
    g.contains('/') || g.contains(".so")
}

/// The globs of one recording.
pub struct Rules {
    /// `--filter` globs: a function is traced when one matches it or its library (all are,
    /// when there are none).
    pub filters: Vec<String>,
    /// `--exclude` globs: a function one matches, or whose library one matches, is not.
    pub excludes: Vec<String>,
}

impl Rules {
    fn lib_match(globs: &[String], obj: &str) -> bool {
        let base = obj.rsplit('/').next().unwrap_or(obj);
        globs
            .iter()
            .filter(|g| is_lib_glob(g))
            .any(|g| glob(g, obj) || glob(g, base))
    }
    fn name_match(globs: &[String], name: &str) -> bool {
        globs
            .iter()
            .filter(|g| !is_lib_glob(g))
            .any(|g| glob(g, name))
    }
    /// Verdict for function `name` in object `obj` (None = a function not in its symbols).
    fn verdict(&self, obj: &str, name: Option<&str>) -> bool {
        let inc = self.filters.is_empty()
            || Self::lib_match(&self.filters, obj)
            || name.is_some_and(|n| Self::name_match(&self.filters, n));
        let exc = Self::lib_match(&self.excludes, obj)
            || name.is_some_and(|n| Self::name_match(&self.excludes, n));
        inc && !exc
    }
}

/// Path of `prog` as execvp would find it.
pub fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        return Some(PathBuf::from(prog));
    }
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(prog))
            .find(|c| c.is_file())
    })
}

/// Libraries `ldd` lists for `exe` (empty when ldd is missing or the file is static).
fn libraries(exe: &Path) -> Vec<String> {
    let Ok(out) = Command::new("ldd").arg(exe).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let p = l.split("=>").nth(1).unwrap_or(l).trim();
            let p = p.split(" (").next()?.trim();
            p.starts_with('/').then(|| p.to_string())
        })
        .collect()
}

/// Build the table for `exe`; warnings name objects whose symbols could not be read.
pub fn build(rules: &Rules, exe: &Path, warnings: &mut Vec<String>) -> Vec<u8> {
    let mut objects: Vec<(String, PathBuf)> = vec![(String::new(), exe.to_path_buf())];
    for l in libraries(exe) {
        objects.push((l.clone(), PathBuf::from(l)));
    }
    let mut b = b"HOODFLT1".to_vec();
    b.extend_from_slice(&(rules.filters.is_empty() as u32).to_le_bytes());
    b.extend_from_slice(&(objects.len() as u32).to_le_bytes());
    // Whether anything known now will be traced at all.
    let mut any = false;
    for (key, path) in &objects {
        let obj = path.to_string_lossy();
        let default = rules.verdict(&obj, None);
        any |= default;
        let mut syms = match hood_symbols::function_symbols(path) {
            Ok(s) => s,
            Err(e) => {
                warnings.push(format!(
                    "--filter/--exclude: {e}; its functions follow the library rules only"
                ));
                Vec::new()
            }
        };
        syms.sort_by_key(|s| s.addr);
        syms.dedup_by_key(|s| s.addr);
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for (i, s) in syms.iter().enumerate() {
            if rules.verdict(&obj, Some(&s.name)) == default {
                continue;
            }
            any |= !default;
            let next = syms.get(i + 1).map_or(u64::MAX, |n| n.addr);
            let hi = if s.size > 0 {
                s.addr + s.size
            } else {
                s.addr + 1
            }
            .min(next);
            ranges.push((s.addr, hi.max(s.addr + 1)));
        }
        b.extend_from_slice(&(key.len() as u32).to_le_bytes());
        b.extend_from_slice(key.as_bytes());
        b.extend_from_slice(&(default as u32).to_le_bytes());
        b.extend_from_slice(&(ranges.len() as u32).to_le_bytes());
        for (lo, hi) in ranges {
            b.extend_from_slice(&lo.to_le_bytes());
            b.extend_from_slice(&hi.to_le_bytes());
        }
    }
    if !any && !rules.filters.is_empty() {
        warnings.push(format!(
            "--filter {} matches no function of {} or of the libraries it links (with --exclude applied): the trace will hold no function calls; check the names with `nm -C {}` (functions of libraries loaded later with dlopen are not traced when --filter is given)",
            rules.filters.join(" --filter "),
            exe.display(),
            exe.display()
        ));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match() {
        assert!(glob("leaf*", "leaf_a"));
        assert!(glob("*a?c", "xxabc"));
        assert!(!glob("leaf*", "main"));
        assert!(glob("*", ""));
        let r = Rules {
            filters: vec!["work*".into()],
            excludes: vec!["work_noisy".into(), "libm.so*".into()],
        };
        assert!(r.verdict("/x/prog", Some("work_a")));
        assert!(!r.verdict("/x/prog", Some("work_noisy")));
        assert!(!r.verdict("/x/prog", Some("main")));
        assert!(!r.verdict("/lib/libm.so.6", Some("work_b")));
    }

    #[test]
    fn the_table_covers_the_functions_a_filter_names() {
        let exe = std::env::current_exe().unwrap();
        let main = hood_symbols::function_symbols(&exe)
            .unwrap()
            .into_iter()
            .find(|s| s.name == "main")
            .unwrap();
        let rules = Rules {
            filters: vec!["main".into()],
            excludes: vec![],
        };
        let mut warnings = Vec::new();
        let b = build(&rules, &exe, &mut warnings);
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        assert_eq!(&b[..8], b"HOODFLT1");
        assert_eq!(u32_at(8), 0, "filters given");
        assert!(u32_at(12) >= 1, "objects");
        // The executable first: empty key, default verdict "not traced", then its ranges.
        assert_eq!((u32_at(16), u32_at(20)), (0, 0));
        let n = u32_at(24) as usize;
        let ranges: Vec<(u64, u64)> = (0..n)
            .map(|i| (u64_at(28 + 16 * i), u64_at(36 + 16 * i)))
            .collect();
        assert!(
            ranges
                .iter()
                .any(|&(lo, hi)| lo == main.addr && hi > lo && hi <= main.addr + main.size.max(1)),
            "{ranges:x?} lacks main at {:#x}",
            main.addr
        );
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
