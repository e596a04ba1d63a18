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
/// C++), or `name` unchanged when it is not a mangled name.
pub fn demangle(name: &str) -> String {
    if !looks_mangled(name) {
        return name.to_string();
    }
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = sym.demangle() {
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
}

impl DemangleCache {
    /// Replaces `name` by its demangled form.
    pub(crate) fn apply(&mut self, name: &mut String) {
        if !looks_mangled(name) {
            return;
        }
        if let Some(d) = self.memo.get(name.as_str()) {
            name.clone_from(d);
            return;
        }
        let d = demangle(name);
        self.memo.insert(std::mem::replace(name, d.clone()), d);
    }
}

#[cfg(test)]
mod tests {
    use super::demangle;

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
}
