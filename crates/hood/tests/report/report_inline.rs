//! Inlined functions and source lines (issue 12, items 1 and 2), on a real recording of a
//! known program built `-O2 -g` by the test (tests/c/inline_hot.c): `mix` is
//! `always_inline`, so its code lives inside `outer_loop` and no symbol names it.
//! - every report shows it as its own frame, `mix (inlined)`, under `outer_loop`, and
//!   `--no-inline` takes it away;
//! - the function and file:line (full path) of every sampled address, inlined chain included,
//!   are what `addr2line -i` says for it, also for a Rust function inlined with code from two
//!   files (tests/c/rust_inline_files.rs: its macro's body carries the macro file's lines;
//!   pprof must name each line's own file, issue 24);
//! - `go tool pprof` reads the lines: `-list outer_loop` puts the samples on the call line.

use crate::common;

use std::collections::HashMap as Map;
use std::path::{Path, PathBuf};

use common::*;

/// Builds tests/c/inline_hot.c at -O2 with debug info into `dir`.
fn build(dir: &Path) -> PathBuf {
    let out = c_program_o2(dir, "inline_hot");
    // The premise: no symbol names `mix`, its code is inside `outer_loop`.
    let nm = common::command("nm")
        .arg(&out)
        .output()
        .expect("nm (binutils)");
    let syms = String::from_utf8_lossy(&nm.stdout);
    assert!(
        !syms.lines().any(|l| l.ends_with(" mix")) && syms.contains(" outer_loop"),
        "gcc did not inline mix into outer_loop:\n{syms}"
    );
    out
}

/// Records the program into `dir/inline.data`.
fn record_it(dir: &Path, prog: &Path) -> PathBuf {
    let data = dir.join("inline.data");
    let out = record(
        &data,
        &["-F", "2999", "--", prog.to_str().unwrap(), "4000000"],
    );
    assert!(out.status.success(), "{}", text(&out));
    data
}

/// (samples whose stack holds `outer_loop`, of which the user frame right under it, and last
/// user frame, is `mix (inlined)`); kernel frames (`_[k]`) after the user leaf are ignored.
fn inlined_under_caller(stacks: &[(Vec<String>, u64)]) -> (u64, u64) {
    let (mut with_caller, mut inlined) = (0, 0);
    for (frames, n) in stacks {
        if frames.first().map(String::as_str) != Some("inline_hot") {
            continue;
        }
        let user: Vec<&str> = frames
            .iter()
            .map(String::as_str)
            .filter(|f| !f.ends_with("_[k]"))
            .collect();
        let Some(at) = user.iter().position(|f| *f == "outer_loop") else {
            continue;
        };
        with_caller += n;
        if user.len() == at + 2 && user[at + 1] == "mix (inlined)" {
            inlined += n;
        }
    }
    (with_caller, inlined)
}

#[test]
fn inlined_function_is_a_frame_under_its_caller_in_every_report() {
    if !privileged("inlined_function_is_a_frame_under_its_caller_in_every_report") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path());
    let data = record_it(dir.path(), &prog);

    // Collapsed stacks (and so the flamegraph): ...;outer_loop;mix (inlined).
    let stacks = collapsed(&data, &[]);
    let (with_caller, inlined) = inlined_under_caller(&stacks);
    assert!(
        with_caller >= 500,
        "too few samples in outer_loop: {stacks:?}"
    );
    assert!(
        inlined * 100 >= with_caller * 95,
        "mix (inlined) under outer_loop in only {inlined} of {with_caller} samples: {stacks:?}"
    );
    // --no-inline: gone, its samples are outer_loop's own.
    let plain = collapsed(&data, &["--no-inline"]);
    assert!(
        plain
            .iter()
            .all(|(f, _)| f.iter().all(|x| !x.contains("(inlined)") && x != "mix")),
        "--no-inline still shows inlined frames: {plain:?}"
    );
    let user_leaf_outer: u64 = plain
        .iter()
        .filter(|(f, _)| {
            f.first().map(String::as_str) == Some("inline_hot")
                && f.iter()
                    .rev()
                    .find(|x| !x.ends_with("_[k]"))
                    .map(String::as_str)
                    == Some("outer_loop")
        })
        .map(|(_, n)| n)
        .sum();
    assert!(
        user_leaf_outer >= inlined,
        "--no-inline: outer_loop is the user leaf in {user_leaf_outer} samples, < {inlined}: {plain:?}"
    );

    // Text: the flat profile names it, the caller tree nests it under outer_loop.
    let out = run(hood()
        .args(["report", "--width", "0", "--call-graph", "caller", "-i"])
        .arg(&data));
    assert!(out.status.success(), "{}", text(&out));
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let tree: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("Call graph"))
        .collect();
    let depth = |name: &str| {
        tree.iter().find_map(|l| {
            let cols = l.split_whitespace().collect::<Vec<_>>();
            let at = l.find(name)?;
            (cols.last() == Some(&name.split(' ').next_back().unwrap())).then_some(at)
        })
    };
    let (caller, callee) = (depth("outer_loop"), depth("mix (inlined)"));
    assert!(
        matches!((caller, callee), (Some(a), Some(b)) if b == a + 2),
        "the call tree does not nest mix (inlined) under outer_loop:\n{report}"
    );
    let callee_tree = run(hood()
        .args(["report", "--width", "0", "--call-graph", "callee", "-i"])
        .arg(&data));
    assert!(
        String::from_utf8_lossy(&callee_tree.stdout).contains("mix (inlined)"),
        "{}",
        text(&callee_tree)
    );

    // JSON: a function of its own, marked inlined, holding most samples.
    let out = run(hood().args(["report", "--format", "json", "-i"]).arg(&data));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let top = &json["functions"][0];
    assert_eq!(
        (top["name"].as_str(), top["inlined"].as_bool()),
        (Some("mix"), Some(true)),
        "{top}"
    );

    // hood annotate mix: its samples per line of mix, the same counts as `lines` in the
    // JSON, beside the source text.
    let out = run(hood().args(["annotate", "-i"]).arg(&data).arg("mix"));
    assert!(out.status.success(), "{}", text(&out));
    let annotated = String::from_utf8_lossy(&out.stdout).into_owned();
    for row in json["lines"].as_array().unwrap() {
        if row["function"] != "mix" {
            continue;
        }
        let (line, n) = (
            row["line"].as_u64().unwrap(),
            row["samples"].as_u64().unwrap(),
        );
        let shown = annotated.lines().any(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            c.len() >= 3 && c[1] == n.to_string() && c[2] == line.to_string()
        });
        assert!(shown, "line {line} with {n} samples not in:\n{annotated}");
    }
    assert!(
        annotated.contains("HOT-LINE-A") && annotated.contains("static inline"),
        "no source text beside the counts:\n{annotated}"
    );
    // --source-map: the source read from elsewhere.
    let copy = dir.path().join("moved");
    std::fs::create_dir(&copy).unwrap();
    let src = std::fs::read_to_string(repo().join("tests/c/inline_hot.c")).unwrap();
    std::fs::write(
        copy.join("inline_hot.c"),
        src.replace("HOT-LINE-A", "MOVED-A"),
    )
    .unwrap();
    let map = format!("{}={}", repo().join("tests/c").display(), copy.display());
    let out = run(hood()
        .args(["annotate", "--source-map", &map, "-i"])
        .arg(&data)
        .arg("mix"));
    let moved = String::from_utf8_lossy(&out.stdout);
    assert!(
        moved.contains("MOVED-A") && !moved.contains("HOT-LINE-A"),
        "{}",
        text(&out)
    );

    // --asm: outer_loop's instructions, at the offsets objdump decodes, and the samples on
    // them add up to the function's.
    let out = run(hood()
        .args(["annotate", "--asm", "-i"])
        .arg(&data)
        .arg("outer_loop"));
    assert!(out.status.success(), "{}", text(&out));
    let asm = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut ours = Vec::new();
    let mut on_instructions = 0u64;
    // Rows after the heading: "PCT% N 0xOFFSET insn ..." or "0xOFFSET insn ...".
    for l in asm.lines().skip_while(|l| !l.contains("Offset")).skip(1) {
        let c: Vec<&str> = l.split_whitespace().collect();
        let at = match c.as_slice() {
            [p, _, o, ..] if p.ends_with('%') && o.starts_with("0x") => Some(2),
            [o, ..] if o.starts_with("0x") => Some(0),
            _ => None,
        };
        if let Some(at) = at {
            ours.push(u64::from_str_radix(&c[at][2..], 16).unwrap());
            if at == 2 {
                on_instructions += c[1].parse::<u64>().unwrap();
            }
        }
    }
    let samples: u64 = asm
        .lines()
        .find_map(|l| {
            l.strip_prefix("Samples:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .expect("Samples: line");
    assert_eq!(on_instructions, samples, "{asm}");
    let (lo, hi) = (ours[0], ours[ours.len() - 1]);
    let objdump = common::command("objdump")
        .args([
            "-d",
            &format!("--start-address={lo:#x}"),
            &format!("--stop-address={:#x}", hi + 1),
        ])
        .arg(&prog)
        .output()
        .expect("objdump (binutils)");
    let theirs: Vec<u64> = String::from_utf8_lossy(&objdump.stdout)
        .lines()
        .filter_map(|l| {
            // "ADDR:\tBYTES\tINSN"; a long instruction's extra bytes follow on a line
            // without INSN.
            let (a, rest) = l.trim_start().split_once(':')?;
            (rest.split('\t').count() >= 3).then(|| u64::from_str_radix(a, 16).ok())?
        })
        .collect();
    assert_eq!(
        ours, theirs,
        "instruction offsets differ from objdump's:\n{asm}"
    );

    let none = run(hood().args(["annotate", "-i"]).arg(&data).arg("no_such_fn"));
    assert!(
        !none.status.success() && text(&none).contains("no function named"),
        "{}",
        text(&none)
    );

    // pprof: one location per address with two lines, mix (innermost) then outer_loop.
    if let Some(raw) = go_pprof(dir.path(), &data, &["-raw"]) {
        let locations: Vec<&str> = raw
            .lines()
            .skip_while(|l| *l != "Locations")
            .take_while(|l| *l != "Mappings")
            .collect();
        let pairs = locations
            .windows(2)
            .filter(|w| w[0].contains(" mix ") && w[1].trim_start().starts_with("outer_loop "))
            .count();
        assert!(pairs > 0, "no location with lines mix, outer_loop:\n{raw}");
        assert!(
            raw.lines()
                .any(|l| l.contains("/inline_hot ") && l.contains("[FN][FL][LN][IN]")),
            "the program's mapping does not say it has lines and inline frames:\n{raw}"
        );
    }
}

/// `go tool pprof ARGS` on the pprof output of `data`; `None` (said so) when go is missing.
fn go_pprof(dir: &Path, data: &Path, args: &[&str]) -> Option<String> {
    let pb = dir.join("inline.pb.gz");
    if !pb.exists() {
        let out = run(hood()
            .args(["report", "--format", "pprof", "-i"])
            .arg(data)
            .arg("-o")
            .arg(&pb));
        assert!(out.status.success(), "{}", text(&out));
    }
    let Ok(out) = go_tool_pprof(dir).args(args).arg(&pb).output() else {
        eprintln!("not run here: go tool pprof {args:?} (`go` is not installed: apt-get install golang-go)");
        return None;
    };
    assert!(
        out.status.success(),
        "go tool pprof {args:?}:\n{}",
        text(&out)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `PT_LOAD` segments of `prog` per readelf: (file offset, virtual address, file size).
fn loads(prog: &Path) -> Vec<(u64, u64, u64)> {
    let out = common::command("readelf")
        .arg("-lW")
        .arg(prog)
        .output()
        .unwrap();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (c.first() == Some(&"LOAD")).then(|| (hex(c[1]), hex(c[2]), hex(c[4])))
        })
        .collect()
}

/// Every sampled location of `prog` in the pprof output of `data`, as `go tool pprof -raw`
/// gives it (address as a virtual address of the file; "function /full/path:line" per frame,
/// innermost first), after checking each against `addr2line -i -f -C`: the same functions,
/// source files (full paths) and lines. `None` (said so) when go is missing.
fn locations_match_addr2line(
    dir: &Path,
    prog: &Path,
    data: &Path,
) -> Option<Vec<(u64, Vec<String>)>> {
    let raw = go_pprof(dir, data, &["-raw"])?;
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    // Mapping id -> (start, file offset) of the program's own mapping.
    let mut maps = Map::new();
    for l in raw.lines().skip_while(|l| *l != "Mappings").skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 2 && Path::new(f[2]) == prog {
            let r: Vec<u64> = f[1].split('/').map(hex).collect();
            maps.insert(f[0].trim_end_matches(':').to_string(), (r[0], r[2]));
        }
    }
    assert!(!maps.is_empty(), "no mapping of {}:\n{raw}", prog.display());
    // Each location of the program: its address as a virtual address of the file, and its
    // lines "function /path/file:line", innermost first (hood's names have no spaces).
    let segs = loads(prog);
    let mut locs: Vec<(u64, Vec<String>)> = Vec::new();
    let mut current: Option<usize> = None;
    for l in raw
        .lines()
        .skip_while(|l| *l != "Locations")
        .skip(1)
        .take_while(|l| *l != "Mappings")
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        let line_of = |f: &[&str]| format!("{} {}", f[0], f[1]);
        // "12: 0xADDR M=1 ..." starts a location ("name:: file:line" continues one: a Rust
        // name whose generic arguments were left out).
        let header = |x: &str| {
            x.strip_suffix(':')
                .is_some_and(|n| n.parse::<u64>().is_ok())
        };
        if f.first().is_some_and(|x| header(x)) {
            current = None;
            let Some(&(start, offset)) =
                f.get(2).and_then(|m| maps.get(m.trim_start_matches("M=")))
            else {
                continue;
            };
            let file_offset = hex(f[1]) - start + offset;
            let (o, v, _) = *segs
                .iter()
                .find(|(o, _, sz)| (*o..o + sz).contains(&file_offset))
                .expect("address in a PT_LOAD segment");
            locs.push((file_offset - o + v, vec![line_of(&f[3..])]));
            current = Some(locs.len() - 1);
        } else if let (Some(i), true) = (current, f.len() >= 2) {
            locs[i].1.push(line_of(&f));
        }
    }
    assert!(locs.len() >= 3, "too few locations in the program:\n{raw}");
    // addr2line -i -f -C: per address, "function\nfile:line" for each frame, innermost first.
    let out = common::command("addr2line")
        .args(["-i", "-f", "-C", "-a", "-e"])
        .arg(prog)
        .args(locs.iter().map(|(a, _)| format!("{a:#x}")))
        .output()
        .expect("addr2line (binutils)");
    let a2l = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut want: Vec<Vec<String>> = Vec::new();
    let mut lines = a2l.lines().peekable();
    while let Some(l) = lines.next() {
        if l.starts_with("0x") {
            want.push(Vec::new());
            continue;
        }
        let place = lines.next().unwrap_or("");
        // "/path/inline_hot.c:12 (discriminator 3)" -> "/path/inline_hot.c:12"
        let place = place.split(' ').next().unwrap();
        want.last_mut().unwrap().push(format!("{l} {place}"));
    }
    assert_eq!(want.len(), locs.len(), "{a2l}");
    let mut compared = 0;
    for ((addr, got), want) in locs.iter().zip(&want) {
        // Code without line info (crt's _start, crtstuff.c's __do_global_dtors_aux at exit,
        // PLT stubs): addr2line says "??:?", "crtstuff.c:?" or "??:0", hood ":0".
        if want
            .iter()
            .any(|w| w.ends_with(":?") || w.ends_with(" ??:0"))
        {
            continue;
        }
        // Names of Rust trait impls and generics: addr2line gives `<T as Trait>::f`, hood's
        // short name leaves the angle brackets out; those frames compare file and line only.
        let generic = |w: &String| w.rsplit_once(' ').is_some_and(|(n, _)| n.contains('<'));
        let place = |w: &String| w.rsplit_once(' ').map_or(String::new(), |(_, p)| p.into());
        let got: Vec<String> = got
            .iter()
            .zip(want.iter().map(generic).chain(std::iter::repeat(false)))
            .map(|(g, generic)| if generic { place(g) } else { g.clone() })
            .collect();
        let want: Vec<String> = want
            .iter()
            .map(|w| if generic(w) { place(w) } else { w.clone() })
            .collect();
        assert_eq!(
            got, want,
            "functions, source files or lines at {addr:#x} differ from addr2line -i"
        );
        compared += 1;
    }
    assert!(compared >= 3, "too few addresses with lines: {locs:?}");
    Some(locs)
}

#[test]
fn sampled_lines_match_addr2line_and_go_pprof_lists_them() {
    if !privileged("sampled_lines_match_addr2line_and_go_pprof_lists_them") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path());
    let data = record_it(dir.path(), &prog);
    let Some(locs) = locations_match_addr2line(dir.path(), &prog, &data) else {
        return;
    };
    let Some(raw) = go_pprof(dir.path(), &data, &["-raw"]) else {
        return;
    };
    assert!(
        locs.iter().any(|(_, l)| l.len() == 2),
        "no sampled address with an inlined frame: {locs:?}"
    );

    // Functions carry their start line: outer_loop's is the line of its first instruction.
    let nm = common::command("nm").arg(&prog).output().unwrap();
    let start = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .find(|l| l.ends_with(" outer_loop"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .expect("outer_loop in nm");
    let out = common::command("addr2line")
        .args(["-e"])
        .arg(&prog)
        .arg(format!("{start:#x}"))
        .output()
        .unwrap();
    let first_line: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .rsplit(':')
        .next()
        .and_then(|l| l.split(' ').next()?.parse().ok())
        .expect("a line for outer_loop's entry");
    assert!(
        raw.lines()
            .any(|l| l.contains("outer_loop ") && l.ends_with(&format!(" s={first_line}"))),
        "no outer_loop with start line {first_line}:\n{raw}"
    );
    // The inlined mix starts on the line its definition is declared on (DW_AT_decl_line).
    let src =
        std::fs::read_to_string(repo().join("tests/c/inline_hot.c")).expect("read inline_hot.c");
    let decl_line = 1 + src
        .lines()
        .position(|l| l.contains(" mix(uint64_t x"))
        .expect("mix's definition in inline_hot.c");
    assert!(
        raw.lines()
            .any(|l| l.contains(" mix ") && l.ends_with(&format!(" s={decl_line}"))),
        "no inlined mix with start line {decl_line}:\n{raw}"
    );

    // go tool pprof -list: the samples sit on the line that calls mix.
    let Some(list) = go_pprof(dir.path(), &data, &["-list", "outer_loop"]) else {
        return;
    };
    let total: u64 = list
        .lines()
        .find_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    let call = list
        .lines()
        .find(|l| l.contains("CALL-LINE"))
        .unwrap_or_else(|| panic!("no source listing:\n{list}"));
    let cum: u64 = call.split_whitespace().nth(1).unwrap().parse().unwrap_or(0);
    assert!(
        total > 0 && cum * 100 >= total * 95,
        "the call line holds {cum} of {total} samples:\n{list}"
    );
    // -lines names mix's own lines, inlined.
    let top = go_pprof(dir.path(), &data, &["-top", "-lines"]).unwrap();
    assert!(
        top.lines()
            .any(|l| l.contains("mix") && l.contains("inline_hot.c:") && l.contains("(inline)")),
        "{top}"
    );
}

/// Builds tests/c/rust_inline_files.rs (and its macro's file) with rustc -O and debug info.
fn build_rust_inline_files(dir: &Path) -> PathBuf {
    let out = dir.join("rust_inline_files");
    let st = common::command("rustc")
        .args(["-O", "-g", "-C", "force-frame-pointers=yes", "-o"])
        .arg(&out)
        .arg(repo().join("tests/c/rust_inline_files.rs"))
        .status()
        .expect("rustc must be installed to build tests/c/rust_inline_files.rs");
    assert!(st.success(), "rustc failed on rust_inline_files.rs");
    out
}

#[test]
fn inlined_code_from_two_source_files_names_each_file_in_pprof() {
    if !privileged("inlined_code_from_two_source_files_names_each_file_in_pprof") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build_rust_inline_files(dir.path());
    let data = record_it(dir.path(), &prog);
    // Every sampled location: functions, full source paths and lines as addr2line -i says.
    let Some(locs) = locations_match_addr2line(dir.path(), &prog, &data) else {
        return;
    };
    // The premise, so that one pprof function per name could not pass: the inlined `mix`
    // has sampled lines in both files, its own and its macro's.
    let main_file = repo().join("tests/c/rust_inline_files.rs");
    let macro_file = repo().join("tests/c/rust_inline_files/scramble.rs");
    let mix_in = |file: &Path| {
        let prefix = format!("rust_inline_files::mix {}:", file.display());
        locs.iter()
            .filter(|(_, lines)| lines.iter().any(|l| l.starts_with(&prefix)))
            .count()
    };
    assert!(
        mix_in(&main_file) > 0 && mix_in(&macro_file) > 0,
        "mix is not sampled in both of its files: {locs:?}"
    );
    // `--by line` (rows by the innermost frame's line) puts the hottest lines in the macro's
    // file too.
    let out = run(hood()
        .args(["report", "--by", "line", "--width", "0", "-i"])
        .arg(&data));
    assert!(out.status.success(), "{}", text(&out));
    let by_line = String::from_utf8_lossy(&out.stdout);
    assert!(
        by_line.contains("rust_inline_files/scramble.rs:"),
        "no line of scramble.rs in:\n{by_line}"
    );
}

/// The Firefox output, decompressed.
fn firefox_json(dir: &Path, data: &Path) -> (PathBuf, serde_json::Value) {
    let out_path = dir.join("inline.json.gz");
    let out = run(hood()
        .args(["report", "--format", "firefox", "-i"])
        .arg(data)
        .arg("-o")
        .arg(&out_path));
    assert!(out.status.success(), "{}", text(&out));
    let gz = std::fs::File::open(&out_path).unwrap();
    let v = serde_json::from_reader(flate2::read::GzDecoder::new(gz)).expect("gzip JSON");
    (out_path, v)
}

#[test]
fn firefox_frames_carry_inline_depth_lines_and_their_lib() {
    if !privileged("firefox_frames_carry_inline_depth_lines_and_their_lib") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path());
    let data = record_it(dir.path(), &prog);
    let (gz, v) = firefox_json(dir.path(), &data);
    // The program is a lib with its path and build-id.
    let build_id = readelf_build_id(&prog);
    let libs = v["libs"].as_array().expect("libs");
    let lib = libs
        .iter()
        .position(|l| l["path"] == prog.to_str().unwrap())
        .unwrap_or_else(|| panic!("no lib for the program: {libs:?}"));
    assert_eq!(libs[lib]["codeId"], build_id.as_str());
    assert_eq!(libs[lib]["breakpadId"].as_str().map(str::len), Some(33));
    let t = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "inline_hot")
        .expect("the program's thread");
    let s = |i: &serde_json::Value| t["stringArray"][i.as_u64().unwrap() as usize].clone();
    let (frames, funcs, stacks) = (&t["frameTable"], &t["funcTable"], &t["stackTable"]);
    let frame = |i: usize| {
        let f = frames["func"][i].as_u64().unwrap() as usize;
        (
            s(&funcs["name"][f]),
            frames["inlineDepth"][i].as_u64().unwrap(),
            frames["line"][i].as_u64(),
            frames["address"][i].as_i64().unwrap(),
            funcs["fileName"][f].as_u64().map(|n| s(&n.into())),
            funcs["resource"][f].as_i64().unwrap(),
        )
    };
    // Every stack ending in mix: depth 1, a line of mix, under outer_loop at depth 0 with
    // the call's line and the same address, both in the program's lib.
    let mut seen = 0;
    for st in 0..stacks["length"].as_u64().unwrap() as usize {
        let leaf = frame(stacks["frame"][st].as_u64().unwrap() as usize);
        if leaf.0 != "mix" {
            continue;
        }
        let parent = stacks["prefix"][st].as_u64().expect("a caller") as usize;
        let caller = frame(stacks["frame"][parent].as_u64().unwrap() as usize);
        assert_eq!(
            (leaf.1, caller.0.as_str(), caller.1),
            (1, Some("outer_loop"), 0)
        );
        // mix spans lines 10 (its loop) to 14; a sample may land on the loop's compare.
        assert!(matches!(leaf.2, Some(10..=14)), "mix's line {:?}", leaf.2);
        assert_eq!(caller.2, Some(22), "outer_loop's call line");
        assert!(
            leaf.3 >= 0 && leaf.3 == caller.3,
            "addresses {} {}",
            leaf.3,
            caller.3
        );
        assert!(leaf
            .4
            .as_ref()
            .and_then(|f| f.as_str())
            .is_some_and(|f| f.ends_with("inline_hot.c")));
        let res = leaf.5 as usize;
        assert_eq!(t["resourceTable"]["lib"][res].as_u64(), Some(lib as u64));
        seen += 1;
    }
    assert!(seen > 0, "no stack ends in mix");
    profiler_cli_reads_the_lines(dir.path(), &gz);
}

/// The Firefox Profiler's own loader (`@firefox-devtools/profiler-cli`, from npm) opens the
/// file, and its source annotation of `mix` puts the samples on mix's loop, lines 10 to 13
/// (gcc's line table gives the loop's own `for` line the counter and branch, about a sixth).
fn profiler_cli_reads_the_lines(dir: &Path, gz: &Path) {
    let prefix = dir.join("npm");
    let installed = common::command("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .arg("@firefox-devtools/profiler-cli@0.10.0")
        .env("HOME", dir)
        .output();
    let cli = prefix.join("node_modules/.bin/profiler-cli");
    if !matches!(&installed, Ok(o) if o.status.success()) || !cli.exists() {
        eprintln!(
            "not run here: npm cannot install @firefox-devtools/profiler-cli ({installed:?})"
        );
        return;
    }
    let pq = |args: &[&str]| {
        let out = common::command(&cli)
            .args(args)
            .env("HOME", dir)
            .output()
            .expect("profiler-cli");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let loaded = pq(&["load", gz.to_str().unwrap()]);
    let funcs = pq(&["thread", "functions", "--limit", "3"]);
    let handle = funcs
        .lines()
        .find(|l| l.contains("!mix"))
        .and_then(|l| l.trim().split('.').next())
        .map(str::to_string);
    let annotated = handle
        .as_deref()
        .map(|h| pq(&["function", "annotate", h]))
        .unwrap_or_default();
    let _ = pq(&["stop", "--all"]);
    let handle = handle.unwrap_or_else(|| panic!("profiler-cli lists no mix:\n{loaded}\n{funcs}"));
    // " Line Self Total" rows: mix's samples sit on its loop, lines 10..13.
    let on_lines: u64 = annotated
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            let line: u32 = c.first()?.parse().ok()?;
            let own: u64 = c.get(1)?.parse().ok()?;
            (10..=13).contains(&line).then_some(own)
        })
        .sum();
    let total: u64 = funcs
        .lines()
        .find(|l| l.contains("!mix"))
        .and_then(|l| l.split("self: ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(
        total > 0 && on_lines * 100 >= total * 95,
        "{handle}: {on_lines} of {total} self samples on lines 10-13:\n{annotated}"
    );
}

/// A Rust release build with debug info (bench/unwind/btree.rs, BTreeMap insert/get/range):
/// the hot code is the standard library's B-tree search inlined into the program's own
/// functions. The hottest frame is `find_key_index (inlined)` inside `search_tree (inlined)`
/// inside the program's function, as `perf report --inline` names it; `--no-inline` charges
/// the program's functions instead.
#[test]
fn rust_btree_search_is_named_by_its_inlined_frames() {
    if !privileged("rust_btree_search_is_named_by_its_inlined_frames") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let main_rs = std::fs::read_to_string(repo().join("bench/unwind/btree.rs")).unwrap();
    let bin = cargo_release_build(
        dir.path(),
        "btree",
        &main_rs,
        "[profile.release]\ndebug = true\n",
    );
    let data = dir.path().join("rust.data");
    let out = record(&data, &["-F", "999", "--", bin.to_str().unwrap(), "40"]);
    assert!(out.status.success(), "{}", text(&out));

    let stacks = collapsed(&data, &[]);
    let leaves = leaf_counts(&stacks, "btree");
    let total: u64 = leaves.values().sum();
    let (hot, n) = leaves
        .iter()
        .max_by_key(|(_, &n)| n)
        .map(|(k, &n)| (k.clone(), n))
        .expect("samples");
    assert!(
        hot.ends_with("::find_key_index (inlined)") && n * 4 >= total,
        "hottest leaf {hot}: {n} of {total}"
    );
    // Each of its samples: called (inlined) by another B-tree search function; most of them
    // (entry, get) inside search_tree (inlined) inside the program's own btree::fill or
    // btree::probe, every frame between inlined.
    let (mut all, mut via_search_tree) = (0, 0);
    for (frames, n) in stacks.iter().filter(|(f, _)| f.last() == Some(&hot)) {
        let k = frames.len();
        assert!(
            frames[k - 2].contains("alloc::collections::btree::search::")
                && frames[k - 2].ends_with(" (inlined)"),
            "{frames:?}"
        );
        all += n;
        let own = frames
            .iter()
            .rposition(|f| !f.ends_with(" (inlined)"))
            .unwrap();
        if matches!(frames[own].as_str(), "btree::fill" | "btree::probe")
            && frames[own + 1..]
                .iter()
                .any(|f| f.ends_with("::search_tree (inlined)"))
        {
            via_search_tree += n;
        }
    }
    assert!(
        via_search_tree * 2 >= all,
        "{via_search_tree} of {all} find_key_index samples under search_tree in the program"
    );
    let plain = leaf_counts(&collapsed(&data, &["--no-inline"]), "btree");
    assert!(
        plain
            .keys()
            .all(|k| !k.contains("find_key_index") && !k.contains("(inlined)")),
        "{plain:?}"
    );
}
