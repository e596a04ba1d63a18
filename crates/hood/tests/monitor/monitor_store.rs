//! `hood top --record DIR` and what reads the store back (`hood top --replay`, `hood ps --at`,
//! `hood info --at`): known processes recorded while they start and stop, the recorder killed
//! with SIGKILL, damaged and cut segments, `--keep`/`--max-size` and wrong input.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{hood, run, text};
use serde_json::Value;

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

/// Every recorded interval of `dir` as JSON views, and what hood said on stderr.
fn replay_json(dir: &Path, extra: &[&str]) -> (Vec<Value>, String, Option<i32>) {
    let out = run(hood()
        .args(["top", "-b", "--json", "--replay"])
        .arg(dir)
        .args(extra));
    let views = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON view per line"))
        .collect();
    (
        views,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

fn task(v: &Value, pid: u32) -> Option<&Value> {
    v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["pid"] == pid)
}

fn time_of(v: &Value) -> i64 {
    v["uptime"]["wall_time_s"].as_i64().unwrap()
}

/// A process's CPU time so far, in ms, from /proc/PID/stat.
fn cpu_ms(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks * 1000 / 100
}

fn spawn(cmd: &str) -> Child {
    common::command("sh")
        .args(["-c", cmd])
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

fn kill(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

/// Record 1 s intervals while a sleeper lives for ~3 s and a busy loop runs, kill the recorder
/// with SIGKILL, and check each process where and when it was, and the busy one's CPU.
#[test]
fn a_killed_recorder_leaves_a_store_that_replays_every_process_at_its_time() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("store");
    let mut rec = hood()
        .args(["top", "-d", "1", "--record"])
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let busy = spawn("exec sh -c 'while :; do :; done'");
    let busy_pid = busy.id();
    let sleeper = spawn("exec sleep 1000");
    let sleeper_pid = sleeper.id();
    let started = now_s();
    std::thread::sleep(Duration::from_millis(3300));
    kill(sleeper);
    let stopped = now_s();
    std::thread::sleep(Duration::from_millis(2600));
    let busy_ms_at_kill = cpu_ms(busy_pid);
    // SIGKILL: no chance to finish anything.
    rec.kill().unwrap();
    let _ = rec.wait();
    kill(busy);

    let (views, err, code) = replay_json(&dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        views.len() >= 6,
        "{} intervals recorded; {err}",
        views.len()
    );
    let mut seen_sleeper = 0;
    let mut named_sleep = 0;
    let mut busy_ms_before = 0;
    let mut busy_cpu = Vec::new();
    for (i, v) in views.iter().enumerate() {
        let t = time_of(v) as f64;
        // The first interval has no rates, every later one has.
        assert_eq!(v["interval_s"].is_null(), i == 0, "interval {i}");
        match task(v, sleeper_pid) {
            Some(s) => {
                assert!(t >= started - 1.0 && t <= stopped + 1.0, "sleeper at {t}");
                named_sleep += (s["name"] == "sleep") as u32;
                if let Some(c) = s["cpu_percent"].as_f64() {
                    assert!(c < 5.0, "a sleeping process used {c} % at {t}");
                }
                seen_sleeper += 1;
            }
            None => assert!(
                t < started || t > stopped - 1.0,
                "sleeper missing at {t} (lived {started}..{stopped})"
            ),
        }
        match task(v, busy_pid) {
            Some(b) => {
                if let Some(c) = b["cpu_percent"].as_f64() {
                    busy_cpu.push(c);
                }
                let ms =
                    b["user_time_ms"].as_u64().unwrap() + b["kernel_time_ms"].as_u64().unwrap();
                assert!(
                    ms <= busy_ms_at_kill,
                    "{ms} ms recorded, {busy_ms_at_kill} at the end"
                );
                assert!(
                    ms >= busy_ms_before,
                    "CPU time went back: {busy_ms_before} then {ms}"
                );
                busy_ms_before = ms;
            }
            None => assert!(t < started + 1.0, "busy loop missing at {t}"),
        }
    }
    assert!(
        seen_sleeper >= 2,
        "the sleeper was in {seen_sleeper} intervals"
    );
    assert!(named_sleep >= 1, "the sleeper was never named sleep");
    // Two cores shared with builds: a busy loop gets some share, never more than one CPU.
    assert!(busy_cpu.len() >= 4, "{busy_cpu:?}");
    assert!(busy_cpu.iter().all(|c| *c <= 105.0), "{busy_cpu:?}");
    let mean = busy_cpu.iter().sum::<f64>() / busy_cpu.len() as f64;
    assert!(
        mean > 2.0,
        "the busy loop used {mean} % on average: {busy_cpu:?}"
    );
    // The recorded CPU time of the last interval is within a couple of seconds of the truth.
    let last_busy = views.iter().rev().find_map(|v| task(v, busy_pid)).unwrap();
    let last_ms =
        last_busy["user_time_ms"].as_u64().unwrap() + last_busy["kernel_time_ms"].as_u64().unwrap();
    assert!(
        busy_ms_at_kill - last_ms <= 2500,
        "{last_ms} vs {busy_ms_at_kill}"
    );

    // ps --at and info --at answer from the same store.
    let at = format!("@{}", (started + stopped) as i64 / 2);
    let out = run(hood()
        .args(["ps", "--json", "--store"])
        .arg(&dir)
        .args(["--at", &at]));
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        task(&v, sleeper_pid).is_some(),
        "sleeper not in ps --at {at}"
    );
    assert!(!v["interval_s"].is_null());
    let out = run(hood().args(["info", "--store"]).arg(&dir).args([
        "--at",
        &at,
        &format!("system.tasks.{sleeper_pid}.name"),
    ]));
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("sleep"),
        "{}",
        text(&out)
    );
    let out = run(hood()
        .args(["ps", "--store"])
        .arg(&dir)
        .args(["--at", "@1000000000"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("before the store's first interval"),
        "{}",
        text(&out)
    );
}

/// Record `n` intervals quickly into a fresh store and return it.
fn quick_store(n: u32) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("store");
    let out = run(hood()
        .args(["top", "-d", "0.3", "-n", &n.to_string(), "--record"])
        .arg(&dir));
    assert!(out.status.success(), "{}", text(&out));
    (d, dir)
}

/// The tag of a monitor store's per-process index chunk (hood_format::tags::monitor).
const SERIES: u32 = 0x0403;

/// (offset, stored length, tag) of each chunk of a segment (docs/format.md).
fn tagged_chunks(seg: &Path) -> Vec<(u64, u64, u32)> {
    let b = std::fs::read(seg).unwrap();
    let mut off = 32usize;
    let mut out = Vec::new();
    while off + 40 <= b.len() {
        let tag = u32::from_le_bytes(b[off + 4..off + 8].try_into().unwrap());
        let len = u64::from_le_bytes(b[off + 16..off + 24].try_into().unwrap());
        out.push((off as u64, len, tag));
        off += 40 + len as usize;
    }
    out
}

/// (offset, stored length) of each interval's chunk of a segment.
fn chunks(seg: &Path) -> Vec<(u64, u64)> {
    tagged_chunks(seg)
        .into_iter()
        .filter(|c| c.2 != SERIES)
        .map(|c| (c.0, c.1))
        .collect()
}

#[test]
fn a_cut_last_chunk_and_a_damaged_one_read_up_to_the_damage_and_say_where() {
    let (_d, dir) = quick_store(6);
    let seg = segments(&dir).pop().unwrap();
    let name = seg.file_name().unwrap().to_string_lossy().into_owned();
    let (all, err, _) = replay_json(&dir, &[]);
    assert_eq!(all.len(), 6, "{err}");
    assert!(err.is_empty(), "{err}");
    let c = chunks(&seg);
    assert_eq!(c.len(), 6);

    // A recorder that stopped cleanly indexed its intervals last; one killed leaves them
    // unindexed, and they read the same.
    let t = tagged_chunks(&seg);
    assert_eq!(t.len(), 7);
    assert_eq!(t[6].2, SERIES);
    let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(t[6].0).unwrap();
    let (views, err, _) = replay_json(&dir, &[]);
    assert_eq!(views, all, "{err}");
    assert!(err.is_empty(), "{err}");

    // Cut inside the last chunk, as a power cut during its write would.
    let len = f.metadata().unwrap().len();
    f.set_len(len - 7).unwrap();
    let (views, err, code) = replay_json(&dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(views.len(), 5, "{err}");
    assert!(
        err.contains(&name) && err.contains(&format!("cut at offset {}", c[5].0)),
        "{err}"
    );
    for (a, b) in views.iter().zip(&all) {
        assert_eq!(a, b, "the intervals before the cut read as before");
    }

    // A flipped byte in the third interval's payload: that interval is skipped, said with its
    // offset; the others read (the one after it without rates, its previous snapshot lost).
    let mut b = std::fs::read(&seg).unwrap();
    let at = (c[2].0 + 40 + c[2].1 / 2) as usize;
    b[at] ^= 0x55;
    std::fs::write(&seg, &b).unwrap();
    let (views, err, code) = replay_json(&dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(views.len(), 4, "{err}");
    assert!(
        err.contains(&name)
            && err.contains(&format!("offset {} is damaged (checksum mismatch)", c[2].0)),
        "{err}"
    );
    assert_eq!(time_of(&views[2]), time_of(&all[3]));
    assert!(views[2]["interval_s"].is_null());
    assert_eq!(views[3], all[4]);

    // A damaged chunk header: the intervals before it read, the rest of the segment is skipped.
    b[c[3].0 as usize + 20] ^= 0x01;
    std::fs::write(&seg, &b).unwrap();
    let (views, err, code) = replay_json(&dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(views.len(), 2, "{err}");
    assert!(
        err.contains(&format!("{name}: damaged at offset {}", c[3].0)),
        "{err}"
    );
}

/// The CSV rows of `hood top -b --replay DIR --csv EXTRA` (header checked, then dropped).
fn replay_csv(dir: &Path, extra: &[&str]) -> Vec<String> {
    let out = run(hood()
        .args(["top", "-b", "--csv", "--replay"])
        .arg(dir)
        .args(extra));
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = stdout.lines().map(str::to_owned);
    assert!(lines.next().unwrap().starts_with("time,pid,"));
    lines.collect()
}

/// `-p PID` reads the per-process index: its CSV rows are the whole dump's rows of PID, and
/// every dump is what the store without the index gives.
#[test]
fn one_process_reads_the_same_through_the_per_process_index() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("store");
    let busy = spawn("exec sh -c 'while :; do :; done'");
    let pid = busy.id().to_string();
    let out = run(hood()
        .args(["top", "-d", "0.3", "-n", "8", "--record"])
        .arg(&dir));
    kill(busy);
    assert!(out.status.success(), "{}", text(&out));
    let all = replay_csv(&dir, &[]);
    let of = |pids: &[&str]| -> Vec<String> {
        all.iter()
            .filter(|r| pids.contains(&r.split(',').nth(1).unwrap()))
            .cloned()
            .collect()
    };
    let one = replay_csv(&dir, &["-p", &pid]);
    assert_eq!(one.len(), 8, "{one:?}");
    assert_eq!(one, of(&[&pid]));
    // The busy loop used CPU in the intervals after the first (which has no rates).
    assert!(
        one[1..]
            .iter()
            .any(|r| r.split(',').nth(7).unwrap().parse::<f64>().unwrap() > 0.0),
        "{one:?}"
    );
    let two = replay_csv(&dir, &["-p", &format!("1,{pid}")]);
    assert_eq!(two.len(), 16, "{two:?}");
    assert_eq!(two, of(&["1", &pid]));

    // Every dump of -p reads the index, and shows what the same store without its index
    // (as hoods before it wrote) shows: the processes and the whole machine's figures.
    let plain = d.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::set_permissions(&plain, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let mut indexed = 0;
    for seg in segments(&dir) {
        let b = std::fs::read(&seg).unwrap();
        let mut out = b[..32].to_vec();
        for (off, len, tag) in tagged_chunks(&seg) {
            if tag == SERIES {
                indexed += 1;
            } else {
                out.extend_from_slice(&b[off as usize..(off + 40 + len) as usize]);
            }
        }
        std::fs::write(plain.join(seg.file_name().unwrap()), out).unwrap();
    }
    assert!(indexed > 0, "no per-process index in {}", dir.display());
    let two_pids = format!("1,{pid}");
    for dump in ["--json", "--openmetrics", "--csv", "--rows=5"] {
        for pids in [pid.as_str(), two_pids.as_str()] {
            let dump_of = |store: &Path| {
                let out = run(hood()
                    .args(["top", "-b", dump, "-p", pids, "--replay"])
                    .arg(store)
                    .env("COLUMNS", "200"));
                assert!(out.status.success(), "{dump} {}", text(&out));
                assert!(out.stderr.is_empty(), "{dump} {}", text(&out));
                String::from_utf8(out.stdout).unwrap()
            };
            let (through_index, whole) = (dump_of(&dir), dump_of(&plain));
            assert!(through_index.contains(&pid), "{dump} {through_index}");
            assert_eq!(through_index, whole, "{dump} -p {pids}");
        }
    }
    // The JSON views count the whole machine's processes, not the one asked for.
    let (views, _, _) = replay_json(&dir, &["-p", &pid]);
    assert_eq!(views.len(), 8);
    assert!(
        views
            .iter()
            .all(|v| v["counts"]["tasks"].as_u64().unwrap() > 10),
        "{:?}",
        views[0]["counts"]
    );
}

fn dir_bytes(dir: &Path) -> u64 {
    segments(dir)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

#[test]
fn max_size_and_keep_remove_the_oldest_segments() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("store");
    // A segment ends at an eighth of the size; ~300 intervals of ~100 processes write ~300 KB.
    let out = run(hood()
        .args([
            "top",
            "-d",
            "0.01",
            "-n",
            "300",
            "--max-size",
            "100K",
            "--record",
        ])
        .arg(&dir));
    assert!(out.status.success(), "{}", text(&out));
    let segs = segments(&dir);
    let total = dir_bytes(&dir);
    assert!(segs.len() >= 3, "{segs:?}");
    assert!(
        total <= (100 << 10) + (100 << 10) / 8 + (32 << 10),
        "{total} bytes in {segs:?}"
    );
    let (views, err, code) = replay_json(&dir, &["--rows", "1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        !views.is_empty() && views.len() < 300,
        "{} intervals",
        views.len()
    );
    assert!(err.is_empty(), "{err}");

    // --keep: a segment last written 3 hours ago goes, one of 20 minutes ago stays.
    let old = dir.join("top-0001000000000000.seg");
    let recent = dir.join("top-0001000000001000.seg");
    std::fs::copy(&segs[0], &old).unwrap();
    std::fs::copy(&segs[0], &recent).unwrap();
    for (p, ago) in [(&old, "3 hours ago"), (&recent, "20 minutes ago")] {
        let st = common::command("touch")
            .args(["-d", ago])
            .arg(p)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let out = run(hood()
        .args(["top", "-d", "0.1", "-n", "2", "--keep", "1h", "--record"])
        .arg(&dir));
    assert!(out.status.success(), "{}", text(&out));
    assert!(!old.exists(), "a segment older than --keep is left");
    assert!(recent.exists(), "a segment younger than --keep was removed");
}

fn fails_with(cmd: &mut Command, words: &[&str]) {
    let out = run(cmd);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    for w in words {
        assert!(t.contains(w), "{w:?} not in: {t}");
    }
}

#[test]
fn wrong_input_gets_a_true_error() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    fails_with(
        hood().args(["top", "-b", "--replay"]).arg(&empty),
        &["empty", "hood top --record"],
    );
    let other = d.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "hello").unwrap();
    fails_with(
        hood().args(["top", "-b", "--replay"]).arg(&other),
        &["is not a monitor store"],
    );
    fails_with(
        hood()
            .args(["top", "-b", "--replay"])
            .arg(d.path().join("missing")),
        &["no such directory"],
    );
    // A file named like a segment that is not one is skipped with a warning naming it.
    let (_s, dir) = quick_store(2);
    std::fs::write(
        dir.join("top-0000000000001.seg"),
        b"not a segment at all, longer than 32",
    )
    .unwrap();
    let (views, err, code) = replay_json(&dir, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(views.len(), 2);
    assert!(
        err.contains("top-0000000000001.seg: not a monitor store segment"),
        "{err}"
    );
    // Times outside the store, or unreadable.
    fails_with(
        hood()
            .args(["top", "-b", "--at", "2d ago", "--replay"])
            .arg(&dir),
        &["before the store's first interval", "holds"],
    );
    fails_with(
        hood()
            .args(["top", "-b", "--at", "@4102444800", "--replay"])
            .arg(&dir),
        &["after the store's last interval"],
    );
    fails_with(
        hood()
            .args(["top", "-b", "--at", "yesterday", "--replay"])
            .arg(&dir),
        &["--at", "HH:MM", "ago"],
    );
    fails_with(
        hood()
            .args([
                "top", "-b", "--from", "1h ago", "--to", "2h ago", "--replay",
            ])
            .arg(&dir),
        &["--from is after --to"],
    );
    // --keep and --max-size only mean something to a recorder.
    let out = run(hood().args(["top", "-b", "-n", "1", "--keep", "1d"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--record"), "{}", text(&out));
    fails_with(
        hood()
            .args(["top", "--max-size", "10K", "--record"])
            .arg(&dir),
        &["at least 100K"],
    );

    // Record only into a real directory of your own, closed to others.
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&empty, &link).unwrap();
    fails_with(
        hood().args(["top", "-n", "1", "--record"]).arg(&link),
        &["symbolic link"],
    );
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).unwrap();
    fails_with(
        hood().args(["top", "-n", "1", "--record"]).arg(&empty),
        &["mode 0755", "chmod 700"],
    );
    let made = d.path().join("new/store");
    let out = run(hood()
        .args(["top", "-n", "1", "-d", "0.1", "--record"])
        .arg(&made));
    assert!(out.status.success(), "{}", text(&out));
    let st = std::fs::metadata(&made).unwrap();
    assert_eq!(st.mode() & 0o777, 0o700);
    for seg in segments(&made) {
        assert_eq!(std::fs::metadata(seg).unwrap().mode() & 0o777, 0o600);
    }
    if common::root("wrong_input_gets_a_true_error (another user's directory)") {
        let (uid, gid) = common::other_user();
        let theirs = d.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(uid), Some(gid)).unwrap();
        fails_with(
            hood().args(["top", "-n", "1", "--record"]).arg(&theirs),
            &[&format!("belongs to uid {uid}")],
        );
    }
    // Two recorders into one store.
    let mut first = hood()
        .args(["top", "-d", "0.2", "--record"])
        .arg(&made)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while segments(&made).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    fails_with(
        hood().args(["top", "-n", "1", "--record"]).arg(&made),
        &["another `hood top --record`"],
    );
    let _ = first.kill();
    let _ = first.wait();
}

/// The replay screen in tmux at 80x24: opens on the last interval, steps back with the left
/// arrow, goes to a typed time with `g`, says why a time outside the store cannot be shown.
#[test]
fn the_replay_screen_steps_and_jumps_through_recorded_time() {
    if common::tmux::missing("the_replay_screen_steps_and_jumps_through_recorded_time") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("store");
    let out = run(hood()
        .args(["top", "-d", "1", "-n", "4", "--record"])
        .arg(&dir));
    assert!(out.status.success(), "{}", text(&out));
    let (views, err, _) = replay_json(&dir, &[]);
    assert_eq!(views.len(), 4, "{err}");
    let shown = |v: &Value| {
        let t = time_of(v);
        let out = common::command("date")
            .args(["-u", "-d", &format!("@{t}"), "+%F %T"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let s = common::tmux::Screen::start(
        "hoodreplay",
        80,
        24,
        &format!(
            "{} top --replay {}; echo HOOD-EXITED; sleep 30",
            env!("CARGO_BIN_EXE_hood"),
            dir.display()
        ),
    );
    let sc = s.wait_for(&format!("replay {}", shown(&views[3])));
    assert!(sc.contains("Tasks:") && sc.contains("PID"), "{sc}");
    s.keys(&["Left"]);
    s.wait_for(&format!("replay {}", shown(&views[2])));
    s.keys(&["g"]);
    s.wait_for("go to");
    let first = format!("@{}", time_of(&views[0]));
    s.type_text(&first);
    s.keys(&["Enter"]);
    s.wait_for(&format!("replay {}", shown(&views[0])));
    s.keys(&["g"]);
    s.type_text("2d ago");
    s.keys(&["Enter"]);
    s.wait_for("before the store's first");
    s.keys(&["q"]);
    s.wait_for("HOOD-EXITED");
}
