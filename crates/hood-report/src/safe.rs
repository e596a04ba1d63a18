//! Text that came from a process, a file or the kernel (process names, command lines, paths,
//! symbol names), made safe to print on a terminal, as `ps` and htop do: a control character
//! could move the cursor, set the window title, clear the screen or, as a newline, forge rows.
//! [`text`] shows each one escaped instead: C0 controls and DEL as `\n`, `\t`, `\r` or `\xNN`,
//! C1 controls and the Unicode direction overrides as `\u{NN}`; [`bytes`] also shows bytes
//! that are not UTF-8 as `\xNN`. Text without any of them is returned as it is, unchanged and
//! not copied. Every text renderer passes such fields through here; JSON encoders escape
//! control characters themselves.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is.
fn unsafe_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // Bidirectional overrides and isolates: they reorder what follows on the line.
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(c: char, out: &mut String) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `s` with every control character escaped (see the module documentation).
pub fn text(s: &str) -> Cow<'_, str> {
    let Some(first) = s.find(unsafe_char) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if unsafe_char(c) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `b` as text with control characters escaped and bytes that are not UTF-8 shown as `\xNN`.
pub fn bytes(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => text(s),
        Err(_) => {
            let mut out = String::with_capacity(b.len() + 8);
            for chunk in b.utf8_chunks() {
                out.push_str(&text(chunk.valid()));
                for byte in chunk.invalid() {
                    let _ = write!(out, "\\x{byte:02x}");
                }
            }
            Cow::Owned(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_not_copied() {
        for s in [
            "",
            "bash",
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "std::vec<é, 日本>",
        ] {
            assert!(matches!(text(s), Cow::Borrowed(b) if b == s));
        }
    }

    #[test]
    fn controls_are_escaped() {
        assert_eq!(text("a\u{1b}]0;owned\u{7}b"), "a\\x1b]0;owned\\x07b");
        assert_eq!(text("row\nforged 0 0"), "row\\nforged 0 0");
        assert_eq!(text("\t\r\u{0}\u{7f}"), "\\t\\r\\x00\\x7f");
        assert_eq!(text("c1\u{9b}2J"), "c1\\u{9b}2J");
        assert_eq!(text("x\u{202e}gpj.exe"), "x\\u{202e}gpj.exe");
        assert_eq!(text("é\u{1b}"), "é\\x1b");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_escaped() {
        assert_eq!(bytes(b"ok"), "ok");
        assert_eq!(bytes(b"a\xff\x1bb\xc3"), "a\\xff\\x1bb\\xc3");
        assert_eq!(bytes("é\u{9b}".as_bytes()), "é\\u{9b}");
    }

    #[test]
    fn no_output_contains_a_control_character() {
        // Every byte value, alone and around text: what comes out prints as it is.
        for b in 0u8..=255 {
            for input in [vec![b], vec![b'a', b, b'z'], vec![0xc2, b]] {
                let out = bytes(&input);
                assert!(!out.chars().any(unsafe_char), "{input:?} -> {out:?}");
            }
        }
    }
}
