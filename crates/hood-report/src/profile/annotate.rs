//! `hood annotate FUNCTION`: the samples of one function per source line, with the source
//! text beside them (what `perf annotate --stdio` prints in source mode), or per machine
//! instruction with its disassembly ([`render_asm`], `--asm`).
//!
//! A sample counts for the function when the function is one of the functions at the sampled
//! address (the function holding the code, or one inlined there); it is put on the line the CPU
//! was at: the innermost line at that address, which for code inlined into the function is a
//! line of the inlined function (perhaps in another file), as perf does.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use hood_model::profile::aggregate::Filter;
use hood_model::profile::{FuncId, Profile};

use super::fmt::{pct, rule};
use crate::{safe, ReportError};

/// Lines of source shown around each sampled line.
pub const DEFAULT_CONTEXT: u32 = 3;

/// Which functions `name` means: those named exactly so; else, when the name is part of
/// exactly one function name, that one. `Err` lists the candidates (empty: none).
pub fn find_functions(prof: &Profile, name: &str) -> Result<Vec<FuncId>, Vec<String>> {
    let exact: Vec<FuncId> = (0..prof.funcs.len() as FuncId)
        .filter(|&f| prof.funcs[f as usize].name == name)
        .collect();
    if !exact.is_empty() {
        return Ok(exact);
    }
    let partial: BTreeSet<&str> = prof
        .funcs
        .iter()
        .filter(|f| f.name.contains(name))
        .map(|f| f.name.as_str())
        .collect();
    match partial.len() {
        1 => {
            let only = *partial.iter().next().unwrap_or(&"");
            Ok((0..prof.funcs.len() as FuncId)
                .filter(|&f| prof.funcs[f as usize].name == only)
                .collect())
        }
        _ => Err(partial.into_iter().take(20).map(str::to_string).collect()),
    }
}

/// Samples of `funcs` per (source file, line); `None` file: no line info.
#[derive(Debug, Default)]
pub struct Annotation {
    /// All samples passing the filter.
    pub total: u64,
    /// Samples in the function.
    pub samples: u64,
    /// Samples per file (index into `Profile::source_files`) and line.
    pub lines: BTreeMap<(Option<u32>, u32), u64>,
    /// The function was seen inlined (somewhere).
    pub inlined: bool,
    /// Samples per sampled instruction: (file holding it, its file offset) → (samples,
    /// innermost source line there).
    pub offsets: BTreeMap<(String, u64), (u64, Option<u32>, u32)>,
}

/// Count the samples of `funcs` per line.
pub fn annotate(prof: &Profile, filter: &Filter, funcs: &[FuncId]) -> Annotation {
    let mut a = Annotation::default();
    for s in filter.samples(prof) {
        a.total += 1;
        let Some(loc) = prof
            .loc_stacks
            .get(s.locs as usize)
            .and_then(|l| l.first())
            .and_then(|&l| prof.locations.get(l as usize))
        else {
            continue;
        };
        let lines = prof.lines_of(loc);
        let Some(hit) = lines.iter().find(|l| funcs.contains(&l.func)) else {
            continue;
        };
        a.inlined |= prof.funcs.get(hit.func as usize).is_some_and(|f| f.inlined);
        a.samples += 1;
        let at = lines[0];
        *a.lines.entry((at.file, at.line)).or_insert(0) += 1;
        if let Some(m) = loc.map.and_then(|m| prof.code_maps.get(m as usize)) {
            let off = loc.address.wrapping_sub(m.start).wrapping_add(m.offset);
            let e = a
                .offsets
                .entry((m.dso.clone(), off))
                .or_insert((0, at.file, at.line));
            e.0 += 1;
        }
    }
    a
}

/// The header's sample count and closing rule, the same for source and instructions.
fn samples_line(a: &Annotation, out: &mut dyn Write) -> Result<(), ReportError> {
    writeln!(
        out,
        "Samples:   {} ({:.1}% of {} samples)",
        a.samples,
        pct(a.samples, a.total),
        a.total
    )?;
    writeln!(out, "{}", rule('='))?;
    Ok(())
}

/// Write the annotation: per source file, the sampled lines with `context` lines around
/// them, each with its share of the function's samples. `source(path)` gives a file's text
/// (`Err`: why not).
pub fn render_annotate(
    prof: &Profile,
    name: &str,
    a: &Annotation,
    context: u32,
    source: &mut dyn FnMut(&str) -> Result<String, String>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    writeln!(out, "{}", rule('='))?;
    writeln!(
        out,
        "Function:  {}{}",
        safe::text(name),
        if a.inlined {
            " (inlined in places)"
        } else {
            ""
        }
    )?;
    samples_line(a, out)?;
    // Files by samples, most first.
    let mut files: BTreeMap<Option<u32>, u64> = BTreeMap::new();
    for (&(f, _), &n) in &a.lines {
        *files.entry(f).or_insert(0) += n;
    }
    let mut order: Vec<(Option<u32>, u64)> = files.into_iter().collect();
    order.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    for (file, n) in order {
        writeln!(out)?;
        let Some(path) = file.and_then(|f| prof.source_files.get(f as usize)) else {
            writeln!(
                out,
                "{n} samples ({:.1}%) at addresses without line information \
                 (no DWARF: build with -g, or install the binary's debug file)",
                pct(n, a.samples)
            )?;
            continue;
        };
        writeln!(
            out,
            "Source: {}  ({n} samples, {:.1}%)",
            safe::text(path),
            pct(n, a.samples)
        )?;
        let sampled: BTreeMap<u32, u64> = a
            .lines
            .iter()
            .filter(|((f, _), _)| *f == file)
            .map(|(&(_, l), &n)| (l, n))
            .collect();
        let text = match source(path) {
            Ok(t) => Some(t),
            Err(why) => {
                writeln!(out, "  (source not shown: {})", safe::text(&why))?;
                None
            }
        };
        let src: Vec<&str> = text.as_deref().map_or(Vec::new(), |t| t.lines().collect());
        writeln!(out, "  Percent  Samples   Line  Source")?;
        // The lines to show: each sampled line with its context, windows merged.
        if let Some(&n) = sampled.get(&0) {
            writeln!(
                out,
                "  {:>6.1}%  {n:>7}      ?  (code the compiler gave no line)",
                pct(n, a.samples)
            )?;
        }
        let mut show: BTreeSet<u32> = BTreeSet::new();
        for &l in sampled.keys().filter(|&&l| l > 0) {
            let ctx = if src.is_empty() { 0 } else { context };
            for x in l.saturating_sub(ctx).max(1)..=l.saturating_add(ctx) {
                if src.is_empty() || (x as usize) <= src.len() || x == l {
                    show.insert(x);
                }
            }
        }
        let mut last = 0u32;
        for l in show {
            if last != 0 && l > last + 1 {
                writeln!(out, "  {:>7}  {:>7}  {:>5}  …", "", "", "")?;
            }
            last = l;
            let text = src.get((l as usize).wrapping_sub(1)).copied().unwrap_or("");
            let text = text.replace('\t', "    ");
            let text = safe::text(&text);
            match sampled.get(&l) {
                Some(&n) => writeln!(out, "  {:>6.1}%  {n:>7}  {l:>5}  {text}", pct(n, a.samples))?,
                None => writeln!(out, "  {:>7}  {:>7}  {l:>5}  {text}", "", "")?,
            }
        }
    }
    Ok(())
}

/// One function's machine code for [`render_asm`]: its bytes and the file offset of the first.
#[derive(Debug, Clone, Copy)]
pub struct Code<'a> {
    /// The file holding it (a key of `Profile::dso_files`).
    pub dso: &'a str,
    /// The function's bytes.
    pub bytes: &'a [u8],
    /// File offset of `bytes[0]`.
    pub start: u64,
}

/// Write the per-instruction view of `code` (x86-64, AT&T syntax as objdump and perf print
/// it): each instruction with the samples taken on it, its share of the function's samples
/// and, where sampled, its source line. Addresses are file offsets.
pub fn render_asm(
    prof: &Profile,
    name: &str,
    a: &Annotation,
    code: &Code<'_>,
    out: &mut dyn Write,
) -> Result<(), ReportError> {
    use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction};
    writeln!(out, "{}", rule('='))?;
    writeln!(
        out,
        "Function:  {}  ({}, file offsets {:#x}..{:#x})",
        safe::text(name),
        safe::text(code.dso),
        code.start,
        code.start + code.bytes.len() as u64
    )?;
    samples_line(a, out)?;
    writeln!(out, "  Percent  Samples  Offset      Instruction")?;
    let mut decoder = Decoder::with_ip(64, code.bytes, code.start, DecoderOptions::NONE);
    let mut fmt = GasFormatter::new();
    fmt.options_mut().set_uppercase_hex(false);
    fmt.options_mut().set_branch_leading_zeros(false);
    let mut text = String::new();
    let mut ins = Instruction::default();
    let mut shown = 0u64;
    while decoder.can_decode() {
        decoder.decode_out(&mut ins);
        text.clear();
        fmt.format(&ins, &mut text);
        let at = ins.ip();
        match a.offsets.get(&(code.dso.to_string(), at)) {
            Some(&(n, file, line)) => {
                shown += n;
                let place = file
                    .and_then(|f| prof.source_files.get(f as usize))
                    .map(|f| {
                        let f = f.rsplit('/').next().unwrap_or(f);
                        format!("  // {}:{line}", safe::text(f))
                    })
                    .unwrap_or_default();
                writeln!(
                    out,
                    "  {:>6.1}%  {n:>7}  {at:>#10x}  {text}{place}",
                    pct(n, a.samples)
                )?
            }
            None => writeln!(out, "  {:>7}  {:>7}  {at:>#10x}  {text}", "", "")?,
        }
    }
    if shown < a.samples {
        writeln!(
            out,
            "\n{} samples of the function lie outside these bytes (other copies or parts of it, \
             or code inlined into other functions).",
            a.samples - shown
        )?;
    }
    Ok(())
}
