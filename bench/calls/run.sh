#!/bin/sh
# Per-call CPU cost of the hood-rt hooks versus `uftrace record`, on the same -finstrument-functions
# binary, in one run. Prints ns per instrumented call (entry+exit) above the plain run and the
# ratio, and what the runtime costs when disabled (HOOD_DISABLE=1) above glibc's empty hooks.
# It also measures one TSC read (clock.c): the hooks read the clock once each, so empty hooks
# plus two reads is the floor for any runtime that times both ends of every call.
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
gcc -O2 "$HERE/clock.c" -o "$WORK/clock"
# calls = 2*fib(N+1) - 1
CALLS=$(python3 -c "a,b=0,1
for _ in range($N+1): a,b=b,a+b
print(2*a-1)")

best() { # least CPU time (user + system, the command and the children it waited for) of 5 runs
    python3 - "$@" <<'PY'
import os, subprocess, sys
best = 1e9
for _ in range(5):
    p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"{sys.argv[1]} failed: wait status {status}")
    best = min(best, ru.ru_utime + ru.ru_stime)
print(best)
PY
}

rdtsc=$("$WORK/clock")   # ns per TSC read on this CPU
plain=$(best "$WORK/fib_plain" "$N")
stub=$(best "$WORK/fib" "$N")   # glibc's empty __cyg_profile_func_* stubs
hood=$(HOOD_SHM_DIR=$WORK LD_PRELOAD=$LIB best "$WORK/fib" "$N")
off=$(HOOD_DISABLE=1 HOOD_SHM_DIR=$WORK LD_PRELOAD=$LIB best "$WORK/fib" "$N")
if command -v uftrace >/dev/null; then
    uft=$(cd "$WORK" && best uftrace record -d "$WORK/uftrace.data" "$WORK/fib" "$N")
else
    uft=""
fi
python3 - "$CALLS" "$plain" "$stub" "$hood" "$off" "$rdtsc" "$uft" <<'PY'
import sys
calls, plain, stub, hood, off, rdtsc = int(sys.argv[1]), *map(float, sys.argv[2:7])
uft = float(sys.argv[7]) if sys.argv[7] else None
ns = lambda t: (t - plain) * 1e9 / calls
print(f"fib: {calls} instrumented calls; least CPU time of 5 runs each")
print(f"  plain (no -finstrument-functions)  {plain*1e3:8.1f} ms")
print(f"  glibc empty hooks                  {stub*1e3:8.1f} ms  {ns(stub):6.1f} ns/call")
print(f"  hood-rt (LD_PRELOAD)               {hood*1e3:8.1f} ms  {ns(hood):6.1f} ns/call")
print(f"  hood-rt, HOOD_DISABLE=1            {off*1e3:8.1f} ms  {ns(off):6.1f} ns/call"
      f"  ({ns(off) - ns(stub):+.1f} above glibc's empty hooks; target <= 2)")
floor = ns(stub) + 2 * rdtsc
print(f"  one rdtsc on this CPU              {rdtsc:6.2f} ns (100 M back-to-back reads, best of 5)")
print(f"  floor for timing both ends of every call: empty hooks + 2 rdtsc = {floor:.1f} ns/call;"
      f" hood-rt is {ns(hood) - floor:+.1f} ns/call above it (target <= 20 ns/call in all)")
if uft is not None:
    print(f"  uftrace record                     {uft*1e3:8.1f} ms  {ns(uft):6.1f} ns/call")
    print(f"  ratio uftrace/hood per call: {ns(uft)/ns(hood):.2f}x")
else:
    print("  uftrace not installed (apt-get install uftrace) - no comparison")
PY
