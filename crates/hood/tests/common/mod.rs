//! Shared helpers of hood's integration tests: the binary, C workloads built with gcc, and the
//! privileged-test convention (skip with a message locally, fail in CI).
#![allow(dead_code)]

mod lock;
mod privileged;
pub mod serve;
pub mod tmux;

// Not every test binary runs privileged tests.
#[allow(unused_imports)]
pub use lock::{command, exclusive, once, shared, Exclusive};
#[allow(unused_imports)]
pub use privileged::privileged;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The hood binary under test.
pub fn hood() -> Command {
    command(env!("CARGO_BIN_EXE_hood"))
}

/// Repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Build tests/c/NAME.c with gcc (-O1, frame pointers); cached.
///
/// The programs live in the target's scratch directory (cargo's `CARGO_TARGET_TMPDIR`, which
/// `cargo clean` removes) and are rebuilt when their source is newer. A temporary directory
/// per test process, kept in a static, was never removed (statics are not dropped), and every
/// run of a test binary left one in /tmp.
pub fn c_program(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-programs-O1");
    std::fs::create_dir_all(&dir).expect("the tests' program directory");
    let out = dir.join(name);
    let src = repo().join("tests/c").join(format!("{name}.c"));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(built), Some(written)) = (modified(&out), modified(&src)) {
        if built >= written {
            return out;
        }
    }
    // Two tests, or two test binaries, may build the same program at once: each its own
    // temporary, renamed into place (a running copy keeps its old file).
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!("{name}.{}.{n}.tmp", std::process::id()));
    let st = command("gcc")
        .args([
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-mno-omit-leaf-frame-pointer",
            "-o",
        ])
        .arg(&tmp)
        .arg(&src)
        .status()
        .expect("gcc must be installed to build the test workloads");
    assert!(st.success(), "gcc failed on {}", src.display());
    std::fs::rename(&tmp, &out).expect("rename");
    out
}

/// A directory for what a test binary makes once and keeps for all its tests (a value in a
/// static, which is never dropped: a `TempDir` there was left in /tmp on every run).
pub struct Scratch(PathBuf);

impl Scratch {
    /// `CARGO_TARGET_TMPDIR/NAME.PID`, made empty. Directories `NAME.*` of earlier runs whose
    /// process is gone are removed first, so at most one per running test binary remains.
    pub fn new(name: &str) -> Scratch {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(base).expect("the tests' scratch directory");
        let prefix = format!("{name}.");
        for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
            let file = e.file_name();
            let Some(pid) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
                continue;
            };
            let gone = pid
                .parse::<u32>()
                .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if gone {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        let dir = base.join(format!("{prefix}{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).expect("a scratch directory");
        Scratch(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Build tests/c/NAME.c at -O2 with debug info and frame pointers into `dir/NAME`.
pub fn c_program_o2(dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let st = command("gcc")
        .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&out)
        .arg(repo().join("tests/c").join(format!("{name}.c")))
        .status()
        .expect("gcc must be installed to build the test workloads");
    assert!(st.success(), "gcc failed on {name}.c");
    out
}

/// The subcommands `hood ARGS --help` lists (without `help`), so a new subcommand cannot be
/// missed by a test's own list.
pub fn listed_in_help(args: &[&str]) -> Vec<String> {
    let out = run(hood().args(args).arg("--help"));
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    help.split("Commands:")
        .nth(1)
        .map(|rest| {
            rest.lines()
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .filter_map(|l| l.split_whitespace().next())
                .filter(|w| *w != "help")
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Run and capture, with stdout/stderr shown on failure.
pub fn run(cmd: &mut Command) -> Output {
    shared();
    let out = cmd.output().expect("spawn");
    assert_ne!(out.status.code(), Some(101), "panicked:\n{}", text(&out));
    out
}

/// stdout and stderr as text.
pub fn text(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Parse folded stacks into (line, count).
pub fn folded(stdout: &[u8]) -> Vec<(Vec<String>, u64)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("folded line has a count");
            (
                stack.split(';').map(str::to_string).collect(),
                n.parse().expect("count"),
            )
        })
        .collect()
}

/// Self samples per leaf frame among stacks whose first frame (process) is `comm`.
pub fn leaf_counts(stacks: &[(Vec<String>, u64)], comm: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for (frames, n) in stacks {
        if frames.first().map(String::as_str) == Some(comm) {
            *m.entry(frames.last().cloned().unwrap_or_default())
                .or_insert(0) += n;
        }
    }
    m
}

/// The sample count the recorder printed ("N samples").
pub fn recorded_samples(stderr: &[u8]) -> u64 {
    let s = String::from_utf8_lossy(stderr);
    let line = s
        .lines()
        .find(|l| l.contains("hood: wrote"))
        .expect("summary line");
    let before = line.split(" samples on").next().expect("samples");
    before.rsplit(' ').next().unwrap().parse().expect("number")
}

/// Record `args` into `out` and return the output.
pub fn record(out: &Path, args: &[&str]) -> Output {
    run(hood().arg("record").arg("-o").arg(out).args(args))
}

/// `hood report --format collapsed` of `file`, plus extra args.
pub fn collapsed(file: &Path, extra: &[&str]) -> Vec<(Vec<String>, u64)> {
    let out = run(hood()
        .args(["report", "--format", "collapsed", "-i"])
        .arg(file)
        .args(extra));
    assert!(out.status.success(), "report failed:\n{}", text(&out));
    folded(&out.stdout)
}

/// The time the hypervisor took this virtual machine's CPUs from it so far, all CPUs
/// together (`steal` in /proc/stat, in USER_HZ ticks: 100 a second on Linux). A thread the
/// hypervisor stops is still on its CPU as the guest kernel sees it, so a recording counts
/// that time as the thread's; CLOCK_THREAD_CPUTIME_ID, schedstat and cpu-clock do not.
pub fn stolen_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: u64 = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    ticks * 10_000_000
}

/// Build hood-rt in release mode once per test binary (hook timing matters for the accuracy
/// tests) into the target dir of the hood binary under test; returns `target/release`.
pub fn runtime_release_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    once(&DIR, || {
        let target = Path::new(env!("CARGO_BIN_EXE_hood"))
            .parent()
            .and_then(Path::parent)
            .expect("target dir")
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = command(cargo)
            .args(["build", "--release", "-p", "hood-rt", "--target-dir"])
            .arg(&target)
            .current_dir(repo())
            .status()
            .expect("run cargo");
        assert!(st.success(), "building hood-rt failed");
        target.join("release")
    })
    .as_path()
}

/// `gcc -O2 -g -finstrument-functions FLAGS tests/c/NAME.c -o DIR/NAME LIBS`: a workload for
/// the call-path profiler and the tracer.
pub fn instrumented(name: &str, dir: &Path, flags: &[&str], libs: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let st = command("gcc")
        .args(["-O2", "-g", "-finstrument-functions"])
        .args(flags)
        .arg(repo().join(format!("tests/c/{name}.c")))
        .arg("-o")
        .arg(&out)
        .args(libs)
        .status()
        .expect("gcc must be installed");
    assert!(st.success(), "gcc failed for {name}");
    out
}

/// Where tracefs is expected.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Mount tracefs if it is not mounted yet (the tests that need it run as root).
pub fn ensure_tracefs() {
    if !Path::new(TRACEFS).join("instances").is_dir() {
        let _ = command("mount")
            .args(["-t", "tracefs", "nodev", TRACEFS])
            .status();
    }
}

/// `hood record --labels --labels-budget BUDGET -F 999 -- labels_udp 2` (the loopback UDP
/// sender/receiver pair) into `file`; the recording must succeed. `0`: no budget.
pub fn record_labels_udp(file: &Path, budget: &str) -> Output {
    let prog = c_program("labels_udp");
    let out = record(
        file,
        &[
            "--labels",
            "--labels-budget",
            budget,
            "-F",
            "999",
            "--",
            prog.to_str().unwrap(),
            "2",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    out
}

/// Whether the test runs as root (it needs to chown files to another user or read root-only
/// ones); otherwise print SKIPPED, or panic when HOOD_REQUIRE_PRIVILEGED=1 (CI).
pub fn root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    if std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref() == Ok("1") {
        panic!("{test} needs root and HOOD_REQUIRE_PRIVILEGED=1 forbids skipping");
    }
    eprintln!("SKIPPED (needs root): {test}");
    false
}

/// Name of the ordinary user the attack tests act as.
pub const OTHER_USER: &str = "hood-other";

/// (uid, gid) of an ordinary second user, created with useradd on first use (as root).
pub fn other_user() -> (u32, u32) {
    static IDS: OnceLock<(u32, u32)> = OnceLock::new();
    *once(&IDS, || {
        let id = |flag: &str| -> Option<u32> {
            let out = command("id").args([flag, OTHER_USER]).output().ok()?;
            String::from_utf8_lossy(&out.stdout).trim().parse().ok()
        };
        // Several test binaries may race to create it: useradd fails while another holds
        // the lock on /etc/passwd, so try again until the user exists.
        for _ in 0..50 {
            if let (Some(u), Some(g)) = (id("-u"), id("-g")) {
                return (u, g);
            }
            let _ = command("useradd")
                .args([
                    "--system",
                    "--no-create-home",
                    "--shell",
                    "/usr/sbin/nologin",
                ])
                .arg(OTHER_USER)
                .output();
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("cannot create the user {OTHER_USER} with useradd");
    })
}

/// A world-writable sticky directory like /tmp, private to the test, for files "planted" by
/// the other user.
pub fn sticky_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    d
}

/// A root-only file (mode 0600) holding `content`, for checking that hood never writes it.
pub fn root_only_file(dir: &Path, content: &[u8]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("root-only");
    std::fs::write(&p, content).expect("write");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    p
}

/// What a command bounded in time did: its exit status (`None`: it was still running at the
/// deadline and was killed), its peak RSS in KiB, and its stderr.
pub struct Bounded {
    pub status: Option<std::process::ExitStatus>,
    pub max_rss_kb: i64,
    pub stderr: String,
}

/// Run `cmd` (stdin and stdout to /dev/null) until it exits or `limit` passes (then kill it),
/// and measure its own peak RSS (a hang detector: a command that works ends long before the
/// limit).
///
/// The command runs as the child of tests/c/peak_rss.c, which reports its wait4 `ru_maxrss`:
/// Linux starts a child's `ru_maxrss` at the peak RSS of the process that spawned it, so
/// spawned straight from this test binary (grown by its other tests) it would measure the
/// binary. What runs is `cmd`'s program, arguments, environment changes and directory.
pub fn run_bounded(cmd: &mut Command, limit: std::time::Duration) -> Bounded {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let result = tempfile::NamedTempFile::new().expect("temp file");
    let mut wrapped = command(c_program("peak_rss"));
    wrapped
        .arg(result.path())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        wrapped.current_dir(d);
    }
    let errf = tempfile::tempfile().expect("temp file");
    #[allow(clippy::zombie_processes, reason = "reaped below with wait4")]
    let mut child = wrapped
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(errf.try_clone().expect("dup"))
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let deadline = std::time::Instant::now() + limit;
    let mut killed = false;
    loop {
        let mut st: libc::c_int = 0;
        // SAFETY: `st` is valid for writes; `pid` is our own unreaped child; a null rusage
        // is allowed.
        let r = unsafe { libc::wait4(pid, &mut st, libc::WNOHANG, std::ptr::null_mut()) };
        if r == pid {
            break;
        }
        assert_eq!(r, 0, "wait4: {}", std::io::Error::last_os_error());
        if !killed && std::time::Instant::now() > deadline {
            // peak_rss takes its child along (PR_SET_PDEATHSIG).
            let _ = child.kill();
            killed = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut stderr = String::new();
    use std::io::{Read, Seek};
    let mut errf = errf;
    errf.rewind().expect("rewind");
    errf.read_to_string(&mut stderr).expect("read stderr");
    // "MAXRSS_KIB WAIT_STATUS", once the command ended (not when it was killed).
    let measured = std::fs::read_to_string(result.path()).unwrap_or_default();
    let mut fields = measured.split_whitespace().map(|f| f.parse::<i64>());
    let (max_rss_kb, status) = match (fields.next(), fields.next()) {
        (Some(Ok(kb)), Some(Ok(st))) if !killed => (kb, Some(st as libc::c_int)),
        _ => {
            assert!(killed, "peak_rss wrote no result: {stderr}");
            (0, None)
        }
    };
    Bounded {
        status: status.map(std::process::ExitStatus::from_raw),
        max_rss_kb,
        stderr,
    }
}

/// The GNU build-id of an ELF file as readelf prints it (lower-case hex).
pub fn readelf_build_id(path: &Path) -> String {
    let notes = command("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .expect("readelf (binutils)");
    String::from_utf8_lossy(&notes.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .unwrap_or_else(|| panic!("no build-id in {}", path.display()))
}

/// Build a one-file Rust program (`main_rs` as src/main.rs) as a release build in `dir`,
/// offline, with `profile` appended to its Cargo.toml (e.g. `[profile.release]\ndebug = true`);
/// the binary's path.
#[allow(dead_code)]
pub fn cargo_release_build(dir: &Path, name: &str, main_rs: &str, profile: &str) -> PathBuf {
    let src = dir.join(name);
    std::fs::create_dir_all(src.join("src")).unwrap();
    std::fs::write(
        src.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n{profile}"
        ),
    )
    .unwrap();
    std::fs::write(src.join("src/main.rs"), main_rs).unwrap();
    let build = command(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--quiet",
            "--offline",
            "--manifest-path",
        ])
        .arg(src.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo");
    assert!(build.status.success(), "cargo build: {}", text(&build));
    dir.join("target/release").join(name)
}

/// `go tool pprof`, with Go's toolchain download switched off and `home` as its cache home;
/// the caller adds the arguments. Spawning fails when `go` is not installed.
#[allow(dead_code)]
pub fn go_tool_pprof(home: &Path) -> Command {
    let mut c = command("go");
    c.args(["tool", "pprof"])
        .env("GOTOOLCHAIN", "local")
        .env("HOME", home);
    c
}

/// `hood trace record -o DIR/DATA OPTS -- CMD` with the release runtime and its segments under
/// `dir`, standard output discarded: the file's path and what the recorder did.
pub fn trace_record(dir: &Path, data: &str, opts: &[&str], cmd: &[&str]) -> (PathBuf, Output) {
    let data = dir.join(data);
    let out = hood()
        .args(["trace", "record", "-o"])
        .arg(&data)
        .args(opts)
        .arg("--")
        .args(cmd)
        .env("HOOD_RT_LIB", runtime_release_dir().join("libhood_rt.so"))
        .env("HOOD_SHM_DIR", dir)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("hood trace record");
    (data, out)
}
