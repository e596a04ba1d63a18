//! Demangling of Rust and C++ names from text sources (perf maps,
//! `--symfile`); ELF names are demangled by blazesym itself.

use std::collections::HashMap;

/// True if `name` may be a mangled Rust or C++ name (Itanium `_Z…`, Rust
/// v0 `_R…`, either with the extra leading underscore of some platforms).
pub(crate) fn looks_mangled(name: &str) -> bool {
    ["_Z", "__Z", "_R", "__R"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// Returns the demangled form of `name` (Rust legacy or v0, or Itanium
/// C++) with the whole C++ signature (parameters, return type), or `name`
/// unchanged when it is not a mangled name. Rust names never carry their hash.
pub fn demangle(name: &str) -> String {
    demangle_as(name, true)
}

/// Returns `name` demangled and shortened the way perf prints it: C++ without
/// parameter lists and return types (`ns::Box<int>::get`, template arguments
/// kept), Rust without hashes; `name` unchanged when it is not mangled.
pub fn demangle_short(name: &str) -> String {
    demangle_as(name, false)
}

fn demangle_as(name: &str, full: bool) -> String {
    // A PLT stub's name is its target's with `@plt` appended.
    if let Some(stem) = name.strip_suffix("@plt") {
        if looks_mangled(stem) {
            return format!("{}@plt", demangle_as(stem, full));
        }
    }
    if !looks_mangled(name) {
        return name.to_string();
    }
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let d = if full {
                sym.demangle()
            } else {
                let short = cpp_demangle::DemangleOptions::new()
                    .no_params()
                    .no_return_type();
                sym.demangle_with_options(&short)
            };
            if let Ok(d) = d {
                return d;
            }
        }
    }
    name.to_string()
}

/// Demangles with a memo: a hot function is met at many unique offsets.
#[derive(Debug, Default)]
pub(crate) struct DemangleCache {
    memo: HashMap<String, String>,
    /// Whole signatures ([`demangle`]) rather than short names ([`demangle_short`]).
    full: bool,
}

impl DemangleCache {
    pub(crate) fn new(full: bool) -> Self {
        DemangleCache {
            memo: HashMap::new(),
            full,
        }
    }

    /// Whether names are demangled with whole signatures.
    pub(crate) fn full(&self) -> bool {
        self.full
    }

    /// Takes `demangled` as the demangled form of `raw` (kept from an earlier report).
    pub(crate) fn seed(&mut self, raw: &str, demangled: &str) {
        if !self.memo.contains_key(raw) {
            self.memo.insert(raw.to_string(), demangled.to_string());
        }
    }

    /// Replaces `name` by its demangled form.
    pub(crate) fn apply(&mut self, name: &mut String) {
        if !looks_mangled(name.strip_suffix("@plt").unwrap_or(name)) {
            return;
        }
        if let Some(d) = self.memo.get(name.as_str()) {
            name.clone_from(d);
            return;
        }
        let d = demangle_as(name, self.full);
        self.memo.insert(std::mem::replace(name, d.clone()), d);
    }
}

#[cfg(test)]
mod tests {
    use super::{demangle, demangle_short};

    #[test]
    fn cpp_rust_and_plain() {
        assert_eq!(demangle("_Z3fooi"), "foo(int)");
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zgarbage"), "_Zgarbage");
    }

    #[test]
    fn short_names_drop_parameters_return_types_and_hashes() {
        // int ns::Box<int>::get<long>(long) const
        let m = "_ZNK2ns3BoxIiE3getIlEEiT_";
        assert_eq!(demangle(m), "int ns::Box<int>::get<long>(long) const");
        assert_eq!(demangle_short(m), "ns::Box<int>::get<long>");
        assert_eq!(demangle_short("_Z3fooi"), "foo");
        assert_eq!(
            demangle_short("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle_short("_ZdlPv@plt"), "operator delete@plt");
        assert_eq!(demangle("_ZdlPv@plt"), "operator delete(void*)@plt");
        assert_eq!(demangle_short("memcmp@plt"), "memcmp@plt");
    }
}
