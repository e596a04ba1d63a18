//! Every command printed in README.md and docs/*.md works as written (issue 15, item 2).
//!
//! The commands are read from the documents themselves, with their `# comment` removed: every
//! line of a fenced `sh` block (install steps, `make`, `fuzz/run.sh`: a shell block holds
//! commands only), and each line of an unmarked or `console` block that starts with a program
//! (`hood`, `./`, `gcc`, `cargo`, `go`, `perf`; those blocks also hold output). Usage synopses (`hood ps [-t PID | -a] ...`) and the `hood ...` commands quoted in
//! the prose are not run; the options they name are checked against the subcommand's `--help`.
//!
//! [`PLANS`] says how each printed command is run: as written, as a short variant (with the
//! reason), by a step of its own (interactive or endless commands), or not at all (with the
//! reason). A command printed in a document without a plan fails
//! `every_printed_command_has_a_plan`, and so does a plan whose command is no longer printed.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{hood, listed_in_help, repo, run, text};

/// A command printed in a document.
#[derive(Debug, Clone)]
struct Printed {
    file: String,
    line: usize,
    /// The command without its comment.
    cmd: String,
}

/// Programs a printed command line may start with.
const PROGRAMS: &[&str] = &["hood ", "./", "gcc ", "cargo ", "go ", "perf "];

/// The documents: README.md and every docs/*.md.
fn documents() -> Vec<(String, String)> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(repo()).unwrap_or(&p).display().to_string();
            (name, std::fs::read_to_string(&p).expect("read document"))
        })
        .collect()
}

/// `cmd  # comment` → `cmd`. A `#` counts as a comment only after whitespace, outside quotes.
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if prev_space && !single && !double => return line[..i].trim_end(),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    line.trim_end()
}

/// Every command line of the fenced code blocks, in document order; a line that starts with
/// whitespace continues the command above it (a synopsis wrapped over two lines).
fn fenced_commands() -> Vec<Printed> {
    let mut out: Vec<Printed> = Vec::new();
    for (file, body) in documents() {
        let mut fence: Option<String> = None;
        let mut last_was_command = false;
        for (i, raw) in body.lines().enumerate() {
            let t = raw.trim_start();
            if let Some(rest) = t.strip_prefix("```") {
                fence = match fence {
                    Some(_) => None,
                    None => Some(rest.trim().to_string()),
                };
                last_was_command = false;
                continue;
            }
            let Some(lang) = &fence else { continue };
            if !(lang.is_empty() || lang == "sh" || lang == "console") {
                continue;
            }
            // In a shell block every line is a command, except a comment of its own.
            let shell_line = lang == "sh" && !raw.starts_with([' ', '#']) && !t.is_empty();
            if (shell_line || PROGRAMS.iter().any(|p| raw.starts_with(p))) && !is_output(raw) {
                out.push(Printed {
                    file: file.clone(),
                    line: i + 1,
                    cmd: strip_comment(raw).to_string(),
                });
                last_was_command = true;
            } else if last_was_command && raw.starts_with(' ') && !t.is_empty() {
                let prev = out.last_mut().expect("a command above");
                prev.cmd = format!("{} {}", prev.cmd, strip_comment(t));
            } else {
                last_was_command = false;
            }
        }
    }
    out
}

/// hood's own output quoted in a block (`hood serve: profile #3 ...`), not a command.
fn is_output(line: &str) -> bool {
    line.split_whitespace()
        .nth(1)
        .is_some_and(|w| w.ends_with(':'))
}

/// A usage synopsis, not a command: it shows optional parts in brackets or placeholders.
fn is_synopsis(cmd: &str) -> bool {
    cmd.contains(" [") || cmd.contains("CMD ARGS")
}

/// The `hood ...` commands quoted in the prose (inline code spans), outside code blocks.
fn inline_hood_commands() -> Vec<Printed> {
    let mut out = Vec::new();
    for (file, body) in documents() {
        let mut in_fence = false;
        for (i, line) in body.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_fence = !in_fence;
                continue;
            }
            if in_fence {
                continue;
            }
            // Code spans are between single backticks.
            for (k, span) in line.split('`').enumerate() {
                if k % 2 == 1 && span.starts_with("hood ") && !is_output(span) {
                    out.push(Printed {
                        file: file.clone(),
                        line: i + 1,
                        cmd: span.replace("\\|", "|"),
                    });
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Options named in a printed command exist in that subcommand's --help.

/// `hood [PATH...] --help`, cached.
fn help(path: &[String], cache: &mut BTreeMap<Vec<String>, String>) -> String {
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let out = run(hood().args(path).arg("--help"));
            assert!(
                out.status.success(),
                "hood {path:?} --help:\n{}",
                text(&out)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .clone()
}

/// Whether `help` documents the option `opt` (`--name` or `-x`).
fn documents_option(help: &str, opt: &str) -> bool {
    help.match_indices(opt).any(|(i, _)| {
        let before = help[..i].chars().last();
        let after = help[i + opt.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// The problems with the options of one printed `hood ...` command.
fn option_problems(cmd: &str, cache: &mut BTreeMap<Vec<String>, String>) -> Vec<String> {
    // Only hood's own part: before `-- CMD`, a shell pipe, a redirection or a second command.
    let mut own = cmd;
    for stop in [" -- ", " | ", " > ", " && ", "; ", " / "] {
        if let Some(i) = own.find(stop) {
            own = &own[..i];
        }
    }
    let mut words = own.split_whitespace();
    if words.next() != Some("hood") {
        return Vec::new();
    }
    let words: Vec<&str> = words.collect();
    // The subcommand path; `run/get/reset` names several subcommands at once.
    let mut paths: Vec<Vec<String>> = vec![Vec::new()];
    let mut k = 0;
    while k < words.len() {
        let subs = listed_in_help(&paths[0].iter().map(String::as_str).collect::<Vec<_>>());
        let alts: Vec<&str> = words[k].split('/').collect();
        if !alts.iter().all(|a| subs.iter().any(|s| s == a)) {
            break;
        }
        paths = paths
            .iter()
            .flat_map(|p| {
                alts.iter().map(move |a| {
                    let mut q = p.clone();
                    q.push(a.to_string());
                    q
                })
            })
            .collect();
        k += 1;
    }
    let mut problems = Vec::new();
    if let Some(first) = words.get(k) {
        let subs = listed_in_help(&paths[0].iter().map(String::as_str).collect::<Vec<_>>());
        if !subs.is_empty() && !first.starts_with('-') && first.chars().all(char::is_lowercase) {
            problems.push(format!(
                "`{first}` is not a subcommand of hood {:?}",
                paths[0]
            ));
        }
    }
    for w in &words[k..] {
        for opt in w
            .split(['|', '/', '[', ']', '='])
            .filter(|o| o.starts_with('-') && *o != "-" && *o != "--")
        {
            for p in &paths {
                if !documents_option(&help(p, cache), opt) {
                    problems.push(format!("`hood {} --help` has no option {opt}", p.join(" ")));
                }
            }
        }
    }
    problems
}

#[test]
fn options_of_every_printed_hood_command_exist() {
    let mut cache = BTreeMap::new();
    let mut problems = Vec::new();
    let all: Vec<Printed> = fenced_commands()
        .into_iter()
        .chain(inline_hood_commands())
        .collect();
    assert!(all.len() > 100, "too few commands found: {}", all.len());
    for p in &all {
        if EXPECTED_TO_FAIL.iter().any(|(c, _)| *c == p.cmd) {
            continue;
        }
        for why in option_problems(&p.cmd, &mut cache) {
            problems.push(format!("{}:{}: `{}`: {why}", p.file, p.line, p.cmd));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_option_check_finds_what_is_missing() {
    let mut cache = BTreeMap::new();
    assert!(option_problems("hood report --format pprof -o x.pb.gz", &mut cache).is_empty());
    assert!(option_problems("hood calls run/get -o F", &mut cache).is_empty());
    assert_eq!(
        option_problems("hood ps --no-such-option | head -1", &mut cache),
        ["`hood ps --help` has no option --no-such-option"]
    );
    assert_eq!(
        option_problems("hood calls run/get --format json", &mut cache).len(),
        2,
        "neither `calls run` nor `calls get` has --format"
    );
    assert!(option_problems("hood nosuch -x", &mut cache)[0].contains("not a subcommand"));
}

// ---------------------------------------------------------------------------------------
// Running the commands.

/// How one printed command is run.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// As printed, by bash in the work directory.
    AsWritten,
    /// This shell text instead, for the reason given. `$PIDS`, `$CALLS_PID` are set by the
    /// steps before.
    Variant(&'static str, &'static str),
    /// A step of its own (the command does not end by itself or needs a second party).
    Step(Step),
    /// Not run, for the reason given.
    NotRun(&'static str),
}

/// Commands that need more than a shell line.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Stop with SIGINT (Ctrl-C) after a second.
    CtrlC,
    /// Full-screen or endless output: read the first lines, then close the pipe.
    FirstLines,
    /// `hood serve`: ask /healthz, then stop it.
    Serve,
    /// `hood calls get -p PID / hood calls reset` on a `hood calls run` still running.
    CallsGetReset,
}

/// The one place that lists the commands a document prints that do not work yet, each with
/// the branch expected to make it work. An entry whose command works fails the test: move it
/// to [`PLANS`] as `AsWritten`.
const EXPECTED_TO_FAIL: &[(&str, &str)] = &[];

/// How each printed command is run (key: the command without its comment).
const PLANS: &[(&str, Plan)] = &[
    // README: quick start.
    (
        "./demo.sh",
        Plan::NotRun(
            "builds hood in release mode, minutes of compiling; its two steps, `hood record -- \
             CMD` and `hood report -i FILE`, run below",
        ),
    ),
    (
        "cargo test --workspace",
        Plan::NotRun("runs this test suite itself"),
    ),
    // docs/ARCHITECTURE.md: Tests.
    (
        "cargo test -p hood --test profile",
        Plan::NotRun("runs a binary of this test suite itself"),
    ),
    (
        "cargo test -p hood --test profile offcpu::",
        Plan::NotRun("runs a file of this test suite itself"),
    ),
    (
        "cargo test -p hood --test cli -- --exact killed_recorders::killed_calls_run_leaves_its_last_snapshot_and_no_segments",
        Plan::NotRun("runs a test of this test suite itself"),
    ),
    // README: install.
    (
        "sudo apt-get install -y gcc libc6-dev curl",
        Plan::NotRun(
            "installs system packages (needs the network, changes the machine); the test \
             machine has them: this test compiles its programs with gcc",
        ),
    ),
    (
        "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y",
        Plan::NotRun(
            "downloads and installs Rust (needs the network); the test runs under the Rust \
             that built it",
        ),
    ),
    (
        ". \"$HOME/.cargo/env\"",
        Plan::NotRun("puts the Rust just installed on PATH; the test runs under cargo already"),
    ),
    (
        "make && sudo make install",
        Plan::NotRun(
            "builds hood in release mode (minutes of compiling) and installs it into \
             /usr/local; .ci/install-check installs into a temporary root and runs it",
        ),
    ),
    (
        "cargo install --locked --path crates/hood",
        Plan::NotRun(
            "builds hood in release mode into ~/.cargo/bin, minutes of compiling; \
             .ci/install-check runs `cargo install --path crates/hood` (debug) into a temporary \
             root and `hood calls run` from it, with the runtime library the binary carries",
        ),
    ),
    // README: sampling.
    (
        "hood record -- ./myprog args...",
        Plan::Variant(
            "hood record -- ./myprog 300",
            "`myprog args...` stands for the user's program: the test's is split, 300 ms",
        ),
    ),
    (
        "hood record -p 1234,5678 -d 10",
        Plan::Variant(
            "hood record -p $PIDS -d 1",
            "1234,5678 stand for two running processes; 1 s instead of 10",
        ),
    ),
    ("hood record -a -F 4999", Plan::Step(Step::CtrlC)),
    ("hood report", Plan::AsWritten),
    (
        "hood start -a -o /var/tmp/day.data",
        Plan::Variant(
            "hood start -a -o day.data && sleep 1",
            "a file in the test's directory instead of the shared /var/tmp",
        ),
    ),
    ("hood stop", Plan::AsWritten),
    // README: off-CPU time.
    (
        "hood record --off-cpu -- ./myprog",
        Plan::Variant(
            "hood record --off-cpu -- ./myprog 300",
            "`myprog` stands for the user's program: the test's is split, 300 ms",
        ),
    ),
    ("hood report --wall", Plan::AsWritten),
    ("hood report --off-cpu", Plan::AsWritten),
    ("hood report --by reason", Plan::AsWritten),
    ("hood report --by waker", Plan::AsWritten),
    ("hood report --wall --by thread", Plan::AsWritten),
    // README: comparing two recordings.
    (
        "hood record -o before.data -- ./myprog",
        Plan::Variant(
            "hood record -o before.data -- ./myprog 300",
            "`myprog` stands for the user's program: the test's is split, 300 ms",
        ),
    ),
    (
        "hood record -o after.data -- ./myprog",
        Plan::Variant(
            "hood record -o after.data -- ./myprog 300",
            "`myprog` stands for the user's program: the test's is split, 300 ms",
        ),
    ),
    ("hood diff before.data after.data", Plan::AsWritten),
    (
        "hood diff before.data after.data --format svg -o diff.svg",
        Plan::AsWritten,
    ),
    (
        "hood diff before.data after.data --format pprof -o diff.pb.gz",
        Plan::AsWritten,
    ),
    ("go tool pprof -top diff.pb.gz", Plan::AsWritten),
    (
        "hood calls run --sample=prof.data -o calls.data -- ./myprog",
        Plan::Variant(
            "hood calls run --sample=prof.data -o calls.data -- ./myprog 300",
            "`myprog` stands for the user's program: the test's is split (instrumented), 300 ms",
        ),
    ),
    ("hood diff --reconcile calls.data prof.data", Plan::AsWritten),
    // README: call paths and traces.
    (
        "gcc -O2 -g -finstrument-functions -o prog prog.c",
        Plan::AsWritten,
    ),
    ("hood calls run -- ./prog", Plan::AsWritten),
    ("hood calls report", Plan::AsWritten),
    (
        "hood calls get -p PID / hood calls reset",
        Plan::Step(Step::CallsGetReset),
    ),
    ("hood trace record -- ./prog", Plan::AsWritten),
    ("hood trace report --paths", Plan::AsWritten),
    (
        "hood trace report --format chrome -o t.json",
        Plan::AsWritten,
    ),
    ("hood trace record --probe 'b*' -- ./prog", Plan::AsWritten),
    (
        "hood calls run --probe b --probe 'libc.so.6:getpid' -- ./prog",
        Plan::AsWritten,
    ),
    (
        "hood calls record --probe 'work*' -p 1234 -d 10",
        Plan::Variant(
            "hood calls record --probe 'work*' -p $PIDS -d 1",
            "1234 stands for a running process: the test's two busy ones; 1 s instead of 10",
        ),
    ),
    // README: monitoring.
    ("hood top", Plan::Step(Step::FirstLines)),
    ("hood top -b -n 3 --json", Plan::AsWritten),
    ("hood top -b -n 1 --tree", Plan::AsWritten),
    ("hood ps --sort cpu --delay 1", Plan::AsWritten),
    ("hood uptime", Plan::AsWritten),
    ("hood info system.load", Plan::AsWritten),
    ("hood top --irq-time", Plan::Step(Step::FirstLines)),
    // README and docs/monitor.md: record and replay.
    (
        "hood top --record /var/lib/hood/monitor",
        Plan::Variant(
            "hood top --record store --delay 0.3 -n 3",
            "3 intervals into the test's directory, not the system's store",
        ),
    ),
    (
        "hood top --replay /var/lib/hood/monitor --at 3:10",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store --at now",
            "a fresh store of the test's, which holds the last second; batch, as the screen needs a terminal",
        ),
    ),
    (
        "hood top -b --replay DIR --from '2h ago' --to '1h ago' --csv",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store --from '1h ago' --to now --csv",
            "a fresh store of the test's, which holds the last second",
        ),
    ),
    (
        "hood ps --at '3h ago'",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood ps --store store --at now",
            "a fresh store of the test's, which holds the last second",
        ),
    ),
    (
        "hood top --replay DIR",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b -n 1 --replay store",
            "batch, as the screen needs a terminal",
        ),
    ),
    (
        "hood top --replay DIR --at 3:10",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store --at now",
            "a fresh store of the test's, which holds the last second; batch",
        ),
    ),
    (
        "hood top -b --replay DIR --at 3:10",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store --at now",
            "a fresh store of the test's, which holds the last second",
        ),
    ),
    (
        "hood top -b --replay DIR --from 0:00 --filter nginx --csv > nginx.csv",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store --filter hood --csv > hood.csv && grep -q hood hood.csv",
            "no nginx here: the recorder itself",
        ),
    ),
    (
        "hood top -b --replay DIR -p 1234 --csv",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store -p 1 --csv | grep -c '^[^,]*,1,' | grep -qx 3",
            "pid 1 of the test's store, one row per interval",
        ),
    ),
    (
        "hood top -b --replay DIR -p 1234 --csv > 1234.csv",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store -p 1 --csv > 1.csv && grep -q '^[^,]*,1,' 1.csv",
            "pid 1 of the test's store",
        ),
    ),
    (
        "hood top -b --replay DIR --openmetrics",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood top -b --replay store --openmetrics | tail -1 | grep -qx '# EOF'",
            "the test's store",
        ),
    ),
    (
        "hood ps --at '10 min ago' --sort cpu",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood ps --store store --at now --sort cpu",
            "a fresh store of the test's, which holds the last second",
        ),
    ),
    (
        "hood info --at 3:10 system.load",
        Plan::Variant(
            "rm -rf store; hood top --record store --delay 0.3 -n 3 2>/dev/null; hood info --store store --at now system.load",
            "a fresh store of the test's, which holds the last second",
        ),
    ),
    // README and docs/labels.md: process-labeled kernel profiling.
    (
        "hood record --labels -a -d 10",
        Plan::Variant("hood record --labels -a -d 1", "1 s instead of 10"),
    ),
    ("hood report --labels", Plan::AsWritten),
    ("hood report --labels --format gprof", Plan::AsWritten),
    ("hood report --labels --format collapsed", Plan::AsWritten),
    ("hood serve", Plan::Step(Step::Serve)),
    // README: conventions.
    (
        "hood --generate man > hood.1 && man -l hood.1",
        Plan::AsWritten,
    ),
    (
        "hood --generate complete-bash > /usr/share/bash-completion/completions/hood",
        Plan::Variant(
            "hood --generate complete-bash > hood.bash && bash -n hood.bash",
            "the test does not install into the system's completion directory",
        ),
    ),
    (
        "hood --generate complete-zsh > /usr/local/share/zsh/site-functions/_hood",
        Plan::Variant(
            "hood --generate complete-zsh > _hood && grep -q '^#compdef hood' _hood",
            "the test does not install into the system's completion directory",
        ),
    ),
    (
        "hood --generate complete-fish > ~/.config/fish/completions/hood.fish",
        Plan::Variant(
            "hood --generate complete-fish > hood.fish && grep -q 'complete -c hood' hood.fish",
            "the test does not install into the user's fish directory",
        ),
    ),
    ("hood --version", Plan::AsWritten),
    // docs/calls.md.
    (
        "gcc -O2 -g -finstrument-functions -o split tests/c/split.c",
        Plan::Variant(
            "test -x split",
            "Work::new builds split from tests/c, instrumented",
        ),
    ),
    (
        "hood calls run -o split.data -- ./split 600",
        Plan::AsWritten,
    ),
    (
        "hood calls report --format pprof -o split.pb.gz -i split.data",
        Plan::AsWritten,
    ),
    ("go tool pprof -top split.pb.gz", Plan::AsWritten),
    (
        "go tool pprof -top -sample_index=calls split.pb.gz",
        Plan::AsWritten,
    ),
    // docs/ecosystem.md.
    (
        "gcc -O1 -g -o split tests/c/split.c",
        Plan::Variant(
            "test -x split",
            "Work::new builds split from tests/c (instrumented, which sampling does not mind)",
        ),
    ),
    (
        "gcc -O1 -g -pthread -o labels_udp tests/c/labels_udp.c",
        Plan::Variant(
            "test -x labels_udp",
            "Work::new builds labels_udp from tests/c",
        ),
    ),
    ("hood record -F 999 -- ./split 1500", Plan::AsWritten),
    ("hood report --format pprof -o split.pb.gz", Plan::AsWritten),
    ("go tool pprof -top -addresses split.pb.gz", Plan::AsWritten),
    ("go tool pprof -top -lines split.pb.gz", Plan::AsWritten),
    ("go tool pprof -list work60 split.pb.gz", Plan::AsWritten),
    // docs/fuzzing.md.
    (
        "cargo install cargo-fuzz --locked",
        Plan::NotRun("installs a tool from crates.io; fuzz/run.sh (CI's fuzz step) does it itself"),
    ),
    (
        "fuzz/run.sh 60",
        Plan::NotRun("runs every fuzz target for a minute each: CI's fuzz step"),
    ),
    (
        "fuzz/run.sh 600 profile",
        Plan::NotRun("runs a fuzz target for ten minutes: CI's fuzz step runs fuzz/run.sh"),
    ),
    (
        "FUZZ_RUNS=10000000 FUZZ_CORPUS=$HOME/hood-corpus nice -n 10 fuzz/run.sh 0 perfmap",
        Plan::NotRun("runs a fuzz target for 10 M executions (about 40 minutes): CI's fuzz step runs fuzz/run.sh"),
    ),
    (
        "cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run -s none -O segment corpus/segment inputs/segment -- -max_total_time=300",
        Plan::NotRun("runs a fuzz target for five minutes: CI's fuzz step runs fuzz/run.sh"),
    ),
    (
        "hood record --labels -F 999 -- ./labels_udp 2",
        Plan::AsWritten,
    ),
    (
        "hood report --labels --format pprof -o udp.pb.gz",
        Plan::AsWritten,
    ),
    ("go tool pprof -tags udp.pb.gz", Plan::AsWritten),
    (
        "go tool pprof -top -tagfocus=charged_comm=udp_recv udp.pb.gz",
        Plan::AsWritten,
    ),
    (
        "perf record -F 999 -g -o p.data -- ./split 1500",
        Plan::AsWritten,
    ),
    ("hood report -i p.data", Plan::AsWritten),
];

fn plan_of(cmd: &str) -> Option<Plan> {
    PLANS.iter().find(|(c, _)| *c == cmd).map(|(_, p)| *p)
}

fn runnable_commands() -> Vec<Printed> {
    fenced_commands()
        .into_iter()
        .filter(|p| !is_synopsis(&p.cmd))
        .collect()
}

#[test]
fn every_printed_command_has_a_plan() {
    let printed = runnable_commands();
    let missing: Vec<String> = printed
        .iter()
        .filter(|p| plan_of(&p.cmd).is_none())
        .map(|p| format!("{}:{}: {}", p.file, p.line, p.cmd))
        .collect();
    assert!(
        missing.is_empty(),
        "printed commands without a plan in PLANS:\n{}",
        missing.join("\n")
    );
    let texts: BTreeSet<&str> = printed.iter().map(|p| p.cmd.as_str()).collect();
    let stale: Vec<&str> = PLANS
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| !texts.contains(c))
        .collect();
    assert!(
        stale.is_empty(),
        "plans for commands no document prints: {stale:?}"
    );
    for (c, _) in EXPECTED_TO_FAIL {
        assert!(
            texts.contains(c),
            "EXPECTED_TO_FAIL lists {c:?}, which no document prints"
        );
    }
    let synopses = fenced_commands()
        .into_iter()
        .filter(|p| is_synopsis(&p.cmd))
        .count();
    assert!(
        synopses >= 6,
        "the synopses of calls, monitor, serve and trace: {synopses}"
    );
}

/// The work directory: the programs the documents name, built from tests/c.
struct Work {
    dir: tempfile::TempDir,
    bin: PathBuf,
    env: Vec<(String, String)>,
    /// Processes to end when the test ends.
    children: Vec<Child>,
}

impl Work {
    fn new() -> Work {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_hood"), bin.join("hood")).unwrap();
        // The call-path profiler's example: a calls b and c, b calls d.
        std::fs::copy(
            repo().join("tests/c/calls_abcd.c"),
            dir.path().join("prog.c"),
        )
        .unwrap();
        // split (own time 60/30/10 %), instrumented so that `hood calls run` can use it too.
        let split = common::instrumented("split", dir.path(), &[], &[]);
        std::fs::copy(&split, dir.path().join("myprog")).unwrap();
        std::fs::copy(
            common::c_program("labels_udp"),
            dir.path().join("labels_udp"),
        )
        .unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Work {
            dir,
            bin,
            env: vec![("PATH".into(), path)],
            children: Vec::new(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn shell(&self, script: &str) -> Command {
        let mut c = common::command("bash");
        c.args(["-c", script]).current_dir(self.path());
        // As typed at a terminal: Ctrl-C and Ctrl-\ at their defaults, even when this test runs
        // as a background job of a non-interactive shell, which starts it with both ignored
        // (a program that inherits an ignored SIGINT never ends on the Ctrl-C the calls step
        // sends, and the step waited for it forever).
        // SAFETY: only async-signal-safe calls (signal) between fork and exec.
        unsafe {
            c.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.env("MANPAGER", "cat").env("PAGER", "cat");
        c
    }

    fn set(&mut self, k: &str, v: String) {
        self.env.retain(|(key, _)| key != k);
        self.env.push((k.into(), v));
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = &self.bin;
    }
}

/// What a finished command printed.
struct Ran {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run `cmd` to its end, or kill it after `limit` (a hang) and fail.
fn finish(cmd: &mut Command, what: &str, limit: Duration) -> Ran {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{what}` still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        ok: status.success(),
        code: status.code(),
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

const LIMIT: Duration = Duration::from_secs(300);

/// Third-party tools the documents use next to hood: missing, or crashing on their own, is
/// "not run here", not a failure of hood.
fn third_party(cmd: &str, ran: Option<&Ran>) -> Option<String> {
    let tool = cmd.split_whitespace().next()?;
    if !["go", "perf", "man"].contains(&tool) && !cmd.contains("&& man ") {
        return None;
    }
    let tool = if cmd.contains("&& man ") { "man" } else { tool };
    let found = common::command("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        return Some(format!("{tool} is not installed"));
    }
    let r = ran?;
    if tool == "perf"
        && (r.code.is_none_or(|c| c > 128)
            || r.stderr.contains("stack smashing")
            || r.stderr.contains("assertion failed"))
    {
        return Some(format!("perf crashed on its own: {}", r.stderr.trim()));
    }
    None
}

fn step(w: &mut Work, s: Step, cmd: &str) {
    match s {
        Step::CtrlC => {
            let mut c = w.shell(&format!("exec {cmd}"));
            let child = c
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn");
            std::thread::sleep(Duration::from_secs(1));
            // SAFETY: kill has no memory preconditions; the pid is our own child's.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let out = child.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "`{cmd}` after Ctrl-C:\n{}",
                text(&out)
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("hood: wrote"),
                "`{cmd}`:\n{}",
                text(&out)
            );
        }
        Step::FirstLines => {
            let mut child = w
                .shell(&format!("exec {cmd}"))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn");
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let first = lines.next().and_then(Result::ok).unwrap_or_default();
            let second = lines.next().and_then(Result::ok).unwrap_or_default();
            drop(lines);
            let out = child.wait_with_output().expect("wait");
            assert!(
                first.starts_with("top - ") && second.starts_with("Tasks:"),
                "`{cmd}` printed {first:?} {second:?}\n{}",
                text(&out)
            );
            assert!(
                out.status.success(),
                "`{cmd}` when its reader went:\n{}",
                text(&out)
            );
            assert!(
                !String::from_utf8_lossy(&out.stderr).contains("unavailable"),
                "`{cmd}`:\n{}",
                text(&out)
            );
        }
        Step::Serve => serve(w, cmd),
        Step::CallsGetReset => {
            // A `hood calls run` still running: calls_abcd with 10^9 repetitions.
            let bg = w
                .shell("exec hood calls run -o running.data -- ./prog 1000 1000000000")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn");
            let hood_pid = bg.id();
            w.children.push(bg);
            let deadline = Instant::now() + Duration::from_secs(30);
            let pid = loop {
                let kids =
                    std::fs::read_to_string(format!("/proc/{hood_pid}/task/{hood_pid}/children"))
                        .unwrap_or_default();
                if let Some(p) = kids.split_whitespace().next() {
                    let maps =
                        std::fs::read_to_string(format!("/proc/{p}/maps")).unwrap_or_default();
                    if maps.contains("libhood_rt") {
                        break p.to_string();
                    }
                }
                assert!(
                    Instant::now() < deadline,
                    "`hood calls run` did not start ./prog"
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            w.set("CALLS_PID", pid.clone());
            let script = "hood calls get -p $CALLS_PID && hood calls reset";
            let r = finish(&mut w.shell(script), script, LIMIT);
            assert!(r.ok, "`{script}` (PID {pid}):\n{}\n{}", r.stdout, r.stderr);
            assert!(
                r.stderr.contains("hood: wrote hood-calls.data ("),
                "{}",
                r.stderr
            );
            assert!(r.stderr.contains("will reset"), "{}", r.stderr);
            let mut bg = w.children.pop().expect("calls run");
            // SAFETY: kill has no memory preconditions; the pid is our own child's.
            unsafe { libc::kill(hood_pid as i32, libc::SIGINT) };
            let deadline = Instant::now() + LIMIT;
            let st = loop {
                if let Some(st) = bg.try_wait().expect("wait") {
                    break st;
                }
                if Instant::now() > deadline {
                    let _ = bg.kill();
                    let _ = bg.wait();
                    panic!("`hood calls run` did not end on Ctrl-C within {LIMIT:?}");
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            assert_eq!(
                st.code(),
                Some(130),
                "`hood calls run` passes Ctrl-C on: {st:?}"
            );
        }
    }
}

fn serve(w: &mut Work, cmd: &str) {
    let mut child = w
        .shell(&format!("exec {cmd}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    let _ = err.read_line(&mut first);
    if !first.contains("listening on http://127.0.0.1:9464") {
        let _ = child.kill();
        let _ = child.wait();
        if first.contains("in use") {
            println!("not run here: `{cmd}`: port 9464 is in use by another program ({first})");
            return;
        }
        panic!("`{cmd}` printed {first:?}");
    }
    let mut s = std::net::TcpStream::connect("127.0.0.1:9464").expect("connect");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    // SAFETY: kill has no memory preconditions; the pid is our own child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().expect("wait");
    assert!(
        reply.starts_with("HTTP/1.1 200"),
        "/healthz of `{cmd}`: {reply:?}"
    );
    assert!(st.code().is_some(), "`{cmd}` on SIGTERM: {st:?}");
}

/// Run every printed command in document order in one work directory (a report reads the
/// recording of the command before it, as a reader following the page would).
fn run_all(w: &mut Work, skip_root_only: bool) -> Vec<String> {
    let mut done = Vec::new();
    // Two busy processes for `-p 1234,5678` and `calls record -p 1234`: split running for an
    // hour (ended when the test ends). They must outlive every command before the last
    // `-p $PIDS` one: a minute was too short on a loaded machine ("no such process").
    for _ in 0..2 {
        let c = common::command(w.path().join("myprog"))
            .arg("3600000")
            .spawn()
            .expect("myprog");
        w.children.push(c);
    }
    let pids: Vec<String> = w.children.iter().map(|c| c.id().to_string()).collect();
    w.set("PIDS", pids.join(","));
    for p in runnable_commands() {
        let plan = plan_of(&p.cmd).expect("every_printed_command_has_a_plan");
        let at = format!("{}:{}", p.file, p.line);
        if skip_root_only && needs_root(&p.cmd) {
            continue;
        }
        let expected_fail = EXPECTED_TO_FAIL.iter().find(|(c, _)| *c == p.cmd);
        let (script, why) = match plan {
            Plan::NotRun(why) => {
                println!("{at}: not run: `{}`: {why}", p.cmd);
                continue;
            }
            Plan::Step(s) => {
                println!("{at}: `{}` (its own step)", p.cmd);
                step(w, s, &p.cmd);
                done.push(p.cmd.clone());
                continue;
            }
            Plan::AsWritten => (p.cmd.clone(), None),
            Plan::Variant(v, why) => (v.to_string(), Some(why)),
        };
        if let Some(why) = third_party(&p.cmd, None) {
            println!("not run here: `{}`: {why}", p.cmd);
            continue;
        }
        match why {
            Some(why) => println!("{at}: `{script}` for `{}`: {why}", p.cmd),
            None => println!("{at}: `{script}`"),
        }
        let r = finish(&mut w.shell(&script), &script, LIMIT);
        if let Some((_, until)) = expected_fail {
            assert!(
                !r.ok,
                "`{}` works now: remove it from EXPECTED_TO_FAIL ({until})",
                p.cmd
            );
            println!("{at}: fails as expected: {until}");
            continue;
        }
        if !r.ok {
            if let Some(why) = third_party(&p.cmd, Some(&r)) {
                println!("not run here: `{}`: {why}", p.cmd);
                continue;
            }
        }
        assert!(
            r.ok,
            "{at}: `{script}` failed ({:?}):\n--- stdout\n{}\n--- stderr\n{}",
            r.code, r.stdout, r.stderr
        );
        assert!(
            !r.stderr.contains("error"),
            "{at}: `{script}` printed an error:\n{}",
            r.stderr
        );
        done.push(p.cmd.clone());
    }
    done
}

/// Commands that need root (or CAP_PERFMON and paranoid <= 0): whole-system and labeled
/// recordings, tracefs, and their reports.
fn needs_root(cmd: &str) -> bool {
    cmd.contains(" -a")
        || cmd.contains("--labels")
        || cmd.contains("--irq-time")
        // Off-CPU recording samples tracepoints; its reports need such a recording.
        || cmd.contains("--off-cpu")
        // `hood calls run --sample` records with --off-cpu.
        || cmd.contains("--sample")
        || cmd.contains("--wall")
        || cmd.contains("--by reason")
        || cmd.contains("--by waker")
        // The README's reconciliation reads the --off-cpu recording made before it.
        || cmd.contains("--reconcile")
        || cmd.starts_with("hood start")
        || cmd == "hood stop"
        || cmd.starts_with("perf ")
        || cmd.contains("udp.pb.gz")
        || cmd.contains("p.data")
        || cmd == "hood serve"
        // Uprobes are defined in tracefs.
        || cmd.contains("--probe")
}

#[test]
fn printed_commands_run_as_written() {
    if !common::root("printed_commands_run_as_written") {
        return;
    }
    common::ensure_tracefs();
    let _lock = common::exclusive();
    let mut w = Work::new();
    let done = run_all(&mut w, false);
    // The recordings the commands wrote are what the documents say.
    for f in [
        "hood.data",
        "day.data",
        "hood-calls.data",
        "hood-trace.data",
        "split.data",
        "split.pb.gz",
        "hood.1",
        "_hood",
    ] {
        let p = w.path().join(f);
        assert!(
            std::fs::metadata(&p).is_ok_and(|m| m.len() > 0),
            "{} was not written",
            p.display()
        );
    }
    assert!(done.len() >= 30, "ran {} commands", done.len());
}

/// The commands an ordinary user can run (no whole-system or labeled recording), run as an
/// unprivileged user created by the test, in a directory of their own.
#[test]
fn printed_commands_run_as_an_ordinary_user() {
    if !common::root("printed_commands_run_as_an_ordinary_user") {
        return;
    }
    let (uid, gid) = common::other_user();
    // Build libhood_rt.so as root first (the user cannot write the target directory).
    let lib = common::runtime_release_dir().join("libhood_rt.so");
    let mut w = Work::new();
    for e in walk(w.path()) {
        std::os::unix::fs::lchown(&e, Some(uid), Some(gid)).unwrap();
    }
    w.set("HOOD_RT_LIB", lib.display().to_string());
    w.set("HOME", w.path().display().to_string());
    let user = |c: &mut Command| {
        c.uid(uid).gid(gid);
    };
    // Check by running `hood --version` as the user first: a clear message if they cannot
    // reach the binary.
    let mut c = w.shell("hood --version");
    user(&mut c);
    let r = finish(&mut c, "hood --version", LIMIT);
    assert!(r.ok, "as uid {uid}: {}", r.stderr);
    let mut ran = 0;
    for p in runnable_commands() {
        if needs_root(&p.cmd) || p.cmd.starts_with("cargo ") {
            continue;
        }
        let script = match plan_of(&p.cmd) {
            Some(Plan::AsWritten) => p.cmd.clone(),
            Some(Plan::Variant(v, _)) if !v.contains("$PIDS") => v.to_string(),
            _ => continue,
        };
        if third_party(&p.cmd, None).is_some() || EXPECTED_TO_FAIL.iter().any(|(c, _)| *c == p.cmd)
        {
            continue;
        }
        let mut c = w.shell(&script);
        user(&mut c);
        let r = finish(&mut c, &script, LIMIT);
        if !r.ok && third_party(&p.cmd, Some(&r)).is_some() {
            continue;
        }
        assert!(
            r.ok,
            "as an ordinary user, {}:{}: `{script}` failed:\n{}\n{}",
            p.file, p.line, r.stdout, r.stderr
        );
        ran += 1;
    }
    assert!(ran >= 15, "ran {ran} commands as an ordinary user");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
