#!/usr/bin/env bash
# Complete call stacks for programs without frame pointers (issue 11's "Numbers"): hood record vs
# `perf record --call-graph dwarf` vs `samply record --save-only`, side by side in one run, on the
# same workloads at the same rate (-F 999). Prints one table per metric with the ratios
# hood/perf and hood/samply. Measurements only, never pass/fail. See bench/unwind/README.md.
#
# usage: bench/unwind/run.sh [quick|full|SECONDS]   (quick: ~1 s of work per run, 3 rounds;
#                                                    full: 5 s, 5 rounds, 30 s loss runs)
# env:   HOOD        hood binary (default: build target/release/hood and use it)
#        HOOD_ARGS   extra `hood record` arguments (e.g. "--call-graph dwarf"); default none
#        ROUNDS      interleaved rounds per workload (quick 3, full 5)
#        REPORT_ROUNDS  runs of each report for the report-time median (quick 3, full 7)
#        LOST_SECS   length of the -a loss runs (quick 10, full 30); 0 skips them
#        WORKLOADS   subset, e.g. "c rust" (default: c cpp rust gzip xz py py312)
#        KEEP=1      keep the temp dir with binaries and recordings
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"

mode=${1:-quick}
case $mode in
    quick) secs=1; rounds=${ROUNDS:-3}; rrounds=${REPORT_ROUNDS:-3}; lost_secs=${LOST_SECS:-10} ;;
    full) secs=5; rounds=${ROUNDS:-5}; rrounds=${REPORT_ROUNDS:-7}; lost_secs=${LOST_SECS:-30} ;;
    *[!0-9.]* | '') echo "usage: $0 [quick|full|SECONDS]" >&2; exit 2 ;;
    *) secs=$mode; rounds=${ROUNDS:-3}; rrounds=${REPORT_ROUNDS:-5}; lost_secs=${LOST_SECS:-30} ;;
esac
workloads=${WORKLOADS:-c cpp rust gzip xz py py312}
out=bench/out/unwind; mkdir -p "$out"
work=$(mktemp -d /tmp/hood-unwind.XXXXXX)
paranoid0=$(cat /proc/sys/kernel/perf_event_paranoid)
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null || true
    echo "$paranoid0" > /proc/sys/kernel/perf_event_paranoid 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
export PATH=$PATH:$HOME/.cargo/bin
log() { echo "$*" >&2; }

# ---------------------------------------------------------------- tools (installed if missing)
need_apt() { # need_apt COMMAND PACKAGE
    command -v "$1" >/dev/null && return
    log "installing $2 (for $1)"
    apt-get install -y -q "$2" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "$2" >/dev/null; }
}
need_apt perf linux-perf
need_apt gcc gcc
need_apt g++ g++
need_apt xz xz-utils
need_apt gzip gzip
need_apt python3 python3
if ! command -v samply >/dev/null; then
    log "installing samply (cargo install samply --locked; several minutes)"
    cargo install -q samply --locked
fi
if [ -z "${HOOD:-}" ]; then
    cargo build --release -q -p hood
    HOOD=${CARGO_TARGET_DIR:-target}/release/hood
fi
hood=$(realpath "$HOOD")
# shellcheck disable=SC2206
hood_args=(${HOOD_ARGS:-})
py=$(realpath "$(command -v python3)")
[ -x /usr/bin/python3 ] && py=$(realpath /usr/bin/python3)   # Debian's build, as users run it
py312=""
for c in "$(command -v python3.12 2>/dev/null || true)" "$(pyenv root 2>/dev/null || echo ~/.pyenv)"/versions/3.12*/bin/python3.12; do
    [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 12))' 2>/dev/null &&
        { py312=$("$c" -c 'import sys; print(sys.executable)'); break; }
done
samply_presym=()
samply record --help 2>&1 | grep -q -- --unstable-presymbolicate && samply_presym=(--unstable-presymbolicate)

# ---------------------------------------------------------------- workloads
# Work is sized in "units" measured on this machine's kind of core so each run does about $secs
# seconds of CPU work (CPU time, not wall: the machine may be shared).
gcc -O2 -o "$work/cputime" "$HERE/cputime.c"
gcc -O2 -fomit-frame-pointer -o "$work/chain" "$HERE/chain.c"
g++ -O2 -fomit-frame-pointer -o "$work/maptmpl" "$HERE/maptmpl.cpp"
mkdir -p "$work/btree/src"
cp "$HERE/btree.rs" "$work/btree/src/main.rs"
printf '[package]\nname = "btree"\nversion = "0.1.0"\nedition = "2021"\n\n[workspace]\n' > "$work/btree/Cargo.toml"
(cd "$work/btree" && CARGO_TARGET_DIR="$work/btree/target" RUSTFLAGS="" cargo build --release -q --offline)
cp "$work/btree/target/release/btree" "$work/btree-bin"
python3 - "$work/text" "$work/text-small" <<'PY'
# Deterministic word salad: gzip -9 and xz -9 both find work in it.
import random, sys
r = random.Random(11)
vocab = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 10))) for _ in range(5000)]
for path, mb in ((sys.argv[1], 32), (sys.argv[2], 2)):
    with open(path, "w") as f:
        n = 0
        while n < mb << 20:
            s = " ".join(r.choices(vocab, k=20000)) + "\n"
            f.write(s)
            n += len(s)
PY
cp "$HERE/work.py" "$work/work.py"
units() { awk -v s="$secs" -v per="$1" 'BEGIN { u = int(s / per + 0.5); print (u < 1 ? 1 : u) }'; }
gz_files=()
for _ in $(seq "$(units 0.9)"); do gz_files+=("$work/text"); done   # ~0.9 s per 32 MB
xz_files=()
for _ in $(seq "$(units 3)"); do xz_files+=("$work/text-small"); done  # ~3 s per 2 MB (xz -9 is slow)

# name -> comm and command line
declare -A comm cmd
comm[c]=chain;        cmd[c]="$work/chain $(units 0.115)"
comm[cpp]=maptmpl;    cmd[cpp]="$work/maptmpl $(units 0.075)"
comm[rust]=btree-bin; cmd[rust]="$work/btree-bin $(units 0.056)"
comm[gzip]=gzip;      cmd[gzip]="gzip -9 -c ${gz_files[*]}"
comm[xz]=xz;          cmd[xz]="xz -9 -T1 -c ${xz_files[*]}"
comm[py]=$(basename "$py");       cmd[py]="$py $work/work.py $(units 0.009)"
comm[py312]=$(basename "${py312:-python3.12}"); cmd[py312]="${py312:-false} -X perf $work/work.py $(units 0.012)"
[ -n "$py312" ] || { log "no python3.12 found: skipping py312"; workloads=${workloads//py312/}; }

# ---------------------------------------------------------------- one run
cpu() { awk '{ printf "%.4f", $1 + $2 }' "$1"; }
perf_crashes=0
run_one() { # run_one PROFILER WORKLOAD ROUND -> appends a line to $out/runs.tsv
    local prof=$1 wl=$2 r=$3 f="$work/$2.$1.$3" rc=0
    local inner=("$work/cputime" "$f.wl.time" ${cmd[$wl]})
    local outer=("$work/cputime" "$f.rec.time")
    case $prof in
        plain) "${inner[@]}" > /dev/null 2> "$f.log" || rc=$? ;;
        hood) "${outer[@]}" "$hood" record -F 999 "${hood_args[@]}" -o "$f.data" -- "${inner[@]}" > /dev/null 2> "$f.log" || rc=$? ;;
        perf) # Debian's perf 6.1 can abort ("stack smashing detected") in its end-of-recording
              # build-id pass even with -N: retried once as is, then once with -B (no build-ids)
            local extra=()
            for attempt in 1 2 3; do
                rc=0
                [ "$attempt" = 3 ] && extra=(-B)
                "${outer[@]}" perf record -N "${extra[@]}" -q --call-graph dwarf -F 999 -o "$f.data" -- "${inner[@]}" > /dev/null 2> "$f.log" || rc=$?
                [ "$rc" = 0 ] && [ -s "$f.data" ] && break
                perf_crashes=$((perf_crashes + 1))
                log "perf record failed (rc $rc, attempt $attempt${extra[*]:+ with ${extra[*]}}) on $wl: $(grep -m1 -iE 'smash|abort|assert|error' "$f.log" || tail -1 "$f.log")"
                echo "$wl round $r attempt $attempt${extra[*]:+ (${extra[*]})} rc $rc: $(tail -2 "$f.log" | tr '\n' ' ')" >> "$out/perf-crashes.txt"
            done
            [ "$rc" = 0 ] && [ "$attempt" -gt 1 ] && echo "$wl round $r: attempt $attempt${extra[*]:+ (${extra[*]})} succeeded" >> "$out/perf-crashes.txt" ;;
        samply) # samply refuses perf_event_paranoid > 1 even as root: lowered for its run only
            local para; para=$(cat /proc/sys/kernel/perf_event_paranoid)
            [ "$para" -le 1 ] || echo 1 > /proc/sys/kernel/perf_event_paranoid
            "${outer[@]}" samply record --save-only "${samply_presym[@]}" -r 999 -o "$f.json.gz" -- "${inner[@]}" > /dev/null 2> "$f.log" || rc=$?
            echo "$para" > /proc/sys/kernel/perf_event_paranoid ;;
    esac
    local wlcpu reccpu=nan stats="0 0 0 0 0" size=0
    wlcpu=$(cpu "$f.wl.time" 2>/dev/null || echo nan)
    if [ "$prof" != plain ] && [ "$rc" = 0 ]; then
        reccpu=$(awk -v a="$(cpu "$f.rec.time" 2>/dev/null || echo nan)" -v b="$wlcpu" 'BEGIN { printf "%.4f", a - b }')
        case $prof in
            hood) stats=$("$hood" report -i "$f.data" --format collapsed 2>> "$f.log" | python3 "$HERE/stacks.py" collapsed "${comm[$wl]}" || echo 0 0 0 0 0)
                  size=$(stat -c %s "$f.data") ;;
            perf) stats=$(perf script -i "$f.data" -F comm,tid,ip,sym,dso --no-inline 2>> "$f.log" | python3 "$HERE/stacks.py" perfscript "${comm[$wl]}" || echo 0 0 0 0 0)
                  size=$(stat -c %s "$f.data") ;;
            samply) stats=$(python3 "$HERE/stacks.py" samply "${comm[$wl]}" "$f.json.gz" || echo 0 0 0 0 0)
                    size=$(( $(stat -c %s "$f.json.gz") + $(stat -c %s "$f.json.syms.json" 2>/dev/null || echo 0) )) ;;
        esac
    fi
    [ "$rc" = 0 ] || log "$prof on $wl exited $rc (see $f.log)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$wl" "$prof" "$wlcpu" "$reccpu" "$size" "$rc" "$stats" | tr ' ' '\t' >> "$out/runs.tsv"
}

echo "# hood unwind bench, $(date -u '+%Y-%m-%d %H:%M UTC'), mode $mode (${secs}s of work per run, $rounds rounds)"
echo "# $(uname -r), $(nproc) CPUs, load before:$(uptime | sed 's/.*load average://')"
echo "# hood: $hood ${hood_args[*]:-}  ($("$hood" --version 2>/dev/null || echo '?'))"
echo "# perf: $(perf --version)  samply: $(samply --version 2>/dev/null)${samply_presym:+ (presymbolicated)}"
printf 'round\tworkload\tprofiler\twl_cpu_s\trec_cpu_s\tbytes\trc\tsamples\tcomplete\tpyframes\tdepth\ttruncated\n' > "$out/runs.tsv"
: > "$out/perf-crashes.txt"
for r in $(seq "$rounds"); do
    for wl in $workloads; do
        # interleaved, order rotated each round so no profiler always runs on a warmer machine
        profs=(plain hood perf samply)
        rot=$(( (r - 1) % 4 ))
        for prof in "${profs[@]:$rot}" "${profs[@]:0:$rot}"; do
            log "round $r/$rounds: $wl under $prof"
            run_one "$prof" "$wl" "$r"
        done
    done
done

# ---------------------------------------------------------------- report time
log "report time ($rrounds runs each)"
rwl=${REPORT_WORKLOADS:-$workloads}
printf 'workload\trun\tprofiler\twall_s\tcpu_s\n' > "$out/report.tsv"
timed() { # timed WL RUN NAME CMD... : wall and CPU of one run, output discarded
    local wl=$1 n=$2 name=$3 t0 t1; shift 3
    t0=$(date +%s%N)
    "$work/cputime" "$work/report.time" "$@" > /dev/null 2>&1 || true
    t1=$(date +%s%N)
    printf '%s\t%s\t%s\t%s\t%s\n' "$wl" "$n" "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')" "$(cpu "$work/report.time")" >> "$out/report.tsv"
}
for wl in $rwl; do
    for n in $(seq "$rrounds"); do
        [ -s "$work/$wl.hood.1.data" ] && timed "$wl" "$n" hood "$hood" report -i "$work/$wl.hood.1.data"
        [ -s "$work/$wl.perf.1.data" ] && timed "$wl" "$n" perf perf report -i "$work/$wl.perf.1.data" --stdio
    done
done

# ---------------------------------------------------------------- lost samples, -a, both CPUs busy
: > "$out/lost.txt"
if [ "$lost_secs" != 0 ]; then
    for F in 999 4999; do
        log "lost samples: hood record -a -F $F -d $lost_secs, both CPUs busy"
        pids=()
        for _ in 1 2; do "$work/chain" 100000 > /dev/null & pids+=($!); done
        sleep 0.5
        "$hood" record -a -F "$F" "${hood_args[@]}" -d "$lost_secs" -o "$work/lost.data" 2> "$work/lost.log" > /dev/null || true
        kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true
        echo "hood $F $(grep -m1 -o 'lost [0-9]* samples' "$work/lost.log" | tr -dc 0-9) $(grep -m1 -o '[0-9]* samples on' "$work/lost.log" | tr -dc 0-9)" >> "$out/lost.txt"
        rm -f "$work/lost.data"
    done
    if [ "$mode" = full ] || [ "${PEER_LOST:-0}" = 1 ]; then
        # perf dwarf at -a writes ~8 KB per sample: ~0.5 GB per 30 s at 999 Hz on 2 CPUs
        log "lost samples: perf record -a --call-graph dwarf -F 999 -- sleep $lost_secs, both CPUs busy"
        pids=()
        for _ in 1 2; do "$work/chain" 100000 > /dev/null & pids+=($!); done
        sleep 0.5
        perf record -N -q -a --call-graph dwarf -F 999 -o "$work/lost.perf.data" -- sleep "$lost_secs" 2> "$work/lost.perf.log" > /dev/null || true
        kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true
        plost=$(perf script -i "$work/lost.perf.data" -F comm --show-lost-events 2>/dev/null | awk '/PERF_RECORD_LOST / { s += $NF } END { print s + 0 }')
        psamp=$(perf report -i "$work/lost.perf.data" --stdio --stats 2>/dev/null | awk '/ SAMPLE events:/ { print $3; exit }')
        echo "perf 999 ${plost:-?} ${psamp:-?}" >> "$out/lost.txt"
        rm -f "$work/lost.perf.data"
    fi
fi

echo "# load after:$(uptime | sed 's/.*load average://')"
python3 "$HERE/tables.py" "$out/runs.tsv" "$out/report.tsv" "$out/lost.txt" "$perf_crashes" | tee "$out/summary.txt"
