//! Build information for `hood --version`: the git commit the binary was built from and the
//! build date. Building outside a git checkout (a source tarball, a vendored copy) or without
//! git installed is fine: the commit is then "unknown commit".
//!
//! `SOURCE_DATE_EPOCH` (reproducible builds) fixes the date.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(std::env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's civil_from_days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");

    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(c) => {
            // Rebuild the version when HEAD moves: HEAD itself (a branch switch), the branch's
            // ref (a commit) and packed-refs. Paths come from git, so worktrees work too.
            let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch.push(r);
            }
            for w in watch {
                if let Some(p) = git(&["rev-parse", "--git-path", &w]) {
                    let p = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap()).join(p);
                    if p.exists() {
                        println!("cargo:rerun-if-changed={}", p.display());
                    }
                }
            }
            format!("commit {c}")
        }
        None => "unknown commit".to_string(),
    };
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        });
    let (y, m, d) = civil(secs.div_euclid(86_400));
    println!("cargo:rustc-env=BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=BUILD_DATE={y:04}-{m:02}-{d:02}");
}
