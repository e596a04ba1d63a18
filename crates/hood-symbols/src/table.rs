//! A sorted address → name table shared by the kallsyms, perf-map and
//! nm-format parsers: names live in one string arena, lookups are a
//! binary search.

use crate::{Sym, Unresolved};

/// One entry of a [`SymbolTable`], 24 bytes (kallsyms has ~120k of them).
#[derive(Clone, Copy, Debug)]
struct Entry {
    start: u64,
    /// Exclusive end when the source gives a size, 0 when it does not.
    end: u64,
    name_at: u32,
    /// Name length in the low 31 bits; the top bit marks a code symbol
    /// (code resolves; data symbols only bound their neighbours).
    len_text: u32,
}

const TEXT_BIT: u32 = 1 << 31;
/// The name is kallsyms' `func\t[module]` in place: shown with a space for the tab.
const TAB_BIT: u32 = 1 << 30;
const LEN_MASK: u32 = !(TEXT_BIT | TAB_BIT);

impl Entry {
    fn text(&self) -> bool {
        self.len_text & TEXT_BIT != 0
    }
    fn end(&self) -> Option<u64> {
        (self.end != 0).then_some(self.end)
    }
    fn name_range(&self) -> std::ops::Range<usize> {
        let at = self.name_at as usize;
        at..at + (self.len_text & LEN_MASK) as usize
    }
}

/// A sorted symbol table built from text (kallsyms, perf map, nm output).
///
/// A symbol without a size extends to the next symbol's start (data
/// symbols included, so an address in a data area is not charged to the
/// function before it); the last symbol without a size covers at most
/// [`SymbolTable::LAST_SYMBOL_SPAN`] bytes.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    entries: Vec<Entry>,
    names: String,
}

impl SymbolTable {
    /// How far past its start the last symbol of a table (with no size
    /// and no successor) may still claim an address.
    pub const LAST_SYMBOL_SPAN: u64 = 64 << 10;

    /// Adds a symbol. `size` of `None` or `Some(0)` means "unknown".
    pub(crate) fn push(&mut self, start: u64, size: Option<u64>, name: &str, text: bool) {
        self.push_parts(start, size, &[name], text);
    }

    /// Adds a symbol whose name is the concatenation of `parts`.
    pub(crate) fn push_parts(&mut self, start: u64, size: Option<u64>, parts: &[&str], text: bool) {
        let name_at = self.names.len();
        for p in parts {
            self.names.push_str(p);
        }
        let (Ok(name_at), Ok(name_len)) = (
            u32::try_from(name_at),
            u32::try_from(self.names.len() - name_at),
        ) else {
            // Over 4 GiB of names: refuse further symbols rather than wrap.
            self.names.truncate(name_at);
            return;
        };
        if name_len & !LEN_MASK != 0 {
            // A single name over 1 GiB: not a symbol.
            self.names.truncate(name_at as usize);
            return;
        }
        let end = match size {
            Some(s) if s > 0 => start.saturating_add(s),
            _ => 0,
        };
        self.entries.push(Entry {
            start,
            end,
            name_at,
            len_text: name_len | if text { TEXT_BIT } else { 0 },
        });
    }

    /// A table whose names are slices of `text` itself (no copy): fill it with
    /// [`push_in_place`](Self::push_in_place), then [`finish`](Self::finish).
    pub(crate) fn over_text(text: String, symbols: usize) -> Self {
        SymbolTable {
            entries: Vec::with_capacity(symbols),
            names: text,
        }
    }

    /// Adds a symbol whose name is `names[at..at + len]` already; `tab`: the name is
    /// `func\t[module]`, shown as `func [module]`. Out-of-range names are refused.
    pub(crate) fn push_in_place(
        &mut self,
        start: u64,
        at: usize,
        len: usize,
        text: bool,
        tab: bool,
    ) {
        let (Ok(name_at), Ok(name_len)) = (u32::try_from(at), u32::try_from(len)) else {
            return;
        };
        if name_len & !LEN_MASK != 0 || self.names.get(at..at + len).is_none() {
            return;
        }
        self.entries.push(Entry {
            start,
            end: 0,
            name_at,
            len_text: name_len | if text { TEXT_BIT } else { 0 } | if tab { TAB_BIT } else { 0 },
        });
    }

    /// Sorts by start address; of several symbols at the same address the
    /// one added last wins (a JIT that reuses memory appends newer code
    /// later; kallsyms aliases are equally good).
    pub(crate) fn finish(&mut self) {
        // Stable sort keeps insertion order among equal starts (and is
        // linear on the nearly sorted kallsyms).
        self.entries.sort_by_key(|e| e.start);
        // Compact in place: of equal starts keep the later code symbol, but
        // never let a data symbol hide a function at the same address.
        let mut w = 0usize;
        for r in 0..self.entries.len() {
            let e = self.entries[r];
            if w > 0 && self.entries[w - 1].start == e.start {
                let last = &mut self.entries[w - 1];
                if e.text() || !last.text() {
                    *last = e;
                }
            } else {
                self.entries[w] = e;
                w += 1;
            }
        }
        self.entries.truncate(w);
    }

    /// Number of symbols (code and data).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if the table holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of code symbols.
    pub fn text_len(&self) -> usize {
        self.entries.iter().filter(|e| e.text()).count()
    }

    /// True if every symbol sits at address 0 (kallsyms read without
    /// privileges under `kptr_restrict`).
    pub(crate) fn all_zero(&self) -> bool {
        self.entries.iter().all(|e| e.start == 0)
    }

    /// The start of the entry an address falls in and the start of the next entry: the two
    /// symbols that decide how [`lookup`](Self::lookup) answers for `addr`.
    pub(crate) fn neighbours(&self, addr: u64) -> Option<(u64, Option<u64>)> {
        let i = self
            .entries
            .partition_point(|e| e.start <= addr)
            .checked_sub(1)?;
        Some((
            self.entries[i].start,
            self.entries.get(i + 1).map(|e| e.start),
        ))
    }

    /// Resolves one address.
    pub fn lookup(&self, addr: u64) -> Result<Sym, Unresolved> {
        let idx = self.entries.partition_point(|e| e.start <= addr);
        let Some(i) = idx.checked_sub(1) else {
            return Err(Unresolved::NoSymbol);
        };
        let e = self.entries[i];
        let limit = match (e.end(), self.entries.get(i + 1)) {
            (Some(end), _) => end,
            (None, Some(next)) => next.start,
            (None, None) => e.start.saturating_add(Self::LAST_SYMBOL_SPAN),
        };
        if !e.text() || addr >= limit {
            return Err(Unresolved::NoSymbol);
        }
        let name = self.names.get(e.name_range()).unwrap_or("");
        let name = if e.len_text & TAB_BIT != 0 {
            name.replace('\t', " ")
        } else {
            name.to_string()
        };
        Ok(Sym {
            name,
            offset: addr - e.start,
            size: e.end().map(|end| end - e.start),
            ..Sym::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> SymbolTable {
        let mut t = SymbolTable::default();
        t.push(0x2000, None, "b", true);
        t.push(0x1000, Some(0x10), "a", true);
        t.push(0x3000, None, "data", false);
        t.push(0x2000, None, "b_alias", true);
        t.finish();
        t
    }

    #[test]
    fn sized_unsized_data_and_aliases() {
        let t = table();
        assert_eq!(t.lookup(0x1000).unwrap().name, "a");
        assert_eq!(t.lookup(0x100f).unwrap().offset, 0xf);
        assert_eq!(t.lookup(0x1010), Err(Unresolved::NoSymbol));
        assert_eq!(t.lookup(0xfff), Err(Unresolved::NoSymbol));
        let b = t.lookup(0x2fff).unwrap();
        assert_eq!(
            (b.name.as_str(), b.offset, b.size),
            ("b_alias", 0xfff, None)
        );
        assert_eq!(t.lookup(0x3000), Err(Unresolved::NoSymbol));
        assert_eq!(t.len(), 3);
        assert_eq!(t.text_len(), 2);
    }
}
