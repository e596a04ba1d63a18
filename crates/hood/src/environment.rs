//! Every `HOOD_*` environment variable that hood, its runtime (libhood_rt) or its test suite
//! reads, and the `DEBUGINFOD_*` ones it shares with elfutils, with what each does and which
//! values it takes. The man page's ENVIRONMENT section is
//! generated from this table; docs/cli.md says the same for readers of the repository (a test
//! checks that both name every variable the code reads).
//!
//! hood checks the values of the set variables when it starts: a value it would not understand
//! (`HOOD_CLOCK=mono`) is refused with the values it takes, instead of being silently ignored
//! by the runtime in the profiled program.

use anyhow::bail;

/// The values a variable takes.
#[derive(Debug, Clone, Copy)]
pub enum Values {
    /// Any text (a path, or "set at all").
    Any,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A whole number in this range (inclusive).
    Count(u64, u64),
}

/// One environment variable.
#[derive(Debug)]
pub struct Var {
    /// Its name.
    pub name: &'static str,
    /// Its values, as the documentation writes them.
    pub shown: &'static str,
    /// What it does.
    pub what: &'static str,
    /// The values hood accepts.
    pub values: Values,
}

/// Every variable, in the order the documentation lists them.
pub const VARS: &[Var] = &[
    Var {
        name: "HOOD_RT_LIB",
        shown: "PATH",
        what: "libhood_rt.so for `hood calls run` and `hood trace record` (default: next to the hood binary, then ../lib/hood/, then the copy the binary carries, written to $XDG_CACHE_HOME/hood/rt or ~/.cache/hood/rt)",
        values: Values::Any,
    },
    Var {
        name: "HOOD_RT_SO",
        shown: "PATH",
        what: "when building hood (cargo build, cargo install, make): the libhood_rt.so the binary carries, instead of one built from crates/hood-rt (packagers)",
        values: Values::Any,
    },
    Var {
        name: "HOOD_SHM_DIR",
        shown: "DIR",
        what: "where instrumented programs keep their call-path and trace tables (default /dev/shm); `hood calls get|reset` look there too",
        values: Values::Any,
    },
    Var {
        name: "HOOD_STATE_DIR",
        shown: "DIR",
        what: "where `hood start` keeps the detached recording's state for `hood stop` (default $XDG_RUNTIME_DIR/hood, else /tmp/hood-UID)",
        values: Values::Any,
    },
    Var {
        name: "DEBUGINFOD_URLS",
        shown: "URL ...",
        what: "debuginfod servers (space-separated) `hood report` and `hood annotate` download missing debug files from, by build-id (elfutils' variable; --no-debuginfod turns it off)",
        values: Values::Any,
    },
    Var {
        name: "DEBUGINFOD_CACHE_PATH",
        shown: "DIR",
        what: "where downloaded debug files are kept (default $XDG_CACHE_HOME/hood/debuginfod, else ~/.cache/hood/debuginfod); must be a directory of the user hood runs as, not writable by others",
        values: Values::Any,
    },
    Var {
        name: "DEBUGINFOD_TIMEOUT",
        shown: "SECONDS",
        what: "longest wait for a debuginfod server to connect or send more bytes (default 90)",
        values: Values::Count(1, 86_400),
    },
    Var {
        name: "DEBUGINFOD_MAXTIME",
        shown: "SECONDS",
        what: "longest one debuginfod download may take in all, however the server trickles its bytes (default 120)",
        values: Values::Count(1, 86_400),
    },
    Var {
        name: "DEBUGINFOD_MAXSIZE",
        shown: "BYTES",
        what: "largest debug file downloaded (default 4 GiB)",
        values: Values::Count(1, u64::MAX),
    },
    Var {
        name: "HOOD_DWARF_CACHE",
        shown: "DIR|off",
        what: "where `hood report` and `hood annotate` keep decompressed copies of debug files whose DWARF is compressed (Debian's libc6-dbg and -dbgsym files), so that only the first report decompresses them (default $XDG_CACHE_HOME/hood/dwarf, else ~/.cache/hood/dwarf; at most 2 GiB, least recently used removed first; `off`: decompress on every report); must be a directory of the user hood runs as, not writable by others (a directory set here that is not is warned about; the default one is then skipped quietly)",
        values: Values::Any,
    },
    Var {
        name: "HOOD_SYMBOL_CACHE",
        shown: "DIR|off",
        what: "where `hood report` and `hood annotate` keep what each binary's symbol tables and debug info said about each sampled address, by build-id, so that later reports of the same binaries answer them without reading debug info again (default $XDG_CACHE_HOME/hood/symbols, else ~/.cache/hood/symbols; at most 256 MiB, least recently used removed first; `off`: read debug info on every report); must be a directory of the user hood runs as, not writable by others (a directory set here that is not is warned about; the default one is then skipped quietly)",
        values: Values::Any,
    },
    Var {
        name: "HOOD_TIMING",
        shown: "any value",
        what: "`hood report` prints how long loading, symbolizing and rendering took, and how many addresses were answered from the symbol cache and how many from debug info, to standard error",
        values: Values::Any,
    },
    Var {
        name: "HOOD_CLOCK",
        shown: "tsc | monotonic",
        what: "the runtime's clock: `tsc` (default, where the CPU has an invariant TSC) or `monotonic` (CLOCK_MONOTONIC through the vDSO)",
        values: Values::OneOf(&["tsc", "monotonic"]),
    },
    Var {
        name: "HOOD_COMPENSATE",
        shown: "1 | 0",
        what: "`0` turns off the runtime's compensation for its own overhead in `hood calls` times",
        values: Values::OneOf(&["1", "0"]),
    },
    Var {
        name: "HOOD_DISABLE",
        shown: "0 | 1",
        what: "`1` makes every runtime hook return at once: the program runs instrumented but unmeasured",
        values: Values::OneOf(&["0", "1"]),
    },
    Var {
        name: "HOOD_MAX_THREADS",
        shown: "1..65536 (64)",
        what: "threads measured per process by `hood calls`; further threads are counted as lost",
        values: Values::Count(1, 65_536),
    },
    Var {
        name: "HOOD_MAX_DEPTH",
        shown: "1..1048576 (1024)",
        what: "call stack depth followed per thread by `hood calls`",
        values: Values::Count(1, 1 << 20),
    },
    Var {
        name: "HOOD_MAX_PATHS",
        shown: "2..16777216 (16384)",
        what: "distinct call paths kept per thread by `hood calls`",
        values: Values::Count(2, 1 << 24),
    },
    Var {
        name: "HOOD_MAX_PATH_LEN",
        shown: "1..1048576 (256)",
        what: "functions kept per call path by `hood calls`; longer paths are folded",
        values: Values::Count(1, 1 << 20),
    },
    Var {
        name: "HOOD_REPORT_MAX_FRAMES",
        shown: "1000..4294967295 (8388608)",
        what: "functions, summed over the call paths shown, that `hood calls report` (per path, collapsed, pprof) and `hood diff --by path` of two `hood calls` files hold in memory, about 64 bytes each; a file with more is refused, naming the per-function report or diff as the way to read it",
        values: Values::Count(1000, u32::MAX as u64),
    },
    Var {
        name: "HOOD_REPORT_MAX_MEMORY",
        shown: "bytes (half the physical memory)",
        what: "hood's own peak resident memory (VmHWM, not what the program that started hood had) at which `hood report`, `annotate`, `diff`, `calls` and `trace` stop reading a recording with an error naming the file and the cap (checked before each chunk read; an output file being written is removed); 0: no cap",
        values: Values::Count(0, u64::MAX),
    },
    Var {
        name: "HOOD_OFF_CPU_BPF",
        shown: "1 | 0 | hash (1)",
        what: "`0`: `hood record --off-cpu` takes every context switch's and wake-up's stack instead of loading BPF programs that take stacks only for waits of at least `--off-cpu-min` (the default, as root); a context-switch storm costs about three times as much. `hash`: the programs keep their per-thread state in hash tables, as they do on a kernel that refuses task-local storage (for tests of that path; a storm costs a little more)",
        values: Values::OneOf(&["1", "0", "hash"]),
    },
    Var {
        name: "HOOD_OFF_CPU_WAKEUPS",
        shown: "bpf | all (bpf)",
        what: "`all`: a `hood record --off-cpu` of a command or of `-p` processes samples every wake-up of the machine with the `sched_waking` tracepoint and keeps its threads' ones, instead of letting its BPF program write only the wake-ups of its own threads (the default with `HOOD_OFF_CPU_BPF=1`); costs more on a busy machine (for comparing the two)",
        values: Values::OneOf(&["bpf", "all"]),
    },
    Var {
        name: "HOOD_KEEP_STACK_COPIES",
        shown: "1 | 0 (0)",
        what: "`1`: `hood record` stores every sample's raw user registers and stack copy for `hood report` to unwind, as it does by itself for the samples of a ring found half full (its unwinding fell behind); for tests of that path",
        values: Values::OneOf(&["1", "0"]),
    },
    Var {
        name: "HOOD_TRACE_IRQ",
        shown: "1 | 0",
        what: "`0`: `hood trace record` does not record interrupt time (benchmarks)",
        values: Values::OneOf(&["1", "0"]),
    },
    Var {
        name: "HOOD_TRACE_WAKE",
        shown: "1 | 0",
        what: "`0`: `hood trace record` does not record who woke the traced threads (benchmarks)",
        values: Values::OneOf(&["1", "0"]),
    },
    Var {
        name: "HOOD_TRACE_PREFAULT",
        shown: "1 | 0",
        what: "`0`: `hood trace record` leaves the first touch of the trace buffers to the program (benchmarks)",
        values: Values::OneOf(&["1", "0"]),
    },
    Var {
        name: "HOOD_MODE",
        shown: "trace",
        what: "set by `hood trace record` for the runtime in the traced program; not for users",
        values: Values::OneOf(&["trace"]),
    },
    Var {
        name: "HOOD_TSC_HZ",
        shown: "100000000..10000000000",
        what: "set by `hood trace record` and `hood calls run`: the TSC's rate in ticks per second, measured once by the recorder so that the runtime in each program it starts need not spin ~2 ms to measure it; not for users",
        values: Values::Count(100_000_000, 10_000_000_000),
    },
    Var {
        name: "HOOD_TRACE_BUFFER",
        shown: "16..1073741824",
        what: "set by `hood trace record` from --buffer; not for users",
        values: Values::Count(16, 1 << 30),
    },
    Var {
        name: "HOOD_TRACE_FULL",
        shown: "stop | wrap",
        what: "set by `hood trace record` from --full; not for users",
        values: Values::OneOf(&["stop", "wrap"]),
    },
    Var {
        name: "HOOD_TRACE_START",
        shown: "off",
        what: "set by `hood trace record --start-off`; not for users",
        values: Values::OneOf(&["on", "off"]),
    },
    Var {
        name: "HOOD_TRACE_FILTER",
        shown: "PATH",
        what: "set by `hood trace record --filter/--exclude` (the filter table's file); not for users",
        values: Values::Any,
    },
    Var {
        name: "HOOD_REQUIRE_PRIVILEGED",
        shown: "1",
        what: "test suite: `1` makes tests that need root fail instead of skipping (CI sets it)",
        values: Values::Any,
    },
    Var {
        name: "HOOD_BLESS",
        shown: "1",
        what: "test suite: `1` rewrites the expected outputs of the layout tests",
        values: Values::Any,
    },
    Var {
        name: "HOOD_PERF_PERMISSION_INNER",
        shown: "(internal)",
        what: "test suite: marks the child process of hood-perf's permission test",
        values: Values::Any,
    },
    Var {
        name: "HOOD_PROC_TEST_INNER",
        shown: "(internal)",
        what: "test suite: marks the copies of hood-proc's tests that run in a process of their own (they signal themselves or play a killed recorder)",
        values: Values::Any,
    },
];

/// The exit statuses of hood, as (status, meaning).
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success; also when the reader of standard output closed it early (`hood report | head -1`): hood stops quietly"),
    ("1", "the command ran but found nothing to show (a recording with no samples; a --pid, --comm, --kernel, --user or --tid nothing matches; a function annotate did not find; a program calls run or trace record found no tables or trace in, when it exited 0) or its target failed"),
    ("2", "usage or environment error: a bad option or value, a missing or damaged file, a permission hood lacks, an output path hood refuses (a pipe, device, another user's file) or another hood is writing; the message names the cause and a fix"),
    ("N", "`hood record -- COMMAND`, `hood calls run` and `hood trace record` exit with COMMAND's status (128+N when signal N ended it) once its data is written"),
];

/// Refuse set variables whose value hood (or its runtime) would not understand.
pub fn check() -> anyhow::Result<()> {
    for v in VARS {
        let Some(val) = std::env::var_os(v.name) else {
            continue;
        };
        let val = val.to_string_lossy();
        let wanted = match v.values {
            Values::Any => continue,
            Values::OneOf(words) if words.contains(&val.as_ref()) => continue,
            Values::OneOf(words) => words.join(" or "),
            Values::Count(lo, hi) if val.parse::<u64>().is_ok_and(|n| (lo..=hi).contains(&n)) => {
                continue
            }
            Values::Count(lo, hi) => format!("a whole number from {lo} to {hi}"),
        };
        bail!(
            "environment variable {}={val:?} is not understood: use {wanted}, or unset it",
            v.name
        );
    }
    Ok(())
}
