use std::path::PathBuf;

use crate::header::FileKind;

/// Everything that can go wrong reading or writing a hood container.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Reading went past the memory cap ([`crate::memory`]).
    #[error(
        "{path}: reading it took {} MiB by byte offset {offset}, past the cap of {} MiB on \
         the memory a report may use; raise the cap with HOOD_REPORT_MAX_MEMORY=BYTES (0: no \
         cap) on a machine with the memory, or report a shorter recording",
        used >> 20,
        cap >> 20
    )]
    MemoryCap {
        /// The file being read.
        path: PathBuf,
        /// Where the reading was.
        offset: u64,
        /// Memory in use, bytes.
        used: u64,
        /// The cap, bytes.
        cap: u64,
    },
    /// An I/O error on the named file.
    #[error("{path}: {source}{}", io_hint(source))]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with hood's magic bytes.
    #[error("{path}: not a hood recording{hint}")]
    NotHood {
        /// The file.
        path: PathBuf,
        /// What the file looks like instead, if known.
        hint: String,
    },
    /// The file header is damaged or the file is shorter than a header.
    #[error("{path}: damaged file header: {what}")]
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// The file was written by a newer hood.
    #[error("{path}: recording format version {found} is newer than this hood understands ({supported}); upgrade hood")]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u16,
        /// Newest version this build reads.
        supported: u16,
    },
    /// A chunk's header or payload failed its checks.
    #[error("{path}: corrupt chunk at byte offset {offset}: {what}")]
    CorruptChunk {
        /// The file.
        path: PathBuf,
        /// Offset of the chunk header in the file.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The file holds another kind of recording.
    #[error("{path} is a {found} recording; read it with `{reader}` (this command reads {expected} recordings)")]
    WrongKind {
        /// The file.
        path: PathBuf,
        /// Kind found in the file.
        found: FileKind,
        /// Kind the command reads.
        expected: FileKind,
        /// The command that reads `found`.
        reader: &'static str,
    },
    /// The output path is a symbolic link owned by another user.
    #[error("{path} is a symbolic link owned by uid {owner}, not by you: hood does not write through another user's link (it could point at any file); remove it or choose another path with -o")]
    ForeignLink {
        /// The link.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// A file hood was to read is not a regular file (a FIFO, a device, a directory, or a
    /// symbolic link where none is followed).
    #[error("{path} is {kind}, not a regular file: hood reads only regular files there (a FIFO could block it, a device act when opened, a link point anywhere); remove it or name a regular file")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is, in words ("a FIFO").
        kind: &'static str,
    },
    /// A file hood was to read belongs to a user it is not trusted from.
    #[error("{path} belongs to uid {owner}, not to root or uid {allowed}: any user could have planted it, so hood does not read it; remove it (its owner can write it again)")]
    NotTrusted {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The user besides root whose file it may be.
        allowed: u32,
    },
    /// A file hood was to read whole is larger than hood reads of such a file.
    #[error("{path} has more than {}, more than hood reads of such a file (it could claim any size at no cost); name a smaller file", size_words(*limit))]
    OverLimit {
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// The output path names something other than a regular file.
    #[error("{path} is {what}, not a regular file: hood writes -o only to a regular file it replaces whole (whoever holds a pipe or device open would get the output); remove it or choose another path with -o (to pipe the output, use -o /dev/stdout)")]
    NotRegularOutput {
        /// The output path.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// The output path is another user's file.
    #[error("{path} is owned by uid {owner}, not by you: hood does not replace another user's file; remove it or choose another path with -o")]
    ForeignOutput {
        /// The output path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
    },
    /// Another hood is writing the same output.
    #[error("{path} is being written by another hood{}: two writers of one file would lose one's output; wait for it to finish or choose another path with -o", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Busy {
        /// The output path.
        path: PathBuf,
        /// The other writer, if its lock names it.
        pid: Option<u32>,
    },
    /// The lock file beside an output is not one hood made.
    #[error("{path}: cannot use this lock file for writing {output}: {what}; remove it, or choose another path with -o")]
    BadLock {
        /// The lock file.
        path: PathBuf,
        /// The output it locks.
        output: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The written file could not be renamed over its target; it stays where it was written.
    #[error("{path}: cannot put the new file in place ({source}); it is kept as {temp}")]
    NotPlaced {
        /// The output path.
        path: PathBuf,
        /// Where the file is.
        temp: PathBuf,
        /// The rename's error.
        #[source]
        source: std::io::Error,
    },
    /// A payload is larger than the writer allows.
    #[error("chunk payload of {0} bytes is larger than the 1 GiB limit")]
    TooLarge(u64),
}

/// A size in words: "64 KiB", "1024 MiB".
pub(crate) fn size_words(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

fn io_hint(err: &std::io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(28) => " (disk full: free space or write elsewhere with -o)",
        // 28 is ENOSPC, 13 is EACCES on Linux.
        Some(13) => {
            " (permission denied: check the directory's permissions or choose another path with -o)"
        }
        // A missing file gets its fix from the command that reads it, which knows how it
        // takes its path (`-i FILE` or an argument).
        _ => "",
    }
}
