//! Folded stacks (`--format collapsed`) and the flamegraph SVG drawn from them by inferno.

use std::io::Write;

use hood_model::profile::aggregate::{folded, Filter};
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
    fg.count_name = "samples".into();
    fg.colors = Palette::Multi(MultiPalette::Java);
    fg.hash = true; // the same function gets the same colour in every graph
    let sub = format!("{} at {} Hz, {}", m.event, m.freq_hz, opts.source);
    draw(&mut fg, sub, &opts.filter, &lines, out)
}

/// Draw `lines` (folded stacks and their counts) as `fg` says, under the subtitle `sub`
/// followed by what `filter` keeps, if it keeps less than all.
pub(crate) fn draw(
    fg: &mut flamegraph::Options<'_>,
    mut sub: String,
    filter: &Filter,
    lines: &[String],
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    if let Some(f) = filter_text(filter) {
        sub.push_str(&format!(", {f}"));
    }
    fg.subtitle = Some(sub);
    flamegraph::from_lines(fg, lines.iter().map(String::as_str), out).map_err(|e| {
        ReportError::Io(std::io::Error::new(
            e.kind(),
            format!("drawing the flamegraph: {e}"),
        ))
    })?;
    Ok(())
}
