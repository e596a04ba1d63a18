#!/usr/bin/env bash
# Issue 29's attacks of an unprivileged local user on root's hood, replayed, numbered as in
# bench/attacks/INDEX.md: each case plants what the issue's attacker planted (as a throwaway
# user, hood-attacker), runs root's hood the documented way, and prints `held` or `FAILED`
# with the attack's number, name and what was seen. A hang counts as failed after LIMIT
# seconds (a working hood ends each in well under that).
# Run as root on a machine you may profile:
#   bench/attacks/run.sh [--tests] [HOOD]      (default HOOD: $CARGO_TARGET_DIR/debug/hood)
# Ends with one line per number of the 66 (held, FAILED, or the test that replays it) and
# the totals; exits 1 when any failed. --tests also runs, as root with
# HOOD_REQUIRE_PRIVILEGED=1, each test the index names (cargo test, so it builds them), and
# counts them: a test that was skipped for a missing tool counts as not run. Needs gcc and
# objcopy for the attacks that run programs of their own (bench/attacks/victims.c), tmux for
# the interactive top, python3
# for the attacker's debuginfod, and sets fs.protected_symlinks=0 for a moment (put back)
# for the perf-map link to /etc/shadow.
set -uo pipefail
cd "$(dirname "$0")/../.."
run_tests=0
[ "${1:-}" = --tests ] && { run_tests=1; shift; }
HOOD=$(realpath "${1:-${CARGO_TARGET_DIR:-target}/debug/hood}")
LIMIT=${LIMIT:-20}
[ "$(id -u)" = 0 ] || { echo "run as root (the attacks are against root's hood)"; exit 2; }
[ -x "$HOOD" ] || { echo "no hood binary at $HOOD (cargo build -p hood)"; exit 2; }

U=hood-attacker
made_user=0
if ! id -u "$U" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$U" && made_user=1
fi
as_user() { setpriv --reuid="$U" --regid="$U" --clear-groups "$@"; }
# In the background (`as_user_bg CMD &`): exec, so that $! is the attacker's process itself.
as_user_bg() { exec setpriv --reuid="$U" --regid="$U" --clear-groups "$@"; }
W=$(mktemp -d /tmp/hood-attacks.XXXXXX)
chmod 1777 "$W"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "${old_ps:-}" ] && sysctl -qw fs.protected_symlinks="$old_ps"
    rm -rf "$W" /tmp/perf-"${victim:-0}".map
    [ "$made_user" = 1 ] && userdel "$U" 2>/dev/null
}
trap cleanup EXIT

declare -A result
# verdict NUMBER NAME OK(0/1) DETAIL: a number with several checks fails if any does.
verdict() {
    if [ "$3" = 0 ]; then
        echo "held    #$1 $2"
        [ "${result[$1]:-}" = FAILED ] || result[$1]=held
    else
        echo "FAILED  #$1 $2: $4"
        result[$1]=FAILED
    fi
}
# run_limited OUTFILE CMD...: rc in $rc (124: hung), peak RSS KiB in $rss, stderr in OUTFILE,
# stdout in $W/o.
run_limited() {
    local out=$1; shift
    /usr/bin/time -f '%M' -o "$W/rss" timeout -k 2 "$LIMIT" "$@" >"$W/o" 2>"$out" </dev/null
    rc=$?
    rss=$(tail -1 "$W/rss" 2>/dev/null | tr -dc 0-9)
    rss=${rss:-0}
}
ended_clearly() { [ "$rc" != 124 ] && [ "$rc" != 137 ] && [ "$rc" != 101 ]; }

# A victim process of the attacker's, busy, sampled by root.
as_user_bg sh -c 'while :; do :; done' & victim=$!
pids+=("$victim")
sleep 0.3

# --- R1: files opened blocking ---
as_user mkfifo "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r1.hood"
ended_clearly && [ "$rc" = 0 ]; verdict 1 "FIFO at /tmp/perf-PID.map, record -p" $? "rc $rc: $(head -c 300 "$W/e")"
run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/r1a.hood"
ended_clearly && [ "$rc" = 0 ]; verdict 2 "FIFO at /tmp/perf-PID.map, record -a" $? "rc $rc: $(head -c 300 "$W/e")"
# A state directory of its own, so no other root session's `hood start` is met or stopped.
export HOOD_STATE_DIR="$W/state-fifo"
run_limited "$W/e" "$HOOD" start -p "$victim" -o "$W/r1s.hood"
start_rc=$rc
sleep 0.5
run_limited "$W/e2" "$HOOD" stop
unset HOOD_STATE_DIR
[ "$start_rc" = 0 ] && ended_clearly && [ "$rc" = 0 ]
verdict 3 "FIFO at /tmp/perf-PID.map, hood start/stop" $? "start rc $start_rc, stop rc $rc: $(head -c 300 "$W/e2")"
# hood serve's profile endpoint: the FIFO must neither hang a profile nor block the next one.
port=$((20000 + RANDOM % 20000))
"$HOOD" serve --listen "127.0.0.1:$port" >/dev/null 2>&1 & srv=$!
pids+=("$srv")
for _ in $(seq 50); do curl -s "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
codes=""
for _ in 1 2; do
    codes="$codes $(curl -s -o /dev/null -w '%{http_code}' --max-time "$LIMIT" "127.0.0.1:$port/debug/pprof/profile?seconds=1&pid=$victim")"
done
kill "$srv" 2>/dev/null
[ "$codes" = " 200 200" ]; verdict 4 "FIFO at /tmp/perf-PID.map, serve's profile endpoint twice" $? "HTTP$codes"
rm -f "/tmp/perf-$victim.map"

as_user mkfifo "$W/planted"
for cmd in "report -i" "annotate main -i" "calls report" "trace report"; do
    # shellcheck disable=SC2086
    run_limited "$W/e" "$HOOD" $cmd "$W/planted"
    ended_clearly && [ "$rc" != 0 ] && grep -q planted "$W/e"
    case $cmd in report* | annotate*) n=14 ;; *) n=15 ;; esac
    verdict $n "FIFO as input of $cmd" $? "rc $rc: $(head -c 300 "$W/e")"
done
run_limited "$W/e" "$HOOD" report -i "$W/r1.hood" --symfile "$W/planted"
ended_clearly && [ "$rc" != 0 ]; verdict 16 "FIFO as --symfile" $? "rc $rc"
run_limited "$W/e" "$HOOD" serve --listen 127.0.0.1:0 --token-file "$W/planted"
ended_clearly && [ "$rc" != 0 ]; verdict 17 "FIFO as --token-file" $? "rc $rc"

# --- R2: reads bounded ---
run_limited "$W/e" "$HOOD" report -i "$W/r1.hood" --symfile /dev/zero
ended_clearly && [ "$rss" -lt 1048576 ]; verdict 29 "--symfile /dev/zero" $? "rc $rc, $rss KiB"
run_limited "$W/e" "$HOOD" serve --listen 127.0.0.1:0 --token-file /dev/zero
ended_clearly && [ "$rss" -lt 1048576 ]; verdict 30 "--token-file /dev/zero" $? "rc $rc, $rss KiB"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/base.hood"
base=$rss
as_user truncate -s 1200M "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r2.hood"
ended_clearly && [ "$rc" = 0 ] && [ "$rss" -lt $((2 * base + 131072)) ]
verdict 18 "sparse 1.2 GB perf map, record -p" $? "rc $rc, $rss KiB (normal $base KiB)"
as_user truncate -s 10G "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r2b.hood"
ended_clearly && [ "$rc" = 0 ] && [ "$rss" -lt $((2 * base + 131072)) ]
verdict 19 "sparse 10 GB perf map, record -p" $? "rc $rc, $rss KiB (normal $base KiB)"
rm -f "/tmp/perf-$victim.map"

# --- R3: terminal escapes ---
esc=$(printf '\033]0;pwned\007x')
cp /bin/sleep "$W/$esc"
as_user_bg "$W/$esc" 600 & escpid=$!
pids+=("$escpid")
as_user_bg /usr/bin/perl -e 'sleep 600' "$(printf 'arg\n   1 root FORGED-ROW')" &
pids+=("$!")
sleep 0.3
for cmd in "ps" "ps -f" "top -b -n 1" "info"; do
    # shellcheck disable=SC2086
    timeout "$LIMIT" "$HOOD" $cmd >"$W/out" 2>/dev/null
    case $cmd in ps) n=31 ;; "ps -f") n=32 ;; *) n=34 ;; esac
    ! grep -q $'\033' "$W/out"
    verdict $n "escape in comm/argv, hood $cmd" $? "raw ESC in the output"
    case $cmd in ps*)
        ! grep -q '^[0-9 ]*1 root FORGED-ROW' "$W/out"
        verdict 33 "newline in argv, hood $cmd" $? "a forged row in the output" ;;
    esac
done
# The interactive top in a tmux pane of its own, showing the process with the planted name:
# a title sequence that reached the terminal would be tmux's pane title.
if command -v tmux >/dev/null; then
    tmux -L hood-attacks new-session -d -s top -x 160 -y 40 "$HOOD top -d 0.5 -p $escpid"
    shown=0
    for _ in $(seq 60); do
        tmux -L hood-attacks capture-pane -p -t top | grep -q pwned && { shown=1; break; }
        sleep 0.5
    done
    title=$(tmux -L hood-attacks display -p -t top '#{pane_title}')
    tmux -L hood-attacks kill-server
    [ "$shown" = 1 ] && [ "$title" != pwned ]
    verdict 64 "escape in comm, interactive hood top (in tmux)" $? "pane title '$title', name shown: $shown"
else
    echo "skipped the interactive top (64): no tmux"
fi

# --- R4/R8: output files ---
as_user mkfifo "$W/out.hood"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/out.hood"
ended_clearly && [ "$rc" != 0 ] && grep -q out.hood "$W/e"
verdict 39 "FIFO planted at -o" $? "rc $rc: $(head -c 300 "$W/e")"
as_user touch "$W/theirs.hood"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/theirs.hood"
ended_clearly && [ "$rc" != 0 ] && [ ! -s "$W/theirs.hood" ]
verdict 39 "another user's file at -o" $? "rc $rc"
"$HOOD" record -p "$victim" -d 2 -o "$W/two.hood" >/dev/null 2>&1 & first=$!
sleep 0.5
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/two.hood"
wait "$first"
[ "$rc" != 0 ] && grep -q "another hood" "$W/e"
verdict 46 "two writers of one -o" $? "second writer rc $rc: $(head -c 300 "$W/e")"

# --- R10: floats ---
run_limited "$W/e" "$HOOD" record -d 1e30 -o "$W/f.hood" -- true
[ "$rc" = 2 ]; verdict 48 "record -d 1e30" $? "rc $rc"
run_limited "$W/e" "$HOOD" top -b -n 1 -d nan
[ "$rc" = 2 ]; verdict 49 "top -d nan" $? "rc $rc"

# --- R6: the cache through a link in a home the user controls (sudo -E) ---
mkdir -p "$W/home/.cache" "$W/elsewhere" && chown -R "$U" "$W/home" "$W/elsewhere"
as_user ln -s "$W/elsewhere" "$W/home/.cache/hood"
run_limited "$W/e" env HOME="$W/home" XDG_CACHE_HOME= "$HOOD" report -i "$W/base.hood"
[ -z "$(ls -A "$W/elsewhere")" ]; verdict 41 "symlinked ~/.cache/hood under HOME=user's" $? "root wrote $(ls "$W/elsewhere")"

# --- R11: serve without a token ---
port=$((20000 + RANDOM % 20000))
"$HOOD" serve --listen "127.0.0.1:$port" >/dev/null 2>&1 & srv=$!
pids+=("$srv")
for _ in $(seq 50); do curl -s "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
code=$(as_user curl -s -o /dev/null -w '%{http_code}' --max-time 30 "127.0.0.1:$port/debug/pprof/profile?seconds=1")
[ "$code" = 403 ]; verdict 44 "serve without token: whole-machine profile for another user" $? "HTTP $code"
kill "$srv" 2>/dev/null

# --- more of the issue's attacks: hangs, memory, terminal, secrets ---
if gcc -O1 -o "$W/victims" bench/attacks/victims.c 2>"$W/e"; then
    chmod 755 "$W/victims"
    # R1: a deleted executable whose "(deleted)" name is then a FIFO, then a link to a device.
    as_user cp /bin/sh "$W/gone"
    as_user_bg "$W/gone" -c 'while :; do :; done' & gone=$!
    pids+=("$gone")
    sleep 0.3
    as_user rm -f "$W/gone"
    as_user mkfifo "$W/gone (deleted)"
    run_limited "$W/e" "$HOOD" record -p "$gone" -d 1 -o "$W/g.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict 5 "deleted executable replaced by a FIFO named '(deleted)', record -p" $? "rc $rc: $(head -c 300 "$W/e")"
    run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/ga.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict 6 "deleted executable replaced by a FIFO named '(deleted)', record -a" $? "rc $rc: $(head -c 300 "$W/e")"
    run_limited "$W/e" "$HOOD" report -i "$W/g.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict 5 "deleted executable replaced by a FIFO named '(deleted)', report" $? "rc $rc: $(head -c 300 "$W/e")"
    # A state directory of its own, so no other root session's `hood start` is met or stopped.
    export HOOD_STATE_DIR="$W/state"
    run_limited "$W/e" "$HOOD" start -p "$gone" -o "$W/st.hood"
    start_rc=$rc
    run_limited "$W/e2" "$HOOD" stop
    unset HOOD_STATE_DIR
    [ "$start_rc" = 0 ] && ended_clearly && [ "$rc" = 0 ]
    verdict 7 "deleted executable replaced by a FIFO named '(deleted)', hood start/stop" $? "start rc $start_rc, stop rc $rc: $(head -c 300 "$W/e2")"
    as_user rm -f "$W/gone (deleted)"
    as_user ln -s /dev/zero "$W/gone (deleted)"
    run_limited "$W/e" "$HOOD" record -p "$gone" -d 1 -o "$W/g2.hood"
    r1=$rc m1=$rss
    run_limited "$W/e" "$HOOD" report -i "$W/g2.hood"
    ended_clearly && [ "$r1" = 0 ] && [ "$rc" = 0 ] && [ "$m1" -lt $((2 * base)) ]
    verdict 8 "deleted executable's '(deleted)' name a link to /dev/zero, record -p and report" $? "record rc $r1 ($m1 KiB, normal $base), report rc $rc"
    kill "$gone" 2>/dev/null

    # R1: code mapped from a file that is not an ELF, the file then replaced by a FIFO.
    as_user_bg "$W/victims" spin "$W/code" & spin=$!
    pids+=("$spin")
    sleep 0.3
    run_limited "$W/e" "$HOOD" record -p "$spin" -d 1 -o "$W/s.hood"
    kill "$spin" 2>/dev/null
    as_user rm -f "$W/code"
    as_user mkfifo "$W/code"
    run_limited "$W/e" "$HOOD" report -i "$W/s.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict 9 "mmapped non-ELF file replaced by a FIFO, report" $? "rc $rc: $(head -c 300 "$W/e")"

    # R2: 4 processes with 30,000 executable mappings of a 3,000-byte path each.
    mp=()
    for i in 1 2 3 4; do
        as_user_bg "$W/victims" maps "$W/m$i" 30000 >"$W/m$i.out" & mp+=("$!")
    done
    pids+=("${mp[@]}")
    for _ in $(seq 600); do
        [ "$(cat "$W"/m?.out 2>/dev/null | grep -c mapped)" = 4 ] && break
        sleep 0.1
    done
    run_limited "$W/e" "$HOOD" record -p "$(IFS=,; echo "${mp[*]}")" -d 1 -o "$W/m.hood"
    ended_clearly && [ "$rss" -lt $((2 * base)) ] && grep -q "were not kept" "$W/e"
    verdict 22 "4 processes x 30,000 long-path mappings, record -p ($rss KiB; normal $base KiB)" $? "rc $rc, $rss KiB (normal $base KiB): $(head -c 300 "$W/e")"
    for p in "${mp[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$W"/m?

    # R3: JIT code whose perf map names it with an escape sequence.
    as_user_bg "$W/victims" jit >"$W/jit.out" & jit=$!
    pids+=("$jit")
    sleep 0.3
    as_user sh -c "printf '%s 10 evil\033]0;pwned\007\n' $(cat "$W/jit.out") >/tmp/perf-$jit.map"
    run_limited "$W/e" "$HOOD" record -p "$jit" -d 1 -o "$W/jit.hood"
    kill "$jit" 2>/dev/null
    rm -f "/tmp/perf-$jit.map"
    timeout "$LIMIT" "$HOOD" report -i "$W/jit.hood" >"$W/out" 2>&1
    rc=$?
    [ "$rc" = 0 ] && ! grep -q $'\033' "$W/out" && grep -q 'evil.*pwned' "$W/out"
    verdict 35 "escape in a perf map's symbol name, report" $? "rc $rc; raw ESC in the output, or the name not shown"
else
    echo "skipped the attacks that need gcc: $(head -c 200 "$W/e")"
fi

# R2: a user's loopback UDP flood while root records its sender and receiver with --labels
# (the events are traced machine-wide either way; -p keeps the report's symbolizing, which
# on a busy machine takes far more than the labels do, to the two small processes).
if gcc -O1 -o "$W/flood" tests/c/labels_udp.c 2>"$W/e"; then
    chmod 755 "$W/flood"
    as_user_bg "$W/flood" 6 >/dev/null & fl=$!
    pids+=("$fl")
    sleep 0.3
    rx=$(pgrep -P "$fl" | head -1)
    run_limited "$W/e" "$HOOD" record -p "$fl,${rx:-$fl}" --labels -d 4 -o "$W/flood.hood"
    r1=$rc
    wait "$fl" 2>/dev/null
    run_limited "$W/e" "$HOOD" report -i "$W/flood.hood" --format collapsed
    plain=$rss
    run_limited "$W/e" "$HOOD" report -i "$W/flood.hood" --labels --format collapsed
    ended_clearly && [ "$r1" = 0 ] && [ "$rc" = 0 ] && [ "$rss" -lt $((plain + 32768)) ]
    verdict 28 "loopback UDP flood during record -p --labels, report --labels ($rss KiB; plain report $plain KiB)" $? "record rc $r1, report rc $rc, $rss KiB (plain $plain KiB)"
else
    echo "skipped the attacks that need gcc: $(head -c 200 "$W/e")"
fi

# R3: an escape sequence in a busy binary's path, in every report of it.
esc2=$(printf 'x\033]0;pwned\007y')
as_user cp /bin/sh "$W/$esc2"
as_user_bg "$W/$esc2" -c 'while :; do :; done' & busy=$!
pids+=("$busy")
sleep 0.3
run_limited "$W/e" "$HOOD" record -p "$busy" -d 1 -o "$W/esc.hood"
kill "$busy" 2>/dev/null
for by in function dso process comm; do
    timeout "$LIMIT" "$HOOD" report -i "$W/esc.hood" --by "$by" >"$W/out" 2>&1
    rc=$?
    [ "$rc" = 0 ] && ! grep -q $'\033' "$W/out" && grep -q 'pwned' "$W/out"
    verdict 37 "escape in a binary's path, report --by $by" $? "rc $rc; raw ESC in the output, or the name not shown"
done

# R7: a perf map that is a link to /etc/shadow, where the kernel would let root follow it.
if old_ps=$(sysctl -n fs.protected_symlinks 2>/dev/null) && sysctl -qw fs.protected_symlinks=0; then
    as_user ln -s /etc/shadow "/tmp/perf-$victim.map"
    run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/sh.hood"
    sysctl -qw fs.protected_symlinks="$old_ps"
    ended_clearly && [ "$rc" = 0 ] && grep -q "perf-$victim.map" "$W/e" \
        && ! "$HOOD" report -i "$W/sh.hood" --format json 2>/dev/null | grep -q 'root:'
    verdict 42 "perf map linked to /etc/shadow (protected_symlinks=0), record -p" $? "rc $rc: $(head -c 300 "$W/e")"
    rm -f "/tmp/perf-$victim.map"
else
    echo "skipped the /etc/shadow perf-map link: fs.protected_symlinks cannot be set here"
fi

# --- R1/R2: a user's binary whose debug info is in a file its .gnu_debuglink names ---
# Without the symbol cache, every report reads the files (as root's first report does).
export HOOD_SYMBOL_CACHE=off
D="$W/dl"
printf 'int main(void) { for (;;); }\n' >"$W/busy.c"
mkdir "$D"
if gcc -g -O1 -o "$D/prog" "$W/busy.c" 2>"$W/e" && objcopy --only-keep-debug "$D/prog" "$D/prog.debug" \
    && objcopy --strip-debug --add-gnu-debuglink="$D/prog.debug" "$D/prog" 2>>"$W/e"; then
    chown -R "$U" "$D"
    as_user_bg "$D/prog" & dl=$!
    pids+=("$dl")
    sleep 0.3
    run_limited "$W/e" "$HOOD" record -p "$dl" -d 1 -o "$W/dl.hood"
    kill "$dl" 2>/dev/null
    run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
    normal=$rss
    # 10: a FIFO where the DWARF reader looks for split DWARF (BINARY.dwp).
    as_user mkfifo "$D/prog.dwp"
    run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict 10 "FIFO at BINARY.dwp, report" $? "rc $rc: $(head -c 300 "$W/e")"
    as_user rm -f "$D/prog.dwp"
    # 11: the debug link's target a FIFO.
    as_user mv "$D/prog.debug" "$D/prog.debug.real"
    as_user mkfifo "$D/prog.debug"
    run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict 11 "FIFO at the debug link's target, report" $? "rc $rc: $(head -c 300 "$W/e")"
    # 20: the debug link's target a 16 GiB sparse file (its CRC would take reading it all).
    as_user rm -f "$D/prog.debug"
    as_user truncate -s 16G "$D/prog.debug"
    t0=$(date +%s%N)
    run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
    ms=$((($(date +%s%N) - t0) / 1000000))
    ended_clearly && [ "$rc" = 0 ] && [ "$rss" -lt $((2 * normal + 65536)) ]
    verdict 20 "16 GiB sparse file at the debug link's target, report ($ms ms, $rss KiB; normal $normal KiB)" $? "rc $rc, $ms ms, $rss KiB: $(head -c 300 "$W/e")"
    as_user rm -f "$D/prog.debug"
    as_user mv "$D/prog.debug.real" "$D/prog.debug"
    # 12: the binary swapped for a FIFO and back, as fast as the user can, while root reports.
    as_user cp "$D/prog" "$D/prog.real"
    as_user_bg sh -c "cd '$D' && while :; do rm -f p.fifo; mkfifo p.fifo; mv -f p.fifo prog; cp prog.real p.tmp; mv -f p.tmp prog; done" &
    sw=$!
    pids+=("$sw")
    worst=0
    for _ in 1 2 3 4 5; do
        run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
        ended_clearly || worst=$rc
    done
    kill "$sw" 2>/dev/null
    [ "$worst" = 0 ]; verdict 12 "binary swapped for a FIFO and back during 5 reports" $? "a report hung (rc $worst)"
else
    echo "skipped the debug-link attacks (10, 11, 12, 20): $(head -c 200 "$W/e")"
fi

# --- R2: a decompression bomb served by the attacker's debuginfod ---
B="$W/bomb"
mkdir -p "$B"
if gcc -g -O1 -o "$B/prog" "$W/busy.c" 2>"$W/e" && objcopy --only-keep-debug "$B/prog" "$B/dbg" \
    && objcopy --strip-all "$B/prog" && objcopy --dump-section=.debug_str="$B/str" "$B/dbg" "$B/scratch" \
    && truncate -s +256M "$B/str" && objcopy --update-section=.debug_str="$B/str" "$B/dbg" "$B/big" \
    && objcopy --compress-debug-sections=zlib "$B/big" "$B/bomb" 2>>"$W/e" \
    && id=$(readelf -n "$B/prog" | awk '/Build ID/ { print $3 }') && [ -n "$id" ]; then
    rm -f "$B/str" "$B/big" "$B/scratch"
    mkdir -p "$B/srv/buildid/$id"
    mv "$B/bomb" "$B/srv/buildid/$id/debuginfo"
    chown -R "$U" "$B"
    dport=$((20000 + RANDOM % 20000))
    as_user_bg /usr/bin/python3 -m http.server -b 127.0.0.1 -d "$B/srv" "$dport" >/dev/null 2>&1 &
    pids+=("$!")
    as_user_bg "$B/prog" & bp=$!
    pids+=("$bp")
    sleep 1
    run_limited "$W/e" "$HOOD" record -p "$bp" -d 1 -o "$W/bomb.hood"
    kill "$bp" 2>/dev/null
    run_limited "$W/e" env -u DEBUGINFOD_URLS "$HOOD" report -i "$W/bomb.hood"
    normal=$rss
    mkdir -m 700 "$W/dcache"
    run_limited "$W/e" env DEBUGINFOD_URLS="http://127.0.0.1:$dport" DEBUGINFOD_CACHE_PATH="$W/dcache" \
        "$HOOD" report -i "$W/bomb.hood"
    ended_clearly && [ "$rc" = 0 ] && [ "$rss" -lt $((2 * normal + 65536)) ] && grep -q "64 times" "$W/o"
    verdict 24 "zlib bomb served by debuginfod, report ($rss KiB; without debuginfod $normal KiB)" $? "rc $rc, $rss KiB, no warning naming the bomb: $(head -c 300 "$W/e")"
else
    echo "skipped the debuginfod bomb (24): $(head -c 200 "$W/e")"
fi
unset HOOD_SYMBOL_CACHE

# --- R1: the executable a user's `hood calls` segment names, a FIFO by the time of the report ---
C="$W/calls"
mkdir -p "$C/cache"
printf '%s\n' '__attribute__((noinline)) void f(void) { for (volatile int i = 0; i < 1000; i++); }' \
    'int main(void) { for (;;) f(); }' >"$W/cprog.c"
if gcc -finstrument-functions -O1 -o "$C/cprog" "$W/cprog.c" 2>"$W/e"; then
    chown -R "$U" "$C"
    as_user_bg env XDG_CACHE_HOME="$C/cache" "$HOOD" calls run -o "$C/u.calls" -- "$C/cprog" >/dev/null 2>&1 &
    cr=$!
    pids+=("$cr")
    cp=""
    for _ in $(seq 50); do cp=$(pgrep -x -u "$U" cprog | head -1); [ -n "$cp" ] && break; sleep 0.1; done
    sleep 1
    run_limited "$W/e" "$HOOD" calls get -p "${cp:-0}" -o "$W/root.calls"
    got=$rc
    kill "$cp" 2>/dev/null
    wait "$cr" 2>/dev/null
    as_user rm -f "$C/cprog"
    as_user mkfifo "$C/cprog"
    run_limited "$W/e" "$HOOD" calls report "$W/root.calls" --format pprof -o "$W/c.pb"
    [ "$got" = 0 ] && ended_clearly && [ "$rc" = 0 ]
    verdict 13 "FIFO at a calls segment's exe_path, calls report --format pprof" $? "calls get rc $got, report rc $rc: $(head -c 300 "$W/e")"
else
    echo "skipped the calls attack (13): $(head -c 200 "$W/e")"
fi

# --- held: hood serve under 900 parallel requests (the issue's wrk and curls) ---
port=$((20000 + RANDOM % 20000))
"$HOOD" serve --listen "127.0.0.1:$port" >/dev/null 2>&1 & srv=$!
pids+=("$srv")
for _ in $(seq 50); do curl -s "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
seq 900 | xargs -P 100 -I{} curl -s -o /dev/null --max-time 60 "127.0.0.1:$port/metrics?n={}" & flood=$!
codes=""
for _ in 1 2 3 4 5; do
    codes="$codes $(as_user curl -s -o /dev/null -w '%{http_code}' --max-time 5 "127.0.0.1:$port/healthz")"
    sleep 0.5
done
wait "$flood"
hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$srv/status")
kill "$srv" 2>/dev/null
[ "$codes" = " 200 200 200 200 200" ] && [ "${hwm:-999999}" -lt 65536 ]
verdict 57 "hood serve under 900 parallel /metrics requests (healthz within 5 s; peak $hwm KiB)" $? "healthz answered$codes, peak RSS ${hwm:-?} KiB"

# --- every number of bench/attacks/INDEX.md: this run's verdict, or the test that replays it ---
echo
echo "Issue 29's 66 attacks (bench/attacks/INDEX.md):"
rows=$(grep -E '^\| [0-9]+ \|' bench/attacks/INDEX.md)
held=0 failed=0 by_test=0 skipped=0
while IFS='|' read -r _ num what _ where _; do
    num=${num// /}
    where=$(echo "$where" | sed 's/^ *//; s/ *$//')
    what=$(echo "$what" | sed 's/^ *//; s/ *$//')
    v=${result[$num]:-}
    if [ -z "$v" ] && [ "${where%% *}" = test ] && [ "$run_tests" = 1 ]; then
        read -r _ crate target name <<<"$where"
        if [ "$target" = lib ]; then sel=(--lib); else sel=(--test "$target"); fi
        out=$(HOOD_REQUIRE_PRIVILEGED=1 timeout 1800 cargo test -q -p "$crate" "${sel[@]}" -- --exact "$name" --nocapture 2>&1 </dev/null)
        if ! grep -q "test result: ok. 1 passed" <<<"$out"; then v=FAILED
        elif grep -qE "SKIPPED|not run here" <<<"$out"; then v=skipped
        else v=held; fi
        [ "$v" = held ] || echo "$out" | tail -30 >"$W/test-$num.log"
    fi
    case $v in
        held) held=$((held + 1)); printf '%-8s #%-2s %s (%s)\n' held "$num" "$what" "$where" ;;
        FAILED) failed=$((failed + 1)); printf '%-8s #%-2s %s (%s)\n' FAILED "$num" "$what" "$where"
            [ -f "$W/test-$num.log" ] && sed 's/^/          /' "$W/test-$num.log" ;;
        skipped) skipped=$((skipped + 1)); printf '%-8s #%-2s %s (%s: a tool it needs is missing)\n' skipped "$num" "$what" "$where" ;;
        *) if [ "${where%% *}" = test ]; then by_test=$((by_test + 1)); printf '%-8s #%-2s %s (%s; run.sh --tests runs it)\n' "by test" "$num" "$what" "$where"
           else skipped=$((skipped + 1)); printf '%-8s #%-2s %s (its case was skipped above)\n' "not run" "$num" "$what"; fi ;;
    esac
done <<<"$rows"
echo "$held held, $failed failed of 66; $by_test left to tests (--tests runs them), $skipped not run"
[ "$failed" = 0 ]
