//! `hood annotate` run by root shows a source file only when the sampled binary's owner could
//! read it (issue 29, R7): a user's binary whose DWARF names a root-only file (as
//! `/etc/shadow`) must not make root print that file line by line.

use crate::common;

use std::path::Path;

use common::*;

const SECRET: &str = "ROOT-ONLY-SECRET-LINE";

/// A program whose `spin` is said by its DWARF to be written in `source` (`#line`).
fn build(dir: &Path, source: &Path) -> std::path::PathBuf {
    let src = dir.join("user.c");
    std::fs::write(
        &src,
        format!(
            r#"#include <stdlib.h>
#include <time.h>
static double now(void) {{
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9;
}}
#line 1 "{}"
__attribute__((noinline)) unsigned long spin(double secs) {{
    volatile unsigned long x = 0;
    double end = now() + secs;
    while (now() < end) for (int i = 0; i < 100000; i++) x += i;
    return x;
}}
int main(int argc, char **argv) {{ return (int)(spin(argc > 1 ? atof(argv[1]) : 0.5) & 1); }}
"#,
            source.display()
        ),
    )
    .unwrap();
    let prog = dir.join("user-prog");
    let st = common::command("gcc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .expect("gcc");
    assert!(st.success());
    prog
}

#[test]
fn a_users_binary_cannot_make_root_print_a_root_only_file() {
    if !root("a_users_binary_cannot_make_root_print_a_root_only_file")
        || !privileged("a_users_binary_cannot_make_root_print_a_root_only_file")
    {
        return;
    }
    let _g = exclusive();
    let tmp = sticky_dir();
    let secret = root_only_file(tmp.path(), format!("{SECRET}\n").repeat(40).as_bytes());
    let prog = build(tmp.path(), &secret);
    let data = tmp.path().join("user.hood");
    let out = record(&data, &["--", prog.to_str().unwrap(), "0.5"]);
    assert!(out.status.success(), "{}", text(&out));
    let annotate = || run(hood().args(["annotate", "spin", "-i"]).arg(&data));

    // Root's own binary: its sources are root's to show.
    let out = annotate();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(SECRET),
        "root's binary's source is not shown:\n{}",
        text(&out)
    );

    // The same binary owned by another user: the root-only file is not shown, and the
    // report says why.
    let (uid, gid) = other_user();
    std::os::unix::fs::chown(&prog, Some(uid), Some(gid)).unwrap();
    let out = annotate();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains(SECRET),
        "root printed a root-only file for a user's binary:\n{stdout}"
    );
    assert!(
        stdout.contains("source not shown") && stdout.contains(&format!("uid {uid}")),
        "no word on why the source is not shown:\n{stdout}"
    );
}
