#!/bin/sh
# Per-call cost of the hood-rt hooks versus `uftrace record`, on the same -finstrument-functions
# binary, in one run. Prints ns per instrumented call (entry+exit) above the plain run and the
# ratio, and what the runtime costs when disabled (HOOD_DISABLE=1) above glibc's empty hooks.
# Usage: bench/calls/run.sh [N]   (fib(N); default 30 ≈ 2.7 M calls)
set -eu
N=${1:-30}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$ROOT" && cargo build --release -q -p hood-rt)
LIB=$TARGET/release/libhood_rt.so
gcc -O2 -finstrument-functions "$HERE/fib.c" -o "$WORK/fib"
gcc -O2 "$HERE/fib.c" -o "$WORK/fib_plain"
# calls = 2*fib(N+1) - 1
CALLS=$(python3 -c "a,b=0,1
for _ in range($N+1): a,b=b,a+b
print(2*a-1)")

best() { # best of 5 wall-clock seconds of "$@"
    python3 - "$@" <<'PY'
import subprocess, sys, time, os
best = 1e9
for _ in range(5):
    t = time.perf_counter()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=os.environ)
    best = min(best, time.perf_counter() - t)
print(best)
PY
}

plain=$(best "$WORK/fib_plain" "$N")
stub=$(best "$WORK/fib" "$N")   # glibc's empty __cyg_profile_func_* stubs
hood=$(HOOD_SHM_DIR=$WORK LD_PRELOAD=$LIB best "$WORK/fib" "$N")
off=$(HOOD_DISABLE=1 HOOD_SHM_DIR=$WORK LD_PRELOAD=$LIB best "$WORK/fib" "$N")
if command -v uftrace >/dev/null; then
    uft=$(cd "$WORK" && best uftrace record -d "$WORK/uftrace.data" "$WORK/fib" "$N")
else
    uft=""
fi
python3 - "$CALLS" "$plain" "$stub" "$hood" "$off" "$uft" <<'PY'
import sys
calls, plain, stub, hood, off = int(sys.argv[1]), *map(float, sys.argv[2:6])
uft = float(sys.argv[6]) if sys.argv[6] else None
ns = lambda t: (t - plain) * 1e9 / calls
print(f"fib: {calls} instrumented calls; best of 5 runs each")
print(f"  plain (no -finstrument-functions)  {plain*1e3:8.1f} ms")
print(f"  glibc empty hooks                  {stub*1e3:8.1f} ms  {ns(stub):6.1f} ns/call")
print(f"  hood-rt (LD_PRELOAD)               {hood*1e3:8.1f} ms  {ns(hood):6.1f} ns/call")
print(f"  hood-rt, HOOD_DISABLE=1            {off*1e3:8.1f} ms  {ns(off):6.1f} ns/call"
      f"  ({ns(off) - ns(stub):+.1f} above glibc's empty hooks; target <= 2)")
if uft is not None:
    print(f"  uftrace record                     {uft*1e3:8.1f} ms  {ns(uft):6.1f} ns/call")
    print(f"  ratio uftrace/hood per call: {ns(uft)/ns(hood):.2f}x")
else:
    print("  uftrace not installed (apt-get install uftrace) - no comparison")
PY
