#!/usr/bin/env bash
# hood diff (issue 28) beside its peers on a real program nobody here wrote: zstd compressing
# one input at level 3 and at level 19 (the library built from the zstd-sys crate's sources,
# with debug info and frame pointers, by bench/diff/zcomp.c). Prints figures, never pass/fail.
# Needs root, perf (linux-perf), gcc; go (golang-go) for the pprof column.
# Usage: bench/diff/run.sh [ROUNDS]   (default 2: compressions of the input per run)
#   1. hood diff of hood's two recordings beside `go tool pprof -top -diff_base` of hood's
#      pprof exports of the same recordings (both order by change of time);
#   2. hood diff --sort points --no-inline of perf's two recordings beside `perf diff` of the
#      same files (both order by change of share; perf diff names no inlined functions);
#   3. the time of `hood diff` beside two `hood report`s of the same recordings.
# HOOD=path/to/hood uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-2}
out=bench/out/diff; mkdir -p "$out"
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf"; exit 2; }
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=${CARGO_TARGET_DIR:-target}/release/hood
fi
zlib=$(cargo metadata --format-version 1 --locked 2>/dev/null \
    | python3 -c 'import json,sys; m=json.load(sys.stdin); print(next(p["manifest_path"] for p in m["packages"] if p["name"]=="zstd-sys"))' \
    | xargs dirname)/zstd/lib
[ -f "$zlib/zstd.h" ] || { echo "zstd-sys sources not found (cargo fetch first)"; exit 2; }
if [ ! -x "$out/zcomp" ] || [ bench/diff/zcomp.c -nt "$out/zcomp" ]; then
    echo "building zcomp with zstd from $zlib"
    gcc -O2 -g -fno-omit-frame-pointer -DZSTD_DISABLE_ASM -I"$zlib" -I"$zlib/common" \
        -o "$out/zcomp" bench/diff/zcomp.c "$zlib"/common/*.c "$zlib"/compress/*.c
fi
# The input: the first 4 MB of this repository's sources (text, reproducible per commit).
git archive -o "$out/sources.tar" HEAD
head -c 4000000 "$out/sources.tar" > "$out/input.tar"

echo "== recording level 3 and level 19, $rounds compressions of 4 MB each, hood then perf"
for l in 3 19; do
    $hood record -F 999 -o "$out/l$l.data" -- "$out/zcomp" "$out/input.tar" $l "$rounds" > /dev/null 2> "$out/l$l.log"
    perf record -q -F 999 -g -o "$out/l$l.perf.data" -- "$out/zcomp" "$out/input.tar" $l "$rounds" > /dev/null 2>&1
done

echo; echo "== 1. hood diff (hood's recordings) beside go tool pprof -top -diff_base (hood's pprof exports)"
$hood diff "$out/l3.data" "$out/l19.data" --top 10 --width 150 2> "$out/diff.err" | tee "$out/hood-diff.txt"
$hood diff "$out/l3.data" "$out/l19.data" --format json > "$out/hood-diff.json"
if command -v go > /dev/null; then
    for l in 3 19; do $hood report -i "$out/l$l.data" --format pprof -o "$out/l$l.pb.gz"; done
    HOME=$out GOTOOLCHAIN=local go tool pprof -top -nodecount=10 -diff_base "$out/l3.pb.gz" "$out/l19.pb.gz" 2>/dev/null \
        | sed -n '/flat%/,$p' | tee "$out/pprof-diff.txt"
    python3 - "$out/hood-diff.json" "$out/pprof-diff.txt" <<'PY'
import json, sys
# Inlined frames: hood marks them "(inlined)", pprof "(inline)" where it sees them so.
bare = lambda n: n.replace(" (inlined)", "").replace(" (inline)", "")
hood = [bare(r["name"]) for r in json.load(open(sys.argv[1]))["rows"][:10]]
pp = [bare(" ".join(l.split()[5:])) for l in open(sys.argv[2]).read().splitlines()[1:11] if len(l.split()) >= 6]
same = sum(1 for a, b in zip(hood, pp) if a == b)
print(f"top 10: {same} of {min(len(hood), len(pp))} rows name the same function at the same rank; "
      f"as sets {len(set(hood) & set(pp))} in common")
for i, (a, b) in enumerate(zip(hood, pp)):
    if a != b:
        print(f"  rank {i + 1}: hood {a}, pprof {b}")
PY
else
    echo "(go not installed: apt-get install golang-go for the pprof column)"
fi

echo; echo "== 2. hood diff --sort points --no-inline beside perf diff, both of perf's recordings"
$hood diff "$out/l3.perf.data" "$out/l19.perf.data" --sort points --no-inline --top 10 --width 150 \
    2>> "$out/diff.err" | tee "$out/hood-perfdata.txt"
$hood diff "$out/l3.perf.data" "$out/l19.perf.data" --sort points --no-inline --format json \
    > "$out/hood-perfdata.json"
perf diff "$out/l3.perf.data" "$out/l19.perf.data" > "$out/perf-diff.full" 2> /dev/null
grep -v '^#' "$out/perf-diff.full" | grep -v '^$' | head -10 | tee "$out/perf-diff.txt"
python3 - "$out/hood-perfdata.json" "$out/perf-diff.full" <<'PY'
import json, sys
# perf diff prints a delta only for symbols NEW has (rows only in BASE come last, without
# one): hood's rows of those are left out here. Equal deltas are ties either may order.
rows = json.load(open(sys.argv[1]))["rows"]
hood = [(r["name"], round(r["delta_points"], 2)) for r in rows if r["new"] > 0][:10]
perf = []
for l in open(sys.argv[2]):
    f = l.split()
    if l.startswith("#") or len(f) < 3:
        continue
    d = [x for x in f if x[0] in "+-" and x.endswith("%")]
    if d:
        perf.append((f[-1], float(d[0][:-1])))
perf = perf[:10]
same = sum(1 for (a, x), (b, y) in zip(hood, perf) if a == b or abs(x - y) < 0.006)
print(f"top 10: {same} of {min(len(hood), len(perf))} ranks agree (same function, or a tie of equal points)")
for i, ((a, x), (b, y)) in enumerate(zip(hood, perf)):
    if a != b:
        print(f"  rank {i + 1}: hood {a} {x:+.2f}, perf {b} {y:+.2f}")
PY

echo; echo "== 3. time: hood diff vs two hood reports of the same recordings (warm, best of 3)"
. bench/lib/best.sh   # best: the best of 3 wall times, in ms
d=$(best $hood diff "$out/l3.data" "$out/l19.data")
r=$(best sh -c "$hood report -i '$out/l3.data' && $hood report -i '$out/l19.data'")
echo "hood diff ${d} ms, two hood reports ${r} ms, ratio $(awk -v a="$d" -v b="$r" 'BEGIN {printf "%.2f", a / b}') (target <= 1)"
d=$(best $hood diff "$out/l3.perf.data" "$out/l19.perf.data")
r=$(best sh -c "$hood report -i '$out/l3.perf.data' && $hood report -i '$out/l19.perf.data'")
echo "perf.data: hood diff ${d} ms, two hood reports ${r} ms, ratio $(awk -v a="$d" -v b="$r" 'BEGIN {printf "%.2f", a / b}')"
