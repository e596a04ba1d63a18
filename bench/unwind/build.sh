#!/usr/bin/env bash
# `hood record -a` on a busy build (issue 24): `make -j2` of zstd's C library (the sources
# bundled in the zstd-sys crate, `cargo fetch`ed with hood's own dependencies), rebuilt in a
# loop while `hood record -a -F 999` and then `perf record -a --call-graph dwarf -F 999` record
# the whole machine for SECONDS, ROUNDS rounds interleaved. Prints, for the compiler's samples
# (comm cc1): complete stacks (reaching libc's start: Debian's cc1 is stripped), file size per
# sample, report time (`hood report -i` vs `perf report -i --stdio`, output discarded) and the
# ratios hood/perf. Measurements only, never pass/fail.
#
# usage: bench/unwind/build.sh [SECONDS]      (default 20)
# env:   HOOD    hood binary (default target/release/hood)
#        ROUNDS  rounds (default 2)
#        PERF_REPORT_MAX  seconds perf report may take before it is stopped (default 900)
#        HOOD_ARGS  extra `hood record` arguments (e.g. "--call-graph auto,32768")
#        KEEP=1  keep the temp dir with the recordings
# Needs root, gcc, make and perf (linux-perf). perf record runs with -N (no build-id cache:
# Debian's perf 6.1 crashes in it now and then); a perf report or script that crashes anyway
# is counted as such and said.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
secs=${1:-20}; rounds=${ROUNDS:-2}; PERF_REPORT_MAX=${PERF_REPORT_MAX:-900}
read -r -a hood_args <<< "${HOOD_ARGS:-}"
hood=${HOOD:-$ROOT/target/release/hood}
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf" >&2; exit 2; }
src=$(cd "$ROOT" && cargo metadata --format-version 1 2>/dev/null \
    | python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "zstd-sys"))' \
    | xargs dirname)/zstd/lib
[ -d "$src/compress" ] || { echo "zstd sources not found (cargo fetch in $ROOT)" >&2; exit 2; }
work=$(mktemp -d /tmp/hood-build.XXXXXX)
loop=
cleanup() {
    [ -n "$loop" ] && kill -- "-$loop" 2>/dev/null; wait 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
mkdir "$work/zstd"
cp -r "$src"/{common,compress,decompress,dictBuilder,zstd.h,zstd_errors.h,zdict.h} "$work/zstd/"
cat > "$work/zstd/Makefile" <<'MK'
SRCS := $(wildcard common/*.c compress/*.c decompress/*.c dictBuilder/*.c)
OBJS := $(SRCS:.c=.o)
libzstd.a: $(OBJS)
	ar rcs $@ $^
%.o: %.c
	$(CC) -O2 -DZSTD_DISABLE_ASM -c -o $@ $<
clean:
	rm -f $(OBJS) libzstd.a
MK
start_build() { # rebuild in a loop, in a process group of its own, until stopped
    setsid bash -c 'cd "$1" && while :; do make -s clean; make -s -j2 > /dev/null 2>&1; done' _ "$work/zstd" & loop=$!
    sleep 1
}
stop_build() { kill -- "-$loop" 2>/dev/null; wait "$loop" 2>/dev/null || true; loop=; }
now() { date +%s.%N; }
declare -A n c bytes rep all
for p in hood perf; do n[$p]=0; c[$p]=0; bytes[$p]=0; rep[$p]=0; all[$p]=0; done
crashes=0
echo "# make -j2 of zstd's lib ($(basename "$(dirname "$(dirname "$src")")"), $(ls "$src"/{common,compress,decompress,dictBuilder}/*.c | wc -l) files, gcc -O2) in a loop; -a -F 999 for $secs s; $rounds rounds; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
echo "# $("$hood" --version 2>/dev/null | head -1) ${hood_args[*]:-(default settings)}; $(perf --version)"
for r in $(seq "$rounds"); do
    start_build
    "$hood" record -a -F 999 -d "$secs" "${hood_args[@]}" -o "$work/h.hood" > /dev/null 2> "$work/h.log"
    stop_build
    start_build
    perf record -N -q -a --call-graph dwarf -F 999 -o "$work/p.data" -- sleep "$secs" > /dev/null 2> "$work/p.log" || true
    stop_build
    read -r a b _ <<< "$("$hood" report -i "$work/h.hood" --format collapsed --min-percent 0 2>/dev/null | python3 "$HERE/stacks.py" collapsed cc1)"
    n[hood]=$(( ${n[hood]} + a )); c[hood]=$(( ${c[hood]} + b ))
    bytes[hood]=$(( ${bytes[hood]} + $(stat -c %s "$work/h.hood") ))
    if out=$(perf script -i "$work/p.data" -F comm,tid,ip,sym,dso --no-inline 2>/dev/null | python3 "$HERE/stacks.py" perfscript cc1); then
        read -r a b _ <<< "$out"
        n[perf]=$(( ${n[perf]} + a )); c[perf]=$(( ${c[perf]} + b ))
    else crashes=$((crashes + 1)); fi
    bytes[perf]=$(( ${bytes[perf]} + $(stat -c %s "$work/p.data") ))
    t0=$(now); "$hood" report -i "$work/h.hood" > /dev/null 2>&1 || true; t1=$(now)
    # bounded: on a loaded 2-CPU machine perf unwinds a few seconds of -a dwarf for minutes
    rc=0; timeout "$PERF_REPORT_MAX" perf report -i "$work/p.data" --stdio > /dev/null 2>&1 || rc=$?
    t2=$(now)
    [ "$rc" = 124 ] && echo "round $r: perf report stopped after $PERF_REPORT_MAX s (its time is counted as that)" >&2
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && crashes=$((crashes + 1))
    rep[hood]=$(awk -v a="${rep[hood]}" -v x="$t0" -v y="$t1" 'BEGIN { print a + y - x }')
    rep[perf]=$(awk -v a="${rep[perf]}" -v x="$t1" -v y="$t2" 'BEGIN { print a + y - x }')
    # all samples of the file, for the size per sample
    hs=$(grep -m1 -o '[0-9]* samples on' "$work/h.log" | tr -dc 0-9)
    ps=$(perf report -i "$work/p.data" --stdio --stats 2>/dev/null | awk '/ SAMPLE events:/ { print $3; exit }')
    all[hood]=$(( ${all[hood]} + ${hs:-0} )); all[perf]=$(( ${all[perf]} + ${ps:-0} ))
    echo "round $r: hood $(grep -m1 -o 'lost [0-9]* samples' "$work/h.log" || echo 'lost 0 samples') of ${hs:-?}, $(stat -c %s "$work/h.hood") bytes; perf ${ps:-?} samples, $(stat -c %s "$work/p.data") bytes" >&2
    rm -f "$work/h.hood" "$work/p.data"
done
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f%%", 100 * a / b; else printf "-" }'; }
per() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0f", a / b; else printf "-" }'; }
printf '%-6s %12s %10s %10s %16s %12s\n' tool "cc1 samples" complete samples "bytes/sample" "report (s)"
for p in hood perf; do
    printf '%-6s %12d %10s %10d %16s %12.2f\n' "$p" "${n[$p]}" "$(pct "${c[$p]}" "${n[$p]}")" "${all[$p]}" "$(per "${bytes[$p]}" "${all[$p]}")" "${rep[$p]}"
done
awk -v hc="${c[hood]}" -v hn="${n[hood]}" -v pc="${c[perf]}" -v pn="${n[perf]}" \
    -v hb="${bytes[hood]}" -v pb="${bytes[perf]}" -v ha="${all[hood]}" -v pa="${all[perf]}" \
    -v hr="${rep[hood]}" -v pr="${rep[perf]}" 'BEGIN {
    if (hn > 0 && pn > 0 && pc > 0) printf "complete hood/perf: %.2f (target >= 1, and hood >= 95%%)\n", (hc / hn) / (pc / pn)
    if (pb > 0 && ha > 0 && pa > 0) printf "file per sample hood/perf: %.3f (target <= 0.25)\n", (hb / ha) / (pb / pa)
    if (hr > 0) printf "report time perf/hood: %.1fx (target >= 10x)\n", pr / hr }'
[ "$crashes" -eq 0 ] || echo "perf script/report crashed $crashes times (Debian's perf 6.1 does now and then); those rounds' perf figures are left out"
