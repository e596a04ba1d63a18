//! The DWARF cache: files whose debug sections are compressed (as Debian's debug files are)
//! are read from a decompressed copy, with exactly the answers the original gives.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{compile, files_ending, inlined_offsets as offsets, INLINED as SRC};
use hood_symbols::{DwarfCacheConfig, Resolution, Symbolizer, SymbolizerOptions};

/// A copy of `bin` with its debug sections compressed by objcopy (`zlib` or `zstd`);
/// `None` (with a line saying so) if this objcopy cannot.
fn compressed(bin: &Path, how: &str) -> Option<PathBuf> {
    let out = bin.with_file_name(format!("prog-{how}"));
    let r = Command::new("objcopy")
        .arg(format!("--compress-debug-sections={how}"))
        .arg(bin)
        .arg(&out)
        .output()
        .expect("run objcopy");
    if !r.status.success() {
        println!(
            "not run here: objcopy cannot compress with {how}: {}",
            String::from_utf8_lossy(&r.stderr).trim()
        );
        return None;
    }
    Some(out)
}

fn symbolizer(cache: Option<&Path>, max_bytes: u64) -> Symbolizer {
    symbolizer_with(cache, max_bytes, true)
}

fn symbolizer_with(cache: Option<&Path>, max_bytes: u64, explicit: bool) -> Symbolizer {
    Symbolizer::new(SymbolizerOptions {
        dwarf_cache: cache.map(|dir| DwarfCacheConfig {
            dir: dir.to_path_buf(),
            max_bytes,
            explicit,
        }),
        ..SymbolizerOptions::default()
    })
    .expect("symbolizer")
}

fn resolve(s: &mut Symbolizer, bin: &Path, offs: &[u64]) -> Vec<Resolution> {
    s.symbolize_file(bin, None, offs)
}

/// The `*.debug` files in `dir`.
fn copies(dir: &Path) -> Vec<PathBuf> {
    files_ending(dir, ".debug")
}

#[test]
fn compressed_dwarf_answers_from_the_cache_exactly_as_uncompressed() {
    let dir = tempfile::tempdir().unwrap();
    let plain = compile(dir.path(), "prog", SRC, &["-O2", "-g"]);
    let offs = offsets(&plain);
    let want = resolve(&mut symbolizer(None, 0), &plain, &offs);
    let lines = want
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|s| s.code.is_some()))
        .count();
    let inlined = want
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|s| !s.inlined.is_empty()))
        .count();
    assert!(
        lines * 10 >= offs.len() * 9,
        "{lines} of {} with lines",
        offs.len()
    );
    assert!(inlined > 0, "no inlined frame in -O2 code: {want:?}");

    let cache = dir.path().join("cache/dwarf");
    for how in ["zlib", "zstd"] {
        let Some(packed) = compressed(&plain, how) else {
            continue;
        };
        // The copy answers exactly as the uncompressed file.
        let mut s = symbolizer(Some(&cache), 1 << 30);
        assert_eq!(resolve(&mut s, &packed, &offs), want, "{how}");
        assert!(s.warnings().is_empty(), "{how}: {:?}", s.warnings());
        let made: Vec<PathBuf> = copies(&cache)
            .into_iter()
            .filter(|p| {
                let n = packed.metadata().unwrap().len();
                p.to_string_lossy().ends_with(&format!(".{n}.debug"))
            })
            .collect();
        assert_eq!(made.len(), 1, "{how}: one copy, named by build-id and size");
        let m = std::fs::symlink_metadata(&made[0]).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600, "{how}");
        assert_eq!(
            std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // A second report reads the same copy; it does not write it again.
        let mut again = symbolizer(Some(&cache), 1 << 30);
        assert_eq!(resolve(&mut again, &packed, &offs), want, "{how} again");
        assert_eq!(
            std::fs::symlink_metadata(&made[0]).unwrap().ino(),
            m.ino(),
            "{how}: rewritten"
        );
    }
    // zlib is also read without the cache (decompressed in memory, every time).
    if let Some(packed) = compressed(&plain, "zlib") {
        assert_eq!(resolve(&mut symbolizer(None, 0), &packed, &offs), want);
    }
}

#[test]
fn lying_section_sizes_leave_no_copy_and_the_file_keeps_its_names() {
    let dir = tempfile::tempdir().unwrap();
    let plain = compile(dir.path(), "prog", SRC, &["-O2", "-g"]);
    let Some(packed) = compressed(&plain, "zlib") else {
        return;
    };
    let mut bytes = std::fs::read(&packed).unwrap();
    // Every compression header (ELFCOMPRESS_ZLIB, 0, size, align) claims one byte more.
    let mut patched = 0;
    let mut i = 0;
    while i + 24 <= bytes.len() {
        if bytes[i..i + 8] == [1, 0, 0, 0, 0, 0, 0, 0] && bytes[i + 24..].starts_with(&[0x78]) {
            let size = u64::from_le_bytes(bytes[i + 8..i + 16].try_into().unwrap());
            if size > 0 && size < 1 << 24 {
                bytes[i + 8..i + 16].copy_from_slice(&(size + 1).to_le_bytes());
                patched += 1;
            }
        }
        i += 8;
    }
    assert!(patched > 0, "no compression header found");
    let liar = dir.path().join("liar");
    std::fs::write(&liar, &bytes).unwrap();
    let cache = dir.path().join("cache");
    let offs = offsets(&plain);
    let mut s = symbolizer(Some(&cache), 1 << 30);
    let got = resolve(&mut s, &liar, &offs);
    assert!(copies(&cache).is_empty(), "{:?}", copies(&cache));
    assert!(
        s.warnings().iter().any(|w| w.contains("decompressed to")),
        "{:?}",
        s.warnings()
    );
    // Names come from the symbol table either way.
    for (g, o) in got.iter().zip(&offs) {
        let name = g.as_ref().map(|s| s.name.as_str()).unwrap_or("?");
        assert!(["work", "outer", "main"].contains(&name), "{o:#x}: {g:?}");
    }
}

#[test]
fn the_cache_is_trimmed_to_its_budget_and_a_shared_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    // What a report killed while writing a copy left behind: removed once an hour old.
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    let old_temp = cache.join(".unpacking-old");
    let new_temp = cache.join(".unpacking-new");
    for t in [&old_temp, &new_temp] {
        std::fs::write(t, b"partial").unwrap();
    }
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&old_temp)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    let mut made: Vec<Vec<PathBuf>> = Vec::new();
    let mut budget = 1 << 30;
    for (i, n) in [1000, 2000].iter().enumerate() {
        let src = SRC.replace("argc * 1000", &format!("argc * {n}"));
        let plain = compile(dir.path(), &format!("p{i}"), &src, &["-O2", "-g"]);
        let Some(packed) = compressed(&plain, "zlib") else {
            return;
        };
        // The second time, a budget of one and a half copies: the new copy pushes the
        // older one out.
        let mut s = symbolizer(Some(&cache), budget);
        let offs = offsets(&plain);
        let want = resolve(&mut symbolizer(None, 0), &plain, &offs);
        assert_eq!(resolve(&mut s, &packed, &offs), want);
        let now = copies(&cache);
        if let Some(first) = now.first().filter(|_| i == 0) {
            let size = first.metadata().unwrap().len();
            budget = size + size / 2;
        }
        made.push(now);
    }
    assert!(!old_temp.exists(), "a stale temporary file is removed");
    assert!(new_temp.exists(), "one being written now is kept");
    assert_eq!(made[0].len(), 1);
    assert_eq!(made[1].len(), 1, "the older copy is removed: {:?}", made[1]);
    assert_ne!(made[0], made[1]);

    // A cache directory others may write is not used, and the warning says how to fix it.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let plain = compile(dir.path(), "p3", SRC, &["-O2", "-g"]);
    let packed = compressed(&plain, "zlib").unwrap();
    let offs = offsets(&plain);
    let want = resolve(&mut symbolizer(None, 0), &plain, &offs);
    let mut s = symbolizer(Some(&cache), 1 << 30);
    assert_eq!(resolve(&mut s, &packed, &offs), want);
    assert!(
        s.warnings()
            .iter()
            .any(|w| w.contains("writable by other users") && w.contains("HOOD_DWARF_CACHE")),
        "{:?}",
        s.warnings()
    );
    assert_eq!(
        copies(&cache),
        made[1],
        "nothing written to a refused cache"
    );
    // The default cache (not chosen by the user) is skipped without a word.
    let mut quiet = symbolizer_with(Some(&cache), 1 << 30, false);
    assert_eq!(resolve(&mut quiet, &packed, &offs), want);
    assert!(quiet.warnings().is_empty(), "{:?}", quiet.warnings());
}

/// A copy of `bin` whose `.debug_str` (its strings, then 256 MiB of zeros) is compressed:
/// a decompression bomb of a few hundred KiB that keeps the DWARF valid; `None` when
/// this objcopy cannot compress with `how`.
fn bomb(bin: &Path, how: &str) -> Option<PathBuf> {
    let dir = bin.parent().unwrap();
    let strings = dir.join("debug_str.bin");
    common::binutils(&[
        "objcopy".as_ref(),
        format!("--dump-section=.debug_str={}", strings.display()).as_ref(),
        bin.as_os_str(),
        dir.join("scratch").as_os_str(),
    ]);
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&strings)
        .unwrap();
    f.set_len(f.metadata().unwrap().len() + (256 << 20))
        .unwrap(); // sparse on disk
    let big = dir.join(format!("prog-big-{how}"));
    common::binutils(&[
        "objcopy".as_ref(),
        format!("--update-section=.debug_str={}", strings.display()).as_ref(),
        bin.as_os_str(),
        big.as_os_str(),
    ]);
    let out = compressed(&big, how)?;
    std::fs::remove_file(&big).unwrap();
    std::fs::remove_file(&strings).unwrap();
    Some(out)
}

#[test]
fn a_decompression_bomb_is_named_and_not_decompressed() {
    // Issue 29, R2: a zlib bomb in a small binary's DWARF made a report run out of memory,
    // and smaller ones wrote a gigabyte into root's DWARF cache.
    let dir = tempfile::tempdir().unwrap();
    let plain = compile(dir.path(), "prog", SRC, &["-O2", "-g"]);
    let offs = offsets(&plain);
    let names = |r: &[Resolution]| -> Vec<Option<String>> {
        r.iter()
            .map(|r| r.as_ref().ok().map(|s| s.name.clone()))
            .collect()
    };
    let want = names(&resolve(&mut symbolizer(None, 0), &plain, &offs));
    for how in ["zlib", "zstd"] {
        let Some(bin) = bomb(&plain, how) else {
            continue;
        };
        let size = std::fs::metadata(&bin).unwrap().len();
        assert!(size < 4 << 20, "{how}: the bomb is {size} bytes");
        for cache in [None, Some(dir.path().join(format!("cache-{how}")))] {
            let mut s = symbolizer(cache.as_deref(), 4 << 30);
            let got = resolve(&mut s, &bin, &offs);
            // The symbol tables still name every function; no line is read from the bomb.
            assert_eq!(names(&got), want, "{how}");
            assert!(
                got.iter()
                    .all(|r| r.as_ref().is_ok_and(|s| s.code.is_none())),
                "{how}: lines read from a bomb"
            );
            let shown = bin.display().to_string();
            assert!(
                s.warnings().iter().any(|w| w.contains(&shown)
                    && w.contains(".debug_str")
                    && w.contains("at most 64 times")),
                "{how}: no warning naming the file, the section and the cap: {:?}",
                s.warnings()
            );
            if let Some(c) = &cache {
                assert!(
                    copies(c).is_empty(),
                    "{how}: a copy was written to the cache"
                );
            }
        }
    }
}

#[test]
fn a_cache_behind_another_users_symlink_is_refused_as_root() {
    // Issue 29, R6: with HOME at a user's (`sudo -E`), a symlinked ~/.cache/hood made root
    // write 614 MB where the user chose; only the last component was checked.
    if !rustix::process::geteuid().is_root() {
        assert_ne!(
            std::env::var("HOOD_REQUIRE_PRIVILEGED").as_deref(),
            Ok("1"),
            "needs root and HOOD_REQUIRE_PRIVILEGED=1 forbids skipping"
        );
        eprintln!("SKIPPED (needs root): a_cache_behind_another_users_symlink_is_refused_as_root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plain = compile(dir.path(), "prog", SRC, &["-O2", "-g"]);
    let Some(bin) = compressed(&plain, "zlib") else {
        return;
    };
    let offs = offsets(&plain);
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".cache")).unwrap();
    let target = dir.path().join("chosen-by-the-user");
    std::fs::create_dir(&target).unwrap();
    let link = home.join(".cache/hood");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let nobody = 65534;
    std::os::unix::fs::lchown(&link, Some(nobody), Some(nobody)).unwrap();

    let mut s = symbolizer(Some(&link.join("dwarf")), 1 << 30);
    let got = resolve(&mut s, &bin, &offs);
    assert!(got.iter().any(|r| r.is_ok()), "{got:?}");
    assert!(
        s.warnings()
            .iter()
            .any(|w| w.contains(&link.display().to_string())
                && w.contains("symlink of another user")),
        "no refusal naming the link: {:?}",
        s.warnings()
    );
    let written: Vec<_> = std::fs::read_dir(&target).unwrap().collect();
    assert!(
        written.is_empty(),
        "root wrote into the user's directory: {written:?}"
    );

    // Root's own link to root's directory is fine.
    std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
    let mut s = symbolizer(Some(&link.join("dwarf")), 1 << 30);
    resolve(&mut s, &bin, &offs);
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    assert_eq!(copies(&target.join("dwarf")).len(), 1);
}
