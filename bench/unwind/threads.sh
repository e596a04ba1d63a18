#!/usr/bin/env bash
# Lost samples with many busy threads (issue 24): `hood record -F 999 -- threads N SECS` beside
# `perf record --call-graph dwarf -F 999` of the same program, interleaved, ROUNDS rounds.
# Prints per round the samples written and lost by each, and the lost shares' ratio.
# Measurements only, never pass/fail.
#
# usage: bench/unwind/threads.sh [THREADS] [SECONDS]    (default 64 threads, 5 s)
# env:   HOOD       hood binary (default target/release/hood)
#        HOOD_ARGS  extra `hood record` arguments (e.g. "--ring-kb 16384")
#        ROUNDS     rounds (default 3)
#        SYSTEM=1   record the whole system (`hood record -a -d SECS`, `perf record -a`) while
#                   the threads run: THREADS = 2 x or 4 x the CPUs is the oversubscribed case
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
n=${1:-64}; secs=${2:-5}; rounds=${ROUNDS:-3}
hood=${HOOD:-$ROOT/target/release/hood}
read -r -a hood_args <<< "${HOOD_ARGS:-}"
work=$(mktemp -d /tmp/hood-threads.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -fomit-frame-pointer -pthread -o "$work/threads" "$HERE/threads.c"
echo "# $n busy threads on $(nproc) CPUs, -F 999, $secs s; hood args: ${hood_args[*]:-(none)}${SYSTEM:+; whole system (-a)}"
printf '%-6s %10s %8s %7s   %10s %8s %7s   %s\n' round hood_samp lost lost% perf_samp lost lost% "hood/perf lost%"
for r in $(seq "$rounds"); do
    if [ -n "${SYSTEM:-}" ]; then
        "$work/threads" "$n" "$((secs + 1))" > /dev/null & load=$!
        sleep 0.5
        "$hood" record -a -d "$secs" -F 999 "${hood_args[@]}" -o "$work/h.data" 2> "$work/h.log" > /dev/null || true
        wait "$load" || true
    else
        "$hood" record -F 999 "${hood_args[@]}" -o "$work/h.data" -- "$work/threads" "$n" "$secs" 2> "$work/h.log" > /dev/null || true
    fi
    hs=$(grep -m1 -o '[0-9]* samples on' "$work/h.log" | tr -dc 0-9); hs=${hs:-0}
    hl=$(grep -m1 -o 'lost [0-9]* samples' "$work/h.log" | tr -dc 0-9); hl=${hl:-0}
    if [ -n "${SYSTEM:-}" ]; then
        "$work/threads" "$n" "$((secs + 1))" > /dev/null & load=$!
        sleep 0.5
        perf record -N -q -a --call-graph dwarf -F 999 -o "$work/p.data" -- sleep "$secs" 2> "$work/p.log" > /dev/null || true
        wait "$load" || true
    else
        perf record -N -q --call-graph dwarf -F 999 -o "$work/p.data" -- "$work/threads" "$n" "$secs" 2> "$work/p.log" > /dev/null || true
    fi
    pl=$(perf script -i "$work/p.data" -F comm --show-lost-events 2>/dev/null | awk '/PERF_RECORD_LOST / { s += $NF } END { print s + 0 }')
    ps=$(perf report -i "$work/p.data" --stdio --stats 2>/dev/null | awk '/ SAMPLE events:/ { print $3; exit }')
    rm -f "$work/h.data" "$work/p.data"
    awk -v r="$r" -v hs="$hs" -v hl="$hl" -v ps="${ps:-0}" -v pl="${pl:-0}" 'BEGIN {
        hp = (hs + hl) ? 100 * hl / (hs + hl) : 0; pp = (ps + pl) ? 100 * pl / (ps + pl) : 0;
        ratio = (pp > 0) ? sprintf("%.2f", hp / pp) : ((hp > 0) ? "inf" : "-");
        printf "%-6s %10d %8d %6.1f%%   %10d %8d %6.1f%%   %s\n", r, hs, hl, hp, ps, pl, pp, ratio }'
done
