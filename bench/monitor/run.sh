#!/bin/sh
# CPU time per refresh of `hood top -b` (the task view, which reads each process's cgroup) vs
# `top -b` vs btop at ~600 processes, hood vs `top -b` again at BIG processes, and resident
# memory of `hood top` there. Prints the figures and the ratios.
#
# usage: bench/monitor/run.sh [path/to/hood]   (default: target/release/hood)
# env:   FRAMES (20)  DELAY (0.2 s)  PROCS (600)  BIG (2000)
set -eu
HOOD=${1:-${CARGO_TARGET_DIR:-target}/release/hood}
FRAMES=${FRAMES:-20}
DELAY=${DELAY:-0.2}
PROCS=${PROCS:-600}
BIG=${BIG:-2000}
HERE=$(cd "$(dirname "$0")" && pwd)
exec python3 "$HERE/bench.py" "$HOOD" "$FRAMES" "$DELAY" "$PROCS" "$BIG"
