#!/usr/bin/env bash
# Off-CPU recording of a task on a busy machine (issue 22; run.sh's part 4): a thread that
# sleeps 1 ms 1,000 times a second recorded with `hood record --off-cpu -p`, beside two other
# processes woken by their timers ~10,000 times a second each. hood's default (its BPF program
# records only the traced threads' wake-ups) against HOOD_OFF_CPU_WAKEUPS=all (every wake-up
# of the machine sampled with the tracepoint, as hood did before), interleaved rounds; the
# recorder's steady-state CPU (two recordings of different lengths, their difference) as a
# share of one CPU, by perf stat's task-clock. Prints figures, never pass/fail. Needs root,
# gcc, perf.
# Usage: bench/offcpu/busy.sh [SECONDS [ROUNDS]]   (defaults 5 and 3)
# HOOD=path/to/hood uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-5}
rounds=${2:-3}
out=bench/out/offcpu; mkdir -p "$out"
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=${CARGO_TARGET_DIR:-target}/release/hood
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
gcc -O1 -o "$out/ticker" bench/offcpu/ticker.c
command -v perf >/dev/null || { echo "perf is needed (perf stat measures the recorder): apt-get install linux-perf"; exit 2; }
echo "== the ordinary rate beside two other processes woken ~10,000 times a second each (${secs}s and $((2 * secs))s, $rounds rounds)"
steady() {   # steady-state recorder CPU (% of one CPU) of `hood record --off-cpu -p` of a ticker, env $1
    local c=()
    for d in "$secs" $((2 * secs)); do
        "$out/ticker" $((d + 3)) & tick=$!; sleep 1
        # perf stat's task-clock: the recorder's CPU to the microsecond (GNU time's is in
        # hundredths of a second, a quarter of the target over 4 s).
        env "$1" perf stat -x, -e task-clock -o "$out/busy-$d.stat" -- $hood record --off-cpu -p $tick -d "$d" -o "$out/busy.data" 2> "$out/busy.log"
        wait $tick || true
        c+=("$(awk -F, '/task-clock/ {printf "%.4f", $1 / 1000}' "$out/busy-$d.stat")")
    done
    awk -v c1="${c[0]}" -v c2="${c[1]}" -v s="$secs" 'BEGIN { printf "%.2f", 100 * (c2 - c1) / s }'
}
noise=$(( 3 * secs * (rounds * 2) * 2 + 20 ))
"$out/ticker" $noise 50 & n1=$!
"$out/ticker" $noise 50 & n2=$!
sleep 1
ws=$(awk '/^ctxt/ {print $2}' /proc/stat); sleep 1; we=$(awk '/^ctxt/ {print $2}' /proc/stat)
echo "machine context switches beside the recordings: $((we - ws)) a second"
bpf=(); all=()
for r in $(seq "$rounds"); do
    bpf+=("$(steady HOOD_OFF_CPU_WAKEUPS=bpf)")
    grep -E "context switches" "$out/busy.log" | sed 's/^/  bpf: /' | cut -c1-160 || true
    all+=("$(steady HOOD_OFF_CPU_WAKEUPS=all)")
    grep -E "context switches" "$out/busy.log" | sed 's/^/  all: /' | cut -c1-160 || true
    echo "  round $r: hood (its threads' wake-ups) ${bpf[-1]}% of one CPU; every wake-up of the machine ${all[-1]}%"
done
kill $n1 $n2 2>/dev/null; wait $n1 $n2 2>/dev/null || true
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "median steady state beside a busy machine: hood $(med "${bpf[@]}")% of one CPU (target < 1%), every wake-up of the machine $(med "${all[@]}")%"

# What the machine pays: an unrelated ping-pong (`perf bench sched pipe`, two processes that
# wake each other) run alone, and while hood records the ticker with each way of seeing
# wake-ups. Sampling every wake-up of the machine costs each of the ping-pong's wake-ups a
# sample with its kernel call chain, in the ping-pong's own time; hood's program costs it a
# look-up or two.
command -v perf >/dev/null || exit 0
echo; echo "== an unrelated ping-pong's speed while hood records a ticker (-p), $rounds rounds"
pipe_ops() { perf bench sched pipe -l 200000 2>/dev/null | awk '/ops\/sec/ {print $1}'; }
beside() {   # the ping-pong's ops/sec while hood records the ticker with env $1
    "$out/ticker" 60 & tick=$!; sleep 0.5
    env "$1" $hood record --off-cpu -p $tick -d 60 -o "$out/busy-pp.data" 2> "$out/busy-pp.log" & rec=$!
    sleep 1.5
    pipe_ops
    kill -INT $rec 2>/dev/null; wait $rec 2>/dev/null || true
    kill $tick 2>/dev/null; wait $tick 2>/dev/null || true
}
alone=(); pb=(); pa=()
for r in $(seq "$rounds"); do
    alone+=("$(pipe_ops)")
    pb+=("$(beside HOOD_OFF_CPU_WAKEUPS=bpf)")
    pa+=("$(beside HOOD_OFF_CPU_WAKEUPS=all)")
    echo "  round $r: alone ${alone[-1]} ops/sec; beside hood ${pb[-1]}; beside every wake-up sampled ${pa[-1]}"
done
a=$(med "${alone[@]}"); b=$(med "${pb[@]}"); c=$(med "${pa[@]}")
awk -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "median: alone %d ops/sec; beside hood %d (%.2f of alone); beside every wake-up sampled %d (%.2f of alone)\n", a, b, b / a, c, c / a }'
