//! Tracepoint `format` files: where each field of an event's record sits. Offsets are read
//! from the text the recorder saved, never assumed.

use serde::{Deserialize, Serialize};

/// One field of a tracepoint record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// Field name (array suffix removed), e.g. `skbaddr`, `common_pid`.
    pub name: String,
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the kernel declared it signed.
    pub signed: bool,
}

/// A parsed `format` file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFormat {
    /// Event name (`name:` line).
    pub name: String,
    /// Event id (`ID:` line), the record's `common_type`.
    pub id: u64,
    /// Fields, common ones included.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parse the text of a `format` file (or `header_page`). Lines that are not field,
    /// name or ID lines are ignored; a field line without offset or size is skipped.
    pub fn parse(text: &str) -> EventFormat {
        let mut f = EventFormat::default();
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name:") {
                f.name = n.trim().to_string();
            } else if let Some(n) = line.strip_prefix("ID:") {
                f.id = n.trim().parse().unwrap_or(0);
            } else if line.starts_with("field:") {
                if let Some(field) = parse_field(line) {
                    f.fields.push(field);
                }
            }
        }
        f
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

fn parse_field(line: &str) -> Option<Field> {
    let mut name = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(decl) = part.strip_prefix("field:") {
            let last = decl.split_whitespace().last()?;
            let base = last.split('[').next().unwrap_or(last);
            name = Some(base.trim_start_matches('*').to_string());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    Some(Field {
        name: name?,
        offset: offset?,
        size: size?,
        signed,
    })
}

impl Field {
    /// The field's value in `rec` as an unsigned integer (sign-extended when signed), or
    /// `None` when the record is too short or the size is not 1, 2, 4 or 8.
    pub fn read(&self, rec: &[u8]) -> Option<u64> {
        let b = rec.get(self.offset..self.offset.checked_add(self.size)?)?;
        Some(match (self.size, self.signed) {
            (1, false) => u64::from(b[0]),
            (1, true) => b[0] as i8 as i64 as u64,
            (2, false) => u64::from(u16::from_le_bytes([b[0], b[1]])),
            (2, true) => i16::from_le_bytes([b[0], b[1]]) as i64 as u64,
            (4, false) => u64::from(u32::from_le_bytes(b.try_into().ok()?)),
            (4, true) => i32::from_le_bytes(b.try_into().ok()?) as i64 as u64,
            (8, _) => u64::from_le_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOFTIRQ: &str = "name: softirq_entry\nID: 141\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\nprint fmt: \"vec=%u\"\n";

    #[test]
    fn parses_fields_and_id() {
        let f = EventFormat::parse(SOFTIRQ);
        assert_eq!(f.name, "softirq_entry");
        assert_eq!(f.id, 141);
        assert_eq!(f.field("vec").map(|f| f.offset), Some(8));
        assert_eq!(f.field("rwbs").map(|f| f.size), Some(10));
        assert!(f.field("common_pid").is_some_and(|f| f.signed));
    }

    #[test]
    fn reads_values_and_rejects_short_records() {
        let f = EventFormat::parse(SOFTIRQ);
        let mut rec = vec![0u8; 12];
        rec[4..8].copy_from_slice(&(-1i32).to_le_bytes());
        rec[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(f.field("vec").and_then(|x| x.read(&rec)), Some(3));
        assert_eq!(
            f.field("common_pid").and_then(|x| x.read(&rec)),
            Some(u64::MAX)
        );
        assert_eq!(f.field("vec").and_then(|x| x.read(&rec[..10])), None);
    }
}
