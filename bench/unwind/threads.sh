#!/usr/bin/env bash
# Lost samples with many busy threads (issue 24): `hood record -F 999 -- threads N SECS` beside
# `perf record --call-graph dwarf -F 999` and `samply record -r 999` of the same program,
# interleaved, ROUNDS rounds. Prints per round the samples written and lost by each, and the
# samples per second of the workload's CPU time (`cputime`: user + sys of the threads; 999 is
# every sample kept). samply reports no lost count: its column is that coverage only.
# Measurements only, never pass/fail.
#
# usage: bench/unwind/threads.sh [THREADS] [SECONDS]    (default 64 threads, 5 s)
# env:   HOOD       hood binary (default target/release/hood)
#        HOOD_ARGS  extra `hood record` arguments (e.g. "--ring-kb 16384")
#        ROUNDS     rounds (default 3)
#        SYSTEM=1   record the whole system (`hood record -a -d SECS`, `perf record -a`) while
#                   the threads run: THREADS = 2 x or 4 x the CPUs is the oversubscribed case
#                   (samply records no whole system: not run)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
n=${1:-64}; secs=${2:-5}; rounds=${ROUNDS:-3}
hood=${HOOD:-$ROOT/target/release/hood}
read -r -a hood_args <<< "${HOOD_ARGS:-}"
export PATH=$PATH:$HOME/.cargo/bin
have_samply=$( [ -z "${SYSTEM:-}" ] && command -v samply >/dev/null && echo 1 || echo 0)
work=$(mktemp -d /tmp/hood-threads.XXXXXX)
paranoid0=$(cat /proc/sys/kernel/perf_event_paranoid)
trap 'echo "$paranoid0" > /proc/sys/kernel/perf_event_paranoid 2>/dev/null || true; rm -rf "$work"' EXIT
gcc -O2 -g -fomit-frame-pointer -pthread -o "$work/threads" "$HERE/threads.c"
gcc -O2 -o "$work/cputime" "$HERE/cputime.c"
echo "# $n busy threads on $(nproc) CPUs, -F 999, $secs s; hood args: ${hood_args[*]:-(none)}${SYSTEM:+; whole system (-a)}; $(uptime)"
printf '%-6s %9s %7s %6s %6s   %9s %7s %6s %6s   %9s %6s   %s\n' round hood lost lost% per-s perf lost lost% per-s samply per-s "hood/perf lost%"
cpu() { awk '{ printf "%.3f", $1 + $2 }' "$1" 2>/dev/null || echo 0; }
per_s() { awk -v s="$1" -v c="$2" 'BEGIN { if (c > 0) printf "%.0f", s / c; else printf "-" }'; }
for r in $(seq "$rounds"); do
    rm -f "$work"/*.time
    if [ -n "${SYSTEM:-}" ]; then
        "$work/cputime" "$work/h.time" "$work/threads" "$n" "$((secs + 1))" > /dev/null & load=$!
        sleep 0.5
        "$hood" record -a -d "$secs" -F 999 "${hood_args[@]}" -o "$work/h.data" 2> "$work/h.log" > /dev/null || true
        wait "$load" || true
    else
        "$hood" record -F 999 "${hood_args[@]}" -o "$work/h.data" -- "$work/cputime" "$work/h.time" "$work/threads" "$n" "$secs" 2> "$work/h.log" > /dev/null || true
    fi
    hs=$(grep -m1 -o '[0-9]* samples on' "$work/h.log" | tr -dc 0-9); hs=${hs:-0}
    hl=$(grep -m1 -o ', [0-9]* lost' "$work/h.log" | tr -dc 0-9); hl=${hl:-0}
    if [ -n "${SYSTEM:-}" ]; then
        "$work/cputime" "$work/p.time" "$work/threads" "$n" "$((secs + 1))" > /dev/null & load=$!
        sleep 0.5
        perf record -N -q -a --call-graph dwarf -F 999 -o "$work/p.data" -- sleep "$secs" 2> "$work/p.log" > /dev/null || echo "# round $r: perf record failed (status $?)"
        wait "$load" || true
    else
        perf record -N -q --call-graph dwarf -F 999 -o "$work/p.data" -- "$work/cputime" "$work/p.time" "$work/threads" "$n" "$secs" 2> "$work/p.log" > /dev/null || true
    fi
    # perf may crash on its own (seen: `perf record -a --call-graph dwarf` aborting): the
    # round says so, and the script goes on.
    [ -s "$work/p.data" ] || echo "# round $r: perf left no recording: $(head -c 200 "$work/p.log")"
    pl=$(perf script -i "$work/p.data" -F comm --show-lost-events 2>/dev/null | awk '/PERF_RECORD_LOST / { s += $NF } END { print s + 0 }' || true)
    ps=$(perf report -i "$work/p.data" --stdio --stats 2>/dev/null | awk '/ SAMPLE events:/ { print $3; exit }' || true)
    ss=-; sper=-
    if [ "$have_samply" = 1 ]; then
        # samply refuses perf_event_paranoid > 1 even as root: lowered for its run only.
        [ "$paranoid0" -gt 1 ] && echo 1 > /proc/sys/kernel/perf_event_paranoid
        samply record --save-only -r 999 -o "$work/s.json.gz" -- "$work/cputime" "$work/s.time" "$work/threads" "$n" "$secs" > /dev/null 2> "$work/s.log" || true
        echo "$paranoid0" > /proc/sys/kernel/perf_event_paranoid
        ss=$(python3 -c '
import gzip, json, sys
p = json.load(gzip.open(sys.argv[1]))
print(sum(len(t["samples"]["stack"]) for t in p["threads"] if t.get("name") == "threads" or t.get("processName") == "threads"))' "$work/s.json.gz" 2>/dev/null || echo 0)
        sper=$(per_s "$ss" "$(cpu "$work/s.time")")
    fi
    hper=$(per_s "$hs" "$(cpu "$work/h.time")"); pper=$(per_s "${ps:-0}" "$(cpu "$work/p.time")")
    # Whole system: samples of every process, not only the threads'; no coverage figure.
    [ -n "${SYSTEM:-}" ] && { hper=-; pper=-; }
    rm -f "$work/h.data" "$work/p.data" "$work/s.json.gz"
    awk -v r="$r" -v hs="$hs" -v hl="$hl" -v ps="${ps:-0}" -v pl="${pl:-0}" -v hper="$hper" -v pper="$pper" -v ss="$ss" -v sper="$sper" 'BEGIN {
        hp = (hs + hl) ? 100 * hl / (hs + hl) : 0; pp = (ps + pl) ? 100 * pl / (ps + pl) : 0;
        ratio = (pp > 0) ? sprintf("%.2f", hp / pp) : ((hp > 0) ? "inf" : "-");
        printf "%-6s %9d %7d %5.1f%% %6s   %9d %7d %5.1f%% %6s   %9s %6s   %s\n", r, hs, hl, hp, hper, ps, pl, pp, pper, ss, sper, ratio }'
done
echo "# end: $(uptime)"
