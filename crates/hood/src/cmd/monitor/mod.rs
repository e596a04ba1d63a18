//! The system monitor subcommands (issue 3): `hood ps`, `hood uptime`, `hood top`, `hood info`.
//! Each converts its clap arguments into model/report config and drives hood-procfs.

pub mod info;
mod pick;
pub mod ps;
pub mod store;
pub mod top;
pub mod uptime;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use hood_monitor::{derive, ScanOptions, Snapshot, SortKey, SystemView};
use hood_procfs::ProcReader;

/// Open a reader of `/proc` or of the given fake root.
pub(crate) fn reader(root: &Option<PathBuf>) -> ProcReader {
    match root {
        // A fake tree may bring its own passwd for uid -> name.
        Some(r) if r.join("passwd").is_file() => {
            ProcReader::with_root(r).with_passwd(r.join("passwd"))
        }
        Some(r) => ProcReader::with_root(r),
        None => ProcReader::new(),
    }
}

/// [`reader`] that also reports the processes that ended between two snapshots (`hood top`,
/// its recorder); not for a fake tree, whose processes never end.
pub(crate) fn reader_with_exits(root: &Option<PathBuf>) -> ProcReader {
    match root {
        Some(_) => reader(root),
        None => reader(root).with_exit_accounting(),
    }
}

/// Take a snapshot, and a second one `interval` later when non-zero, and derive the view.
pub(crate) fn sample(
    r: &mut ProcReader,
    opts: &ScanOptions,
    interval: Duration,
) -> anyhow::Result<SystemView> {
    let first: Snapshot = r.snapshot(opts).context("reading /proc")?;
    if interval.is_zero() {
        return Ok(derive(None, &first));
    }
    std::thread::sleep(interval);
    let second = r.snapshot(opts).context("reading /proc")?;
    Ok(derive(Some(&first), &second))
}

/// `--sort KEY` and `--filter TEXT`, spelled the same by `hood ps` and `hood top`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Order {
    /// Sort by KEY (pid, name, user, state, threads, pri, nice, virt, mem, cpu, ucpu, kcpu,
    /// time, ctx, syscalls, bytes); prefix `+` ascending, `-` descending.
    #[arg(long, value_name = "KEY", allow_hyphen_values = true, value_parser = crate::cmd::values::SortKeys)]
    pub sort: Option<String>,
    /// Only tasks whose pid, name, user or command line contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
}

/// Parse `--sort KEY` (default given), telling the valid keys on error.
pub(crate) fn sort_key(s: Option<&str>, default: SortKey) -> anyhow::Result<SortKey> {
    match s {
        None => Ok(default),
        Some(s) => match SortKey::parse(s.trim_start_matches(['+', '-'])) {
            Some(k) => Ok(k),
            None => {
                let keys: Vec<&str> = SortKey::ALL.iter().map(|k| k.name()).collect();
                bail!("unknown sort key {s:?}; use one of: {}", keys.join(", "))
            }
        },
    }
}

/// Direction for a `--sort` value: a leading `+` means ascending, `-` descending, none means
/// the key's natural direction.
pub(crate) fn descending(s: Option<&str>, key: SortKey) -> bool {
    match s.and_then(|s| s.chars().next()) {
        Some('+') => false,
        Some('-') => true,
        _ => key.descending_by_default(),
    }
}

/// Output width: the terminal's when stdout is one, else `$COLUMNS`, else unlimited-ish.
pub(crate) fn out_width() -> usize {
    if std::io::stdout().is_terminal() {
        if let Some(w) = hood_tui::terminal_width() {
            return w as usize;
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(512)
}

/// Write text to stdout. A closed pipe (`| head`) is an error here, so that `hood top -b`
/// stops instead of sampling for a reader that has gone; main ends such a run quietly.
pub(crate) fn emit(s: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .context("writing to standard output")
}

/// Render to stdout as [`emit`] writes text (a closed pipe is an error, with the same message).
pub(crate) fn emit_with(
    render: impl FnOnce(&mut dyn Write) -> Result<(), hood_report::ReportError>,
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    render(&mut out)
        .map_err(|e| match e {
            hood_report::ReportError::Io(e) => e,
            other => std::io::Error::other(other),
        })
        .and_then(|()| out.flush())
        .context("writing to standard output")
}
