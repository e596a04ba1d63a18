"""Driver of bench/serve/run.sh. Server CPU is read per thread from
/proc/PID/task/*/schedstat (nanoseconds on CPU) plus the reaped children's cutime+cstime from
/proc/PID/stat (clock ticks); the peers' CPU from this script's children rusage."""
import os, resource, shutil, socket, statistics, subprocess, sys, tempfile, time, urllib.request

hood = sys.argv[1]
scrapes, delay, procs = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rounds, secs, profiles = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
HZ = os.sysconf("SC_CLK_TCK")
sleepers = []

def nprocs():
    return sum(1 for d in os.listdir("/proc") if d.isdigit())

def grow(target):
    while nprocs() < target:
        sleepers.append(subprocess.Popen(["sleep", "3600"]))

def loadavg():
    return open("/proc/loadavg").read().split()[:3]

def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def ran(cmd):
    """CPU seconds of one run of cmd (a child of this script)."""
    c0 = child_cpu()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return child_cpu() - c0

def server_cpu(pid):
    """(own threads' CPU seconds, reaped children's CPU seconds) of the server."""
    own = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            own += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return own / 1e9, (int(f[13]) + int(f[14])) / HZ

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p

def fetch(url, timeout=120):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()

def top_refresh(mode):
    """CPU per `hood top -b -m MODE` refresh, its startup and first frame excluded."""
    one = ran([hood, "top", "-b", "-m", mode, "-n", "1"])
    many = ran([hood, "top", "-b", "-m", mode, "-n", str(scrapes + 1), "-d", str(delay)])
    return (many - one) / scrapes

def wait_ready(url):
    for _ in range(200):
        try:
            fetch(url, 1)
            return
        except OSError:
            time.sleep(0.05)

# The peer: Prometheus's per-process exporter (Debian: prometheus-process-exporter), every
# process in a group of its name, threads not exported (hood exports none either).
PEER = shutil.which("prometheus-process-exporter") or shutil.which("process-exporter")
PEER_CONFIG = """process_names:
  - name: "{{.Comm}}"
    cmdline:
    - '.+'
"""

def scrape_cost(pid, url):
    own0, _ = server_cpu(pid)
    size = 0
    for _ in range(scrapes):
        size = len(fetch(url))
        time.sleep(delay)
    own1, _ = server_cpu(pid)
    return (own1 - own0) / scrapes, size

log = tempfile.NamedTemporaryFile(prefix="hood-serve-bench-", suffix=".log", delete=False)
server = None
try:
    print(f"load average before: {' '.join(loadavg())}")
    grow(procs)
    port = free_port()
    server = subprocess.Popen([hood, "serve", "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=log)
    base = f"http://127.0.0.1:{port}"
    wait_ready(base + "/healthz")
    fetch(base + "/metrics")  # first scrape: warm descriptors and buffers, as top's first frame
    if PEER:
        peer_port = free_port()
        peer_cfg = tempfile.NamedTemporaryFile("w", prefix="hood-serve-bench-", suffix=".yml", delete=False)
        peer_cfg.write(PEER_CONFIG)
        peer_cfg.close()
        peer = subprocess.Popen([PEER, "-config.path", peer_cfg.name, "-threads=false",
                                 "-web.listen-address", f"127.0.0.1:{peer_port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peer_url = f"http://127.0.0.1:{peer_port}/metrics"
        wait_ready(peer_url)
        fetch(peer_url)
    else:
        print("not run here: the peer prometheus-process-exporter is not installed "
              "(apt-get install prometheus-process-exporter)")
    print(f"processes: {nprocs()}, scrapes/refreshes per round: {scrapes}, delay {delay} s")
    # A scrape reads every process's stat (or schedstat, when it did not run) and the interrupt
    # tables: what a `hood top -m e` refresh reads, with the same reader. It also reads the
    # exported processes' threads' status, encodes and answers over HTTP.
    ratios, peer_ratios = [], []
    for r in range(rounds):
        s, size = scrape_cost(server.pid, base + "/metrics")
        te = top_refresh("e")
        tt = top_refresh("t")
        ratios.append(s / te)
        line = (f"round {r + 1}: /metrics scrape {s * 1e3:6.2f} ms CPU ({size} bytes); "
                f"hood top -b -m e refresh {te * 1e3:6.2f} ms CPU; scrape/refresh = {s / te:.2f} "
                f"(hood top -b -m t refresh {tt * 1e3:6.2f} ms)")
        if PEER:
            p, psize = scrape_cost(peer.pid, peer_url)
            peer_ratios.append(s / p)
            line += f"; process-exporter scrape {p * 1e3:6.2f} ms CPU ({psize} bytes), hood/peer = {s / p:.2f}"
        print(line)
    print(f"scrape / `hood top -m e` refresh median {statistics.median(ratios):.2f} (reference: the "
          f"same /proc reads without HTTP, encoding and the exported threads) at {nprocs()} processes")
    if peer_ratios:
        print(f"hood serve / process-exporter CPU per scrape median {statistics.median(peer_ratios):.2f} (target < 1)")

    extra, alone, served = [], [], []
    for r in range(profiles):
        with tempfile.TemporaryDirectory() as d:
            a = ran([hood, "record", "-a", "-d", str(secs), "-o", f"{d}/r.hood"])
        own0, kids0 = server_cpu(server.pid)
        body = fetch(f"{base}/debug/pprof/profile?seconds={secs}", secs + 120)
        own1, kids1 = server_cpu(server.pid)
        own, kids = own1 - own0, kids1 - kids0
        alone.append(a)
        served.append(own + kids)
        extra.append(own + kids - a)
        print(f"profile {r + 1}: hood record -a -d {secs} alone {a:.3f} s CPU; "
              f"/debug/pprof/profile?seconds={secs}: server {own:.3f} s + recorder child {kids:.3f} s "
              f"= {own + kids:.3f} s ({len(body)} bytes pprof); beyond the recording "
              f"{own + kids - a:+.3f} s = {100 * (own + kids - a) / secs:+.2f} % of one CPU "
              f"(server's own work {100 * own / secs:.2f} %)")
    if extra:
        print(f"profile: beyond the recording, mean {100 * statistics.mean(extra) / secs:+.2f} % of one CPU "
              f"(target < 1 %); recording alone {statistics.mean(alone):.3f} s, served {statistics.mean(served):.3f} s")
    print(f"load average after: {' '.join(loadavg())}")
finally:
    if server:
        server.terminate()
        server.wait()
    if PEER and "peer" in globals():
        peer.terminate()
        peer.wait()
        os.unlink(peer_cfg.name)
    for s in sleepers:
        s.kill()
    for s in sleepers:
        s.wait()
    os.unlink(log.name)
