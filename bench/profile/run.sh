#!/usr/bin/env bash
# Side-by-side benchmark of hood's sampling profiler against perf (issue 2's targets).
# Prints figures and ratios; never pass/fail. Needs root, perf (linux-perf), gcc.
# Usage: bench/profile/run.sh [SECONDS]   (default 10; the issue's figures use 10)
# HOOD=path/to/hood times that binary instead of building this tree's (e.g. an older build, for
# before/after figures beside the same perf).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
out=bench/out/profile; mkdir -p "$out"
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf"; exit 2; }
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=${CARGO_TARGET_DIR:-target}/release/hood
fi
gcc -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o "$out/fixedwork" bench/profile/fixedwork.c
gcc -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o "$out/spinner" tests/c/spinner.c

cpu_of() { # "user sys maxrss_kb" from GNU time's output file
    awk '{printf "%.2f", $1 + $2}' "$1"
}
rss_of() { awk '{printf "%.0f", $3 / 1024}' "$1"; }

busy() { # keep both CPUs busy for $1 seconds
    "$out/spinner" $(( $1 * 1000 )) & "$out/spinner" $(( $1 * 1000 )) &
}

echo "== 1. recorder cost: -a -F 4999 -g for ${secs}s with both CPUs busy"
busy $((secs + 2)); sleep 0.5
/usr/bin/time -f "%U %S %M" -o "$out/perf.time" perf record -q -a -F 4999 -g -o "$out/perf.data" -- sleep "$secs" 2> "$out/perf.log" || true
wait
busy $((secs + 2)); sleep 0.5
/usr/bin/time -f "%U %S %M" -o "$out/hood.time" $hood record -a -F 4999 -g -d "$secs" -o "$out/hood.data" 2> "$out/hood.log"
wait
psamples=$(perf report -i "$out/perf.data" --stdio --header-only 2>/dev/null | awk '/sample/ && /nr_samples|samples/ {print}' | head -1)
plost=$(perf report -i "$out/perf.data" --stdio 2>/dev/null | awk -F'[ ,]+' '/^# Total Lost Samples/ {print $5}' | head -1)
pevents=$(perf report -i "$out/perf.data" --stdio 2>/dev/null | grep -m1 "^# Samples:" || true)
echo "perf: $(cpu_of "$out/perf.time") s CPU, $(rss_of "$out/perf.time") MB RSS, ${pevents#\# }, lost ${plost:-?}, $(du -m "$out/perf.data" | cut -f1) MB"
echo "hood: $(cpu_of "$out/hood.time") s CPU, $(rss_of "$out/hood.time") MB RSS, $(grep -o '[0-9]* samples on' "$out/hood.log"), lost $(grep -oE 'lost [0-9]+ samples|[0-9]+ lost' "$out/hood.log" | grep -oE '[0-9]+' | head -1), $(du -m "$out/hood.data" | cut -f1) MB"
awk -v h="$(cpu_of "$out/hood.time")" -v p="$(cpu_of "$out/perf.time")" 'BEGIN { if (p > 0) printf "recorder CPU ratio hood/perf: %.2f (target <= 1)\n", h / p }'

echo; echo "== 2. report time on those recordings (text to /dev/null; median of ${REPORT_ROUNDS:-11} interleaved runs)"
wall() { # wall seconds (ns resolution) of one run of "$@", output discarded
    local t0 t1
    t0=$(date +%s%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }'
}
: > "$out/report.txt"
for r in $(seq "${REPORT_ROUNDS:-11}"); do
    echo "$(wall perf report -i "$out/perf.data" --stdio) $(wall $hood report -i "$out/hood.data")" >> "$out/report.txt"
done
awk '{ p[NR]=$1; h[NR]=$2 }
     function med(a, n,   i, j, t) { for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) { t=a[i]; a[i]=a[j]; a[j]=t }; return a[int((n+1)/2)] }
     END { n=NR; mp=med(p,n); mh=med(h,n)
           printf "perf report --stdio: %.3f s; hood report: %.3f s (medians of %d)\n", mp, mh, n
           if (mh > 0) printf "report speed-up perf/hood: %.1fx (target >= 5x)\n", mp / mh }' "$out/report.txt"

echo; echo "== 3. workload overhead at -F 999 -g (the workload's own run time for fixed work; rounds interleave plain/perf/hood, median)"
iters=${ITERS:-2000}
rounds=${ROUNDS:-7}
secs_of() { "$@" 2>/dev/null | tail -1; }
: > "$out/overhead.txt"
for r in $(seq "$rounds"); do
    b=$(secs_of "$out/fixedwork" "$iters")
    p=$(secs_of perf record -q -B -F 999 -g -o "$out/ov-perf.data" -- "$out/fixedwork" "$iters" || echo nan)
    h=$(secs_of $hood record -F 999 -g -o "$out/ov-hood.data" -- "$out/fixedwork" "$iters" || echo nan)
    echo "$b $p $h" >> "$out/overhead.txt"
done
awk '{ b[NR]=$1; p[NR]=$2; h[NR]=$3; po[NR]=100*($2-$1)/$1; ho[NR]=100*($3-$1)/$1 }
     function med(a, n,   i, j, t) { for (i=1;i<=n;i++) for (j=i+1;j<=n;j++) if (a[j]<a[i]) { t=a[i]; a[i]=a[j]; a[j]=t }; return a[int((n+1)/2)] }
     END { n=NR; printf "median of %d rounds: plain %.2f s, perf %+.1f%%, hood %+.1f%% (target: hood <= perf)\n", n, med(b,n), med(po,n), med(ho,n) }' "$out/overhead.txt"

echo; echo "== 4. lost samples at -F 4999 -a -g, 30 s, both CPUs busy (target 0)"
busy 32; sleep 0.5
$hood record -a -F 4999 -g -d 30 -o "$out/long.data" 2>&1 | grep -E "wrote|lost"
wait
