#!/usr/bin/env bash
# Off-CPU recording of a task on a busy machine (issue 22; run.sh's part 4): a thread that
# sleeps 1 ms 1,000 times a second recorded with `hood record --off-cpu -p`, beside two other
# processes woken by their timers ~10,000 times a second each. hood's default (its BPF program
# records only the traced threads' wake-ups) against HOOD_OFF_CPU_WAKEUPS=all (every wake-up
# of the machine sampled with the tracepoint, as hood did before), interleaved rounds; the
# recorder's steady-state CPU (two recordings of different lengths, their difference) as a
# share of one CPU. Prints figures, never pass/fail. Needs root, gcc.
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
cpu_of() { tail -1 "$1" | awk '{printf "%.3f", $1 + $2}'; }
echo "== the ordinary rate beside two other processes woken ~10,000 times a second each (${secs}s and $((2 * secs))s, $rounds rounds)"
steady() {   # steady-state recorder CPU (% of one CPU) of `hood record --off-cpu -p` of a ticker, env $1
    local c=()
    for d in "$secs" $((2 * secs)); do
        "$out/ticker" $((d + 3)) & tick=$!; sleep 1
        env "$1" /usr/bin/time -f "%U %S" -o "$out/busy-$d.time" $hood record --off-cpu -p $tick -d "$d" -o "$out/busy.data" 2> "$out/busy.log"
        wait $tick || true
        c+=("$(cpu_of "$out/busy-$d.time")")
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
