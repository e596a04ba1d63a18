//! Build information for `hood --version`: the git commit the binary was built from and the
//! build date. Building outside a git checkout (a source tarball, a vendored copy) or without
//! git installed is fine: the commit is then "unknown commit".
//!
//! `SOURCE_DATE_EPOCH` (reproducible builds) fixes the date.
//!
//! It also builds the runtime library the binary carries (`libhood_rt.so`, preloaded by
//! `hood calls run` and `hood trace record`), so that `cargo install --path crates/hood` gives
//! a hood whose `calls` and `trace` work with nothing beside it: hood-rt is built by a cargo of
//! its own (release, stripped, into `TARGET_DIR/hood-rt-embed`, from the lock file's crates
//! already fetched for hood), and the binary includes its bytes. `HOOD_RT_SO=/path/to/
//! libhood_rt.so` takes a library built elsewhere instead (packagers).

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

/// Build hood-rt's shared library and copy it to `OUT_DIR/libhood_rt.so`.
fn embed_runtime() {
    println!("cargo:rerun-if-env-changed=HOOD_RT_SO");
    // Not run by cargo to build hood (a test runs the script by hand for the version lines,
    // with the test's own environment): nothing to do. Cargo always sets TARGET for a build
    // script, never for a test.
    let (Some(out_dir), Some(_)) = (
        std::env::var_os("OUT_DIR").map(PathBuf::from),
        std::env::var_os("TARGET"),
    ) else {
        return;
    };
    let out = out_dir.join("libhood_rt.so");
    if let Some(given) = std::env::var_os("HOOD_RT_SO") {
        println!("cargo:rerun-if-changed={}", PathBuf::from(&given).display());
        std::fs::copy(&given, &out)
            .unwrap_or_else(|e| panic!("HOOD_RT_SO={}: {e}", PathBuf::from(&given).display()));
        return;
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("manifest dir"));
    let ws = manifest.join("../..");
    if !ws.join("crates/hood-rt/Cargo.toml").is_file() {
        // The hood crate without its workspace: a binary that carries no runtime, and says
        // where to get one when `calls run` or `trace record` needs it.
        println!(
            "cargo:warning=crates/hood-rt is not beside crates/hood: this hood carries no \
             runtime library (hood calls/trace will need HOOD_RT_LIB or an installed one)"
        );
        std::fs::write(&out, b"").expect("writing OUT_DIR/libhood_rt.so");
        return;
    }
    for dir in ["crates/hood-rt", "crates/hood-abi", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", ws.join(dir).display());
    }
    // OUT_DIR is TARGET_DIR/[TRIPLE/]PROFILE/build/hood-HASH/out: the runtime gets a target
    // directory of its own beside the profiles (the outer cargo holds the lock of its own).
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .map_or_else(|| out_dir.join("rt"), |t| t.join("hood-rt-embed"));
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let build = |offline: bool| {
        let mut c = Command::new(&cargo);
        c.args([
            "build",
            "--release",
            "--lib",
            "-p",
            "hood-rt",
            "--manifest-path",
        ])
        .arg(ws.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        // A small library to carry: no debug info.
        .env("CARGO_PROFILE_RELEASE_DEBUG", "0")
        .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
        // What the outer cargo set for this build is not for the runtime's: its flags
        // (clippy's, coverage's) and its wrapper of workspace crates.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
        // Share the outer build's job slots (2 CPUs stay 2).
        if let Some(mf) = std::env::var_os("CARGO_MAKEFLAGS") {
            c.env("MAKEFLAGS", mf);
        }
        if offline {
            c.arg("--offline");
        }
        if !target.is_empty() && target != host {
            c.args(["--target", &target]);
        }
        c.status()
    };
    // The crates it needs (libc, hood-abi) are hood's own: offline first.
    let ok = build(true).is_ok_and(|s| s.success()) || build(false).is_ok_and(|s| s.success());
    assert!(
        ok,
        "building the runtime library hood carries (cargo build --release -p hood-rt) failed; \
         see the errors above, or give a built one with HOOD_RT_SO=/path/to/libhood_rt.so"
    );
    let mut built = target_dir.clone();
    if !target.is_empty() && target != host {
        built.push(&target);
    }
    built.push("release/libhood_rt.so");
    std::fs::copy(&built, &out).unwrap_or_else(|e| panic!("copying {}: {e}", built.display()));
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    embed_runtime();
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
