#!/bin/sh
# hood serve's costs, measured against their peers in one run:
#  1. CPU per /metrics scrape (server threads' CPU) at ~PROCS processes, alternating rounds,
#     against (a) a `hood top -b -m e` refresh (startup excluded), which reads the same /proc
#     files with the same reader (every process's stat, or schedstat when it did not run, and
#     the interrupt tables), and (b) a scrape of prometheus-process-exporter (every process
#     grouped by name, no threads) when it is installed; prints each and the ratios (the
#     default `hood top -b` refresh, which skips the interrupt tables, for reference);
#  2. CPU of /debug/pprof/profile?seconds=SECS (server plus its recorder child) vs
#     `hood record -a -d SECS` alone; prints the difference as a share of one CPU.
# The load average is printed before and after: run it on a quiet machine.
#
# usage: bench/serve/run.sh [path/to/hood]   (default: target/release/hood)
# env:   SCRAPES (100)  DELAY (0.2 s)  PROCS (600)  ROUNDS (3)  SECS (10)  PROFILES (2)
set -eu
HOOD=${1:-${CARGO_TARGET_DIR:-target}/release/hood}
HERE=$(cd "$(dirname "$0")" && pwd)
exec python3 "$HERE/bench.py" "$HOOD" "${SCRAPES:-100}" "${DELAY:-0.2}" "${PROCS:-600}" \
    "${ROUNDS:-3}" "${SECS:-10}" "${PROFILES:-2}"
