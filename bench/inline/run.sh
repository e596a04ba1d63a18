#!/usr/bin/env bash
# Inlined frames and source lines (issue 12's "Numbers"): what symbolization with inlined
# functions and file:line costs in `hood report`, against `hood report --no-inline` and
# against `perf report --stdio --inline` on perf's recording of the same workload, side by side
# in one run. Also how much of the profile each names as inlined code.
#
# Workload: bench/unwind/btree.rs (BTreeMap insert/get/range/retain), a Rust release build with
# full debug info and frame pointers (so both recorders take the same frame-pointer stacks and
# the comparison is about symbolization, not unwinding). Measurements only, never pass/fail.
#
# Also `hood annotate` (source lines, and `--asm`) against `perf annotate --stdio` for the same
# function, and what a cold run costs: the report's own files (hood or perf and its libraries,
# the recording, the profiled binary, the debug files) dropped from the page cache and, for
# hood, an empty DWARF cache and symbol cache; warm runs are the median of ROUNDS runs after
# one warm-up (which fills the bench's own symbol cache); `report, no symbol cache` is a warm
# run that reads the binaries' symbol tables and DWARF again (HOOD_SYMBOL_CACHE=off).
#
# SYSTEM=1: both recorders sample the whole machine at once (`hood record -a`, `perf record
# -a -g`) for SECONDS while the workload runs, so the reports cover the same run and every
# other process of the machine (on a shared machine, its neighbours' compilers too).
#
# usage: bench/inline/run.sh [SECONDS]   (default 10 s of recording each; ROUNDS=5 reports)
# env:   HOOD  hood binary (default: build target/release/hood)   KEEP=1  keep the temp dir
#        FUNC  function to annotate (default btree::fill)   SYSTEM=1  system-wide recordings
#        REUSE=DIR  report the program and recordings of an earlier run kept in DIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
secs=${1:-10}
rounds=${ROUNDS:-5}
func=${FUNC:-btree::fill}
work=$(mktemp -d /tmp/hood-inline.XXXXXX)
trap '[ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"' EXIT
export PATH=$PATH:$HOME/.cargo/bin
if [ -z "${HOOD:-}" ]; then
    cargo build --release -q -p hood
    HOOD=${CARGO_TARGET_DIR:-target}/release/hood
fi
hood=$(realpath "$HOOD")

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
bin="$work/btree/target/release/btree"
if [ -n "${REUSE:-}" ]; then
    # The program and both recordings of an earlier run (kept with KEEP=1): two hood builds
    # then report the very same samples (the recordings name the program where it was built).
    bin="$REUSE/btree/target/release/btree"
    cp "$REUSE/hood.data" "$REUSE/perf.data" "$work/"
    cp "$REUSE"/*.rec.log "$work/" 2> /dev/null || true
else
    mkdir -p "$work/btree/src"
    cp "$ROOT/bench/unwind/btree.rs" "$work/btree/src/main.rs"
    printf '[package]\nname = "btree"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n\n[profile.release]\ndebug = true\n' > "$work/btree/Cargo.toml"
    (cd "$work/btree" && CARGO_TARGET_DIR="$work/btree/target" RUSTFLAGS="-C force-frame-pointers=yes" cargo build --release -q --offline)
    # Units: about 0.056 s of CPU each on this kind of core (bench/unwind).
    units=$(awk -v s="$secs" 'BEGIN { u = int(s / 0.056 + 0.5); print (u < 1 ? 1 : u) }')
    if [ "${SYSTEM:-0}" = 1 ]; then
        # Both recorders at once, over the same run of the workload.
        "$hood" record -a -F 999 --call-graph fp -d "$secs" -o "$work/hood.data" > /dev/null 2> "$work/hood.rec.log" &
        hood_rec=$!
        perf record -q -N -a -F 999 -g -o "$work/perf.data" -- sleep "$secs" > /dev/null 2> "$work/perf.rec.log" &
        perf_rec=$!
        sleep 0.5
        "$bin" "$units" > /dev/null
        wait "$hood_rec" "$perf_rec"
    else
        "$hood" record -F 999 --call-graph fp -o "$work/hood.data" -- "$bin" "$units" > /dev/null 2> "$work/hood.rec.log"
        perf record -q -N -F 999 -g -o "$work/perf.data" -- "$bin" "$units" > /dev/null 2> "$work/perf.rec.log" ||
            perf record -q -N -B -F 999 -g -o "$work/perf.data" -- "$bin" "$units" > /dev/null 2> "$work/perf.rec.log"
    fi
fi
# Warm hood runs keep their DWARF and symbol caches here (filled by the first run).
export HOOD_DWARF_CACHE="$work/dwarf-warm" HOOD_SYMBOL_CACHE="$work/symbols-warm"
echo "recorded: hood $(grep -o "[0-9,]* samples" "$work/hood.rec.log" 2> /dev/null | head -1 || true), perf $(perf report -i "$work/perf.data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3 " samples" }' | head -1)"

cpu_of() { awk -F, '/task-clock/ { printf "%.4f", $1 / 1000 }' "$1"; }
wall_of() { awk -F, '/duration_time/ { printf "%.4f", $1 / 1e9 }' "$1"; }
# Median wall and CPU seconds (task-clock, children included) of a command over $rounds runs
# (one warm-up run first).
measure() { # measure NAME CMD... -> "NAME wall cpu"
    local name=$1; shift
    "$@" > "$work/$name.out" 2> /dev/null || true
    local walls=() cpus=()
    for _ in $(seq "$rounds"); do
        # task-clock of the command and its children (perf's addr2line helpers), in ms, and
        # its wall time (duration_time, ns: perf stat's own start-up is not counted).
        perf stat -x, -e task-clock,duration_time -o "$work/stat" -- "$@" > /dev/null 2>&1 || true
        walls+=("$(wall_of "$work/stat")")
        cpus+=("$(cpu_of "$work/stat")")
    done
    local mw mc
    mw=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    mc=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "$name $mw $mc"
}
{
    measure hood_inline "$hood" report -i "$work/hood.data" --width 0
    HOOD_SYMBOL_CACHE=off measure hood_inline_nosymcache "$hood" report -i "$work/hood.data" --width 0
    measure hood_noinline "$hood" report -i "$work/hood.data" --width 0 --no-inline
    measure hood_lines "$hood" report -i "$work/hood.data" --width 0 --by line
    measure perf_inline perf report -i "$work/perf.data" --stdio --no-children --inline
    measure perf_noinline perf report -i "$work/perf.data" --stdio --no-children --no-inline
    # perf's srcline runs addr2line over every sampled library: on a system-wide recording
    # (libLLVM, rustc's driver) that is minutes per run, so it is timed on one command only.
    if [ "${SYSTEM:-0}" != 1 ]; then
        measure perf_srcline perf report -i "$work/perf.data" --stdio --no-children --sort srcline
    fi
    measure hood_annotate "$hood" annotate -i "$work/hood.data" "$func"
    measure hood_annotate_asm "$hood" annotate -i "$work/hood.data" --asm "$func"
    measure perf_annotate perf annotate -i "$work/perf.data" --stdio -s "$func"
} > "$work/times"
# Cold: the files of the run dropped from the page cache first (each file on its own, with
# posix_fadvise, so the rest of a shared machine keeps its cache), hood with an empty DWARF
# cache; one run each, CPU and wall.
evict() {
    python3 - "$@" <<'PY'
import os, sys
for top in sys.argv[1:]:
    walk = os.walk(top) if os.path.isdir(top) else [(os.path.dirname(top), [], [os.path.basename(top)])]
    for root, _, files in walk:
        for f in files:
            try:
                fd = os.open(os.path.join(root, f), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
PY
}
perf_bin=$(command -v perf)
perf_files=("$perf_bin" $(ldd "$perf_bin" 2> /dev/null | awk '$3 ~ /^\// { print $3 }'))
cold() { # cold NAME CMD... -> "NAME wall cpu"
    local name=$1; shift
    perf stat -x, -e task-clock,duration_time -o "$work/stat" -- "$@" > /dev/null 2>&1 || true
    echo "$name $(wall_of "$work/stat") $(cpu_of "$work/stat")"
}
{
    evict "$hood" "$work/hood.data" "$bin" /usr/lib/debug
    HOOD_DWARF_CACHE="$work/dwarf-cold" HOOD_SYMBOL_CACHE="$work/symbols-cold" cold hood_inline_cold "$hood" report -i "$work/hood.data" --width 0
    evict "${perf_files[@]}" "$work/perf.data" "$bin" /usr/lib/debug
    cold perf_inline_cold perf report -i "$work/perf.data" --stdio --no-children --inline
    evict "$hood" "$work/hood.data" "$bin" /usr/lib/debug
    HOOD_DWARF_CACHE="$work/dwarf-cold2" HOOD_SYMBOL_CACHE="$work/symbols-cold2" cold hood_annotate_cold "$hood" annotate -i "$work/hood.data" "$func"
    evict "${perf_files[@]}" "$work/perf.data" "$bin" /usr/lib/debug /usr/bin/objdump
    cold perf_annotate_cold perf annotate -i "$work/perf.data" --stdio -s "$func"
} > "$work/cold"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "warm runs (median of $rounds; wall s, CPU s):"
column -t "$work/times"
echo "cold runs (files dropped from the page cache, empty DWARF and symbol caches; one run; wall s, CPU s):"
column -t "$work/cold"
mode=$([ "${SYSTEM:-0}" = 1 ] && echo "system-wide" || echo "one command")
cat "$work/times" "$work/cold" | awk -v mode="$mode" '{ w[$1] = $2; c[$1] = $3 } END {
    printf "\nrecordings: %s\n", mode
    printf "hood inline cost: %.2fx the CPU of --no-inline\n", c["hood_inline"] / c["hood_noinline"]
    printf "perf report --inline / hood report (inline, lines):  %.1fx CPU, %.1fx wall (cold: %.1fx CPU, %.1fx wall)\n", c["perf_inline"] / c["hood_inline"], w["perf_inline"] / w["hood_inline"], c["perf_inline_cold"] / c["hood_inline_cold"], w["perf_inline_cold"] / w["hood_inline_cold"]
    printf "perf report --inline / hood report without the symbol cache (reads DWARF):  %.1fx CPU, %.1fx wall\n", c["perf_inline"] / c["hood_inline_nosymcache"], w["perf_inline"] / w["hood_inline_nosymcache"]
    if ("perf_srcline" in c)
        printf "perf report --sort srcline / hood report --by line:  %.1fx CPU, %.1fx wall\n", c["perf_srcline"] / c["hood_lines"], w["perf_srcline"] / w["hood_lines"]
    printf "perf annotate --stdio / hood annotate:  %.1fx CPU, %.1fx wall (cold: %.1fx CPU, %.1fx wall)\n", c["perf_annotate"] / c["hood_annotate"], w["perf_annotate"] / w["hood_annotate"], c["perf_annotate_cold"] / c["hood_annotate_cold"], w["perf_annotate_cold"] / w["hood_annotate_cold"]
    printf "perf annotate --stdio / hood annotate --asm:  %.1fx CPU, %.1fx wall\n", c["perf_annotate"] / c["hood_annotate_asm"], w["perf_annotate"] / w["hood_annotate_asm"]
}'
echo
echo "hottest self entries, hood (inlined frames marked):"
"$hood" report -i "$work/hood.data" --width 0 | grep -E '^ +[0-9.]+%' | head -6
echo "hottest self entries, perf --inline (the leaf's inlined chain is printed under each entry):"
grep -E '^ +[0-9.]+%' "$work/perf_inline.out" | head -6
echo "hottest lines, hood --by line:"
"$hood" report -i "$work/hood.data" --width 0 --by line | grep -E '^ +[0-9.]+%' | head -5
if [ -s "$work/perf_srcline.out" ]; then
    echo "hottest lines, perf --sort srcline:"
    grep -E '^ +[0-9.]+%' "$work/perf_srcline.out" | head -5
fi
