/* Probe-hit cost workload: calls hit() N times and prints the ns per call it measured on its
 * own clock (CLOCK_MONOTONIC around the loop), so a probe's cost is what it adds per call.
 * Usage: hits N */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int __attribute__((noinline)) hit(int x) { __asm__ volatile("" ::: "memory"); return x + 1; }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int s = 0;
    for (long i = 0; i < n; i++) s += hit((int)i);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
    printf("ns_per_call %.1f calls %ld sum %d\n", ns / n, n, s);
    return 0;
}
