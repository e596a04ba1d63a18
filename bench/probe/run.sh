#!/usr/bin/env bash
# Probed functions (issue 26) side by side with their peers: prints figures and ratios, never
# pass/fail. Needs root, gcc; bpftrace and perf (linux-perf) where installed (said when not).
# Usage: bench/probe/run.sh [CALLS] [ROUNDS]   (defaults 200000 and 3)
#   1. cost per probed call (an entry and a return probe) on the same program, measured by the
#      program's own clocks around its loop (wall: CLOCK_MONOTONIC; cpu: the calling thread's
#      CPU time, its probe traps included, whatever else the machine runs): plain, hood calls
#      run --probe, hood trace record --probe, bpftrace counting uprobe+uretprobe, perf probe +
#      perf record, in ROUNDS alternated rounds (each tool once per round, so a change in the
#      machine's load falls on all of them); the median of each, and hood's ratio to the
#      cheaper peer on both clocks;
#   2. exactness: tests/c/probe_known.c built plain and with -finstrument-functions; call
#      counts of `hood calls run --probe` on the plain build vs `hood calls run` (the hood-rt
#      runtime) on the instrumented one, per function.
# HOOD=path/to/hood uses that binary instead of building this tree's.
# 2026-11-27, release build, load 1.4-1.6 (the machine otherwise idle), `run.sh 200000 5`:
# per probed call above plain, medians: hood calls 4.62 us wall / 4.61 cpu, hood trace
# 4.61 / 4.60, bpftrace 4.19 / 4.19, perf probe + record 4.70 / 4.70; hood / bpftrace 1.10 on
# both clocks (target <= 1.2). At load 14-15 the same bench gave 1.10 cpu and 1.24-1.27 wall.
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${1:-200000}
rounds=${2:-3}
out=bench/out/probe; mkdir -p "$out"
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=${CARGO_TARGET_DIR:-target}/release/hood
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
gcc -O1 -o "$out/hits" bench/probe/hits.c
bin=$(realpath "$out/hits")
# "wall cpu" ns per call of the program's line in file $1.
ns() { awk '/^ns_per_call/ { print $2, $4 }' "$1"; }

have_bpftrace=; have_perf=
command -v bpftrace > /dev/null && have_bpftrace=1 || echo "  bpftrace: not installed (apt-get install bpftrace)"
command -v perf > /dev/null && have_perf=1 || echo "  perf: not installed (apt-get install linux-perf)"
if [ -n "$have_perf" ]; then
    perf probe -q -d 'probe_hits:*' 2> /dev/null || true
    if ! { perf probe -q -x "$bin" hit 2> "$out/perf-probe.log" && perf probe -q -x "$bin" 'hit%return' 2>> "$out/perf-probe.log"; }; then
        echo "  perf probe: did not run here ($(tail -1 "$out/perf-probe.log"))"; have_perf=
    fi
fi
: > "$out/rounds.txt"
echo "== 1. cost per probed call (entry + return), $calls calls of hit(), $rounds alternated rounds, the program's own clocks"
for r in $(seq "$rounds"); do
    echo "  round $r: load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bin" "$calls" > "$out/plain.out"; echo "plain $(ns "$out/plain.out")" >> "$out/rounds.txt"
    $hood calls run --probe hit -o "$out/calls.data" -- "$bin" "$calls" > "$out/hood-calls.out" 2> "$out/hood-calls.log"
    echo "hood-calls $(ns "$out/hood-calls.out")" >> "$out/rounds.txt"
    $hood trace record --probe hit -o "$out/trace.data" -- "$bin" "$calls" > "$out/hood-trace.out" 2> "$out/hood-trace.log"
    echo "hood-trace $(ns "$out/hood-trace.out")" >> "$out/rounds.txt"
    grep -E "probe hits recorded|lost" "$out/hood-trace.log" | sed 's/^/    /'
    if [ -n "$have_bpftrace" ]; then
        bpftrace -e "uprobe:$bin:hit { @entries = count(); } uretprobe:$bin:hit { @returns = count(); }" \
            -c "$bin $calls" > "$out/bpftrace.out" 2> "$out/bpftrace.log" || true
        if [ -n "$(ns "$out/bpftrace.out")" ]; then
            echo "bpftrace $(ns "$out/bpftrace.out")" >> "$out/rounds.txt"
            [ "$r" = 1 ] && grep -E "@(entries|returns)" "$out/bpftrace.out" | sed 's/^/    /'
        else
            echo "  bpftrace: did not run here ($(tail -1 "$out/bpftrace.log"))"; have_bpftrace=
        fi
    fi
    if [ -n "$have_perf" ]; then
        perf record -q -e probe_hits:hit -e probe_hits:hit__return -o "$out/perf.data" -- "$bin" "$calls" > "$out/perf.out" 2> "$out/perf.log" || true
        echo "perf $(ns "$out/perf.out")" >> "$out/rounds.txt"
    fi
done
[ -n "$have_perf" ] && { perf probe -q -d 'probe_hits:*' 2> /dev/null || true; }
sed 's/^/    /' "$out/rounds.txt"
# Medians per tool, less plain's, and hood's ratio to the cheaper peer on each clock.
python3 - "$out/rounds.txt" << 'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 3:
        rows.setdefault(f[0], []).append((float(f[1]), float(f[2])))
med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}
plain = med.pop("plain")
labels = {"hood-calls": "hood calls run --probe", "hood-trace": "hood trace record --probe",
          "bpftrace": "bpftrace uprobe+uretprobe count", "perf": "perf probe + perf record"}
cost = {k: (w - plain[0], c - plain[1]) for k, (w, c) in med.items()}
print(f"  {'plain':34s} {plain[0]:8.1f} ns wall {plain[1]:8.1f} ns cpu per call (medians of {len(rows['plain'])})")
for k, (w, c) in cost.items():
    print(f"  {labels[k]:34s} +{w:7.1f} ns wall +{c:7.1f} ns cpu per probed call")
peers = [k for k in ("bpftrace", "perf") if k in cost]
for h in ("hood-calls", "hood-trace"):
    for i, clock in ((0, "wall"), (1, "cpu")):
        if peers:
            p = min(peers, key=lambda k: cost[k][i])
            print(f"  {labels[h]} / {p} (the cheaper peer), {clock}: {cost[h][i] / cost[p][i]:.2f} x")
PY

echo; echo "== 2. exactness: --probe on a plain build vs hood-rt hooks on an instrumented build"
gcc -O1 -o "$out/known-plain" tests/c/probe_known.c
gcc -O1 -finstrument-functions -o "$out/known-instr" tests/c/probe_known.c
$hood calls run -o "$out/known-instr.data" -- "$out/known-instr" > /dev/null 2> "$out/known-instr.log"
$hood calls run --probe leaf --probe twice --probe fact --probe tick -o "$out/known-probe.data" -- "$out/known-plain" > /dev/null 2> "$out/known-probe.log"
counts() { $hood calls report -f --format json "$1" | python3 -c '
import json, sys
c = {}
for p in json.load(sys.stdin)["processes"]:
    for r in p["rows"]:
        c[r["path"][0]] = c.get(r["path"][0], 0) + r["calls"]
for k in ("leaf", "twice", "fact", "tick"):
    print(k, c.get(k, 0))'; }
paste <(counts "$out/known-instr.data") <(counts "$out/known-probe.data") | \
    awk '{ printf "  %-6s instrumented %4d   probed %4d   %s\n", $1, $2, $4, ($2 == $4 ? "equal" : "DIFFERENT") }'
