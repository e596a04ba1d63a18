#!/bin/sh
# Recording cost of `hood top --record` vs `atop -w` at the same interval with ~600 processes
# (disk bytes per hour and recorder CPU, extrapolated from a shorter run, said so), and replay
# on a day-sized synthetic store: opening it and jumping to a minute, and a day of one
# process's CPU dumped to CSV. Prints the figures and the ratios.
#
# usage: bench/monitor/record.sh [path/to/hood]   (default: target/release/hood)
# env:   PROCS (600)  INTERVAL (5 s)  SAMPLES (60: 5 minutes)  DAY (17280 intervals of 5 s)
#        SYNTH (path of the synthetic_store example; built with cargo when unset)
set -eu
HOOD=${1:-${CARGO_TARGET_DIR:-target}/release/hood}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/synthetic-store.sh"
exec python3 "$HERE/record.py" "$HOOD" "$SYNTH" "${PROCS:-600}" "${INTERVAL:-5}" "${SAMPLES:-60}" "${DAY:-17280}"
