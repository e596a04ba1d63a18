//! `hood serve`: one HTTP process for fleets — Prometheus `/metrics` from the monitor's data,
//! `/debug/pprof/profile` (the pull endpoint Parca and Pyroscope scrape) and `/healthz`.
//! See docs/serve.md.

mod args;
mod http;
mod lean;
mod metrics;
mod profile;

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use hood_report::metrics::{Selection, CONTENT_TYPE};
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION};
use hyper::{Method, Request, StatusCode};

pub use args::{ServeArgs, ServeConfig};
use http::Reply;
use metrics::Scraper;
use profile::{parse_query, Slot};

/// Run `hood serve` until SIGINT or SIGTERM.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let cfg = args.to_config()?;
    serve(&cfg)?;
    Ok(ExitCode::SUCCESS)
}

/// Serve `cfg` until SIGINT or SIGTERM.
pub fn serve(cfg: &ServeConfig) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    // The scratch directory exists before the port accepts a request.
    // Mode 0700: the profiles in it hold kernel addresses (each file is 0600 as well).
    let scratch = tempfile::Builder::new()
        .prefix("hood-serve-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .context("creating a scratch directory for profiles (set TMPDIR to a writable one)")?;
    let limits = http::fd_limits();
    let listener = http::Listener::bind(cfg.listen).with_context(|| {
        format!(
            "listening on {} (is the port in use? try --listen with another port)",
            cfg.listen
        )
    })?;
    let addr = listener
        .local_addr()
        .map_or_else(|_| cfg.listen.to_string(), |a| a.to_string());
    if !cfg.listen.ip().is_loopback() && cfg.token.is_none() {
        eprintln!("hood serve: WARNING: listening on {addr} WITHOUT authentication (--unauthenticated): anyone who reaches this port can read process metrics and CPU profiles");
    }
    eprintln!("hood serve: listening on http://{addr} (/metrics, /debug/pprof/profile?seconds=N[&pid=P], /healthz)");
    let state = Arc::new(State {
        scratch,
        scraper: Scraper::new(
            Selection {
                top: cfg.top,
                filter: cfg.process_filter.clone(),
            },
            limits.held_processes,
        ),
        token: cfg.token.clone(),
        stop: Arc::clone(&stop),
    });
    listener.serve(limits, &stop, move |req| {
        let state = Arc::clone(&state);
        async move { state.handle(req).await }
    });
    eprintln!("hood serve: stopping");
    Ok(())
}

/// What the requests share.
struct State {
    /// Private directory for recordings, removed at exit.
    scratch: tempfile::TempDir,
    scraper: Scraper,
    token: Option<String>,
    /// Set by SIGINT/SIGTERM; cuts a running profile short.
    stop: Arc<AtomicBool>,
}

/// Set while a profile is recorded.
static PROFILING: AtomicBool = AtomicBool::new(false);

/// An answer with `body` of content type `kind`.
fn reply(code: u16, kind: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Reply::new(Full::new(body.into()));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    with_header(r, hyper::header::CONTENT_TYPE, kind)
}

fn text(code: u16, body: impl Into<String>) -> Reply {
    reply(code, "text/plain; charset=utf-8", body.into())
}

fn with_header(mut r: Reply, name: HeaderName, value: &'static str) -> Reply {
    r.headers_mut()
        .insert(name, HeaderValue::from_static(value));
    r
}

impl State {
    /// Answer one request; slow work (a scrape, a profile) runs on the blocking threads.
    async fn handle(self: Arc<Self>, req: Request<hyper::body::Incoming>) -> Reply {
        let path = req.uri().path().to_string();
        let query = req.uri().query().unwrap_or("").to_string();
        if req.method() != Method::GET {
            text(405, "only GET is served\n")
        } else if path == "/healthz" {
            text(200, "ok\n")
        } else if !matches!(path.as_str(), "/metrics" | "/debug/pprof/profile") {
            text(
                404,
                "not found; try /metrics, /debug/pprof/profile?seconds=N or /healthz\n",
            )
        } else if !self.authorized(&req) {
            with_header(
                text(
                    401,
                    "missing or wrong bearer token (send `Authorization: Bearer TOKEN`)\n",
                ),
                hyper::header::WWW_AUTHENTICATE,
                "Bearer",
            )
        } else {
            // The request (and its unread body) is not needed past this point.
            drop(req);
            let work = tokio::task::spawn_blocking(move || {
                if path == "/metrics" {
                    match self.scraper.scrape() {
                        Ok(body) => reply(200, CONTENT_TYPE, body),
                        Err(e) => text(500, format!("{e:#}\n")),
                    }
                } else {
                    profile_reply(&query, self.scratch.path(), &self.stop)
                }
            });
            work.await
                .unwrap_or_else(|e| text(500, format!("answering failed: {e}\n")))
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

fn profile_reply(query: &str, scratch: &std::path::Path, stop: &AtomicBool) -> Reply {
    let preq = match parse_query(query) {
        Ok(r) => r,
        Err(e) => return text(400, format!("{e}\n")),
    };
    if let Some(pid) = preq.pid {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return text(404, format!("no process {pid}\n"));
        }
    }
    let Some(_slot) = Slot::try_take(&PROFILING) else {
        return with_header(
            text(
                429,
                "a profile is being recorded; one at a time, retry later\n",
            ),
            hyper::header::RETRY_AFTER,
            "5",
        );
    };
    match profile::profile(&preq, scratch, stop) {
        Ok(bytes) => with_header(
            reply(200, "application/octet-stream", bytes),
            hyper::header::CONTENT_DISPOSITION,
            "attachment; filename=\"profile.pb.gz\"",
        ),
        Err(e) => text(500, format!("profiling failed: {e:#}\n")),
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
}
