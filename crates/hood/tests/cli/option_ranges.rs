//! Number options out of range (issue 29, R10): `record -d 1e30` and `top -d nan` panicked
//! (exit 101) in the code that used the value. Each is a usage error now: exit 2, a message
//! naming the option and its range, before anything runs.

use crate::common;

use common::*;

#[test]
fn out_of_range_numbers_are_usage_errors() {
    for (args, bad, range) in [
        (
            &["record", "-d", "1e30", "--", "true"][..],
            "1e30",
            "31536000",
        ),
        (
            &["record", "-d", "nan", "--", "true"][..],
            "nan",
            "31536000",
        ),
        (&["record", "-d=-1", "--", "true"][..], "-1", "31536000"),
        (&["top", "-b", "-d", "nan"][..], "nan", "3600"),
        (&["top", "-b", "-d", "inf"][..], "inf", "3600"),
        (&["ps", "--interval", "1e30"][..], "1e30", "3600"),
        (&["info", "--interval", "NaN"][..], "NaN", "3600"),
        (&["report", "--min-percent", "nan"][..], "nan", "100"),
        (
            &[
                "record",
                "--off-cpu",
                "--off-cpu-rate",
                "5000000",
                "--",
                "true",
            ][..],
            "5000000",
            "1000000",
        ),
    ] {
        let out = run(hood().args(args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}:\n{}", text(&out));
        assert!(err.contains(bad) && err.contains(range), "{args:?}: {err}");
    }
}
