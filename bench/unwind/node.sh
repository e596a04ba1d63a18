#!/usr/bin/env bash
# Node.js with --perf-basic-prof (issue 24): samples with a JavaScript frame and complete stacks,
# `hood record` (default: DWARF with frame pointers through V8's builtins), `hood record
# --call-graph fp` and `samply record` of the same script, interleaved, ROUNDS rounds. Prints
# the pooled shares and the ratios hood/samply. Measurements only, never pass/fail.
#
# usage: bench/unwind/node.sh [SECONDS]     (default 5: about 5 s of CPU work per run, a fixed
#                                            amount of it, 40 loops a second on this VM)
# env:   HOOD     hood binary (default target/release/hood)
#        ROUNDS   rounds (default 3)
#        NODE     node binary (default: node on PATH; Node.js 20 is the issue's case)
#        KEEP=1   keep the temp dir with the recordings
# Needs root. samply (`cargo install samply --locked`) refuses perf_event_paranoid > 1: it is
# lowered to 1 for samply's runs only and put back on exit; without samply its column is "-".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
secs=${1:-5}; rounds=${ROUNDS:-3}
hood=${HOOD:-$ROOT/target/release/hood}
node=${NODE:-$(command -v node || true)}
[ -n "$node" ] || { echo "no node on PATH (apt-get install nodejs)" >&2; exit 2; }
export PATH=$PATH:$HOME/.cargo/bin
have_samply=$(command -v samply >/dev/null && echo 1 || echo 0)
work=$(mktemp -d /tmp/hood-node.XXXXXX)
paranoid0=$(cat /proc/sys/kernel/perf_event_paranoid)
cleanup() {
    echo "$paranoid0" > /proc/sys/kernel/perf_event_paranoid 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cat > "$work/work.js" <<'JS'
// Recursion in JIT code, Map and JSON builtins, and Array.prototype.sort (V8's Torque
// builtins calling back into a JavaScript comparator): the builtins have no call frame
// information in node's .eh_frame but keep frame pointers.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function strs(n) { const m = new Map(); for (let i = 0; i < n; i++) m.set("k" + (i % 5000), JSON.stringify({ a: i, b: [i, i + 1] })); return m.size; }
function sorter(n) { const a = []; for (let i = 0; i < n; i++) a.push((i * 7919) % 10007); a.sort((x, y) => x - y); return a[0]; }
// A fixed amount of work, not a fixed time: a profiler that takes CPU from node would
// otherwise leave it less JavaScript to run after the same start-up, and a lower share.
const loops = Number(process.argv[2]);
let s = 0;
for (let i = 0; i < loops; i++) { s += fib(22); s += strs(20000); s += sorter(50000); }
console.log(s > 0 ? "ok" : "no");
JS
cd "$work"   # node writes its perf map in /tmp; -p and the script's output stay here
run_node=("$node" --perf-basic-prof --interpreted-frames-native-stack "$work/work.js" "$((secs * 40))")
declare -A n c js
for p in hood hoodfp samply; do n[$p]=0; c[$p]=0; js[$p]=0; done
tally() { # tally PROFILER "SAMPLES COMPLETE JS ..."
    read -r a b d _ <<< "$2"
    n[$1]=$(( ${n[$1]} + a )); c[$1]=$(( ${c[$1]} + b )); js[$1]=$(( ${js[$1]} + d ))
    awk -v p="$1" -v r="$r" -v a="$a" -v b="$b" -v d="$d" 'BEGIN { if (a > 0) printf "round %s %-7s %6d samples, JS frame %5.1f%%, complete %5.1f%%\n", r, p, a, 100 * d / a, 100 * b / a }' >&2
}
echo "# $("$node" --version) --perf-basic-prof --interpreted-frames-native-stack, $((secs * 40)) loops (~$secs s of CPU) per run, $rounds rounds, -F 999; $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
for r in $(seq "$rounds"); do
    "$hood" record -F 999 -o "$work/h.hood" -- "${run_node[@]}" > /dev/null 2> "$work/h.log"
    tally hood "$("$hood" report -i "$work/h.hood" --format collapsed --min-percent 0 2>/dev/null | FRAME_PREFIX=JS: python3 "$HERE/stacks.py" collapsed node)"
    "$hood" record -F 999 --call-graph fp -o "$work/f.hood" -- "${run_node[@]}" > /dev/null 2> "$work/f.log"
    tally hoodfp "$("$hood" report -i "$work/f.hood" --format collapsed --min-percent 0 2>/dev/null | FRAME_PREFIX=JS: python3 "$HERE/stacks.py" collapsed node)"
    if [ "$have_samply" = 1 ]; then
        [ "$paranoid0" -gt 1 ] && echo 1 > /proc/sys/kernel/perf_event_paranoid
        samply record --save-only --unstable-presymbolicate -r 999 -o "$work/s.json.gz" -- "${run_node[@]}" > /dev/null 2> "$work/s.log" || true
        echo "$paranoid0" > /proc/sys/kernel/perf_event_paranoid
        tally samply "$(FRAME_PREFIX=JS: python3 "$HERE/stacks.py" samply node "$work/s.json.gz" || echo 0 0 0)"
    fi
    echo "round $r done" >&2
done
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f%%", 100 * a / b; else printf "-" }'; }
ratio() { awk -v a="$1" -v b="$2" -v x="$3" -v y="$4" 'BEGIN { if (b > 0 && y > 0 && x > 0) printf "%.2f", (a / b) / (x / y); else printf "-" }'; }
printf '%-34s %9s %12s %12s\n' profiler samples "JS frame" complete
for p in hood hoodfp samply; do
    name=$p; [ "$p" = hood ] && name="hood record (default)"; [ "$p" = hoodfp ] && name="hood record --call-graph fp"
    [ "$p" = samply ] && name="samply record"
    printf '%-34s %9d %12s %12s\n' "$name" "${n[$p]}" "$(pct "${js[$p]}" "${n[$p]}")" "$(pct "${c[$p]}" "${n[$p]}")"
done
echo "hood/samply: JS frame $(ratio "${js[hood]}" "${n[hood]}" "${js[samply]}" "${n[samply]}"), complete $(ratio "${c[hood]}" "${n[hood]}" "${c[samply]}" "${n[samply]}")"
