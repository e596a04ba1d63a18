//! Parsers for the text symbol sources: `/proc/kallsyms`, JIT perf maps
//! (`/tmp/perf-PID.map`) and nm-format symbol files (`--symfile`).
//!
//! All three are small hand-written line parsers that never panic on
//! input; the strict ones report the first bad line by number.

use crate::{SymbolError, SymbolTable};

/// The expected shape of a perf-map line, for error messages.
pub const PERF_MAP_FORMAT: &str = "\"START SIZE NAME\" with START and SIZE in hex";
/// The expected shape of an nm-format line, for error messages.
pub const NM_FORMAT: &str =
    "nm output: \"ADDR TYPE NAME\" or \"ADDR SIZE TYPE NAME\" with ADDR and SIZE in hex";

/// A line that a lenient parse skipped: 1-based number and reason.
pub type SkippedLine = (usize, String);

/// Splits off the first whitespace-separated token: `(token, rest)`.
fn token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

/// Parses a hex number with or without `0x`.
fn hex(tok: &str) -> Option<u64> {
    let digits = tok
        .strip_prefix("0x")
        .or_else(|| tok.strip_prefix("0X"))
        .unwrap_or(tok);
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// A one-letter nm/kallsyms symbol type.
fn sym_type(tok: &str) -> Option<char> {
    let mut chars = tok.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() || c == '?' || c == '-' => Some(c),
        _ => None,
    }
}

/// Code symbol types: local/global text, weak, and GNU indirect functions.
fn is_text(t: char) -> bool {
    matches!(t, 't' | 'T' | 'w' | 'W' | 'i')
}

/// Parses the text of `/proc/kallsyms` (lines `ADDR TYPE NAME` with an
/// optional `\t[module]`), keeping every symbol for bounding but letting
/// only code symbols (`t T w W`) resolve; module symbols are named
/// `func [module]`. Malformed lines are skipped and returned.
pub fn parse_kallsyms(text: &str) -> (SymbolTable, Vec<SkippedLine>) {
    parse_kallsyms_owned(text.to_owned())
}

/// [`parse_kallsyms`] taking the text by value: the table's names stay slices of
/// it, so the 5 MB of a kernel's symbols are indexed, not copied.
pub fn parse_kallsyms_owned(text: String) -> (SymbolTable, Vec<SkippedLine>) {
    // Kernel lines average about 45 bytes.
    let mut refs: Vec<(u64, usize, usize, bool, bool)> = Vec::with_capacity(text.len() / 40);
    let mut odd: Vec<(u64, String, bool)> = Vec::new();
    let mut skipped = Vec::new();
    let b = text.as_bytes();
    let (mut at, mut lineno) = (0usize, 0usize);
    while at < b.len() {
        lineno += 1;
        let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i);
        if let Some((addr, code, name_off, name_len, tab)) = kallsyms_line_in_place(&b[at..end]) {
            refs.push((addr, at + name_off, name_len, code, tab));
        } else {
            // `at` and `end` sit next to ASCII newlines: valid char boundaries.
            let line = text.get(at..end).unwrap_or("");
            if !line.trim().is_empty() {
                match kallsyms_line(line) {
                    Some((addr, t, name, module)) => {
                        let name = match module {
                            Some(m) => format!("{name} {m}"),
                            None => name.to_string(),
                        };
                        odd.push((addr, name, matches!(t, 't' | 'T' | 'w' | 'W')));
                    }
                    None => {
                        skipped.push((lineno, "expected \"ADDR TYPE NAME [module]\"".to_string()))
                    }
                }
            }
        }
        at = end + 1;
    }
    let mut table = SymbolTable::over_text(text, refs.len() + odd.len());
    for (addr, name_at, len, code, tab) in refs {
        table.push_in_place(addr, name_at, len, code, tab);
    }
    for (addr, name, code) in odd {
        table.push(addr, None, &name, code);
    }
    table.finish();
    (table, skipped)
}

/// The lines of a kallsyms `text` that resolve every address of `addrs`, and the byte before
/// each (where a return address's call instruction lies), exactly as the whole text does:
/// the symbol each falls in and the symbol after it (which bounds it), with every line at
/// those addresses. A recording that keeps only these (a few kilobytes) spares its reports
/// reading and indexing the kernel's 5 MB of symbols.
pub fn kallsyms_subset(text: &str, addrs: impl IntoIterator<Item = u64>) -> String {
    let (table, _) = parse_kallsyms(text);
    let mut keep = std::collections::HashSet::new();
    for a in addrs {
        for a in [a, a.wrapping_sub(1)] {
            if let Some((start, next)) = table.neighbours(a) {
                keep.insert(start);
                keep.extend(next);
            }
        }
    }
    let mut out = String::new();
    for line in text.lines() {
        let addr = token(line).and_then(|(a, _)| hex(a));
        if addr.is_some_and(|a| keep.contains(&a)) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The exact shape the kernel prints, `ADDR T NAME` or `ADDR T NAME\tMODULE`
/// (single spaces, at most 16 hex digits, no blanks in NAME or MODULE):
/// (address, code symbol, name offset and length in the line, has module).
fn kallsyms_line_in_place(line: &[u8]) -> Option<(u64, bool, usize, usize, bool)> {
    let sp = memchr::memchr(b' ', line.get(..17.min(line.len()))?)?;
    if sp == 0 || line.get(sp + 2) != Some(&b' ') {
        return None;
    }
    let mut addr = 0u64;
    for &c in &line[..sp] {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        addr = (addr << 4) | u64::from(v);
    }
    let t = line[sp + 1];
    if !t.is_ascii_alphabetic() {
        return None;
    }
    let name = &line[sp + 3..];
    if name.is_empty() || memchr::memchr2(b' ', b'\r', name).is_some() {
        return None;
    }
    let tab = match memchr::memchr(b'\t', name) {
        // `func\t[module]`: both parts non-empty, one tab.
        Some(i)
            if i == 0 || i + 1 == name.len() || memchr::memchr(b'\t', &name[i + 1..]).is_some() =>
        {
            return None
        }
        Some(_) => true,
        None => false,
    };
    let code = matches!(t, b't' | b'T' | b'w' | b'W');
    Some((addr, code, sp + 3, name.len(), tab))
}

/// Any other line shape: whitespace-separated `ADDR TYPE NAME [MODULE]` (the kernel's own
/// shape is read by [`kallsyms_line_in_place`]).
fn kallsyms_line(line: &str) -> Option<(u64, char, &str, Option<&str>)> {
    let (addr, rest) = token(line)?;
    let (t, rest) = token(rest)?;
    let (name, rest) = token(rest)?;
    let module = token(rest).map(|(m, _)| m);
    Some((hex(addr)?, sym_type(t)?, name, module))
}

/// Parses a JIT perf map (`/tmp/perf-PID.map`): one `START SIZE NAME` per
/// line, hex numbers, the name running to the end of the line.
///
/// Strict: the first malformed line is an error naming `file` and the
/// line number. See [`parse_perf_map_lenient`] for the forgiving variant.
pub fn parse_perf_map(file: &str, text: &str) -> Result<SymbolTable, SymbolError> {
    let (table, skipped) = parse_perf_map_lenient(text);
    match skipped.into_iter().next() {
        Some((line, reason)) => Err(SymbolError::BadLine {
            file: file.to_string(),
            line,
            reason,
            expected: PERF_MAP_FORMAT,
        }),
        None => Ok(table),
    }
}

/// Like [`parse_perf_map`] but skips malformed lines (a JIT may be killed
/// mid-write) and returns them.
pub fn parse_perf_map_lenient(text: &str) -> (SymbolTable, Vec<SkippedLine>) {
    let mut table = SymbolTable::default();
    let mut skipped = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match perf_map_line(line) {
            Ok((start, size, name)) => table.push(start, Some(size), name, true),
            Err(reason) => skipped.push((i + 1, reason.to_string())),
        }
    }
    table.finish();
    (table, skipped)
}

fn perf_map_line(line: &str) -> Result<(u64, u64, &str), &'static str> {
    let (start, rest) = token(line).ok_or("empty line")?;
    let start = hex(start).ok_or("START is not a hex number")?;
    let (size, rest) = token(rest).ok_or("missing SIZE")?;
    let size = hex(size).ok_or("SIZE is not a hex number")?;
    let name = rest.trim();
    if name.is_empty() {
        return Err("missing NAME");
    }
    Ok((start, size, name))
}

/// Parses nm output (`nm`, `nm -S`, `nm -C`) used as a `--symfile`:
/// `ADDR TYPE NAME` or `ADDR SIZE TYPE NAME`. Undefined symbols (no
/// address), blank lines, `#` comments and `file.o:` headers are skipped;
/// any other malformed line is an error naming `file` and the line.
pub fn parse_nm(file: &str, text: &str) -> Result<SymbolTable, SymbolError> {
    let mut table = SymbolTable::default();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if trimmed.ends_with(':') && !trimmed.contains(char::is_whitespace) {
            continue;
        }
        match nm_line(trimmed) {
            Ok(Some((addr, size, t, name))) => table.push(addr, size, name, is_text(t)),
            Ok(None) => {}
            Err(reason) => {
                return Err(SymbolError::BadLine {
                    file: file.to_string(),
                    line: i + 1,
                    reason: reason.to_string(),
                    expected: NM_FORMAT,
                })
            }
        }
    }
    table.finish();
    Ok(table)
}

type NmLine<'a> = Option<(u64, Option<u64>, char, &'a str)>;

fn nm_line(line: &str) -> Result<NmLine<'_>, &'static str> {
    let (first, rest) = token(line).ok_or("empty line")?;
    // "U name" / "w name": an undefined symbol has no address.
    if sym_type(first).is_some() && hex(first).is_none() {
        return Ok(None);
    }
    let addr = hex(first).ok_or("ADDR is not a hex number")?;
    let (second, rest) = token(rest).ok_or("missing TYPE")?;
    let (size, t, rest) = match sym_type(second) {
        // A one-letter type; "a".."f" would also be hex, but nm never
        // prints a one-digit size field.
        Some(t) => (None, t, rest),
        None => {
            let size = hex(second).ok_or("TYPE is not a single letter")?;
            let (third, rest) = token(rest).ok_or("missing TYPE")?;
            let t = sym_type(third).ok_or("TYPE is not a single letter")?;
            (Some(size), t, rest)
        }
    };
    let name = rest.trim();
    if name.is_empty() {
        return Err("missing NAME");
    }
    Ok(Some((addr, size, t, name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_modules_and_data() {
        let (t, skipped) = parse_kallsyms(
            "ffffffff81000000 T _stext\nffffffff81000100 t helper\n\
             ffffffff81000200 D some_data\nffffffffc0001000 t mod_fn\t[ext4]\ngarbage\n",
        );
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].0, 5);
        assert_eq!(t.lookup(0xffffffff81000010).unwrap().name, "_stext");
        assert_eq!(t.lookup(0xffffffff81000101).unwrap().offset, 1);
        assert!(t.lookup(0xffffffff81000201).is_err());
        assert_eq!(t.lookup(0xffffffffc0001004).unwrap().name, "mod_fn [ext4]");
    }

    #[test]
    fn perf_map_names_with_spaces_and_bad_lines() {
        let t = parse_perf_map(
            "m",
            "7f0010 20 LazyCompile:~foo bar.js:3\n0x7f0100 0x10 stub\n",
        )
        .unwrap();
        assert_eq!(
            t.lookup(0x7f0011).unwrap().name,
            "LazyCompile:~foo bar.js:3"
        );
        assert_eq!(t.lookup(0x7f0030), Err(crate::Unresolved::NoSymbol));
        assert_eq!(t.lookup(0x7f010f).unwrap().name, "stub");
        let err = parse_perf_map("/tmp/perf-9.map", "7f0010 20 a\nzz 20 b\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("/tmp/perf-9.map:2"), "{msg}");
    }

    #[test]
    fn nm_forms() {
        let t = parse_nm(
            "syms",
            "prog.o:\n                 U puts\n0000000000001139 T main\n\
             0000000000001120 000000000000000b t helper\n0000000000004010 D data\n",
        )
        .unwrap();
        assert_eq!(t.lookup(0x1140).unwrap().name, "main");
        let h = t.lookup(0x112a).unwrap();
        assert_eq!(
            (h.name.as_str(), h.offset, h.size),
            ("helper", 10, Some(11))
        );
        assert!(t.lookup(0x112b).is_err());
        let err = parse_nm("syms.txt", "1000 T ok\n1010 TT bad\n").unwrap_err();
        assert!(err.to_string().starts_with("syms.txt:2:"), "{err}");
        assert!(parse_nm("s", "1000 T\n").is_err());
        assert!(parse_nm("s", "xyz T name\n").is_err());
    }
}
