"""Driver of bench/monitor/record.sh. Spawns sleeping processes up to PROCS, runs
`hood top --record` and `atop -w` side by side for SAMPLES intervals, and takes each recorder's
CPU from its own rusage (os.wait4) and its bytes on disk; then writes a day-sized synthetic
store and times `hood top -b --replay --at` jumps and a day's CSV of one process."""
import os, random, shutil, subprocess, sys, tempfile, time

hood, synth, procs, interval, samples, day = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
sleepers = []

def nprocs():
    return sum(1 for d in os.listdir("/proc") if d.isdigit())

def grow(target):
    while nprocs() < target:
        sleepers.append(subprocess.Popen(["sleep", "7200"]))

def run_for_rusage(p):
    _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime

def size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".seg"))
    return os.path.getsize(path)

tmp = tempfile.mkdtemp(prefix="hood-record-bench-")
try:
    grow(procs)
    n = nprocs()
    hour = 3600 / (samples * interval)
    print(f"processes: {n}; {samples} intervals of {interval:g} s ({samples * interval / 60:.1f} min), "
          f"per-hour figures extrapolated x{hour:.1f}")
    store = os.path.join(tmp, "store")
    hp = subprocess.Popen([hood, "top", "--record", store, "-d", str(interval), "-n", str(samples)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atop = shutil.which("atop")
    ap = None
    if atop:
        alog = os.path.join(tmp, "atop.raw")
        # atop's first sample is since boot, then SAMPLES-1 intervals: SAMPLES samples in all.
        ap = subprocess.Popen([atop, "-w", alog, str(int(interval)), str(samples)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hcpu = run_for_rusage(hp)
    hbytes = size(store)
    print(f"hood top --record: {hbytes * hour / 1e6:8.2f} MB/hour  CPU {hcpu * hour:7.2f} s/hour "
          f"({hcpu / samples * 1000:.1f} ms per interval)")
    if ap:
        acpu = run_for_rusage(ap)
        abytes = size(alog)
        print(f"atop -w:           {abytes * hour / 1e6:8.2f} MB/hour  CPU {acpu * hour:7.2f} s/hour "
              f"({acpu / samples * 1000:.1f} ms per interval)")
        print(f"ratio hood/atop:   disk {hbytes / abytes:.2f}  CPU {hcpu / max(acpu, 1e-9):.2f}")
    else:
        print("atop: not installed (apt-get install atop); no ratio")
    # A day of synthetic time, from a snapshot of the same processes.
    dstore = os.path.join(tmp, "day")
    t0 = time.time()
    out = subprocess.run([synth, dstore, str(day), str(int(interval))], capture_output=True, text=True, check=True)
    print(f"synthetic day: {out.stdout.strip()}, {size(dstore) / 1e6:.1f} MB in "
          f"{len(os.listdir(dstore)) - 1} segments, written in {time.time() - t0:.0f} s")
    now = int(time.time())
    span = int(day * interval)
    jumps = []
    for _ in range(10):
        at = now - random.randint(60, span - 60)
        t0 = time.perf_counter()
        subprocess.run([hood, "top", "-b", "--replay", dstore, "--at", f"@{at}", "--rows", "5"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        jumps.append(time.perf_counter() - t0)
    jumps.sort()
    print(f"open the day's store and show a random minute (whole hood run, 10 runs): "
          f"median {jumps[5] * 1000:.0f} ms, max {jumps[-1] * 1000:.0f} ms")
    t0 = time.perf_counter()
    out = subprocess.run([hood, "top", "-b", "--replay", dstore, "--csv", "--filter", "1",
                          "--sort", "pid", "--rows", "1"], capture_output=True, check=True)
    took = time.perf_counter() - t0
    rows = out.stdout.count(b"\n") - 1
    print(f"a day of pid 1 to CSV: {rows} rows in {took:.2f} s")
finally:
    for p in sleepers:
        p.kill()
    shutil.rmtree(tmp, ignore_errors=True)
