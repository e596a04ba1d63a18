//! What kind of file a recording is, from its first bytes, and the one message for a file
//! given to a command that does not read its kind.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use hood_format::untrusted::{self, Policy};
use hood_format::{FileKind, FILE_HEADER_LEN};

use crate::LoadError;

/// What a file holds, as its header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A sampled profile (`hood record`, `hood start`, serve's profile endpoint).
    Profile,
    /// A perf.data file (`perf record`), read as a sampled profile.
    PerfData,
    /// A call-path recording (`hood calls run`, `get`, `--probe`).
    Calls,
    /// An event trace (`hood trace record`).
    Trace,
    /// A segment of a monitor store (`hood top --record`).
    Monitor,
    /// A hood file of a kind this hood does not know (a newer hood wrote it).
    Newer(u16),
}

impl Kind {
    fn of(kind: FileKind) -> Kind {
        match kind {
            FileKind::Profile => Kind::Profile,
            FileKind::Calls => Kind::Calls,
            FileKind::Trace => Kind::Trace,
            FileKind::Monitor => Kind::Monitor,
            FileKind::Unknown(c) => Kind::Newer(c),
        }
    }

    /// What the file is and what wrote it, for messages: "a call-path recording (hood calls
    /// run)".
    pub fn words(self) -> String {
        match self {
            Kind::Profile => "a sampled-profile recording (hood record)".into(),
            Kind::PerfData => "a perf.data file (perf record)".into(),
            Kind::Calls => "a call-path recording (hood calls run)".into(),
            Kind::Trace => "an event-trace recording (hood trace record)".into(),
            Kind::Monitor => "a monitor-store segment (hood top --record)".into(),
            Kind::Newer(c) => format!("a hood file of kind {c}, which a newer hood wrote"),
        }
    }

    /// The command that reads a file of this kind at `path`.
    fn reader(self, path: &Path) -> String {
        match self {
            Kind::PerfData => hood_format::read_command(FileKind::Profile, path),
            Kind::Profile => hood_format::read_command(FileKind::Profile, path),
            Kind::Calls => hood_format::read_command(FileKind::Calls, path),
            Kind::Trace => hood_format::read_command(FileKind::Trace, path),
            Kind::Monitor => "hood top --replay DIR".into(),
            Kind::Newer(c) => FileKind::Unknown(c).reader_command().into(),
        }
    }
}

/// A command that reads recordings: what it is called and which kinds it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `hood report`.
    Report,
    /// `hood annotate`.
    Annotate,
    /// `hood diff` (two profiles, two call-path recordings or two traces).
    Diff,
    /// `hood calls report`.
    CallsReport,
    /// `hood trace report`.
    TraceReport,
}

impl Command {
    /// The command's words, as typed.
    pub fn name(self) -> &'static str {
        match self {
            Command::Report => "hood report",
            Command::Annotate => "hood annotate",
            Command::Diff => "hood diff",
            Command::CallsReport => "hood calls report",
            Command::TraceReport => "hood trace report",
        }
    }

    /// Whether the command reads files of `kind`.
    pub fn reads(self, kind: Kind) -> bool {
        match self {
            Command::Report | Command::Annotate => matches!(kind, Kind::Profile | Kind::PerfData),
            Command::Diff => matches!(
                kind,
                Kind::Profile | Kind::PerfData | Kind::Calls | Kind::Trace
            ),
            Command::CallsReport => kind == Kind::Calls,
            Command::TraceReport => kind == Kind::Trace,
        }
    }

    fn reads_words(self) -> &'static str {
        match self {
            Command::Report | Command::Annotate => "sampled profiles (hood record, perf record)",
            Command::Diff => "profiles, call-path recordings or event traces",
            Command::CallsReport => "call-path recordings (hood calls run)",
            Command::TraceReport => "event traces (hood trace record)",
        }
    }
}

/// A file given to a command that does not read its kind: the file, what it is, the command
/// that reads it, and what this command reads.
#[derive(Debug)]
pub struct WrongKind {
    /// The file.
    pub path: PathBuf,
    /// What it is.
    pub found: Kind,
    /// The command it was given to.
    pub command: Command,
}

impl fmt::Display for WrongKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {}; read it with `{}`; `{}` reads {}",
            self.path.display(),
            self.found.words(),
            self.found.reader(&self.path),
            self.command.name(),
            self.command.reads_words()
        )
    }
}

/// What kind of recording the file at `path` is, from its header, read once through
/// hood-format's door to untrusted files (not a link, not blocking, at most a header's bytes).
/// A file that is neither a hood file nor a perf.data file, is cut before its header's end,
/// damaged or of a newer format gives hood-format's error for it.
pub fn open(path: &Path) -> Result<Kind, LoadError> {
    let file = untrusted::open(path, Policy::NAMED)?;
    let mut head = Vec::with_capacity(FILE_HEADER_LEN);
    file.take(FILE_HEADER_LEN as u64)
        .read_to_end(&mut head)
        .map_err(|source| hood_format::FormatError::Io {
            path: path.to_owned(),
            source,
        })?;
    if hood_raw::perfdata::has_perf_data_magic(&head) {
        return Ok(Kind::PerfData);
    }
    Ok(Kind::of(hood_format::header_of(path, &head)?.kind))
}

/// [`open`], and a [`WrongKind`] error unless `command` reads files of that kind.
pub fn open_for(path: &Path, command: Command) -> Result<Kind, LoadError> {
    let found = open(path)?;
    if !command.reads(found) {
        return Err(LoadError::WrongKind(WrongKind {
            path: path.to_owned(),
            found,
            command,
        }));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hood_file(dir: &Path, name: &str, kind: FileKind) -> PathBuf {
        let p = dir.join(name);
        hood_format::Writer::create(&p, kind)
            .unwrap()
            .commit()
            .unwrap();
        p
    }

    #[test]
    fn each_kind_is_told_from_its_header() {
        let dir = tempfile::tempdir().unwrap();
        for (kind, want) in [
            (FileKind::Profile, Kind::Profile),
            (FileKind::Calls, Kind::Calls),
            (FileKind::Trace, Kind::Trace),
            (FileKind::Monitor, Kind::Monitor),
            (FileKind::Unknown(77), Kind::Newer(77)),
        ] {
            let p = hood_file(dir.path(), &format!("{kind}"), kind);
            assert_eq!(open(&p).unwrap(), want, "{kind}");
        }
        let perf = dir.path().join("perf.data");
        std::fs::write(&perf, b"PERFILE2").unwrap();
        assert_eq!(open(&perf).unwrap(), Kind::PerfData);
    }

    #[test]
    fn what_is_no_recording_keeps_the_readers_message() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("text");
        std::fs::write(
            &text,
            b"plain text, longer than a header's thirty-two bytes",
        )
        .unwrap();
        let e = open(&text).unwrap_err().to_string();
        assert!(e.ends_with("not a hood recording"), "{e}");
        // The same words as hood-format's reader, for every file that is not one.
        let short = dir.path().join("short");
        std::fs::write(&short, &b"HOODREC\0"[..5]).unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        for p in [&text, &short, &empty] {
            let reader = hood_format::Reader::open(p).err().unwrap().to_string();
            assert_eq!(open(p).unwrap_err().to_string(), reader);
        }
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Refused without blocking (no writer ever opens it).
        assert!(open(&fifo).is_err());
    }

    #[test]
    fn a_file_of_another_kind_names_the_command_that_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let calls = hood_file(dir.path(), "x.calls", FileKind::Calls);
        assert_eq!(open_for(&calls, Command::CallsReport).unwrap(), Kind::Calls);
        assert_eq!(open_for(&calls, Command::Diff).unwrap(), Kind::Calls);
        let e = open_for(&calls, Command::Report).unwrap_err().to_string();
        let p = calls.display();
        assert_eq!(
            e,
            format!(
                "{p} is a call-path recording (hood calls run); read it with \
                 `hood calls report -i {p}`; `hood report` reads sampled profiles \
                 (hood record, perf record)"
            )
        );
    }
}
