#!/usr/bin/env bash
# `--probe` attached to a PostgreSQL server under pgbench (issue 26), beside bpftrace on the
# same functions: prints figures and ratios, never pass/fail. Needs root; installs postgresql
# with apt-get when it is missing; bpftrace where installed (said when not). The server is a
# throw-away cluster in a temporary directory, on a Unix socket only, removed at the end.
# Usage: bench/probe/postgres.sh [SECS] [TRANSACTIONS]   (defaults 10 and 20000)
#   1. attach and detach: one pgbench client (simple protocol, select-only) runs 3 x SECS
#      seconds; `hood calls record --probe PortalRun -p BACKEND -d SECS` attaches to its
#      backend for the middle SECS; transactions per second before, during and after.
#   2. counts and cost: `pgbench -t TRANSACTIONS` through a new connection, plain, then with
#      hood attached to the postmaster (its new backend inherits the probes), then with
#      bpftrace counting the same uprobes and uretprobes: the counts of PortalRun and
#      pg_parse_query side by side, and each tool's cost per probed call from the throughput.
# exec_simple_query (the issue's example) is a static function: Debian's stripped postgres
# has no symbol for it (only its exported functions are in .dynsym), so the bench probes the
# two exported functions every simple query calls once.
# HOOD=path/to/hood uses that binary instead of building this tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
txns=${2:-20000}
out=bench/out/probe-pg; mkdir -p "$out"
if [ -n "${HOOD:-}" ]; then hood=$HOOD; else
    cargo build --release -q -p hood
    hood=$(realpath "${CARGO_TARGET_DIR:-target}/release/hood")
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
if ! ls -d /usr/lib/postgresql/*/bin/postgres > /dev/null 2>&1; then
    echo "postgresql not installed: installing it (apt-get install postgresql)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql > "$out/apt.log"
fi
bindir=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/postgres | sort -V | tail -1)")
pg=$bindir/postgres
data=$(mktemp -d /tmp/hood-pg-bench.XXXXXX)
chown postgres "$data"
port=54329
as_pg() { runuser -u postgres -- "$@"; }
stop() {
    as_pg "$bindir/pg_ctl" -D "$data/db" -m fast stop > /dev/null 2>&1 || true
    rm -rf "$data"
}
trap stop EXIT
as_pg "$bindir/initdb" -D "$data/db" -A trust > "$out/initdb.log"
as_pg "$bindir/pg_ctl" -D "$data/db" -o "-p $port -k $data -c listen_addresses=''" \
    -l "$data/server.log" -w start > /dev/null
pgb() { as_pg "$bindir/pgbench" -h "$data" -p "$port" "$@" postgres; }
psql1() { as_pg "$bindir/psql" -h "$data" -p "$port" -Atc "$1" postgres; }
pgb -i -s 1 -q > "$out/init.log" 2>&1
postmaster=$(head -1 "$data/db/postmaster.pid")
echo "PostgreSQL $("$pg" --version | awk '{print $3}') (postmaster pid $postmaster), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# Wait until FILE says PATTERN (at most 30 s).
wait_for() {
    for _ in $(seq 300); do grep -q "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done
    echo "  gave up waiting for '$2' in $1"; cat "$1"; return 1
}

echo "== 1. attach to a backend serving pgbench, detach, $secs s each"
pgb -c 1 -M simple -S -T $((3 * secs)) -P 1 > "$out/p1.out" 2> "$out/p1.progress" &
bench=$!
backend=
for _ in $(seq 100); do
    backend=$(psql1 "select pid from pg_stat_activity where application_name = 'pgbench'")
    [ -n "$backend" ] && break
    sleep 0.1
done
sleep "$secs"
$hood calls record --probe PortalRun -p "$backend" -d "$secs" -o "$out/attach.data" 2> "$out/attach.log"
wait $bench
sed 's/^/    /' "$out/attach.log" | grep -E "attached|passed|probe hits"
# progress: T s, TPS tps, ... : seconds 2..secs before, secs+2..2secs during, 2secs+2.. after.
awk -v s="$secs" '/^progress:/ { t = $2 + 0; v = $4 + 0
        if (t >= 2 && t <= s) { b += v; nb++ } else if (t >= s + 2 && t <= 2 * s) { d += v; nd++ } else if (t >= 2 * s + 2) { a += v; na++ } }
    END { if (nb && nd && na) printf "  tps before %.0f, while probed %.0f (%.2f x), after detach %.0f (%.2f x)\n", b / nb, d / nd, (d / nd) / (b / nb), a / na, (a / na) / (b / nb) }' "$out/p1.progress"
n=$($hood calls report -f --format json "$out/attach.data" | python3 -c '
import json, sys
print(sum(r["calls"] for p in json.load(sys.stdin)["processes"] for r in p["rows"]))')
echo "  PortalRun calls counted while attached: $n"

echo; echo "== 2. $txns transactions on a new connection: counts and cost per probed call"
tps() { pgb -c 1 -M simple -S -t "$txns" 2>&1 | awk '/^tps = / { print $3; exit }'; }
plain=$(tps)
printf "  %-44s %9.0f tps\n" "plain" "$plain"
$hood calls record --probe PortalRun --probe pg_parse_query -p "$postmaster" -o "$out/pm.data" 2> "$out/pm.log" &
h=$!
wait_for "$out/pm.log" "attached to"
hood_tps=$(tps)
kill -INT $h; wait $h || true
printf "  %-44s %9.0f tps\n" "hood calls record -p POSTMASTER" "$hood_tps"
$hood calls report -f --format json "$out/pm.data" | python3 -c '
import json, sys
c = {}
for p in json.load(sys.stdin)["processes"]:
    for r in p["rows"]:
        c[r["path"][0]] = c.get(r["path"][0], 0) + r["calls"]
for k in ("PortalRun", "pg_parse_query"):
    print(k, c.get(k, 0))' > "$out/hood.counts"
bpf_tps=
if command -v bpftrace > /dev/null; then
    bpftrace -e "uprobe:$pg:PortalRun { @entries[\"PortalRun\"] = count(); } uretprobe:$pg:PortalRun { @returns[\"PortalRun\"] = count(); }
        uprobe:$pg:pg_parse_query { @entries[\"pg_parse_query\"] = count(); } uretprobe:$pg:pg_parse_query { @returns[\"pg_parse_query\"] = count(); }" \
        > "$out/bpftrace.out" 2> "$out/bpftrace.log" &
    b=$!
    wait_for "$out/bpftrace.out" "Attaching"
    bpf_tps=$(tps)
    kill -INT $b; wait $b || true
    printf "  %-44s %9.0f tps\n" "bpftrace uprobe+uretprobe count" "$bpf_tps"
    sed -n 's/^@entries\[\(.*\)\]: \(.*\)/\1 \2/p' "$out/bpftrace.out" > "$out/bpftrace.counts"
    join <(sort "$out/hood.counts") <(sort "$out/bpftrace.counts") | \
        awk '{ printf "  %-16s hood %8d   bpftrace %8d   %s\n", $1, $2, $3, ($2 == $3 ? "equal" : "DIFFERENT") }'
else
    echo "  bpftrace: not installed (apt-get install bpftrace)"
    sed 's/^/  hood: /' "$out/hood.counts"
fi
per_txn=$(awk '{ s += $2 } END { print s }' "$out/hood.counts")
awk -v p="$plain" -v h="$hood_tps" -v b="${bpf_tps:-0}" -v c="$per_txn" -v t="$txns" 'BEGIN {
    k = c / t   # probed calls per transaction
    hc = (1e6 / h - 1e6 / p) / k
    printf "  cost per probed call (entry + return), from the throughput: hood %.1f us", hc
    if (b > 0) { bc = (1e6 / b - 1e6 / p) / k; printf ", bpftrace %.1f us: hood / bpftrace %.2f x", bc, (bc > 0 ? hc / bc : 0) }
    printf " (%.2f probed calls per transaction)\n", k }'
