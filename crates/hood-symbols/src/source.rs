//! What `hood annotate` shows beside its counts: a source file's text, and the machine code of
//! the function a sampled offset lies in. Both are read from files named by the recording or
//! by a binary's debug info, so both are opened without blocking (a FIFO must not hang the
//! report), must be regular files, and are read only up to a bound, whatever their size.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::{SymbolError, Symbolizer};

/// A function's machine code, as read from its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCode {
    /// The symbol the code belongs to.
    pub name: String,
    /// File offset of its first byte.
    pub start: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// `path` opened for reading without blocking, if it is a regular file.
fn open_regular(path: &Path) -> Result<File, SymbolError> {
    crate::open::open(path, crate::open::DEBUG)
}

/// The text of the source file `path` (invalid UTF-8 replaced), if it is a regular file of at
/// most `max` bytes.
pub fn read_source(path: &Path, max: u64) -> Result<String, SymbolError> {
    let f = open_regular(path)?;
    let io = |source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    };
    if f.metadata().map_err(io)?.len() > max {
        return Err(SymbolError::NoCode {
            path: path.to_path_buf(),
            reason: format!("over {} MiB, not shown", max >> 20),
        });
    }
    let mut bytes = Vec::new();
    f.take(max).read_to_end(&mut bytes).map_err(io)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// [`read_source`] for root reading on behalf of binaries owned by `owners`: the file is
/// shown only when one of them could read it — owned by one of them and readable by its
/// owner, or owned by root and readable by all (or one of the binaries is root's). A
/// user's binary whose DWARF names `/etc/shadow` does not make root print it.
pub fn read_source_for(path: &Path, max: u64, owners: &[u32]) -> Result<String, SymbolError> {
    use std::os::unix::fs::MetadataExt;
    let f = open_regular(path)?;
    let md = f.metadata().map_err(|source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let (uid, mode) = (md.uid(), md.mode());
    let readable = (owners.contains(&uid) && mode & 0o400 != 0)
        || (uid == 0 && (mode & 0o004 != 0 || owners.contains(&0)));
    if !readable {
        return Err(SymbolError::NoCode {
            path: path.to_path_buf(),
            reason: format!(
                "owned by uid {uid} with mode {:o}, not readable by the owner of the binary \
                 (uid {}): not shown when running as root",
                mode & 0o7777,
                owners
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    drop(f);
    read_source(path, max)
}

impl Symbolizer {
    /// The machine code of the function of the ELF file `path` (checked against
    /// `expected_build_id`) that covers file offset `offset`: the whole symbol, from its symbol
    /// table entry's start and size, if that size is known and at most `max` bytes.
    pub fn function_code(
        &mut self,
        path: &Path,
        expected_build_id: Option<&crate::BuildId>,
        offset: u64,
        max: u64,
    ) -> Result<FunctionCode, SymbolError> {
        let no_code = |reason: String| SymbolError::NoCode {
            path: path.to_path_buf(),
            reason,
        };
        let found = self
            .symbolize_file(path, expected_build_id, &[offset])
            .pop()
            .and_then(Result::ok);
        let Some(found) = found else {
            let why = self.warnings().join("; ");
            return Err(no_code(format!(
                "no symbol covers offset {offset:#x} now ({why})"
            )));
        };
        let Some(size) = found.size.filter(|&s| s > 0 && s <= max) else {
            return Err(no_code(format!(
                "the symbol {} has no size (or one over {} KiB): nothing to disassemble",
                found.name,
                max >> 10
            )));
        };
        let start = offset.saturating_sub(found.offset);
        let f = open_regular(path)?;
        let mut bytes = vec![0u8; size as usize];
        f.read_exact_at(&mut bytes, start)
            .map_err(|e| no_code(format!("reading {size} bytes at {start:#x}: {e}")))?;
        Ok(FunctionCode {
            name: found.name,
            start,
            bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_file_is_read_whole_and_lossily() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.c");
        std::fs::write(&p, b"int main(void)\n{ return 0; } \xff\n").unwrap();
        let text = read_source(&p, 1 << 20).unwrap();
        assert_eq!(text, "int main(void)\n{ return 0; } \u{fffd}\n");
    }

    #[test]
    fn a_fifo_a_directory_and_a_big_file_are_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.c");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        let e = read_source(&fifo, 1 << 20).unwrap_err().to_string();
        assert!(
            e.contains("not a regular file") && e.contains("fifo.c"),
            "{e}"
        );
        let e = read_source(dir.path(), 1 << 20).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let big = dir.path().join("big.c");
        std::fs::write(&big, vec![b'x'; 3 << 20]).unwrap();
        let e = read_source(&big, 2 << 20).unwrap_err().to_string();
        assert!(e.contains("over 2 MiB") && e.contains("big.c"), "{e}");
        let e = read_source(&dir.path().join("missing.c"), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.c"), "{e}");
    }
}
