//! `hood serve` as a library: one HTTP process for fleets — Prometheus `/metrics` from the
//! monitor's /proc data, `/debug/pprof/profile` (the pull endpoint Parca and Pyroscope scrape)
//! and `/healthz`. See docs/serve.md.
//!
//! Owns: the server (listening, connection and request limits, timeouts), routing and bearer
//! tokens, the `/metrics` scraper, and the profile endpoint's [`profile::Recording`] (query,
//! one profile at a time, hood-record's recorder in the request's thread, the pprof answer).
//! May depend on: hood-procfs (the /proc reader), hood-record (the profile recorder), hood-proc
//! (its `StopFlag`, the recorder's steering),
//! hood-monitor (snapshots), hood-model (profiles), hood-report (the metrics and pprof encoders), hyper and
//! tokio; no unsafe. The endpoint calls a [`Profiler`]: the binary passes a
//! [`profile::Recording`] with its symbolizer, the tests a stand-in.
//!
//! ```no_run
//! # use std::sync::{atomic::AtomicBool, Arc};
//! # fn main() -> Result<(), hood_serve::ServeError> {
//! let cfg = hood_serve::Config {
//!     listen: "127.0.0.1:9464".parse().unwrap(),
//!     token: None,
//!     top: 20,
//!     process_filter: None,
//!     build: hood_serve::BuildInfo { version: "0.1.0", commit: "unknown commit", date: "" },
//! };
//! // Set it (e.g. from a SIGTERM handler) to stop the server.
//! let stop = Arc::new(AtomicBool::new(false));
//! let server = hood_serve::Server::bind(&cfg)?;
//! server.run(&stop, |_query: &str, _access: hood_serve::Access, _scratch: &std::path::Path, _stop: &AtomicBool| {
//!     hood_serve::Answer::text(501, "no recorder here\n")
//! });
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
// Only the binary prints (docs/ARCHITECTURE.md): a library's messages go to its caller.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod http;
mod metrics;
pub mod peer;
pub mod profile;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use hyper::{Method, Request, StatusCode};

pub use hood_report::metrics::BuildInfo;
pub use http::{
    Limits, BLOCKING_THREADS, HEAD_TIMEOUT, MAX_CONNECTIONS, MAX_HEADERS, MAX_HEAD_BYTES,
    WRITE_TIMEOUT,
};

use hood_report::metrics::{Selection, CONTENT_TYPE};
use http::Reply;
use metrics::Scraper;

/// Largest `top`: bounds the label set Prometheus has to store.
pub const MAX_TOP: usize = 1000;

/// What the server needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Bearer token required on `/metrics` and `/debug/pprof/*`, if any.
    pub token: Option<String>,
    /// Per-process series for at most this many processes (1 to [`MAX_TOP`]).
    pub top: usize,
    /// Export only processes whose pid equals, or name, user or command line contains, this.
    pub process_filter: Option<String>,
    /// What `hood_build_info` says.
    pub build: BuildInfo<'static>,
}

/// What the server could not do.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The scratch directory for profiles could not be made.
    #[error("creating a scratch directory for profiles: {0} (set TMPDIR to a writable one)")]
    Scratch(#[source] std::io::Error),
    /// The address could not be bound.
    #[error("listening on {addr}: {source} (is the port in use? try --listen with another port)")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// /proc could not be read for `/metrics`.
    #[error("reading /proc: {0}")]
    Proc(#[from] hood_procfs::ProcError),
    /// The `/metrics` text could not be written.
    #[error("encoding /metrics: {0}")]
    Metrics(#[from] hood_report::ReportError),
}

/// An answer to a request: status, content type, extra headers and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Further headers (lowercase names).
    pub headers: Vec<(&'static str, &'static str)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// `body` of content type `content_type`.
    pub fn bytes(status: u16, content_type: &'static str, body: Vec<u8>) -> Answer {
        Answer {
            status,
            content_type,
            headers: Vec::new(),
            body,
        }
    }

    /// A plain-text answer.
    pub fn text(status: u16, body: impl Into<String>) -> Answer {
        Answer::bytes(
            status,
            "text/plain; charset=utf-8",
            body.into().into_bytes(),
        )
    }

    /// The same answer with one more header (`name` in lowercase).
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Answer {
        self.headers.push((name, value));
        self
    }

    fn into_reply(self) -> Reply {
        let mut r = Reply::new(Full::new(Bytes::from(self.body)));
        *r.status_mut() =
            StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let h = r.headers_mut();
        let kind = HeaderValue::from_str(self.content_type)
            .unwrap_or(HeaderValue::from_static("application/octet-stream"));
        h.insert(hyper::header::CONTENT_TYPE, kind);
        for (name, value) in self.headers {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                h.insert(n, v);
            }
        }
        r
    }
}

/// What a client may ask of the profile endpoint. Without a token, `perf_event_paranoid`'s
/// promise holds: a client the server cannot authenticate gets neither whole-machine profiles
/// nor kernel symbols (issue 29, R11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The client sent the token, or (with no token configured) is a root process on this
    /// machine ([`peer::uid`]): any profile, with kernel symbols.
    Full,
    /// Anyone else: one process at a time, kernel frames not named.
    Restricted,
}

/// The `/debug/pprof/profile` endpoint: answers the request's query string (e.g.
/// `seconds=10&pid=7`) for a client with `access`, recording into the server's private
/// scratch directory (mode 0700, removed at exit); `stop` is set when the server is told to
/// stop, and should cut a running recording short. Called on one of the server's blocking
/// threads, after the bearer token was checked.
pub trait Profiler: Send + Sync + 'static {
    /// The answer to one profile request.
    fn answer(&self, query: &str, access: Access, scratch: &Path, stop: &AtomicBool) -> Answer;
}

impl<F> Profiler for F
where
    F: Fn(&str, Access, &Path, &AtomicBool) -> Answer + Send + Sync + 'static,
{
    fn answer(&self, query: &str, access: Access, scratch: &Path, stop: &AtomicBool) -> Answer {
        self(query, access, scratch, stop)
    }
}

/// Where the server's messages go (listening, stopping, connections it had to close, the
/// profile recorder's lines): the library prints nothing itself; `hood serve` writes them to
/// standard error.
#[derive(Clone)]
pub struct Log(Arc<dyn Fn(&str) + Send + Sync>);

impl Log {
    /// Messages go to `f`, one line a call.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Log {
        Log(Arc::new(f))
    }

    /// Messages go nowhere.
    pub fn none() -> Log {
        Log::new(|_| {})
    }

    /// One message.
    pub fn say(&self, line: &str) {
        (self.0)(line)
    }
}

impl std::fmt::Debug for Log {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Log(..)")
    }
}

/// The start of every scratch directory's name. After it come the server's pid and start time
/// (clock ticks since boot, from /proc/PID/stat) and tempfile's random part, so that a later
/// server can tell the directory of a killed one from one in use.
const SCRATCH_PREFIX: &str = "hood-serve-";

/// `hood-serve-PID-START-` for this process.
fn scratch_prefix() -> String {
    let pid = std::process::id();
    let start = i32::try_from(pid)
        .ok()
        .and_then(hood_procfs::state_and_start)
        .map_or(0, |(_, start)| start);
    format!("{SCRATCH_PREFIX}{pid}-{start}-")
}

/// Whether the server a scratch directory's name (after [`SCRATCH_PREFIX`]) names is still
/// running: the same pid with the same start time, not a zombie. A name that does not parse
/// (another program's, an older hood's) counts as in use: it is left alone.
fn scratch_in_use(rest: &str) -> bool {
    let mut it = rest.splitn(3, '-');
    let (Some(Ok(pid)), Some(Ok(start)), Some(_)) = (
        it.next().map(str::parse::<i32>),
        it.next().map(str::parse::<u64>),
        it.next(),
    ) else {
        return true;
    };
    hood_procfs::state_and_start(pid)
        .is_some_and(|(state, t)| t == start && !matches!(state, 'Z' | 'X'))
}

/// Remove the scratch directories in `base` that killed servers left behind: real directories
/// (not links) of this user named for a server that is gone. One line for the log each.
fn clean_stale_scratch(base: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let Ok(rd) = std::fs::read_dir(base) else {
        return said;
    };
    let me = rustix::process::geteuid().as_raw();
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(SCRATCH_PREFIX) else {
            continue;
        };
        let path = ent.path();
        // Never through a link, and never another user's (anyone may create names in /tmp).
        let Ok(md) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        use std::os::unix::fs::MetadataExt;
        if !md.is_dir() || md.uid() != me || scratch_in_use(rest) {
            continue;
        }
        said.push(match std::fs::remove_dir_all(&path) {
            Ok(()) => format!(
                "hood serve: removed {}, left behind by a hood serve that was killed",
                path.display()
            ),
            Err(e) => format!(
                "hood serve: warning: cannot remove {}, left behind by a hood serve that was \
                 killed: {e}",
                path.display()
            ),
        });
    }
    said
}

/// A bound server, before it serves.
pub struct Server {
    listener: http::Listener,
    limits: Limits,
    scratch: tempfile::TempDir,
    scraper: Scraper,
    token: Option<String>,
    log: Log,
}

impl Server {
    /// Make the scratch directory, raise the open-file limit, bind `cfg.listen` and take the
    /// first /proc snapshot (so the first scrape already has an interval). Says nothing:
    /// [`bind_logged`](Self::bind_logged) gives the server somewhere to say things.
    pub fn bind(cfg: &Config) -> Result<Server, ServeError> {
        Server::bind_logged(cfg, Log::none())
    }

    /// [`bind`](Self::bind), with the server's messages to `log`: the listening line (and the
    /// warning when a non-loopback address has no token) now, the rest while it serves.
    pub fn bind_logged(cfg: &Config, log: Log) -> Result<Server, ServeError> {
        // A killed server (SIGKILL) could not remove its scratch directory: the next one does.
        for line in clean_stale_scratch(&std::env::temp_dir()) {
            log.say(&line);
        }
        // The scratch directory exists before the port accepts a request.
        // Mode 0700: the profiles in it hold kernel addresses (each file is 0600 as well).
        let scratch = tempfile::Builder::new()
            .prefix(&scratch_prefix())
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(ServeError::Scratch)?;
        let limits = http::fd_limits();
        let listener = http::Listener::bind(cfg.listen).map_err(|source| ServeError::Listen {
            addr: cfg.listen,
            source,
        })?;
        let addr = listener
            .local_addr()
            .map_or_else(|_| cfg.listen.to_string(), |a| a.to_string());
        if !cfg.listen.ip().is_loopback() && cfg.token.is_none() {
            log.say(&format!("hood serve: WARNING: listening on {addr} WITHOUT authentication (--unauthenticated): anyone who reaches this port can read process metrics and CPU profiles"));
        }
        log.say(&format!("hood serve: listening on http://{addr} (/metrics, /debug/pprof/profile?seconds=N[&pid=P][&off_cpu=1], /healthz)"));
        let scraper = Scraper::new(
            Selection {
                top: cfg.top,
                filter: cfg.process_filter.clone(),
            },
            limits.held_processes,
            cfg.build,
        );
        Ok(Server {
            listener,
            limits,
            scratch,
            scraper,
            token: cfg.token.clone(),
            log,
        })
    }

    /// The address bound (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The private scratch directory handed to the [`Profiler`].
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }

    /// Answer requests until `stop` is set (e.g. by SIGINT or SIGTERM), then let the answers
    /// under way finish (at most 20 s) and remove the scratch directory.
    pub fn run(self, stop: &Arc<AtomicBool>, profiler: impl Profiler) {
        let Server {
            listener,
            limits,
            scratch,
            scraper,
            token,
            log,
        } = self;
        let state = Arc::new(State {
            scratch: scratch.path().to_path_buf(),
            scraper,
            token,
            stop: Arc::clone(stop),
            profiler: Box::new(profiler),
        });
        listener.serve(limits, stop, log.clone(), move |req| {
            let state = Arc::clone(&state);
            async move { state.handle(req).await }
        });
        log.say("hood serve: stopping");
        drop(scratch);
    }
}

/// What the requests share.
struct State {
    /// Private directory for recordings (removed by [`Server::run`] at exit).
    scratch: PathBuf,
    scraper: Scraper,
    token: Option<String>,
    /// Set by the caller to stop; cuts a running profile short.
    stop: Arc<AtomicBool>,
    profiler: Box<dyn Profiler>,
}

impl State {
    /// Answer one request; slow work (a scrape, a profile) runs on the blocking threads.
    async fn handle(self: Arc<Self>, req: Request<hyper::body::Incoming>) -> Reply {
        let path = req.uri().path().to_string();
        let query = req.uri().query().unwrap_or("").to_string();
        let answer = if req.method() != Method::GET {
            Answer::text(405, "only GET is served\n")
        } else if path == "/healthz" {
            Answer::text(200, "ok\n")
        } else if !matches!(path.as_str(), "/metrics" | "/debug/pprof/profile") {
            Answer::text(
                404,
                "not found; try /metrics, /debug/pprof/profile?seconds=N or /healthz\n",
            )
        } else if !self.authorized(&req) {
            Answer::text(
                401,
                "missing or wrong bearer token (send `Authorization: Bearer TOKEN`)\n",
            )
            .with_header("www-authenticate", "Bearer")
        } else {
            let peer = req.extensions().get::<peer::Peer>().copied();
            // The request (and its unread body) is not needed past this point.
            drop(req);
            let work = tokio::task::spawn_blocking(move || {
                if path == "/metrics" {
                    match self.scraper.scrape() {
                        Ok(body) => Answer::bytes(200, CONTENT_TYPE, body),
                        Err(e) => Answer::text(500, format!("{e}\n")),
                    }
                } else {
                    let access = self.access(peer.as_ref());
                    self.profiler
                        .answer(&query, access, &self.scratch, &self.stop)
                }
            });
            work.await
                .unwrap_or_else(|e| Answer::text(500, format!("answering failed: {e}\n")))
        };
        answer.into_reply()
    }

    /// What an authorized request may ask: everything with a token (it was checked), else
    /// everything only for a root process on this machine.
    fn access(&self, peer: Option<&peer::Peer>) -> Access {
        if self.token.is_some() || peer.and_then(peer::uid) == Some(0) {
            Access::Full
        } else {
            Access::Restricted
        }
    }

    /// Whether the request carries the bearer token (always, when none is required).
    fn authorized<B>(&self, req: &Request<B>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        req.headers()
            .get_all(AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok()?.strip_prefix("Bearer "))
            .any(|given| constant_time_eq(given.trim().as_bytes(), token.as_bytes()))
    }
}

/// Compare in constant time (the `subtle` crate keeps the optimiser from adding an early
/// exit), so timing does not reveal how much of a token matched. Only the length may leak.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn token_comparison() {
        assert!(super::constant_time_eq(b"secret", b"secret"));
        assert!(!super::constant_time_eq(b"secret", b"secreT"));
        assert!(!super::constant_time_eq(b"secret", b"secret2"));
    }

    #[test]
    fn answers_become_replies() {
        let r = super::Answer::text(429, "later\n")
            .with_header("retry-after", "5")
            .with_header("Bad Name", "x")
            .into_reply();
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "5");
        assert_eq!(r.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(r.headers().len(), 2, "an invalid header name is left out");
        let r = super::Answer::text(1000, "").into_reply();
        assert_eq!(r.status(), 500);
    }
}
