//! Folded stacks (`--format collapsed`) and the flamegraph SVG drawn from them by inferno.

use std::io::Write;

use hood_model::profile::aggregate::folded;
use hood_model::profile::Profile;
use inferno::flamegraph::{self, color::MultiPalette, Palette};

use super::header::{filter_text, target};
use super::ReportOptions;
use crate::ReportError;

/// Write one line `COMM;root;...;leaf COUNT` per unique stack (kernel frames suffixed
/// `_[k]`); the counts sum to the samples passing `opts.filter`.
pub fn render_collapsed(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    for (stack, count) in folded(prof, &opts.filter) {
        writeln!(out, "{stack} {count}")?;
    }
    Ok(())
}

/// Write an interactive flamegraph SVG of the samples passing `opts.filter`, titled with what
/// was recorded and the event. Kernel frames are drawn orange.
pub fn render_svg(
    prof: &Profile,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let lines: Vec<String> = folded(prof, &opts.filter)
        .into_iter()
        .map(|(stack, count)| format!("{stack} {count}"))
        .collect();
    if lines.is_empty() {
        let hint = match filter_text(&opts.filter) {
            Some(f) => format!("; no sample passes the filter ({f})"),
            None => format!("; {} holds no samples", opts.source),
        };
        return Err(ReportError::NoSamples {
            what: "draw a flamegraph",
            hint,
        });
    }
    let m = &prof.meta;
    let mut fg = flamegraph::Options::default();
    fg.title = format!("hood: {}", target(prof));
    let mut sub = format!("{} at {} Hz, {}", m.event, m.freq_hz, opts.source);
    if let Some(f) = filter_text(&opts.filter) {
        sub.push_str(&format!(", {f}"));
    }
    fg.subtitle = Some(sub);
    fg.count_name = "samples".into();
    fg.colors = Palette::Multi(MultiPalette::Java);
    fg.hash = true; // the same function gets the same colour in every graph
    flamegraph::from_lines(&mut fg, lines.iter().map(String::as_str), out).map_err(|e| {
        ReportError::Io(std::io::Error::new(
            e.kind(),
            format!("drawing the flamegraph: {e}"),
        ))
    })?;
    Ok(())
}
