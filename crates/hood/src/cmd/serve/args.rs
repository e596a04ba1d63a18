//! `hood serve` arguments and their validated config ([`hood_serve::Config`]).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use hood_serve::{BuildInfo, Config, MAX_TOP};

/// Serve Prometheus metrics, pprof CPU profiles and a health check over HTTP.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on. Anything but loopback needs --token (or
    /// --unauthenticated).
    #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR:PORT")]
    pub listen: String,
    /// Require `Authorization: Bearer TOKEN` on /metrics and /debug/pprof/*. Without a
    /// token, whole-machine profiles and kernel symbols go only to root processes on this
    /// machine; other clients get one process's profile, kernel frames unnamed.
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
    pub token: Option<String>,
    /// Read the token from FILE (first line), which keeps it out of the process list.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Allow a non-loopback --listen without --token (anyone who can reach the port can read
    /// metrics and profiles).
    #[arg(long)]
    pub unauthenticated: bool,
    /// Export per-process series for at most this many processes (busiest first).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// Export only processes whose pid equals, or name, user or command line contains, TEXT.
    #[arg(long, value_name = "TEXT")]
    pub process_filter: Option<String>,
}

/// A token file is one line; a larger one is refused.
const MAX_TOKEN_FILE: u64 = 64 << 10;

impl ServeArgs {
    /// Validate and convert.
    pub fn to_config(&self) -> anyhow::Result<Config> {
        let listen: SocketAddr = self.listen.parse().with_context(|| {
            format!(
                "--listen {}: expected ADDR:PORT such as 127.0.0.1:9464 or [::1]:9464",
                self.listen
            )
        })?;
        if self.top == 0 || self.top > MAX_TOP {
            bail!("--top {}: must be between 1 and {MAX_TOP}", self.top);
        }
        let from_file = match &self.token_file {
            // A regular file of at most 64 KiB (never a FIFO, a device or /dev/zero).
            Some(f) => Some(
                String::from_utf8_lossy(
                    &hood_format::untrusted::read_all(
                        f,
                        hood_format::untrusted::Policy::NAMED,
                        MAX_TOKEN_FILE,
                    )
                    .context("--token-file")?,
                )
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
            ),
            None => None,
        };
        let token = match self.token.as_ref().or(from_file.as_ref()) {
            Some(t) if t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                bail!("--token: must be non-empty, without spaces or control characters")
            }
            t => t.cloned(),
        };
        if !listen.ip().is_loopback() && token.is_none() && !self.unauthenticated {
            bail!(
                "--listen {listen} is reachable from other machines and no --token was given: \
                 anyone could read this machine's processes and profiles. \
                 Fix: add --token SECRET (clients send `Authorization: Bearer SECRET`), \
                 or --unauthenticated if that is really intended"
            );
        }
        let process_filter = self.process_filter.clone().filter(|f| !f.is_empty());
        Ok(Config {
            listen,
            token,
            top: self.top,
            process_filter,
            build: BuildInfo {
                version: env!("CARGO_PKG_VERSION"),
                commit: env!("BUILD_COMMIT"),
                date: env!("BUILD_DATE"),
            },
        })
    }
}
