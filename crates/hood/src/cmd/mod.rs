//! One module per subcommand. Each converts its clap arguments into a library config struct and
//! calls library code; nothing here parses kernel data itself.

pub mod annotate;
pub mod calls;
pub mod diff;
pub mod diff_calls;
pub mod monitor;
pub mod record;
pub mod report;
pub mod select;
pub mod serve;
pub mod trace;
pub mod values;

use std::process::ExitCode;

use crate::cli::Command;

/// Run one subcommand.
/// `d` as text safe for the terminal: what hood prints to standard error holds names, command
/// lines and paths from processes and files, whose control characters (an escape sequence, a
/// newline that would forge a line) are shown escaped ([`hood_report::safe::text`]).
pub fn clean(d: impl std::fmt::Display) -> String {
    let s = d.to_string();
    match hood_report::safe::text(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

/// A recorder's message on standard error, after `who: ` (`hood trace: `); the summary line
/// every recorder ends with (`wrote FILE (SIZE): ...`, [`hood_format::wrote_line`]) after
/// `hood: `, as `hood record` and `hood stop` print it.
pub fn say_as(who: &str, m: &str) {
    let who = if m.starts_with("wrote ") { "hood" } else { who };
    errln!("{who}: {}", clean(m));
}

pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Record(a) => record::run(&a),
        Command::Start(a) => record::detach::start(&a, &raw_args_after("start")),
        Command::Stop(a) => record::detach::stop(&a),
        Command::Report(a) => report::run(&a),
        Command::Annotate(a) => annotate::run(&a),
        Command::Diff(a) => diff::run(&a),
        Command::Ps(a) => monitor::ps::run(a),
        Command::Uptime(a) => monitor::uptime::run(a),
        Command::Top(a) => monitor::top::run(a),
        Command::Info(a) => monitor::info::run(a),
        Command::Calls(a) => calls::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Serve(a) => serve::run(&a),
    }
}

/// The raw command-line arguments after the subcommand `name` (for re-running it detached).
fn raw_args_after(name: &str) -> Vec<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().position(|a| a == name) {
        Some(i) => args[i + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// Where a report goes: the `-o` file (written beside its path and put in place whole by
/// [`Output::finish`], so a report that fails leaves the old file as it was; see
/// [`hood_format::OutputFile`]), or standard output. The one way every report command opens
/// its output.
pub enum Output {
    /// `-o FILE`.
    File(hood_format::OutputFile),
    /// No `-o`.
    Stdout(std::io::BufWriter<std::io::StdoutLock<'static>>),
}

impl Output {
    /// Open `path`, or standard output without one.
    pub fn open(path: Option<&std::path::Path>) -> anyhow::Result<Output> {
        Ok(match path {
            Some(p) => {
                let f = hood_format::OutputFile::create(p)?;
                for s in f.stale() {
                    errln!("hood: {}", clean(s));
                }
                Output::File(f)
            }
            None => Output::Stdout(std::io::BufWriter::new(std::io::stdout().lock())),
        })
    }

    /// Flush, and put the file in place.
    pub fn finish(self) -> anyhow::Result<()> {
        use std::io::Write;
        match self {
            Output::File(f) => f.commit()?,
            Output::Stdout(mut s) => s.flush()?,
        }
        Ok(())
    }
}

impl std::io::Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::File(f) => f.write(buf),
            Output::Stdout(s) => s.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Output::File(f) => f.write_all(buf),
            Output::Stdout(s) => s.write_all(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::File(f) => f.flush(),
            Output::Stdout(s) => s.flush(),
        }
    }
}

/// Refuse to write binary output (`--format pprof`, `firefox`) to a terminal, where it would
/// print as garbage: with `-o` or a redirected standard output it goes ahead.
pub fn refuse_binary_on_terminal(
    output: Option<&std::path::Path>,
    format: &str,
    example: &str,
) -> anyhow::Result<()> {
    use std::io::IsTerminal;
    if output.is_none() && std::io::stdout().is_terminal() {
        anyhow::bail!(
            "--format {format} writes gzip-compressed binary data, not text for a terminal: add -o {example} or redirect standard output to a file"
        );
    }
    Ok(())
}

/// Say where the recordings are that hoods killed while writing `path` left beside it (a
/// report of `path` reads the file from before them), and how to read them.
pub fn note_killed_writers(path: &std::path::Path, kind: hood_format::FileKind) {
    for t in hood_format::left_by_killed_writers(path) {
        errln!(
            "hood: note: {} is the recording of a hood killed while writing {}, which is read as it was before; read the killed one with `{}`",
            t.display(),
            path.display(),
            hood_format::read_command(kind, &t)
        );
    }
}

/// Reword an error opening `path` when the file does not exist: the OS error once, then `fix`
/// (which names the way this command takes its file). Other errors pass unchanged.
pub fn missing_file(err: anyhow::Error, path: &std::path::Path, fix: &str) -> anyhow::Error {
    let not_found = err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    });
    if not_found && !path.exists() {
        anyhow::anyhow!("{}: no such file; {fix}", path.display())
    } else {
        err
    }
}
