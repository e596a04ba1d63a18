#!/bin/sh
# Cost per recorded event of `hood trace record` versus `uftrace record`, on the same
# -finstrument-functions binary, in one run. Prints ns per event above the plain run for the
# bare runtime hooks (LD_PRELOAD in trace mode, nothing collected) and end to end (record +
# write the file) for hood and uftrace, and the ratio. Usage: bench/trace/run.sh [N] (fib(N))
set -eu
N=${1:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
SHM=$(mktemp -d -p /dev/shm)   # segments must live on tmpfs, as in normal use
trap 'rm -rf "$WORK" "$SHM"' EXIT
(cd "$ROOT" && cargo build --release -q -p hood-rt -p hood)
LIB=$TARGET/release/libhood_rt.so
HOOD=$TARGET/release/hood
gcc -O2 -finstrument-functions "$HERE/../calls/fib.c" -o "$WORK/fib"
gcc -O2 "$HERE/../calls/fib.c" -o "$WORK/fib_plain"
CALLS=$(python3 -c "a,b=0,1
for _ in range($N+1): a,b=b,a+b
print(2*a-1)")
EVENTS=$((2 * CALLS + 2))
BUF=$((EVENTS + 1024))

best() { # best of 5 wall-clock seconds of "$@" (segments removed between runs)
    python3 - "$SHM" "$@" <<'PY'
import subprocess, sys, time, os, glob
work, cmd = sys.argv[1], sys.argv[2:]
best = 1e9
for _ in range(5):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=os.environ)
    best = min(best, time.perf_counter() - t)
    for f in glob.glob(os.path.join(work, "hood-rt-*")):
        os.unlink(f)
print(best)
PY
}

plain=$(best "$WORK/fib_plain" "$N")
stub=$(best "$WORK/fib" "$N")
hooks=$(HOOD_SHM_DIR=$SHM HOOD_MODE=trace HOOD_TRACE_BUFFER=$BUF LD_PRELOAD=$LIB best "$WORK/fib" "$N")
hood=$(HOOD_RT_LIB=$LIB HOOD_SHM_DIR=$SHM best "$HOOD" trace record --buffer "$BUF" -o "$WORK/t.data" -- "$WORK/fib" "$N")
"$HOOD" trace report "$WORK/t.data" -n 3 2>&1 | head -3
if command -v uftrace >/dev/null; then
    uft=$(cd "$WORK" && best uftrace record -d "$WORK/uftrace.data" "$WORK/fib" "$N")
else
    uft=""
fi
python3 - "$EVENTS" "$plain" "$stub" "$hooks" "$hood" "$uft" <<'PY'
import sys
ev, plain, stub, hooks, hood = int(sys.argv[1]), *map(float, sys.argv[2:6])
uft = float(sys.argv[6]) if sys.argv[6] else None
ns = lambda t: (t - plain) * 1e9 / ev
print(f"fib: {ev} events ({ev//2} calls); best of 5 runs each")
print(f"  plain (no -finstrument-functions)      {plain*1e3:8.1f} ms")
print(f"  glibc empty hooks                      {stub*1e3:8.1f} ms  {ns(stub):6.1f} ns/event")
print(f"  hood-rt trace hooks (LD_PRELOAD only)  {hooks*1e3:8.1f} ms  {ns(hooks):6.1f} ns/event")
print(f"  hood trace record (end to end)         {hood*1e3:8.1f} ms  {ns(hood):6.1f} ns/event")
if uft is not None:
    print(f"  uftrace record (end to end)            {uft*1e3:8.1f} ms  {ns(uft):6.1f} ns/event")
    print(f"  ratio uftrace/hood per event: hooks {ns(uft)/ns(hooks):.2f}x, end to end {ns(uft)/ns(hood):.2f}x")
else:
    print("  uftrace not installed (apt-get install uftrace) - no comparison")
PY
