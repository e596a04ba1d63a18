//! hood's own lines on standard error and standard output, written so that a closed or broken
//! stream (`hood calls run -- prog 2>&1 | true`, a terminal that went away) never stops hood:
//! `eprintln!`/`println!` panic when the write fails, and a recorder that panics leaves no
//! file and its program unrecorded. A line that cannot be written is dropped; the work goes
//! on, and the exit status is the work's.

/// One line on standard error, like `eprintln!`, dropped if standard error cannot take it.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// One line on standard output, like `println!`, dropped if standard output cannot take it.
/// Only for messages about what hood did (`hood start`, `hood stop`); reports and data are
/// written with their errors checked.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}
