//! The state of a detached recording (`hood start` / `hood stop`): which recorder runs, where
//! it writes, and how it ended.
//!
//! hood usually runs as root, and its state directory may sit in /tmp, so nothing in it is
//! trusted by name: the directory must be a real directory owned by the caller with no group or
//! other permissions (it is created 0700); files in it are opened relative to the checked
//! directory without following links, created exclusively, and replaced by rename; a pid read
//! from `session.json` is signalled only when its start time and executable match what
//! `hood start` stored, through a pidfd opened before the check.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal};
use serde::{Deserialize, Serialize};

use crate::{Outcome, RecordError};

macro_rules! bail {
    ($($t:tt)*) => {
        return Err(RecordError::Session(format!($($t)*)))
    };
}

fn io<E: Into<std::io::Error>>(what: String) -> impl FnOnce(E) -> RecordError {
    move |e| RecordError::Io {
        what,
        source: e.into(),
    }
}

/// What `session.json` holds.
#[derive(Debug, Serialize, Deserialize)]
pub struct State {
    /// The detached recorder's pid.
    pub pid: i32,
    /// The recording it writes (an absolute path).
    pub output: String,
    /// Where it writes its outcome when it ends ([`OUTCOME`] in the state directory).
    pub status: String,
    /// Where its standard output and error go ([`LOG`] in the state directory).
    pub log: String,
    /// The recorder's start time (/proc/PID/stat field 22, clock ticks since boot): a pid
    /// whose start time differs is another process.
    #[serde(default)]
    pub start_time: Option<u64>,
    /// The recorder's executable (/proc/PID/exe).
    #[serde(default)]
    pub exe: Option<String>,
}

/// The session's [`State`], in the state directory.
pub const SESSION: &str = "session.json";
/// The recorder's outcome, written by it when it ends, in the state directory.
pub const OUTCOME: &str = "outcome.json";
/// The detached recorder's standard output and error, in the state directory.
pub const LOG: &str = "record.log";
/// Held (`flock`) by `hood start` and `hood stop` while they look at and change the session,
/// so two of them cannot both start a recorder.
pub const LOCK: &str = "session.lock";
/// How long `hood start` or `hood stop` waits for another one to finish with the session.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// session.json and outcome.json are a few hundred bytes; anything larger is not ours.
const MAX_STATE_FILE: u64 = 1 << 20;

/// The state directory: `$HOOD_STATE_DIR`, `$XDG_RUNTIME_DIR/hood` or `/tmp/hood-UID`.
pub fn state_dir_path() -> PathBuf {
    if let Some(d) = std::env::var_os("HOOD_STATE_DIR") {
        return PathBuf::from(d);
    }
    let uid = rustix::process::getuid().as_raw();
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) => PathBuf::from(d).join("hood"),
        None => PathBuf::from(format!("/tmp/hood-{uid}")),
    }
}

/// The state directory, opened and checked; files are reached through `fd` only.
pub struct StateDir {
    /// Its path (for messages and for the files the recorder is told to write).
    pub path: PathBuf,
    fd: OwnedFd,
}

const FIX: &str = "or set HOOD_STATE_DIR to a directory of your own with mode 0700";

impl StateDir {
    /// Open the state directory (creating it 0700 when `create`); `None` when it does not
    /// exist and `create` is false. Refused unless it is a real directory owned by the caller
    /// without group or other permissions.
    pub fn open(create: bool) -> Result<Option<StateDir>, RecordError> {
        let path = state_dir_path();
        if create {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .map_err(io(format!("creating {}", parent.display())))?;
            }
            match rustix::fs::mkdir(&path, Mode::RWXU) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => bail!(
                    "cannot create the state directory {}: {e}; {FIX}",
                    path.display()
                ),
            }
        }
        let fd = match rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if !create => return Ok(None),
            Err(Errno::LOOP | Errno::NOTDIR) => bail!(
                "the state directory {} is not a real directory (a symbolic link or another \
                 kind of file), so another user may control where hood writes; remove it \
                 (`rm {}`) {FIX}",
                path.display(),
                path.display()
            ),
            Err(e) => bail!(
                "cannot open the state directory {}: {e}; {FIX}",
                path.display()
            ),
        };
        let st = rustix::fs::fstat(&fd).map_err(io(format!(
            "checking the state directory {}",
            path.display()
        )))?;
        let me = rustix::process::geteuid().as_raw();
        if st.st_uid != me {
            bail!(
                "the state directory {} belongs to uid {}, not to you (uid {me}): another user \
                 may have created it to make hood overwrite files or signal processes; check \
                 and remove it (`rm -r {}`) {FIX}",
                path.display(),
                st.st_uid,
                path.display()
            );
        }
        let mode = st.st_mode & 0o7777;
        if mode & 0o077 != 0 {
            bail!(
                "the state directory {} has mode {mode:04o}: other users may add or replace \
                 files in it; check its contents and make it private (`chmod 700 {}`) {FIX}",
                path.display(),
                path.display()
            );
        }
        Ok(Some(StateDir { path, fd }))
    }

    /// Take the session lock (see [`LOCK`]), waiting at most `LOCK_WAIT` (10 s) for another
    /// `hood start` or `hood stop` to release it; held until the returned descriptor is dropped.
    pub fn lock(&self) -> Result<OwnedFd, RecordError> {
        use rustix::fs::FlockOperation;
        let fd = rustix::fs::openat(
            &self.fd,
            LOCK,
            OFlags::RDONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(io(format!(
            "opening the lock {} (remove it if it is not a regular file)",
            self.show(LOCK)
        )))?;
        let st = rustix::fs::fstat(&fd).map_err(io(format!("checking {}", self.show(LOCK))))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            bail!("{} is not a regular file; remove it", self.show(LOCK));
        }
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(fd),
                Err(Errno::WOULDBLOCK | Errno::INTR) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(Errno::WOULDBLOCK) => bail!(
                    "another `hood start` or `hood stop` has held {} for {} s; wait for it, or \
                     find it with `fuser {}`",
                    self.show(LOCK),
                    LOCK_WAIT.as_secs(),
                    self.show(LOCK)
                ),
                Err(e) => bail!("cannot lock {}: {e}", self.show(LOCK)),
            }
        }
    }

    /// The path of `name` in the directory, for messages.
    pub fn show(&self, name: &str) -> String {
        self.path.join(name).display().to_string()
    }

    /// Read `name` if it is a regular file owned by the caller; `None` when it is missing.
    pub fn read(&self, name: &str) -> Result<Option<Vec<u8>>, RecordError> {
        let fd = match rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => bail!(
                "cannot open {}: {e} (hood only reads regular files there, never links); \
                 remove it",
                self.show(name)
            ),
        };
        let st = rustix::fs::fstat(&fd).map_err(io(format!("checking {}", self.show(name))))?;
        let me = rustix::process::geteuid().as_raw();
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_uid != me {
            bail!(
                "{} is not a regular file of yours (uid {}): hood does not trust it; remove it",
                self.show(name),
                st.st_uid
            );
        }
        let mut buf = Vec::new();
        std::fs::File::from(fd)
            .take(MAX_STATE_FILE)
            .read_to_end(&mut buf)
            .map_err(io(format!("reading {}", self.show(name))))?;
        Ok(Some(buf))
    }

    /// Remove `name` (a link is removed, never followed); missing is fine.
    pub fn remove(&self, name: &str) -> Result<(), RecordError> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => bail!("cannot remove {}: {e}", self.show(name)),
        }
    }

    /// Create `name` afresh (mode 0600): whatever had that name is removed first and the new
    /// file is created exclusively, so a planted link is never followed.
    pub fn create(&self, name: &str) -> Result<std::fs::File, RecordError> {
        self.remove(name)?;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(io(format!("creating {}", self.show(name))))?;
        Ok(fd.into())
    }

    /// Replace `name` by `bytes` atomically (a temporary file, then a rename).
    pub fn replace(&self, name: &str, bytes: &[u8]) -> Result<(), RecordError> {
        let tmp = format!(".{name}.{}.tmp", std::process::id());
        let mut f = self.create(&tmp)?;
        f.write_all(bytes)
            .and_then(|()| f.sync_data())
            .map_err(io(format!("writing {}", self.show(&tmp))))?;
        rustix::fs::renameat(&self.fd, &tmp, &self.fd, name).map_err(io(format!(
            "renaming {} to {}",
            self.show(&tmp),
            self.show(name)
        )))?;
        Ok(())
    }

    /// The session, when one was started.
    pub fn session(&self) -> Result<Option<State>, RecordError> {
        let Some(bytes) = self.read(SESSION)? else {
            return Ok(None);
        };
        match serde_json::from_slice(&bytes) {
            Ok(st) => Ok(Some(st)),
            Err(e) => bail!(
                "{} is not a hood session ({e}); remove it",
                self.show(SESSION)
            ),
        }
    }

    /// The outcome the recorder wrote, when it did.
    pub fn outcome(&self) -> Option<Outcome> {
        serde_json::from_slice(&self.read(OUTCOME).ok()??).ok()
    }
}

/// The executable of `pid`, without a " (deleted)" suffix.
pub fn proc_exe(pid: i32) -> Option<String> {
    let p = hood_procfs::process::exe(u32::try_from(pid).ok()?)?;
    let s = p.to_string_lossy();
    Some(s.strip_suffix(" (deleted)").unwrap_or(&s).to_string())
}

/// What the pid of a session is now.
pub enum Recorder {
    /// Running, and verified to be the recorder that `hood start` started; signal it
    /// through this pidfd.
    Running(OwnedFd),
    /// No such process any more (or a zombie).
    Gone,
}

/// Find the session's recorder. An error when the pid is a live process that cannot be shown
/// to be that recorder: it is never signalled then.
pub fn recorder(st: &State, dir: &StateDir) -> Result<Recorder, RecordError> {
    let Some(pid) = Pid::from_raw(st.pid).filter(|_| st.pid > 0) else {
        bail!(
            "{} names pid {}, which is not a process; remove it",
            dir.show(SESSION),
            st.pid
        );
    };
    // Opened before the check: if the pid is reused after it, the pidfd still names the
    // process that was checked (and signalling a dead one fails with ESRCH).
    let pidfd = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(Errno::SRCH) => return Ok(Recorder::Gone),
        Err(e) => bail!("cannot open pid {}: {e}", st.pid),
    };
    let Some((state, start)) = hood_procfs::state_and_start(st.pid) else {
        return Ok(Recorder::Gone);
    };
    if matches!(state, 'Z' | 'X') {
        return Ok(Recorder::Gone);
    }
    let why = match (st.start_time, &st.exe) {
        (None, _) | (_, None) => Some(
            "the session does not record the recorder's start time and executable (written \
             by an older hood, or forged)"
                .to_string(),
        ),
        (Some(t), _) if t != start => Some(format!(
            "it started at tick {start}, the recorder at tick {t}: the recorder is gone and \
             the pid was reused, or the session was forged"
        )),
        (_, Some(exe)) if proc_exe(st.pid).as_deref() != Some(exe.as_str()) => Some(format!(
            "its executable is {}, not {exe}",
            proc_exe(st.pid).unwrap_or_else(|| "unreadable".into())
        )),
        _ => None,
    };
    if let Some(why) = why {
        bail!(
            "{} names pid {}, but that process is not the hood recorder `hood start` started: \
             {why}. Nothing was signalled; remove {} (and stop the recorder yourself if one \
             is still running)",
            dir.show(SESSION),
            st.pid,
            dir.show(SESSION)
        );
    }
    Ok(Recorder::Running(pidfd))
}

/// Whether the process behind `pidfd` (pid `pid`, start time `start`) still runs.
pub fn still_running(pid: i32, start: u64) -> bool {
    matches!(hood_procfs::state_and_start(pid), Some((s, t)) if t == start && !matches!(s, 'Z' | 'X'))
}

/// Interrupt (SIGINT) the recorder behind `pidfd`, as Ctrl-C would: it finishes its file.
pub fn interrupt(pidfd: &OwnedFd, pid: i32) -> Result<(), RecordError> {
    rustix::process::pidfd_send_signal(pidfd.as_fd(), Signal::INT)
        .map_err(io(format!("signalling the recorder (pid {pid})")))
}

/// Start a detached recorder: `exe record ARGS --detached-status STATUS` in a process group
/// of its own, its output in the state directory's log; its session (pid, start time,
/// executable, the absolute `output`) is stored for [`stop`]. Refused while another recording
/// runs; an error (with the log) when the recorder exits at once.
pub fn start(
    exe: &std::path::Path,
    args: &[String],
    output: &std::path::Path,
) -> Result<State, RecordError> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let Some(dir) = StateDir::open(true)? else {
        bail!(
            "the state directory {} vanished",
            state_dir_path().display()
        );
    };
    // One `hood start` at a time: a second one waits, then finds the first one's recorder.
    let _lock = dir.lock()?;
    if let Some(st) = dir.session()? {
        // A session whose pid is gone or is not its recorder is stale: start afresh.
        if let Ok(Recorder::Running(_)) = recorder(&st, &dir) {
            bail!(
                "a recording is already running (pid {}, writing {}); stop it first with `hood stop`",
                st.pid,
                st.output
            );
        }
    }
    dir.remove(OUTCOME)?;
    let status = dir.path.join(OUTCOME);
    let log = dir.path.join(LOG);
    let logf = dir.create(LOG)?;
    let mut child = Command::new(exe)
        .arg("record")
        .args(args)
        .arg("--detached-status")
        .arg(&status)
        .stdin(Stdio::null())
        .stdout(
            logf.try_clone()
                .map_err(io(format!("duplicating {}", log.display())))?,
        )
        .stderr(logf)
        .process_group(0)
        .spawn()
        .map_err(io("starting the detached recorder".to_string()))?;
    let pid = child.id() as i32;
    std::thread::sleep(std::time::Duration::from_millis(400));
    if let Some(st) = child
        .try_wait()
        .map_err(io(format!("waiting for the recorder (pid {pid})")))?
    {
        let text = dir.read(LOG)?.unwrap_or_default();
        bail!(
            "the recorder exited at once ({st}):\n{}",
            String::from_utf8_lossy(&text).trim_end()
        );
    }
    // The child is not reaped, so its pid cannot have been reused yet.
    let start_time = hood_procfs::state_and_start(pid).map(|(_, t)| t);
    let exe = proc_exe(pid).unwrap_or_else(|| exe.display().to_string());
    let output = std::env::current_dir()
        .map_err(io("finding the current directory".to_string()))?
        .join(output);
    let state = State {
        pid,
        output: output.display().to_string(),
        status: status.display().to_string(),
        log: log.display().to_string(),
        start_time,
        exe: Some(exe),
    };
    dir.replace(SESSION, &serde_json::to_vec(&state)?)?;
    Ok(state)
}

/// Stop the detached recorder (SIGINT, as Ctrl-C) and wait at most `timeout` for it to
/// finish its file; its outcome. A recorder already gone answers with the outcome it left.
pub fn stop(timeout: std::time::Duration) -> Result<Outcome, RecordError> {
    let none = |p: &std::path::Path| {
        RecordError::Session(format!(
            "no detached recording is running (no {}); start one with `hood start`",
            p.display()
        ))
    };
    let Some(dir) = StateDir::open(false)? else {
        return Err(none(&state_dir_path().join(SESSION)));
    };
    // Not while a `hood start` is writing the session it starts.
    let _lock = dir.lock()?;
    let Some(st) = dir.session()? else {
        return Err(none(&dir.path.join(SESSION)));
    };
    let pidfd = match recorder(&st, &dir)? {
        Recorder::Running(fd) => fd,
        Recorder::Gone => {
            dir.remove(SESSION)?;
            if let Some(o) = dir.outcome() {
                return Ok(o);
            }
            // A recorder killed before its end leaves its recording beside the output.
            let left = hood_format::left_by_killed_writers(std::path::Path::new(&st.output));
            let kept = match left.iter().find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains(&format!(".{}-", st.pid)))
            }) {
                Some(p) => format!(
                    "its recording so far is readable with `{}`; {} is as it was before",
                    hood_format::read_command(hood_format::FileKind::Profile, p),
                    st.output
                ),
                None => format!("no recording of it was left beside {}", st.output),
            };
            bail!(
                "the recorder (pid {}) is gone without finishing (see {}); {kept}",
                st.pid,
                st.log,
            );
        }
    };
    interrupt(&pidfd, st.pid)?;
    let start = st.start_time.unwrap_or_default();
    let deadline = std::time::Instant::now() + timeout;
    while still_running(st.pid, start) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    if still_running(st.pid, start) {
        bail!(
            "the recorder (pid {}) did not finish within {} s; see {}",
            st.pid,
            timeout.as_secs(),
            st.log
        );
    }
    dir.remove(SESSION)?;
    match dir.outcome() {
        Some(o) => Ok(o),
        None => bail!("the recorder stopped without reporting; see {}", st.log),
    }
}
