//! [`BuildId`]: the identity of one build of an ELF file, as its GNU build-id note, the
//! kernel's MMAP2 records and perf.data's build-id table give it, carried as bytes from where
//! it is read to the symbolizer, and written as lower-case hex only where text is wanted (hood
//! files' JSON chunks, paths of debug files and caches, debuginfod URLs, reports).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest build-id kept, in bytes. Linkers write 16 (md5, uuid) or 20 (sha1) and the
/// kernel's records carry at most 20; a longer one is refused rather than cut, since a cut
/// id would name another file.
pub const MAX_LEN: usize = 64;

/// A build-id: 1 to [`MAX_LEN`] bytes. Shown (`Display`) and serialized as lower-case hex.
#[derive(Clone, Copy)]
pub struct BuildId {
    len: u8,
    bytes: [u8; MAX_LEN],
}

impl BuildId {
    /// The build-id with these bytes; `None` when there are none or more than [`MAX_LEN`].
    pub fn from_bytes(bytes: &[u8]) -> Option<BuildId> {
        if bytes.is_empty() || bytes.len() > MAX_LEN {
            return None;
        }
        let mut id = BuildId {
            len: bytes.len() as u8,
            bytes: [0; MAX_LEN],
        };
        id.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(id)
    }

    /// The build-id written as hex digits (either case, two per byte); `None` for anything
    /// else, and for more than [`MAX_LEN`] bytes.
    pub fn from_hex(hex: &str) -> Option<BuildId> {
        let digits = hex.as_bytes();
        if !digits.len().is_multiple_of(2) || digits.len() > 2 * MAX_LEN {
            return None;
        }
        let mut bytes = [0u8; MAX_LEN];
        for (b, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            *b = nibble(pair[0])? << 4 | nibble(pair[1])?;
        }
        BuildId::from_bytes(&bytes[..digits.len() / 2])
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Whether any byte is not zero. perf 6.x writes all-zero build-ids when its build-id
    /// code fails: such an id names no build.
    pub fn names_a_build(&self) -> bool {
        self.as_bytes().iter().any(|&b| b != 0)
    }
}

fn nibble(d: u8) -> Option<u8> {
    match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        b'A'..=b'F' => Some(d - b'A' + 10),
        _ => None,
    }
}

impl PartialEq for BuildId {
    fn eq(&self, other: &BuildId) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for BuildId {}

impl std::hash::Hash for BuildId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialOrd for BuildId {
    fn partial_cmp(&self, other: &BuildId) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for BuildId {
    fn cmp(&self, other: &BuildId) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

/// Lower-case hex, two digits per byte.
impl fmt::Display for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut buf = [0u8; 2 * MAX_LEN];
        for (pair, b) in buf.chunks_exact_mut(2).zip(self.as_bytes()) {
            pair[0] = DIGITS[usize::from(b >> 4)];
            pair[1] = DIGITS[usize::from(b & 0xf)];
        }
        // Only ASCII digits were written.
        f.write_str(std::str::from_utf8(&buf[..2 * self.as_bytes().len()]).unwrap_or_default())
    }
}

impl fmt::Debug for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BuildId({self})")
    }
}

impl Serialize for BuildId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for BuildId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BuildId, D::Error> {
        let hex = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        BuildId::from_hex(&hex).ok_or_else(|| {
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&hex),
                &"a build-id: 2 to 128 hex digits",
            )
        })
    }
}

/// The build-ids of a map of hex strings (a recording's JSON chunk), without the entries that
/// are not one: a file that names a build-id badly is looked up by its path alone, as one
/// that names none.
pub fn from_hex_map(hex: BTreeMap<String, String>) -> BTreeMap<String, BuildId> {
    hex.into_iter()
        .filter_map(|(path, h)| Some((path, BuildId::from_hex(&h)?)))
        .collect()
}

/// serde's `deserialize_with` for a map of build-ids kept in a recording: see
/// [`from_hex_map`].
pub fn deserialize_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, BuildId>, D::Error> {
    BTreeMap::<String, String>::deserialize(d).map(from_hex_map)
}

/// serde's `deserialize_with` for an optional build-id kept in a recording: one that is not
/// a build-id is none.
pub fn deserialize_option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BuildId>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.and_then(|h| BuildId::from_hex(&h)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_goes_both_ways_in_lower_case() {
        let id = BuildId::from_bytes(&[0xab, 0x01, 0xff]).unwrap();
        assert_eq!(id.to_string(), "ab01ff");
        assert_eq!(format!("{id:?}"), "BuildId(ab01ff)");
        assert_eq!(BuildId::from_hex("AB01ff"), Some(id));
        assert_eq!(id.as_bytes(), [0xab, 0x01, 0xff]);
        let long = [0x5a; MAX_LEN];
        let id = BuildId::from_bytes(&long).unwrap();
        assert_eq!(BuildId::from_hex(&id.to_string()), Some(id));
    }

    #[test]
    fn what_is_not_a_build_id_is_refused() {
        assert_eq!(BuildId::from_bytes(&[]), None);
        assert_eq!(BuildId::from_bytes(&[1; MAX_LEN + 1]), None);
        for bad in [
            "",
            "a",
            "abc",
            "zz",
            "+f",
            "0x12",
            "éé",
            " 12",
            &"00".repeat(MAX_LEN + 1),
        ] {
            assert_eq!(BuildId::from_hex(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn ids_compare_by_their_bytes() {
        let a = BuildId::from_bytes(&[1, 2]).unwrap();
        let b = BuildId::from_bytes(&[1, 2, 0]).unwrap();
        assert_ne!(a, b);
        assert!(a < b);
        assert!(!BuildId::from_bytes(&[0; 20]).unwrap().names_a_build());
        assert!(b.names_a_build());
    }

    #[test]
    fn recordings_keep_hex_and_drop_what_is_not_an_id() {
        let id = BuildId::from_bytes(&[0xde, 0xad]).unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"dead\"");
        assert_eq!(serde_json::from_str::<BuildId>("\"DEAD\"").unwrap(), id);
        assert!(serde_json::from_str::<BuildId>("\"dea\"").is_err());
        let map = from_hex_map(BTreeMap::from([
            ("/bin/a".to_string(), "dead".to_string()),
            ("/bin/b".to_string(), "not hex".to_string()),
        ]));
        assert_eq!(map, BTreeMap::from([("/bin/a".to_string(), id)]));
    }
}
