/* Cost of one TSC read, the clock hood-rt reads once per hook: nanoseconds per rdtsc over
 * N back-to-back reads (throughput, as in the hooks; default 100 M), best of 5. The time is
 * the thread's CPU time, so that on a loaded machine it is the reads' cost, not the waits for
 * a CPU between them (the benches compare CPU times too).
 * Usage: clock [N] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const long n = argc > 1 ? atol(argv[1]) : 100000000;
    double best = 1e9;
    unsigned long long sum = 0;
    for (int round = 0; round < 5; round++) {
        double t0 = now();
        for (long i = 0; i < n; i++) sum += __rdtsc();
        double ns = (now() - t0) * 1e9 / n;
        if (ns < best) best = ns;
    }
    printf("%.2f\n", best + (sum == 1 ? 1 : 0) * 0.0);
    return 0;
}
