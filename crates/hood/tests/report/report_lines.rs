//! `hood report --by line` at a terminal's width: a row's `file:line` is cut from the left, so
//! the file name and the line that tell rows apart stay; the long function name beside it is
//! what the width cuts.

use crate::common;

use common::*;

const SOURCE: &str = r#"#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
__attribute__((noinline)) void a_function_with_a_name_long_enough_to_push_the_line_column_off_the_screen(void) {
    for (int i = 0; i < 100000; i++) sink += i;
    for (int i = 0; i < 100000; i++) sink ^= i;
}
int main(int c, char **v) {
    double e = now() + (c > 1 ? atof(v[1]) : 800) / 1000.0;
    while (now() < e) a_function_with_a_name_long_enough_to_push_the_line_column_off_the_screen();
    return 0;
}
"#;

#[test]
fn line_rows_keep_file_and_line_at_narrow_widths() {
    if !privileged("line_rows_width") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let src_dir = dir.path().join("a/deep/source/directory");
    std::fs::create_dir_all(&src_dir).unwrap();
    let src = src_dir.join("a_rather_long_source_file_name.c");
    std::fs::write(&src, SOURCE).unwrap();
    let prog = dir.path().join("longlines");
    let st = common::command("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .expect("gcc must be installed to build the test workload");
    assert!(st.success());
    let file = dir.path().join("ll.hood");
    let out = record(&file, &["--", prog.to_str().unwrap(), "800"]);
    assert!(out.status.success(), "{}", text(&out));
    for width in ["80", "120"] {
        let out = run(hood()
            .args(["report", "--by", "line", "--width", width, "-i"])
            .arg(&file));
        assert!(out.status.success(), "{}", text(&out));
        let report = String::from_utf8_lossy(&out.stdout);
        // Rows of the loop lines (6 and 7): "NN.N%  ***  …name.c:6  COUNT  function…".
        let places: Vec<&str> = report
            .lines()
            .filter(|l| l.contains(" a_func"))
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        assert!(places.len() >= 2, "width {width}:\n{report}");
        for p in &places {
            let (name, line) = p.rsplit_once(':').unwrap_or_else(|| panic!("{p}"));
            assert!(
                name.ends_with("_source_file_name.c") && line.parse::<u32>().is_ok(),
                "width {width}: {p:?} lost its file name or line:\n{report}"
            );
        }
        let mut distinct = places.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), places.len(), "width {width}:\n{report}");
    }
}
