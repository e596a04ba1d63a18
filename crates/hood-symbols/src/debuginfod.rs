//! A debuginfod client: separate debug files fetched by build-id from the servers named in
//! `DEBUGINFOD_URLS` (the protocol of elfutils' `debuginfod`: `GET URL/buildid/HEX/debuginfo`),
//! kept in a private cache directory.
//!
//! hood runs as root, so the cache is handled as untrusted ground:
//! - the cache directory is created `0700`; one that is a symlink, is not owned by the
//!   user hood runs as, or is writable by others is refused;
//! - cached files are opened without following symlinks and used only if they are regular
//!   files of this user, with the build-id asked for;
//! - a download goes to a temporary file (mode `0600`) in the cache directory, stops at a
//!   size bound, is checked to be ELF with the build-id asked for, then is made `0644` and
//!   renamed into place;
//! - a build-id no server has is remembered for ten minutes (an empty `HEX.miss` file), so
//!   that reports do not ask again for each binary.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::cache::{cached_ok, nofollow, CheckedDir};
use crate::{read_build_id, BuildId};

/// How long a miss is remembered.
const MISS_TTL: Duration = Duration::from_secs(600);
/// Longest one download may take, start to end, unless `DEBUGINFOD_MAXTIME` says otherwise:
/// a server that trickles a byte at a time (each within the read timeout) cannot keep a
/// report waiting longer. 1 GB at 10 MB/s fits.
const DEFAULT_MAX_TIME: Duration = Duration::from_secs(120);
/// Largest debug file downloaded unless `DEBUGINFOD_MAXSIZE` says otherwise.
const DEFAULT_MAX_SIZE: u64 = 4 << 30;
/// Progress is printed for downloads that take longer than this, then at this interval.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Where and how to fetch debug files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebuginfodConfig {
    /// Server base URLs, asked in order (`http://` or `https://`).
    pub urls: Vec<String>,
    /// The cache directory (created `0700` if missing).
    pub cache: PathBuf,
    /// Longest wait to connect, or for the next bytes of an answer.
    pub timeout: Duration,
    /// Longest one download may take in all (the overall deadline).
    pub max_time: Duration,
    /// Largest debug file accepted, in bytes.
    pub max_size: u64,
    /// Where download progress goes, for downloads taking over a second (`None`: nowhere).
    /// The library prints nothing itself: the caller decides (`hood report` writes the
    /// lines to standard error).
    pub progress: Option<Progress>,
}

/// Receives progress lines of downloads (`hood: debuginfod: downloading ...`).
#[derive(Clone)]
pub struct Progress(std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl Progress {
    /// Progress lines go to `f`.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Progress {
        Progress(std::sync::Arc::new(f))
    }

    fn say(&self, line: &str) {
        (self.0)(line)
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Progress(..)")
    }
}

/// Two sinks are equal when they are the same one.
impl PartialEq for Progress {
    fn eq(&self, other: &Progress) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Progress {}

impl DebuginfodConfig {
    /// The configuration the environment gives, as elfutils reads it: `DEBUGINFOD_URLS`
    /// (space-separated; unset or empty: `None`), `DEBUGINFOD_CACHE_PATH` (default
    /// `$XDG_CACHE_HOME/hood/debuginfod`, else `$HOME/.cache/hood/debuginfod`),
    /// `DEBUGINFOD_TIMEOUT` (seconds, default 90), `DEBUGINFOD_MAXTIME` (seconds a whole
    /// download may take, default 120) and `DEBUGINFOD_MAXSIZE` (bytes, default 4 GiB).
    pub fn from_env() -> Option<DebuginfodConfig> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let urls: Vec<String> = var("DEBUGINFOD_URLS")?
            .split_whitespace()
            .map(|u| u.trim_end_matches('/').to_string())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let cache = match var("DEBUGINFOD_CACHE_PATH") {
            Some(p) => PathBuf::from(p),
            None => crate::cache::default_root().join("debuginfod"),
        };
        let timeout = var("DEBUGINFOD_TIMEOUT")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .filter(|&t| t > 0)
            .unwrap_or(90);
        let max_time = var("DEBUGINFOD_MAXTIME")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .filter(|&t| t > 0)
            .map_or(DEFAULT_MAX_TIME, Duration::from_secs);
        let max_size = var("DEBUGINFOD_MAXSIZE")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .filter(|&t| t > 0)
            .unwrap_or(DEFAULT_MAX_SIZE);
        Some(DebuginfodConfig {
            urls,
            cache,
            timeout: Duration::from_secs(timeout),
            max_time,
            max_size,
            progress: None,
        })
    }
}

/// A debuginfod client with its cache; see the module documentation.
pub(crate) struct Debuginfod {
    cfg: DebuginfodConfig,
    agent: ureq::Agent,
    /// The cache directory's check, made once: `Err` says why it cannot be used.
    dir: CheckedDir,
    /// Build-ids asked for in this run.
    asked: HashSet<BuildId>,
}

impl Debuginfod {
    pub(crate) fn new(cfg: DebuginfodConfig) -> Debuginfod {
        let agent = ureq::Agent::config_builder()
            .timeout_connect(Some(cfg.timeout))
            .timeout_per_read(Some(cfg.timeout))
            .timeout_global(Some(cfg.max_time))
            .http_status_as_error(false)
            .user_agent(concat!("hood/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Debuginfod {
            cfg,
            agent,
            dir: CheckedDir::new("debuginfod cache", "DEBUGINFOD_CACHE_PATH"),
            asked: HashSet::new(),
        }
    }

    /// The debug file with `build_id`, from the cache or a server; `what` names the binary
    /// in messages. Problems worth saying (cache refused, server errors) go to `warn`.
    pub(crate) fn fetch(
        &mut self,
        build_id: &BuildId,
        what: &str,
        warn: &mut dyn FnMut(String, String),
    ) -> Option<PathBuf> {
        if build_id.as_bytes().len() < 2 || !self.asked.insert(*build_id) {
            return None;
        }
        let dir = match self.cache_dir() {
            Ok(d) => d,
            Err(why) => {
                warn("debuginfod-cache".into(), why);
                return None;
            }
        };
        let h = build_id.to_string();
        let path = dir.join(format!("{h}.debug"));
        if cached_ok(&path, build_id) {
            return Some(path);
        }
        let miss = dir.join(format!("{h}.miss"));
        if recent(&miss) {
            return None;
        }
        let mut errors = Vec::new();
        for url in self.cfg.urls.clone() {
            match self.download(&url, &h, build_id, &dir, &path, what) {
                Ok(true) => return Some(path),
                Ok(false) => {}
                Err(e) => errors.push(format!("{url}: {e}")),
            }
        }
        if errors.is_empty() {
            // Every server answered and none has it: do not ask again for a while.
            let _ = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .custom_flags(nofollow())
                .mode(0o600)
                .open(&miss);
        } else {
            warn(
                format!("debuginfod {h}"),
                format!(
                    "debuginfod: no debug info for {what} (build-id {h}): {}",
                    errors.join("; ")
                ),
            );
        }
        None
    }

    /// The cache directory, created or checked once.
    fn cache_dir(&mut self) -> Result<PathBuf, String> {
        self.dir.get(&self.cfg.cache)
    }

    /// One server: `Ok(true)` the file is now at `path`, `Ok(false)` the server has none.
    fn download(
        &self,
        url: &str,
        h: &str,
        build_id: &BuildId,
        dir: &Path,
        path: &Path,
        what: &str,
    ) -> Result<bool, String> {
        let full = format!("{url}/buildid/{h}/debuginfo");
        let start = Instant::now();
        let late = |e: String| -> String {
            if start.elapsed() >= self.cfg.max_time {
                format!(
                    "no whole answer within {} s (DEBUGINFOD_MAXTIME): {e}",
                    self.cfg.max_time.as_secs()
                )
            } else {
                e
            }
        };
        let mut resp = self
            .agent
            .get(&full)
            .call()
            .map_err(|e| late(e.to_string()))?;
        match resp.status().as_u16() {
            200 => {}
            404 => return Ok(false),
            s => return Err(format!("HTTP status {s}")),
        }
        let length = resp.body().content_length();
        if length.is_some_and(|n| n > self.cfg.max_size) {
            return Err(format!(
                "{} bytes, over the limit of {} (DEBUGINFOD_MAXSIZE)",
                length.unwrap_or(0),
                self.cfg.max_size
            ));
        }
        let mut tmp = tempfile::Builder::new()
            .prefix(".download-")
            .tempfile_in(dir)
            .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
        let mut body = resp
            .body_mut()
            .with_config()
            .limit(self.cfg.max_size)
            .reader();
        let mut last = start;
        let mut got = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(late(format!("download failed after {got} bytes: {e}"))),
            };
            tmp.write_all(&buf[..n])
                .map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
            got += n as u64;
            if let Some(p) = self.cfg.progress.as_ref() {
                if last.elapsed() >= PROGRESS_EVERY {
                    last = Instant::now();
                    let total = length.map_or(String::new(), |t| format!(" of {:.1}", mb(t)));
                    p.say(&format!(
                        "hood: debuginfod: downloading debug info for {what} from {url}: {:.1}{total} MB",
                        mb(got)
                    ));
                }
            }
        }
        if let Some(p) = self.cfg.progress.as_ref() {
            if start.elapsed() >= PROGRESS_EVERY {
                p.say(&format!(
                    "hood: debuginfod: {:.1} MB for {what} in {:.1} s",
                    mb(got),
                    start.elapsed().as_secs_f64()
                ));
            }
        }
        tmp.flush().map_err(|e| e.to_string())?;
        // The server's word is not taken: the file must be ELF with the build-id asked for.
        match read_build_id(tmp.path()) {
            Ok(Some(id)) if id == *build_id => {}
            Ok(_) => return Err("the file served has another build-id".into()),
            Err(e) => return Err(format!("the file served is not usable: {e}")),
        }
        tmp.as_file()
            .set_permissions(fs::Permissions::from_mode(0o644))
            .map_err(|e| e.to_string())?;
        tmp.persist(path)
            .map_err(|e| format!("cannot move the download to {}: {e}", path.display()))?;
        Ok(true)
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// A miss marker younger than [`MISS_TTL`].
fn recent(miss: &Path) -> bool {
    fs::symlink_metadata(miss)
        .ok()
        .filter(|m| m.file_type().is_file())
        .and_then(|m| m.modified().ok())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < MISS_TTL)
}
