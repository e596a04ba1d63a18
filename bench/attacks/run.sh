#!/usr/bin/env bash
# Issue 29's attacks of an unprivileged local user on root's hood, replayed: each plants what
# the issue's attacker planted (as a throwaway user, hood-attacker), runs root's hood the
# documented way, and prints `held` or `FAILED` with the attack's name and what was seen.
# A hang counts as failed after LIMIT seconds (a working hood ends each in well under that).
# Run as root on a machine you may profile:
#   bench/attacks/run.sh [HOOD]      (default: target/debug/hood)
# Prints one line per attack, then "N held, M failed"; exits 1 when any failed. Needs gcc for
# the attacks that run programs of their own (bench/attacks/victims.c), and sets
# fs.protected_symlinks=0 for a moment (put back) for the perf-map link to /etc/shadow.
# The attacks not replayed here are covered by tests (listed at the end of the output).
set -uo pipefail
cd "$(dirname "$0")/../.."
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

held=0
failed=0
verdict() { # NAME OK(0/1) DETAIL
    if [ "$2" = 0 ]; then held=$((held + 1)); echo "held    $1"; else
        failed=$((failed + 1)); echo "FAILED  $1: $3"; fi
}
# run_limited OUTFILE CMD...: rc in $rc (124: hung), peak RSS KiB in $rss, stderr in OUTFILE.
run_limited() {
    local out=$1; shift
    /usr/bin/time -f '%M' -o "$W/rss" timeout -k 2 "$LIMIT" "$@" >/dev/null 2>"$out" </dev/null
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
ended_clearly && [ "$rc" = 0 ]; verdict "FIFO at /tmp/perf-PID.map, record -p" $? "rc $rc: $(head -c 300 "$W/e")"
run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/r1a.hood"
ended_clearly && [ "$rc" = 0 ]; verdict "FIFO at /tmp/perf-PID.map, record -a" $? "rc $rc: $(head -c 300 "$W/e")"
# A state directory of its own, so no other root session's `hood start` is met or stopped.
export HOOD_STATE_DIR="$W/state-fifo"
run_limited "$W/e" "$HOOD" start -p "$victim" -o "$W/r1s.hood"
start_rc=$rc
sleep 0.5
run_limited "$W/e2" "$HOOD" stop
unset HOOD_STATE_DIR
[ "$start_rc" = 0 ] && ended_clearly && [ "$rc" = 0 ]
verdict "FIFO at /tmp/perf-PID.map, hood start/stop" $? "start rc $start_rc, stop rc $rc: $(head -c 300 "$W/e2")"
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
[ "$codes" = " 200 200" ]; verdict "FIFO at /tmp/perf-PID.map, serve's profile endpoint twice" $? "HTTP$codes"
rm -f "/tmp/perf-$victim.map"

as_user mkfifo "$W/planted"
for cmd in "report -i" "annotate main -i" "calls report" "trace report"; do
    # shellcheck disable=SC2086
    run_limited "$W/e" "$HOOD" $cmd "$W/planted"
    ended_clearly && [ "$rc" != 0 ] && grep -q planted "$W/e"
    verdict "FIFO as input of $cmd" $? "rc $rc: $(head -c 300 "$W/e")"
done
run_limited "$W/e" "$HOOD" report -i "$W/r1.hood" --symfile "$W/planted"
ended_clearly && [ "$rc" != 0 ]; verdict "FIFO as --symfile" $? "rc $rc"
run_limited "$W/e" "$HOOD" serve --listen 127.0.0.1:0 --token-file "$W/planted"
ended_clearly && [ "$rc" != 0 ]; verdict "FIFO as --token-file" $? "rc $rc"

# --- R2: reads bounded ---
run_limited "$W/e" "$HOOD" report -i "$W/r1.hood" --symfile /dev/zero
ended_clearly && [ "$rss" -lt 1048576 ]; verdict "--symfile /dev/zero" $? "rc $rc, $rss KiB"
run_limited "$W/e" "$HOOD" serve --listen 127.0.0.1:0 --token-file /dev/zero
ended_clearly && [ "$rss" -lt 1048576 ]; verdict "--token-file /dev/zero" $? "rc $rc, $rss KiB"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/base.hood"
base=$rss
as_user truncate -s 1200M "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r2.hood"
ended_clearly && [ "$rc" = 0 ] && [ "$rss" -lt $((2 * base + 131072)) ]
verdict "sparse 1.2 GB perf map, record -p" $? "rc $rc, $rss KiB (normal $base KiB)"
as_user truncate -s 10G "/tmp/perf-$victim.map"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/r2b.hood"
ended_clearly && [ "$rc" = 0 ] && [ "$rss" -lt $((2 * base + 131072)) ]
verdict "sparse 10 GB perf map, record -p" $? "rc $rc, $rss KiB (normal $base KiB)"
rm -f "/tmp/perf-$victim.map"

# --- R3: terminal escapes ---
esc=$(printf '\033]0;pwned\007x')
cp /bin/sleep "$W/$esc"
as_user_bg "$W/$esc" 600 & pids+=("$!")
as_user_bg /usr/bin/perl -e 'sleep 600' "$(printf 'arg\n   1 root FORGED-ROW')" &
pids+=("$!")
sleep 0.3
for cmd in "ps" "ps -f" "top -b -n 1" "info"; do
    # shellcheck disable=SC2086
    timeout "$LIMIT" "$HOOD" $cmd >"$W/out" 2>/dev/null
    ! grep -q $'\033' "$W/out" && ! grep -q '^[0-9 ]*1 root FORGED-ROW' "$W/out"
    verdict "escape and newline in comm/argv, hood $cmd" $? "raw ESC or a forged row in the output"
done

# --- R4/R8: output files ---
as_user mkfifo "$W/out.hood"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/out.hood"
ended_clearly && [ "$rc" != 0 ] && grep -q out.hood "$W/e"
verdict "FIFO planted at -o" $? "rc $rc: $(head -c 300 "$W/e")"
as_user touch "$W/theirs.hood"
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/theirs.hood"
ended_clearly && [ "$rc" != 0 ] && [ ! -s "$W/theirs.hood" ]
verdict "another user's file at -o" $? "rc $rc"
"$HOOD" record -p "$victim" -d 2 -o "$W/two.hood" >/dev/null 2>&1 & first=$!
sleep 0.5
run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/two.hood"
wait "$first"
[ "$rc" != 0 ] && grep -q "another hood" "$W/e"
verdict "two writers of one -o" $? "second writer rc $rc: $(head -c 300 "$W/e")"

# --- R10: floats ---
run_limited "$W/e" "$HOOD" record -d 1e30 -o "$W/f.hood" -- true
[ "$rc" = 2 ]; verdict "record -d 1e30" $? "rc $rc"
run_limited "$W/e" "$HOOD" top -b -n 1 -d nan
[ "$rc" = 2 ]; verdict "top -d nan" $? "rc $rc"

# --- R6: the cache through a link in a home the user controls (sudo -E) ---
mkdir -p "$W/home/.cache" "$W/elsewhere" && chown -R "$U" "$W/home" "$W/elsewhere"
as_user ln -s "$W/elsewhere" "$W/home/.cache/hood"
run_limited "$W/e" env HOME="$W/home" XDG_CACHE_HOME= "$HOOD" report -i "$W/base.hood"
[ -z "$(ls -A "$W/elsewhere")" ]; verdict "symlinked ~/.cache/hood under HOME=user's" $? "root wrote $(ls "$W/elsewhere")"

# --- R11: serve without a token ---
port=$((20000 + RANDOM % 20000))
"$HOOD" serve --listen "127.0.0.1:$port" >/dev/null 2>&1 & srv=$!
pids+=("$srv")
for _ in $(seq 50); do curl -s "127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
code=$(as_user curl -s -o /dev/null -w '%{http_code}' --max-time 30 "127.0.0.1:$port/debug/pprof/profile?seconds=1")
[ "$code" = 403 ]; verdict "serve without token: whole-machine profile for another user" $? "HTTP $code"
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
    verdict "deleted executable replaced by a FIFO named '(deleted)', record -p" $? "rc $rc: $(head -c 300 "$W/e")"
    run_limited "$W/e" "$HOOD" record -a -d 1 -o "$W/ga.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict "deleted executable replaced by a FIFO named '(deleted)', record -a" $? "rc $rc: $(head -c 300 "$W/e")"
    run_limited "$W/e" "$HOOD" report -i "$W/g.hood"
    ended_clearly && [ "$rc" = 0 ]
    verdict "deleted executable replaced by a FIFO named '(deleted)', report" $? "rc $rc: $(head -c 300 "$W/e")"
    # A state directory of its own, so no other root session's `hood start` is met or stopped.
    export HOOD_STATE_DIR="$W/state"
    run_limited "$W/e" "$HOOD" start -p "$gone" -o "$W/st.hood"
    start_rc=$rc
    run_limited "$W/e2" "$HOOD" stop
    unset HOOD_STATE_DIR
    [ "$start_rc" = 0 ] && ended_clearly && [ "$rc" = 0 ]
    verdict "deleted executable replaced by a FIFO named '(deleted)', hood start/stop" $? "start rc $start_rc, stop rc $rc: $(head -c 300 "$W/e2")"
    as_user rm -f "$W/gone (deleted)"
    as_user ln -s /dev/zero "$W/gone (deleted)"
    run_limited "$W/e" "$HOOD" record -p "$gone" -d 1 -o "$W/g2.hood"
    r1=$rc m1=$rss
    run_limited "$W/e" "$HOOD" report -i "$W/g2.hood"
    ended_clearly && [ "$r1" = 0 ] && [ "$rc" = 0 ] && [ "$m1" -lt $((2 * base)) ]
    verdict "deleted executable's '(deleted)' name a link to /dev/zero, record -p and report" $? "record rc $r1 ($m1 KiB, normal $base), report rc $rc"
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
    verdict "mmapped non-ELF file replaced by a FIFO, report" $? "rc $rc: $(head -c 300 "$W/e")"

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
    verdict "4 processes x 30,000 long-path mappings, record -p ($rss KiB; normal $base KiB)" $? "rc $rc, $rss KiB (normal $base KiB): $(head -c 300 "$W/e")"
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
    verdict "escape in a perf map's symbol name, report" $? "rc $rc; raw ESC in the output, or the name not shown"
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
    verdict "loopback UDP flood during record -p --labels, report --labels ($rss KiB; plain report $plain KiB)" $? "record rc $r1, report rc $rc, $rss KiB (plain $plain KiB)"
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
    verdict "escape in a binary's path, report --by $by" $? "rc $rc; raw ESC in the output, or the name not shown"
done

# R7: a perf map that is a link to /etc/shadow, where the kernel would let root follow it.
if old_ps=$(sysctl -n fs.protected_symlinks 2>/dev/null) && sysctl -qw fs.protected_symlinks=0; then
    as_user ln -s /etc/shadow "/tmp/perf-$victim.map"
    run_limited "$W/e" "$HOOD" record -p "$victim" -d 1 -o "$W/sh.hood"
    sysctl -qw fs.protected_symlinks="$old_ps"
    ended_clearly && [ "$rc" = 0 ] && grep -q "perf-$victim.map" "$W/e" \
        && ! "$HOOD" report -i "$W/sh.hood" --format json 2>/dev/null | grep -q 'root:'
    verdict "perf map linked to /etc/shadow (protected_symlinks=0), record -p" $? "rc $rc: $(head -c 300 "$W/e")"
    rm -f "/tmp/perf-$victim.map"
else
    echo "skipped the /etc/shadow perf-map link: fs.protected_symlinks cannot be set here"
fi

echo "$held held, $failed failed"
cat <<'EOF'
Covered by tests rather than here (cargo test -p hood --test NAME, as root):
  untrusted_files (FIFO/device/sparse inputs, (deleted) executables, .dwp and debug-link FIFOs),
  report_debuginfo (zlib/zstd DWARF bombs, debuginfod byte-a-second), report_symbol_cache
  (forged cache), annotate_sources (DWARF naming /etc/shadow), state_dir (two hood start),
  terminal_escapes (symbol and path escapes in every report), report_memory (deep inlined
  chain in firefox/pprof), serve_peers (kernel symbols to another user), killed_recorders,
  disk_full, serve_abuse.
EOF
[ "$failed" = 0 ]
