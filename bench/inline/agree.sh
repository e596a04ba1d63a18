#!/usr/bin/env bash
# Agreement of hood's inlined frames with addr2line (issues 12 and 24): records a command with
# `hood record`, writes the pprof output, and compares every sampled address of one binary —
# each frame's function, source file (full path) and line, inlined frames included — with
# what `addr2line -f -i -C` says for it. Prints the counts of addresses and frames compared and
# of frames whose function, file or line differ (listing the first ones). A measurement, never
# pass/fail; `go tool pprof -raw` reads the pprof file (apt-get install golang-go).
#
# usage: bench/inline/agree.sh [CMD ARGS...]
#        (default: a debug build of ripgrep, `cargo install --debug ripgrep` into the temp dir,
#        searching /usr/share/doc and this repository with two lines of context)
# env:   HOOD  hood binary (default: build target/debug/hood)   BIN  binary whose addresses are
#        compared (default: the command's program)   HOOD_BEFORE  a second hood build reporting
#        the same recording (before/after counts)   KEEP=1  keep the temp dir   SHOW  differing
#        frames listed (default 10)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
work=$(mktemp -d /tmp/hood-agree.XXXXXX)
trap '[ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"' EXIT
export PATH=$PATH:$HOME/.cargo/bin
if [ -z "${HOOD:-}" ]; then
    (cd "$ROOT" && cargo build -q -p hood)
    HOOD=${CARGO_TARGET_DIR:-$ROOT/target}/debug/hood
fi
hood=$(realpath "$HOOD")
if [ $# -eq 0 ]; then
    CARGO_TARGET_DIR="$work/rg-target" cargo install -q --debug ripgrep --root "$work/rg" > /dev/null
    set -- "$work/rg/bin/rg" -B2 -c -i "the" /usr/share/doc "$ROOT"
fi
bin=$(realpath "${BIN:-$(command -v "$1")}")
"$hood" record -F 999 -o "$work/hood.data" -- "$@" > /dev/null 2> "$work/rec.log"
grep -o "[0-9,]* samples[^;]*" "$work/rec.log" | head -1

compare() { # compare HOOD_BINARY LABEL
    "$1" report -i "$work/hood.data" --format pprof -o "$work/$2.pb.gz" 2> /dev/null
    go tool pprof -raw "$work/$2.pb.gz" > "$work/$2.raw" 2> /dev/null
    python3 - "$work/$2.raw" "$bin" "$2" "${SHOW:-10}" <<'PY'
import re, subprocess, sys
raw_path, binpath, label, show = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
lines = open(raw_path).read().splitlines()
at_maps = lines.index("Mappings")
maps = {}
for l in lines[at_maps + 1:]:
    f = l.split()
    if len(f) > 2 and f[2] == binpath:
        r = [int(x, 16) for x in f[1].split("/")]
        maps[f[0].rstrip(":")] = (r[0], r[2])
segs = []
for l in subprocess.run(["readelf", "-lW", binpath], capture_output=True, text=True).stdout.splitlines():
    c = l.split()
    if c and c[0] == "LOAD":
        segs.append((int(c[1], 16), int(c[2], 16), int(c[4], 16)))
# A pprof -raw line: "NAME FILE:LINE s=START[(FULL NAME)]"; hood's short names have no spaces.
frame = re.compile(r"^(\S+) (\S*):(\d+) s=")
locs, cur = [], None
for l in lines[lines.index("Locations") + 1:at_maps]:
    m = re.match(r"^\s*\d+: (0x[0-9a-f]+) M=(\d+) (.*)$", l)
    if m:
        cur = None
        if m.group(2) not in maps:
            continue
        start, off = maps[m.group(2)]
        fo = int(m.group(1), 16) - start + off
        seg = [s for s in segs if s[0] <= fo < s[0] + s[2]]
        if not seg:
            continue
        o, v, _ = seg[0]
        locs.append((fo - o + v, []))
        cur = locs[-1][1]
        rest = m.group(3)
    elif cur is not None:
        rest = l.strip()
    else:
        continue
    fm = frame.match(rest)
    cur.append(fm.groups() if fm else (rest, "", "0"))
out = subprocess.run(["addr2line", "-i", "-f", "-C", "-a", "-e", binpath] + [hex(a) for a, _ in locs],
                     capture_output=True, text=True).stdout.splitlines()
want, k = [], 0
while k < len(out):
    if out[k].startswith("0x"):
        want.append([])
        k += 1
        continue
    place = out[k + 1].split(" ")[0]
    file, _, line = place.rpartition(":")
    want[-1].append((out[k], file, line))
    k += 2
assert len(want) == len(locs), (len(want), len(locs))


def short(name):
    """addr2line's demangled name as hood shortens it: generic arguments and the `<T as
    Trait>` of impls left out (`<usize as SliceIndex<[T]>>::get_unchecked` -> `::get_unchecked`)."""
    out, depth, prev = [], 0, ""
    for c in name:
        if c == "<":
            depth += 1
        elif c == ">" and prev != "-" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(c)
        prev = c
    return "".join(out)


n_addr = n_frames = depth = d_func = d_file = d_line = 0
shown = 0
for (addr, got), w in zip(locs, want):
    # No line information there (PLT stubs, crt code): nothing to compare.
    if any(x[1] == "??" or x[2] == "?" for x in w):
        continue
    n_addr += 1
    if len(got) != len(w):
        depth += 1
        continue
    for g, x in zip(got, w):
        n_frames += 1
        fn_same = g[0] == short(x[0])
        diff = []
        if not fn_same:
            d_func += 1
            diff.append("function")
        if g[1] != x[1]:
            d_file += 1
            diff.append("file")
        if g[2] != x[2]:
            d_line += 1
            diff.append("line")
        if diff and shown < show:
            shown += 1
            print(f"  {label}: {hex(addr)} {'/'.join(diff)}: hood {g[0]} {g[1]}:{g[2]}\n"
                  f"  {' ' * len(label)}  {' ' * len(hex(addr))} addr2line {x[0]} {x[1]}:{x[2]}")
print(f"{label}: {n_addr} addresses with lines ({len(locs)} sampled), {n_frames} frames compared; "
      f"differing from addr2line: {depth} addresses in depth, {d_func} functions, "
      f"{d_file} files, {d_line} lines")
PY
}
if [ -n "${HOOD_BEFORE:-}" ]; then
    compare "$(realpath "$HOOD_BEFORE")" before
fi
compare "$hood" hood
