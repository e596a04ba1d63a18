#!/bin/sh
# Replay of a day's monitor store: a day of one process's CPU to CSV through the per-process
# index (and through whole snapshots, as a store without the index reads), and opening the
# store and jumping to a random minute; beside atop answering the same question from its raw
# log (`atop -r LOG -P PRC`, the day's cost extrapolated from a shorter log, said so).
# Prints the figures and the ratios.
#
# usage: bench/monitor/replay.sh [path/to/hood]   (default: target/release/hood)
# env:   PROCS (600)  DAY (17280 intervals of STEP 5 s)  WHOLE_HOURS (1: hours of the store
#        without the index dumped, extrapolated to the day)  ATOP_SAMPLES (60 of 1 s)
#        SYNTH (path of the synthetic_store example; built with cargo when unset)
set -eu
HOOD=${1:-${CARGO_TARGET_DIR:-target}/release/hood}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/synthetic-store.sh"
exec python3 "$HERE/replay.py" "$HOOD" "$SYNTH" "${PROCS:-600}" "${DAY:-17280}" "${STEP:-5}" \
    "${WHOLE_HOURS:-1}" "${ATOP_SAMPLES:-60}"
