//! The options every reading command (`report`, `annotate`, `calls report`, `trace report`)
//! spells the same way: `-i FILE` for the recording, `-p/--pid` for one process and `--tid`
//! for one thread (issue 30's one convention; docs/cli.md, "Conventions").

use std::path::{Path, PathBuf};

use clap::Args;

/// `-p/--pid PID` and `--tid TID`.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct Select {
    /// Only this process.
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pub pid: Option<u32>,
    /// Only this thread (a thread ID, as `hood ps -H` and `hood report --by thread` show).
    #[arg(long = "tid", value_name = "TID")]
    pub tid: Option<u32>,
}

impl Select {
    /// The options as typed, for a message: `--pid 12 --tid 13`.
    pub fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(p) = self.pid {
            w.push(format!("--pid {p}"));
        }
        if let Some(t) = self.tid {
            w.push(format!("--tid {t}"));
        }
        w
    }
}

/// The recording a reading command reads: `-i FILE`, or the same path given alone after
/// the options (the older spelling `hood calls report FILE`), or the command's default.
pub fn input(flag: &Option<PathBuf>, positional: &Option<PathBuf>, default: &str) -> PathBuf {
    flag.clone()
        .or_else(|| positional.clone())
        .unwrap_or_else(|| Path::new(default).to_path_buf())
}
