//! Shared-memory files that other processes write (the hood-rt runtime's segments in
//! /dev/shm), opened so that a file planted there by someone else cannot hang hood, make it
//! follow a link, make it allocate what the file merely claims, or make it write to another
//! file.
//!
//! [`ShmFile::open`] opens without following links or blocking (`O_NOFOLLOW | O_NONBLOCK`) and
//! checks, before anything is read, that the file is a regular file with one link, owned by the
//! caller or by the running process its name claims. Every read whose length the file itself
//! claims ([`ShmFile::read`]) is charged against the bytes the filesystem really holds for it
//! (`st_blocks`), so a sparse file claiming gigabytes is refused; areas whose size the layout
//! fixes are read without charge. Writes (`hood calls reset`'s counter, a streaming recorder's
//! read position) go through the same checked descriptor, never by reopening the path.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::ProcError;

/// A checked shared-memory file (see the module documentation).
#[derive(Debug)]
pub struct ShmFile {
    file: File,
    /// Bytes the filesystem held for the file when last checked.
    held: u64,
    /// Bytes read so far against `held`.
    charged: u64,
}

fn refused(reason: impl Into<String>) -> ProcError {
    ProcError::Refused {
        reason: reason.into(),
    }
}

/// The uid the files created by `pid` get (the filesystem uid of /proc/PID/status).
fn process_fsuid(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let uids = text.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    uids.split_ascii_whitespace().nth(3)?.parse().ok()
}

impl ShmFile {
    /// Open `path` for reading (and writing, with `write`) and check it: a regular file with
    /// one link, owned by the caller or, when `named_pid` (the process the file's name says
    /// wrote it) is given, by that running process's filesystem uid. The errors say what is
    /// wrong with the file and what to do; they do not repeat its path.
    pub fn open(path: &Path, write: bool, named_pid: Option<u32>) -> Result<ShmFile, ProcError> {
        let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
        let fd = rustix::fs::open(
            path,
            access | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::LOOP => refused("a symbolic link, which hood never follows: remove it"),
            e => ProcError::Open { source: e.into() },
        })?;
        let st = rustix::fs::fstat(&fd).map_err(|e| ProcError::Open { source: e.into() })?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(refused(format!(
                "not a regular file (a {:?}): not written by hood-rt; remove it",
                FileType::from_raw_mode(st.st_mode)
            )));
        }
        if st.st_nlink != 1 {
            return Err(refused(format!(
                "has {} hard links (hood-rt creates one): remove it",
                st.st_nlink
            )));
        }
        let me = rustix::process::geteuid().as_raw();
        if st.st_uid != me {
            match named_pid.map(|p| (p, process_fsuid(p))) {
                Some((_, Some(u))) if u == st.st_uid => {}
                Some((p, Some(u))) => {
                    return Err(refused(format!(
                        "owned by uid {}, but pid {p} runs as uid {u}: not written by that \
                         process; remove it",
                        st.st_uid
                    )))
                }
                Some((p, None)) => {
                    return Err(refused(format!(
                        "owned by uid {} (not you) and pid {p} is gone, so nothing shows that \
                         process wrote it; that user can read it, or remove it",
                        st.st_uid
                    )))
                }
                None => {
                    return Err(refused(format!(
                        "owned by uid {} (not you) and its name names no process; remove it",
                        st.st_uid
                    )))
                }
            }
        }
        Ok(ShmFile {
            file: File::from(fd),
            held: (st.st_blocks as u64).saturating_mul(512),
            charged: 0,
        })
    }

    /// Size of the file now.
    pub fn size(&self) -> Result<u64, ProcError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|source| ProcError::Open { source })
    }

    /// Read `len` bytes at `off` of an area whose size the layout fixes (the caller's
    /// constant, never a size the file claims); `what` names the area for the error.
    pub fn read_fixed(&self, off: u64, len: u64, what: &str) -> Result<Vec<u8>, ProcError> {
        let mut buf = vec![0u8; len as usize];
        self.read_into(off, &mut buf, what)?;
        Ok(buf)
    }

    /// Read `len` bytes at `off` whose size the file claims: refused when, with what was read
    /// before, it is more than the file really holds.
    pub fn read(&mut self, off: u64, len: u64, what: &str) -> Result<Vec<u8>, ProcError> {
        let charged = self.charged.saturating_add(len);
        if charged > self.held {
            // A running process may have written more since the last look.
            self.held = self
                .file
                .metadata()
                .map_err(|source| ProcError::Open { source })?
                .blocks()
                .saturating_mul(512);
            if charged > self.held {
                return Err(refused(format!(
                    "its header claims {charged} bytes of data (up to {what}), but the file \
                     holds only {} bytes (a sparse file claiming more than was written): not \
                     read; remove it",
                    self.held
                )));
            }
        }
        self.charged = charged;
        self.read_fixed(off, len, what)
    }

    /// Fill `buf` from `off`, inside an area whose bounds the checked layout fixes (a trace
    /// ring); the caller sizes `buf`, never the file.
    pub fn read_into(&self, off: u64, buf: &mut [u8], what: &str) -> Result<(), ProcError> {
        self.file
            .read_exact_at(buf, off)
            .map_err(|source| ProcError::Read {
                what: what.to_string(),
                len: buf.len() as u64,
                offset: off,
                source,
            })
    }

    /// Write `bytes` at `off` through the checked descriptor.
    pub fn write_at(&self, bytes: &[u8], off: u64) -> io::Result<()> {
        self.file.write_all_at(bytes, off)
    }

    /// Have the filesystem allocate `len` bytes from `off` without changing the file's size
    /// (`fallocate` with `FALLOC_FL_KEEP_SIZE`), so whoever writes them first does not pay
    /// for the allocation.
    pub fn allocate(&self, off: u64, len: u64) -> Result<(), ProcError> {
        allocate(&self.file, off, len)
    }

    /// Give the memory behind `len` bytes from `off` back to the system (`fallocate` with
    /// `FALLOC_FL_PUNCH_HOLE`): they read as zeros from then on, and the file keeps its size.
    pub fn release(&self, off: u64, len: u64) -> Result<(), ProcError> {
        use rustix::fs::FallocateFlags as F;
        rustix::fs::fallocate(&self.file, F::PUNCH_HOLE | F::KEEP_SIZE, off, len).map_err(|e| {
            ProcError::Sys {
                what: format!("fallocate(PUNCH_HOLE, {off}, {len})"),
                source: e.into(),
            }
        })
    }
}

impl AsFd for ShmFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// `fallocate(fd, FALLOC_FL_KEEP_SIZE, off, len)`.
pub(crate) fn allocate(fd: impl AsFd, off: u64, len: u64) -> Result<(), ProcError> {
    rustix::fs::fallocate(fd, rustix::fs::FallocateFlags::KEEP_SIZE, off, len).map_err(|e| {
        ProcError::Sys {
            what: format!("fallocate({off}, {len})"),
            source: e.into(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::ShmFile;
    use crate::ProcError;

    #[test]
    fn links_fifos_and_extra_links_are_refused_before_reading() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::write(&real, [7u8; 100]).unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = ShmFile::open(&link, false, None).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        // O_NONBLOCK: opening a FIFO nobody writes returns at once, and is refused.
        let e = ShmFile::open(&fifo, false, None).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let hard = d.path().join("hard");
        std::fs::hard_link(&real, &hard).unwrap();
        let e = ShmFile::open(&real, false, None).unwrap_err();
        assert!(e.to_string().contains("2 hard links"), "{e}");
        std::fs::remove_file(&hard).unwrap();
        let f = ShmFile::open(&real, false, None).unwrap();
        assert_eq!(f.size().unwrap(), 100);
        assert_eq!(f.read_fixed(98, 2, "the end").unwrap(), vec![7, 7]);
        let e = f.read_fixed(99, 2, "past the end").unwrap_err();
        assert!(
            matches!(&e, ProcError::Read { what, len: 2, offset: 99, .. } if what == "past the end"),
            "{e}"
        );
    }

    #[test]
    fn claimed_sizes_are_charged_against_what_the_file_holds() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sparse");
        let f = std::fs::File::create(&p).unwrap();
        // 1 GiB claimed, nothing written: no blocks held.
        f.set_len(1 << 30).unwrap();
        let mut s = ShmFile::open(&p, false, None).unwrap();
        let e = s.read(0, 1 << 29, "the maps text").unwrap_err();
        assert!(
            e.to_string().contains("sparse") && e.to_string().contains("the maps text"),
            "{e}"
        );
        // A layout-fixed area is read without charge.
        assert_eq!(s.read_fixed(0, 8, "the header").unwrap(), vec![0; 8]);
    }

    #[test]
    fn writes_and_allocation_go_through_the_checked_descriptor() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("seg");
        std::fs::write(&p, [0u8; 64]).unwrap();
        let s = ShmFile::open(&p, true, None).unwrap();
        s.write_at(&[1, 2, 3, 4], 8).unwrap();
        assert_eq!(&std::fs::read(&p).unwrap()[8..12], &[1, 2, 3, 4]);
        let before = std::fs::metadata(&p).unwrap().blocks();
        match s.allocate(4096, 1 << 20) {
            Ok(()) => {
                let m = std::fs::metadata(&p).unwrap();
                assert_eq!(m.len(), 64, "size kept");
                assert!(
                    m.blocks() >= before + (1 << 20) / 512,
                    "{} blocks",
                    m.blocks()
                );
            }
            // A filesystem without fallocate (the temporary directory may be one).
            Err(e) => assert!(e.to_string().contains("fallocate"), "{e}"),
        }
        // Released memory reads as zeros, the size stays, the blocks go.
        let q = d.path().join("ring");
        std::fs::write(&q, [7u8; 65536]).unwrap();
        let r = ShmFile::open(&q, true, None).unwrap();
        match r.release(4096, 65536 - 4096) {
            Ok(()) => {
                let m = std::fs::metadata(&q).unwrap();
                assert_eq!(m.len(), 65536, "size kept");
                assert!(m.blocks() <= 16, "{} blocks", m.blocks());
                let bytes = std::fs::read(&q).unwrap();
                assert!(bytes[..4096].iter().all(|&b| b == 7));
                assert!(bytes[4096..].iter().all(|&b| b == 0));
            }
            // A filesystem that cannot punch holes.
            Err(e) => assert!(e.to_string().contains("PUNCH_HOLE"), "{e}"),
        }
        let ro = ShmFile::open(&p, false, None).unwrap();
        assert!(
            ro.write_at(&[9], 0).is_err(),
            "written through a read-only open"
        );
    }

    #[test]
    fn another_users_file_is_read_only_when_the_process_it_names_wrote_it() {
        if !rustix::process::geteuid().is_root() {
            println!("not run here: giving a file to another user needs root");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("seg");
        std::fs::write(&p, [0u8; 64]).unwrap();
        let nobody = rustix::process::Uid::from_raw(65534);
        rustix::fs::chown(&p, Some(nobody), None).unwrap();
        let me = std::process::id();
        let e = ShmFile::open(&p, false, Some(me)).unwrap_err().to_string();
        assert!(
            e.contains("owned by uid 65534") && e.contains(&format!("pid {me} runs as uid 0")),
            "{e}"
        );
        let e = ShmFile::open(&p, false, None).unwrap_err().to_string();
        assert!(e.contains("its name names no process"), "{e}");
        // A pid above the kernel's limit (4194304) names no process.
        let e = ShmFile::open(&p, false, Some(4_194_305))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is gone"), "{e}");
        rustix::fs::chown(&p, Some(rustix::process::Uid::ROOT), None).unwrap();
        assert!(ShmFile::open(&p, false, Some(4_194_305)).is_ok());
    }
}
