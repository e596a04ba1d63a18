#!/usr/bin/env bash
# Off-CPU recording of real programs (issue 22, "Real programs"): do the blocked stacks reach
# the program's entry? Prints figures, never pass/fail. Needs root, perf (linux-perf), gcc,
# make, PostgreSQL (/usr/lib/postgresql/*/bin, pgbench), python3, curl, cargo (offline sources).
# Usage: bench/offcpu/real.sh [SECONDS [PARTS]]   (default 10: pgbench -T and the HTTP load;
#        PARTS any of a, b, c: default abc)
#   a. PostgreSQL under pgbench -c 4 (the server recorded from its start, as user postgres);
#   b. make -j2 of Lua 5.4.7's C files (the lua-src crate's sources, a Makefile written here);
#   c. python3 -m http.server under a curl loop.
# For each: the blocked time (hood report --by waker: blocked time only), the share of it whose
# stack reaches main / _start / start_thread / __clone3 (or the C library's start), the frames
# that end the other stacks, and perf sched timehist's wait time (and wait + sch delay) for
# the same threads of the same run (perf sched record beside hood), with the ratios.
# HOOD=path/to/hood uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
parts=${2:-abc}
out=$PWD/bench/out/offcpu-real; mkdir -p "$out"; chmod 755 "$out"
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf"; exit 2; }
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=${CARGO_TARGET_DIR:-target}/release/hood
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
py=$(python3 -c 'import sys; print(sys.executable)')

# $1: label. Prints hood's blocked total, the share reaching an entry, the ending frames,
# and perf's wait time of the same threads (from $out/$1-perf.data).
figures() {
    local l=$1
    $hood report -i "$out/$l.data" --by waker --format collapsed --min-percent 0 \
        > "$out/$l.blocked.folded" 2> "$out/$l.report.log"
    $hood report -i "$out/$l.data" --wall --format json > "$out/$l.json" 2>> "$out/$l.report.log"
    perf sched timehist -i "$out/$l-perf.data" 2> /dev/null \
      | awk 'NF >= 6 && $1 ~ /^[0-9.]+$/ { split($3, a, "["); n = a[2]; sub(/[]\/].*/, "", n); w[n] += $(NF-2); d[n] += $(NF-1) }
             END { for (t in w) printf "%s %.0f %.0f\n", t, w[t]*1e6, d[t]*1e6 }' > "$out/$l.perfwait" || true
    python3 - "$l" "$out/$l.blocked.folded" "$out/$l.json" "$out/$l.perfwait" <<'PY'
import collections, json, sys
label, folded, js, perfw = sys.argv[1:5]
entry = {"main", "_start", "start_thread", "__clone3", "__clone", "clone3", "clone",
         "__libc_start_main", "__libc_start_call_main", "ret_from_fork", "ret_from_fork_asm"}
total = reach = 0
ends = collections.Counter()
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    if not n.isdigit():
        continue
    n = int(n)
    # offwaketime's layout: the blocked stack, `--`, the waker's stack.
    frames = stack.split(";--;")[0].split(";")
    total += n
    if any(f.split(" ")[0] in entry for f in frames):
        reach += n
    else:
        # The outermost frame after the comm: where the unwinding stopped.
        ends[frames[1] if len(frames) > 1 else frames[0]] += n
j = json.load(open(js))
threads = j.get("off_cpu", {}).get("threads", [])
hood_blocked = {str(t["tid"]): t["blocked_ns"] for t in threads}
hood_off = {str(t["tid"]): t["blocked_ns"] + t["runnable_ns"] for t in threads}
perf = {l.split()[0]: [int(x) for x in l.split()[1:]] for l in open(perfw) if len(l.split()) == 3}
hb = sum(hood_blocked.values())
ho = sum(hood_off.values())
pb = sum(perf.get(t, [0, 0])[0] for t in hood_blocked)
po = sum(sum(perf.get(t, [0, 0])) for t in hood_blocked)
print(f"{label}: blocked {total/1e9:.3f} s in {len(threads)} threads; reaching main/_start/start_thread/__clone3: "
      f"{reach/1e9:.3f} s = {100*reach/max(total,1):.1f} %")
for f, n in ends.most_common(5):
    print(f"    not reaching, outermost frame {f}: {n/1e9:.3f} s ({100*n/max(total,1):.1f} %)")
print(f"    hood blocked {hb/1e9:.3f} s, perf sched timehist wait time of the same threads {pb/1e9:.3f} s"
      + (f", ratio {hb/pb:.3f}" if pb else ""))
print(f"    hood off-CPU (blocked + runnable) {ho/1e9:.3f} s, perf wait + sch delay {po/1e9:.3f} s"
      + (f", ratio {ho/po:.3f}" if po else ""))
PY
}

# perf sched record takes a while to open its events on a loaded machine: the workload starts
# 2 s later, so perf sees all of it.
perf_start() { perf sched record -q -o "$out/$1-perf.data" -- sleep 100000 > /dev/null 2>&1 & echo $!; sleep 2; }
# perf runs in a subshell's background: not this shell's child, so wait until it is gone.
perf_stop() { kill -INT "$1" 2>/dev/null; while kill -0 "$1" 2>/dev/null; do sleep 0.2; done; }

if [[ $parts == *a* ]]; then
echo "== a. PostgreSQL under pgbench -c 4 -T $secs"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg="setpriv --reuid=postgres --regid=postgres --init-groups"
pg=$out/pg; rm -rf "$pg"; mkdir -p "$pg"; chown postgres "$pg"
$as_pg "$bin/initdb" -D "$pg/db" -A trust -U postgres > "$out/initdb.log" 2>&1
psr=$(perf_start pg)
$hood record --off-cpu -o "$out/pg.data" -- $as_pg "$bin/postgres" -D "$pg/db" -k "$pg" \
    -c listen_addresses= > "$out/pg.log" 2> "$out/pg.hood.log" &
rec=$!
for _ in $(seq 50); do $as_pg "$bin/pg_isready" -h "$pg" -q && break; sleep 0.2; done
$as_pg pgbench -h "$pg" -U postgres -i -s 4 postgres > "$out/pgbench-init.log" 2>&1
$as_pg pgbench -h "$pg" -U postgres -c 4 -j 2 -T "$secs" postgres > "$out/pgbench.log" 2>&1
grep -E '^tps' "$out/pgbench.log" | sed 's/^/  pgbench: /'
$as_pg "$bin/pg_ctl" -D "$pg/db" stop -m fast > /dev/null
wait $rec || true
perf_stop "$psr"
figures pg
fi

if [[ $parts == *b* ]]; then
echo; echo "== b. make -j2 of Lua 5.4.7's C files (lua-src)"
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/lua-src-547.1.0/lua-5.4.7 2>/dev/null | head -1)
if [ -z "$src" ]; then
    mkdir -p "$out/fetch/src"; : > "$out/fetch/src/lib.rs"
    printf '[package]\nname = "luafetch"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nlua-src = "=547.1.0"\n' > "$out/fetch/Cargo.toml"
    (cd "$out/fetch" && cargo fetch -q)
    src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/lua-src-547.1.0/lua-5.4.7 | head -1)
fi
mk=$out/make; rm -rf "$mk"; mkdir -p "$mk"; cp "$src"/*.c "$src"/*.h "$mk"/
printf 'CFLAGS = -O2 -g -DLUA_USE_LINUX\nOBJ = $(patsubst %%.c,%%.o,$(wildcard *.c))\nliblua.a: $(OBJ)\n\tar rcs $@ $^\nclean:\n\trm -f *.o liblua.a\n' > "$mk/Makefile"
psr=$(perf_start make)
$hood record --off-cpu -o "$out/make.data" -- make -s -j2 -C "$mk" > "$out/make.log" 2> "$out/make.hood.log"
perf_stop "$psr"
figures make
fi

if [[ $parts == *c* ]]; then
echo; echo "== c. $py -m http.server under a curl loop for $secs s"
port=18722
www=$out/www; mkdir -p "$www"; head -c 65536 /dev/urandom > "$www/blob"
psr=$(perf_start http)
(cd "$www" && exec $hood record --off-cpu -o "$out/http.data" -- "$py" -m http.server -b 127.0.0.1 $port) \
    > "$out/http.log" 2> "$out/http.hood.log" &
rec=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/blob" && break; sleep 0.2; done
end=$((SECONDS + secs)); n=0
while [ $SECONDS -lt $end ]; do curl -s -o /dev/null "http://127.0.0.1:$port/blob"; n=$((n + 1)); done
echo "  $n requests"
# The server is stopped, not hood: hood records until its command ends.
pkill -TERM -P $rec; wait $rec || true
perf_stop "$psr"
figures http
fi
# perf's files are large (hundreds of MB a minute on a busy machine).
rm -f "$out"/*-perf.data "$out"/*-perf.data.old
