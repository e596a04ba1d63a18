//! Every file this crate reads is opened here, through hood-format's door to untrusted files
//! (no blocking on a FIFO, no device opened, regular files only).

use std::fs::File;
use std::path::Path;

pub(crate) use hood_format::untrusted::Policy;
use hood_format::FormatError;

use crate::SymbolError;

/// A binary at the path a process mapped it from (or a recording named): never through a
/// symbolic link, which could only have been put there since.
pub(crate) const BINARY: Policy = Policy::NO_LINK;
/// A separate debug file or a file the user named: debug directories hold symbolic links by
/// design (`.build-id/XX/YYYY.debug`), followed to a regular file.
pub(crate) const DEBUG: Policy = Policy::NAMED;

/// `path` opened for reading under `policy`.
pub(crate) fn open(path: &Path, policy: Policy) -> Result<File, SymbolError> {
    hood_format::untrusted::open(path, policy).map_err(refused)
}

/// A door's error as this crate's: I/O errors stay I/O errors (a missing file is told apart).
pub(crate) fn refused(e: FormatError) -> SymbolError {
    match e {
        FormatError::Io { path, source } => SymbolError::Io { path, source },
        other => SymbolError::Refused(other),
    }
}
