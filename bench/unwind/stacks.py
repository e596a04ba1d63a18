#!/usr/bin/env python3
"""Count, per profiler output, the samples of one process and how many of their stacks are
complete (reach the program's entry) and how many hold a Python frame (`py::`, from the perf map
of `python3.12 -X perf`). Prints "SAMPLES COMPLETE PYFRAMES DEPTH_MEDIAN TRUNCATED" (TRUNCATED: samples whose stack
holds a frame marked `[truncated…` by hood).

  stacks.py collapsed COMM          < folded stacks (hood report --format collapsed)
  stacks.py perfscript COMM         < perf script -F comm,tid,ip,sym,dso output
  stacks.py samply COMM FILE.json.gz  (samply --save-only profile; symbols from its
                                       FILE.json.syms.json sidecar when present)
A stack is complete when one of its frames is the program's entry: main, the libc start
functions, _start (ld.so's _dl_start_user while it runs constructors), CPython's
Py_BytesMain, or a thread's root (start_thread, clone3) (see README.md). FRAME_PREFIX=JS:
counts node's JavaScript frames instead of Python's. Frames are compared by name,
with perf's/hood's decorations (`@@GLIBC_2.34`, `_[k]`, ` (inlined)`) and leading underscores
stripped (samply 0.13's sidecar drops one: `start`, `_libc_start_call_main`).
"""
import bisect
import gzip
import json
import os
import re
import sys

ENTRY = {"main", "start", "dl_start_user", "libc_start_main", "libc_start_main_impl",
         "libc_start_main_alias_2", "libc_start_call_main", "Py_BytesMain",
         # a thread's root (node's and other runtimes' threads)
         "start_thread", "clone3", "clone"}
# The frames counted as the runtime's own (third column): CPython's perf-map names by
# default, FRAME_PREFIX=JS: for node's --perf-basic-prof names.
PREFIX = os.environ.get("FRAME_PREFIX", "py::")


def clean(name):
    name = name.strip()
    name = re.sub(r"@@?[A-Z_0-9.]+$", "", name)
    name = re.sub(r"\+0x[0-9a-f]+$", "", name)
    name = re.sub(r"_\[[a-z]\]$", "", name)
    return name


class Tally:
    def __init__(self):
        self.n = self.complete = self.py = self.truncated = 0
        self.depths = []

    def add(self, frames, count=1):
        names = [clean(f) for f in frames]
        self.n += count
        truncated = any(f.startswith("[truncated") for f in names)
        # A stack hood marks as cut short is not complete, whatever names it holds.
        if not truncated and any(f.lstrip("_") in ENTRY for f in names):
            self.complete += count
        if any(f.startswith(PREFIX) for f in names):
            self.py += count
        if truncated:
            self.truncated += count
        self.depths.append((len(frames), count))

    def line(self):
        total, med = 0, 0
        for d, c in sorted(self.depths):
            total += c
            if total * 2 >= self.n:
                med = d
                break
        return f"{self.n} {self.complete} {self.py} {med} {self.truncated}"


def comm_match(comm, want):
    return comm == want or comm == want[:15]


def collapsed(want):
    t = Tally()
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not comm_match(frames[0], want):
            continue
        t.add(frames[1:], int(count))
    return t


def perfscript(want):
    # perf script prints a header line per sample (starting at column 0), then one indented line
    # per frame "ADDR SYM (DSO)", then an empty line.
    t = Tally()
    frames, keep = None, False
    for line in sys.stdin:
        if not line.strip():
            if frames is not None and keep:
                t.add(frames)
            frames, keep = None, False
            continue
        if not line[0].isspace():
            if frames is not None and keep:
                t.add(frames)
            frames = []
            keep = comm_match(line.split()[0], want)
            continue
        if frames is not None:
            parts = line.split(None, 1)
            sym = parts[1] if len(parts) > 1 else "[unknown]"
            sym = re.sub(r"\s+\([^()]*\)\s*$", "", sym.rstrip("\n"))
            frames.append(sym)
    if frames is not None and keep:
        t.add(frames)
    return t


def load_syms(path):
    """samply's --unstable-presymbolicate sidecar: {lib debug name: ([rva...], [name...])}."""
    try:
        with open(path) as f:
            s = json.load(f)
    except OSError:
        return {}
    strings = s.get("string_table", [])
    out = {}
    for lib in s.get("data", []):
        entries = sorted((e["rva"], e.get("size", 0), strings[e["symbol"]]) for e in lib.get("symbol_table", []))
        out[lib.get("debug_name")] = ([e[0] for e in entries], entries)
    return out


def samply(want, path):
    with gzip.open(path, "rt") as f:
        prof = json.load(f)
    syms = load_syms(re.sub(r"\.gz$", "", path) + ".syms.json")
    libs = prof.get("libs", [])
    t = Tally()
    for th in prof["threads"]:
        pname = th.get("processName") or th.get("name", "")
        if not comm_match(pname, want) and not comm_match(th.get("name", ""), want):
            continue
        strings = th.get("stringArray") or th.get("stringTable") or []
        st, fr, fn, rs = th["stackTable"], th["frameTable"], th["funcTable"], th["resourceTable"]
        samples = th["samples"]
        # stack index -> list of frame names, leaf first, memoised through prefixes
        names = {}

        def frame_name(fi):
            func = fr["func"][fi]
            nm = strings[fn["name"][func]]
            if not re.fullmatch(r"0x[0-9a-f]+", nm):
                return nm
            res = fn["resource"][func]
            if res is None or res < 0 or not syms:
                return nm
            lib = libs[rs["lib"][res]] if rs["lib"][res] is not None else None
            if lib is None:
                return nm
            table = syms.get(lib.get("debugName"))
            if not table:
                return nm
            addr = fr["address"][fi]
            i = bisect.bisect_right(table[0], addr) - 1
            if i >= 0:
                rva, size, s = table[1][i]
                if size == 0 or addr < rva + size:
                    return s
            return nm

        def stack_frames(si):
            out = []
            todo = []
            while si is not None and si not in names:
                todo.append(si)
                si = st["prefix"][si]
            base = names[si] if si is not None else []
            for s in reversed(todo):
                base = base + [frame_name(st["frame"][s])]
                names[s] = base
            return names[todo[0]] if todo else base

        weights = samples.get("weight")
        for i, si in enumerate(samples["stack"]):
            if si is None:
                t.add([], 1)
                continue
            t.add(stack_frames(si), weights[i] if weights else 1)
    return t


def main():
    mode, want = sys.argv[1], sys.argv[2]
    if mode == "collapsed":
        t = collapsed(want)
    elif mode == "perfscript":
        t = perfscript(want)
    elif mode == "samply":
        t = samply(want, sys.argv[3])
    else:
        sys.exit(f"unknown mode {mode}")
    print(t.line())


if __name__ == "__main__":
    main()
