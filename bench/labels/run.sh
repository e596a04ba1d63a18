#!/usr/bin/env bash
# Cost of process-labeled kernel profiling (issue 6): extra CPU per packet (loopback UDP) and
# per I/O (O_DIRECT 4 KiB reads) with `hood record --labels` versus plain `hood record`,
# versus no recorder, next to `perf record` with the same tracepoints; and each recorder's
# own CPU. Prints figures; never pass/fail. Needs root, perf, gcc.
# Usage: bench/labels/run.sh [SECONDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-5}
out=bench/out/labels; mkdir -p "$out"
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf"; exit 2; }
cargo build --release -q -p hood
hood=${CARGO_TARGET_DIR:-target}/release/hood
gcc -O1 -fno-omit-frame-pointer -o "$out/labels_udp" tests/c/labels_udp.c
gcc -O1 -fno-omit-frame-pointer -o "$out/labels_dio" tests/c/labels_dio.c
tps=irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit,net:netif_receive_skb,sock:sk_data_ready,skb:skb_copy_datagram_iovec,skb:consume_skb,sock:sock_recv_length,block:block_rq_issue,block:block_rq_complete,sched:sched_waking

cpu() { awk '{printf "%.3f", $1 + $2}' "$1"; }

# run_one NAME COUNT_REGEX WORKLOAD...: workload under each recorder mode; prints
# "mode units workload-CPU ns/unit recorder-CPU".
run_one() {
    local name=$1 re=$2; shift 2
    for mode in none hood hood-labels perf-tracepoints; do
        local rec_pid="" rtime="$out/$name-$mode.rtime"
        rm -f "$rtime"
        case $mode in
            hood) /usr/bin/time -f "%U %S" -o "$rtime" $hood record -a -F 999 -g -d $((secs + 1)) -o "$out/$name-hood.data" 2>/dev/null & rec_pid=$! ;;
            hood-labels) /usr/bin/time -f "%U %S" -o "$rtime" $hood record --labels -a -F 999 -g -d $((secs + 1)) -o "$out/$name-labels.data" 2>/dev/null & rec_pid=$! ;;
            perf-tracepoints) /usr/bin/time -f "%U %S" -o "$rtime" perf record -q -a -F 999 -g -e cpu-clock -e "$tps" -o "$out/$name-perf.data" -- sleep $((secs + 1)) 2>/dev/null & rec_pid=$! ;;
        esac
        sleep 0.5
        /usr/bin/time -f "%U %S" -o "$out/$name-$mode.wtime" "$@" > "$out/$name-$mode.out"
        [ -n "$rec_pid" ] && wait "$rec_pid" || true
        local units; units=$(grep -oE "$re [0-9]+" "$out/$name-$mode.out" | awk '{s+=$2} END {print s+0}')
        local w; w=$(cpu "$out/$name-$mode.wtime")
        local r="-"; [ -s "$rtime" ] && r=$(cpu "$rtime")
        awk -v m="$mode" -v u="$units" -v w="$w" -v r="$r" 'BEGIN {
            printf "%-17s %9d units  workload %6.2f s CPU  %7.0f ns CPU/unit  recorder %s s CPU\n", m, u, w, (u > 0 ? w * 1e9 / u : 0), r }'
    done
}

echo "== loopback UDP, 64-byte datagrams, ${secs} s (unit = packet received)"
run_one udp received "$out/labels_udp" "$secs"
echo
echo "== O_DIRECT 4 KiB random reads, ${secs} s (unit = read)"
run_one dio reads "$out/labels_dio" "$PWD/$out/dio.bin" "$secs"
rm -f "$out/dio.bin"
