#!/bin/sh
# hood diff --reconcile (issue 28, item 4) on real C code nobody here wrote: bzip2 1.0.8, built
# from the sources the bzip2-sys crate bundles (fetched as bench/calls/real.sh fetches them)
# with `-O2 -g -finstrument-functions -fno-omit-frame-pointer`, compressing 4 MiB of generated
# text. Both profilers in one run: `hood record --off-cpu -F 2999 -- hood calls run -- bzip2`.
# Prints the reconciliation table (per function over 5 %: the call share, the statistical
# share and the breakdown of their difference) and the closing count; never pass/fail.
# Needs root (off-CPU tracepoints) and gcc.
# Measured 2026-11-26 (2 vCPUs at a load of 5, debug hood): 2 of 6 functions over 5 % agree
# within 2 points (mainGtU 15.3/17.0, sendMTFValues 5.8/4.1); mainSimpleSort 19.7/7.5,
# mainSort 16.4/21.7, mainQSort3 26.1/29.6, generateMTFValues 10.9/14.2. The hooks are 47.5
# points of the sampled time under mainGtU alone (millions of calls of a few instructions):
# the call profile's compensation takes a calibrated cost per call out, and what it misses
# lands in mainSimpleSort, the caller timed around each mainGtU hook (Meurs's case of the
# profiler's own cost in small functions). Run at another load, the split moves: the sums of
# a caller and its tiny callee agree better than each.
# Usage: bench/diff/reconcile.sh        HOOD=path/to/hood uses that binary (and the
# libhood_rt.so beside it, or $HOOD_RT_LIB) instead of building the release ones.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -z "${HOOD:-}" ]; then
    (cd "$ROOT" && cargo build --release -q -p hood-rt -p hood)
    HOOD=$TARGET/release/hood
    export HOOD_RT_LIB=$TARGET/release/libhood_rt.so
fi
export HOOD_SHM_DIR=$WORK

. "$ROOT/bench/lib/c-sources.sh"
BZ=$(crate_dirs "$WORK" bzip2-sys=0.1.13 | awk '$1 == "bzip2-sys" {print $2}')/bzip2-1.0.8
gcc -O2 -g -finstrument-functions -fno-omit-frame-pointer -w -o "$WORK/bzip2" \
    "$BZ/bzip2.c" "$BZ/blocksort.c" "$BZ/huffman.c" "$BZ/crctable.c" "$BZ/randtable.c" \
    "$BZ/compress.c" "$BZ/decompress.c" "$BZ/bzlib.c"
text_file "$WORK/text" 4
echo "load average before: $(cut -d' ' -f1 /proc/loadavg)"
"$HOOD" record --off-cpu -F 2999 -o "$WORK/prof.data" -- \
    "$HOOD" calls run -o "$WORK/calls.data" -- "$WORK/bzip2" -c -k "$WORK/text" > /dev/null
"$HOOD" diff --reconcile "$WORK/calls.data" "$WORK/prof.data" --width 0 --top 12
echo "load average after: $(cut -d' ' -f1 /proc/loadavg)"
