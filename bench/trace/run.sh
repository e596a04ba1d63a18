#!/bin/sh
# Cost per recorded event of `hood trace record` versus `uftrace record`, on the same
# -finstrument-functions binary, in one run. Prints ns per event above the plain run for the
# bare runtime hooks (LD_PRELOAD in trace mode, nothing collected) and end to end (record +
# write the file) for hood and uftrace, and the ratio. Usage: bench/trace/run.sh [N] (fib(N))
# Each figure is given twice: by wall-clock time and by CPU time (user + sys of the command and
# its children), both best of 5; on a loaded VM the wall figures include time the CPU was taken
# away, so compare the CPU ones. "warm 1 MiB ring" runs the hooks with a 65,536-event buffer in
# --full wrap mode: the hook path alone, without the first-touch cost of fresh buffer pages.
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

best() { # best of 5 wall-clock and CPU seconds of "$@" (segments removed between runs)
    python3 - "$SHM" "$@" <<'PY'
import subprocess, sys, time, os, glob
work, cmd = sys.argv[1], sys.argv[2:]
wall = cpu = 1e9
for _ in range(5):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)
    _, status, ru = os.wait4(p.pid, 0)
    wall = min(wall, time.perf_counter() - t)
    if status != 0:
        sys.exit(f"{cmd[0]} failed (wait status {status})")
    # wait4 counts the command and the children it waited for (the recorders' programs).
    cpu = min(cpu, ru.ru_utime + ru.ru_stime)
    for f in glob.glob(os.path.join(work, "hood-rt-*")):
        os.unlink(f)
print(wall, cpu)
PY
}

plain=$(best "$WORK/fib_plain" "$N")
stub=$(best "$WORK/fib" "$N")
hooks=$(HOOD_SHM_DIR=$SHM HOOD_MODE=trace HOOD_TRACE_BUFFER=$BUF LD_PRELOAD=$LIB best "$WORK/fib" "$N")
ring=$(HOOD_SHM_DIR=$SHM HOOD_MODE=trace HOOD_TRACE_BUFFER=65536 HOOD_TRACE_FULL=wrap LD_PRELOAD=$LIB best "$WORK/fib" "$N")
hood=$(HOOD_RT_LIB=$LIB HOOD_SHM_DIR=$SHM best "$HOOD" trace record --buffer "$BUF" -o "$WORK/t.data" -- "$WORK/fib" "$N")
"$HOOD" trace report "$WORK/t.data" -n 3 2>&1 | head -3
if command -v uftrace >/dev/null; then
    uft=$(cd "$WORK" && best uftrace record -d "$WORK/uftrace.data" "$WORK/fib" "$N")
else
    uft=""
fi
python3 - "$EVENTS" "$plain" "$stub" "$hooks" "$ring" "$hood" "$uft" <<'PY'
import sys
ev = int(sys.argv[1])
plain, stub, hooks, ring, hood = (tuple(map(float, a.split())) for a in sys.argv[2:7])
uft = tuple(map(float, sys.argv[7].split())) if sys.argv[7] else None
ns = lambda t, i: (t[i] - plain[i]) * 1e9 / ev
def line(name, t):
    print(f"  {name:<40} {t[0]*1e3:8.1f} ms {ns(t, 0):6.1f} ns/event"
          f"  {t[1]*1e3:8.1f} ms {ns(t, 1):6.1f} ns/event")
print(f"fib: {ev} events ({ev//2} calls); best of 5 runs each"
      f"{'wall clock':>21}{'CPU (user+sys)':>29}")
print(f"  {'plain (no -finstrument-functions)':<40} {plain[0]*1e3:8.1f} ms"
      f"{'':>17}{plain[1]*1e3:8.1f} ms")
line("glibc empty hooks", stub)
line("hood-rt trace hooks (LD_PRELOAD only)", hooks)
line("hood-rt trace hooks, warm 1 MiB ring", ring)
line("hood trace record (end to end)", hood)
if uft is not None:
    line("uftrace record (end to end)", uft)
    for i, what in ((0, "wall"), (1, "CPU")):
        print(f"  ratio uftrace/hood per event ({what}): hooks {ns(uft, i)/ns(hooks, i):.2f}x,"
              f" end to end {ns(uft, i)/ns(hood, i):.2f}x")
else:
    print("  uftrace not installed (apt-get install uftrace) - no comparison")
PY
