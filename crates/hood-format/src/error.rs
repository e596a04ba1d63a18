use std::path::PathBuf;

use crate::header::FileKind;

/// Everything that can go wrong reading or writing a hood container.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
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
    /// A payload is larger than the writer allows.
    #[error("chunk payload of {0} bytes is larger than the 1 GiB limit")]
    TooLarge(u64),
}

fn io_hint(err: &std::io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(28) => {
            " (disk full: free space or write elsewhere with -o; what was written so far is readable)"
        }
        // 28 is ENOSPC, 13 is EACCES on Linux.
        Some(13) => " (permission denied: check the directory's permissions or choose another path with -o)",
        // A missing file gets its fix from the command that reads it, which knows how it
        // takes its path (`-i FILE` or an argument).
        _ => "",
    }
}
