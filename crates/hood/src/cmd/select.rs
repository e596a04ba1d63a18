//! The options every reading command (`report`, `annotate`, `calls report`, `trace report`)
//! spells the same way: `-i FILE` for the recording, `-p/--pid` for one process and `--tid`
//! for one thread (issue 30's one convention; docs/cli.md, "Conventions"). Also the options
//! several commands share, each defined once: the list of processes `-p/--pid PID,...` of the
//! recorders and `hood top` ([`Pids`]), and the samples a profile report or diff counts
//! ([`SampleFilter`]).

use std::path::{Path, PathBuf};

use clap::builder::{TypedValueParser, ValueParserFactory};
use clap::Args;
use hood_model::profile::aggregate::Measure;
use hood_model::profile::Mode;

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

/// `-p/--pid PID,...`: processes by ID, comma-separated (the option repeats). Each command
/// sets the help line and what the option needs or excludes (`mut_arg("pid", ...)`), and
/// the number type: `hood record` reads `i32` and names a pid ≤ 0 itself.
#[derive(Debug, Clone, Default, Args)]
pub struct Pids<T>
where
    T: ValueParserFactory + Clone + Send + Sync + 'static,
    T::Parser: TypedValueParser<Value = T>,
{
    #[arg(short = 'p', long = "pid", value_delimiter = ',')]
    pub pid: Vec<T>,
}

/// The recording a reading command reads: `-i FILE`, or the same path given alone after
/// the options (the older spelling `hood calls report FILE`). Each command names its
/// writer and default file in the help line it sets on `input` (`mut_arg`).
#[derive(Debug, Clone, Default, Args)]
pub struct InputFile {
    #[arg(
        short = 'i',
        long = "input",
        value_name = "FILE",
        conflicts_with = "file"
    )]
    pub input: Option<PathBuf>,
    /// The same file named after the options.
    #[arg(value_name = "FILE", hide = true)]
    pub file: Option<PathBuf>,
}

impl InputFile {
    /// The path given, or the command's `default`.
    pub fn path(&self, default: &str) -> PathBuf {
        self.input
            .clone()
            .or_else(|| self.file.clone())
            .unwrap_or_else(|| Path::new(default).to_path_buf())
    }
}

/// Which samples a profile report or diff counts: `--comm`, `--kernel`/`--user`, and what
/// time (`--wall`, `--off-cpu`). `hood diff` sets its own help lines on `comm`, `wall` and
/// `off_cpu` (`mut_arg`), which speak of both recordings.
#[derive(Debug, Clone, Default, Args)]
pub struct SampleFilter {
    /// Only processes with this name.
    #[arg(long = "comm")]
    pub comm: Option<String>,
    /// Only kernel-mode samples.
    #[arg(long = "kernel", conflicts_with = "user")]
    pub kernel: bool,
    /// Only user-mode samples.
    #[arg(long = "user")]
    pub user: bool,
    /// Wall-clock time (a recording made with `--off-cpu`): CPU samples weigh their period
    /// and off-CPU waits their length, so each thread's time adds up to its lifetime;
    /// `--by thread` shows each thread's lifetime split into on CPU, blocked and runnable.
    #[arg(long = "wall", conflicts_with = "off_cpu")]
    pub wall: bool,
    /// Only off-CPU time (a recording made with `--off-cpu`): where threads blocked or
    /// waited for a CPU, by the stack they left the CPU with.
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
}

impl SampleFilter {
    /// `--kernel` or `--user`, if either.
    pub fn mode(&self) -> Option<Mode> {
        if self.kernel {
            Some(Mode::Kernel)
        } else if self.user {
            Some(Mode::User)
        } else {
            None
        }
    }

    /// The time counted: `--wall`, else off-CPU time when `--off-cpu` or `off_cpu_view` (a
    /// grouping that only off-CPU time has), else CPU samples.
    pub fn measure(&self, off_cpu_view: bool) -> Measure {
        if self.wall {
            Measure::Wall
        } else if self.off_cpu || off_cpu_view {
            Measure::OffCpu
        } else {
            Measure::CpuSamples
        }
    }
}
