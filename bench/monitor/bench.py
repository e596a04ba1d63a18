"""Driver of bench/monitor/run.sh: spawns sleeping processes up to a target count, then
measures each monitor's user+system CPU time per refresh from its own rusage (batch tools)
or /proc/PID/stat (btop, which has no batch mode and runs in tmux)."""
import os, resource, shutil, subprocess, sys, tempfile, time

hood, frames, delay, procs, big = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
HZ = os.sysconf("SC_CLK_TCK")
sleepers = []

def nprocs():
    return sum(1 for d in os.listdir("/proc") if d.isdigit())

def grow(target):
    while nprocs() < target:
        sleepers.append(subprocess.Popen(["sleep", "3600"]))

def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime, r.ru_maxrss

def batch(cmd):
    """CPU seconds per frame of a batch run (frames printed = FRAMES)."""
    c0, _ = child_cpu()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    c1, _ = child_cpu()
    return (c1 - c0) / frames

def btop_per_frame():
    if not shutil.which("btop") or not shutil.which("tmux"):
        return None
    cfg = tempfile.mkdtemp()
    os.makedirs(f"{cfg}/btop")
    with open(f"{cfg}/btop/btop.conf", "w") as f:
        f.write(f"update_ms = {max(100, int(delay * 1000))}\n")
    sess = f"hoodbench{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", sess, "-x", "200", "-y", "50",
                    f"env XDG_CONFIG_HOME={cfg} LANG=C.UTF-8 btop --utf-force"], check=True)
    time.sleep(2)  # startup
    pid = subprocess.run(["tmux", "list-panes", "-t", sess, "-F", "#{pane_pid}"],
                         capture_output=True, text=True).stdout.strip()
    # the pane runs `env ... btop`, which execs btop: same pid
    def ticks():
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    t0, k0 = time.time(), ticks()
    time.sleep(frames * max(0.1, delay))
    t1, k1 = time.time(), ticks()
    subprocess.run(["tmux", "kill-session", "-t", sess])
    shutil.rmtree(cfg, ignore_errors=True)
    n = (t1 - t0) / max(0.1, delay)
    return (k1 - k0) / HZ / n

def hood_rss_tui():
    """Peak resident memory (VmHWM) of the interactive hood top after a few refreshes."""
    if not shutil.which("tmux"):
        return None
    sess = f"hoodrss{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", sess, "-x", "200", "-y", "50",
                    f"{hood} top -d {delay}"], check=True)
    time.sleep(3)
    pid = subprocess.run(["tmux", "list-panes", "-t", sess, "-F", "#{pane_pid}"],
                         capture_output=True, text=True).stdout.strip()
    hwm = None
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    subprocess.run(["tmux", "send-keys", "-t", sess, "q"])
    time.sleep(0.5)
    subprocess.run(["tmux", "kill-session", "-t", sess], stderr=subprocess.DEVNULL)
    return hwm

try:
    grow(procs)
    n = nprocs()
    h = batch([hood, "top", "-b", "-n", str(frames), "-d", str(delay)])
    t = batch(["top", "-b", "-n", str(frames), "-d", str(delay)])
    b = btop_per_frame()
    print(f"processes: {n}, frames: {frames}, delay: {delay} s")
    print(f"hood top -b : {h*1000:6.2f} ms CPU per refresh")
    print(f"top -b      : {t*1000:6.2f} ms CPU per refresh   hood/top  = {h/t:.2f} (target <= 0.5)")
    if b is not None:
        print(f"btop        : {b*1000:6.2f} ms CPU per refresh   hood/btop = {h/b:.2f} (target < 1)")
    else:
        print("btop        : not installed (apt-get install -y btop tmux)")
    grow(big)
    n = nprocs()
    c0, _ = child_cpu()
    hb = batch([hood, "top", "-b", "-n", str(frames), "-d", str(delay)])
    tb = batch(["top", "-b", "-n", str(frames), "-d", str(delay)])
    rss = hood_rss_tui()
    print(f"processes: {n}: hood top -b {hb*1000:.2f} ms CPU per refresh, top -b {tb*1000:.2f} ms: "
          f"hood/top = {hb/tb:.2f};", end=" ")
    print(f"interactive hood top peak RSS {rss/1024:.1f} MB (target < 30 MB)" if rss else "tmux missing")
finally:
    for s in sleepers:
        s.kill()
    for s in sleepers:
        s.wait()
