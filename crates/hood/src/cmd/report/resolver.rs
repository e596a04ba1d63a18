//! The symbolizer's options from the user's (`--debug-dir`, `--no-inline`, ...) and the
//! environment (debuginfod, the DWARF cache, the symbol cache).

use hood_symbols::SymbolizerOptions;

pub use super::args::SymbolOpts;

/// The symbolizer's options for the user's: `--debug-dir`s before the default directories,
/// debuginfod from the environment unless `--no-debuginfod`.
pub fn symbolizer_options(opts: &SymbolOpts) -> SymbolizerOptions {
    let defaults = SymbolizerOptions::default();
    let mut debug_dirs = opts.debug_dirs.clone();
    debug_dirs.extend(defaults.debug_dirs.iter().cloned());
    SymbolizerOptions {
        symfile: opts.symfile.clone(),
        full_names: opts.full_names,
        inlined: !opts.no_inline,
        debug_dirs,
        debuginfod: if opts.no_debuginfod {
            None
        } else {
            hood_symbols::DebuginfodConfig::from_env().map(|c| hood_symbols::DebuginfodConfig {
                progress: Some(hood_symbols::Progress::new(|line| errln!("{line}"))),
                ..c
            })
        },
        dwarf_cache: hood_symbols::DwarfCacheConfig::from_env(),
        symbol_cache: hood_symbols::SymbolCacheConfig::from_env(),
        ..defaults
    }
}
