#!/usr/bin/env bash
# Off-CPU recording (issue 22) side by side with perf: prints figures and ratios, never
# pass/fail. Needs root, perf (linux-perf), gcc.
# Usage: bench/offcpu/run.sh [SECONDS]   (default 5)
#   1. the known-answer program: its own per-phase clock, hood's shares, and each worker
#      thread's blocked/runnable time beside `perf sched timehist` of the same run;
#   2. a context-switch storm (`perf bench sched pipe`, >= 100,000 switches/s), free and
#      pinned (SCHED_FIFO on CPU 0): the storm's slowdown, recorder CPU and file size, hood
#      -a --off-cpu (deferred stacks, the default: the kernel copies stacks only for long
#      waits) vs `perf sched record`, and hood with HOOD_OFF_CPU_BPF=0 (every stack);
#   3. an ordinary rate (~2,000 switches/s): hood's recorder CPU as a share of one CPU.
# HOOD=path/to/hood uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-5}
out=bench/out/offcpu; mkdir -p "$out"
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf"; exit 2; }
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=${CARGO_TARGET_DIR:-target}/release/hood
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
gcc -O1 -g -fno-omit-frame-pointer -o "$out/offcpu_known" tests/c/offcpu_known.c
gcc -O1 -o "$out/ticker" bench/offcpu/ticker.c
cpu_of() { tail -1 "$1" | awk '{printf "%.3f", $1 + $2}'; }   # user + sys seconds of GNU time's -f "%U %S" (its last line: a line before it may say how a stopped command exited)

echo "== 1. known answer (20 cycles of 100 ms), hood beside perf sched record on the same run"
perf sched record -q -o "$out/ka-perf.data" -- sleep 1000 > /dev/null 2>&1 &
psr=$!; sleep 1
$hood record --off-cpu -o "$out/ka.data" -- "$out/offcpu_known" 20 "$out/fsync.tmp" > "$out/ka.out" 2> "$out/ka.log"
kill -INT $psr 2>/dev/null; wait $psr 2>/dev/null || true
worker=$(awk '/^worker/ {print $2}' "$out/ka.out")
life=$(awk '/^lifetime/ {print $2}' "$out/ka.out")
echo "program's own clock (ns):"; grep -E '^(phase|lifetime|schedstat)' "$out/ka.out" | sed 's/^/  /'
$hood report -i "$out/ka.data" --wall --format collapsed --min-percent 0 > "$out/ka.folded"
for p in spin_phase sleep_phase pipe_phase mutex_phase fsync_phase; do
    want=$(awk -v p="$p" '$1 == "phase" && $2 == p {print $3}' "$out/ka.out")
    got=$(awk -v p=";$p;" 'index($0, p) {s += $NF} END {printf "%d", s}' "$out/ka.folded")
    awk -v p="$p" -v w="$want" -v g="$got" -v l="$life" \
        'BEGIN { printf "  %-12s program %6.1f%%  hood %6.1f%%  (%+.1f points; target +-2)\n", p, 100*w/l, 100*g/l, 100*(g-w)/l }'
done
$hood report -i "$out/ka.data" --wall --format json > "$out/ka.json"
python3 - "$out/ka.json" "$worker" <<'PY' > "$out/ka.hood"
import json, sys
j = json.load(open(sys.argv[1]))
for t in j["off_cpu"]["threads"]:
    print(t["tid"], t["comm"], t["lifetime_ns"], t["on_cpu_ns"], t["blocked_ns"], t["runnable_ns"])
PY
# perf sched timehist: per event "wait time" (blocked until woken) and "sch delay" (woken or
# preempted until running), in ms; summed per thread.
pid=$(awk 'NR==1 {print $1}' "$out/ka.hood")
perf sched timehist -i "$out/ka-perf.data" 2>/dev/null \
  | awk 'NF >= 6 && $1 ~ /^[0-9.]+$/ { split($3, a, "["); n = a[2]; sub(/[]\/].*/, "", n); w[n] += $(NF-2); d[n] += $(NF-1); r[n] += $NF }
         END { for (t in w) printf "%s %.0f %.0f %.0f\n", t, w[t]*1e6, d[t]*1e6, r[t]*1e6 }' > "$out/ka.perf" || true
echo "per thread (ms): hood blocked / runnable / on CPU   perf sched timehist wait / sch delay / run"
while read -r tid comm lt on bl ru; do
    p=$(awk -v t="$tid" '$1 == t' "$out/ka.perf")
    awk -v c="$comm" -v t="$tid" -v on="$on" -v bl="$bl" -v ru="$ru" -v p="$p" 'BEGIN {
        split(p, q, " ");
        printf "  %-14s %8.1f %8.1f %8.1f      %8.1f %8.1f %8.1f", c "/" t, bl/1e6, ru/1e6, on/1e6, q[2]/1e6, q[3]/1e6, q[4]/1e6
        if (q[2] > 0) printf "   blocked ratio %.3f", bl / q[2]
        printf "\n" }'
done < "$out/ka.hood"

echo; echo "== 2. context-switch storm: perf bench sched pipe (about ${secs}s plain), system-wide recorders"
loops=$((secs * 100000))
# Two ways to run the storm, each printed:
# - free: the scheduler places the ping-pong and the recorder on the 2 CPUs as it likes, so
#   the figure mixes the kernel's per-event cost with where the recorder's own CPU time
#   lands;
# - pinned: the ping-pong runs SCHED_FIFO on CPU 0 (chrt -f 50 taskset -c 0), so nothing
#   else, the recorder included, takes its CPU; its slowdown is the kernel's cost per
#   switch and wake-up alone (the recorder runs on the other CPUs).
storm() { # ops/sec of perf bench sched pipe -l $loops (two switches and two wake-ups per op)
    $pin perf bench sched pipe -l "$loops" 2>/dev/null | awk '/ops\/sec/ {print $1}' | tail -1
}
storm_under() { # $1: label, rest: recorder command; prints ops/sec, recorder CPU, file
    local label=$1; shift
    /usr/bin/time -f "%U %S" -o "$out/$label.time" "$@" > "$out/$label.log" 2>&1 &
    local rec=$!; sleep 1
    local ops; ops=$(storm)
    # GNU time ignores SIGINT while it waits: stop the recorder it runs.
    pkill -INT -P $rec 2>/dev/null || true; wait $rec 2>/dev/null || true
    echo "$ops $(cpu_of "$out/$label.time")"
}
for mode in free pinned; do
    pin=""; [ $mode = pinned ] && pin="chrt -f 50 taskset -c 0"
    echo "-- $mode${pin:+ ($pin)}"
    base=$(storm)
    echo "plain: ${base:-?} ops/sec"
    read -r pops pcpu < <(storm_under perf-sched perf sched record -q -o "$out/storm-perf.data" -- sleep 1000)
    read -r hops hcpu < <(storm_under hood-offcpu $hood record -a --off-cpu -o "$out/storm-hood.data")
    # hood without its BPF programs: every switch and wake-up copies its stacks.
    read -r cops ccpu < <(storm_under hood-every env HOOD_OFF_CPU_BPF=0 $hood record -a --off-cpu -o "$out/storm-hood-every.data")
    # hood without the rate bound on stacks per thread.
    read -r rops rcpu < <(storm_under hood-unbounded $hood record -a --off-cpu --off-cpu-rate 0 -o "$out/storm-hood-unbounded.data")
    psize=$(du -k "$out/storm-perf.data" | cut -f1); hsize=$(du -k "$out/storm-hood.data" | cut -f1)
    csize=$(du -k "$out/storm-hood-every.data" | cut -f1)
    awk -v b="$base" -v po="$pops" -v ho="$hops" -v pc="$pcpu" -v hc="$hcpu" -v ps="$psize" -v hs="$hsize" \
        -v co="$cops" -v cc="$ccpu" -v cs="$csize" -v ro="$rops" -v rc="$rcpu" 'BEGIN {
        printf "perf sched record: %s ops/sec (%.1f%% slower), recorder %.2f s CPU, file %d KB\n", po, 100*(b-po)/b, pc, ps
        printf "hood -a --off-cpu: %s ops/sec (%.1f%% slower), recorder %.2f s CPU, file %d KB\n", ho, 100*(b-ho)/b, hc, hs
        printf "hood with HOOD_OFF_CPU_BPF=0 (every stack): %s ops/sec (%.1f%% slower), recorder %.2f s CPU, file %d KB\n", co, 100*(b-co)/b, cc, cs
        printf "hood --off-cpu-rate 0 (no bound on stacks per thread): %s ops/sec (%.1f%% slower), recorder %.2f s CPU\n", ro, 100*(b-ro)/b, rc
        if (pc > 0 && po > 0) {
            printf "hood/perf: speed %.2f (target >= 1), recorder CPU %.2f (target <= 1), file %.2f (target <= 0.5)\n", ho/po, hc/pc, hs/ps
            printf "every-stack/perf: speed %.2f, recorder CPU %.2f, file %.2f\n", co/po, cc/pc, cs/ps
        } }'
    grep -E "lost|off-CPU" "$out/hood-offcpu.log" "$out/hood-every.log" "$out/hood-unbounded.log" || true
done
# The kernel's share: the same two tracepoints with DWARF stack copies, taken by perf.
# Its gigabytes go to /dev/null (perf's pipe mode).
pin=""
base=$(storm)
read -r dops dcpu < <(storm_under perf-dwarf sh -c 'exec perf record -N -q -a -e sched:sched_switch -e sched:sched_waking --call-graph dwarf,8192 -o - > /dev/null')
awk -v b="$base" -v d="$dops" -v c="$dcpu" 'BEGIN { printf "for scale (free), perf record -e sched_switch,sched_waking --call-graph dwarf: %s ops/sec (%.1f%% slower), recorder %.2f s CPU\n", d, 100*(b-d)/b, c }'

echo; echo "== 3. ordinary rate: a thread that sleeps 1 ms 1,000 times a second, ${secs}s and $((2 * secs))s"
# Two recordings of different lengths: the difference of their CPU is the steady state's, without
# the start (process snapshot, kallsyms, BPF programs) that both pay once.
for d in "$secs" $((2 * secs)); do
    "$out/ticker" $((d + 3)) & tick=$!; sleep 1
    /usr/bin/time -f "%U %S" -o "$out/tick-$d.time" $hood record --off-cpu -p $tick -d "$d" -o "$out/tick.data" 2> "$out/tick.log"
    wait $tick || true
done
awk -v c1="$(cpu_of "$out/tick-$secs.time")" -v c2="$(cpu_of "$out/tick-$((2 * secs)).time")" -v s="$secs" 'BEGIN {
    printf "hood --off-cpu -p: %.3f s CPU over %d s, %.3f s over %d s: steady state %.2f%% of one CPU (target < 1%%), the start %.3f s\n", c1, s, c2, 2 * s, 100 * (c2 - c1) / s, 2 * c1 - c2 }'
grep -E "context switches" "$out/tick.log" || true
