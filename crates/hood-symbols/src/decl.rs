//! Where inlined functions are declared: the `DW_AT_decl_line` of each inlined function at an
//! address, innermost first, for [`InlinedFrame::start_line`](crate::InlinedFrame).
//!
//! blazesym names the functions inlined at an address and the lines within them, but not the
//! line each one's definition starts on, which pprof's `Function.start_line` and `go tool
//! pprof -list` want. This reads it with gimli from the same DWARF: for each compilation unit
//! that holds a sampled address (found through `.debug_aranges`, else the units' own ranges),
//! one walk of its entries; at each `DW_TAG_inlined_subroutine` whose ranges hold an address,
//! the declaration line of its abstract origin (following `DW_AT_specification` and
//! `DW_AT_abstract_origin` a few steps, for C++ members declared in their class).
//!
//! The DWARF is untrusted: no section over [`MAX_SECTION`] is read, none decompressed past
//! the DWARF caps (`unpacked::claim_ok`: a ratio and an absolute size), cycles of
//! references end after [`MAX_HOPS`], and a parse error ends the walk of that unit with the
//! answers found so far.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use blazesym::symbolize::Input;
use gimli::{AttributeValue, EndianSlice, RunTimeEndian, UnitOffset};
use object::read::ReadCache;
use object::{CompressionFormat, Object, ObjectSection};

use crate::debugfile::DebugFile;
use crate::Resolution;

/// Larger DWARF sections are not read.
const MAX_SECTION: u64 = 1 << 30;
/// References followed from an inlined call to the entry that carries its declaration line.
pub(crate) const MAX_HOPS: usize = 8;

pub(crate) type Slice<'a> = EndianSlice<'a, RunTimeEndian>;

/// Fill [`InlinedFrame::start_line`] of every answer in `out` (one per offset of `input`, in
/// the ELF file `real` whose DWARF is in `dwarf_file`) from the declaration lines, where
/// DWARF's chain of inlined calls at the address is as long as the answer's.
pub(crate) fn fill_inlined_start_lines(
    real: &Path,
    dwarf_file: &Path,
    input: Input<&[u64]>,
    out: &mut [Resolution],
) {
    let wanted = |r: &Resolution| r.as_ref().is_ok_and(|s| !s.inlined.is_empty());
    if !out.iter().any(wanted) {
        return;
    }
    let addrs: Vec<Option<u64>> = match input {
        Input::FileOffset(offsets) => {
            let Some(loads) = DebugFile::at(real, dwarf_file.to_path_buf()) else {
                return;
            };
            offsets
                .iter()
                .zip(out.iter())
                .map(|(&o, r)| wanted(r).then(|| loads.vaddr(o)).flatten())
                .collect()
        }
        Input::VirtOffset(a) | Input::AbsAddr(a) => a
            .iter()
            .zip(out.iter())
            .map(|(&a, r)| wanted(r).then_some(a))
            .collect(),
    };
    let lines = inlined_decl_lines(dwarf_file, &addrs);
    for (r, chain) in out.iter_mut().zip(lines) {
        if let Ok(sym) = r {
            if sym.inlined.len() == chain.len() {
                for (f, l) in sym.inlined.iter_mut().zip(chain) {
                    f.start_line = l;
                }
            }
        }
    }
}

/// For each of `addrs` (virtual addresses in the DWARF of `dwarf_file`; `None` for an offset
/// no load segment holds): the declaration lines of the functions inlined there, innermost
/// first (`None` where DWARF gives none). An empty list where nothing is inlined or the DWARF
/// cannot be read.
pub(crate) fn inlined_decl_lines(
    dwarf_file: &Path,
    addrs: &[Option<u64>],
) -> Vec<Vec<Option<u32>>> {
    let mut out = vec![Vec::new(); addrs.len()];
    let Ok(file) = crate::open::open(dwarf_file, crate::open::DEBUG) else {
        return out;
    };
    let cache = ReadCache::new(&file);
    let Ok(obj) = object::File::parse(&cache) else {
        return out;
    };
    let endian = if obj.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let owned = match gimli::DwarfSections::load(|id| Ok::<_, ()>(section(&obj, &file, id))) {
        Ok(d) => d,
        Err(()) => return out,
    };
    let dwarf = owned.borrow(|data| EndianSlice::new(data, endian));
    // (virtual address, index into offsets), sorted by address.
    let mut addrs: Vec<(u64, usize)> = addrs
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.map(|a| (a, i)))
        .collect();
    addrs.sort_unstable();
    if addrs.is_empty() {
        return out;
    }
    let mut others = OtherUnits::new(&dwarf);
    for unit_offset in units_holding(&dwarf, &addrs) {
        let Ok(header) = dwarf.debug_info.header_from_offset(unit_offset) else {
            continue;
        };
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        walk_unit(&dwarf, &unit, &mut others, &addrs, &mut out);
    }
    // The walk meets outer calls first; callers want the innermost first.
    for chain in &mut out {
        chain.reverse();
    }
    out
}

/// The sections this reads: entries, their ranges, and what opening a unit needs (the line
/// program's header). Location lists, macros and strings are never read.
const NEEDED: [gimli::SectionId; 7] = [
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugAranges,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
];

/// The bytes of section `id` of `obj` (decompressed if compressed), read from `file`, or none:
/// a section this does not need, one over [`MAX_SECTION`] or outside the file, or one that
/// does not decompress to the size its header claims (the output grows with the bytes really
/// decompressed, never by the claim).
fn section<'a>(
    obj: &object::File<'a, &'a ReadCache<&File>>,
    file: &File,
    id: gimli::SectionId,
) -> Vec<u8> {
    if !NEEDED.contains(&id) {
        return Vec::new();
    }
    section_bytes(obj, file, id)
}

/// The bytes of section `id` of `obj`, as [`section`] reads them, whichever section it is.
pub(crate) fn section_bytes<'a>(
    obj: &object::File<'a, &'a ReadCache<&File>>,
    file: &File,
    id: gimli::SectionId,
) -> Vec<u8> {
    let Some(range) = obj
        .section_by_name(id.name())
        .and_then(|s| s.compressed_file_range().ok())
    else {
        return Vec::new();
    };
    let Some(raw) = read_range(file, range.offset, range.compressed_size) else {
        return Vec::new();
    };
    let unpack = |r: &mut dyn Read| -> Option<Vec<u8>> {
        if !crate::unpacked::claim_ok(range.compressed_size, range.uncompressed_size) {
            return None;
        }
        let mut v = Vec::new();
        r.take(range.uncompressed_size + 1)
            .read_to_end(&mut v)
            .ok()?;
        (v.len() as u64 == range.uncompressed_size).then_some(v)
    };
    let bytes = match range.format {
        CompressionFormat::None => Some(raw),
        CompressionFormat::Zlib => unpack(&mut flate2::read::ZlibDecoder::new(&raw[..])),
        CompressionFormat::Zstandard => zstd::stream::read::Decoder::new(&raw[..])
            .ok()
            .and_then(|mut d| unpack(&mut d)),
        _ => None,
    };
    bytes.unwrap_or_default()
}

/// `size` bytes of `file` at `offset`, if they lie within it and are at most [`MAX_SECTION`].
/// Read straight into the buffer's spare room: a section of many megabytes is not zeroed
/// first (that cost as much as reading it).
fn read_range(file: &File, offset: u64, size: u64) -> Option<Vec<u8>> {
    let len = file.metadata().ok()?.len();
    if size > MAX_SECTION || offset.checked_add(size)? > len {
        return None;
    }
    let mut v = Vec::new();
    v.try_reserve_exact(usize::try_from(size).ok()?).ok()?;
    let mut f = file;
    f.seek(SeekFrom::Start(offset)).ok()?;
    f.take(size).read_to_end(&mut v).ok()?;
    (v.len() as u64 == size).then_some(v)
}

/// The `.debug_info` offsets of the units whose ranges hold any of `addrs` (sorted).
fn units_holding(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    addrs: &[(u64, usize)],
) -> Vec<gimli::DebugInfoOffset> {
    let mut found = BTreeSet::new();
    let mut headers = dwarf.debug_aranges.headers();
    let mut any_aranges = false;
    while let Ok(Some(h)) = headers.next() {
        any_aranges = true;
        let mut entries = h.entries();
        while let Ok(Some(e)) = entries.next() {
            let r = e.range();
            if holds_any(addrs, r.begin, r.end) {
                found.insert(h.debug_info_offset());
                break;
            }
        }
    }
    if any_aranges {
        return found.into_iter().collect();
    }
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let offset = gimli::DebugInfoOffset(header.offset().0);
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let Ok(mut ranges) = dwarf.unit_ranges(&unit) else {
            continue;
        };
        while let Ok(Some(r)) = ranges.next() {
            if holds_any(addrs, r.begin, r.end) {
                found.insert(offset);
                break;
            }
        }
    }
    found.into_iter().collect()
}

/// Whether `[begin, end)` holds any of the sorted `addrs`.
fn holds_any(addrs: &[(u64, usize)], begin: u64, end: u64) -> bool {
    let i = addrs.partition_point(|&(a, _)| a < begin);
    addrs.get(i).is_some_and(|&(a, _)| a < end)
}

/// Walk one unit's entries; at each inlined call, append its declaration line to the chain
/// of every address its ranges hold. Only inlined calls have their attributes parsed; every
/// other entry is skipped by its abbreviation (most of a unit: variables, types, parameters).
fn walk_unit<'a>(
    dwarf: &gimli::Dwarf<Slice<'a>>,
    unit: &gimli::Unit<Slice<'a>>,
    others: &mut OtherUnits<'_, 'a>,
    addrs: &[(u64, usize)],
    out: &mut [Vec<Option<u32>>],
) {
    let mut hits: Vec<usize> = Vec::new();
    inlined_calls(unit, |attrs| {
        let (mut low, mut high, mut size, mut ranges, mut origin) = (None, None, None, None, None);
        for attr in attrs {
            match attr.name() {
                gimli::DW_AT_low_pc => low = dwarf.attr_address(unit, attr.value()).ok().flatten(),
                gimli::DW_AT_high_pc => match attr.value() {
                    AttributeValue::Udata(n) => size = Some(n),
                    v => high = dwarf.attr_address(unit, v).ok().flatten(),
                },
                gimli::DW_AT_ranges => ranges = Some(attr.value()),
                gimli::DW_AT_abstract_origin => origin = Some(attr.value()),
                _ => {}
            }
        }
        hits.clear();
        let mut note = |begin: u64, end: u64| {
            let mut i = addrs.partition_point(|&(a, _)| a < begin);
            while let Some(&(a, idx)) = addrs.get(i) {
                if a >= end {
                    break;
                }
                hits.push(idx);
                i += 1;
            }
        };
        if let Some(r) = ranges {
            if let Ok(Some(mut list)) = dwarf.attr_ranges(unit, r) {
                while let Ok(Some(r)) = list.next() {
                    note(r.begin, r.end);
                }
            }
        } else if let Some(begin) = low {
            if let Some(end) = size.and_then(|n| begin.checked_add(n)).or(high) {
                note(begin, end);
            }
        }
        if hits.is_empty() {
            return true;
        }
        let line = decl_line(unit, others, origin);
        for &idx in &hits {
            if let Some(chain) = out.get_mut(idx) {
                chain.push(line);
            }
        }
        true
    });
}

/// Call `f` with the attributes of each `DW_TAG_inlined_subroutine` entry of `unit`, in
/// order, until it returns `false`. Only those entries have their attributes parsed; every
/// other entry is skipped by its abbreviation (most of a unit: variables, types,
/// parameters). An entry that does not parse ends the walk.
pub(crate) fn inlined_calls<'a>(
    unit: &gimli::Unit<Slice<'a>>,
    mut f: impl FnMut(&[gimli::Attribute<Slice<'a>>]) -> bool,
) {
    let Ok(mut entries) = unit.entries_raw(None) else {
        return;
    };
    let mut attrs = Vec::new();
    while !entries.is_empty() {
        let Ok(abbrev) = entries.read_abbreviation() else {
            return;
        };
        let Some(abbrev) = abbrev else {
            continue;
        };
        if abbrev.tag() != gimli::DW_TAG_inlined_subroutine {
            if entries.skip_attributes(abbrev.attributes()).is_err() {
                return;
            }
            continue;
        }
        attrs.clear();
        for spec in abbrev.attributes() {
            let Ok(attr) = entries.read_attribute(*spec) else {
                return;
            };
            attrs.push(attr);
        }
        if !f(&attrs) {
            return;
        }
    }
}

/// The declaration line of the entry `origin` points at, following its own
/// `DW_AT_specification` / `DW_AT_abstract_origin` while it has none, within `unit` or, for
/// a reference into another unit (Rust and LTO builds inline across units), in that unit.
fn decl_line<'a>(
    unit: &gimli::Unit<Slice<'a>>,
    others: &mut OtherUnits<'_, 'a>,
    mut origin: Option<AttributeValue<Slice<'a>>>,
) -> Option<u32> {
    // The unit the current reference is relative to: None for `unit`, else an index into
    // `others`.
    let mut within: Option<usize> = None;
    for _ in 0..MAX_HOPS {
        let (at, offset) = match origin? {
            AttributeValue::UnitRef(o) => (within, o),
            AttributeValue::DebugInfoRef(o) => others.locate(o)?,
            _ => return None,
        };
        within = at;
        let u = match at {
            None => unit,
            Some(i) => others.units.get(i)?.1.as_ref()?,
        };
        let entry = u.entry(offset).ok()?;
        if let Some(line) = entry
            .attr_value(gimli::DW_AT_decl_line)
            .and_then(|v| v.udata_value())
        {
            return u32::try_from(line).ok().filter(|&l| l > 0);
        }
        origin = entry
            .attr_value(gimli::DW_AT_specification)
            .or_else(|| entry.attr_value(gimli::DW_AT_abstract_origin));
    }
    None
}

/// The units other than the walked one that references lead into, opened once each.
pub(crate) struct OtherUnits<'d, 'a> {
    dwarf: &'d gimli::Dwarf<Slice<'a>>,
    /// Every unit's start in `.debug_info`, sorted, with the unit once opened (`None` until
    /// then, or if it cannot be).
    pub(crate) units: Vec<(gimli::DebugInfoOffset, Option<gimli::Unit<Slice<'a>>>)>,
    /// The starts were listed.
    listed: bool,
}

impl<'d, 'a> OtherUnits<'d, 'a> {
    pub(crate) fn new(dwarf: &'d gimli::Dwarf<Slice<'a>>) -> Self {
        OtherUnits {
            dwarf,
            units: Vec::new(),
            listed: false,
        }
    }

    /// The unit holding `.debug_info` offset `o` (opened), and `o` within it.
    pub(crate) fn locate(
        &mut self,
        o: gimli::DebugInfoOffset,
    ) -> Option<(Option<usize>, UnitOffset)> {
        if !self.listed {
            self.listed = true;
            let mut headers = self.dwarf.units();
            while let Ok(Some(h)) = headers.next() {
                self.units
                    .push((gimli::DebugInfoOffset(h.offset().0), None));
            }
        }
        let i = self
            .units
            .partition_point(|(start, _)| start.0 <= o.0)
            .checked_sub(1)?;
        if self.units[i].1.is_none() {
            let header = self
                .dwarf
                .debug_info
                .header_from_offset(self.units[i].0)
                .ok()?;
            self.units[i].1 = Some(self.dwarf.unit(header).ok()?);
        }
        let unit = self.units[i].1.as_ref()?;
        let offset = o.to_unit_offset(&unit.header)?;
        Some((Some(i), offset))
    }
}
