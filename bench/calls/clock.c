/* Cost of one TSC read, the clock hood-rt reads once per hook: nanoseconds per rdtsc over
 * 100 M back-to-back reads (throughput, as in the hooks), best of 5. */
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    const long n = 100000000;
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
