#!/bin/sh
# `hood trace` versus `uftrace` on a real interpreter: Lua 5.4 built from the sources bundled in
# the lua-src crate with -O2 -g -finstrument-functions (one binary for both tools), running
# bench/trace/bench.lua (recursion, tables, strings, sorting, errors raised and caught).
#
# Recording: whole-tree CPU (program + recorder, from wait4 of each tool) of `hood trace record`
# (default: streaming) and `uftrace record`, the traced program's own CPU (bench/trace/cpu_of.c)
# and, from those, hood's recorder CPU per event against the program's added CPU per event.
# Reporting: time and peak RSS of `hood trace report` (function summary) and `uftrace report`
# on the recordings just made; each command runs under tests/c/peak_rss.c, which reports the
# command's own peak (spawned straight from Python, a command's ru_maxrss would start at
# Python's peak: Linux keeps the launcher's high-water mark across fork and exec). Every
# configuration runs once per round, rounds interleave them, medians are printed with the load
# average before and after, and ratios at the end.
# The comparison runs the script without its errors: uftrace 0.13 stops recording (call depth
# past its limit, then "invalid dynsym idx") when Lua's error handling longjmps out of traced
# frames; that run is tried once and its outcome printed, and hood records it too.
# Usage: bench/trace/lua.sh [SCALE [ROUNDS]]   (default 20 rounds of the script, 3 rounds)
# Needs uftrace (apt-get install uftrace) and network access once to fetch lua-src.
set -eu
SCALE=${1:-20}
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
command -v uftrace >/dev/null || { echo "not run here: uftrace is not installed (apt-get install uftrace)"; exit 0; }
(cd "$ROOT" && cargo build --release -q -p hood-rt -p hood)
export HOOD_RT_LIB=$TARGET/release/libhood_rt.so
HOOD=$TARGET/release/hood
# The Lua sources: fetch a throwaway crate that depends on lua-src and ask cargo where it is.
mkdir -p "$WORK/fetch/src"
printf '[package]\nname = "luafetch"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nlua-src = "=547.1.0"\n' \
    >"$WORK/fetch/Cargo.toml"
echo 'fn main() {}' >"$WORK/fetch/src/main.rs"
(cd "$WORK/fetch" && cargo fetch -q)
LUA_SRC=$(cd "$WORK/fetch" && cargo metadata --format-version 1 | python3 -c '
import json, os, sys
m = json.load(sys.stdin)
p = next(p for p in m["packages"] if p["name"] == "lua-src")
print(os.path.join(os.path.dirname(p["manifest_path"]), "lua-5.4.7"))')
echo "building Lua 5.4.7 from $LUA_SRC"
gcc -O2 -g -finstrument-functions -DLUA_USE_LINUX -I"$LUA_SRC" "$LUA_SRC"/*.c "$HERE/lua_main.c" \
    -o "$WORK/lua" -lm -ldl
gcc -O2 -g -DLUA_USE_LINUX -I"$LUA_SRC" "$LUA_SRC"/*.c "$HERE/lua_main.c" -o "$WORK/lua_plain" -lm -ldl
gcc -O2 "$HERE/cpu_of.c" -o "$WORK/cpu_of"
gcc -O2 "$ROOT/tests/c/peak_rss.c" -o "$WORK/peak_rss"

python3 - "$SCALE" "$ROUNDS" "$WORK" "$HOOD" "$HERE/bench.lua" <<'PY'
import os, re, subprocess, sys, statistics, shutil, time
scale, rounds, work, hood, script = sys.argv[1:]
rounds = int(rounds)
lua, plain, cpu_of, peak_rss = (
    os.path.join(work, x) for x in ("lua", "lua_plain", "cpu_of", "peak_rss"))
prog_file = os.path.join(work, "prog.cpu")
rss_file = os.path.join(work, "peak.rss")

def run(cmd, env=None, prog=True):
    """(CPU of cmd and its children, program CPU from cpu_of, peak RSS KiB, wall s, stderr).
    The CPU is wait4's of peak_rss, which waited for cmd (its own CPU is one fork and a wait);
    the peak RSS is cmd's own, as peak_rss measured it."""
    e = dict(os.environ, **(env or {}))
    t0 = time.monotonic()
    p = subprocess.Popen([peak_rss, rss_file] + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=e)
    err = p.stderr.read().decode(errors="replace")
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed (wait status {status}):\n{err}")
    with open(rss_file) as f:
        maxrss = int(f.read().split()[0])
    pc = 0.0
    if prog:
        with open(prog_file) as f:
            pc = sum(map(float, f.read().split()))
    return ru.ru_utime + ru.ru_stime, pc, maxrss, wall, err

hdata = os.path.join(work, "t.data")
udata = os.path.join(work, "uftrace.data")
prog = [cpu_of, prog_file, lua, script, scale, "noerr"]
rec = {
    "plain Lua (no -finstrument-functions)": [cpu_of, prog_file, plain, script, scale, "noerr"],
    # A ring that holds the whole run: on a shared, loaded VM the recorder can be starved of
    # CPU for longer than the default ring lasts (1 M events: ~10 ms of this program); the
    # recorder still does all its work, so the CPU compared is the same. The default ring is
    # tried once at the end and its losses printed.
    "hood trace record": [hood, "trace", "record", "--buffer", "16777216", "-o", hdata, "--"]
    + prog,
    "uftrace record": ["uftrace", "record", "--force", "-d", udata] + prog,
}
rep = {
    "hood trace report": [hood, "trace", "report", hdata],
    "uftrace report": ["uftrace", "report", "-d", udata],
}
R = {k: [] for k in list(rec) + list(rep)}
events = None
load0 = os.getloadavg()
for r in range(rounds):
    for name, cmd in rec.items():
        tot, pc, rss, wall, err = run(cmd)
        R[name].append((tot, pc))
        if name.startswith("hood"):
            m = re.search(r"(\d+) events(?: written|;)", err)
            if not m or "events lost: 0" not in err:
                sys.exit(f"hood trace record lost events or failed:\n{err}")
            events = int(m.group(1))
    for name, cmd in rep.items():
        tot, _, rss, wall, _ = run(cmd, prog=False)
        R[name].append((tot, wall, rss))
load1 = os.getloadavg()
med = lambda k, i: statistics.median(x[i] for x in R[k])
base = med("plain Lua (no -finstrument-functions)", 1)
print(f"Lua 5.4.7 (lua-src), bench.lua x{scale}: {events} events, none lost; median of {rounds}"
      f" interleaved rounds; load average {load0[0]:.2f} before, {load1[0]:.2f} after")
print(f"  {'':<40}{'whole tree CPU':>16}{'program CPU':>14}{'added ns/event':>16}")
print(f"  {'plain Lua (no -finstrument-functions)':<40}{'':>16}{base*1e3:11.1f} ms")
for name in ("hood trace record", "uftrace record"):
    tot, pc = med(name, 0), med(name, 1)
    print(f"  {name:<40}{tot*1e3:13.1f} ms{pc*1e3:11.1f} ms{(pc-base)*1e9/events:16.1f}")
h_tot, h_pc = med("hood trace record", 0), med("hood trace record", 1)
u_tot = med("uftrace record", 0)
rec_cpu = h_tot - h_pc
print(f"  hood recorder CPU: {rec_cpu*1e3:.1f} ms = {rec_cpu*1e9/events:.1f} ns/event; the program's"
      f" added CPU: {(h_pc-base)*1e9/events:.1f} ns/event")
print(f"  {'':<40}{'CPU':>12}{'wall':>12}{'peak RSS':>12}")
for name in rep:
    print(f"  {name:<40}{med(name,0)*1e3:9.0f} ms{med(name,1)*1e3:9.0f} ms{med(name,2)/1024:9.1f} MB")
print(f"  ratios: record whole-tree CPU hood/uftrace {h_tot/u_tot:.2f}x;"
      f" recorder/added CPU per event {rec_cpu/max(h_pc-base,1e-9):.2f}x;"
      f" report time hood/uftrace {med('hood trace report',1)/med('uftrace report',1):.2f}x,"
      f" peak RSS hood/uftrace {med('hood trace report',2)/med('uftrace report',2):.2f}x")
# The default ring, once.
p = subprocess.run([hood, "trace", "record", "-o", hdata, "--"] + prog,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.decode(errors="replace")
m = re.search(r"(\d+) events LOST", err)
print(f"  default ring (1,048,576 events per thread): {m.group(1) if m else 0} events lost,"
      f" load average {os.getloadavg()[0]:.2f}")
# The script with its errors (longjmp out of traced frames), once each.
werr = [cpu_of, prog_file, lua, script, scale]
p = subprocess.run(["uftrace", "record", "--force", "-d", udata] + werr,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
last = [l for l in p.stderr.decode(errors="replace").splitlines() if l.strip()][-1:] or [""]
print(f"  with errors caught by pcall: uftrace record exit {p.returncode} ({last[0].strip()})")
p = subprocess.run([hood, "trace", "record", "-o", hdata, "--"] + werr,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.decode(errors="replace")
m = re.search(r"(\d+) events(?: written|;)", err)
print(f"  with errors caught by pcall: hood trace record exit {p.returncode},"
      f" {m.group(1) if m else '?'} events, {'none lost' if 'events lost: 0' in err else 'LOST some'}")
PY
