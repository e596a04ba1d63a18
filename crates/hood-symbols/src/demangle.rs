//! Demangling of Rust and C++ names from text sources (perf maps,
//! `--symfile`); ELF names are demangled by blazesym itself.

/// Returns the demangled form of `name` (Rust legacy or v0, or Itanium
/// C++), or `name` unchanged when it is not a mangled name.
pub fn demangle(name: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn cpp_rust_and_plain() {
        assert_eq!(demangle("_Z3fooi"), "foo(int)");
        assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zgarbage"), "_Zgarbage");
    }
}
