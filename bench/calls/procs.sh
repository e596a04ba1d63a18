#!/bin/sh
# What hood calls and hood trace cost per process started, beside uftrace: a driver
# (bench/calls/forks.c) starts bzip2 1.0.8 (built from the bzip2-sys crate's sources) N times,
# one after another, each compressing a 16 KiB file: a workload of many short processes, as a
# build, a test suite or a shell script is. Everything is built with -O2 -g
# -finstrument-functions, so every process loads the recorder's runtime. Per configuration,
# least of ROUNDS interleaved runs: wall time and the CPU time of the whole tree (recorder and
# programs, bench/trace/cpu_of.c), the cost above the uninstrumented run per process, and that
# cost as a ratio of uftrace's.
# HOOD_BEFORE=path/to/an/older/hood (with HOOD_BEFORE_RT=its libhood_rt.so) runs that build in
# the same rounds, to measure a change before and after.
# Not a pass/fail test: on a shared machine the figures move with the load (printed).
# 2026-11-28 (load 1.0-1.2, `bench/calls/procs.sh 200 3`, HOOD_BEFORE = 5a244f7): ms of tree
# CPU per process, ratio to uftrace's 10.16: calls 7.49 (0.74) -> 5.39 (0.53), trace 9.64
# (0.95) -> 6.71 (0.66), after the runtime stopped spinning 2 ms per process to measure the TSC
# (HOOD_TSC_HZ), the recorders stopped listing every finished segment at each round, and
# trace record gave finished processes' rings back. docs/calls.md has the table.
# Usage: bench/calls/procs.sh [N] [ROUNDS]   (defaults 200 and 3)
# HOOD=path/to/hood uses that binary (and the libhood_rt.so beside it, or $HOOD_RT_LIB).
set -eu
N=${1:-200}
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/bench/lib/hood.sh"
bench_init
command -v uftrace >/dev/null || { echo "uftrace is not installed (apt-get install uftrace)" >&2; exit 1; }
. "$ROOT/bench/lib/c-sources.sh"
BZ=$(crate_dirs "$WORK" bzip2-sys=0.1.13 | awk '{print $2}')/bzip2-1.0.8
gcc -O2 -g -w -o "$WORK/plain-bzip2" $(bzip2_sources "$BZ")
gcc -O2 -g -w -finstrument-functions -o "$WORK/instr-bzip2" $(bzip2_sources "$BZ")
gcc -O2 -g -o "$WORK/plain-forks" "$HERE/forks.c"
gcc -O2 -g -finstrument-functions -o "$WORK/instr-forks" "$HERE/forks.c"
gcc -O2 "$ROOT/bench/trace/cpu_of.c" -o "$WORK/cpu_of"
text_file "$WORK/text" 1
head -c 16384 "$WORK/text" > "$WORK/small"

python3 - "$N" "$ROUNDS" "$WORK" "$HOOD" "${HOOD_BEFORE:-}" "${HOOD_BEFORE_RT:-}" "$ROOT" <<'PY'
import os, sys
n, rounds, work, hood, before, before_rt, root = sys.argv[1:8]
sys.path.insert(0, os.path.join(root, "bench", "lib"))
from runs import run_tree
n, rounds = int(n), int(rounds)
tree_file = os.path.join(work, "tree.cpu")
cpu_of = os.path.join(work, "cpu_of")
def prog(kind):
    return [os.path.join(work, f"{kind}-forks"), str(n), os.path.join(work, f"{kind}-bzip2"),
            "-c", "-k", os.path.join(work, "small")]
instr = prog("instr")
configs = [
    ("uninstrumented", prog("plain"), None),
    ("hood calls run", [hood, "calls", "run", "-o", os.path.join(work, "c.data"), "--"] + instr, None),
    ("hood trace record", [hood, "trace", "record", "-o", os.path.join(work, "t.data"), "--"] + instr, None),
    ("uftrace record", ["uftrace", "record", "--force", "-d", os.path.join(work, "uftrace.data")] + instr, None),
]
if before:
    configs += [
        ("before: calls run", [before, "calls", "run", "-o", os.path.join(work, "c.data"), "--"] + instr, before_rt),
        ("before: trace record", [before, "trace", "record", "-o", os.path.join(work, "t.data"), "--"] + instr, before_rt),
    ]
print(f"load average before: {os.getloadavg()[0]:.2f}")
best = {}
for _ in range(rounds):
    for label, argv, lib in configs:
        env = dict(os.environ)
        if lib:
            env["HOOD_RT_LIB"] = lib
        wall, tree = run_tree(cpu_of, tree_file, argv, env, work, label)
        w, t = best.get(label, (1e9, 1e9))
        best[label] = (min(w, wall), min(t, tree))
base_w, base_t = best["uninstrumented"]
uft_w, uft_t = best["uftrace record"]
print(f"{n} processes (bzip2 of 16 KiB each, started by an instrumented driver); least of "
      f"{rounds} runs; cost = above the uninstrumented run; ratio = cost / uftrace's cost")
print(f"  {'':22} {'wall s':>8} {'tree CPU s':>10} {'ms/process':>10} {'wall ratio':>10} {'CPU ratio':>9}")
for label, _, _ in configs:
    w, t = best[label]
    print(f"  {label:22} {w:8.3f} {t:10.3f} {(t - base_t) * 1e3 / n:10.2f} "
          f"{(w - base_w) / (uft_w - base_w):10.2f} {(t - base_t) / (uft_t - base_t):9.2f}")
print(f"load average after: {os.getloadavg()[0]:.2f}")
PY
