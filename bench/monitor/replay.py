"""Driver of bench/monitor/replay.sh.

The day: `synthetic_store` takes one real snapshot of this machine (PROCS processes, sleepers
added up to that count) and appends DAY intervals STEP seconds apart ending now through the
recorder's own StoreWriter, advancing each process's and the CPUs' counters (one process in
ten busy); once with the per-process index, once without (as older hoods wrote stores).
The question: pid 1's CPU for the whole day as CSV. atop answers it from a raw log of the same
processes (`atop -w`, ATOP_SAMPLES samples of 1 s; atop's read cost per sample does not depend
on the interval) with `atop -r LOG -P PRC` filtered to pid 1; its day is that time scaled to
DAY samples."""
import os, random, resource, shutil, statistics, subprocess, sys, tempfile, time

hood, synth = sys.argv[1], sys.argv[2]
procs, day, step, whole_hours, atop_samples = (int(a) for a in sys.argv[3:8])
sleepers = []

def nprocs():
    return sum(1 for d in os.listdir("/proc") if d.isdigit())

def size(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".seg"))

def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def timed(cmd, **kw):
    """Wall seconds of a run, and its output; the CPU seconds it used are in LAST_CPU (the
    machine may be shared: CPU time is the figure load does not stretch)."""
    global LAST_CPU
    c0, t0 = cpu(), time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, check=True, **kw)
    LAST_CPU = cpu() - c0
    return time.perf_counter() - t0, out

def index_bytes(path):
    """Bytes of the per-process index chunks (tag 0x0403) in a store's segments."""
    total = 0
    for f in os.listdir(path):
        if not f.endswith(".seg"):
            continue
        b = open(os.path.join(path, f), "rb").read()
        off = 32
        while off + 40 <= len(b):
            tag = int.from_bytes(b[off + 4:off + 8], "little")
            n = int.from_bytes(b[off + 16:off + 24], "little")
            if tag == 0x0403:
                total += 40 + n
            off += 40 + n
    return total

tmp = tempfile.mkdtemp(prefix="hood-replay-bench-")
try:
    while nprocs() < procs:
        sleepers.append(subprocess.Popen(["sleep", "7200"]))
    stores = {}
    for name, extra in (("indexed", []), ("whole", ["--no-index"])):
        d = os.path.join(tmp, name)
        t0 = time.time()
        out = subprocess.run([synth, d, str(day), str(step)] + extra, capture_output=True, text=True, check=True)
        stores[name] = d
        print(f"synthetic day ({name}): {out.stdout.strip()}, {size(d) / 1e6:.1f} MB in "
              f"{len(os.listdir(d)) - 1} segments, written in {time.time() - t0:.0f} s")
    ix = index_bytes(stores["indexed"])
    print(f"per-process index: {ix / 1e6:.1f} MB, {ix / size(stores['indexed']) * 100:.0f} % of the indexed store")

    # A day of pid 1 through the index (best of 3; the page cache is warm for every tool).
    runs, cpus = [], []
    for _ in range(3):
        took, out = timed([hood, "top", "-b", "--replay", stores["indexed"], "--csv", "-p", "1"])
        runs.append(took)
        cpus.append(LAST_CPU)
    rows = out.stdout.count(b"\n") - 1
    hood_day, hood_cpu = min(runs), min(cpus)
    print(f"hood top -b --replay DAY --csv -p 1: {rows} rows in {hood_day:.3f} s wall, {hood_cpu:.3f} s CPU "
          f"(runs: {', '.join(f'{r:.3f}' for r in runs)} s) (target <= 1 s)")

    # The same through whole snapshots (a store without the index), WHOLE_HOURS of it (0:
    # skipped).
    now = int(time.time())
    first = now - day * step
    if whole_hours > 0:
        frm, to = first, first + whole_hours * 3600 - 1
        took, out = timed([hood, "top", "-b", "--replay", stores["whole"], "--csv", "-p", "1",
                           "--from", f"@{frm}", "--to", f"@{to}"])
        wrows = out.stdout.count(b"\n") - 1
        whole_day = took * rows / max(wrows, 1)
        whole_cpu = LAST_CPU * rows / max(wrows, 1)
        print(f"  without the index: {wrows} rows ({whole_hours} h) in {took:.2f} s wall, {LAST_CPU:.2f} s CPU; "
              f"a day ~{whole_day:.0f} s wall, ~{whole_cpu:.0f} s CPU (x{rows / max(wrows, 1):.0f}); "
              f"index speed-up x{whole_cpu / max(hood_cpu, 1e-9):.0f} in CPU")

    # Open the day's store and show a random minute (whole hood run).
    jumps, jcpu = [], []
    for _ in range(20):
        at = now - random.randint(60, day * step - 60)
        took, _ = timed([hood, "top", "-b", "--replay", stores["indexed"], "--at", f"@{at}", "--rows", "5"])
        jumps.append(took)
        jcpu.append(LAST_CPU)
    jumps.sort()
    jcpu.sort()
    print(f"open the day's store and show a random minute (20 whole hood runs): median "
          f"{statistics.median(jumps) * 1000:.0f} ms wall, max {jumps[-1] * 1000:.0f} ms; CPU median "
          f"{statistics.median(jcpu) * 1000:.0f} ms, max {jcpu[-1] * 1000:.0f} ms (target <= 100 ms)")

    atop = shutil.which("atop")
    if not atop:
        print("atop: not installed (apt-get install atop); no ratio")
    else:
        alog = os.path.join(tmp, "atop.raw")
        subprocess.run([atop, "-w", alog, "1", str(atop_samples)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        sh = f"atop -r {alog} -P PRC | awk '$7 == 1'"
        runs, cpus = [], []
        for _ in range(3):
            took, out = timed(["sh", "-c", sh])
            runs.append(took)
            cpus.append(LAST_CPU)
        arows = out.stdout.count(b"\n")
        atop_day = min(runs) * day / atop_samples
        atop_cpu = min(cpus) * day / atop_samples
        print(f"atop -r LOG -P PRC | awk '$7 == 1': {arows} rows of {atop_samples} samples in "
              f"{min(runs):.3f} s wall, {min(cpus):.3f} s CPU; a day of {day} samples ~{atop_day:.1f} s wall, "
              f"~{atop_cpu:.1f} s CPU (x{day / atop_samples:.0f})")
        t0 = time.perf_counter()
        subprocess.run([atop, "-r", alog, "-b", time.strftime("%H:%M", time.localtime(time.time() - atop_samples / 2)),
                        "-P", "CPU"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"atop -r LOG -b TIME (a jump in a {atop_samples}-sample log): {(time.perf_counter() - t0) * 1000:.0f} ms")
        print(f"ratio hood/atop, a day of one process: {hood_day / atop_day:.3f} wall, "
              f"{hood_cpu / max(atop_cpu, 1e-9):.3f} CPU")
finally:
    for p in sleepers:
        p.kill()
    shutil.rmtree(tmp, ignore_errors=True)
