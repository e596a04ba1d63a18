#!/bin/sh
# hood calls and hood trace on real C code nobody here wrote, beside uftrace on the same build:
# bzip2 1.0.8 (compressing 1 MiB of generated text), PCRE2 (bench/calls/pcre2_drive.c: five
# patterns, no JIT, over the same text) and OpenSSL 3.6 (`openssl enc -aes-256-cbc -pbkdf2`
# with 500,000 PBKDF2 iterations, and `openssl dgst -sha256 -hmac`, of the same text), built
# from the sources the crates bzip2-sys, pcre2-sys and openssl-src bundle (fetched with `cargo
# fetch` of a throw-away crate) with `-O2 -g -finstrument-functions`. Per program it prints,
# least of ROUNDS runs each: the wall-clock time and the program's own CPU time
# (bench/trace/cpu_of.c) uninstrumented, with glibc's empty hooks, under `hood calls run`,
# `hood trace record` and `uftrace record`; the cost above the baseline; and that cost as a
# ratio of uftrace's. OpenSSL is built once, instrumented (its build takes most of an hour on
# two loaded cores): its baseline is glibc's empty hooks, so its cost is the recorders' own,
# above the hooks' calls. (`openssl speed` runs for a set time, so its cost is not a time; it
# is left out.)
# Not a pass/fail test: on a shared machine the figures move with the load (printed).
# 2026-11-27, issue 25 (hooks2528): after the calls hooks' common path was inlined, least of 3
# interleaved rounds at load 18-20, debug recorder with the release libhood_rt.so (HOOD,
# HOOD_RT_LIB), the old runtime in the same rounds; CPU cost above the uninstrumented run as a
# ratio of uftrace's (wall ratio in brackets):
#   bzip2  calls 0.27 (0.21), trace 0.32 (0.37); old runtime calls 0.37 (0.41), trace 0.32
#   pcre2  calls 0.08 (0.07), trace 0.09 (0.25); old runtime calls 0.11 (0.20), trace 0.09
# Per call, `hood calls` now costs less than `hood trace` on both (bzip2 0.079 against 0.095 s
# of program CPU, pcre2 0.070 against 0.080). Rerun at load 10-11 after the sibling link:
#   bzip2  calls 0.33 (0.47), trace 0.37 (1.39); uftrace's cost 0.271 s against 0.293 above
#   pcre2  calls 0.08 (0.10), trace 0.09 (0.34)
# openssl enc (OPENSSL_BUILD, load 15; baseline glibc's empty hooks): before the sibling link
# calls 0.36 (0.33), trace 0.25 (0.50); after it calls 0.24 (0.23), trace 0.25 (0.41): 1.23
# against 1.28 s of program CPU.
# Quiet rerun (load 0.9, release recorder and runtime, NO_OPENSSL=1, least of 3): CPU ratios
#   bzip2  calls 0.31 (wall 0.37), trace 0.37 (wall 1.27)
#   pcre2  calls 0.09 (wall 0.10), trace 0.09 (wall 0.37)
# After the hooks' dispatch became one load of a mode word and a jump to frame-less bodies
# (release recorder and runtime, NO_OPENSSL=1, least of 3, load 13.5, rdtsc 16.5-17.1 ns of
# CPU as printed): CPU ratios bzip2 calls 0.48, trace 0.45; pcre2 calls 0.11, trace 0.10. At
# that load two TSC reads per call are 0.27 of uftrace's bzip2 cost by themselves. Interleaved
# with the runtime before the change (7 rounds, load 12-13): bzip2 trace 0.122 -> 0.113 s,
# calls 0.128 -> 0.129 s; pcre2 0.107 -> 0.107 s (trace), 0.110 -> 0.112 s (calls).
# Stop 39 (release recorder and runtime, NO_OPENSSL=1, least of 3, load 3.8 with a helper's
# tests running, rdtsc 18.0-20.6 ns of CPU): CPU ratios bzip2 calls 0.42, trace 0.44 (0.135
# against 0.141 s of program CPU above the plain build); pcre2 calls 0.10, trace 0.12.
# 2026-11-28 (load 0.8-1.1, rdtsc 17.8-22.7 ns, least of 5): the whole tree (recorder and
# program, an outer cpu_of) is measured too, and both recorders run again with a runtime built
# with the `bench-clockless` feature (a counter in place of the TSC), which tells the clock's
# cost from the rest: bzip2 calls 0.37 (tree 0.29), trace 0.35 (tree 0.40); the two TSC reads
# of a call are 39 ns, 0.35 of uftrace's cost, the rest of the calls hooks 2.9 ns/call (0.03).
# docs/calls.md has the table.
# Rerun 2026-11-28 after HOOD_TSC_HZ and the recorder's per-process work (load 1.2-1.4, rdtsc
# 17.4-22.8 ns, least of 5): tree ratios bzip2 calls 0.38, trace 0.43; pcre2 0.11, 0.13 (run
# to run these move by ~0.05 at this load). docs/calls.md says why trace stays above 0.3.
# Usage: bench/calls/real.sh [ROUNDS]   (default 3)
# HOOD=path/to/hood uses that binary (and the libhood_rt.so beside it, or $HOOD_RT_LIB)
# instead of building the release ones. OPENSSL_BUILD=DIR keeps the OpenSSL build in DIR and
# reuses it when DIR/apps/openssl exists; NO_OPENSSL=1 leaves OpenSSL out.
set -eu
ROUNDS=${1:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/bench/lib/hood.sh"
bench_init
# The same runtime with a counter in place of the TSC (the `bench-clockless` feature), in its
# own target dir: its runs tell the hooks' cost without their two clock reads per call.
(cd "$ROOT" && CARGO_TARGET_DIR=$TARGET/bench-clockless \
    cargo build --release -q -p hood-rt --features bench-clockless)
CLOCKLESS=$TARGET/bench-clockless/release/libhood_rt.so
command -v uftrace >/dev/null || { echo "uftrace is not installed (apt-get install uftrace)" >&2; exit 1; }

# The C sources, as the crates ship them.
. "$ROOT/bench/lib/c-sources.sh"
REG=$(crate_dirs "$WORK" bzip2-sys=0.1.13 pcre2-sys=0.2.10 openssl-src=300.6.1+3.6.3)
BZ=$(echo "$REG" | awk '$1 == "bzip2-sys" {print $2}')/bzip2-1.0.8
PC=$(echo "$REG" | awk '$1 == "pcre2-sys" {print $2}')/upstream
OS=$(echo "$REG" | awk '$1 == "openssl-src" {print $2}')/openssl

build() { # NAME FLAGS...: both programs, into $WORK/NAME-bzip2 and $WORK/NAME-pcre2
    name=$1; shift
    gcc -O2 -g "$@" -w -o "$WORK/$name-bzip2" \
        $(bzip2_sources "$BZ")
    # As pcre2-sys builds it (its build.rs), without JIT.
    gcc -O2 -g "$@" -w -o "$WORK/$name-pcre2" -DPCRE2_CODE_UNIT_WIDTH=8 -DHAVE_CONFIG_H \
        -DPCRE2_STATIC -DSUPPORT_PCRE2_8 -DSUPPORT_UNICODE -DHAVE_STDLIB_H -DHAVE_MEMMOVE \
        -I"$PC/src" -I"$PC/include" -I"$PC/deps" "$HERE/pcre2_drive.c" \
        $(ls "$PC"/src/*.c | grep -v -e jit_compile -e jit_match -e jit_misc -e ucptables)
}
build plain
build instr -finstrument-functions
# OpenSSL's command-line tool, statically linked, instrumented, with its assembly (which the
# compiler does not instrument); the parts the commands below do not use are left out.
OPENSSL=
if [ "${NO_OPENSSL:-0}" != 1 ]; then
    OB=${OPENSSL_BUILD:-$WORK/openssl}
    if [ ! -x "$OB/apps/openssl" ]; then
        rm -rf "$OB"; mkdir -p "$OB"
        cp -r "$OS/." "$OB/"
        (cd "$OB" && perl ./Configure linux-x86_64 no-shared no-tests no-docs no-dso no-engine \
            no-legacy no-quic no-comp no-ssl3 no-ui-console no-makedepend \
            -O2 -g -finstrument-functions >configure.log 2>&1 &&
            make -j"$(nproc)" build_sw >make.log 2>&1) ||
            { echo "building OpenSSL failed: see $OB/make.log" >&2; exit 1; }
    fi
    OPENSSL=$OB/apps/openssl
fi
gcc -O2 "$ROOT/bench/trace/cpu_of.c" -o "$WORK/cpu_of"
gcc -O2 "$HERE/clock.c" -o "$WORK/clock"
text_file "$WORK/text" 1
# One TSC read (CPU time; it moves with the load): the hooks read it once per event, so two
# reads per call are the floor under any per-call figure below.
echo "rdtsc before: $("$WORK/clock" 20000000) ns"

python3 - "$ROUNDS" "$WORK" "$HOOD" "$OPENSSL" "$CLOCKLESS" "$ROOT" <<'PY'
import json, os, subprocess, sys
rounds, work, hood, openssl, clockless = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
sys.path.insert(0, os.path.join(sys.argv[6], "bench", "lib"))
from runs import run_tree
text = os.path.join(work, "text")
cpu_file = os.path.join(work, "prog.cpu")
tree_file = os.path.join(work, "tree.cpu")
cpu_of = os.path.join(work, "cpu_of")
progs = {
    "bzip2": lambda b: [b, "-c", "-k", text],
    "pcre2": lambda b: [b, text, "2"],
}
if openssl:
    progs["openssl-enc"] = lambda b: [b, "enc", "-aes-256-cbc", "-pbkdf2", "-iter", "500000",
                                      "-pass", "pass:hood", "-in", text, "-out", os.devnull]
    progs["openssl-dgst"] = lambda b: [b, "dgst", "-sha256", "-hmac", "hood", text]
def binary(kind, name):
    if name.startswith("openssl"):
        return openssl if kind == "instr" else None
    return os.path.join(work, f"{kind}-{name}")
def configs(name):
    plain = binary("plain", name)
    instr = binary("instr", name)
    cmd = progs[name]
    prog = [cpu_of, cpu_file] + cmd(instr)
    calls = [hood, "calls", "run", "-o", os.path.join(work, "c.data"), "--"] + prog
    trace = [hood, "trace", "record", "-o", os.path.join(work, "t.data"), "--"] + prog
    # (label, argv, runtime library or None)
    return ([("uninstrumented", [cpu_of, cpu_file] + cmd(plain), None)] if plain else []) + [
        ("glibc empty hooks", prog, None),
        ("hood calls run", calls, None),
        ("hood trace record", trace, None),
        ("uftrace record", ["uftrace", "record", "--force", "-d", os.path.join(work, "uftrace.data")] + prog, None),
        ("calls, no clock", calls, clockless),
        ("trace, no clock", trace, clockless),
    ]
def count_calls():
    out = subprocess.run([hood, "calls", "report", "-i", os.path.join(work, "c.data"), "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    return sum(r["calls"] for p in json.loads(out)["processes"] for r in p["rows"])
print(f"load average before: {os.getloadavg()[0]:.2f}")
for name in progs:
    best = {}
    ncalls = 0
    for _ in range(rounds):              # rounds interleave the configurations
        for label, argv, lib in configs(name):
            env = dict(os.environ, HOOD_SHM_DIR=work)
            if lib:
                env["HOOD_RT_LIB"] = lib
            # The outer cpu_of measures the whole tree: the recorder and the program.
            wall, tree = run_tree(cpu_of, tree_file, argv, env, work, f"{name}: {label}")
            cpu = sum(map(float, open(cpu_file).read().split()[:2]))
            if label == "hood calls run":
                ncalls = count_calls()
            w, c, t = best.get(label, (1e9, 1e9, 1e9))
            best[label] = (min(w, wall), min(c, cpu), min(t, tree))
    base = "uninstrumented" if "uninstrumented" in best else "glibc empty hooks"
    base_w, base_c, base_t = best[base]
    uft_w, uft_c, uft_t = best["uftrace record"]
    ratio = lambda d, u: d / u if u > 0 else float("nan")
    print(f"{name}: {ncalls:,} calls; least of {rounds} runs; cost = above the {base} run; "
          "ratio = cost / uftrace's cost; tree = recorder and program")
    print(f"  {'':20} {'wall s':>8} {'prog CPU s':>10} {'tree CPU s':>10} {'ns/call':>8} "
          f"{'wall ratio':>10} {'CPU ratio':>9} {'tree ratio':>10}")
    for label, _, _ in configs(name):
        w, c, t = best[label]
        per_call = (c - base_c) * 1e9 / ncalls if ncalls else float("nan")
        print(f"  {label:20} {w:8.3f} {c:10.3f} {t:10.3f} {per_call:8.1f} "
              f"{ratio(w - base_w, uft_w - base_w):10.2f} {ratio(c - base_c, uft_c - base_c):9.2f} "
              f"{ratio(t - base_t, uft_t - base_t):10.2f}")
    # What the two clock reads of a call cost inside the hooks: the runs with and without them.
    for mode, label in (("calls", "hood calls run"), ("trace", "hood trace record")):
        clock = best[label][1] - best[f"{mode}, no clock"][1]
        print(f"  {mode}: the clock reads are {clock * 1e9 / max(ncalls, 1):.1f} ns/call, "
              f"{ratio(clock, uft_c - base_c):.2f} of uftrace's CPU cost; the rest of the hooks "
              f"{ratio(best[f'{mode}, no clock'][1] - base_c, uft_c - base_c):.2f}")
print(f"load average after: {os.getloadavg()[0]:.2f}")
PY
echo "rdtsc after: $("$WORK/clock" 20000000) ns"
