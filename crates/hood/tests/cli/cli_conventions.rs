//! Conventions a perf or ripgrep user expects (issue 15): `hood --generate man|complete-*`
//! from the clap definitions, `hood --version` with commit and build date, one page listing
//! every `HOOD_*` variable, and variables with values hood does not understand refused.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common;
use common::{hood, listed_in_help, repo, run, text};

/// Every subcommand, nested ones as "calls report".
const SUBCOMMANDS: &[&str] = &[
    "record",
    "start",
    "stop",
    "report",
    "annotate",
    "diff",
    "ps",
    "uptime",
    "top",
    "info",
    "calls",
    "calls run",
    "calls record",
    "calls get",
    "calls reset",
    "calls report",
    "trace",
    "trace record",
    "trace report",
    "serve",
];

fn generate(kind: &str) -> String {
    let out = run(hood().args(["--generate", kind]));
    assert!(out.status.success(), "--generate {kind}:\n{}", text(&out));
    assert!(out.stderr.is_empty(), "--generate {kind}:\n{}", text(&out));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn the_subcommand_list_matches_the_help() {
    let mut from_help = listed_in_help(&[]);
    for parent in ["calls", "trace"] {
        for sub in listed_in_help(&[parent]) {
            from_help.push(format!("{parent} {sub}"));
        }
    }
    let mine: BTreeSet<String> = SUBCOMMANDS.iter().map(|s| s.to_string()).collect();
    let help: BTreeSet<String> = from_help.into_iter().collect();
    assert_eq!(mine, help, "update SUBCOMMANDS in this test");
}

#[test]
fn man_page_renders_and_documents_every_subcommand_exit_status_and_variable() {
    let page = generate("man");
    assert!(
        page.lines().any(|l| l.starts_with(".TH hood 1 ")),
        "no .TH title line:\n{}",
        &page[..200.min(page.len())]
    );
    for sub in SUBCOMMANDS {
        let heading = format!(".SH \"HOOD {}\"", sub.to_uppercase());
        assert!(page.contains(&heading), "man page lacks {heading}");
    }
    for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH SYNOPSIS"] {
        assert!(page.contains(section), "man page lacks {section}");
    }
    // Options of subcommands are there, with their help text.
    assert!(
        page.contains("\\-\\-min\\-percent"),
        "report's --min-percent missing"
    );
    assert!(
        page.contains("\\-\\-irq\\-time"),
        "top's --irq-time missing"
    );

    // man renders it without warnings and the text reads right.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hood.1");
    std::fs::write(&file, &page).unwrap();
    let Ok(out) = common::command("man")
        .args(["--warnings", "-l"])
        .arg(&file)
        .env("MANWIDTH", "100")
        .env("MAN_KEEP_FORMATTING", "0")
        .stdin(Stdio::null())
        .output()
    else {
        eprintln!(
            "not checked: the man rendering (man is not installed; the page text was checked)"
        );
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "man -l failed:\n{err}");
    assert!(err.trim().is_empty(), "man warns:\n{err}");
    // Overstrike (bold/underline as c\bc) may survive; strip it.
    let mut rendered = String::new();
    for c in String::from_utf8_lossy(&out.stdout).chars() {
        if c == '\u{8}' {
            rendered.pop();
        } else {
            rendered.push(c);
        }
    }
    for must in [
        "HOOD CALLS REPORT",
        "EXIT STATUS",
        "HOOD_CLOCK",
        "--format",
        "hood --generate man",
        "EXAMPLES",
        "hood record --off-cpu -- ./myprog",
        "HOOD TOP KEYS",
        "filter by text",
    ] {
        assert!(
            rendered.contains(must),
            "rendered page lacks {must:?}:\n{rendered}"
        );
    }
    // Markdown's backticks are set in bold, the test suite's variables are left to
    // docs/cli.md, and the footer's source and date stay apart.
    assert!(!rendered.contains('`'), "backticks shown literally");
    assert!(
        !rendered.contains("HOOD_BLESS"),
        "a test-suite variable is listed"
    );
    let footer = rendered
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap();
    let words: Vec<&str> = footer.split_whitespace().collect();
    assert_eq!(
        words.len(),
        4,
        "footer should read `hood VERSION DATE hood(1)`: {footer:?}"
    );
    assert_eq!(words[3], "hood(1)", "{footer:?}");
}

#[test]
fn bash_completion_loads_and_completes_subcommands_and_options() {
    let script = generate("complete-bash");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hood.bash");
    std::fs::write(&file, &script).unwrap();
    let out = run(common::command("bash").arg("-n").arg(&file));
    assert!(out.status.success(), "bash -n:\n{}", text(&out));
    // Complete `hood rep<TAB>`, `hood calls r<TAB>` and `hood report --for<TAB>` as bash would.
    let complete = |words: &str, cword: usize| -> Vec<String> {
        let prog = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{words}'; \
             COMP_POINT=${{#COMP_LINE}}; _hood hood \"${{COMP_WORDS[$COMP_CWORD]}}\" \
             \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let out = run(common::command("bash").arg("-c").arg(&prog));
        assert!(out.status.success(), "{words}:\n{}", text(&out));
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(complete("hood rep", 1), ["report"]);
    let calls = complete("hood calls re", 2);
    assert!(
        calls.contains(&"reset".to_string()) && calls.contains(&"report".to_string()),
        "{calls:?}"
    );
    assert_eq!(complete("hood report --for", 2), ["--format"]);
    // Hidden older spellings and test hooks are not offered (`ps --task` is `-H -p`).
    assert_eq!(complete("hood ps --t", 2), ["--tid", "--threads"]);
    assert!(complete("hood ps --pro", 2).is_empty());
    let top = complete("hood top -", 2);
    assert!(
        top.contains(&"-p".to_string()) && !top.contains(&"-d".to_string()),
        "{top:?}"
    );
    let formats = complete("hood report --format ''", 3);
    for f in ["text", "json", "collapsed", "svg", "pprof", "firefox"] {
        assert!(formats.contains(&f.to_string()), "{f} not in {formats:?}");
    }
}

#[test]
fn zsh_and_fish_completions_name_every_subcommand() {
    for (kind, head, shell) in [
        ("complete-zsh", "#compdef hood", "zsh"),
        ("complete-fish", "complete -c hood", "fish"),
    ] {
        let script = generate(kind);
        assert!(script.contains(head), "{kind} lacks {head:?}");
        for sub in SUBCOMMANDS {
            let last = sub.rsplit(' ').next().unwrap();
            assert!(script.contains(last), "{kind} lacks {sub}");
        }
        // A syntax check where the shell is installed.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hood.sh");
        std::fs::write(&file, &script).unwrap();
        match common::command(shell).arg("-n").arg(&file).output() {
            Ok(out) => {
                assert!(out.status.success(), "{shell} -n:\n{}", text(&out));
                if shell == "fish" {
                    // fish completes from a script without a terminal: `hood rep<TAB>`.
                    let out = run(common::command("fish")
                        .arg("-c")
                        .arg(format!("source {}; complete -C 'hood rep'", file.display())));
                    let got = String::from_utf8_lossy(&out.stdout);
                    assert!(got.starts_with("report\t"), "fish completes {got:?}");
                }
            }
            Err(_) => eprintln!("not checked: {shell} -n ({shell} is not installed)"),
        }
    }
}

#[test]
fn version_names_the_commit_and_build_date() {
    let out = run(hood().arg("--version"));
    assert!(out.status.success(), "{}", text(&out));
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let rest = v
        .strip_prefix(&format!("hood {} (", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{v:?}"));
    let (commit, date) = rest
        .strip_suffix(')')
        .and_then(|r| r.split_once(", built "))
        .unwrap_or_else(|| panic!("{v:?}"));
    let date_ok = date.len() == 10
        && date.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    assert!(date_ok, "build date {date:?} in {v:?}");
    let head = common::command("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(h) => assert_eq!(commit, format!("commit {h}"), "{v:?}"),
        None => assert_eq!(commit, "unknown commit", "{v:?}"),
    }
}

/// The build script of the hood binary under test (the newest, if several were built).
fn build_script() -> PathBuf {
    let target = Path::new(env!("CARGO_BIN_EXE_hood")).parent().unwrap();
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(target.join("build"))
        .expect("target/*/build")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("hood-"))
        .map(|e| e.path().join("build-script-build"))
        .filter(|p| p.is_file())
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .collect();
    found.sort();
    found.pop().expect("hood's build-script-build").1
}

#[test]
fn the_build_script_works_outside_git_and_honours_source_date_epoch() {
    // A directory that is no git checkout, as an unpacked source tarball is.
    let dir = tempfile::tempdir().unwrap();
    // Without OUT_DIR and TARGET: the script only prints the version lines, and writes no
    // runtime library over the one the hood under test carries.
    let out = run(common::command(build_script())
        .env_remove("OUT_DIR")
        .env_remove("TARGET")
        .env("CARGO_MANIFEST_DIR", dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .env("SOURCE_DATE_EPOCH", "951782400"));
    assert!(out.status.success(), "{}", text(&out));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("cargo:rustc-env=BUILD_COMMIT=unknown commit"),
        "{s}"
    );
    // 951782400 is 2000-02-29 00:00 UTC: a leap day checks the calendar arithmetic.
    assert!(s.contains("cargo:rustc-env=BUILD_DATE=2000-02-29"), "{s}");
    let out = run(common::command(build_script())
        .env_remove("OUT_DIR")
        .env_remove("TARGET")
        .env("CARGO_MANIFEST_DIR", dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .env("SOURCE_DATE_EPOCH", "0"));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("BUILD_DATE=1970-01-01"),
        "{}",
        text(&out)
    );
}

/// `HOOD_[A-Z0-9_]+` names in the Rust sources of the workspace (code and tests).
fn variables_in_sources() -> BTreeSet<String> {
    fn walk(dir: &Path, found: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, found);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let s = std::fs::read_to_string(&p).unwrap_or_default();
                let b = s.as_bytes();
                let mut i = 0;
                while let Some(at) = s[i..].find("HOOD_") {
                    let start = i + at;
                    let mut end = start + 5;
                    while end < b.len()
                        && (b[end].is_ascii_uppercase()
                            || b[end].is_ascii_digit()
                            || b[end] == b'_')
                    {
                        end += 1;
                    }
                    let name = s[start..end].trim_end_matches('_');
                    if name.len() > 5 && (start == 0 || !b[start - 1].is_ascii_alphanumeric()) {
                        found.insert(name.to_string());
                    }
                    i = end;
                }
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(&repo().join("crates"), &mut found);
    found
}

#[test]
fn every_variable_the_code_reads_is_documented_in_docs_and_the_man_page() {
    let vars = variables_in_sources();
    assert!(
        vars.contains("HOOD_CLOCK") && vars.contains("HOOD_TIMING"),
        "{vars:?}"
    );
    let doc = std::fs::read_to_string(repo().join("docs/cli.md")).unwrap();
    let man = generate("man");
    // The test suite's own variables are for readers of the repository: docs/cli.md only.
    let suite = [
        "HOOD_REQUIRE_PRIVILEGED",
        "HOOD_BLESS",
        "HOOD_PERF_PERMISSION_INNER",
        "HOOD_PROC_TEST_INNER",
    ];
    for v in &vars {
        assert!(
            doc.contains(&format!("`{v}`")),
            "docs/cli.md does not document {v}"
        );
        let in_man = man.contains(&format!("\\fB{v}\\fR"));
        if suite.contains(&v.as_str()) {
            assert!(!in_man, "the man page lists the test suite's {v}");
        } else {
            assert!(in_man, "the man page does not document {v}");
        }
    }
}

#[test]
fn a_variable_with_a_value_hood_does_not_understand_is_refused() {
    for (var, bad, good, says) in [
        ("HOOD_CLOCK", "mono", "monotonic", "use tsc or monotonic"),
        ("HOOD_COMPENSATE", "no", "0", "use 1 or 0"),
        (
            "HOOD_MAX_PATHS",
            "lots",
            "4096",
            "whole number from 2 to 16777216",
        ),
        (
            "HOOD_MAX_DEPTH",
            "0",
            "64",
            "whole number from 1 to 1048576",
        ),
    ] {
        let out = run(hood().arg("uptime").env(var, bad));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={bad}:\n{}", text(&out));
        assert!(out.stdout.is_empty(), "{var}={bad} ran anyway");
        assert_eq!(err.lines().count(), 1, "one line:\n{err}");
        assert!(
            err.contains(&format!("{var}=\"{bad}\"")) && err.contains(says),
            "{var}={bad}: names the variable, its value and the values it takes:\n{err}"
        );
        let out = run(hood().arg("uptime").env(var, good));
        assert!(out.status.success(), "{var}={good}:\n{}", text(&out));
    }
}

/// A program run without hood, with the runtime preloaded, names a HOOD_CLOCK it does not
/// understand on its standard error and still runs.
#[test]
fn the_runtime_names_a_clock_it_does_not_understand() {
    let dir = tempfile::tempdir().unwrap();
    let prog = common::instrumented("calls_known", dir.path(), &[], &[]);
    let lib = common::runtime_release_dir().join("libhood_rt.so");
    let run_with = |clock: &str| {
        run(common::command(&prog)
            .env("LD_PRELOAD", &lib)
            .env("HOOD_SHM_DIR", dir.path())
            .env("HOOD_CLOCK", clock))
    };
    let out = run_with("mono");
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("HOOD_CLOCK=mono is not understood: use tsc or monotonic"),
        "{err}"
    );
    let out = run_with("monotonic");
    assert!(out.stderr.is_empty(), "{}", text(&out));
}

/// README.md, docs/*.md, every `--help` and the man page speak the user's words: no internal
/// names of the source works ("seed 000", "§2.8.2", "the thesis", the MINIX tool names), and
/// no links to files outside the repository. The works are named once, in README's
/// Background section.
#[test]
fn user_facing_text_speaks_the_users_words_and_links_only_inside_the_repository() {
    let mut texts: Vec<(String, String)> = Vec::new();
    let mut md = vec![repo().join("README.md")];
    for e in std::fs::read_dir(repo().join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            md.push(e.path());
        }
    }
    for p in &md {
        texts.push((p.display().to_string(), std::fs::read_to_string(p).unwrap()));
    }
    let mut helps = vec![vec![]];
    for sub in SUBCOMMANDS {
        helps.push(sub.split(' ').collect::<Vec<_>>());
    }
    for args in helps {
        let out = run(hood().args(&args).arg("--help"));
        assert!(out.status.success(), "{args:?} --help:\n{}", text(&out));
        texts.push((
            format!("hood {} --help", args.join(" ")),
            String::from_utf8_lossy(&out.stdout).to_string(),
        ));
    }
    texts.push(("the man page".into(), generate("man")));
    for (what, body) in &texts {
        let lower = body.to_lowercase();
        for word in [
            "seed 0",
            "seed-0",
            "§",
            "the thesis",
            "sprofalyze",
            "cprofalyze",
            "design.md",
        ] {
            assert!(!lower.contains(word), "{what} says {word:?}");
        }
    }
    // Relative markdown links resolve to files of the repository.
    let root = repo().canonicalize().unwrap();
    for p in &md {
        let body = std::fs::read_to_string(p).unwrap();
        for (i, _) in body.match_indices("](") {
            let rest = &body[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            let resolved = p.parent().unwrap().join(target);
            let inside = resolved.canonicalize().is_ok_and(|r| r.starts_with(&root));
            assert!(
                inside,
                "{} links {target}, which is not a file of the repository",
                p.display()
            );
        }
    }
    // The source works are named, by their titles, in README's Background section.
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let background = readme
        .split("## Background")
        .nth(1)
        .expect("README has a Background section");
    for title in [
        "Building Performance Measurement Tools for the MINIX 3 Operating System",
        "Hardware Profiling of Kernels",
        "Process-labeled kernel profiling",
        "HelenOS monitoring",
    ] {
        assert!(background.contains(title), "Background lacks {title:?}");
    }
}

/// docs/cli.md's exit statuses (issue 30): 1 when the command ran but found nothing to show —
/// a `--pid` no sample matches, a function `annotate` does not find, a program `calls run` or
/// `trace record` found nothing in (the same for both) — and the command's status when it
/// failed.
#[test]
fn nothing_found_exits_1_as_docs_cli_md_says() {
    if !common::privileged("nothing_found_exits_1_as_docs_cli_md_says") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("spin.data");
    let spinner = common::c_program("spinner");
    let out = run(hood()
        .args(["record", "-o"])
        .arg(&rec)
        .arg("--")
        .arg(&spinner)
        .arg("300"));
    assert!(out.status.success(), "{}", text(&out));
    let report = |extra: &[&str]| run(hood().args(["report", "-i"]).arg(&rec).args(extra));
    let out = report(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // pid_max is at most 2^22.
    let out = report(&["--pid", "4999999"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no sample in") && text(&out).contains("--pid 4999999"));
    let out = report(&["--comm", "no-such-comm"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = run(hood()
        .args(["annotate", "-i"])
        .arg(&rec)
        .arg("no_such_function_anywhere"));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no function named"), "{}", text(&out));
    // A usage error stays 2.
    let out = report(&["--min-percent", "200"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
