//! `hood diff BASE NEW`: the comparison hood-model derived
//! ([`hood_model::profile::diff`]) as a text table, JSON, collapsed pairs and a differential
//! flame graph; the pprof form is [`crate::pprof::diff`].

use std::io::Write;

use hood_model::profile::aggregate::{Filter, Measure};
use hood_model::profile::diff::{folded_pairs, Diff, DiffBy, DiffRow, DiffSide};
use hood_model::profile::Profile;
use inferno::flamegraph;
use serde::Serialize;

use super::fmt::{ellipsize, FitLines};
use super::header::{filter_text, target};
use crate::{safe, ReportError};

/// Version of the `hood diff --format json` layout (docs/json.md).
pub const DIFF_SCHEMA_VERSION: u32 = 1;

/// The two profiles, their names, and their comparison.
pub struct DiffView<'a> {
    /// BASE, read.
    pub base: &'a Profile,
    /// NEW, read.
    pub new: &'a Profile,
    /// BASE's file name.
    pub base_source: &'a str,
    /// NEW's file name.
    pub new_source: &'a str,
    /// The samples compared.
    pub filter: &'a Filter,
    /// The rows.
    pub diff: &'a Diff,
}

/// How the text table is laid out.
#[derive(Debug, Clone, Copy)]
pub struct DiffTextOptions {
    /// At most this many rows (`usize::MAX`: all).
    pub rows: usize,
    /// Longest line, characters (`usize::MAX`: no limit).
    pub width: usize,
}

/// A time in ns as text (`2.31 s`, `250.0 ms`, `12 µs`), or a count when not timed.
pub(crate) fn amount(v: f64, timed: bool) -> String {
    if !timed {
        return format!("{v:.0}");
    }
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2} s", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1} ms", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.0} µs", v / 1e3)
    } else {
        format!("{v:.0} ns")
    }
}

/// A change as [`amount`] writes it, with its sign (`+`, `±` for none).
pub(crate) fn signed(v: f64, timed: bool) -> String {
    let s = amount(v, timed);
    if v > 0.0 {
        format!("+{s}")
    } else if v == 0.0 {
        format!("±{s}")
    } else {
        s
    }
}

/// The heads of a diff table's first columns, the change of `delta` (`Δtime`, `Δsamples`)
/// and of the shares, as both diffs (profiles, calls) print them.
pub(crate) fn change_columns(delta: &str) -> String {
    format!(
        "{:>10} {:>8} {:>10} {:>10} {:>6} {:>6} {:>7}",
        delta, "Δ%", "base", "new", "base%", "new%", "points"
    )
}

/// A change in percent (`+12.3%`), or `new` for a row BASE did not have.
pub(crate) fn percent(p: Option<f64>) -> String {
    match p {
        Some(p) => format!("{p:+.1}%"),
        None => "new".into(),
    }
}

/// The row's name as the table shows it: `name [k]`, and for lines `file:line function`.
fn row_label(r: &DiffRow, by: DiffBy) -> String {
    let mut s = safe::text(&r.name).into_owned();
    if let Some(f) = &r.function {
        s.push_str("  ");
        s.push_str(&safe::text(f));
    }
    if r.kernel && by != DiffBy::Comm {
        s.push_str(" [k]");
    }
    s
}

fn side_line(p: &Profile, source: &str, s: &DiffSide, timed: bool) -> String {
    let m = &p.meta;
    let time = if timed {
        format!(", {}", amount(s.time, true))
    } else {
        String::new()
    };
    format!(
        "{}: {}, {} at {} Hz, {} samples{time}",
        safe::text(source),
        safe::text(&target(p)),
        safe::text(&m.event),
        m.freq_hz,
        s.samples
    )
}

/// Write the text table: the two recordings, the total change, then the rows with the
/// largest change first.
pub fn render_diff_text(
    v: &DiffView<'_>,
    opts: &DiffTextOptions,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let mut out = FitLines::new(out, opts.width.max(1));
    let d = v.diff;
    let timed = d.timed;
    writeln!(
        out,
        "BASE  {}",
        side_line(v.base, v.base_source, &d.base, timed)
    )?;
    writeln!(
        out,
        "NEW   {}",
        side_line(v.new, v.new_source, &d.new, timed)
    )?;
    if let Some(f) = filter_text(v.filter) {
        writeln!(out, "Filter: {f}")?;
    }
    let what = match v.filter.measure {
        Measure::CpuSamples => "CPU time",
        Measure::Wall => "wall-clock time",
        Measure::OffCpu => "off-CPU time",
    };
    let total = d.new.time - d.base.time;
    let rel = (d.base.time > 0.0).then(|| total * 100.0 / d.base.time);
    writeln!(
        out,
        "Total {what}: {} → {}, {} ({})",
        amount(d.base.time, timed),
        amount(d.new.time, timed),
        signed(total, timed),
        percent(rel)
    )?;
    let key = match d.by {
        DiffBy::Function => "function",
        DiffBy::Comm => "process name",
        DiffBy::Dso => "file",
        DiffBy::Line => "source line  function",
    };
    writeln!(
        out,
        "Largest changes first; noise: within sampling error (|z| < {:.2}, 99 %)",
        d.noise_z
    )?;
    let unit = if timed { "time" } else { "samples" };
    let head = format!("{} {:5}  ", change_columns(&format!("Δ{unit}")), "");
    let room = opts.width.saturating_sub(head.chars().count()).max(16);
    writeln!(out, "{head}{key}")?;
    for r in d.rows.iter().take(opts.rows) {
        let mut label = row_label(r, d.by);
        if let Some(dso) = r.dso.as_deref().filter(|_| d.by == DiffBy::Function) {
            label.push_str("  ");
            label.push_str(&safe::text(dso));
        }
        writeln!(
            out,
            "{:>10} {:>8} {:>10} {:>10} {:>6.1} {:>6.1} {:>+7.1} {:5}  {}",
            signed(r.delta_time, timed),
            percent(r.change_percent),
            amount(r.base_time, timed),
            amount(r.new_time, timed),
            r.base_percent,
            r.new_percent,
            r.delta_points,
            if r.noise { "noise" } else { "" },
            ellipsize(&label, room)
        )?;
    }
    let rest = d.rows.len().saturating_sub(opts.rows);
    if rest > 0 {
        let moved: f64 = d.rows[opts.rows..].iter().map(|r| r.delta_time).sum();
        let noise = d.rows[opts.rows..].iter().filter(|r| r.noise).count();
        writeln!(
            out,
            "({rest} more rows, {noise} of them noise, together {}; --top 0 shows all)",
            signed(moved, timed)
        )?;
    }
    out.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct SideJson<'a> {
    source: &'a str,
    target: String,
    event: &'a str,
    freq_hz: u64,
    total: u64,
    time: u64,
    samples: u64,
}

#[derive(Serialize)]
struct RowJson<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<&'a str>,
    kernel: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    dso: Option<&'a str>,
    base: u64,
    new: u64,
    base_time: u64,
    new_time: u64,
    delta_time: i64,
    change_percent: Option<f64>,
    base_percent: f64,
    new_percent: f64,
    delta_points: f64,
    z: f64,
    noise: bool,
}

#[derive(Serialize)]
struct DiffJson<'a> {
    schema_version: u32,
    by: DiffBy,
    measure: &'static str,
    time_unit: &'static str,
    noise_z: f64,
    base: SideJson<'a>,
    new: SideJson<'a>,
    warnings: &'a [String],
    rows: Vec<RowJson<'a>>,
}

fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn side_json<'a>(p: &'a Profile, source: &'a str, s: &DiffSide) -> SideJson<'a> {
    SideJson {
        source,
        target: target(p),
        event: &p.meta.event,
        freq_hz: p.meta.freq_hz,
        total: s.total,
        time: s.time.round() as u64,
        samples: s.samples,
    }
}

/// Write the comparison as one JSON object (docs/json.md, `hood diff`).
pub fn render_diff_json(v: &DiffView<'_>, out: &mut dyn Write) -> Result<(), ReportError> {
    let d = v.diff;
    let doc = DiffJson {
        schema_version: DIFF_SCHEMA_VERSION,
        by: d.by,
        measure: match v.filter.measure {
            Measure::CpuSamples => "samples",
            Measure::Wall => "wall",
            Measure::OffCpu => "off_cpu",
        },
        time_unit: if d.timed { "ns" } else { "samples" },
        noise_z: d.noise_z,
        base: side_json(v.base, v.base_source, &d.base),
        new: side_json(v.new, v.new_source, &d.new),
        warnings: &d.warnings,
        rows: d
            .rows
            .iter()
            .map(|r| RowJson {
                name: &r.name,
                function: r.function.as_deref(),
                kernel: r.kernel,
                dso: r.dso.as_deref(),
                base: r.base,
                new: r.new,
                base_time: r.base_time.round() as u64,
                new_time: r.new_time.round() as u64,
                delta_time: r.delta_time.round() as i64,
                change_percent: r.change_percent.map(r3),
                base_percent: r3(r.base_percent),
                new_percent: r3(r.new_percent),
                delta_points: r3(r.delta_points),
                z: r3(r.z),
                noise: r.noise,
            })
            .collect(),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

/// Write `stack base new` per stack found in either profile (the pairs of
/// `difffolded.pl` and `inferno-diff-folded`), sorted by stack; counts as the filter weighs
/// them (samples, or ns).
pub fn render_diff_collapsed(v: &DiffView<'_>, out: &mut dyn Write) -> Result<(), ReportError> {
    for (stack, b, n) in folded_pairs(v.base, v.new, v.filter) {
        writeln!(out, "{stack} {b} {n}")?;
    }
    Ok(())
}

/// Write a differential flame graph: NEW's stacks (`base_shape`: BASE's), each frame
/// coloured by its change from BASE to NEW (red: more in NEW, blue: less; the deeper the
/// colour, the larger the change). Code found only in BASE has no width in NEW's shape: BASE's
/// shape draws it, in blue.
pub fn render_diff_svg(
    v: &DiffView<'_>,
    base_shape: bool,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    let pairs = folded_pairs(v.base, v.new, v.filter);
    let shape = if base_shape {
        v.base_source
    } else {
        v.new_source
    };
    if pairs
        .iter()
        .all(|p| if base_shape { p.1 == 0 } else { p.2 == 0 })
    {
        let hint = match filter_text(v.filter) {
            Some(f) => format!("; no sample of {shape} passes the filter ({f})"),
            None => format!("; {shape} holds no samples"),
        };
        return Err(ReportError::NoSamples {
            what: "draw a differential flamegraph",
            hint,
        });
    }
    // inferno draws the second count's shape and colours by second − first; BASE's shape is
    // drawn from swapped counts with the difference negated back to NEW − BASE.
    let lines: Vec<String> = pairs
        .iter()
        .map(|(s, b, n)| {
            if base_shape {
                format!("{s} {n} {b}")
            } else {
                format!("{s} {b} {n}")
            }
        })
        .collect();
    let mut fg = flamegraph::Options::default();
    fg.negate_differentials = base_shape;
    fg.title = format!("hood diff: {} → {}", v.base_source, v.new_source);
    let sub = format!(
        "{shape}'s shape; red: more {} in {} than in {}, blue: less",
        v.filter.unit(),
        v.new_source,
        v.base_source
    );
    fg.count_name = v.filter.unit().into();
    super::folded::draw(&mut fg, sub, v.filter, &lines, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::testutil::Builder;
    use hood_model::profile::diff::{diff, DiffBy};
    use hood_model::profile::Mode;

    /// BASE ran `gone` and `kept`; NEW runs `kept` twice as long and no `gone`.
    fn pair() -> (Profile, Profile) {
        let side = |gone: u64, kept: u64| {
            let mut b = Builder::new();
            b.process(7, "work", &[(7, "work")]);
            let main = b.func("main", "work");
            let (g, k) = (b.func("gone", "work"), b.func("kept", "work"));
            if gone > 0 {
                b.samples(7, 7, Mode::User, &[g, main], gone);
            }
            b.samples(7, 7, Mode::User, &[k, main], kept);
            b.finish(&[])
        };
        (side(50, 50), side(0, 100))
    }

    fn svg(base_shape: bool) -> String {
        let (base, new) = pair();
        let f = Filter::default();
        let d = diff(&base, &new, &f, DiffBy::Function);
        let v = DiffView {
            base: &base,
            new: &new,
            base_source: "base.data",
            new_source: "new.data",
            filter: &f,
            diff: &d,
        };
        let mut out = Vec::new();
        render_diff_svg(&v, base_shape, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The fill of the first frame titled `name`: (r, g, b).
    fn fill(svg: &str, name: &str) -> Option<(u32, u32, u32)> {
        let frame = svg.split(&format!("<title>{name} (")).nth(1)?;
        let rgb: Vec<u32> = frame
            .split("fill=\"rgb(")
            .nth(1)?
            .split(')')
            .next()?
            .split(',')
            .map(|c| c.trim().parse().unwrap())
            .collect();
        Some((rgb[0], rgb[1], rgb[2]))
    }

    #[test]
    fn base_shape_draws_code_only_base_ran_in_blue() {
        let new_shape = svg(false);
        assert!(
            fill(&new_shape, "gone").is_none(),
            "NEW's shape has no `gone`"
        );
        let (r, g, b) = fill(&new_shape, "kept").unwrap();
        assert!(r == 255 && g == b && g < 255, "kept grew: red, {r},{g},{b}");

        let base_shape = svg(true);
        // The subtitle (its apostrophe escaped in the SVG's text).
        assert!(
            base_shape.contains("base.data&apos;s shape")
                || base_shape.contains("base.data's shape")
        );
        // `gone` is drawn, blue (less in NEW); `kept` still red (more in NEW).
        let (r, g, b) = fill(&base_shape, "gone").expect("BASE's shape draws `gone`");
        assert!(
            b == 255 && r == g && r < 255,
            "gone shrank: blue, {r},{g},{b}"
        );
        let (r, g, b) = fill(&base_shape, "kept").unwrap();
        assert!(r == 255 && g == b && g < 255, "kept grew: red, {r},{g},{b}");
    }
}
