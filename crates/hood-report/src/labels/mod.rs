//! Process-labeled kernel profile reports (`hood report --labels`): every sample
//! charged to the process it served. Text (per-process split of kernel time into synchronous
//! and asynchronous work, flat profiles named `PIDu:func` / `PIDk:func`), a gprof-style flat
//! profile and call graph with edges across the user→kernel boundary, and collapsed stacks
//! whose first frame is the charged process.

pub mod collapsed;
pub mod gprof;
pub mod stacks;
pub mod text;

#[cfg(test)]
mod tests;

use hood_model::labels::{Charge, Labeled};
use hood_model::profile::Profile;

pub use collapsed::render_labels_collapsed;
pub use gprof::render_labels_gprof;
pub use text::render_labels_text;

/// A profile with one charge per sample.
#[derive(Debug, Clone, Copy)]
pub struct LabeledView<'a> {
    /// The symbolized profile.
    pub prof: &'a Profile,
    /// The charges and completeness checks.
    pub labeled: &'a Labeled,
    /// Name of the recording, for headers.
    pub source: &'a str,
    /// Only samples charged to this process (`hood report --pid`).
    pub pid: Option<u32>,
    /// Only samples charged to processes of this name (`hood report --comm`).
    pub comm: Option<&'a str>,
}

impl<'a> LabeledView<'a> {
    /// Samples with their charges, those the `pid`/`comm` filters keep.
    pub fn charged(&self) -> impl Iterator<Item = (&'a hood_model::profile::Sample, Charge)> + 'a {
        let charges = &self.labeled.attribution.charges;
        let (prof, pid, comm) = (self.prof, self.pid, self.comm);
        self.prof
            .samples
            .iter()
            .zip(charges.iter().copied())
            .filter(move |&(_, c)| {
                pid.is_none_or(|p| c.pid() == Some(p))
                    && comm.is_none_or(|n| c.pid().is_some_and(|p| prof.comm(p) == n))
            })
    }

    /// Display label of a charge: the process as `PID comm`, or `[kernel]`, `[other]`,
    /// `[idle]`.
    pub fn owner(&self, c: Charge) -> String {
        match c.pid() {
            Some(p) => format!("{p} {}", self.prof.comm(p)),
            None => bucket(c).to_string(),
        }
    }

    /// Prefix of function names of a charge: `PID` or the bucket name.
    pub fn prefix(&self, c: Charge) -> String {
        match c.pid() {
            Some(p) => p.to_string(),
            None => bucket(c).to_string(),
        }
    }

    /// Seconds a sample stands for when the event is a clock (period in ns), else `None`.
    pub fn clock_event(&self) -> bool {
        self.prof.meta.event.contains("clock")
    }
}

/// `[kernel]`, `[other]`, `[idle]` for charges without a process.
pub fn bucket(c: Charge) -> &'static str {
    match c {
        Charge::Idle => "[idle]",
        Charge::Kernel => "[kernel]",
        Charge::Other(_) => "[other]",
        Charge::Sync(_) | Charge::Async(..) => "",
    }
}

/// Header lines shared by the renderers: completeness of the event stream (received versus
/// the kernel's counts) and how the tags fared.
pub fn header_lines(v: &LabeledView<'_>) -> Vec<String> {
    let l = v.labeled;
    let mut out = vec![format!(
        "process-labeled kernel profile of {}: {} samples, {} events ({} NET_RX packets, {} consumed; {} block requests, {} with a waiter)",
        v.source,
        v.prof.samples.len(),
        l.events,
        l.attribution.tags.net,
        l.attribution.tags.net_consumed,
        l.attribution.tags.block,
        l.attribution.tags.block_consumed,
    )];
    let mut filter = Vec::new();
    if let Some(p) = v.pid {
        filter.push(format!("charged to pid {p}"));
    }
    if let Some(c) = v.comm {
        filter.push(format!("charged to processes named {c}"));
    }
    if !filter.is_empty() {
        out.push(format!(
            "filter: samples {} ({} of {} samples)",
            filter.join(" and "),
            v.charged().count(),
            v.prof.samples.len()
        ));
    }
    let per: Vec<String> = l
        .per_cpu
        .iter()
        .map(|(cpu, c)| format!("cpu{cpu} {}/{}", c.received, c.kernel.written()))
        .collect();
    if !l.finalized {
        out.push("WARNING: the recording was not finalized; the kernel's event counts are unknown, completeness unchecked".into());
    } else if l.shortfall() > 0 {
        out.push(format!(
            "WARNING: {} traced events missing (received/kernel per CPU: {}); charges near the gaps may be wrong",
            l.shortfall(),
            per.join(", ")
        ));
    } else {
        out.push(format!(
            "events complete: received = kernel's count on every CPU ({})",
            per.join(", ")
        ));
    }
    if l.decode.malformed_pages > 0 || l.decode.pages_with_loss > 0 {
        out.push(format!(
            "WARNING: {} pages did not decode, {} pages flagged lost events ({} counted)",
            l.decode.malformed_pages, l.decode.pages_with_loss, l.decode.missed_in_pages
        ));
    }
    let b = &l.budget;
    if b.events_per_s > 0 && b.off_ns > 0 {
        let on = 100.0 * b.on_ns as f64 / (b.on_ns + b.off_ns).max(1) as f64;
        out.push(format!(
            "cost control ACTIVE: events exceeded the budget of {} events/s, so per-packet events were traced {on:.1}% of the time; {} NET_RX samples outside the traced windows were charged like the nearest traced one (extrapolated)",
            b.events_per_s, l.attribution.tags.extrapolated
        ));
    }
    if !l.missing_events.is_empty() {
        out.push(format!(
            "note: the recording kernel lacked {}",
            l.missing_events.join(", ")
        ));
    }
    out
}
