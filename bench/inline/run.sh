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
# usage: bench/inline/run.sh [SECONDS]   (default 10 s of recording each; ROUNDS=5 reports)
# env:   HOOD  hood binary (default: build target/release/hood)   KEEP=1  keep the temp dir
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
secs=${1:-10}
rounds=${ROUNDS:-5}
work=$(mktemp -d /tmp/hood-inline.XXXXXX)
trap '[ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"' EXIT
export PATH=$PATH:$HOME/.cargo/bin
if [ -z "${HOOD:-}" ]; then
    cargo build --release -q -p hood
    HOOD=${CARGO_TARGET_DIR:-target}/release/hood
fi
hood=$(realpath "$HOOD")

mkdir -p "$work/btree/src"
cp "$ROOT/bench/unwind/btree.rs" "$work/btree/src/main.rs"
printf '[package]\nname = "btree"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n\n[profile.release]\ndebug = true\n' > "$work/btree/Cargo.toml"
(cd "$work/btree" && CARGO_TARGET_DIR="$work/btree/target" RUSTFLAGS="-C force-frame-pointers=yes" cargo build --release -q --offline)
bin="$work/btree/target/release/btree"
# Units: about 0.056 s of CPU each on this kind of core (bench/unwind).
units=$(awk -v s="$secs" 'BEGIN { u = int(s / 0.056 + 0.5); print (u < 1 ? 1 : u) }')

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$hood" record -F 999 --call-graph fp -o "$work/hood.data" -- "$bin" "$units" > /dev/null 2> "$work/hood.rec.log"
perf record -q -N -F 999 -g -o "$work/perf.data" -- "$bin" "$units" > /dev/null 2> "$work/perf.rec.log" ||
    perf record -q -N -B -F 999 -g -o "$work/perf.data" -- "$bin" "$units" > /dev/null 2> "$work/perf.rec.log"

# Median wall and CPU seconds (task-clock, children included) of a command over $rounds runs
# (one warm-up run first).
measure() { # measure NAME CMD... -> "NAME wall cpu"
    local name=$1; shift
    "$@" > "$work/$name.out" 2> /dev/null || true
    local walls=() cpus=()
    for _ in $(seq "$rounds"); do
        local t0 t1
        t0=$(date +%s.%N)
        # task-clock of the command and its children (perf's addr2line helpers), in ms.
        perf stat -x, -e task-clock -o "$work/stat" -- "$@" > /dev/null 2>&1 || true
        t1=$(date +%s.%N)
        walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')")
        cpus+=("$(awk -F, '/task-clock/ { printf "%.4f", $1 / 1000 }' "$work/stat")")
    done
    local mw mc
    mw=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    mc=$(printf '%s\n' "${cpus[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "$name $mw $mc"
}
{
    measure hood_inline "$hood" report -i "$work/hood.data" --width 0
    measure hood_noinline "$hood" report -i "$work/hood.data" --width 0 --no-inline
    measure hood_lines "$hood" report -i "$work/hood.data" --width 0 --by line
    measure perf_inline perf report -i "$work/perf.data" --stdio --no-children --inline
    measure perf_noinline perf report -i "$work/perf.data" --stdio --no-children --no-inline
    measure perf_srcline perf report -i "$work/perf.data" --stdio --no-children --sort srcline
} > "$work/times"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "report times (median of $rounds warm runs; wall s, CPU s):"
column -t "$work/times"
awk '{ w[$1] = $2; c[$1] = $3 } END {
    printf "\nhood inline cost: %.2fx the CPU of --no-inline\n", c["hood_inline"] / c["hood_noinline"]
    printf "perf report --inline / hood report (inline, lines):  %.1fx CPU, %.1fx wall\n", c["perf_inline"] / c["hood_inline"], w["perf_inline"] / w["hood_inline"]
    printf "perf report --sort srcline / hood report --by line:  %.1fx CPU, %.1fx wall\n", c["perf_srcline"] / c["hood_lines"], w["perf_srcline"] / w["hood_lines"]
}' "$work/times"
echo
echo "hottest self entries, hood (inlined frames marked):"
"$hood" report -i "$work/hood.data" --width 0 | grep -E '^ +[0-9.]+%' | head -6
echo "hottest self entries, perf --inline (the leaf's inlined chain is printed under each entry):"
grep -E '^ +[0-9.]+%' "$work/perf_inline.out" | head -6
echo "hottest lines, hood --by line:"
"$hood" report -i "$work/hood.data" --width 0 --by line | grep -E '^ +[0-9.]+%' | head -5
echo "hottest lines, perf --sort srcline:"
grep -E '^ +[0-9.]+%' "$work/perf_srcline.out" | head -5
