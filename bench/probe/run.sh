#!/usr/bin/env bash
# Probed functions (issue 26) side by side with their peers: prints figures and ratios, never
# pass/fail. Needs root, gcc; bpftrace and perf (linux-perf) where installed (said when not).
# Usage: bench/probe/run.sh [CALLS]   (default 200000)
#   1. cost per probed call (an entry and a return probe) on the same program, measured by the
#      program's own clock around its loop: plain, hood calls run --probe, hood trace record
#      --probe, bpftrace counting uprobe+uretprobe, perf probe + perf record;
#   2. exactness: tests/c/probe_known.c built plain and with -finstrument-functions; call
#      counts of `hood calls run --probe` on the plain build vs `hood calls run` (the hood-rt
#      runtime) on the instrumented one, per function.
# HOOD=path/to/hood uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
calls=${1:-200000}
out=bench/out/probe; mkdir -p "$out"
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=${CARGO_TARGET_DIR:-target}/release/hood
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
gcc -O1 -o "$out/hits" bench/probe/hits.c
bin=$(realpath "$out/hits")
ns() { awk '/^ns_per_call/ {print $2}' "$1"; }

echo "== 1. cost per probed call (entry + return), $calls calls of hit(), the program's own clock"
"$bin" "$calls" > "$out/plain.out"; plain=$(ns "$out/plain.out")
printf "  %-34s %9.1f ns per call\n" plain "$plain"
row() { # label, file with the program's line
    local v; v=$(ns "$2")
    awk -v l="$1" -v v="$v" -v p="$plain" 'BEGIN { printf "  %-34s %9.1f ns per call  (+%.1f ns per probed call)\n", l, v, v - p }'
}
$hood calls run --probe hit -o "$out/calls.data" -- "$bin" "$calls" > "$out/hood-calls.out" 2> "$out/hood-calls.log"
row "hood calls run --probe" "$out/hood-calls.out"
$hood trace record --probe hit -o "$out/trace.data" -- "$bin" "$calls" > "$out/hood-trace.out" 2> "$out/hood-trace.log"
row "hood trace record --probe" "$out/hood-trace.out"
grep -E "probe hits recorded" "$out/hood-trace.log" | sed 's/^/    /'
hood_cost=$(awk -v v="$(ns "$out/hood-calls.out")" -v p="$plain" 'BEGIN {print v - p}')
peers=()
if command -v bpftrace > /dev/null; then
    bpftrace -e "uprobe:$bin:hit { @entries = count(); } uretprobe:$bin:hit { @returns = count(); }" \
        -c "$bin $calls" > "$out/bpftrace.out" 2> "$out/bpftrace.log" || true
    if [ -n "$(ns "$out/bpftrace.out")" ]; then
        row "bpftrace uprobe+uretprobe count" "$out/bpftrace.out"
        grep -E "@(entries|returns)" "$out/bpftrace.out" | sed 's/^/    /'
        peers+=("bpftrace $(awk -v v="$(ns "$out/bpftrace.out")" -v p="$plain" 'BEGIN {print v - p}')")
    else
        echo "  bpftrace: did not run here ($(tail -1 "$out/bpftrace.log"))"
    fi
else
    echo "  bpftrace: not installed (apt-get install bpftrace)"
fi
if command -v perf > /dev/null; then
    perf probe -q -d 'probe_hits:*' 2> /dev/null || true
    if perf probe -q -x "$bin" hit 2> "$out/perf-probe.log" && perf probe -q -x "$bin" 'hit%return' 2>> "$out/perf-probe.log"; then
        perf record -q -e probe_hits:hit -e probe_hits:hit__return -o "$out/perf.data" -- "$bin" "$calls" > "$out/perf.out" 2> "$out/perf.log" || true
        row "perf probe + perf record" "$out/perf.out"
        perf probe -q -d 'probe_hits:*' 2> /dev/null || true
        peers+=("perf $(awk -v v="$(ns "$out/perf.out")" -v p="$plain" 'BEGIN {print v - p}')")
    else
        echo "  perf probe: did not run here ($(tail -1 "$out/perf-probe.log"))"
    fi
else
    echo "  perf: not installed (apt-get install linux-perf)"
fi
for p in "${peers[@]}"; do
    set -- $p
    awk -v n="$1" -v c="$2" -v h="$hood_cost" 'BEGIN { if (c > 0) printf "  hood calls --probe / %s: %.2f x the cost per probed call\n", n, h / c }'
done

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
