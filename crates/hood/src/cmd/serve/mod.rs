//! `hood serve`: one HTTP process for fleets — Prometheus `/metrics` from the monitor's data,
//! `/debug/pprof/profile` (the pull endpoint Parca and Pyroscope scrape) and `/healthz`.
//! See docs/serve.md.

mod args;
mod lean;
mod metrics;
mod profile;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hood_report::metrics::{Selection, CONTENT_TYPE};
use tiny_http::{Header, Request, Response, Server};

pub use args::{ServeArgs, ServeConfig};
use metrics::Scraper;
use profile::{parse_query, Slot};

/// Request threads: one may sit in a profile for a minute while the others answer scrapes.
const WORKERS: usize = 4;

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
    let server = Server::http(cfg.listen)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| {
            format!(
                "listening on {} (is the port in use? try --listen with another port)",
                cfg.listen
            )
        })?;
    let addr = server
        .server_addr()
        .to_ip()
        .map_or_else(|| cfg.listen.to_string(), |a| a.to_string());
    if !cfg.listen.ip().is_loopback() && cfg.token.is_none() {
        eprintln!("hood serve: WARNING: listening on {addr} WITHOUT authentication (--unauthenticated): anyone who reaches this port can read process metrics and CPU profiles");
    }
    eprintln!("hood serve: listening on http://{addr} (/metrics, /debug/pprof/profile?seconds=N[&pid=P], /healthz)");
    let state = Arc::new(State {
        scratch,
        scraper: Scraper::new(Selection {
            top: cfg.top,
            filter: cfg.process_filter.clone(),
        }),
        token: cfg.token.clone(),
        stop: Arc::clone(&stop),
    });
    let server = Arc::new(server);
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let (server, state, stop) = (Arc::clone(&server), Arc::clone(&state), Arc::clone(&stop));
        workers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match server.recv_timeout(Duration::from_millis(200)) {
                    Ok(Some(req)) => state.handle(req),
                    Ok(None) => {}
                    Err(e) => eprintln!("hood serve: accepting a request: {e}"),
                }
            }
        }));
    }
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    server.unblock();
    eprintln!("hood serve: stopping");
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}

/// What the request threads share.
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

type Reply = Response<std::io::Cursor<Vec<u8>>>;

fn text(code: u16, body: impl Into<String>) -> Reply {
    Response::from_string(body.into())
        .with_status_code(code)
        .with_header(header("Content-Type", "text/plain; charset=utf-8"))
}

fn header(k: &str, v: &str) -> Header {
    Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("static header is valid")
}

impl State {
    fn handle(&self, req: Request) {
        let url = req.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        let reply = if *req.method() != tiny_http::Method::Get {
            text(405, "only GET is served\n")
        } else if path == "/healthz" {
            text(200, "ok\n")
        } else if !matches!(path, "/metrics" | "/debug/pprof/profile") {
            text(
                404,
                "not found; try /metrics, /debug/pprof/profile?seconds=N or /healthz\n",
            )
        } else if !self.authorized(&req) {
            text(
                401,
                "missing or wrong bearer token (send `Authorization: Bearer TOKEN`)\n",
            )
            .with_header(header("WWW-Authenticate", "Bearer"))
        } else if path == "/metrics" {
            match self.scraper.scrape() {
                Ok(body) => {
                    Response::from_string(body).with_header(header("Content-Type", CONTENT_TYPE))
                }
                Err(e) => text(500, format!("{e:#}\n")),
            }
        } else {
            profile_reply(query, self.scratch.path(), &self.stop)
        };
        if let Err(e) = req.respond(reply) {
            eprintln!("hood serve: answering {path}: {e}");
        }
    }

    /// Whether the request carries the bearer token (always, when none is required).
    fn authorized(&self, req: &Request) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        req.headers()
            .iter()
            .filter(|h| h.field.equiv("Authorization"))
            .filter_map(|h| h.value.as_str().strip_prefix("Bearer "))
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
        return text(
            429,
            "a profile is being recorded; one at a time, retry later\n",
        )
        .with_header(header("Retry-After", "5"));
    };
    match profile::profile(&preq, scratch, stop) {
        Ok(bytes) => Response::from_data(bytes)
            .with_header(header("Content-Type", "application/octet-stream"))
            .with_header(header(
                "Content-Disposition",
                "attachment; filename=\"profile.pb.gz\"",
            )),
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
