"""Driver of bench/monitor/shortlived.sh. Builds a C burner (CPU time by
CLOCK_PROCESS_CPUTIME_ID, so each process uses BURN_MS of CPU whatever the load), records
with `hood top --record` every DELAY seconds, runs COUNT burners JOBS at a time from 1 s into
the second interval (the first is a warm-up) and stops the recorder one interval after the
last burner ended (a loaded machine stretches the burst over more intervals: all are
shown, and the burst's intervals summed), replays the store as JSON and compares
every interval's sum of process CPU, plus the CPU no process owns (irq, softirq, steal), with
/proc/stat's busy time at the interval's edges (as the recorder read it)."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

hood, count, burn_ms, jobs, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])

BURNER = r"""
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 50;
    struct timespec t;
    volatile unsigned long x = 0;
    for (;;) {
        for (int i = 0; i < 10000; i++) x += i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        if (t.tv_sec * 1000 + t.tv_nsec / 1000000 >= ms) return 0;
    }
}
"""

tmp = tempfile.mkdtemp(prefix="hood-shortlived-")
try:
    src = os.path.join(tmp, "hoodburn.c")
    exe = os.path.join(tmp, "hoodburn")
    with open(src, "w") as f:
        f.write(BURNER)
    subprocess.run(["cc", "-O1", "-o", exe, src], check=True)
    store = os.path.join(tmp, "store")
    rec = subprocess.Popen([hood, "top", "--record", store, "-d", str(delay)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(delay + 1)
    t0 = time.monotonic()
    pids, running = set(), []
    for _ in range(count):
        while len(running) >= jobs:
            running = [p for p in running if p.poll() is None]
            if len(running) >= jobs:
                time.sleep(0.002)
        p = subprocess.Popen([exe, str(burn_ms)])
        pids.add(p.pid)
        running.append(p)
    for p in running:
        p.wait()
    took = time.monotonic() - t0
    time.sleep(delay + 1)
    rec.send_signal(signal.SIGINT)
    _, err = rec.communicate()
    if rec.returncode != 0:
        sys.exit(f"hood top --record failed: {err.decode(errors='replace')}")
    print(f"load average {open('/proc/loadavg').read().split()[0]}; {count} processes of "
          f"{burn_ms} ms CPU, {jobs} at a time: {took:.1f} s (started 1 s into the second "
          f"{delay:g} s interval"
          f"{'' if took + 1 < delay else '; it spans several intervals: DELAY above the burst puts it in one'})")
    out = subprocess.run([hood, "top", "-b", "--json", "--replay", store, "--from", "1h ago"],
                         check=True, capture_output=True).stdout
    views = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
    ratios = []
    shown = set()
    burst = [0.0, 0]
    prev = None
    for v in views:
        t = v["cpus"]["total"]["time_ms"]
        iv = v.get("interval_s")
        if prev is not None and iv:
            d = {k: t[k] - prev[k] for k in t}
            procs = sum((x.get("cpu_percent") or 0.0) for x in v["tasks"]) / 100 * iv * 1000
            ended = [x for x in v["tasks"] if x.get("exited")]
            seen = sum(1 for x in ended if x["pid"] in pids)
            unowned = d["irq"] + d["softirq"] + d["steal"]
            total = procs + unowned
            shown |= {x["pid"] for x in ended if x["pid"] in pids}
            print(f"interval of {iv:.2f} s: processes {procs:.0f} ms ({len(v['tasks'])} rows, "
                  f"{len(ended)} ended, {seen} of the {count} burners); /proc/stat busy "
                  f"{d['busy']} ms (user {d['user']}, system {d['system']}, irq {d['irq']}, "
                  f"softirq {d['softirq']}, steal {d['steal']})")
            ex = v.get("exits") or {}
            if ex.get("overruns") or ex.get("dropped") or ex.get("unavailable"):
                print(f"  exits: {ex}")
            print(f"  processes / (user + nice + system) = {procs / max(d['busy'] - unowned, 1):.4f};  "
                  f"(processes + irq + softirq + steal) / busy = {total / max(d['busy'], 1):.4f}")
            ratios.append(total / max(d["busy"], 1))
            if seen:
                burst[0] += total
                burst[1] += d["busy"]
        prev = t
    print(f"burners shown ended: {len(shown)} of {count}")
    if burst[1]:
        print(f"hood's total / /proc/stat's busy over the burst's intervals: "
              f"{burst[0] / burst[1]:.4f}; per interval: {' '.join(f'{r:.4f}' for r in ratios)}")
finally:
    if os.environ.get("KEEP"):
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
