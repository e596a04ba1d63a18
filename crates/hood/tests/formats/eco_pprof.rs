//! `hood report --format pprof` read back by a real pprof client (`go tool pprof`, Debian's
//! golang-go): the same top functions and percentages as `hood report --format json`.

use crate::common;

use std::collections::HashMap;
use std::path::Path;

use common::*;

/// Self percentages by function name from `go tool pprof -top`.
fn pprof_top(file: &Path) -> HashMap<String, f64> {
    let out = common::go_tool_pprof(file.parent().unwrap())
        .args(["-top", "-nodecount=50", "-sample_index=samples"])
        .arg(file)
        .output()
        .expect("`go` must be installed for this test (apt-get install golang-go)");
    assert!(
        out.status.success(),
        "go tool pprof failed:\n{}",
        text(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("flat%"), "no table:\n{stdout}");
    // Rows: flat flat% sum% cum cum% name
    stdout
        .lines()
        .skip_while(|l| !l.contains("flat%"))
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let pct = cols.get(1)?.strip_suffix('%')?.parse().ok()?;
            Some((cols.get(5..)?.join(" "), pct))
        })
        .collect()
}

/// Self percentages by function name from hood's JSON report (summed over processes).
fn hood_functions(file: &Path) -> (u64, HashMap<String, f64>) {
    let out = run(hood()
        .args(["report", "--format", "json", "--min-percent", "0", "-i"])
        .arg(file));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mut m = HashMap::new();
    for f in v["functions"].as_array().expect("functions") {
        *m.entry(f["name"].as_str().unwrap().to_string())
            .or_insert(0.0) += f["percent"].as_f64().unwrap();
    }
    (v["totals"]["samples"].as_u64().unwrap(), m)
}

#[test]
fn go_tool_pprof_shows_the_same_top_functions_as_hood_report() {
    if !privileged("go_tool_pprof_same_top") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("split.data");
    let pb = dir.path().join("split.pb.gz");
    let prog = c_program("split");
    let out = record(&data, &["-F", "999", "--", prog.to_str().unwrap(), "1500"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(hood()
        .args(["report", "--format", "pprof", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&pb));
    assert!(out.status.success(), "{}", text(&out));
    let gz = std::fs::read(&pb).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "pprof output is gzip");

    let (total, hood) = hood_functions(&data);
    let pprof = pprof_top(&pb);
    assert!(total > 200, "{total} samples");
    let mut top: Vec<(&String, &f64)> = hood.iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    // The work functions lead both reports, in the same order, with the same shares.
    let names: Vec<&str> = top.iter().take(3).map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["work60", "work30", "work10"], "hood: {top:?}");
    for (name, pct) in top.iter().filter(|(_, p)| **p >= 1.0) {
        let got = pprof
            .get(*name)
            .unwrap_or_else(|| panic!("{name} ({pct}%) missing from pprof: {pprof:?}"));
        assert!(
            (got - **pct).abs() <= 1.0,
            "{name}: pprof {got}% vs hood {pct}%"
        );
    }
}

/// Output of a binutils tool on `file`.
fn binutils(tool: &str, args: &[&str], file: &Path) -> String {
    let out = common::command(tool)
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("{tool} (binutils) must be installed for this test: {e}"));
    assert!(out.status.success(), "{tool} failed:\n{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// File-offset range of function `name` in `bin`, from `nm -S` and `readelf -lW`.
fn func_file_range(bin: &Path, name: &str) -> std::ops::Range<u64> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let (vaddr, size) = binutils("nm", &["-S"], bin)
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[3] == name).then(|| (hex(f[0]), hex(f[1])))
        })
        .unwrap_or_else(|| panic!("nm: no {name} in {}", bin.display()));
    for l in binutils("readelf", &["-lW"], bin).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first() == Some(&"LOAD") {
            let (off, va, filesz) = (hex(f[1]), hex(f[2]), hex(f[4]));
            if (va..va + filesz).contains(&vaddr) {
                let start = vaddr - va + off;
                return start..start + size;
            }
        }
    }
    panic!("{name} at {vaddr:#x} is in no PT_LOAD of {}", bin.display());
}

#[test]
fn pprof_locations_carry_real_addresses_inside_their_mappings() {
    if !privileged("pprof_locations_carry_real_addresses") {
        return;
    }
    let _serial = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("split.data");
    let pb = dir.path().join("split.pb.gz");
    let prog = c_program("split");
    let out = record(&data, &["-F", "999", "--", prog.to_str().unwrap(), "600"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = run(hood()
        .args(["report", "--format", "pprof", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&pb));
    assert!(out.status.success(), "{}", text(&out));
    let raw = common::go_tool_pprof(dir.path())
        .args(["-raw"])
        .arg(&pb)
        .output()
        .expect("`go` must be installed for this test (apt-get install golang-go)");
    assert!(raw.status.success(), "go tool pprof -raw:\n{}", text(&raw));
    let raw = String::from_utf8_lossy(&raw.stdout).into_owned();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    // "1: 0x5630b9207000/0x5630b9208000/0x1000 /path/split BUILDID [FN]"
    let mut maps = HashMap::new();
    for l in raw.lines().skip_while(|l| *l != "Mappings").skip(1) {
        let f: Vec<&str> = l.split_whitespace().collect();
        let Some(id) = f.first().and_then(|i| i.strip_suffix(':')) else {
            continue;
        };
        let r: Vec<u64> = f[1].split('/').map(hex).collect();
        maps.insert(
            id.to_string(),
            (r[0], r[1], r[2], f[2].to_string(), f.get(3).copied()),
        );
    }
    let build_id = binutils("readelf", &["-n"], &prog)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .expect("gcc gives the program a build-id");
    let ranges: HashMap<&str, std::ops::Range<u64>> = ["work60", "work30", "work10", "main"]
        .into_iter()
        .map(|n| (n, func_file_range(&prog, n)))
        .collect();
    // "6: 0x5630b9207525 M=2 work60 :0 s=0"
    let mut checked = 0;
    for l in raw
        .lines()
        .skip_while(|l| *l != "Locations")
        .skip(1)
        .take_while(|l| *l != "Mappings")
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        let Some(range) = f.get(3).and_then(|n| ranges.get(n)) else {
            continue;
        };
        let addr = hex(f[1]);
        let m = f[2].strip_prefix("M=").expect("location has a mapping");
        let (start, limit, offset, file, id) = &maps[m];
        assert_eq!(Path::new(file), prog, "{l}: mapping {file}");
        assert_eq!(*id, Some(build_id.as_str()), "{l}: build-id");
        assert!(
            (*start..*limit).contains(&addr),
            "{l}: address outside its mapping {start:#x}..{limit:#x}"
        );
        let file_offset = addr - start + offset;
        assert!(
            range.contains(&file_offset),
            "{l}: file offset {file_offset:#x} is not inside {} ({range:x?})",
            f[3]
        );
        checked += 1;
    }
    assert!(checked >= 4, "too few work locations in:\n{raw}");
    // `-addresses` keeps one row per address: the work functions' rows carry them.
    let top = common::go_tool_pprof(dir.path())
        .args(["-top", "-addresses", "-sample_index=samples"])
        .arg(&pb)
        .output()
        .unwrap();
    assert!(top.status.success(), "{}", text(&top));
    let top = String::from_utf8_lossy(&top.stdout);
    // The first mapping is the program's: pprof calls it the profile's file.
    assert!(
        top.lines().next() == Some("File: split"),
        "the program's mapping is not the first:\n{top}"
    );
    let rows = top
        .lines()
        .filter(|l| {
            l.contains(" work60")
                && l.split_whitespace()
                    .any(|w| w.len() >= 8 && u64::from_str_radix(w, 16).is_ok())
        })
        .count();
    assert!(
        rows >= 1,
        "no work60 row with an address in -addresses -top:\n{top}"
    );
}
