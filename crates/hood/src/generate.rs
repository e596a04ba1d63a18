//! `hood --generate man|complete-bash|complete-zsh|complete-fish`: the man page and the shell
//! completions, generated from the clap definitions so they never drift from the CLI.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::{Cli, Generate};
use crate::environment::{Values, EXIT_STATUS, VARS};

/// Write what `kind` asks for to `out`.
pub fn generate(kind: Generate, out: &mut dyn Write) -> std::io::Result<()> {
    let cmd = Cli::command();
    let shell = match kind {
        Generate::Man => return man(cmd, out),
        Generate::CompleteBash => clap_complete::Shell::Bash,
        Generate::CompleteZsh => clap_complete::Shell::Zsh,
        Generate::CompleteFish => clap_complete::Shell::Fish,
    };
    // clap_complete offers hidden options too (`ps -t/--task`, the test hooks): the
    // completions are made from a copy of the command line without them.
    let mut cmd = without_hidden_options(&cmd);
    // clap_complete panics when its output fails; write to memory, then report write errors
    // (a reader that went away early) like every other output.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "hood", &mut script);
    out.write_all(&script)
}

/// `cmd` and its subcommands with the options `--help` does not list left out: the older
/// spellings kept for scripts and the test hooks are not offered for completion. Hidden
/// positional arguments stay (`hood calls report FILE`: a file is completed either way,
/// and `-i`'s conflict with it must find it). Made from the unbuilt command, so clap adds
/// `--help` and `--version` itself; what the completions use is copied (names, visible
/// aliases, descriptions, options with their values, conflicts and hints), not how
/// parsing and help behave.
fn without_hidden_options(cmd: &clap::Command) -> clap::Command {
    let mut c = clap::Command::new(cmd.get_name().to_string())
        .hide(cmd.is_hide_set())
        .visible_aliases(
            cmd.get_visible_aliases()
                .map(str::to_string)
                .collect::<Vec<_>>(),
        );
    if let Some(about) = cmd.get_about() {
        c = c.about(about.clone());
    }
    if let Some(v) = cmd.get_version() {
        c = c.version(v.to_string());
    }
    if let Some(v) = cmd.get_long_version() {
        c = c.long_version(v.to_string());
    }
    c = c.args(
        cmd.get_arguments()
            .filter(|a| a.is_positional() || !a.is_hide_set())
            .cloned(),
    );
    // The groups are the ones clap's derive makes of each struct's fields (hood names none
    // of its own, and no option refers to one); they would name the options left out.
    c.subcommands(cmd.get_subcommands().map(without_hidden_options))
}

/// One page, `hood(1)`: the top level, then a section per subcommand (and per nested
/// subcommand: `hood calls report`) with its synopsis and options, then EXIT STATUS and
/// ENVIRONMENT.
fn man(cmd: clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    // Rendered whole first: `code` in help texts becomes bold, as man pages set commands.
    let mut page = Vec::new();
    man_roff(cmd, &mut page)?;
    let page = String::from_utf8_lossy(&page);
    for line in page.lines() {
        writeln!(out, "{}", code_spans(line))?;
    }
    Ok(())
}

fn man_roff(mut cmd: clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    cmd.build();
    // The footer holds the source and the date side by side: a short source keeps them apart
    // at 80 columns (the commit is in VERSION).
    let top = clap_mangen::Man::new(cmd.clone())
        .date(env!("BUILD_DATE"))
        .source(concat!("hood ", env!("CARGO_PKG_VERSION")))
        .manual("User Commands");
    top.render_title(out)?;
    top.render_name_section(out)?;
    top.render_synopsis_section(out)?;
    top.render_description_section(out)?;
    top.render_options_section(out)?;
    // clap_mangen's list points to one page per subcommand (hood-report(1)); here they are
    // sections of this page.
    writeln!(out, ".SH SUBCOMMANDS")?;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        writeln!(out, ".TP\n\\fBhood {}\\fR", sub.get_name())?;
        if let Some(about) = sub.get_about() {
            writeln!(out, "{}", roff_text(&about.to_string()))?;
        }
    }
    for sub in cmd.get_subcommands() {
        subcommand(sub, out)?;
    }
    top_keys(out)?;
    examples(out)?;
    exit_and_environment(out)?;
    top.render_version_section(out)?;
    Ok(())
}

/// Common tasks, one command each (the README says more).
const EXAMPLES: &[(&str, &str)] = &[
    ("Profile a command, then see where its CPU time went (kernel and user stacks):", "hood record -- ./myprog args\nhood report"),
    ("Profile the whole machine for 10 seconds, then only one process:", "hood record -a -d 10\nhood report --pid 1234"),
    ("Also record where threads wait and who woke them; show wall-clock time:", "hood record --off-cpu -- ./myprog\nhood report --wall\nhood report --by waker"),
    ("A flame graph, a pprof profile, a Firefox Profiler file:", "hood report --format svg -o flame.svg\nhood report --format pprof -o prof.pb.gz\nhood report --format firefox -o prof.json.gz"),
    ("Calls and own time per call path of a program built with -finstrument-functions:", "gcc -O2 -g -finstrument-functions -o prog prog.c\nhood calls run -- ./prog\nhood calls report"),
    ("A timestamped trace of every call, with context switches:", "hood trace record -- ./prog\nhood trace report --paths"),
    ("Watch the system; one batch refresh as JSON:", "hood top\nhood top -b -n 1 --json"),
];

fn examples(out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, ".SH EXAMPLES")?;
    for (what, cmds) in EXAMPLES {
        writeln!(out, ".PP\n{}\n.PP\n.RS 4\n.nf", roff_text(what))?;
        for c in cmds.lines() {
            writeln!(out, "{}", roff_text(c))?;
        }
        writeln!(out, ".fi\n.RE")?;
    }
    Ok(())
}

/// The keys of `hood top`'s full-screen view, as its own help (`?`) lists them.
fn top_keys(out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, ".SH \"HOOD TOP KEYS\"\n.nf")?;
    let keys = hood_tui::KEYS.iter().skip(1);
    for line in keys.take_while(|l| !l.starts_with("any key")) {
        writeln!(out, "{}", roff_text(line))?;
    }
    writeln!(out, ".fi")?;
    Ok(())
}

/// A roff line with each `code` span set in bold (lines with an odd number of backticks are
/// left as they are).
fn code_spans(line: &str) -> String {
    if !line.contains('`') || line.matches('`').count() % 2 == 1 {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 16);
    for (i, part) in line.split('`').enumerate() {
        if i > 0 {
            out.push_str(if i % 2 == 1 { "\\fB" } else { "\\fR" });
        }
        out.push_str(part);
    }
    out
}

/// A subcommand's own section: its name and about as a heading, then its synopsis and options
/// (rendered by clap_mangen, with their headings lowered one level).
fn subcommand(cmd: &clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    if cmd.is_hide_set() || cmd.get_name() == "help" {
        return Ok(());
    }
    let name = cmd
        .get_bin_name()
        .map(str::to_string)
        .unwrap_or_else(|| format!("hood {}", cmd.get_name()));
    writeln!(out, ".SH \"{}\"", roff_text(&name.to_uppercase()))?;
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        writeln!(out, "{}", roff_text(&about.to_string()))?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render_synopsis_section(&mut buf)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut buf)?;
    }
    let text = String::from_utf8_lossy(&buf).replace(".SH ", ".SS ");
    out.write_all(text.as_bytes())?;
    for sub in cmd.get_subcommands() {
        subcommand(sub, out)?;
    }
    Ok(())
}

fn exit_and_environment(out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, ".SH \"EXIT STATUS\"")?;
    for (status, meaning) in EXIT_STATUS {
        writeln!(out, ".TP\n\\fB{status}\\fR\n{}", roff_text(meaning))?;
    }
    writeln!(out, ".SH ENVIRONMENT")?;
    writeln!(
        out,
        "hood refuses a set variable whose value it does not understand, naming the values it takes."
    )?;
    // The test suite's own variables are for readers of the repository (docs/cli.md).
    for v in VARS.iter().filter(|v| !v.what.starts_with("test suite:")) {
        let values = match v.values {
            Values::Any => String::new(),
            _ => format!(" ({})", v.shown),
        };
        writeln!(
            out,
            ".TP\n\\fB{}\\fR{}\n{}",
            v.name,
            roff_text(&values),
            roff_text(v.what)
        )?;
    }
    writeln!(out, ".SH \"SEE ALSO\"")?;
    writeln!(
        out,
        "perf(1), perf_event_open(2), proc(5); the guides under docs/ in hood's source tree."
    )?;
    Ok(())
}

/// Text safe in roff body lines: backslashes escaped, no line starting with a control
/// character, and the minus of options as a real minus.
fn roff_text(s: &str) -> String {
    s.lines()
        .map(|l| {
            let l = l.replace('\\', "\\e").replace('-', "\\-");
            if l.starts_with(['.', '\'']) {
                format!("\\&{l}")
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::{code_spans, generate, roff_text};
    use crate::cli::{Cli, Generate};
    use clap::CommandFactory;

    /// Every option of `cmd` and its subcommands: (long name, hidden).
    fn longs(cmd: &clap::Command, out: &mut Vec<(String, bool)>) {
        for a in cmd.get_arguments().filter(|a| !a.is_positional()) {
            if let Some(l) = a.get_long() {
                out.push((l.to_string(), a.is_hide_set()));
            }
            for alias in a.get_all_aliases().unwrap_or_default() {
                let visible = a.get_visible_aliases().unwrap_or_default();
                out.push((
                    alias.to_string(),
                    a.is_hide_set() || !visible.contains(&alias),
                ));
            }
        }
        for s in cmd.get_subcommands() {
            longs(s, out);
        }
    }

    /// The completion scripts offer every option `--help` lists and none it hides (an older
    /// spelling such as `hood ps --task`, a test hook such as `--proc-root`), in the words
    /// each shell's script spells options with.
    #[test]
    fn completions_offer_the_listed_options_only() {
        let mut all = Vec::new();
        longs(&Cli::command(), &mut all);
        let shown: Vec<&str> = all.iter().filter(|a| !a.1).map(|a| a.0.as_str()).collect();
        let hidden: Vec<&str> = all
            .iter()
            .filter(|a| a.1 && !shown.contains(&a.0.as_str()))
            .map(|a| a.0.as_str())
            .collect();
        for must in ["task", "interval", "all", "proc-root", "drain-delay-ms"] {
            assert!(
                hidden.contains(&must),
                "{must} is no longer hidden: {hidden:?}"
            );
        }
        // How each script spells an option it offers.
        type Spelling = fn(&str) -> String;
        let shells: [(Generate, Spelling); 3] = [
            (Generate::CompleteBash, |l| format!("--{l} ")),
            (Generate::CompleteZsh, |l| format!("--{l}=[")),
            (Generate::CompleteFish, |l| format!("-l {l} ")),
        ];
        for (kind, word) in shells {
            let mut text = Vec::new();
            generate(kind, &mut text).unwrap();
            let text = String::from_utf8(text).unwrap();
            let words = |l: &str| {
                let w = word(l);
                // zsh spells a flag without a value `--flag[help]`.
                text.contains(&w) || text.contains(&format!("--{l}["))
            };
            for l in &shown {
                assert!(words(l), "{kind:?}: --{l} not offered");
            }
            for l in &hidden {
                assert!(!words(l), "{kind:?}: hidden --{l} offered");
            }
        }
        // The short forms hidden with them: `hood ps` offers -H, not -t or -a.
        let mut bash = Vec::new();
        generate(Generate::CompleteBash, &mut bash).unwrap();
        let bash = String::from_utf8(bash).unwrap();
        let ps = bash
            .lines()
            .skip_while(|l| l.trim() != "hood__subcmd__ps)")
            .find(|l| l.trim_start().starts_with("opts="))
            .expect("hood ps in the bash script");
        assert!(ps.contains(" -H ") && ps.contains("--tid "), "{ps}");
        assert!(!ps.contains(" -t ") && !ps.contains(" -a "), "{ps}");
    }

    #[test]
    fn code_spans_are_bold() {
        assert_eq!(
            code_spans("run `hood stop` now"),
            "run \\fBhood stop\\fR now"
        );
        assert_eq!(code_spans("odd ` tick"), "odd ` tick");
    }

    #[test]
    fn roff_text_escapes_controls() {
        assert_eq!(roff_text(".hidden"), "\\&.hidden");
        assert_eq!(roff_text("a\\b --x"), "a\\eb \\-\\-x");
    }
}
