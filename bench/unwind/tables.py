#!/usr/bin/env python3
"""Summarise bench/unwind/run.sh's measurements: one table per metric, hood | perf dwarf |
samply, and the ratios hood/perf and hood/samply. Usage: tables.py RUNS.tsv REPORT.tsv LOST.txt
PERF_CRASHES"""
import csv
import statistics
import sys
from collections import defaultdict

PROFS = ("hood", "perf", "samply")
NAMES = {"c": "C -O2 -fomit-frame-pointer", "cpp": "C++ -O2 templates+std::map",
         "rust": "Rust release (BTreeMap)", "gzip": "gzip -9 (Debian, stripped)",
         "xz": "xz -9 (Debian, stripped)", "py": "python3 pure-Python (Debian)",
         "py312": "python3.12 -X perf"}


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return float("nan")


def fmt(v, spec):
    return "-" if v is None or v != v else format(v, spec)


def ratio(a, b):
    if a is None or b is None or a != a or b != b or b == 0:
        return "-"
    return f"{a / b:.2f}"


def table(title, rows, spec, note=""):
    print(f"\n== {title}" + (f"  ({note})" if note else ""))
    print(f"{'workload':30} {'hood':>10} {'perf dwarf':>10} {'samply':>10} {'hood/perf':>9} {'hood/samply':>11}")
    for wl, vals in rows:
        h, p, s = (vals.get(k) for k in PROFS)
        print(f"{NAMES.get(wl, wl):30} {fmt(h, spec):>10} {fmt(p, spec):>10} {fmt(s, spec):>10} "
              f"{ratio(h, p):>9} {ratio(h, s):>11}")


def median(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else None


def paired_overhead(order, by):
    """hood's workload CPU minus perf's, paired within each round (the two runs of a round share
    the machine's state), as % of the round's run without a profiler. A mean whose interval
    (mean ± 2 standard errors) contains 0 means the two overheads cannot be told apart."""
    print("\n== workload overhead, hood minus perf dwarf, paired per round: % of the workload's CPU "
          "without a profiler  (hood <= perf when the interval's upper end is <= ~0)")
    print(f"{'workload':30} {'median':>8} {'mean':>8} {'± 2 SE':>8} {'hood<=perf':>11}")
    for wl in order:
        plain = {r["round"]: num(r["wl_cpu_s"]) for r in by.get((wl, "plain"), [])}
        perf = {r["round"]: num(r["wl_cpu_s"]) for r in by.get((wl, "perf"), [])}
        d = [100 * (num(r["wl_cpu_s"]) - perf[r["round"]]) / plain[r["round"]]
             for r in by.get((wl, "hood"), [])
             if plain.get(r["round"], 0) > 0 and perf.get(r["round"], 0) > 0]
        d = [x for x in d if x == x]
        if len(d) < 2:
            continue
        se = statistics.stdev(d) / len(d) ** 0.5
        wins = sum(1 for x in d if x <= 0)
        print(f"{NAMES.get(wl, wl):30} {statistics.median(d):>+8.2f} {statistics.mean(d):>+8.2f} "
              f"{2 * se:>8.2f} {wins:>5}/{len(d):<5}")


def main():
    runs = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    order = []
    by = defaultdict(list)
    failed = [r for r in runs if r["rc"] != "0"]
    runs = [r for r in runs if r["rc"] == "0"]
    for r in runs:
        if r["workload"] not in order:
            order.append(r["workload"])
        by[(r["workload"], r["profiler"])].append(r)

    def agg(fn):
        rows = []
        for wl in order:
            vals = {}
            for p in PROFS:
                rs = by.get((wl, p), [])
                vals[p] = fn(wl, p, rs) if rs else None
            rows.append((wl, vals))
        return rows

    def share(key):
        def f(wl, p, rs):
            n = sum(num(r["samples"]) for r in rs)
            return 100 * sum(num(r[key]) for r in rs) / n if n else None
        return f

    print(f"rounds: {max(int(r['round']) for r in runs)}; samples of the workload's process "
          f"per run (median): " + ", ".join(
              f"{wl} " + "/".join(fmt(median([num(r['samples']) for r in by.get((wl, p), [])]), '.0f') for p in PROFS)
              for wl in order) + "  (hood/perf/samply)")
    table("completeness: % of the workload's samples whose stack reaches the entry "
          "(main / __libc_start_* / _start / Py_BytesMain)", agg(share("complete")), ".1f",
          "target: hood >= 95 % and >= perf")
    if "py312" in order:
        table("python3.12 -X perf: % of samples with a Python frame (py::)",
              [r for r in agg(share("pyframes")) if r[0] == "py312"], ".1f")
    def marked(wl, p, rs):
        if p != "hood":
            return None
        bad = sum(num(r["samples"]) - num(r["complete"]) for r in rs)
        return 100 * sum(num(r.get("truncated") or 0) for r in rs) / bad if bad else None
    table("honesty: % of the incomplete stacks that end in a `[truncated: …]` frame",
          agg(marked), ".1f", "hood's marker; perf and samply have none")
    table("median stack depth (frames, kernel included)",
          agg(lambda wl, p, rs: median([num(r["depth"]) for r in rs])), ".0f")
    table("file size: bytes per sample (median of rounds)",
          agg(lambda wl, p, rs: median([num(r["bytes"]) / num(r["samples"]) for r in rs if num(r["samples"]) > 0])),
          ".0f", "target: hood <= 1/4 of perf")
    table("recorder CPU: user+sys s of the profiler itself, workload excluded (median)",
          agg(lambda wl, p, rs: median([num(r["rec_cpu_s"]) for r in rs])), ".3f", "target: hood <= perf")

    def overhead(wl, p, rs):
        plain = {r["round"]: num(r["wl_cpu_s"]) for r in by.get((wl, "plain"), [])}
        return median([100 * (num(r["wl_cpu_s"]) - plain[r["round"]]) / plain[r["round"]]
                       for r in rs if plain.get(r["round"], 0) > 0])
    base = {wl: median([num(r["wl_cpu_s"]) for r in by.get((wl, "plain"), [])]) for wl in order}
    print("\nworkload CPU without a profiler (median s): " +
          ", ".join(f"{wl} {fmt(base[wl], '.2f')}" for wl in order))
    table("workload overhead at -F 999: % more workload CPU than without a profiler "
          "(median of per-round differences)", agg(overhead), "+.1f", "target: hood <= perf; "
          "ratios of small noisy numbers mean little")
    paired_overhead(order, by)

    rep = list(csv.DictReader(open(sys.argv[2]), delimiter="\t"))
    if rep:
        print("\n== report time: `hood report` (text) vs `perf report --stdio` on the same "
              "workload's recordings, median wall s (CPU s)  (target: perf/hood >= 10)")
        print(f"{'workload':30} {'hood':>16} {'perf dwarf':>16} {'perf/hood':>9}")
        rw = []
        for wl in order:
            hs = [r for r in rep if r["workload"] == wl and r["profiler"] == "hood"]
            ps = [r for r in rep if r["workload"] == wl and r["profiler"] == "perf"]
            if not hs and not ps:
                continue
            hw, hc = median([num(r["wall_s"]) for r in hs]), median([num(r["cpu_s"]) for r in hs])
            pw, pc = median([num(r["wall_s"]) for r in ps]), median([num(r["cpu_s"]) for r in ps])
            rw.append((hw, pw))
            print(f"{NAMES.get(wl, wl):30} {fmt(hw, '.3f'):>7} ({fmt(hc, '.3f'):>6}) "
                  f"{fmt(pw, '.3f'):>7} ({fmt(pc, '.3f'):>6}) {ratio(pw, hw):>9}")

    lost = [l.split() for l in open(sys.argv[3]) if l.strip()]
    if lost:
        print("\n== lost samples, -a for the loss run's length with both CPUs busy "
              "(target: hood 0 at -F 999; counted and shown at -F 4999)")
        for who, freq, n, total in lost:
            extra = " (--call-graph dwarf)" if who == "perf" else ""
            print(f"{who}{extra} -F {freq}: lost {n or '?'} of {total or '?'} samples")
    crashes = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    print(f"\nperf record failures (retried as is, then with -B): {crashes}")
    for r in failed:
        print(f"failed run left out: round {r['round']} {r['workload']} under {r['profiler']} (exit {r['rc']})")


if __name__ == "__main__":
    main()
