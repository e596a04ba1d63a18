//! The hood-rt runtime library the recorders preload into the commands they start.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::HooksError;

/// Where libhood_rt.so is: `$HOOD_RT_LIB`, next to the hood binary, or ../lib/hood/.
pub fn library() -> Result<PathBuf, HooksError> {
    if let Some(p) = std::env::var_os("HOOD_RT_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(HooksError::Runtime(format!(
                "HOOD_RT_LIB={} does not name a file; point it at libhood_rt.so",
                p.display()
            )));
        }
        return Ok(p);
    }
    let exe = std::env::current_exe()
        .map_err(|e| HooksError::Runtime(format!("locating the hood executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    for cand in [
        dir.join("libhood_rt.so"),
        dir.join("../lib/hood/libhood_rt.so"),
        dir.join("deps/libhood_rt.so"),
    ] {
        if cand.is_file() {
            return Ok(cand);
        }
    }
    Err(HooksError::Runtime(format!(
        "cannot find libhood_rt.so next to {}: build it with `cargo build --release -p hood-rt` \
         (it lands next to the hood binary) or set HOOD_RT_LIB=/path/to/libhood_rt.so",
        exe.display()
    )))
}

/// The `LD_PRELOAD` value that loads `lib` first, then what the environment preloads already.
pub fn preload(lib: &Path) -> OsString {
    let mut s = lib.as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|o| !o.is_empty()) {
        s.push(":");
        s.push(old);
    }
    s
}
