//! The few facts hood reads from the kernel's own type information (BTF,
//! `/sys/kernel/btf/vmlinux`): the type id a BTF-typed tracepoint program is loaded against,
//! and where a field lies in a kernel structure.
//!
//! It also writes the smallest BTF a map needs to name its key and value types
//! ([`u64_struct`]): task-local storage maps are refused without it.
//!
//! The file is the kernel's, but it is read as untrusted bytes all the same: its size is
//! capped, every offset is checked against the bytes read, and a type record that does not
//! fit ends the walk with an error instead of a guess.

use std::io::{self, Read};

/// Where the kernel publishes its BTF.
pub(crate) const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Read at most this much (the kernel's BTF is 5–8 MB today).
const MAX_BTF_BYTES: u64 = 64 << 20;

const MAGIC: u16 = 0xeb9f;

/// BTF kinds hood looks up or writes (`BTF_KIND_*`).
pub(crate) mod kind {
    pub const INT: u32 = 1;
    pub const STRUCT: u32 = 4;
    pub const TYPEDEF: u32 = 8;
}

/// One type record: its kind, name, member count and where its trailing data lies.
#[derive(Debug, Clone, Copy)]
struct TypeRec {
    kind: u32,
    kind_flag: bool,
    name_off: u32,
    vlen: u32,
    /// Offset of the data after the 12-byte header, within the type section.
    data: usize,
}

/// The parsed BTF of the running kernel.
#[derive(Debug)]
pub(crate) struct Btf {
    types: Vec<u8>,
    strings: Vec<u8>,
    /// Type records by id − 1 (id 0 is `void`).
    recs: Vec<TypeRec>,
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Bytes of kind-specific data after a type record's header, for `vlen` members.
fn data_len(kind: u32, vlen: u32) -> Option<usize> {
    let vlen = vlen as usize;
    Some(match kind {
        // INT, VAR, DECL_TAG: one u32.
        1 | 14 | 17 => 4,
        // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG: none.
        2 | 7..=12 | 16 | 18 => 0,
        // ARRAY.
        3 => 12,
        // STRUCT, UNION, DATASEC, ENUM64: 12 bytes per member.
        4 | 5 | 15 | 19 => vlen.checked_mul(12)?,
        // ENUM, FUNC_PROTO: 8 bytes per member.
        6 | 13 => vlen.checked_mul(8)?,
        _ => return None,
    })
}

impl Btf {
    /// The running kernel's BTF.
    pub fn vmlinux() -> io::Result<Btf> {
        let f = std::fs::File::open(VMLINUX_BTF)?;
        let mut bytes = Vec::new();
        f.take(MAX_BTF_BYTES).read_to_end(&mut bytes)?;
        Btf::parse(&bytes)
    }

    /// Parse raw BTF (native byte order, as the kernel writes it; only little-endian
    /// machines are supported).
    pub fn parse(b: &[u8]) -> io::Result<Btf> {
        let magic = b
            .get(0..2)
            .map(|m| u16::from_le_bytes([m[0], m[1]]))
            .ok_or_else(|| bad("BTF shorter than its header"))?;
        if magic != MAGIC {
            return Err(bad(format!("not BTF (magic {magic:#06x})")));
        }
        let field = |at| u32_at(b, at).ok_or_else(|| bad("BTF shorter than its header"));
        let hdr_len = field(4)? as usize;
        let (type_off, type_len) = (field(8)? as usize, field(12)? as usize);
        let (str_off, str_len) = (field(16)? as usize, field(20)? as usize);
        let section = |off: usize, len: usize, what: &str| {
            hdr_len
                .checked_add(off)
                .and_then(|s| Some(s..s.checked_add(len)?))
                .and_then(|r| b.get(r))
                .ok_or_else(|| bad(format!("BTF {what} section lies outside the file")))
        };
        let types = section(type_off, type_len, "type")?.to_vec();
        let strings = section(str_off, str_len, "string")?.to_vec();
        let mut recs = Vec::new();
        let mut at = 0;
        while at < types.len() {
            let (Some(name_off), Some(info)) = (u32_at(&types, at), u32_at(&types, at + 4)) else {
                return Err(bad(format!("BTF type record cut at byte {at}")));
            };
            let kind = (info >> 24) & 0x1f;
            let vlen = info & 0xffff;
            let len = data_len(kind, vlen)
                .ok_or_else(|| bad(format!("BTF type kind {kind} unknown at byte {at}")))?;
            let data = at + 12;
            let end = data
                .checked_add(len)
                .filter(|&e| e <= types.len())
                .ok_or_else(|| bad(format!("BTF type record cut at byte {at}")))?;
            recs.push(TypeRec {
                kind,
                kind_flag: info >> 31 != 0,
                name_off,
                vlen,
                data,
            });
            at = end;
        }
        Ok(Btf {
            types,
            strings,
            recs,
        })
    }

    fn name(&self, off: u32) -> &[u8] {
        let s = self.strings.get(off as usize..).unwrap_or_default();
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    }

    /// The id of the type of kind `kind` named `name`.
    pub fn find(&self, kind: u32, name: &str) -> Option<u32> {
        self.recs
            .iter()
            .position(|r| r.kind == kind && self.name(r.name_off) == name.as_bytes())
            .map(|i| i as u32 + 1)
    }

    /// The byte offset of member `member` of the structure named `name`.
    pub fn member_offset(&self, name: &str, member: &str) -> Option<u32> {
        let id = self.find(kind::STRUCT, name)?;
        let r = self.recs.get(id as usize - 1)?;
        (0..r.vlen as usize).find_map(|i| {
            let m = r.data + i * 12;
            if self.name(u32_at(&self.types, m)?) != member.as_bytes() {
                return None;
            }
            let off = u32_at(&self.types, m + 8)?;
            // With the kind flag, the low 24 bits are the bit offset (the rest a bitfield's
            // size); a bitfield member has no byte offset.
            let (bits, bitfield) = match r.kind_flag {
                true => (off & 0xff_ffff, off >> 24 != 0),
                false => (off, false),
            };
            (!bitfield && bits % 8 == 0).then_some(bits / 8)
        })
    }
}

/// A BTF blob of two types, for a map keyed by `int` whose value is `struct name` of the
/// 64-bit unsigned `members`, in order: `(blob, id of int, id of the struct)`.
pub(crate) fn u64_struct(name: &str, members: &[&str]) -> (Vec<u8>, u32, u32) {
    let mut strings = vec![0u8];
    let mut string = |s: &str| {
        let at = strings.len() as u32;
        strings.extend_from_slice(s.as_bytes());
        strings.push(0);
        at
    };
    let int = string("int");
    let u64_name = string("__u64");
    let struct_name = string(name);
    let member_names: Vec<u32> = members.iter().map(|m| string(m)).collect();
    let mut types: Vec<u32> = vec![
        // 1: int, 4 bytes, signed (encoding bit 0 at bit 24), 32 bits.
        int,
        kind::INT << 24,
        4,
        (1 << 24) | 32,
        // 2: __u64, 8 bytes, unsigned, 64 bits.
        u64_name,
        kind::INT << 24,
        8,
        64,
        // 3: struct name { __u64 members...; }.
        struct_name,
        (kind::STRUCT << 24) | members.len() as u32,
        8 * members.len() as u32,
    ];
    for (i, &m) in member_names.iter().enumerate() {
        // Name, type, bit offset.
        types.extend_from_slice(&[m, 2, 64 * i as u32]);
    }
    let types: Vec<u8> = types.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut b = Vec::with_capacity(24 + types.len() + strings.len());
    b.extend_from_slice(&MAGIC.to_le_bytes());
    // Version 1, no flags.
    b.extend_from_slice(&[1, 0]);
    let header = [
        24u32,
        0,
        types.len() as u32,
        types.len() as u32,
        strings.len() as u32,
    ];
    for w in header {
        b.extend_from_slice(&w.to_le_bytes());
    }
    b.extend_from_slice(&types);
    b.extend_from_slice(&strings);
    (b, 1, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob of `types` (each: name offset, info, size/type, then data words) and
    /// `strings`.
    fn blob(types: &[&[u32]], strings: &[u8]) -> Vec<u8> {
        let t: Vec<u8> = types
            .iter()
            .flat_map(|r| r.iter().flat_map(|w| w.to_le_bytes()))
            .collect();
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC.to_le_bytes());
        b.extend_from_slice(&[1, 0]);
        for w in [
            24u32,
            0,
            t.len() as u32,
            t.len() as u32,
            strings.len() as u32,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(&t);
        b.extend_from_slice(strings);
        b
    }

    const STRINGS: &[u8] = b"\0int\0task_struct\0pid\0btf_trace_x\0flags\0";

    fn sample() -> Vec<u8> {
        blob(
            &[
                // 1: int (4 bytes).
                &[1, 1 << 24, 4, 32],
                // 2: struct task_struct { int flags @ bit 64; int pid @ bit 9600; }.
                &[5, (4 << 24) | 2, 2000, 33, 1, 64, 17, 1, 9600],
                // 3: typedef btf_trace_x -> int.
                &[21, 8 << 24, 1],
            ],
            STRINGS,
        )
    }

    #[test]
    fn types_and_members_are_found_by_name() {
        let btf = Btf::parse(&sample()).unwrap();
        assert_eq!(btf.find(kind::TYPEDEF, "btf_trace_x"), Some(3));
        assert_eq!(btf.find(kind::STRUCT, "task_struct"), Some(2));
        assert_eq!(btf.find(kind::TYPEDEF, "task_struct"), None);
        assert_eq!(btf.member_offset("task_struct", "pid"), Some(1200));
        assert_eq!(btf.member_offset("task_struct", "flags"), Some(8));
        assert_eq!(btf.member_offset("task_struct", "nope"), None);
    }

    #[test]
    fn the_written_types_read_back() {
        let (b, key, value) = u64_struct("hood_wait", &["a", "b", "c"]);
        let btf = Btf::parse(&b).unwrap();
        assert_eq!(btf.find(kind::INT, "int"), Some(key));
        assert_eq!(btf.find(kind::STRUCT, "hood_wait"), Some(value));
        assert_eq!(btf.member_offset("hood_wait", "c"), Some(16));
    }

    #[test]
    fn damaged_btf_is_refused_without_panic() {
        let good = sample();
        for cut in 0..good.len() {
            let _ = Btf::parse(&good[..cut]);
        }
        let mut b = good.clone();
        b[0] = 0;
        assert!(Btf::parse(&b).is_err());
        // A member count that runs past the type section.
        let mut b = good.clone();
        b[24 + 16 + 4..24 + 16 + 8].copy_from_slice(&((4u32 << 24) | 0xffff).to_le_bytes());
        assert!(Btf::parse(&b).is_err());
        // Sections past the end of the file.
        let mut b = good;
        b[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Btf::parse(&b).is_err());
    }

    #[test]
    fn the_running_kernel_has_what_the_off_cpu_programs_need() {
        let Ok(btf) = Btf::vmlinux() else {
            eprintln!("skipped: no {VMLINUX_BTF}");
            return;
        };
        assert!(btf.find(kind::TYPEDEF, "btf_trace_sched_switch").is_some());
        let pid = btf
            .member_offset("task_struct", "pid")
            .expect("task_struct.pid");
        assert!(pid > 0 && pid % 4 == 0, "{pid}");
    }
}
