//! Where the inlined copies of a function are (`--probe` on a function the compiler also
//! inlined into its callers): the symbol table names only a function's out-of-line copy, so
//! the copies inlined elsewhere are found in DWARF, each `DW_TAG_inlined_subroutine` with the
//! name of its abstract origin (`DW_AT_name`, `DW_AT_linkage_name`, following
//! `DW_AT_specification` and `DW_AT_abstract_origin` a few steps, into other units too) and
//! the address it is entered at: `DW_AT_entry_pc`, else `DW_AT_low_pc`. A copy with neither
//! (only `DW_AT_ranges`, whose first range need not be where it is entered) is counted, not
//! guessed at.
//!
//! The DWARF is untrusted, read as [`crate::decl`] reads it (sections capped, decompression
//! checked, references followed at most [`MAX_HOPS`] steps); at most [`MAX_COPIES`] copies are
//! returned; a parse error ends the walk of that unit with the copies found so far.

use std::collections::HashMap;
use std::fs::File;

use gimli::{AttributeValue, EndianSlice, RunTimeEndian};
use object::read::ReadCache;
use object::Object;

use crate::decl::{section_bytes, OtherUnits, Slice, MAX_HOPS};

/// More inlined copies of the selected functions than this are not looked for.
pub(crate) const MAX_COPIES: usize = 100_000;

/// The sections read: entries, their ranges, addresses and names, and the line program's
/// header a unit is opened with.
const NEEDED: [gimli::SectionId; 10] = [
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
    gimli::SectionId::DebugAranges,
];

/// One inlined copy of a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InlinedCopy {
    /// The function's name in DWARF (`DW_AT_name`: `step`, without its namespace).
    pub(crate) name: String,
    /// Its linkage (mangled) name, where DWARF gives one.
    pub(crate) linkage: Option<String>,
    /// The address (as the file has it) the copy is entered at.
    pub(crate) entry: u64,
}

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The copies of the wanted functions, in DWARF order.
    pub(crate) copies: Vec<InlinedCopy>,
    /// Copies of wanted functions DWARF gives no entry address for.
    pub(crate) no_entry: usize,
    /// [`MAX_COPIES`] was reached: there may be more.
    pub(crate) capped: bool,
}

/// The inlined copies in `file`'s own DWARF of the functions `wanted` accepts (called once
/// per function with its name and linkage name). Nothing when the file has no DWARF.
pub(crate) fn inlined_copies(
    file: &File,
    wanted: &mut dyn FnMut(&str, Option<&str>) -> bool,
) -> Found {
    let mut found = Found::default();
    let cache = ReadCache::new(file);
    let Ok(obj) = object::File::parse(&cache) else {
        return found;
    };
    let endian = if obj.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let owned = match gimli::DwarfSections::load(|id| {
        Ok::<_, ()>(if NEEDED.contains(&id) {
            section_bytes(&obj, file, id)
        } else {
            Vec::new()
        })
    }) {
        Ok(d) => d,
        Err(()) => return found,
    };
    let dwarf = owned.borrow(|data| EndianSlice::new(data, endian));
    let mut others = OtherUnits::new(&dwarf);
    let mut names: HashMap<gimli::DebugInfoOffset, Option<Origin>> = HashMap::new();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let mut walk = Walk {
            dwarf: &dwarf,
            unit: &unit,
            others: &mut others,
            names: &mut names,
            wanted: &mut *wanted,
            found: &mut found,
        };
        walk.unit();
        if found.capped {
            break;
        }
    }
    found
}

/// A function an inlined copy is of: its names and whether it is wanted.
struct Origin {
    name: String,
    linkage: Option<String>,
    wanted: bool,
}

struct Walk<'w, 'd, 'a> {
    dwarf: &'d gimli::Dwarf<Slice<'a>>,
    unit: &'w gimli::Unit<Slice<'a>>,
    others: &'w mut OtherUnits<'d, 'a>,
    names: &'w mut HashMap<gimli::DebugInfoOffset, Option<Origin>>,
    wanted: &'w mut dyn FnMut(&str, Option<&str>) -> bool,
    found: &'w mut Found,
}

impl<'a> Walk<'_, '_, 'a> {
    /// Every inlined copy in the unit; only their attributes are parsed, every other entry is
    /// skipped by its abbreviation.
    fn unit(&mut self) {
        let (dwarf, unit) = (self.dwarf, self.unit);
        crate::decl::inlined_calls(unit, |attrs| {
            let (mut low, mut entry_pc, mut entry_offset, mut origin) = (None, None, None, None);
            for attr in attrs {
                match attr.name() {
                    gimli::DW_AT_low_pc => {
                        low = dwarf.attr_address(unit, attr.value()).ok().flatten()
                    }
                    gimli::DW_AT_entry_pc => match attr.value() {
                        v @ (AttributeValue::Addr(_) | AttributeValue::DebugAddrIndex(_)) => {
                            entry_pc = dwarf.attr_address(unit, v).ok().flatten()
                        }
                        // DWARF 5: an offset from the copy's own low_pc.
                        v => entry_offset = v.udata_value(),
                    },
                    gimli::DW_AT_abstract_origin => origin = Some(attr.value()),
                    _ => {}
                }
            }
            let Some(key) = origin.and_then(|o| self.absolute(o)) else {
                return true;
            };
            if !self.names.contains_key(&key) {
                let o = self.origin(origin).map(|(name, linkage)| Origin {
                    wanted: (self.wanted)(&name, linkage.as_deref()),
                    name,
                    linkage,
                });
                self.names.insert(key, o);
            }
            let Some(Some(o)) = self.names.get(&key) else {
                return true;
            };
            if !o.wanted {
                return true;
            }
            let entry = entry_pc
                .or_else(|| low.and_then(|l| entry_offset.and_then(|d| l.checked_add(d))))
                .or(low);
            let Some(entry) = entry else {
                self.found.no_entry += 1;
                return true;
            };
            if self.found.copies.len() >= MAX_COPIES {
                self.found.capped = true;
                return false;
            }
            self.found.copies.push(InlinedCopy {
                name: o.name.clone(),
                linkage: o.linkage.clone(),
                entry,
            });
            true
        });
    }

    /// A reference as a `.debug_info` offset (the cache key of its function).
    fn absolute(&self, v: AttributeValue<Slice<'a>>) -> Option<gimli::DebugInfoOffset> {
        match v {
            AttributeValue::UnitRef(o) => o.to_debug_info_offset(&self.unit.header),
            AttributeValue::DebugInfoRef(o) => Some(o),
            _ => None,
        }
    }

    /// The name and linkage name of the function `origin` points at, following its
    /// `DW_AT_specification` / `DW_AT_abstract_origin` while either is missing.
    fn origin(
        &mut self,
        mut origin: Option<AttributeValue<Slice<'a>>>,
    ) -> Option<(String, Option<String>)> {
        let dwarf = self.dwarf;
        let (mut name, mut linkage): (Option<String>, Option<String>) = (None, None);
        let mut within: Option<usize> = None;
        for _ in 0..MAX_HOPS {
            let Some(v) = origin.take() else { break };
            let (at, offset) = match v {
                AttributeValue::UnitRef(o) => (within, o),
                AttributeValue::DebugInfoRef(o) => self.others.locate(o)?,
                _ => break,
            };
            within = at;
            let u = match at {
                None => self.unit,
                Some(i) => self.others.units.get(i)?.1.as_ref()?,
            };
            let entry = u.entry(offset).ok()?;
            let text = |a| {
                entry
                    .attr_value(a)
                    .and_then(|v| dwarf.attr_string(u, v).ok())
                    .map(|s| s.to_string_lossy().into_owned())
            };
            if name.is_none() {
                name = text(gimli::DW_AT_name);
            }
            if linkage.is_none() {
                linkage = text(gimli::DW_AT_linkage_name)
                    .or_else(|| text(gimli::DW_AT_MIPS_linkage_name));
            }
            if name.is_some() && linkage.is_some() {
                break;
            }
            origin = entry
                .attr_value(gimli::DW_AT_specification)
                .or_else(|| entry.attr_value(gimli::DW_AT_abstract_origin));
        }
        match (name, linkage) {
            (Some(n), l) => Some((n, l)),
            (None, Some(l)) => Some((crate::demangle::demangle_short(&l), Some(l))),
            (None, None) => None,
        }
    }
}
