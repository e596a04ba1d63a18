"""Imported by the benches' Python parts (bench/lib on sys.path): one timed run of a command under
bench/trace/cpu_of.c, which writes the CPU time of everything it waited for."""
import subprocess
import sys
import time


def run_tree(cpu_of, tree_file, argv, env, cwd, what):
    """Run argv under cpu_of (its output discarded): (wall seconds, user + system CPU seconds
    of argv and all it waited for). A failed run ends the bench, naming `what`."""
    t0 = time.monotonic()
    r = subprocess.run([cpu_of, tree_file] + argv, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"{what} failed with status {r.returncode}: {' '.join(argv)}")
    with open(tree_file) as f:
        return wall, sum(map(float, f.read().split()[:2]))
