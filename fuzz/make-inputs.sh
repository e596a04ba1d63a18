#!/usr/bin/env bash
# Make the starting corpora under fuzz/inputs/TARGET/ from files hood writes on this machine:
# a recording (with --labels when root), call-path tables and their segments, a trace and its
# segments, perf.data files written by perf (when it is installed), and /proc files. Needs gcc,
# a debug build of hood and a release build of hood-rt.
# Usage: fuzz/make-inputs.sh   (from anywhere; replaces fuzz/inputs/)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
cargo build -q -p hood
cargo build -q --release -p hood-rt
hood=$repo/target/debug/hood
export HOOD_RT_LIB=$repo/target/release/libhood_rt.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O1 -g -fno-omit-frame-pointer -o "$work/spinner" tests/c/spinner.c
for p in calls_known trace_known; do
    gcc -O2 -g -finstrument-functions -o "$work/$p" "tests/c/$p.c"
done
in=$work/in
mkdir -p "$in" "$work/shm"
"$hood" record -F 499 -o "$in/record.hood" -- "$work/spinner" 300 2>/dev/null || true
"$hood" record -F 499 --call-graph fp -o "$in/record-fp.hood" -- "$work/spinner" 200 2>/dev/null || true
if [ "$(id -u)" = 0 ]; then
    "$hood" record --labels -a -F 99 -d 0.3 -o "$in/labels.hood" 2>/dev/null || true
fi
HOOD_SHM_DIR=$work/shm "$hood" calls run --keep -o "$in/calls.hood" -- "$work/calls_known" >/dev/null 2>&1 || true
HOOD_SHM_DIR=$work/shm "$hood" trace record -o "$in/trace.hood" -- "$work/trace_known" >/dev/null 2>&1 || true
# Segments, small (few threads, paths and events) so that whole images fit a corpus.
mkdir -p "$work/seg"
HOOD_SHM_DIR=$work/seg HOOD_MAX_THREADS=2 HOOD_MAX_PATHS=64 LD_PRELOAD=$HOOD_RT_LIB \
    "$work/calls_known" >/dev/null
HOOD_SHM_DIR=$work/seg HOOD_MODE=trace HOOD_TRACE_BUFFER=256 HOOD_MAX_THREADS=2 \
    LD_PRELOAD=$HOOD_RT_LIB "$work/trace_known" >/dev/null
for f in "$work"/seg/hood-rt-*; do
    size=$(stat -c %s "$f")
    if [ "$size" -le 1048576 ]; then cp "$f" "$in/"; else echo "make-inputs: $f is $size bytes; left out"; fi
done
for f in stat status io cmdline maps auxv; do cat "/proc/self/$f" > "$in/$f" 2>/dev/null || true; done
for f in meminfo loadavg uptime interrupts softirqs cpuinfo; do cat "/proc/$f" > "$in/$f"; done
cat /proc/stat > "$in/proc_stat"
# perf.data in both layouts, with one event, two events by id, a group read and stack copies;
# short runs at a low rate keep them small.
if command -v perf >/dev/null; then
    pr() { perf record -q -B -F 49 "$@" -- "$work/spinner" 150 >/dev/null 2>&1 || true; }
    pr -g -o "$in/perf-fp.data"
    pr --call-graph dwarf,256 -o "$in/perf-dwarf.data"
    pr -e cpu-clock,task-clock -g -o "$in/perf-two.data"
    pr -e '{cpu-clock,task-clock}:S' -o "$in/perf-group.data"
    perf record -q -B -F 49 -g -o - -- "$work/spinner" 150 > "$in/perf-pipe.data" 2>/dev/null || true
fi
cp /etc/passwd "$in/passwd"
rm -rf fuzz/inputs
(cd fuzz && cargo run -q --example inputs -- inputs "$in"/*)
# A JIT map, ELF images as the unwinder and the DWARF readers meet them (stripped; with
# debug sections compressed by zlib and by zstd) and text holding terminal escapes.
mkdir -p fuzz/inputs/perfmap fuzz/inputs/unwind fuzz/inputs/sanitizer
printf '7f0000001000 40 jit_fn_one\n7f0000001040 80 LazyCompile:*main /app.js:1\nbad line\n' \
    > fuzz/inputs/perfmap/map
gcc -O1 -s -o fuzz/inputs/unwind/spinner-stripped tests/c/spinner.c
gcc -O1 -g -gz=zlib -o fuzz/inputs/unwind/spinner-zlib tests/c/spinner.c
gcc -O1 -g -gz=zstd -o fuzz/inputs/unwind/spinner-zstd tests/c/spinner.c 2>/dev/null || true
printf 'name\033]0;title\007\r\nrow \302\2332J \342\200\256rev \377\376 plain' \
    > fuzz/inputs/sanitizer/escapes
du -sh fuzz/inputs/*
