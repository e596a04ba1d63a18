#!/bin/sh
# Cost of recording the traced threads' irq/softirq entries and exits in `hood trace record`
# (root only): the traced program's own CPU (user + sys, measured around it by cpu_of) with the
# irq tracepoints on versus HOOD_TRACE_IRQ=0, on tests/c/trace_irq.c (a loopback UDP flood:
# one NET_RX softirq inside every sendto() of the traced main thread). The difference divided
# by the irq records (entries + exits) is the cost per record as the program sees it, including
# the four extra per-task events switched in and out with every context switch of its threads.
# Usage: bench/trace/irq.sh [ROUNDS_OF_THE_PROGRAM [BENCH_ROUNDS]]   (default 100, 7)
set -eu
N=${1:-100}
ROUNDS=${2:-7}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$ROOT" && cargo build --release -q -p hood-rt -p hood)
export HOOD_RT_LIB=$TARGET/release/libhood_rt.so
HOOD=$TARGET/release/hood
gcc -O2 -finstrument-functions -pthread "$ROOT/tests/c/trace_irq.c" -o "$WORK/trace_irq"
gcc -O2 "$HERE/cpu_of.c" -o "$WORK/cpu_of"

python3 - "$N" "$ROUNDS" "$WORK" "$HOOD" <<'PY'
import os, re, subprocess, sys, statistics
n, rounds, work, hood = sys.argv[1:]
n, rounds = int(n), int(rounds)
prog_file = os.path.join(work, "prog.cpu")
data = os.path.join(work, "t.data")
cmd = [hood, "trace", "record", "-o", data, "--",
       os.path.join(work, "cpu_of"), prog_file, os.path.join(work, "trace_irq"), str(n)]

def run(env):
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=dict(os.environ, **env))
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        sys.exit(f"hood trace record failed:\n{err}")
    with open(prog_file) as f:
        prog = sum(map(float, f.read().split()))
    m = re.search(r"irqs: (\d+) hard irq and (\d+) softirq entries", err)
    lost = re.search(r"(\d+) irq records LOST", err)
    return prog, (int(m.group(1)) + int(m.group(2))) if m else None, int(lost.group(1)) if lost else 0

on, off, entries, lost = [], [], [], 0
load0 = os.getloadavg()
for _ in range(rounds):
    p, e, l = run({})
    if e is None:
        sys.exit("no irq line from hood trace record: run as root")
    on.append(p); entries.append(e); lost += l
    p, _, _ = run({"HOOD_TRACE_IRQ": "0"})
    off.append(p)
load1 = os.getloadavg()
a, b, e = statistics.median(on), statistics.median(off), statistics.median(entries)
print(f"trace_irq {n} ({2000*n} datagrams): median of {rounds} interleaved rounds;"
      f" load average {load0[0]:.2f} before, {load1[0]:.2f} after")
print(f"  program CPU with irq tracepoints   {a*1e3:8.1f} ms  ({e:.0f} irq entries, {2*e:.0f} records, {lost} lost)")
print(f"  program CPU, HOOD_TRACE_IRQ=0      {b*1e3:8.1f} ms")
print(f"  cost per irq record (entry or exit) {(a-b)*1e9/(2*e):7.0f} ns")
PY
