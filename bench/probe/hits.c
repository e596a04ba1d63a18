/* Probe-hit cost workload: calls hit() N times and prints the ns per call it measured on its
 * own clocks around the loop: CLOCK_MONOTONIC (what the program's user waits, other work on
 * the machine included) and CLOCK_THREAD_CPUTIME_ID (the CPU the calling thread used, in user
 * space and in the kernel's probe traps, whatever else runs), so a probe's cost is what it
 * adds per call.
 * Usage: hits N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int __attribute__((noinline)) hit(int x) { __asm__ volatile("" ::: "memory"); return x + 1; }

static double ns_between(struct timespec a, struct timespec b) {
    return (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    int s = 0;
    for (long i = 0; i < n; i++) s += hit((int)i);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("ns_per_call %.1f cpu_ns_per_call %.1f calls %ld sum %d\n", ns_between(a, b) / n,
           ns_between(ca, cb) / n, n, s);
    return 0;
}
