//! The symbol cache: answers kept per build-id give exactly what reading the binary gives,
//! a second symbolizer reads no symbol table or DWARF for offsets already kept, damaged or
//! hostile kept files are ignored with a warning, and a rebuilt binary never gets the old
//! binary's answers.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{compile, files_ending, func_offset, inlined_offsets, INLINED as SRC, PROG};
use hood_symbols::{Resolution, SymbolCacheConfig, SymbolStats, Symbolizer, SymbolizerOptions};

fn options(cache: Option<&Path>) -> SymbolizerOptions {
    SymbolizerOptions {
        symbol_cache: cache.map(|dir| SymbolCacheConfig {
            dir: dir.to_path_buf(),
            max_bytes: 1 << 30,
            explicit: true,
        }),
        ..SymbolizerOptions::default()
    }
}

fn symbolizer(cache: Option<&Path>) -> Symbolizer {
    Symbolizer::new(options(cache)).expect("symbolizer")
}

/// Every 3rd byte of `work`, `outer` and `main`, and one offset before any function.
fn offsets(bin: &Path) -> Vec<u64> {
    let mut v = vec![0x10];
    v.extend(inlined_offsets(bin));
    v
}

/// Answers for `offs` of `bin` (recorded with `id`) by a fresh symbolizer, its warnings and
/// where its answers came from.
fn resolve(
    cache: Option<&Path>,
    bin: &Path,
    id: Option<&hood_symbols::BuildId>,
    offs: &[u64],
) -> (Vec<Resolution>, Vec<String>, SymbolStats) {
    let mut s = symbolizer(cache);
    let got = s.symbolize_file(bin, id, offs);
    (got, s.warnings().to_vec(), s.stats())
}

/// The kept files in `dir`.
fn kept(dir: &Path) -> Vec<PathBuf> {
    files_ending(dir, ".answers")
}

#[test]
fn kept_answers_are_the_same_and_read_no_debug_info() {
    let dir = tempfile::tempdir().unwrap();
    let bin = compile(dir.path(), "prog", SRC, &["-O2", "-g"]);
    let id = hood_symbols::read_build_id(&bin).unwrap().unwrap();
    let offs = offsets(&bin);
    let (want, warnings, _) = resolve(None, &bin, Some(&id), &offs);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(
        want.iter()
            .any(|r| r.as_ref().is_ok_and(|s| !s.inlined.is_empty())),
        "no inlined frame in -O2 code: {want:?}"
    );
    assert!(
        want[0].is_err(),
        "offset 0x10 has no function: {:?}",
        want[0]
    );

    let cache = dir.path().join("cache/symbols");
    let (first, warnings, stats) = resolve(Some(&cache), &bin, Some(&id), &offs);
    assert_eq!(first, want);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(stats.from_cache, 0);
    assert_eq!(stats.from_files, offs.len() as u64);
    assert_eq!(kept(&cache).len(), 1, "one kept file per binary");

    // The second symbolizer answers every offset from the cache, the same way.
    let (second, warnings, stats) = resolve(Some(&cache), &bin, Some(&id), &offs);
    assert_eq!(second, want);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        stats,
        SymbolStats {
            from_cache: offs.len() as u64,
            from_files: 0
        }
    );

    // New offsets beside kept ones: only the new ones are read, and then kept too.
    let (more_off, more_size) = func_offset(&bin, "work", false);
    let more: Vec<u64> = (0..more_size).map(|d| more_off + d).collect();
    let (want_more, _, _) = resolve(None, &bin, Some(&id), &more);
    let (got_more, _, stats) = resolve(Some(&cache), &bin, Some(&id), &more);
    assert_eq!(got_more, want_more);
    assert!(stats.from_cache > 0 && stats.from_files > 0, "{stats:?}");
    let (_, _, stats) = resolve(Some(&cache), &bin, Some(&id), &more);
    assert_eq!(stats.from_files, 0);

    // Names are kept raw: full names and no demangling still derive from kept answers.
    for (full, demangle) in [(true, true), (false, false)] {
        let opts = |cache| SymbolizerOptions {
            full_names: full,
            demangle,
            ..options(cache)
        };
        let cpp = compile(dir.path(), "cpp", PROG, &["-g"]);
        let (d, _) = func_offset(&cpp, "_Z5deltai", false);
        let mut plain = Symbolizer::new(opts(None)).unwrap();
        let want = plain.symbolize_file(&cpp, None, &[d + 1]);
        let mut warm = Symbolizer::new(opts(Some(&cache))).unwrap();
        warm.symbolize_file(&cpp, None, &[d + 1]);
        let mut warm = Symbolizer::new(opts(Some(&cache))).unwrap();
        assert_eq!(warm.symbolize_file(&cpp, None, &[d + 1]), want);
        assert_eq!(warm.stats().from_files, 0);
    }

    // Without inlined functions the answers differ, and are kept apart.
    let no_inline = |cache| SymbolizerOptions {
        inlined: false,
        ..options(cache)
    };
    let want_flat =
        Symbolizer::new(no_inline(None))
            .unwrap()
            .symbolize_file(&bin, Some(&id), &offs);
    assert_ne!(want_flat, want);
    let mut s = Symbolizer::new(no_inline(Some(&cache))).unwrap();
    assert_eq!(s.symbolize_file(&bin, Some(&id), &offs), want_flat);
    assert_eq!(
        s.stats().from_cache,
        0,
        "answers with inlines are not reused"
    );
}

#[test]
fn a_rebuilt_or_stripped_binary_never_gets_old_answers() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("symbols");
    let bin = compile(dir.path(), "prog", SRC, &["-O2", "-g"]);
    let offs = offsets(&bin);
    let (old, _, _) = resolve(Some(&cache), &bin, None, &offs);
    // Another program at the same path, same offsets asked for (no recorded build-id:
    // the file on disk is what is read).
    let other = SRC
        .replace("argc * 1000", "argc * 7")
        .replace("sq(i)", "sq(i) + i");
    compile(dir.path(), "prog", &other, &["-O2", "-g"]);
    let (want, _, _) = resolve(None, &bin, None, &offs);
    let (got, _, stats) = resolve(Some(&cache), &bin, None, &offs);
    assert_eq!(got, want);
    assert_ne!(got, old, "the two builds answer differently");
    assert_eq!(stats.from_cache, 0, "{stats:?}");

    // A stripped copy keeps the build-id but has no symbols: it gets its own answers.
    let stripped = dir.path().join("stripped");
    let st = std::process::Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&bin)
        .status()
        .expect("run strip");
    assert!(st.success());
    assert_eq!(
        hood_symbols::read_build_id(&stripped).unwrap(),
        hood_symbols::read_build_id(&bin).unwrap()
    );
    let (want, _, _) = resolve(None, &stripped, None, &offs);
    let (got, _, stats) = resolve(Some(&cache), &stripped, None, &offs);
    assert_eq!(got, want);
    assert_eq!(stats.from_cache, 0, "{stats:?}");

    // A binary without a build-id is kept by its file's identity: the same file is answered
    // from the cache, another one written to the same path is not.
    let bare = compile(
        dir.path(),
        "bare",
        SRC,
        &["-O2", "-g", "-Wl,--build-id=none"],
    );
    assert_eq!(hood_symbols::read_build_id(&bare).unwrap(), None);
    let offs = offsets(&bare);
    let (first, _, _) = resolve(Some(&cache), &bare, None, &offs);
    let (again, _, stats) = resolve(Some(&cache), &bare, None, &offs);
    assert_eq!(again, first);
    assert_eq!(stats.from_files, 0, "{stats:?}");
    compile(
        dir.path(),
        "bare",
        &other,
        &["-O2", "-g", "-Wl,--build-id=none"],
    );
    let (want, _, _) = resolve(None, &bare, None, &offs);
    let (got, _, stats) = resolve(Some(&cache), &bare, None, &offs);
    assert_eq!(got, want);
    assert_ne!(got, first, "the two builds answer differently");
    assert_eq!(stats.from_cache, 0, "{stats:?}");
}

#[test]
fn damaged_or_hostile_kept_files_are_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("symbols");
    let bin = compile(dir.path(), "prog", SRC, &["-O2", "-g"]);
    let offs = offsets(&bin);
    let (want, _, _) = resolve(None, &bin, None, &offs);
    resolve(Some(&cache), &bin, None, &offs);
    let file = kept(&cache).pop().expect("a kept file");
    let good = std::fs::read(&file).unwrap();

    // Each damaged version: the answers are still right, one warning names the file, and a
    // good file is written again.
    let mut huge = good.clone();
    // The string count right after the key claimed huge, under a checksum made right.
    let at = 8 + 4 + 4 + (u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize);
    huge[at..at + 4].copy_from_slice(&(u32::MAX - 1).to_le_bytes());
    let body = huge.len() - 4;
    let crc = crc32fast::hash(&huge[..body]);
    huge[body..].copy_from_slice(&crc.to_le_bytes());
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 1;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("a flipped bit", flipped),
        ("a huge count", huge),
        (
            "not ours",
            b"hello, this is not a symbol cache at all".to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        std::fs::write(&file, &bytes).unwrap();
        let (got, warnings, stats) = resolve(Some(&cache), &bin, None, &offs);
        assert_eq!(got, want, "{what}");
        assert_eq!(stats.from_cache, 0, "{what}");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&file.display().to_string()) && w.contains("ignored")),
            "{what}: {warnings:?}"
        );
        let (_, warnings, stats) = resolve(Some(&cache), &bin, None, &offs);
        assert!(warnings.is_empty(), "{what}: rewritten: {warnings:?}");
        assert_eq!(stats.from_files, 0, "{what}: rewritten");
    }

    // A symlink in place of the kept file is not followed.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(&elsewhere, &good).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
    let (got, warnings, stats) = resolve(Some(&cache), &bin, None, &offs);
    assert_eq!(got, want);
    assert_eq!(stats.from_cache, 0, "read through a symlink");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&file.display().to_string())),
        "{warnings:?}"
    );
    assert_eq!(
        std::fs::read(&elsewhere).unwrap(),
        good,
        "the symlink's target is untouched"
    );
    assert!(
        !std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced by a kept file of ours"
    );

    // A cache directory others may write is not used, and the warning says how to fix it.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before = std::fs::read(&file).unwrap();
    let (got, warnings, stats) = resolve(Some(&cache), &bin, None, &offs);
    assert_eq!(got, want);
    assert_eq!(stats.from_cache, 0);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("writable by other users") && w.contains("HOOD_SYMBOL_CACHE")),
        "{warnings:?}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing written");
}

#[test]
fn the_cache_is_trimmed_to_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("symbols");
    let mut made = Vec::new();
    for i in 0..3 {
        let src = SRC.replace("argc * 1000", &format!("argc * {}", 1000 + i));
        let bin = compile(dir.path(), &format!("p{i}"), &src, &["-O2", "-g"]);
        let offs = offsets(&bin);
        let mut s = Symbolizer::new(SymbolizerOptions {
            symbol_cache: Some(SymbolCacheConfig {
                dir: cache.clone(),
                // Room for about two files of this size.
                max_bytes: made.first().map_or(1 << 30, |f: &PathBuf| {
                    let n = f.metadata().unwrap().len();
                    n * 2 + n / 2
                }),
                explicit: true,
            }),
            ..SymbolizerOptions::default()
        })
        .unwrap();
        s.symbolize_file(&bin, None, &offs);
        let new: Vec<PathBuf> = kept(&cache)
            .into_iter()
            .filter(|p| !made.contains(p))
            .collect();
        made.extend(new);
    }
    assert_eq!(made.len(), 3);
    let left = kept(&cache);
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(
        !left.contains(&made[0]),
        "the least recently used is removed"
    );
}
