//! The one door through which hood opens a file it did not create: a recording given with `-i`,
//! a `--symfile` or `--token-file`, a JIT map `/tmp/perf-PID.map`, a mapped binary, a debug file.
//! hood usually runs as root and such paths are often in places any user can write, so nothing
//! at the path is trusted until checked:
//!
//! 1. the path is resolved to an `O_PATH` descriptor, which opens nothing: a FIFO cannot block,
//!    a device's driver is never called (opening some devices has effects);
//! 2. the descriptor must be a regular file (and, where the caller asks, not a symbolic link
//!    and owned by root or a named user);
//! 3. only then is that same file opened for reading, through `/proc/self/fd`, so what is read
//!    is what was checked, whatever is renamed over the path in between;
//! 4. [`read`] reads at most the bound the caller gives, whatever size the file claims (sparse
//!    files claim any size at no cost to their owner), into a buffer that grows with what is
//!    actually read;
//! 5. [`read_lines`] reads a text file line by line, skipping its holes without reading them
//!    and keeping only whole lines, so a sparse file claiming gigabytes costs neither the time
//!    of reading its zeros nor memory beyond the lines kept.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

use crate::FormatError;

/// How a file at an untrusted path is checked before it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// A symbolic link as the last component is followed (a file the user named); otherwise it
    /// is refused.
    pub follow_link: bool,
    /// The file must belong to root or to this user (as perf checks JIT maps).
    pub owner: Option<u32>,
}

impl Policy {
    /// A file the user named on the command line: a symbolic link is followed (to a regular
    /// file), any owner.
    pub const NAMED: Policy = Policy {
        follow_link: true,
        owner: None,
    };
    /// A file at a path a process, a recording or a binary named: never through a symbolic
    /// link as its last component, any owner.
    pub const NO_LINK: Policy = Policy {
        follow_link: false,
        owner: None,
    };

    /// A file at a path a process named, that must not be a symbolic link and must belong to
    /// root or to `uid` (the process's user).
    pub fn owned_by_root_or(uid: u32) -> Policy {
        Policy {
            follow_link: false,
            owner: Some(uid),
        }
    }
}

/// What [`read`] read.
#[derive(Debug)]
pub struct Bounded {
    /// The bytes, at most the bound.
    pub bytes: Vec<u8>,
    /// The file had more bytes than the bound: `bytes` is its beginning.
    pub cut: bool,
}

/// The kind of a file that is not a regular file, in words.
fn kind_of(t: FileType) -> &'static str {
    match t {
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Socket => "a socket",
        _ => "not a regular file",
    }
}

/// Open `path` for reading after the checks of `policy` (see the module documentation).
pub fn open(path: &Path, policy: Policy) -> Result<File, FormatError> {
    let io = |e: rustix::io::Errno| FormatError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    };
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !policy.follow_link {
        flags |= OFlags::NOFOLLOW;
    }
    let handle = rustix::fs::open(path, flags, Mode::empty()).map_err(io)?;
    let st = rustix::fs::fstat(&handle).map_err(io)?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        return Err(FormatError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(kind),
        });
    }
    if let Some(uid) = policy.owner {
        if st.st_uid != 0 && st.st_uid != uid {
            return Err(FormatError::NotTrusted {
                path: path.to_path_buf(),
                owner: st.st_uid,
                allowed: uid,
            });
        }
    }
    // The checked file itself, whatever the path names by now.
    let again = format!("/proc/self/fd/{}", handle.as_raw_fd());
    let file = match rustix::fs::open(
        again.as_str(),
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => File::from(fd),
        // No /proc (a bare chroot): the path once more, without following a link and
        // without blocking, and the same file or nothing.
        Err(rustix::io::Errno::NOENT) => File::from(
            rustix::fs::open(
                path,
                OFlags::RDONLY
                    | OFlags::NONBLOCK
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC
                    | if policy.follow_link {
                        OFlags::empty()
                    } else {
                        OFlags::NOFOLLOW
                    },
                Mode::empty(),
            )
            .map_err(io)?,
        ),
        Err(e) => return Err(io(e)),
    };
    let md = file.metadata().map_err(|source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if md.dev() != st.st_dev || md.ino() != st.st_ino || !md.is_file() {
        return Err(FormatError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("replaced while it was opened; try again"),
        });
    }
    Ok(file)
}

/// Read at most `max` bytes of `path` after the checks of `policy`.
pub fn read(path: &Path, policy: Policy, max: u64) -> Result<Bounded, FormatError> {
    read_file(open(path, policy)?, path, max)
}

/// The whole of `path` after the checks of `policy`, if it has at most `max` bytes
/// ([`FormatError::OverLimit`] otherwise).
pub fn read_all(path: &Path, policy: Policy, max: u64) -> Result<Vec<u8>, FormatError> {
    let b = read(path, policy, max)?;
    if b.cut {
        return Err(FormatError::OverLimit {
            path: path.to_path_buf(),
            limit: max,
        });
    }
    Ok(b.bytes)
}

/// Read at most `max` bytes of an opened file; `path` names it in errors.
pub fn read_file(file: File, path: &Path, max: u64) -> Result<Bounded, FormatError> {
    let mut bytes = Vec::new();
    // One byte more than the bound tells a file of exactly `max` bytes from a longer one.
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| FormatError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let cut = bytes.len() as u64 > max;
    bytes.truncate(max as usize);
    Ok(Bounded { bytes, cut })
}

/// What [`read_lines`] kept.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Lines {
    /// The file's lines, whole, each with its `\n` (its last one also without, when the file
    /// ends so and was read to its end); at most the bound.
    pub text: Vec<u8>,
    /// The file holds more data than the bound: `text` is the lines of its beginning.
    pub cut: bool,
    /// Lines left out: longer than the longest line allowed, or running into a hole (a
    /// stretch of a sparse file with no data, whose zeros no text file holds).
    pub dropped: u64,
}

/// The text lines of `path` after the checks of `policy`: see [`read_lines_of`].
pub fn read_lines(
    path: &Path,
    policy: Policy,
    max: u64,
    max_line: usize,
) -> Result<Lines, FormatError> {
    read_lines_of(&open(path, policy)?, path, max, max_line)
}

/// The text lines of an opened file, read a chunk at a time: at most `max` bytes of the file's
/// data are read, holes are skipped without being read (`SEEK_DATA`), and only whole lines of
/// at most `max_line` bytes are kept, so memory stays within what is kept plus one line,
/// whatever size the file claims. A line cut by the bound is not kept (`cut` says so); one
/// running into a hole or longer than `max_line` is left out and counted. `path` names the
/// file in errors.
pub fn read_lines_of(
    file: &File,
    path: &Path,
    max: u64,
    max_line: usize,
) -> Result<Lines, FormatError> {
    use std::os::unix::fs::FileExt;
    let io = |source: std::io::Error| FormatError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut out = Lines::default();
    // The line being read; `skip` while the rest of a dropped line is passed over.
    let mut line: Vec<u8> = Vec::new();
    let mut skip = false;
    let mut buf = vec![0u8; 64 << 10];
    let size = file.metadata().map_err(io)?.len();
    let (mut pos, mut read) = (0u64, 0u64);
    loop {
        // The next byte of data at or after `pos`: a hole's zeros are not read. ENXIO: the end
        // of the file, or only a hole is left. A file system without SEEK_DATA has no holes
        // to skip.
        let hole_to = match rustix::fs::seek(file, rustix::fs::SeekFrom::Data(pos)) {
            Ok(at) if at > pos => Some(at),
            Err(rustix::io::Errno::NXIO) => Some(size.max(pos)),
            _ => None,
        };
        if let Some(at) = hole_to {
            if at > pos {
                // The line being read runs into the hole.
                if !line.is_empty() || skip {
                    out.dropped += 1;
                }
                line.clear();
                skip = false;
                pos = at;
            }
            if pos >= size {
                break;
            }
        }
        if read >= max {
            // Data beyond the bound?
            let mut one = [0u8; 1];
            out.cut = loop {
                match file.read_at(&mut one, pos) {
                    Ok(n) => break n > 0,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io(e)),
                }
            };
            if out.cut {
                line.clear();
            }
            break;
        }
        let want = (buf.len() as u64).min(max - read) as usize;
        let n = match file.read_at(&mut buf[..want], pos) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        pos += n as u64;
        read += n as u64;
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let (part, ended) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..=i], true),
                None => (rest, false),
            };
            rest = &rest[part.len()..];
            if !skip {
                if line.len() + part.len() > max_line.saturating_add(usize::from(ended)) {
                    out.dropped += 1;
                    line.clear();
                    skip = !ended;
                } else if ended && line.is_empty() {
                    out.text.extend_from_slice(part);
                } else {
                    line.extend_from_slice(part);
                    if ended {
                        out.text.append(&mut line);
                    }
                }
            } else if ended {
                skip = false;
            }
        }
    }
    // The file's last line, without its newline.
    out.text.append(&mut line);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn lines_are_read_whole_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"one\ntwo\nthree").unwrap();
        let l = read_lines(&p, Policy::NO_LINK, 100, 100).unwrap();
        assert_eq!(l.text, b"one\ntwo\nthree");
        assert!(!l.cut && l.dropped == 0);
        // Cut inside "two": its beginning is not kept.
        let l = read_lines(&p, Policy::NO_LINK, 6, 100).unwrap();
        assert_eq!((l.text.as_slice(), l.cut), (&b"one\n"[..], true));
        // Exactly the file: not cut.
        let l = read_lines(&p, Policy::NO_LINK, 13, 100).unwrap();
        assert_eq!((l.text.as_slice(), l.cut), (&b"one\ntwo\nthree"[..], false));
        // Lines longer than 3 bytes (without their newline) are left out and counted.
        let l = read_lines(&p, Policy::NO_LINK, 100, 3).unwrap();
        assert_eq!((l.text.as_slice(), l.dropped), (&b"one\ntwo\n"[..], 1));
        // A long line across chunks.
        let long = format!("a\n{}\nb\n", "x".repeat(200_000));
        std::fs::write(&p, &long).unwrap();
        let l = read_lines(&p, Policy::NO_LINK, 1 << 20, 1000).unwrap();
        assert_eq!((l.text.as_slice(), l.dropped), (&b"a\nb\n"[..], 1));
        let l = read_lines(&p, Policy::NO_LINK, 1 << 20, 200_000).unwrap();
        assert_eq!(l.text, long.as_bytes());
    }

    #[test]
    fn a_sparse_text_file_is_read_without_its_holes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sparse");
        let f = File::create(&p).unwrap();
        // Nothing but a hole claiming 64 GiB: nothing is read, nothing is cut.
        f.set_len(64 << 30).unwrap();
        let l = read_lines(&p, Policy::NAMED, 1 << 20, 4096).unwrap();
        assert!(l.text.is_empty() && !l.cut, "{:?}", (l.text.len(), l.cut));
        // Lines, a hole, lines: the lines on both sides are kept (where the file system
        // knows holes; elsewhere the zeros are read as one long line and left out).
        let f = File::options().write(true).open(&p).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"first\n", 0).unwrap();
        f.write_all_at(b"\nlast\n", 32 << 30).unwrap();
        let l = read_lines(&p, Policy::NAMED, 1 << 20, 1 << 16).unwrap();
        assert!(l.text.starts_with(b"first\n"), "{:?}", &l.text[..16]);
        assert!(l.text.ends_with(b"\nlast\n") || l.cut, "{}", l.text.len());
        assert!(l.text.len() <= 1 << 20);
    }

    fn fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    }

    #[test]
    fn regular_files_are_read_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let b = read(&p, Policy::NO_LINK, 100).unwrap();
        assert_eq!((b.bytes.as_slice(), b.cut), (&b"0123456789"[..], false));
        let b = read(&p, Policy::NO_LINK, 10).unwrap();
        assert_eq!((b.bytes.len(), b.cut), (10, false));
        let b = read(&p, Policy::NO_LINK, 4).unwrap();
        assert_eq!((b.bytes.as_slice(), b.cut), (&b"0123"[..], true));
    }

    #[test]
    fn a_sparse_file_is_read_only_up_to_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sparse");
        let f = File::create(&p).unwrap();
        f.set_len(64 << 30).unwrap();
        let b = read(&p, Policy::NAMED, 1 << 20).unwrap();
        assert_eq!((b.bytes.len(), b.cut), (1 << 20, true));
        assert!(b.bytes.capacity() < 4 << 20, "{}", b.bytes.capacity());
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        fifo(&p);
        for policy in [Policy::NAMED, Policy::NO_LINK] {
            let e = open(&p, policy).unwrap_err().to_string();
            assert!(e.contains("fifo") && e.contains("is a FIFO"), "{e}");
        }
        let e = open(Path::new("/dev/null"), Policy::NAMED)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/null is a character device"), "{e}");
        let e = open(dir.path(), Policy::NAMED).unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
    }

    #[test]
    fn links_are_followed_only_when_the_user_named_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, b"x").unwrap();
        let link = dir.path().join("link");
        symlink(&real, &link).unwrap();
        assert!(open(&link, Policy::NAMED).is_ok());
        let e = open(&link, Policy::NO_LINK).unwrap_err().to_string();
        assert!(e.contains("link is a symbolic link"), "{e}");
        // A link to a FIFO is refused even when followed.
        let f = dir.path().join("fifo");
        fifo(&f);
        let to_fifo = dir.path().join("to-fifo");
        symlink(&f, &to_fifo).unwrap();
        let e = open(&to_fifo, Policy::NAMED).unwrap_err().to_string();
        assert!(e.contains("is a FIFO"), "{e}");
    }

    #[test]
    fn the_owner_is_checked_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("perf-1.map");
        std::fs::write(&p, b"1000 10 f\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let me = rustix::process::geteuid().as_raw();
        assert!(open(&p, Policy::owned_by_root_or(me)).is_ok());
        if me == 0 {
            // Root's file is trusted for any process; another user's only for that user.
            assert!(open(&p, Policy::owned_by_root_or(4242)).is_ok());
            rustix::fs::chown(&p, Some(rustix::fs::Uid::from_raw(4243)), None).unwrap();
            let e = open(&p, Policy::owned_by_root_or(4242))
                .unwrap_err()
                .to_string();
            assert!(e.contains("uid 4243") && e.contains("uid 4242"), "{e}");
            assert!(open(&p, Policy::owned_by_root_or(4243)).is_ok());
        } else {
            let e = open(&p, Policy::owned_by_root_or(me + 1))
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("uid {me}")), "{e}");
        }
    }

    #[test]
    fn a_missing_file_is_an_io_error_naming_it() {
        let e = open(Path::new("/nonexistent/hood-x"), Policy::NAMED).unwrap_err();
        assert!(
            matches!(&e, FormatError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
        );
        assert!(e.to_string().contains("/nonexistent/hood-x"));
    }
}
