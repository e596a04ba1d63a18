#!/usr/bin/env bash
# Issue 29's attacks of an unprivileged local user on root's hood, replayed, numbered as in
# bench/attacks/INDEX.md: each case plants what the issue's attacker planted (as a throwaway
# user, hood-attacker), runs root's hood the documented way, and prints `held` or `FAILED`
# with the attack's number, name and what was seen.
#
# The rule for time and memory (issue 29: "no hang > 2 s, root's hood at <= 2x its normal
# memory"): every case that runs root's hood also runs the same hood command, in the same run,
# on a benign version of its input -- the same program or recording without the planted thing
# (a perf map that is not there, the executable not deleted, the debug file where it belongs,
# a debuginfod that serves the real debug file, a process with a plain name ...). Where the
# planted thing is the only input (a FIFO as -i, --symfile, --token-file; /dev/zero as those),
# the baseline is the same command on a small normal file of that kind (a recording of this
# run, a two-line symbol file, a one-line token file with nothing on it). The attacked run
# fails the case when it
#   - takes longer than its baseline's wall time + 2 s (SLACK_MS=2000), or
#   - peaks above 2x its baseline's peak RSS, or above the baseline + 16 MiB when that is more
#     (FLOOR_KIB=16384: a 3 MiB baseline does not fail on noise).
# Each verdict line ends with the attacked run's figures beside its baseline's:
# `[1.21 s 41.3 MiB vs 1.19 s 40.8 MiB]` (`OVER` marks a broken rule). Peak RSS is the
# command's maximum resident set (GNU time's %M); for `hood serve` it is the server's VmHWM when
# it is stopped, and for `hood start` the background recorder's VmHWM, read every 50 ms until it
# ends. Times of `hood serve` cases are the curl requests' total time. A run still going
# after LIMIT seconds (default 20) is killed; it has broken the rule long before.
#
# Run as root on a machine you may profile:
#   bench/attacks/run.sh [--tests] [HOOD]      (default HOOD: $CARGO_TARGET_DIR/debug/hood)
# Ends with one line per number of the 66 (held, FAILED, or the test that replays it) and
# the totals; exits 1 when any failed. --tests also runs, as root with
# HOOD_REQUIRE_PRIVILEGED=1, each test the index names (cargo test, so it builds them), and
# counts them: a test that was skipped for a missing tool counts as not run. Needs gcc and
# objcopy for the attacks that run programs of their own (bench/attacks/victims.c), tmux for
# the interactive top, python3 for the attacker's debuginfod, and sets fs.protected_symlinks=0
# for a moment (put back) for the perf-map link to /etc/shadow.
set -uo pipefail
cd "$(dirname "$0")/../.."
run_tests=0
[ "${1:-}" = --tests ] && { run_tests=1; shift; }
HOOD=$(realpath "${1:-${CARGO_TARGET_DIR:-target}/debug/hood}")
LIMIT=${LIMIT:-20}
SLACK_MS=${SLACK_MS:-2000}
FLOOR_KIB=${FLOOR_KIB:-16384}
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
figs=""
# verdict NUMBER NAME OK(0/1) DETAIL: a number with several checks fails if any does. The
# figures `bounded` gathered since the last verdict end the line.
verdict() {
    local f=${figs:+ [$figs]}
    figs=""
    if [ "$3" = 0 ]; then
        echo "held    #$1 $2$f"
        [ "${result[$1]:-}" = FAILED ] || result[$1]=held
    else
        echo "FAILED  #$1 $2: $4$f"
        result[$1]=FAILED
    fi
}
# run_limited OUTFILE CMD...: rc in $rc (124: hung), wall time in $ms, peak RSS KiB in $rss,
# stderr in OUTFILE, stdout in $W/o.
run_limited() {
    local out=$1 t0
    shift
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$W/rss" timeout -k 2 "$LIMIT" "$@" >"$W/o" 2>"$out" </dev/null
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    rss=$(tail -1 "$W/rss" 2>/dev/null | tr -dc 0-9)
    rss=${rss:-0}
}
ended_clearly() { [ "$rc" != 124 ] && [ "$rc" != 137 ] && [ "$rc" != 101 ]; }

# The baselines: keep NAME stores the last run's $ms and $rss as baseline NAME; bounded NAME
# [LABEL] holds the last run to it by the rule above, adds both figures to the verdict's line
# and returns 1 when the rule is broken.
declare -A base_ms base_kib
keep() { base_ms[$1]=$ms base_kib[$1]=$rss; }
secs() { printf '%d.%02d' $(($1 / 1000)) $(($1 % 1000 / 10)); }
mib() { printf '%d.%d' $(($1 / 1024)) $(($1 % 1024 * 10 / 1024)); }
bounded() {
    local b=${base_ms[$1]:-} k=${base_kib[$1]:-} cap over=""
    if [ -z "$b" ]; then
        figs+="${figs:+; }${2:+$2: }no baseline ($1)"
        return 1
    fi
    cap=$((2 * k))
    [ "$cap" -lt $((k + FLOOR_KIB)) ] && cap=$((k + FLOOR_KIB))
    { [ "$ms" -le $((b + SLACK_MS)) ] && [ "$rss" -le "$cap" ]; } || over=" OVER"
    figs+="${figs:+; }${2:+$2: }$(secs "$ms") s $(mib "$rss") MiB vs $(secs "$b") s $(mib "$k") MiB$over"
    [ -z "$over" ]
}
# peak_of PID: the process's VmHWM (KiB) into $W/peak every 50 ms until it ends (at most
# LIMIT seconds).
peak_of() {
    local v i
    for ((i = 0; i < LIMIT * 20; i++)); do
        v=$(awk '/VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null)
        [ -n "$v" ] || break
        echo "$v" >"$W/peak"
        sleep 0.05
    done
}
# start_stop PID OUT: `hood start -p PID -o OUT`, half a second, `hood stop`, in a state
# directory of its own (so no other root session's `hood start` is met or stopped). start's
# rc in $start_rc, stop's in $rc and its stderr in $W/e2; $ms is both commands' time, $rss
# the background recorder's peak.
start_stop() {
    local t rec watcher=""
    export HOOD_STATE_DIR="$W/state-$RANDOM$RANDOM"
    run_limited "$W/e" "$HOOD" start -p "$1" -o "$2"
    start_rc=$rc t=$ms
    rec=$(grep -o 'pid [0-9]*' "$W/o" | head -1 | tr -dc 0-9)
    rm -f "$W/peak"
    if [ -n "$rec" ]; then peak_of "$rec" & watcher=$!; fi
    sleep 0.5
    run_limited "$W/e2" "$HOOD" stop
    unset HOOD_STATE_DIR
    [ -n "$watcher" ] && wait "$watcher"
    [ -n "$rec" ] && kill -9 "$rec" 2>/dev/null
    ms=$((t + ms))
    rss=$(cat "$W/peak" 2>/dev/null || echo 0)
}
# serve_up [ARGS...]: a `hood serve` on a port of its own (pid $srv, port $port), answering;
# $ms and $codes start empty for `get`. serve_down: its VmHWM in $rss, then stopped.
serve_up() {
    port=$((20000 + RANDOM % 20000))
    "$HOOD" serve --listen "127.0.0.1:$port" "$@" >/dev/null 2>&1 &
    srv=$!
    pids+=("$srv")
    for _ in $(seq 50); do curl -s "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
    ms=0 codes=""
}
serve_down() {
    rss=$(awk '/VmHWM/ { print $2 }' "/proc/$srv/status" 2>/dev/null)
    rss=${rss:-0}
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
}
# get PATH [as]: one request to the server (as the attacker with `as`); the HTTP code is added
# to $codes and its time to $ms.
get() {
    local r
    local c=(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time "$LIMIT" "127.0.0.1:$port$1")
    if [ "${2:-}" = as ]; then r=$(as_user "${c[@]}"); else r=$("${c[@]}"); fi
    codes+=" ${r% *}"
    ms=$((ms + $(awk -v t="${r#* }" 'BEGIN { printf "%d", t * 1000 }')))
}

# A victim process of the attacker's, busy, sampled by root.
as_user_bg sh -c 'while :; do :; done' & victim=$!
pids+=("$victim")
sleep 0.3

# --- baselines of the commands the FIFO perf map attacks, before it is planted ---
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/base.hood"
keep rec_p
run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/basea.hood"
keep rec_a
start_stop "$victim" "$W/bases.hood"
keep start_stop
serve_up
get "/debug/pprof/profile?seconds=1&pid=$victim"
get "/debug/pprof/profile?seconds=1&pid=$victim"
t=$ms
serve_down
ms=$t
keep serve_profile
# Small normal inputs for the commands whose only input is planted: the recording above, a
# call-path and a trace recording of a short program built with -finstrument-functions, a
# two-line symbol file, a one-line token file with nothing on it (refused for its content,
# as a FIFO is refused for its kind).
calls_in="$W/base.hood" trace_in="$W/base.hood"
printf '%s\n' '__attribute__((noinline)) void f(void) { for (volatile int i = 0; i < 100; i++); }' \
    'int main(void) { for (int i = 0; i < 20000; i++) f(); return 0; }' >"$W/short.c"
if gcc -finstrument-functions -O1 -o "$W/short" "$W/short.c" 2>/dev/null; then
    "$HOOD" calls run -o "$W/base.calls" -- "$W/short" >/dev/null 2>&1 && calls_in="$W/base.calls"
    "$HOOD" trace record -o "$W/base.trace" -- "$W/short" >/dev/null 2>&1 && trace_in="$W/base.trace"
fi
printf '%s\n' '0000000000401000 T alpha' '0000000000401100 T beta' >"$W/normal.sym"
echo >"$W/empty.tok"

# --- R1: files opened blocking ---
as_user mkfifo "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r1.hood"
ended_clearly && [ "$rc" = 0 ]; ok=$?
bounded rec_p || ok=1
verdict 1 "FIFO at /tmp/perf-PID.map, record -p" $ok "rc $rc: $(head -c 300 "$W/e")"
run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/r1a.hood"
ended_clearly && [ "$rc" = 0 ]; ok=$?
bounded rec_a || ok=1
verdict 2 "FIFO at /tmp/perf-PID.map, record -a" $ok "rc $rc: $(head -c 300 "$W/e")"
start_stop "$victim" "$W/r1s.hood"
[ "$start_rc" = 0 ] && ended_clearly && [ "$rc" = 0 ]; ok=$?
bounded start_stop || ok=1
verdict 3 "FIFO at /tmp/perf-PID.map, hood start/stop" $ok "start rc $start_rc, stop rc $rc: $(head -c 300 "$W/e2")"
# hood serve's profile endpoint: the FIFO must neither hang a profile nor block the next one.
serve_up
get "/debug/pprof/profile?seconds=1&pid=$victim"
get "/debug/pprof/profile?seconds=1&pid=$victim"
t=$ms
serve_down
ms=$t
[ "$codes" = " 200 200" ]; ok=$?
bounded serve_profile || ok=1
verdict 4 "FIFO at /tmp/perf-PID.map, serve's profile endpoint twice" $ok "HTTP$codes"
rm -f "/tmp/perf-$victim.map"

as_user mkfifo "$W/planted"
# Baselines: the same commands on small normal recordings of their kind.
run_limited "$W/e" "$HOOD" report -i "$W/base.hood"
keep in_report
run_limited "$W/e" "$HOOD" annotate main -i "$W/base.hood"
keep in_annotate
run_limited "$W/e" "$HOOD" calls report "$calls_in"
keep in_calls
run_limited "$W/e" "$HOOD" trace report "$trace_in"
keep in_trace
for cmd in "report -i" "annotate main -i" "calls report" "trace report"; do
    # shellcheck disable=SC2086
    run_limited "$W/e" "$HOOD" $cmd "$W/planted"
    ended_clearly && [ "$rc" != 0 ] && grep -q planted "$W/e"; ok=$?
    case $cmd in report*) n=14 b=in_report ;; annotate*) n=14 b=in_annotate ;;
        calls*) n=15 b=in_calls ;; *) n=15 b=in_trace ;; esac
    bounded $b || ok=1
    verdict $n "FIFO as input of $cmd" $ok "rc $rc: $(head -c 300 "$W/e")"
done
run_limited "$W/e" "$HOOD" report -i "$W/base.hood" --symfile "$W/normal.sym"
keep symfile
run_limited "$W/e" "$HOOD" report -i "$W/base.hood" --symfile "$W/planted"
ended_clearly && [ "$rc" != 0 ]; ok=$?
bounded symfile || ok=1
verdict 16 "FIFO as --symfile" $ok "rc $rc"
run_limited "$W/e" "$HOOD" serve --listen 127.0.0.1:0 --token-file "$W/empty.tok"
keep token_file
run_limited "$W/e" "$HOOD" serve --listen 127.0.0.1:0 --token-file "$W/planted"
ended_clearly && [ "$rc" != 0 ]; ok=$?
bounded token_file || ok=1
verdict 17 "FIFO as --token-file" $ok "rc $rc"

# --- R2: reads bounded ---
run_limited "$W/e" "$HOOD" report -i "$W/base.hood" --symfile /dev/zero
ended_clearly; ok=$?
bounded symfile || ok=1
verdict 29 "--symfile /dev/zero" $ok "rc $rc"
run_limited "$W/e" "$HOOD" serve --listen 127.0.0.1:0 --token-file /dev/zero
ended_clearly; ok=$?
bounded token_file || ok=1
verdict 30 "--token-file /dev/zero" $ok "rc $rc"
as_user truncate -s 1200M "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r2.hood"
ended_clearly && [ "$rc" = 0 ]; ok=$?
bounded rec_p || ok=1
verdict 18 "sparse 1.2 GB perf map, record -p" $ok "rc $rc: $(head -c 300 "$W/e")"
as_user truncate -s 10G "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r2b.hood"
ended_clearly && [ "$rc" = 0 ]; ok=$?
bounded rec_p || ok=1
verdict 19 "sparse 10 GB perf map, record -p" $ok "rc $rc: $(head -c 300 "$W/e")"
rm -f "/tmp/perf-$victim.map"

# --- R3: terminal escapes ---
# Baselines: the same commands with a process of a plain name and one of a plain command line.
cp /bin/sleep "$W/plainname"
as_user_bg "$W/plainname" 600 & plainpid=$!
pids+=("$plainpid")
as_user_bg /usr/bin/perl -e 'sleep 600' "plain argument" &
pids+=("$!")
sleep 0.3
for cmd in "ps" "ps -f" "top -b -n 1" "info"; do
    # shellcheck disable=SC2086
    run_limited "$W/e" "$HOOD" $cmd
    keep "mon_$cmd"
done
esc=$(printf '\033]0;pwned\007x')
cp /bin/sleep "$W/$esc"
as_user_bg "$W/$esc" 600 & escpid=$!
pids+=("$escpid")
as_user_bg /usr/bin/perl -e 'sleep 600' "$(printf 'arg\n   1 root FORGED-ROW')" &
pids+=("$!")
sleep 0.3
for cmd in "ps" "ps -f" "top -b -n 1" "info"; do
    # shellcheck disable=SC2086
    run_limited "$W/e" "$HOOD" $cmd
    cp "$W/o" "$W/out"
    case $cmd in ps) n=31 ;; "ps -f") n=32 ;; *) n=34 ;; esac
    ! grep -q $'\033' "$W/out"; ok=$?
    bounded "mon_$cmd" || ok=1
    verdict $n "escape in comm/argv, hood $cmd" $ok "raw ESC in the output"
    case $cmd in ps*)
        ! grep -q '^[0-9 ]*1 root FORGED-ROW' "$W/out"
        verdict 33 "newline in argv, hood $cmd" $? "a forged row in the output" ;;
    esac
done
# The interactive top in a tmux pane of its own, showing the process with the planted name:
# a title sequence that reached the terminal would be tmux's pane title. The baseline is the
# same top showing the process with the plain name; the time is until the name is shown, the
# memory top's VmHWM then.
# tmux_top PID NAME: $shown (1 when NAME was shown), $title, $ms, $rss.
tmux_top() {
    local t0 p
    t0=$(date +%s%N)
    tmux -L hood-attacks new-session -d -s top -x 160 -y 40 "exec $HOOD top -d 0.5 -p $1"
    shown=0
    for _ in $(seq 60); do
        tmux -L hood-attacks capture-pane -p -t top | grep -q "$2" && { shown=1; break; }
        sleep 0.25
    done
    ms=$((($(date +%s%N) - t0) / 1000000))
    title=$(tmux -L hood-attacks display -p -t top '#{pane_title}')
    p=$(tmux -L hood-attacks display -p -t top '#{pane_pid}')
    rss=$(awk '/VmHWM/ { print $2 }' "/proc/$p/status" 2>/dev/null)
    rss=${rss:-0}
    tmux -L hood-attacks kill-server
}
if command -v tmux >/dev/null; then
    tmux_top "$plainpid" plainname
    keep top_interactive
    tmux_top "$escpid" pwned
    [ "$shown" = 1 ] && [ "$title" != pwned ]; ok=$?
    bounded top_interactive || ok=1
    verdict 64 "escape in comm, interactive hood top (in tmux)" $ok "pane title '$title', name shown: $shown"
else
    echo "skipped the interactive top (64): no tmux"
fi

# --- R4/R8: output files (the baseline: record -p to a new file, from the start) ---
as_user mkfifo "$W/out.hood"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/out.hood"
ended_clearly && [ "$rc" != 0 ] && grep -q out.hood "$W/e"; ok=$?
bounded rec_p || ok=1
verdict 39 "FIFO planted at -o" $ok "rc $rc: $(head -c 300 "$W/e")"
as_user touch "$W/theirs.hood"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/theirs.hood"
ended_clearly && [ "$rc" != 0 ] && [ ! -s "$W/theirs.hood" ]; ok=$?
bounded rec_p || ok=1
verdict 39 "another user's file at -o" $ok "rc $rc"
"$HOOD" record -p "$victim" -d 2 -o "$W/two.hood" >/dev/null 2>&1 & first=$!
sleep 0.5
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/two.hood"
wait "$first"
[ "$rc" != 0 ] && grep -q "another hood" "$W/e"; ok=$?
bounded rec_p || ok=1
verdict 46 "two writers of one -o" $ok "second writer rc $rc: $(head -c 300 "$W/e")"

# --- R10: floats (baselines: the same commands with ordinary numbers) ---
run_limited "$W/e" "$HOOD" record -d 1 -o "$W/f0.hood" -- true
keep rec_true
run_limited "$W/e" "$HOOD" record -d 1e30 -o "$W/f.hood" -- true
[ "$rc" = 2 ]; ok=$?
bounded rec_true || ok=1
verdict 48 "record -d 1e30" $ok "rc $rc"
run_limited "$W/e" "$HOOD" top -b -n 1 -d 1
keep top_d
run_limited "$W/e" "$HOOD" top -b -n 1 -d nan
[ "$rc" = 2 ]; ok=$?
bounded top_d || ok=1
verdict 49 "top -d nan" $ok "rc $rc"

# --- R6: the cache through a link in a home the user controls (sudo -E) ---
# The baseline: the same report with HOME a fresh directory of root's (a cold cache there).
mkdir -p "$W/roothome"
run_limited "$W/e" env HOME="$W/roothome" XDG_CACHE_HOME= "$HOOD" report -i "$W/base.hood"
keep report_home
mkdir -p "$W/home/.cache" "$W/elsewhere" && chown -R "$U" "$W/home" "$W/elsewhere"
as_user ln -s "$W/elsewhere" "$W/home/.cache/hood"
run_limited "$W/e" env HOME="$W/home" XDG_CACHE_HOME= "$HOOD" report -i "$W/base.hood"
[ -z "$(ls -A "$W/elsewhere")" ]; ok=$?
bounded report_home || ok=1
verdict 41 "symlinked ~/.cache/hood under HOME=user's" $ok "root wrote $(ls "$W/elsewhere")"

# --- R11: serve without a token (the baseline: the same request from root, answered) ---
serve_up
get "/debug/pprof/profile?seconds=1"
t=$ms
serve_down
ms=$t
keep serve_root
serve_up
get "/debug/pprof/profile?seconds=1" as
t=$ms
serve_down
ms=$t
[ "$codes" = " 403" ]; ok=$?
bounded serve_root || ok=1
verdict 44 "serve without token: whole-machine profile for another user" $ok "HTTP$codes"

# --- more of the issue's attacks: hangs, memory, terminal, secrets ---
if gcc -O1 -o "$W/victims" bench/attacks/victims.c 2>"$W/e"; then
    chmod 755 "$W/victims"
    # R1: a deleted executable whose "(deleted)" name is then a FIFO, then a link to a device.
    # The baselines: the same commands while the executable is still there.
    as_user cp /bin/sh "$W/gone"
    as_user_bg "$W/gone" -c 'while :; do :; done' & gone=$!
    pids+=("$gone")
    sleep 0.3
    run_limited "$W/e" "$HOOD" record -p "$gone" -d 1 -o "$W/g0.hood"
    keep rec_gone
    run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/ga0.hood"
    keep rec_a_gone
    run_limited "$W/e" "$HOOD" report -i "$W/g0.hood"
    keep report_gone
    start_stop "$gone" "$W/st0.hood"
    keep start_stop_gone
    as_user rm -f "$W/gone"
    as_user mkfifo "$W/gone (deleted)"
    run_limited "$W/e" "$HOOD" record -p "$gone" -d 1 -o "$W/g.hood"
    ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded rec_gone || ok=1
    verdict 5 "deleted executable replaced by a FIFO named '(deleted)', record -p" $ok "rc $rc: $(head -c 300 "$W/e")"
    run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/ga.hood"
    ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded rec_a_gone || ok=1
    verdict 6 "deleted executable replaced by a FIFO named '(deleted)', record -a" $ok "rc $rc: $(head -c 300 "$W/e")"
    run_limited "$W/e" "$HOOD" report -i "$W/g.hood"
    ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded report_gone || ok=1
    verdict 5 "deleted executable replaced by a FIFO named '(deleted)', report" $ok "rc $rc: $(head -c 300 "$W/e")"
    start_stop "$gone" "$W/st.hood"
    [ "$start_rc" = 0 ] && ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded start_stop_gone || ok=1
    verdict 7 "deleted executable replaced by a FIFO named '(deleted)', hood start/stop" $ok "start rc $start_rc, stop rc $rc: $(head -c 300 "$W/e2")"
    as_user rm -f "$W/gone (deleted)"
    as_user ln -s /dev/zero "$W/gone (deleted)"
    run_limited "$W/e" "$HOOD" record -p "$gone" -d 1 -o "$W/g2.hood"
    r1=$rc
    bounded rec_gone record; ok=$?
    run_limited "$W/e" "$HOOD" report -i "$W/g2.hood"
    bounded report_gone report || ok=1
    [ "$ok" = 0 ] && ended_clearly && [ "$r1" = 0 ] && [ "$rc" = 0 ]
    verdict 8 "deleted executable's '(deleted)' name a link to /dev/zero, record -p and report" $? "record rc $r1, report rc $rc"
    kill "$gone" 2>/dev/null

    # R1: code mapped from a file that is not an ELF, the file then replaced by a FIFO (the
    # baseline: the same report while the file is there).
    as_user_bg "$W/victims" spin "$W/code" & spin=$!
    pids+=("$spin")
    sleep 0.3
    run_limited "$W/e" "$HOOD" record -p "$spin" -d 1 -o "$W/s.hood"
    kill "$spin" 2>/dev/null
    run_limited "$W/e" "$HOOD" report -i "$W/s.hood"
    keep report_spin
    as_user rm -f "$W/code"
    as_user mkfifo "$W/code"
    run_limited "$W/e" "$HOOD" report -i "$W/s.hood"
    ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded report_spin || ok=1
    verdict 9 "mmapped non-ELF file replaced by a FIFO, report" $ok "rc $rc: $(head -c 300 "$W/e")"

    # R2: 4 processes with 30,000 executable mappings of a 3,000-byte path each (the baseline:
    # the same 4 processes with 8 mappings each).
    # maps_procs N: 4 attacker processes with N mappings each, mapped, in ${mp[@]}.
    maps_procs() {
        mp=()
        for i in 1 2 3 4; do
            as_user_bg "$W/victims" maps "$W/m$i" "$1" >"$W/m$i.out" & mp+=("$!")
        done
        pids+=("${mp[@]}")
        for _ in $(seq 600); do
            [ "$(cat "$W"/m?.out 2>/dev/null | grep -c mapped)" = 4 ] && break
            sleep 0.1
        done
    }
    maps_procs 8
    run_limited "$W/e" "$HOOD" record -p "$(IFS=,; echo "${mp[*]}")" -d 1 -o "$W/m0.hood"
    keep rec_maps
    for p in "${mp[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$W"/m? "$W"/m?.out
    maps_procs 30000
    run_limited "$W/e" "$HOOD" record -p "$(IFS=,; echo "${mp[*]}")" -d 1 -o "$W/m.hood"
    ended_clearly && grep -q "were not kept" "$W/e"; ok=$?
    bounded rec_maps || ok=1
    verdict 22 "4 processes x 30,000 long-path mappings, record -p" $ok "rc $rc: $(head -c 300 "$W/e")"
    for p in "${mp[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$W"/m?

    # R3: JIT code whose perf map names it with an escape sequence (the baseline: the same
    # process recorded and reported with a plain name in its perf map).
    as_user_bg "$W/victims" jit >"$W/jit.out" & jit=$!
    pids+=("$jit")
    sleep 0.3
    as_user sh -c "printf '%s 10 plainjit\n' $(cat "$W/jit.out") >/tmp/perf-$jit.map"
    run_limited "$W/e" "$HOOD" record -p "$jit" -d 1 -o "$W/jit0.hood"
    keep rec_jit
    run_limited "$W/e" "$HOOD" report -i "$W/jit0.hood"
    keep report_jit
    as_user sh -c "printf '%s 10 evil\033]0;pwned\007\n' $(cat "$W/jit.out") >/tmp/perf-$jit.map"
    run_limited "$W/e" "$HOOD" record -p "$jit" -d 1 -o "$W/jit.hood"
    bounded rec_jit record; ok=$?
    kill "$jit" 2>/dev/null
    rm -f "/tmp/perf-$jit.map"
    run_limited "$W/e" "$HOOD" report -i "$W/jit.hood"
    bounded report_jit report || ok=1
    [ "$ok" = 0 ] && [ "$rc" = 0 ] && ! grep -q $'\033' "$W/o" && grep -q 'evil.*pwned' "$W/o"
    verdict 35 "escape in a perf map's symbol name, report" $? "rc $rc; raw ESC in the output, or the name not shown"
else
    echo "skipped the attacks that need gcc: $(head -c 200 "$W/e")"
fi

# R2: a user's loopback UDP flood while root records its sender and receiver with --labels
# (the events are traced machine-wide either way; -p keeps the report's symbolizing, which
# on a busy machine takes far more than the labels do, to the two small processes). The
# baseline: the same recording and report of the attacker's busy process, sending nothing.
if gcc -O1 -o "$W/flood" tests/c/labels_udp.c 2>"$W/e"; then
    chmod 755 "$W/flood"
    run_limited "$W/e" "$HOOD" record -p "$victim" --labels -d 4 -o "$W/quiet.hood"
    keep rec_labels
    run_limited "$W/e" "$HOOD" report -i "$W/quiet.hood" --labels --format collapsed
    keep report_labels
    as_user_bg "$W/flood" 6 >/dev/null & fl=$!
    pids+=("$fl")
    sleep 0.3
    rx=$(pgrep -P "$fl" | head -1)
    run_limited "$W/e" "$HOOD" record -p "$fl,${rx:-$fl}" --labels -d 4 -o "$W/flood.hood"
    r1=$rc
    bounded rec_labels record; ok=$?
    wait "$fl" 2>/dev/null
    run_limited "$W/e" "$HOOD" report -i "$W/flood.hood" --labels --format collapsed
    bounded report_labels report || ok=1
    [ "$ok" = 0 ] && ended_clearly && [ "$r1" = 0 ] && [ "$rc" = 0 ]
    verdict 28 "loopback UDP flood during record -p --labels, report --labels" $? "record rc $r1, report rc $rc"
else
    echo "skipped the attacks that need gcc: $(head -c 200 "$W/e")"
fi

# R3: an escape sequence in a busy binary's path, in every report of it (the baseline: the
# same reports of a copy at a plain path).
# busy_sh PATH OUT: a busy copy of sh at PATH, recorded into OUT.
busy_sh() {
    as_user cp /bin/sh "$1"
    as_user_bg "$1" -c 'while :; do :; done' & busy=$!
    pids+=("$busy")
    sleep 0.3
    run_limited "$W/e" "$HOOD" record -p "$busy" -d 1 -o "$2"
    kill "$busy" 2>/dev/null
}
busy_sh "$W/plainsh" "$W/plain.hood"
for by in function dso process comm; do
    run_limited "$W/e" "$HOOD" report -i "$W/plain.hood" --by "$by"
    keep "report_by_$by"
done
busy_sh "$W/$(printf 'x\033]0;pwned\007y')" "$W/esc.hood"
for by in function dso process comm; do
    run_limited "$W/e" "$HOOD" report -i "$W/esc.hood" --by "$by"
    cat "$W/e" >>"$W/o"
    [ "$rc" = 0 ] && ! grep -q $'\033' "$W/o" && grep -q 'pwned' "$W/o"; ok=$?
    bounded "report_by_$by" || ok=1
    verdict 37 "escape in a binary's path, report --by $by" $ok "rc $rc; raw ESC in the output, or the name not shown"
done

# R7: a perf map that is a link to /etc/shadow, where the kernel would let root follow it
# (the baseline: record -p without a perf map, from the start).
if old_ps=$(sysctl -n fs.protected_symlinks 2>/dev/null) && sysctl -qw fs.protected_symlinks=0; then
    as_user ln -s /etc/shadow "/tmp/perf-$victim.map"
    run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/sh.hood"
    sysctl -qw fs.protected_symlinks="$old_ps"
    bounded rec_p; ok=$?
    [ "$ok" = 0 ] && ended_clearly && [ "$rc" = 0 ] && grep -q "perf-$victim.map" "$W/e" \
        && ! "$HOOD" report -i "$W/sh.hood" --format json 2>/dev/null | grep -q 'root:'
    verdict 42 "perf map linked to /etc/shadow (protected_symlinks=0), record -p" $? "rc $rc: $(head -c 300 "$W/e")"
    rm -f "/tmp/perf-$victim.map"
else
    echo "skipped the /etc/shadow perf-map link: fs.protected_symlinks cannot be set here"
fi

# --- R1/R2: a user's binary whose debug info is in a file its .gnu_debuglink names ---
# Without the symbol cache, every report reads the files (as root's first report does). The
# baseline: the same report with the debug file where the link says.
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
    keep report_dl
    # 10: a FIFO where the DWARF reader looks for split DWARF (BINARY.dwp).
    as_user mkfifo "$D/prog.dwp"
    run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
    ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded report_dl || ok=1
    verdict 10 "FIFO at BINARY.dwp, report" $ok "rc $rc: $(head -c 300 "$W/e")"
    as_user rm -f "$D/prog.dwp"
    # 11: the debug link's target a FIFO.
    as_user mv "$D/prog.debug" "$D/prog.debug.real"
    as_user mkfifo "$D/prog.debug"
    run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
    ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded report_dl || ok=1
    verdict 11 "FIFO at the debug link's target, report" $ok "rc $rc: $(head -c 300 "$W/e")"
    # 20: the debug link's target a 16 GiB sparse file (its CRC would take reading it all).
    as_user rm -f "$D/prog.debug"
    as_user truncate -s 16G "$D/prog.debug"
    run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
    ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded report_dl || ok=1
    verdict 20 "16 GiB sparse file at the debug link's target, report" $ok "rc $rc: $(head -c 300 "$W/e")"
    as_user rm -f "$D/prog.debug"
    as_user mv "$D/prog.debug.real" "$D/prog.debug"
    # 12: the binary swapped for a FIFO and back, as fast as the user can, while root reports
    # (the slowest and largest of the five reports against the baseline).
    as_user cp "$D/prog" "$D/prog.real"
    as_user_bg sh -c "cd '$D' && while :; do rm -f p.fifo; mkfifo p.fifo; mv -f p.fifo prog; cp prog.real p.tmp; mv -f p.tmp prog; done" &
    sw=$!
    pids+=("$sw")
    worst=0 most_ms=0 most_kib=0
    for _ in 1 2 3 4 5; do
        run_limited "$W/e" "$HOOD" report -i "$W/dl.hood"
        ended_clearly || worst=$rc
        [ "$ms" -gt "$most_ms" ] && most_ms=$ms
        [ "$rss" -gt "$most_kib" ] && most_kib=$rss
    done
    kill "$sw" 2>/dev/null
    ms=$most_ms rss=$most_kib
    [ "$worst" = 0 ]; ok=$?
    bounded report_dl || ok=1
    verdict 12 "binary swapped for a FIFO and back during 5 reports" $ok "a report hung (rc $worst)"
else
    echo "skipped the debug-link attacks (10, 11, 12, 20): $(head -c 200 "$W/e")"
fi

# --- R2: a decompression bomb served by the attacker's debuginfod ---
# The baseline: the same report with the attacker's debuginfod serving the real debug file.
B="$W/bomb"
mkdir -p "$B"
if gcc -g -O1 -o "$B/prog" "$W/busy.c" 2>"$W/e" && objcopy --only-keep-debug "$B/prog" "$B/dbg" \
    && objcopy --strip-all "$B/prog" && objcopy --dump-section=.debug_str="$B/str" "$B/dbg" "$B/scratch" \
    && truncate -s +256M "$B/str" && objcopy --update-section=.debug_str="$B/str" "$B/dbg" "$B/big" \
    && objcopy --compress-debug-sections=zlib "$B/big" "$B/bomb" 2>>"$W/e" \
    && id=$(readelf -n "$B/prog" | awk '/Build ID/ { print $3 }') && [ -n "$id" ]; then
    rm -f "$B/str" "$B/big" "$B/scratch"
    mkdir -p "$B/srv/buildid/$id" "$B/good/buildid/$id"
    mv "$B/bomb" "$B/srv/buildid/$id/debuginfo"
    mv "$B/dbg" "$B/good/buildid/$id/debuginfo"
    chown -R "$U" "$B"
    dport=$((20000 + RANDOM % 20000))
    gport=$((dport + 1))
    as_user_bg /usr/bin/python3 -m http.server -b 127.0.0.1 -d "$B/srv" "$dport" >/dev/null 2>&1 &
    pids+=("$!")
    as_user_bg /usr/bin/python3 -m http.server -b 127.0.0.1 -d "$B/good" "$gport" >/dev/null 2>&1 &
    pids+=("$!")
    as_user_bg "$B/prog" & bp=$!
    pids+=("$bp")
    sleep 1
    run_limited "$W/e" "$HOOD" record -p "$bp" -d 1 -o "$W/bomb.hood"
    kill "$bp" 2>/dev/null
    mkdir -m 700 "$W/dcache" "$W/gcache"
    run_limited "$W/e" env DEBUGINFOD_URLS="http://127.0.0.1:$gport" DEBUGINFOD_CACHE_PATH="$W/gcache" \
        "$HOOD" report -i "$W/bomb.hood"
    keep report_debuginfod
    run_limited "$W/e" env DEBUGINFOD_URLS="http://127.0.0.1:$dport" DEBUGINFOD_CACHE_PATH="$W/dcache" \
        "$HOOD" report -i "$W/bomb.hood"
    ended_clearly && [ "$rc" = 0 ] && grep -q "64 times" "$W/o"; ok=$?
    bounded report_debuginfod || ok=1
    verdict 24 "zlib bomb served by debuginfod, report" $ok "rc $rc, or no warning naming the bomb: $(head -c 300 "$W/e")"
else
    echo "skipped the debuginfod bomb (24): $(head -c 200 "$W/e")"
fi
unset HOOD_SYMBOL_CACHE

# --- R1: the executable a user's `hood calls` segment names, a FIFO by the time of the report ---
# The baseline: the same report while the executable is there.
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
    run_limited "$W/e" "$HOOD" calls report "$W/root.calls" --format pprof -o "$W/c0.pb"
    keep calls_pprof
    as_user rm -f "$C/cprog"
    as_user mkfifo "$C/cprog"
    run_limited "$W/e" "$HOOD" calls report "$W/root.calls" --format pprof -o "$W/c.pb"
    [ "$got" = 0 ] && ended_clearly && [ "$rc" = 0 ]; ok=$?
    bounded calls_pprof || ok=1
    verdict 13 "FIFO at a calls segment's exe_path, calls report --format pprof" $ok "calls get rc $got, report rc $rc: $(head -c 300 "$W/e")"
else
    echo "skipped the calls attack (13): $(head -c 200 "$W/e")"
fi

# --- held: hood serve under 900 parallel requests (the issue's wrk and curls) ---
# The baseline: the same five /healthz requests to a server nobody else is asking.
serve_up
for _ in 1 2 3 4 5; do get /healthz as; sleep 0.5; done
t=$ms
serve_down
ms=$t
keep serve_healthz
serve_up
seq 900 | xargs -P 100 -I{} curl -s -o /dev/null --max-time 60 "127.0.0.1:$port/metrics?n={}" & flood=$!
for _ in 1 2 3 4 5; do get /healthz as; sleep 0.5; done
t=$ms
wait "$flood"
serve_down
ms=$t
[ "$codes" = " 200 200 200 200 200" ]; ok=$?
bounded serve_healthz || ok=1
verdict 57 "hood serve under 900 parallel /metrics requests (5 /healthz)" $ok "healthz answered$codes"

# --- every number of bench/attacks/INDEX.md: this run's verdict, or the test that replays it ---
echo
echo "Issue 29's 66 attacks (bench/attacks/INDEX.md):"
# (the rows of its numbered list only, not those of the table of measured figures above it)
rows=$(sed -n '/^## The 66 attacks/,$p' bench/attacks/INDEX.md | grep -E '^\| [0-9]+ \|')
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
